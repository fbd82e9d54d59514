//! A session with its window of events, in one statement (one snapshot): decoded, or as stored.

use agentstate::compaction::{self, EventView, Facts, KeptFacts};
use agentstate::store::{EventForm, LoadedSession, SessionRead, StoredEvent, merge_scopes};
use agentstate::{Event, Map, Result, SessionKey, Value};
use sqlx::Connection;
use sqlx::postgres::PgRow;

use super::{Pool, get, get_json, object, stored_session};
use crate::codec::{self, naive};
use crate::pool::{keyed, sqlx_error};
use crate::shared::expiry_time;

/// A session's row, its merged state and its events.
type Loaded<E> = (PgRow, Map<String, Value>, Vec<E>);

/// A session's row, merged state and window of events (each made by `event` from the row's id,
/// invocation id, time and `event_data` text, oldest first), in one statement.
async fn load<E>(
    pool: &Pool,
    key: &SessionKey,
    read: &SessionRead,
    event: impl Fn(String, String, i64, Option<&str>) -> Result<E>,
) -> Result<Option<Loaded<E>>> {
    let rows = match read.compacted() {
        Some(overlap) => compacted_rows(pool, key, read, overlap).await?,
        None => {
            let window = read.window;
            let since = window.since_micros.map(naive).transpose()?;
            let limit = window.recent.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
            keyed(sql!("session_load"), key)
                .bind(since)
                .bind(limit)
                .bind(expiry_time(read.now_micros)?)
                .fetch_all(pool)
                .await
                .map_err(|e| sqlx_error("loading a session", e))?
        }
    };
    // One row for the session (the one with a marker), one per event, in any order.
    let mut session_row = None;
    let mut events = Vec::with_capacity(rows.len());
    for row in rows {
        let Some(id) = get::<Option<String>>(&row, "id")? else {
            session_row = Some(row);
            continue;
        };
        let invocation_id = get::<Option<String>>(&row, "invocation_id")?.unwrap_or_default();
        let micros = get::<Option<chrono::NaiveDateTime>>(&row, "event_time")?.map_or(0, codec::micros);
        let made = event(id.clone(), invocation_id, micros, get(&row, "event_data")?)?;
        events.push((micros, id, made));
    }
    let Some(first) = session_row else { return Ok(None) };
    // Oldest first; the rows came newest first, which this sort reverses in one pass.
    events.sort_by(|(a, x, _), (b, y, _)| a.cmp(b).then_with(|| x.cmp(y)));
    let session = object(get_json(&first, "state")?, "sessions.state")?;
    let app = object(get_json(&first, "app_state")?, "app_states.state")?;
    let user = object(get_json(&first, "user_state")?, "user_states.state")?;
    let events = events.into_iter().map(|(_, _, event)| event).collect();
    Ok(Some((first, merge_scopes(&session, &app, &user), events)))
}

/// The rows of `session_load.sql` for the compacted view: every event's facts read first (its
/// text only where none were kept), then the session and the kept events, in one snapshot.
async fn compacted_rows(pool: &Pool, key: &SessionKey, read: &SessionRead, overlap: usize) -> Result<Vec<PgRow>> {
    let fail = |e| sqlx_error("loading a session's compacted view", e);
    let mut conn = pool.acquire().await.map_err(fail)?;
    let mut tx = conn.begin().await.map_err(fail)?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").execute(&mut *tx).await.map_err(fail)?;
    let rows = keyed(sql!("events_facts_kept"), key).fetch_all(&mut *tx).await.map_err(fail)?;
    let events = rows.first().map(|row| get::<i64>(row, "events")).transpose()?.unwrap_or_default();
    let kept = rows.iter().map(kept_of).collect::<Result<Vec<KeptFacts>>>()?;
    let facts = match compaction::from_kept(kept, usize::try_from(events).unwrap_or_default()) {
        Some(facts) => facts,
        None => {
            let rows = keyed(sql!("events_facts"), key).fetch_all(&mut *tx).await.map_err(fail)?;
            rows.iter().map(facts_of).collect::<Result<Vec<Facts>>>()?
        }
    };
    let kept = compaction::view(&facts, overlap);
    let ids: Vec<&str> = kept.iter().map(|&i| facts[i].id.as_str()).collect();
    let rows = keyed(sql!("session_load_ids"), key)
        .bind(&ids)
        .bind(expiry_time(read.now_micros)?)
        .fetch_all(&mut *tx)
        .await
        .map_err(fail)?;
    tx.commit().await.map_err(fail)?;
    Ok(rows)
}

/// A row of kept facts.
fn kept_of(row: &PgRow) -> Result<KeptFacts> {
    Ok((get(row, "event_id")?, get(row, "invocation_id")?, get(row, "micros")?, get(row, "facts")?))
}

/// An event's facts, from the facts kept beside it or else from its text.
fn facts_of(row: &PgRow) -> Result<Facts> {
    let id = get::<Option<String>>(row, "id")?.unwrap_or_default();
    let invocation_id = get::<Option<String>>(row, "invocation_id")?.unwrap_or_default();
    let micros = get::<Option<chrono::NaiveDateTime>>(row, "event_time")?.map_or(0, codec::micros);
    let kept = get::<Option<String>>(row, "facts")?;
    Ok(Facts::kept_or_stored(id, invocation_id, micros, kept.as_deref(), get(row, "event_data")?))
}

/// A session with its window of events, in the form `read` asks for.
pub(in crate::postgres) async fn get_session(
    pool: &Pool,
    key: &SessionKey,
    read: &SessionRead,
) -> Result<Option<LoadedSession>> {
    let answered = if read.compacted().is_some() { read.view } else { EventView::Whole };
    match read.form {
        EventForm::Decoded => {
            let decode = |id, invocation_id, micros, data: Option<&str>| {
                codec::decode_event_text(data, id, invocation_id, || Ok(micros))
            };
            let Some((row, merged, events)) = load(pool, key, read, decode).await? else { return Ok(None) };
            let session = stored_session(&row, key.clone(), merged, events)?;
            Ok(Some(LoadedSession { view: answered, ..LoadedSession::decoded(session) }))
        }
        EventForm::Stored | EventForm::Written => {
            let stored = |id, invocation_id, timestamp_micros, data: Option<&str>| {
                Ok(StoredEvent { id, invocation_id, timestamp_micros, data: data.map(str::to_owned) })
            };
            let Some((row, merged, events)) = load(pool, key, read, stored).await? else { return Ok(None) };
            let session = stored_session(&row, key.clone(), merged, Vec::<Event>::new())?;
            Ok(Some(LoadedSession { view: answered, ..LoadedSession::stored(session, events) }))
        }
    }
}
