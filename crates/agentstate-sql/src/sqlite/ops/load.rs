//! A session with its window of events, read in one snapshot: decoded, or as stored.

use agentstate::store::{EventForm, EventWindow, LoadedSession, SessionRead, StoredEvent, merge_scopes};
use agentstate::{Event, Map, Result, SessionKey, Value};
use rusqlite::{Connection, Row, params};

use super::{SessionRow, Shared, session_row, snapshot};
use crate::codec::{self, parse_sqlite_text, parse_state, sqlite_text};
use crate::sqlite::sqlite_error;

/// An event row's columns (`id`, `invocation_id`, `timestamp`, `event_data`, in that order), as
/// the row's own text.
fn columns<'r>(row: &'r Row<'_>) -> Result<[Option<&'r str>; 4]> {
    let text = |i: usize| {
        row.get_ref(i).and_then(|v| v.as_str_or_null().map_err(Into::into)).map_err(|e| sqlite_error("read event", &e))
    };
    Ok([text(0)?, text(1)?, text(2)?, text(3)?])
}

/// An event row as an event, decoded from the row's own text.
pub(super) fn event_of(row: &Row<'_>) -> Result<Event> {
    let [id, invocation_id, time, data] = columns(row)?;
    let (id, invocation_id) = (id.unwrap_or_default().to_owned(), invocation_id.unwrap_or_default().to_owned());
    codec::decode_event_text(data, id, invocation_id, || parse_sqlite_text(time.unwrap_or_default()))
}

/// An event row as stored.
fn stored_of(row: &Row<'_>) -> Result<StoredEvent> {
    let [id, invocation_id, time, data] = columns(row)?;
    Ok(StoredEvent {
        id: id.unwrap_or_default().to_owned(),
        invocation_id: invocation_id.unwrap_or_default().to_owned(),
        timestamp_micros: parse_sqlite_text(time.unwrap_or_default())?,
        data: data.map(str::to_owned),
    })
}

/// A session with its window of events, in the form `read` asks for.
pub(in crate::sqlite) fn get(conn: &Connection, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
    let SessionRead { window, form, now_micros } = *read;
    Ok(match form {
        EventForm::Decoded => load(conn, key, window, now_micros, event_of)?
            .map(|(row, merged, events)| LoadedSession::decoded(row.session(key.clone(), merged, events))),
        EventForm::Stored => {
            load(conn, key, window, now_micros, stored_of)?.map(|(row, merged, events)| LoadedSession {
                session: row.session(key.clone(), merged, Vec::<Event>::new()),
                stored_events: Some(events),
            })
        }
    })
}

/// A session's row, its merged state and its events.
type Loaded<E> = (SessionRow, Map<String, Value>, Vec<E>);

/// A session's row, merged state and window of events (each read by `event`), in one snapshot.
fn load<E>(
    conn: &Connection,
    key: &SessionKey,
    window: EventWindow,
    now_micros: i64,
    event: fn(&Row<'_>) -> Result<E>,
) -> Result<Option<Loaded<E>>> {
    snapshot(conn, || {
        let Some(row) = session_row(conn, key, now_micros)? else { return Ok(None) };
        let mut events = Vec::new();
        if window.recent != Some(0) {
            let after = window.since_micros.map(sqlite_text).transpose()?.unwrap_or_default();
            let limit = window.recent.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
            let params = params![key.app_name(), key.user_id(), key.session_id(), after, limit];
            // Read newest first, so the limit keeps the most recent.
            events = query_rows(conn, sql!("events_window"), params, event)?;
            events.reverse();
        }
        let app = Shared::App(key.app_name()).read(conn)?.unwrap_or_default();
        let user = Shared::User(key.app_name(), key.user_id()).read(conn)?.unwrap_or_default();
        let merged = merge_scopes(&parse_state(&row.state)?, &app, &user);
        Ok(Some((row, merged, events)))
    })
}

/// Runs an event query; the rows as events, in the order read, each decoded as it is read.
pub(super) fn query_events(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<Vec<Event>> {
    query_rows(conn, sql, params, event_of)
}

/// Runs an event query; each row, in the order read, as `event` reads it.
fn query_rows<E>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    event: fn(&Row<'_>) -> Result<E>,
) -> Result<Vec<E>> {
    let read = |e| sqlite_error("read events", &e);
    let mut stmt = conn.prepare_cached(sql).map_err(read)?;
    let mut rows = stmt.query(params).map_err(read)?;
    let mut events = Vec::new();
    while let Some(row) = rows.next().map_err(read)? {
        events.push(event(row)?);
    }
    Ok(events)
}
