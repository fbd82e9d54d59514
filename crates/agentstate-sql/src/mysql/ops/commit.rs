//! Writes, each in the caller's transaction: creating a session, appending, copying events,
//! keeping and dropping history, sweeping, erasing.

use std::sync::{Arc, OnceLock};

use agentstate::store::{
    CommitOutcome, EventCommit, EventCopy, EventCursor, HistorySnapshot, NewSession, UserDataCounts, merge_scopes,
};
use agentstate::{Error, Event, Map, SessionKey, Value};
use chrono::NaiveDateTime;
use sqlx::Row as _;
use sqlx::mysql::{MySqlConnection, MySqlRow};

use super::{Shared, Step, count_user_data, event_of, session_of, sql_step};
use crate::codec::{self, merge_row, micros, naive, parse_state, state_text};
use crate::pool::{is_unique_violation, keyed};

/// Inserts the session row; `false` when the id is taken by a live session. One taken by a
/// session expired at the new one's creation time goes first (its events and history by
/// cascade).
async fn insert_session(conn: &mut MySqlConnection, new: &NewSession, now: NaiveDateTime) -> Step<bool> {
    let insert = || keyed(sql!("session_insert"), &new.key).bind(state_text(&new.state.session)).bind(now).bind(now);
    match insert().execute(&mut *conn).await {
        Ok(_) => return Ok(true),
        Err(e) if is_unique_violation(&e) => {}
        Err(e) => return Err(sql_step("insert session")(e)),
    }
    let removed = keyed(sql!("session_expired_delete"), &new.key)
        .bind(now)
        .execute(&mut *conn)
        .await
        .map_err(sql_step("remove an expired session"))?
        .rows_affected();
    if removed == 0 {
        return Ok(false);
    }
    insert().execute(&mut *conn).await.map_err(sql_step("insert session"))?;
    Ok(true)
}

pub(in crate::mysql) async fn create_in(conn: &mut MySqlConnection, new: &NewSession) -> Step<agentstate::Session> {
    let NewSession { key, state, create_time_micros, attributes, history_start } = new;
    let now = naive(*create_time_micros)?;
    if !insert_session(conn, new, now).await? {
        return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() }.into());
    }
    if !attributes.is_empty() {
        keyed(sql!("session_attributes_put"), key)
            .bind(now)
            .bind(attributes.display_name.as_deref())
            .bind(codec::labels_text(attributes))
            .bind(attributes.expire_time_micros.map(naive).transpose()?)
            .execute(&mut *conn)
            .await
            .map_err(sql_step("write session attributes"))?;
    }
    if let Some(start) = history_start {
        put_snapshot(conn, key, &HistorySnapshot { at: EventCursor::CREATION, state: start.clone() }).await?;
    }
    // Locks in the commit's order: session, then user, then app.
    let (user_row, app_row) = (Shared::User(key.app_name(), key.user_id()), Shared::App(key.app_name()));
    let (user, app) = if state.user.is_empty() && state.app.is_empty() {
        // Nothing to merge: both rows read at once, and one created only when it is not there.
        let row = sqlx::query(sql!("shared_states_get"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.app_name())
            .fetch_one(&mut *conn)
            .await
            .map_err(sql_step("read shared state"))?;
        let user = match state_column(&row, "user_state")? {
            Some(user) => user,
            None => user_row.ensure(conn, now).await?,
        };
        let app = match state_column(&row, "app_state")? {
            Some(app) => app,
            None => app_row.ensure(conn, now).await?,
        };
        (user, app)
    } else {
        (user_row.merge(conn, &state.user, &[], now).await?, app_row.merge(conn, &state.app, &[], now).await?)
    };
    let merged = merge_scopes(&state.session, &app, &user);
    Ok(agentstate::Session::from_storage(key.clone(), merged, Vec::<Event>::new(), *create_time_micros)
        .created_at(*create_time_micros)
        .with_attributes((!attributes.is_empty()).then(|| Arc::new(attributes.clone()))))
}

/// The answer to an append that cannot go in: the stored event of its id when there is one (a
/// retry is answered with it, another event of a used id is a conflict), else a stale handle.
async fn stored_or_stale(conn: &mut MySqlConnection, key: &SessionKey, event: &Event) -> Step<CommitOutcome> {
    let row = keyed(sql!("event_get"), key)
        .bind(&event.id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(sql_step("read event"))?;
    match row {
        Some(row) => CommitOutcome::of_stored(event_of(&row)?, event).map_err(Into::into),
        None => Err(Error::stale().into()),
    }
}

/// `session_lock.sql` with the user's and/or the app's state row joined: read and locked with the
/// session's, in its round trip, when the append changes them.
fn lock_statement(user: bool, app: bool) -> &'static str {
    static MADE: [OnceLock<String>; 4] = [const { OnceLock::new() }; 4];
    MADE[usize::from(user) * 2 + usize::from(app)].get_or_init(|| {
        let pick = |on: bool, piece: &'static str| if on { piece } else { "" };
        let joins = [
            pick(user, "LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id\n"),
            pick(app, "LEFT JOIN app_states p ON p.app_name = s.app_name\n"),
        ];
        let columns = [pick(user, ", u.state AS user_state"), pick(app, ", p.state AS app_state")];
        sql!("session_lock").replace("{columns}", &columns.concat()).replace("{joins}", &joins.concat())
    })
}

/// The shared state in `column` of `row`; `None` where the row is not there (`NULL`).
fn state_column(row: &MySqlRow, column: &str) -> Step<Option<Map<String, Value>>> {
    let text: Option<String> = row.try_get(column).map_err(sql_step("read shared state"))?;
    Ok(text.as_deref().map(parse_state).transpose()?)
}

/// A shared row's state after the append, from its locked `column` (`NULL` when the row is not
/// there yet: its write creates it).
fn shared_after(row: &MySqlRow, column: &str, delta: &Map<String, Value>, deleted: &[String]) -> Step<String> {
    let (state, _) = merge_row(state_column(row, column)?, delta, deleted);
    Ok(state_text(&state))
}

/// Appends in a transaction of five statements, and one more for each shared row the delta
/// changes: the session row locked (with those rows), the event, its facts, the session's update,
/// each shared row's write (which creates it when it is not there).
pub(in crate::mysql) async fn commit_in(conn: &mut MySqlConnection, commit: &EventCommit) -> Step<CommitOutcome> {
    let EventCommit { key, expected_last_update_micros, event, timestamp_micros, delta, deleted, .. } = commit;
    let not_found = || Error::NotFound { session_id: key.session_id().to_owned() }.into();
    let (user, app) = (!delta.user.is_empty(), !delta.app.is_empty());
    let row =
        keyed(lock_statement(user, app), key).fetch_optional(&mut *conn).await.map_err(sql_step("lock session"))?;
    let Some(row) = row else { return Err(not_found()) };
    let expires: Option<NaiveDateTime> = row.try_get("expire_time").map_err(sql_step("read session"))?;
    if !agentstate::live_at(expires.map(micros), commit.now_micros) {
        return Err(not_found());
    }
    let (session_state, marker) = session_of(&row)?;
    if marker != *expected_last_update_micros {
        // A retry of an append whose answer was lost comes with the marker before it.
        return stored_or_stale(conn, key, event).await;
    }
    let now = naive(*timestamp_micros)?;
    // The event first, with no lookup before it: an id the session already holds fails this insert
    // alone (InnoDB undoes the statement, not the transaction), and the stored event answers.
    let inserted = keyed(sql!("event_insert"), key)
        .bind(&event.id)
        .bind(&event.invocation_id)
        .bind(now)
        .bind(codec::event_data(event)?)
        .execute(&mut *conn)
        .await;
    match inserted {
        Err(e) if is_unique_violation(&e) => {
            return stored_or_stale(conn, key, event).await;
        }
        inserted => inserted.map_err(sql_step("insert event"))?,
    };
    keyed(sql!("event_facts_put"), key)
        .bind(&event.id)
        .bind(&event.invocation_id)
        .bind(*timestamp_micros)
        .bind(agentstate::compaction::Facts::of(event).to_text())
        .execute(&mut *conn)
        .await
        .map_err(sql_step("keep an event's facts"))?;
    let session_state = codec::merged_text(session_state, &delta.session, &deleted.session)?;
    sqlx::query(sql!("session_update"))
        .bind(session_state)
        .bind(now)
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .execute(&mut *conn)
        .await
        .map_err(sql_step("update session"))?;
    if user {
        let text = shared_after(&row, "user_state", &delta.user, &deleted.user)?;
        Shared::User(key.app_name(), key.user_id()).put(conn, text, now).await?;
    }
    if app {
        let text = shared_after(&row, "app_state", &delta.app, &deleted.app)?;
        Shared::App(key.app_name()).put(conn, text, now).await?;
    }
    if let Some(to) = commit.extend_expiry_to {
        let to = naive(to)?;
        sqlx::query(sql!("session_expire_extend"))
            .bind(to)
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .bind(to)
            .execute(&mut *conn)
            .await
            .map_err(sql_step("move an expire time"))?;
    }
    Ok(CommitOutcome::Committed)
}

/// Copies `from`'s events up to `upto` into `to` as they are, and sets `to`'s marker: how many.
/// `None`, writing nothing, when some are not after `to_marker`.
pub(in crate::mysql) async fn copy_in(conn: &mut MySqlConnection, copy: &EventCopy) -> Step<Option<u64>> {
    let EventCopy { from, to, upto, to_marker } = copy;
    let upto_time = naive(upto.timestamp_micros)?;
    let early: bool = keyed(sql!("events_copy_early"), from)
        .bind(naive(*to_marker)?)
        .bind(upto_time)
        .bind(upto_time)
        .bind(&upto.event_id)
        .fetch_one(&mut *conn)
        .await
        .and_then(|row| row.try_get::<bool, _>("early"))
        .map_err(sql_step("read events to copy"))?;
    if early {
        return Ok(None);
    }
    let copied = sqlx::query(sql!("events_copy"))
        .bind(to.session_id())
        .bind(from.app_name())
        .bind(from.user_id())
        .bind(from.session_id())
        .bind(upto_time)
        .bind(upto_time)
        .bind(&upto.event_id)
        .execute(&mut *conn)
        .await
        .map_err(sql_step("copy events"))?
        .rows_affected();
    if copied > 0 {
        sqlx::query(sql!("session_marker_put"))
            .bind(upto_time)
            .bind(to.app_name())
            .bind(to.user_id())
            .bind(to.session_id())
            .execute(&mut *conn)
            .await
            .map_err(sql_step("set the session's marker"))?;
    }
    Ok(Some(copied))
}

pub(in crate::mysql) async fn put_snapshot(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    snapshot: &HistorySnapshot,
) -> Step<()> {
    sqlx::query(sql!("history_snapshot_put"))
        .bind(snapshot.at.timestamp_micros)
        .bind(&snapshot.at.event_id)
        .bind(state_text(&snapshot.state))
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .execute(&mut *conn)
        .await
        .map(drop)
        .map_err(sql_step("keep a history snapshot"))
}

/// Drops the session's events before `cut_micros` and the snapshots before it, and keeps
/// `boundary`.
pub(in crate::mysql) async fn drop_events_in(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    cut_micros: i64,
    boundary: &HistorySnapshot,
) -> Step<usize> {
    let mut statements = sql!("events_drop").split(';').map(str::trim).filter(|s| !s.is_empty());
    let (Some(events), Some(snapshots)) = (statements.next(), statements.next()) else { return Ok(0) };
    let bound = |sql| sqlx::query(sql).bind(key.app_name()).bind(key.user_id()).bind(key.session_id());
    let dropped = bound(events)
        .bind(naive(cut_micros)?)
        .execute(&mut *conn)
        .await
        .map_err(sql_step("drop old events"))?
        .rows_affected();
    bound(snapshots).bind(cut_micros).execute(&mut *conn).await.map_err(sql_step("drop old snapshots"))?;
    put_snapshot(conn, key, boundary).await?;
    Ok(usize::try_from(dropped).unwrap_or_default())
}

/// Deletes up to `limit` sessions expired at `before_micros`, oldest expiry first, with their
/// artifacts (locked by the select, so none is created again in between).
pub(in crate::mysql) async fn delete_expired_in(
    conn: &mut MySqlConnection,
    before_micros: i64,
    limit: usize,
) -> Step<Vec<SessionKey>> {
    let rows = sqlx::query(sql!("sessions_expired"))
        .bind(naive(before_micros)?)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await
        .map_err(sql_step("find expired sessions"))?;
    let mut removed = Vec::with_capacity(rows.len());
    for row in &rows {
        let part = |name| row.try_get::<String, _>(name).map_err(sql_step("find expired sessions"));
        let key = SessionKey::from_storage(part("app_name")?, part("user_id")?, part("session_id")?);
        keyed(sql!("session_delete"), &key).execute(&mut *conn).await.map_err(sql_step("delete an expired session"))?;
        keyed(sql!("artifact_session_delete"), &key)
            .execute(&mut *conn)
            .await
            .map_err(sql_step("delete an expired session's artifacts"))?;
        removed.push(key);
    }
    Ok(removed)
}

/// Erases `user` of `app`; what it removed.
pub(in crate::mysql) async fn erase_in(conn: &mut MySqlConnection, app: &str, user: &str) -> Step<UserDataCounts> {
    let found = count_user_data(&mut *conn, app, user).await?;
    for statement in sql!("user_erase").split(';').map(str::trim).filter(|s| !s.is_empty()) {
        sqlx::query(statement).bind(app).bind(user).execute(&mut *conn).await.map_err(sql_step("erase a user"))?;
    }
    Ok(found)
}
