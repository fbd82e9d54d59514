//! The SQLite statements of each operation, run on a connection the caller provides: writes
//! inside the writer's transaction, reads inside a read transaction of their own.

use std::sync::Arc;

use agentstate::store::{
    AttributesUpdate, EventCopy, EventCursor, EventQuery, EventSelect, HistorySnapshot, NewSession, SharedStateWrite,
    SharedStateWrites, StateOwner, UserDataCounts, ValueSwap, merge_scopes,
};
use agentstate::{Error, Event, Map, Result, Session, SessionAttributes, SessionKey, Value};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::sqlite_error;
use crate::codec::{self, merge_row, parse_sqlite_text, parse_state, sqlite_text, state_text};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!("../../../sql/sqlite/", $name, ".sql"))
    };
}

mod commit;
mod list;
mod load;

pub(in crate::sqlite) use commit::{commit, update_shared};
#[cfg(test)]
pub(in crate::sqlite) use list::SHORT_LIST_SESSIONS;
pub(in crate::sqlite) use list::{count_sessions, list, short_list};
pub(in crate::sqlite) use load::SHORT_LOAD_EVENTS;
use load::query_events;
pub(in crate::sqlite) use load::{get, short_load, whole_count};

/// `now` as the statements compare it with expire times; `None` (expiry not judged) for
/// `i64::MIN`.
fn now_text(now_micros: i64) -> Result<Option<String>> {
    (now_micros != i64::MIN).then(|| sqlite_text(now_micros)).transpose()
}

fn execute(conn: &Connection, what: &str, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute(params)).map_err(|e| sqlite_error(what, &e))
}

/// The `state` column of the one row `sql` selects, if there is one.
fn read_state(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<Option<Map<String, Value>>> {
    let text: Option<String> = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.query_row(params, |row| row.get("state")).optional())
        .map_err(|e| sqlite_error("read state", &e))?;
    text.as_deref().map(parse_state).transpose()
}

/// A row of shared state: the app's, or a user's in an app.
#[derive(Clone, Copy)]
enum Shared<'a> {
    App(&'a str),
    User(&'a str, &'a str),
}

impl Shared<'_> {
    fn read(self, conn: &Connection) -> Result<Option<Map<String, Value>>> {
        match self {
            Self::App(app) => read_state(conn, sql!("app_state_get"), params![app]),
            Self::User(app, user) => read_state(conn, sql!("user_state_get"), params![app, user]),
        }
    }

    /// Merges `delta` into the row (created if missing), removes `deleted`, and returns its
    /// state.
    fn merge(
        self,
        conn: &Connection,
        delta: &Map<String, Value>,
        deleted: &[String],
        now: &str,
    ) -> Result<Map<String, Value>> {
        let (state, write) = merge_row(self.read(conn)?, delta, deleted);
        if write {
            let text = state_text(&state);
            match self {
                Self::App(app) => execute(conn, "write app state", sql!("app_state_put"), params![app, text, now]),
                Self::User(app, user) => {
                    execute(conn, "write user state", sql!("user_state_put"), params![app, user, text, now])
                }
            }?;
        }
        Ok(state)
    }
}

/// A session row as SQLite gives it (times as text).
struct RawSessionRow {
    state: String,
    update_time: String,
    create_time: String,
    display_name: Option<String>,
    labels: Option<String>,
    expire_time: Option<String>,
}

impl RawSessionRow {
    /// The row of `session_get` and the session lists.
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(crate::columns!(Self { state, update_time, create_time, display_name, labels, expire_time } from r.get))
    }
}

/// A session row: its state text and the rest.
struct SessionRow {
    state: String,
    update_micros: i64,
    create_micros: i64,
    attributes: Option<Arc<SessionAttributes>>,
}

impl SessionRow {
    /// Whether it has not expired at `now_micros`.
    fn live_at(&self, now_micros: i64) -> bool {
        !self.attributes.as_ref().is_some_and(|a| a.expired_at(now_micros))
    }

    fn decode(raw: RawSessionRow) -> Result<Self> {
        let expire = raw.expire_time.as_deref().map(parse_sqlite_text).transpose()?;
        Ok(Self {
            state: raw.state,
            update_micros: parse_sqlite_text(&raw.update_time)?,
            create_micros: parse_sqlite_text(&raw.create_time)?,
            attributes: codec::attributes(raw.display_name, raw.labels.as_deref(), expire)?,
        })
    }

    /// The handle of this row.
    fn session(self, key: SessionKey, merged: Map<String, Value>, events: Vec<Event>) -> Session {
        Session::from_storage(key, merged, events, self.update_micros)
            .created_at(self.create_micros)
            .with_attributes(self.attributes)
    }
}

/// The session's row, if it exists and has not expired at `now_micros`.
fn session_row(conn: &Connection, key: &SessionKey, now_micros: i64) -> Result<Option<SessionRow>> {
    let row = conn
        .prepare_cached(sql!("session_get"))
        .and_then(|mut stmt| {
            stmt.query_row(params![key.app_name(), key.user_id(), key.session_id()], RawSessionRow::read).optional()
        })
        .map_err(|e| sqlite_error("read session", &e))?;
    Ok(row.map(SessionRow::decode).transpose()?.filter(|row| row.live_at(now_micros)))
}

pub(super) fn create(conn: &Connection, new: NewSession) -> Result<Session> {
    let NewSession { key, state, create_time_micros, attributes, history_start } = new;
    match session_row(conn, &key, i64::MIN)? {
        Some(row) if row.live_at(create_time_micros) => {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
        }
        // Expired: it goes, with its events and history, in this transaction.
        Some(_) => delete(conn, &key)?,
        None => {}
    }
    let now = sqlite_text(create_time_micros)?;
    let app = Shared::App(key.app_name()).merge(conn, &state.app, &[], &now)?;
    let user = Shared::User(key.app_name(), key.user_id()).merge(conn, &state.user, &[], &now)?;
    let params = params![key.app_name(), key.user_id(), key.session_id(), state_text(&state.session), now];
    execute(conn, "insert session", sql!("session_insert"), params)?;
    if !attributes.is_empty() {
        let expire = attributes.expire_time_micros.map(sqlite_text).transpose()?;
        let params = params![
            key.app_name(),
            key.user_id(),
            key.session_id(),
            now,
            attributes.display_name,
            codec::labels_text(&attributes),
            expire
        ];
        execute(conn, "write session attributes", sql!("session_attributes_put"), params)?;
    }
    if let Some(start) = history_start {
        put_snapshot(conn, &key, &HistorySnapshot { at: EventCursor::CREATION, state: start })?;
    }
    let merged = merge_scopes(&state.session, &app, &user);
    Ok(Session::from_storage(key, merged, Vec::<Event>::new(), create_time_micros)
        .created_at(create_time_micros)
        .with_attributes((!attributes.is_empty()).then(|| Arc::new(attributes))))
}

/// The event `id` of the session (expired or not).
fn stored_event(conn: &Connection, key: &SessionKey, id: &str) -> Result<Option<Event>> {
    let params = params![key.app_name(), key.user_id(), key.session_id(), id];
    query_events(conn, sql!("event_get"), params).map(|mut events| events.pop())
}

fn put_snapshot(conn: &Connection, key: &SessionKey, snapshot: &HistorySnapshot) -> Result<()> {
    let params = params![
        key.app_name(),
        key.user_id(),
        key.session_id(),
        snapshot.at.timestamp_micros,
        snapshot.at.event_id,
        state_text(&snapshot.state)
    ];
    execute(conn, "keep a history snapshot", sql!("history_snapshot_put"), params).map(drop)
}

/// Keeps history snapshots (inside the writer's transaction).
pub(super) fn put_snapshots(conn: &Connection, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
    snapshots.iter().try_for_each(|snapshot| put_snapshot(conn, key, snapshot))
}

/// The newest valid history snapshot at or before `micros`.
pub(super) fn history_snapshot(conn: &Connection, key: &SessionKey, micros: i64) -> Result<Option<HistorySnapshot>> {
    let row: Option<(i64, String, String)> = conn
        .prepare_cached(sql!("history_snapshot"))
        .and_then(|mut stmt| {
            let params = params![key.app_name(), key.user_id(), key.session_id(), micros];
            stmt.query_row(params, |r| Ok((r.get("at_micros")?, r.get("at_event_id")?, r.get("state")?))).optional()
        })
        .map_err(|e| sqlite_error("read a history snapshot", &e))?;
    row.map(|(at_micros, at_event_id, state)| {
        Ok(HistorySnapshot {
            at: EventCursor { timestamp_micros: at_micros, event_id: at_event_id },
            state: parse_state(&state)?,
        })
    })
    .transpose()
}

/// Copies `from`'s events up to `upto` into `to` as they are, and sets `to`'s marker to the last
/// one's time: how many. `None`, writing nothing, when some are not after `to_marker` (they must
/// be moved forward: one commit each).
pub(super) fn copy_events(conn: &Connection, copy: &EventCopy) -> Result<Option<usize>> {
    let EventCopy { from, to, upto, to_marker } = copy;
    let (upto_time, marker) = (sqlite_text(upto.timestamp_micros)?, sqlite_text(*to_marker)?);
    let early: bool = conn
        .prepare_cached(sql!("events_copy_early"))
        .and_then(|mut stmt| {
            let params = params![from.app_name(), from.user_id(), from.session_id(), marker, upto_time, upto.event_id];
            stmt.query_row(params, |r| r.get(0))
        })
        .map_err(|e| sqlite_error("read events to copy", &e))?;
    if early {
        return Ok(None);
    }
    let params = params![from.app_name(), from.user_id(), from.session_id(), to.session_id(), upto_time, upto.event_id];
    let copied = execute(conn, "copy events", sql!("events_copy"), params)?;
    if copied > 0 {
        let params = params![to.app_name(), to.user_id(), to.session_id(), upto_time];
        execute(conn, "set the session's marker", sql!("session_marker_put"), params)?;
    }
    Ok(Some(copied))
}

/// Deletes events, then the session (the job's savepoint makes the pair atomic).
pub(super) fn delete(conn: &Connection, key: &SessionKey) -> Result<()> {
    for statement in sql!("session_delete").split(';').map(str::trim).filter(|s| !s.is_empty()) {
        execute(conn, "delete session", statement, params![key.app_name(), key.user_id(), key.session_id()])?;
    }
    Ok(())
}

/// Sets the session's expire time; whether it exists (and had not expired at `now_micros`).
pub(super) fn set_expire_time(
    conn: &Connection,
    key: &SessionKey,
    expire_micros: Option<i64>,
    now_micros: i64,
) -> Result<bool> {
    let update = AttributesUpdate { expire_time_micros: Some(expire_micros), ..AttributesUpdate::default() };
    set_attributes(conn, key, &update, now_micros)
}

/// Sets what `update` says of the session's attributes, keeping the rest, in one statement;
/// whether it exists (and had not expired at `now_micros`).
pub(super) fn set_attributes(
    conn: &Connection,
    key: &SessionKey,
    update: &AttributesUpdate,
    now_micros: i64,
) -> Result<bool> {
    let expire = update.expire_time_micros;
    let params = params![
        key.app_name(),
        key.user_id(),
        key.session_id(),
        update.display_name.clone().flatten(),
        update.display_name.is_some(),
        update.labels_json(),
        update.labels.is_some(),
        expire.flatten().map(sqlite_text).transpose()?,
        expire.is_some(),
        now_text(now_micros)?
    ];
    Ok(execute(conn, "set a session's attributes", sql!("session_attributes_set"), params)? > 0)
}

/// Drops the session's events older than `cut_micros` and its snapshots before it, and keeps
/// `boundary`, in the writer's transaction.
pub(super) fn drop_events_before(
    conn: &Connection,
    key: &SessionKey,
    cut_micros: i64,
    boundary: &HistorySnapshot,
) -> Result<usize> {
    let cut_text = sqlite_text(cut_micros)?;
    let mut statements = sql!("events_drop").split(';').map(str::trim).filter(|s| !s.is_empty());
    let (Some(events), Some(snapshots)) = (statements.next(), statements.next()) else {
        return Err(Error::Backend {
            message: "events_drop.sql is incomplete".to_owned(),
            retryable: false,
            source: None,
        });
    };
    let (app, user, session) = (key.app_name(), key.user_id(), key.session_id());
    let dropped = execute(conn, "drop old events", events, params![app, user, session, cut_text])?;
    execute(conn, "drop old snapshots", snapshots, params![app, user, session, cut_micros])?;
    put_snapshot(conn, key, boundary)?;
    Ok(dropped)
}

/// A session's event count.
pub(super) fn event_count(conn: &Connection, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
    let now = now_text(now_micros)?;
    conn.prepare_cached(sql!("event_count"))
        .and_then(|mut stmt| {
            stmt.query_row(params![key.app_name(), key.user_id(), key.session_id(), now], |r| r.get::<_, i64>("n"))
                .optional()
        })
        .map(|n| n.map(|n| usize::try_from(n).unwrap_or_default()))
        .map_err(|e| sqlite_error("count events", &e))
}

/// Every app with sessions or state.
pub(super) fn apps(conn: &Connection) -> Result<Vec<String>> {
    conn.prepare_cached(sql!("apps"))
        .and_then(|mut stmt| stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>())
        .map_err(|e| sqlite_error("list apps", &e))
}

/// Every user of `app` with sessions or state.
pub(super) fn users(conn: &Connection, app: &str) -> Result<Vec<String>> {
    conn.prepare_cached(sql!("users"))
        .and_then(|mut stmt| stmt.query_map(params![app], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>())
        .map_err(|e| sqlite_error("list users", &e))
}

/// The state `owner` holds, as stored.
pub(super) fn owner_state(conn: &Connection, owner: &StateOwner) -> Result<Option<Map<String, Value>>> {
    match owner {
        StateOwner::App(app) => read_state(conn, sql!("app_state_get"), params![app]),
        StateOwner::User { app, user } => read_state(conn, sql!("user_state_get"), params![app, user]),
        StateOwner::Session(key) => {
            read_state(conn, sql!("session_state_get"), params![key.app_name(), key.user_id(), key.session_id()])
        }
    }
}

/// Replaces values of `owner` that are still the expected ones, in the writer's transaction.
pub(super) fn swap_values(conn: &Connection, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
    let Some(mut state) = owner_state(conn, owner)? else { return Ok(0) };
    let swapped = codec::swap(&mut state, swaps);
    if swapped > 0 {
        let statements: Vec<&str> = sql!("state_rewrite").split(';').map(str::trim).filter(|s| !s.is_empty()).collect();
        let text = state_text(&state);
        match (owner, statements.as_slice()) {
            (StateOwner::App(app), [sql, ..]) => execute(conn, "rewrite state", sql, params![app, text])?,
            (StateOwner::User { app, user }, [_, sql, ..]) => {
                execute(conn, "rewrite state", sql, params![app, user, text])?
            }
            (StateOwner::Session(key), [_, _, sql, ..]) => {
                execute(conn, "rewrite state", sql, params![key.app_name(), key.user_id(), key.session_id(), text])?
            }
            _ => {
                return Err(Error::Backend {
                    message: "state_rewrite.sql is incomplete".to_owned(),
                    retryable: false,
                    source: None,
                });
            }
        };
    }
    Ok(swapped)
}

/// Rewrites a stored event's data.
pub(super) fn rewrite_event(conn: &Connection, key: &SessionKey, event: &Event) -> Result<bool> {
    let data = codec::event_data(event)?;
    let params = params![key.app_name(), key.user_id(), key.session_id(), event.id, data];
    let rewritten = execute(conn, "rewrite an event", sql!("event_rewrite"), params)? > 0;
    // Its facts were of the old data: the view reads the new text instead.
    let params = params![key.app_name(), key.user_id(), key.session_id(), event.id];
    execute(conn, "forget an event's facts", sql!("event_facts_forget"), params)?;
    Ok(rewritten)
}

/// A page of an owner's log of state writes without a session, newest first.
pub(super) fn state_writes(conn: &Connection, query: &SharedStateWrites) -> Result<Vec<SharedStateWrite>> {
    let (app, user) = crate::state_log::log_owner(&query.owner)?;
    let (at, id) = crate::shared::writes_before(query);
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let rows: Vec<(i64, String, String, String, String)> = conn
        .prepare_cached(sql!("state_writes"))
        .and_then(|mut stmt| {
            let rows = stmt.query_map(params![app, user, at, id, limit], |r| {
                Ok((
                    r.get("at_micros")?,
                    r.get("write_id")?,
                    r.get("origin")?,
                    r.get("set_keys")?,
                    r.get("deleted_keys")?,
                ))
            })?;
            rows.collect()
        })
        .map_err(|e| sqlite_error("read logged state writes", &e))?;
    rows.into_iter()
        .map(|(at, id, origin, set, deleted)| crate::state_log::state_write(at, id, origin, &set, &deleted))
        .collect()
}

/// An entry of `adk_internal_metadata`.
pub(super) fn metadata(conn: &Connection, name: &str) -> Result<Option<String>> {
    conn.prepare_cached(sql!("metadata_get"))
        .and_then(|mut stmt| stmt.query_row(params![name], |r| r.get("value")).optional())
        .map_err(|e| sqlite_error("read metadata", &e))
}

/// Sets an entry of `adk_internal_metadata`.
pub(super) fn set_metadata(conn: &Connection, name: &str, value: &str) -> Result<()> {
    execute(conn, "write metadata", sql!("metadata_put"), params![name, value]).map(drop)
}

/// What erasing `user` of `app` would remove.
pub(super) fn user_data(conn: &Connection, app: &str, user: &str) -> Result<UserDataCounts> {
    conn.prepare_cached(sql!("user_data"))
        .and_then(|mut stmt| {
            stmt.query_row(params![app, user], |r| crate::codec::user_data_counts(|name| r.get::<_, i64>(name)))
        })
        .map_err(|e| sqlite_error("count a user's data", &e))
}

/// Erases `user` of `app` in the writer's transaction; with `secure_delete` on, the freed
/// content is overwritten with zeros.
pub(super) fn erase_user(conn: &Connection, app: &str, user: &str) -> Result<UserDataCounts> {
    let found = user_data(conn, app, user)?;
    for statement in sql!("user_erase").split(';').map(str::trim).filter(|s| !s.is_empty()) {
        execute(conn, "erase a user", statement, params![app, user])?;
    }
    Ok(found)
}

/// Deletes up to `limit` sessions expired at `before_micros`, oldest expiry first, with their
/// artifacts, in the writer's transaction (so none is created again in between).
pub(super) fn delete_expired(conn: &Connection, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>> {
    let before = sqlite_text(before_micros)?;
    let keys = conn
        .prepare_cached(sql!("sessions_expired"))
        .and_then(|mut stmt| {
            stmt.query_map(params![before, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                Ok(SessionKey::from_storage(
                    r.get::<_, String>("app_name")?,
                    r.get::<_, String>("user_id")?,
                    r.get::<_, String>("session_id")?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| sqlite_error("find expired sessions", &e))?;
    for key in &keys {
        delete(conn, key)?;
        let artifacts = params![key.app_name(), key.user_id(), key.session_id()];
        execute(conn, "delete an expired session's artifacts", sql!("artifact_session_delete"), artifacts)?;
    }
    Ok(keys)
}

/// Runs `f` in a read transaction, so every statement sees one snapshot.
fn snapshot<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    conn.execute_batch("BEGIN DEFERRED").map_err(|e| sqlite_error("begin read", &e))?;
    let result = f();
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    conn.execute_batch(end).map_err(|e| sqlite_error("end read", &e))?;
    result
}

/// Whether `select` reads few enough events ([`SHORT_LOAD_EVENTS`]) to run on the caller's
/// thread: a page of that many or fewer, or one event by its id. Not short: a page forwards
/// with a lower time bound (its index range starts at the cursor, and the bound only filters:
/// it may pass over most of the history), and the first event of an invocation (a scan of the
/// session's events).
pub(in crate::sqlite) fn short_select(select: &EventSelect) -> bool {
    match select {
        EventSelect::Page { since_micros: Some(_), .. } | EventSelect::FirstOfInvocation(_) => false,
        EventSelect::Page { limit, .. } | EventSelect::Latest { limit, .. } => *limit <= SHORT_LOAD_EVENTS,
        EventSelect::Id(_) => true,
    }
}

pub(super) fn events(conn: &Connection, query: &EventQuery) -> Result<Option<Vec<Event>>> {
    let EventQuery { key, select, now_micros } = query;
    let (app, user, session) = (key.app_name(), key.user_id(), key.session_id());
    snapshot(conn, || {
        if session_row(conn, key, *now_micros)?.is_none() {
            return Ok(None);
        }
        let events = match select {
            // Both directions take the same parameters: a cursor, the page size, the lower bound.
            EventSelect::Page { after: cursor, since_micros, limit }
            | EventSelect::Latest { before: cursor, since_micros, limit } => {
                let (statement, open_end) = match select {
                    EventSelect::Page { .. } => (sql!("events_page"), String::new()),
                    // Every stored time sorts before U+10FFFF.
                    _ => (sql!("events_latest"), '\u{10FFFF}'.to_string()),
                };
                let (time, id) = match cursor {
                    Some(c) => (sqlite_text(c.timestamp_micros)?, c.event_id.clone()),
                    None => (open_end, String::new()),
                };
                let limit = i64::try_from(*limit).unwrap_or(i64::MAX);
                let since = since_micros.map(sqlite_text).transpose()?.unwrap_or_default();
                query_events(conn, statement, params![app, user, session, time, id, limit, since])?
            }
            EventSelect::Id(id) => stored_event(conn, key, id)?.into_iter().collect(),
            EventSelect::FirstOfInvocation(invocation) => {
                query_events(conn, sql!("invocation_first"), params![app, user, session, invocation])?
            }
        };
        Ok(Some(events))
    })
}

pub(super) fn users_with_session(
    conn: &Connection,
    app: &str,
    session_id: &str,
    now_micros: i64,
) -> Result<Vec<String>> {
    let now = now_text(now_micros)?;
    conn.prepare_cached(sql!("session_users"))
        .and_then(|mut stmt| {
            let users = stmt.query_map(params![app, session_id, now], |r| r.get("user_id"))?;
            users.collect::<rusqlite::Result<Vec<String>>>()
        })
        .map_err(|e| sqlite_error("find sessions", &e))
}
