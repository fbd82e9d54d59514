//! A session with its window of events, read in one snapshot: decoded, as stored, or written
//! as the API shows them.

use agentstate::compaction::{self, EventView, Facts, KeptFacts};
use agentstate::store::{EventForm, EventWindow, LoadedSession, SessionRead, StoredEvent, WrittenEvents, merge_scopes};
use agentstate::wire::{StoredRow, write_stored_row};
use agentstate::{Error, Event, Map, Result, SessionKey, Value};
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

/// An event row, borrowed from the row in place.
fn stored_row<'r>(row: &'r Row<'_>) -> Result<StoredRow<'r>> {
    let [id, invocation_id, time, data] = columns(row)?;
    Ok(StoredRow {
        id: id.unwrap_or_default(),
        invocation_id: invocation_id.unwrap_or_default(),
        timestamp_micros: parse_sqlite_text(time.unwrap_or_default())?,
        data,
    })
}

/// An event row as stored.
fn stored_of(row: &Row<'_>) -> Result<StoredEvent> {
    let StoredRow { id, invocation_id, timestamp_micros, data } = stored_row(row)?;
    Ok(StoredEvent {
        id: id.to_owned(),
        invocation_id: invocation_id.to_owned(),
        timestamp_micros,
        data: data.map(str::to_owned),
    })
}

/// A session with its window of events, in the form `read` asks for; the compacted view, when
/// it asks for that, read from the events' facts and then the text of the events it keeps.
pub(in crate::sqlite) fn get(conn: &Connection, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
    let SessionRead { window, form, now_micros, view } = *read;
    let compacted = read.compacted();
    let answered = if compacted.is_some() { view } else { EventView::Whole };
    Ok(match form {
        EventForm::Decoded => load(conn, key, now_micros, |conn| events(conn, key, window, compacted, event_of))?.map(
            |(row, merged, events)| LoadedSession {
                view: answered,
                ..LoadedSession::decoded(row.session(key.clone(), merged, events))
            },
        ),
        EventForm::Written if compacted.is_none() => load(conn, key, now_micros, |conn| written(conn, key, window))?
            .map(|(row, merged, events)| {
                LoadedSession::written(row.session(key.clone(), merged, Vec::<Event>::new()), events)
            }),
        EventForm::Stored | EventForm::Written => {
            load(conn, key, now_micros, |conn| events(conn, key, window, compacted, stored_of))?.map(
                |(row, merged, events)| LoadedSession {
                    view: answered,
                    ..LoadedSession::stored(row.session(key.clone(), merged, Vec::<Event>::new()), events)
                },
            )
        }
    })
}

/// Most events a load, or a page of history ([`short_select`](super::short_select)), runs on its
/// caller's thread with: reading and writing each takes about a microsecond, so such a read holds
/// the thread for about as long as tokio's rule for work between awaits (up to 100 µs or so), and
/// handing it to a blocking thread and back would cost 20 to 50 µs more.
pub(in crate::sqlite) const SHORT_LOAD_EVENTS: usize = 128;

/// Whether `read` reads few enough events ([`SHORT_LOAD_EVENTS`]) to run on the caller's thread:
/// a window of that many newest events or fewer, or a session with no more, by its count as last
/// seen (`known`) or else counted on `conn`.
pub(in crate::sqlite) fn short_load(
    conn: &Connection,
    key: &SessionKey,
    read: &SessionRead,
    known: Option<usize>,
) -> Result<bool> {
    if read.compacted().is_none() && read.window.recent.is_some_and(|n| n <= SHORT_LOAD_EVENTS) {
        return Ok(true);
    }
    Ok(match known {
        Some(n) => n,
        None => events_at_most(conn, key)?,
    } <= SHORT_LOAD_EVENTS)
}

/// How many events the session has, counted up to one past [`SHORT_LOAD_EVENTS`] (its index's
/// entries alone, so the count costs the same at any size).
fn events_at_most(conn: &Connection, key: &SessionKey) -> Result<usize> {
    let past = SHORT_LOAD_EVENTS + 1;
    let bound = i64::try_from(past).unwrap_or(i64::MAX);
    let counted: i64 = conn
        .prepare_cached(sql!("events_at_most"))
        .and_then(|mut stmt| {
            stmt.query_row(params![key.app_name(), key.user_id(), key.session_id(), bound], |r| r.get(0))
        })
        .map_err(|e| sqlite_error("count events", &e))?;
    Ok(usize::try_from(counted).unwrap_or(past))
}

/// How many events the session has, when `read` read every one of them: the whole window, every
/// event as it is (not the compacted view).
pub(in crate::sqlite) fn whole_count(read: &SessionRead, loaded: &LoadedSession) -> Option<usize> {
    (read.window == EventWindow::ALL && read.compacted().is_none()).then(|| loaded.event_count())
}

/// A session's row, its merged state and its events.
type Loaded<T> = (SessionRow, Map<String, Value>, T);

/// A session's row, merged state and events (as `events` reads them), in one snapshot.
fn load<T>(
    conn: &Connection,
    key: &SessionKey,
    now_micros: i64,
    events: impl FnOnce(&Connection) -> Result<T>,
) -> Result<Option<Loaded<T>>> {
    snapshot(conn, || {
        let Some(row) = session_row(conn, key, now_micros)? else { return Ok(None) };
        let events = events(conn)?;
        let app = Shared::App(key.app_name()).read(conn)?.unwrap_or_default();
        let user = Shared::User(key.app_name(), key.user_id()).read(conn)?.unwrap_or_default();
        let merged = merge_scopes(&parse_state(&row.state)?, &app, &user);
        Ok(Some((row, merged, events)))
    })
}

/// The events of the compacted view with this overlap, or else of `window`.
fn events<E>(
    conn: &Connection,
    key: &SessionKey,
    window: EventWindow,
    compacted: Option<usize>,
    event: fn(&Row<'_>) -> Result<E>,
) -> Result<Vec<E>> {
    match compacted {
        Some(overlap) => compacted_events(conn, key, overlap, event),
        None => window_events(conn, key, window, event),
    }
}

/// The events of `window` written as the API shows them, each as its row is read (no copy of
/// a row kept): in place when the rows come oldest first, else put in order at the end.
fn written(conn: &Connection, key: &SessionKey, window: EventWindow) -> Result<WrittenEvents> {
    // What the text of a few dozen events takes: the buffer grows from there.
    const FIRST_CAPACITY: usize = 16 * 1024;
    let mut json = Vec::with_capacity(FIRST_CAPACITY);
    // Where each event's text is (newest first rows only: the others are in place).
    let (mut count, mut spans) = (0, Vec::new());
    window_rows(conn, key, window, |row| {
        if count > 0 {
            json.push(b',');
        }
        count += 1;
        let start = json.len();
        write_stored_row(stored_row(row)?, &mut json).map_err(|e| codec::corrupt(e.to_string()))?;
        if newest_first(window) {
            spans.push(start..json.len());
        }
        Ok(())
    })?;
    if spans.len() > 1 {
        let mut oldest_first = Vec::with_capacity(json.len());
        for span in spans.into_iter().rev() {
            if !oldest_first.is_empty() {
                oldest_first.push(b',');
            }
            oldest_first.extend_from_slice(&json[span]);
        }
        json = oldest_first;
    }
    Ok(WrittenEvents { json, count })
}

/// Whether `window`'s rows come newest first ([`window_rows`]).
fn newest_first(window: EventWindow) -> bool {
    window.recent.is_some()
}

/// Runs the query of `window`'s events, handing each row to `row`: oldest first when it asks
/// for no count, else newest first, so the limit keeps the most recent ([`newest_first`]).
fn window_rows(
    conn: &Connection,
    key: &SessionKey,
    window: EventWindow,
    row: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    let after = window.since_micros.map(sqlite_text).transpose()?.unwrap_or_default();
    let (app, user, session) = (key.app_name(), key.user_id(), key.session_id());
    match window.recent {
        None => each_row(conn, sql!("events_all"), params![app, user, session, after], row),
        Some(0) => Ok(()),
        Some(n) => {
            let limit = i64::try_from(n).unwrap_or(i64::MAX);
            each_row(conn, sql!("events_window"), params![app, user, session, after, limit], row)
        }
    }
}

/// Runs an event query, handing each row to `row` in the order read.
fn each_row(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    mut row: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    let read = |e| sqlite_error("read events", &e);
    let mut stmt = conn.prepare_cached(sql).map_err(read)?;
    let mut rows = stmt.query(params).map_err(read)?;
    while let Some(next) = rows.next().map_err(read)? {
        row(next)?;
    }
    Ok(())
}

/// The events of `window`, oldest first, each read by `event`.
fn window_events<E>(
    conn: &Connection,
    key: &SessionKey,
    window: EventWindow,
    event: fn(&Row<'_>) -> Result<E>,
) -> Result<Vec<E>> {
    let mut events = Vec::new();
    window_rows(conn, key, window, |row| {
        events.push(event(row)?);
        Ok(())
    })?;
    if newest_first(window) {
        events.reverse();
    }
    Ok(events)
}

/// The events of the compacted view with this `overlap`, oldest first, each read by `event`:
/// every event's facts first (its text only where none were kept), then the kept events.
fn compacted_events<E>(
    conn: &Connection,
    key: &SessionKey,
    overlap: usize,
    event: fn(&Row<'_>) -> Result<E>,
) -> Result<Vec<E>> {
    let session = params![key.app_name(), key.user_id(), key.session_id()];
    let kept = query_rows(conn, sql!("events_facts_kept"), session, kept_of)?;
    let events = kept.first().map_or(0, |(_, count)| *count);
    let facts = match compaction::from_kept(kept.into_iter().map(|(facts, _)| facts).collect(), events) {
        Some(facts) => facts,
        None => query_rows(conn, sql!("events_facts"), session, facts_of)?,
    };
    let kept = compaction::view(&facts, overlap);
    let ids: Vec<&str> = kept.iter().map(|&i| facts[i].id.as_str()).collect();
    let ids = serde_json::to_string(&ids).map_err(|e| Error::Backend {
        message: format!("list the view's events: {e}"),
        retryable: false,
        source: None,
    })?;
    query_rows(conn, sql!("events_by_id"), params![key.app_name(), key.user_id(), key.session_id(), ids], event)
}

/// A row of kept facts, with the session's event count.
fn kept_of(row: &Row<'_>) -> Result<(KeptFacts, usize)> {
    let read = |e| sqlite_error("read facts", &e);
    let count: i64 = row.get(4).map_err(read)?;
    let facts =
        (row.get(0).map_err(read)?, row.get(1).map_err(read)?, row.get(2).map_err(read)?, row.get(3).map_err(read)?);
    Ok((facts, usize::try_from(count).unwrap_or_default()))
}

/// An event's facts, from the facts kept beside it or else from its text.
fn facts_of(row: &Row<'_>) -> Result<Facts> {
    let text = |i: usize| {
        row.get_ref(i).and_then(|v| v.as_str_or_null().map_err(Into::into)).map_err(|e| sqlite_error("read facts", &e))
    };
    let (id, invocation_id) = (text(0)?.unwrap_or_default().to_owned(), text(1)?.unwrap_or_default().to_owned());
    let micros = parse_sqlite_text(text(2)?.unwrap_or_default())?;
    Ok(Facts::kept_or_stored(id, invocation_id, micros, text(3)?, text(4)?.map(str::to_owned)))
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
    let mut events = Vec::new();
    each_row(conn, sql, params, |row| {
        events.push(event(row)?);
        Ok(())
    })?;
    Ok(events)
}
