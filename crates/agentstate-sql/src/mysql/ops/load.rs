//! Reads, each in one consistent snapshot: a session with its window of events (decoded or as
//! stored), a page of sessions, events by query.

use std::collections::HashMap;

use agentstate::compaction::{self, EventView, Facts, KeptFacts};
use agentstate::store::{
    EventForm, EventQuery, EventSelect, EventWindow, ListQuery, LoadedSession, SessionRead, merge_scopes,
};
use agentstate::{Event, Map, Session, SessionKey, Value};
use chrono::NaiveDateTime;
use sqlx::Row as _;
use sqlx::mysql::{MySqlConnection, MySqlRow};

use super::{Shared, Step, event_of, read_snapshot, session_of, sql_step, stored_of, stored_session};
use crate::codec::{naive, parse_state};
use crate::list::ListStatements;
use crate::pool::keyed;
use crate::shared::expiry_time;

/// A session with its window of events, in the form `read` asks for.
pub(in crate::mysql) async fn get_in(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    read: &SessionRead,
) -> Step<Option<LoadedSession>> {
    let view = if read.compacted().is_some() { read.view } else { EventView::Whole };
    Ok(match read.form {
        EventForm::Decoded => match load(conn, key, read, event_of).await? {
            Some((row, merged, events)) => {
                let session = stored_session(&row, key.clone(), merged, events)?;
                Some(LoadedSession { view, ..LoadedSession::decoded(session) })
            }
            None => None,
        },
        EventForm::Stored | EventForm::Written => match load(conn, key, read, stored_of).await? {
            Some((row, merged, events)) => {
                let session = stored_session(&row, key.clone(), merged, Vec::new())?;
                Some(LoadedSession { view, ..LoadedSession::stored(session, events) })
            }
            None => None,
        },
    })
}

/// A session's row, merged state and window of events (each read by `event`, oldest first), in
/// one snapshot.
async fn load<E>(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    read: &SessionRead,
    event: fn(&MySqlRow) -> Step<E>,
) -> Step<Option<(MySqlRow, Map<String, Value>, Vec<E>)>> {
    let mut tx = read_snapshot(conn).await.map_err(sql_step("begin"))?;
    let row = keyed(sql!("session_get"), key)
        .bind(expiry_time(read.now_micros)?)
        .fetch_optional(&mut *tx)
        .await
        .map_err(sql_step("read session"))?;
    let Some(row) = row else { return Ok(None) };
    let (state, _) = session_of(&row)?;
    let events = match read.compacted() {
        Some(overlap) => compacted_events(&mut tx, key, overlap, event).await?,
        None => window(&mut tx, key, read.window, event).await?,
    };
    let app = Shared::App(key.app_name()).read(&mut tx, false).await?.unwrap_or_default();
    let user = Shared::User(key.app_name(), key.user_id()).read(&mut tx, false).await?.unwrap_or_default();
    tx.commit().await.map_err(sql_step("end read"))?;
    Ok(Some((row, merge_scopes(&parse_state(&state)?, &app, &user), events)))
}

/// How many ids one statement of the compacted view's events names.
const IDS_PER_STATEMENT: usize = 1000;

/// The events of the compacted view with this `overlap`, oldest first: every event's facts read
/// first (its text only where none were kept), then the kept events.
async fn compacted_events<E>(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    overlap: usize,
    event: fn(&MySqlRow) -> Step<E>,
) -> Step<Vec<E>> {
    let rows = keyed(sql!("events_facts_kept"), key)
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .fetch_all(&mut *conn)
        .await
        .map_err(sql_step("read facts"))?;
    let events: i64 =
        rows.first().map(|row| row.try_get("events")).transpose().map_err(sql_step("read facts"))?.unwrap_or_default();
    let kept = rows.iter().map(kept_of).collect::<Step<Vec<KeptFacts>>>()?;
    let facts = match compaction::from_kept(kept, usize::try_from(events).unwrap_or_default()) {
        Some(facts) => facts,
        None => {
            let rows = keyed(sql!("events_facts"), key).fetch_all(&mut *conn).await.map_err(sql_step("read facts"))?;
            rows.iter().map(facts_of).collect::<Step<Vec<Facts>>>()?
        }
    };
    let kept = compaction::view(&facts, overlap);
    let position: HashMap<&str, usize> = kept.iter().enumerate().map(|(n, &i)| (facts[i].id.as_str(), n)).collect();
    let mut found: Vec<(usize, E)> = Vec::with_capacity(kept.len());
    for ids in kept.chunks(IDS_PER_STATEMENT) {
        // Placeholders only: the ids are bound.
        let statement = format!("{}{})", sql!("events_by_id"), vec!["?"; ids.len()].join(", "));
        let mut query =
            sqlx::query(sqlx::AssertSqlSafe(statement)).bind(key.app_name()).bind(key.user_id()).bind(key.session_id());
        for &i in ids {
            query = query.bind(facts[i].id.as_str());
        }
        for row in query.fetch_all(&mut *conn).await.map_err(sql_step("read events"))? {
            let id: String = row.try_get("id").map_err(sql_step("read events"))?;
            if let Some(&n) = position.get(id.as_str()) {
                found.push((n, event(&row)?));
            }
        }
    }
    found.sort_by_key(|(n, _)| *n);
    Ok(found.into_iter().map(|(_, event)| event).collect())
}

/// A row of kept facts.
fn kept_of(row: &MySqlRow) -> Step<KeptFacts> {
    let read = |e| super::Failure::Sql("read facts", e);
    Ok((
        row.try_get("event_id").map_err(read)?,
        row.try_get("invocation_id").map_err(read)?,
        row.try_get("micros").map_err(read)?,
        row.try_get("facts").map_err(read)?,
    ))
}

/// An event's facts, from the facts kept beside it or else from its text.
fn facts_of(row: &MySqlRow) -> Step<Facts> {
    let read = |e| super::Failure::Sql("read facts", e);
    let time: NaiveDateTime = row.try_get("timestamp").map_err(read)?;
    let id: String = row.try_get("id").map_err(read)?;
    let invocation_id: String = row.try_get("invocation_id").map_err(read)?;
    let micros = crate::codec::micros(time);
    let kept: Option<String> = row.try_get("facts").map_err(read)?;
    let data: Option<String> = row.try_get("event_data").map_err(read)?;
    Ok(Facts::kept_or_stored(id, invocation_id, micros, kept.as_deref(), data))
}

/// The events of `window`, oldest first.
async fn window<E>(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    window: EventWindow,
    event: fn(&MySqlRow) -> Step<E>,
) -> Step<Vec<E>> {
    if window.recent == Some(0) {
        return Ok(Vec::new());
    }
    let since = window.since_micros.map(naive).transpose()?;
    let floor = NaiveDateTime::parse_from_str("1000-01-01 00:00:00", "%Y-%m-%d %H:%M:%S").unwrap_or_default();
    let limit = window.recent.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX));
    let rows = keyed(sql!("events_window"), key)
        .bind(since.unwrap_or(floor))
        .bind(limit)
        .fetch_all(&mut *conn)
        .await
        .map_err(sql_step("read events"))?;
    // Read newest first, so the limit keeps the most recent.
    rows.iter().rev().map(event).collect()
}

pub(in crate::mysql) async fn list_in(conn: &mut MySqlConnection, query: &ListQuery) -> Step<Vec<Session>> {
    let cursor = query.after.as_ref();
    let time = |micros: Option<i64>| micros.map(naive).transpose();
    let cursor_time = time(cursor.map(|c| c.at_micros))?;
    let limit = query.limit.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX));
    let mut tx = read_snapshot(conn).await.map_err(sql_step("begin"))?;
    static STATEMENTS: ListStatements = ListStatements::new();
    let sql =
        STATEMENTS.get(query, [sql!("sessions_list"), sql!("sessions_list_desc")], ["s.user_id = ?", "? IS NULL"]);
    let filter = &query.filter;
    let mut statement = sqlx::query(sql)
        .bind(&query.app_name)
        .bind(query.user_id.as_deref())
        .bind(cursor_time)
        .bind(cursor_time)
        .bind(cursor.map_or("", |c| c.user_id.as_str()))
        .bind(cursor.map_or("", |c| c.session_id.as_str()))
        .bind(expiry_time(query.now_micros)?);
    for bound in [
        filter.update_time.from_micros,
        filter.update_time.to_micros,
        filter.create_time.from_micros,
        filter.create_time.to_micros,
    ] {
        let bound = time(bound)?;
        statement = statement.bind(bound).bind(bound);
    }
    let values = [
        filter.display_name.clone(),
        filter.labels_object().map(|l| l.to_string()),
        filter.state_object().map(|s| s.to_string()),
    ];
    for value in values {
        statement = statement.bind(value.clone()).bind(value);
    }
    let rows = statement.bind(limit).fetch_all(&mut *tx).await.map_err(sql_step("list sessions"))?;
    let app = Shared::App(&query.app_name).read(&mut tx, false).await?.unwrap_or_default();
    tx.commit().await.map_err(sql_step("end read"))?;
    let column =
        |r: &MySqlRow, name: &str| -> Step<Option<String>> { r.try_get(name).map_err(sql_step("read sessions")) };
    rows.iter()
        .map(|r| {
            let (state, _) = session_of(r)?;
            let user = column(r, "user_state")?.as_deref().map(parse_state).transpose()?.unwrap_or_default();
            let user_id = column(r, "user_id")?.unwrap_or_default();
            let id = column(r, "id")?.unwrap_or_default();
            let merged = merge_scopes(&parse_state(&state)?, &app, &user);
            let key = SessionKey::from_storage(query.app_name.as_str(), user_id, id);
            stored_session(r, key, merged, Vec::new())
        })
        .collect()
}

pub(in crate::mysql) async fn events_in(conn: &mut MySqlConnection, query: &EventQuery) -> Step<Option<Vec<Event>>> {
    let EventQuery { key, select, now_micros } = query;
    let mut tx = read_snapshot(conn).await.map_err(sql_step("begin"))?;
    let present = keyed(sql!("session_get"), key)
        .bind(expiry_time(*now_micros)?)
        .fetch_optional(&mut *tx)
        .await
        .map_err(sql_step("read session"))?
        .is_some();
    if !present {
        return Ok(None);
    }
    let statement = match select {
        EventSelect::Page { after: cursor, since_micros, limit }
        | EventSelect::Latest { before: cursor, since_micros, limit } => {
            let statement = match select {
                EventSelect::Page { .. } => sql!("events_page"),
                _ => sql!("events_latest"),
            };
            let cursor_time = cursor.as_ref().map(|c| naive(c.timestamp_micros)).transpose()?;
            let since = since_micros.map(naive).transpose()?;
            keyed(statement, key)
                .bind(cursor_time)
                .bind(cursor_time)
                .bind(cursor.as_ref().map_or("", |c| c.event_id.as_str()))
                .bind(since)
                .bind(since)
                .bind(u64::try_from(*limit).unwrap_or(u64::MAX))
        }
        EventSelect::Id(id) => keyed(sql!("event_get"), key).bind(id.as_str()),
        EventSelect::FirstOfInvocation(invocation) => keyed(sql!("invocation_first"), key).bind(invocation.as_str()),
    };
    let rows = statement.fetch_all(&mut *tx).await.map_err(sql_step("read events"))?;
    tx.commit().await.map_err(sql_step("end read"))?;
    rows.iter().map(event_of).collect::<Step<_>>().map(Some)
}
