//! The SQLite statements of each operation, run on a connection the caller provides: writes
//! inside the writer's transaction, reads inside a read transaction of their own.

use std::collections::HashMap;

use agentstate::{
    CommitOutcome, ConflictKind, Error, Event, EventCommit, EventCursor, EventWindow, ListQuery, Map, NewSession,
    Result, Session, SessionKey, Value, merge_scopes,
};
use rusqlite::{Connection, OptionalExtension, params};

use super::sqlite_error;
use crate::codec::{self, merge, parse_sqlite_text, parse_state, sqlite_text, state_text};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!("../../sql/sqlite/", $name, ".sql"))
    };
}

fn read_state(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<Option<Map<String, Value>>> {
    let text: Option<String> = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.query_row(params, |row| row.get(0)).optional())
        .map_err(|e| sqlite_error("read state", &e))?;
    text.as_deref().map(parse_state).transpose()
}

fn app_state(conn: &Connection, app: &str) -> Result<Option<Map<String, Value>>> {
    read_state(conn, sql!("app_state_get"), params![app])
}

fn user_state(conn: &Connection, app: &str, user: &str) -> Result<Option<Map<String, Value>>> {
    read_state(conn, sql!("user_state_get"), params![app, user])
}

fn execute(conn: &Connection, what: &str, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
    conn.prepare_cached(sql).and_then(|mut stmt| stmt.execute(params)).map_err(|e| sqlite_error(what, &e))
}

/// Merges `delta` into the app row, creating the row if it is missing (the reference needs one
/// for every app that has sessions).
fn merge_app(conn: &Connection, app: &str, delta: &Map<String, Value>, now: &str) -> Result<Map<String, Value>> {
    let existing = app_state(conn, app)?;
    let missing = existing.is_none();
    let mut state = existing.unwrap_or_default();
    if missing || !delta.is_empty() {
        merge(&mut state, delta);
        execute(conn, "write app state", sql!("app_state_put"), params![app, state_text(&state), now])?;
    }
    Ok(state)
}

fn merge_user(
    conn: &Connection,
    key: &SessionKey,
    delta: &Map<String, Value>,
    now: &str,
) -> Result<Map<String, Value>> {
    let existing = user_state(conn, key.app_name(), key.user_id())?;
    let missing = existing.is_none();
    let mut state = existing.unwrap_or_default();
    if missing || !delta.is_empty() {
        merge(&mut state, delta);
        let params = params![key.app_name(), key.user_id(), state_text(&state), now];
        execute(conn, "write user state", sql!("user_state_put"), params)?;
    }
    Ok(state)
}

/// The session row: (state text, update time in µs).
fn session_row(conn: &Connection, key: &SessionKey) -> Result<Option<(String, i64)>> {
    let row: Option<(String, String)> = conn
        .prepare_cached(sql!("session_get"))
        .and_then(|mut stmt| {
            stmt.query_row(params![key.app_name(), key.user_id(), key.session_id()], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(|e| sqlite_error("read session", &e))?;
    row.map(|(state, time)| Ok((state, parse_sqlite_text(&time)?))).transpose()
}

pub(super) fn create(conn: &Connection, new: NewSession) -> Result<Session> {
    let NewSession { key, state, create_time_micros } = new;
    if session_row(conn, &key)?.is_some() {
        return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
    }
    let now = sqlite_text(create_time_micros)?;
    let app = merge_app(conn, key.app_name(), &state.app, &now)?;
    let user = merge_user(conn, &key, &state.user, &now)?;
    let params = params![key.app_name(), key.user_id(), key.session_id(), state_text(&state.session), now];
    execute(conn, "insert session", sql!("session_insert"), params)?;
    let merged = merge_scopes(&state.session, &app, &user);
    Ok(Session::from_storage(key, merged, Vec::<Event>::new(), create_time_micros))
}

fn stored_event(conn: &Connection, key: &SessionKey, id: &str) -> Result<Option<Event>> {
    let row: Option<(Option<String>, String, String)> = conn
        .prepare_cached(sql!("event_get"))
        .and_then(|mut stmt| {
            let params = params![key.app_name(), key.user_id(), key.session_id(), id];
            stmt.query_row(params, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional()
        })
        .map_err(|e| sqlite_error("read event", &e))?;
    row.map(|(data, invocation, time)| decode(data.as_deref(), id.to_owned(), invocation, &time)).transpose()
}

fn decode(data: Option<&str>, id: String, invocation_id: String, time: &str) -> Result<Event> {
    codec::decode_event_text(data, id, invocation_id, parse_sqlite_text(time)?)
}

pub(super) fn commit(conn: &Connection, commit: EventCommit) -> Result<CommitOutcome> {
    let EventCommit { key, expected_last_update_micros, event, timestamp_micros, delta } = commit;
    let Some((session_state, update_micros)) = session_row(conn, &key)? else {
        return Err(Error::NotFound { session_id: key.session_id().to_owned() });
    };
    if let Some(existing) = stored_event(conn, &key, &event.id)? {
        return if existing.same_as_retry(&event) {
            Ok(CommitOutcome::Duplicate(Box::new(existing)))
        } else {
            Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: event.id.clone() } })
        };
    }
    if update_micros != expected_last_update_micros {
        return Err(Error::stale());
    }
    let now = sqlite_text(timestamp_micros)?;
    let session_state = codec::merged_text(session_state, &delta.session)?;
    let params = params![key.app_name(), key.user_id(), key.session_id(), session_state, now];
    execute(conn, "update session", sql!("session_update"), params)?;
    if !delta.app.is_empty() {
        merge_app(conn, key.app_name(), &delta.app, &now)?;
    }
    if !delta.user.is_empty() {
        merge_user(conn, &key, &delta.user, &now)?;
    }
    let data = codec::event_data(&event)?;
    let params = params![key.app_name(), key.user_id(), key.session_id(), event.id, event.invocation_id, now, data];
    execute(conn, "insert event", sql!("event_insert"), params)?;
    Ok(CommitOutcome::Committed)
}

/// Deletes events, then the session (the job's savepoint makes the pair atomic).
pub(super) fn delete(conn: &Connection, key: &SessionKey) -> Result<()> {
    for statement in sql!("session_delete").split(';').map(str::trim).filter(|s| !s.is_empty()) {
        execute(conn, "delete session", statement, params![key.app_name(), key.user_id(), key.session_id()])?;
    }
    Ok(())
}

/// Runs `f` in a read transaction, so every statement sees one snapshot.
fn snapshot<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    conn.execute_batch("BEGIN DEFERRED").map_err(|e| sqlite_error("begin read", &e))?;
    let result = f();
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    conn.execute_batch(end).map_err(|e| sqlite_error("end read", &e))?;
    result
}

pub(super) fn get(conn: &Connection, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
    snapshot(conn, || {
        let Some((state, update_micros)) = session_row(conn, key)? else { return Ok(None) };
        let events = if window.recent == Some(0) { Vec::new() } else { events(conn, key, window)? };
        let app = app_state(conn, key.app_name())?.unwrap_or_default();
        let user = user_state(conn, key.app_name(), key.user_id())?.unwrap_or_default();
        let merged = merge_scopes(&parse_state(&state)?, &app, &user);
        Ok(Some(Session::from_storage(key.clone(), merged, events, update_micros)))
    })
}

fn events(conn: &Connection, key: &SessionKey, window: EventWindow) -> Result<Vec<Event>> {
    let after = window.after_micros.map(sqlite_text).transpose()?.unwrap_or_default();
    let limit = window.recent.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
    let mut stmt = conn.prepare_cached(sql!("events_window")).map_err(|e| sqlite_error("read events", &e))?;
    let rows = stmt
        .query_map(params![key.app_name(), key.user_id(), key.session_id(), after, limit], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, Option<String>>(3)?))
        })
        .map_err(|e| sqlite_error("read events", &e))?;
    let mut events = Vec::new();
    for row in rows {
        let (id, invocation, time, data) = row.map_err(|e| sqlite_error("read events", &e))?;
        events.push(decode(data.as_deref(), id, invocation, &time)?);
    }
    events.reverse();
    Ok(events)
}

pub(super) fn events_after(
    conn: &Connection,
    key: &SessionKey,
    after: Option<&EventCursor>,
    limit: usize,
) -> Result<Option<Vec<Event>>> {
    snapshot(conn, || {
        if session_row(conn, key)?.is_none() {
            return Ok(None);
        }
        let (time, id) = match after {
            Some(c) => (sqlite_text(c.timestamp_micros)?, c.event_id.clone()),
            None => (String::new(), String::new()),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = conn.prepare_cached(sql!("events_page")).map_err(|e| sqlite_error("read events", &e))?;
        let rows = stmt
            .query_map(params![key.app_name(), key.user_id(), key.session_id(), time, id, limit], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| sqlite_error("read events", &e))?;
        rows.into_iter()
            .map(|(id, inv, time, data)| decode(data.as_deref(), id, inv, &time))
            .collect::<Result<_>>()
            .map(Some)
    })
}

pub(super) fn list(conn: &Connection, query: &ListQuery) -> Result<Vec<Session>> {
    snapshot(conn, || {
        let (time, after_user, after_id) = match &query.after {
            Some(c) => (sqlite_text(c.last_update_micros)?, c.user_id.clone(), c.session_id.clone()),
            None => (String::new(), String::new(), String::new()),
        };
        let limit = query.limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let sql = if query.user_id.is_some() { sql!("sessions_list_user") } else { sql!("sessions_list_app") };
        let mut stmt = conn.prepare_cached(sql).map_err(|e| sqlite_error("list sessions", &e))?;
        let map_row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(String, String, String, String)> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        };
        let rows = match &query.user_id {
            Some(user) => stmt.query_map(params![query.app_name, time, after_user, after_id, limit, user], map_row),
            None => stmt.query_map(params![query.app_name, time, after_user, after_id, limit], map_row),
        }
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| sqlite_error("list sessions", &e))?;

        let app = app_state(conn, &query.app_name)?.unwrap_or_default();
        let mut users: HashMap<String, Map<String, Value>> = HashMap::new();
        let mut sessions = Vec::with_capacity(rows.len());
        for (user_id, id, state, time) in rows {
            if !users.contains_key(&user_id) {
                let state = user_state(conn, &query.app_name, &user_id)?.unwrap_or_default();
                users.insert(user_id.clone(), state);
            }
            let merged = merge_scopes(&parse_state(&state)?, &app, &users[&user_id]);
            let key = SessionKey::from_storage(query.app_name.as_str(), user_id, id);
            sessions.push(Session::from_storage(key, merged, Vec::<Event>::new(), parse_sqlite_text(&time)?));
        }
        Ok(sessions)
    })
}
