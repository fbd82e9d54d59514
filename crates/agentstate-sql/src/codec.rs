//! Encodings shared by every dialect, as the reference stores them: naive-UTC timestamps to the
//! microsecond, state as a JSON object, events as snake_case `event_data` with absent fields
//! omitted.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentstate::{Error, Event, Map, Result, SessionAttributes, Value};
use chrono::{DateTime, NaiveDateTime};

/// The text form SQLAlchemy gives a `DATETIME` on SQLite: always six fractional digits.
const SQLITE_DATETIME: &str = "%Y-%m-%d %H:%M:%S%.6f";

/// Epoch microseconds → naive UTC date-time.
pub(crate) fn naive(micros: i64) -> Result<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros)
        .map(|t| t.naive_utc())
        .ok_or_else(|| Error::invalid("timestamp", format!("{micros} µs is out of the supported range")))
}

/// Naive UTC date-time → epoch microseconds.
pub(crate) fn micros(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros()
}

/// Epoch microseconds → `YYYY-MM-DD HH:MM:SS.ffffff`, the reference's text form on SQLite.
pub(crate) fn sqlite_text(micros: i64) -> Result<String> {
    Ok(naive(micros)?.format(SQLITE_DATETIME).to_string())
}

/// Parses a SQLite date-time text: with or without fraction, `T` or space separator.
pub(crate) fn parse_sqlite_text(text: &str) -> Result<i64> {
    let normalized = text.replacen('T', " ", 1);
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&normalized, f).ok())
        .map(micros)
        .ok_or_else(|| corrupt(format!("unreadable timestamp {text:?}")))
}

/// A stored state column → JSON object.
pub(crate) fn parse_state(text: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(corrupt(format!("state column holds {other} instead of a JSON object"))),
        Err(e) => Err(corrupt(format!("state column is not JSON: {e}"))),
    }
}

/// JSON object → text.
pub(crate) fn state_text(state: &Map<String, Value>) -> String {
    Value::Object(state.clone()).to_string()
}

/// Sets each key of `delta` in `state` (the reference's `dict.update`: top-level keys replace,
/// `null` is a value), then removes the `deleted` keys.
pub(crate) fn merge(state: &mut Map<String, Value>, delta: &Map<String, Value>, deleted: &[String]) {
    for (k, v) in delta {
        state.insert(k.clone(), v.clone());
    }
    for k in deleted {
        state.shift_remove(k);
    }
}

/// A shared scope's row (app or user state) after merging `delta`: its state, and whether the
/// row must be written because it was missing (the reference keeps a row for every app and user
/// that has sessions) or the delta changes it. Every dialect merges through this.
pub(crate) fn merge_row(
    existing: Option<Map<String, Value>>,
    delta: &Map<String, Value>,
    deleted: &[String],
) -> (Map<String, Value>, bool) {
    let write = existing.is_none() || !delta.is_empty() || !deleted.is_empty();
    let mut state = existing.unwrap_or_default();
    merge(&mut state, delta, deleted);
    (state, write)
}

/// A state column's text with `delta` merged in and `deleted` removed; unchanged (not
/// re-encoded) when there is nothing to do.
pub(crate) fn merged_text(text: String, delta: &Map<String, Value>, deleted: &[String]) -> Result<String> {
    if delta.is_empty() && deleted.is_empty() {
        return Ok(text);
    }
    let mut state = parse_state(&text)?;
    merge(&mut state, delta, deleted);
    Ok(state_text(&state))
}

/// An event → `event_data` JSON.
pub(crate) fn event_data(event: &Event) -> Result<String> {
    serde_json::to_string(event).map_err(|e| Error::invalid("event", format!("cannot be encoded as JSON: {e}")))
}

/// `event_data` and the row's own columns → an event. The id and invocation id columns win, and
/// the column timestamp is used when `event_data` has none (as the reference reads it).
pub(crate) fn decode_event(data: Value, id: String, invocation_id: String, column_micros: i64) -> Result<Event> {
    let has_timestamp = data.get("timestamp").is_some_and(Value::is_number);
    let event: Event =
        serde_json::from_value(data).map_err(|e| corrupt(format!("event {id} has unreadable event_data: {e}")))?;
    with_columns(event, id, invocation_id, has_timestamp, || Ok(column_micros))
}

/// Like [`decode_event`], for `event_data` read as text (SQLite, MySQL, and PostgreSQL's jsonb
/// cast to text); a NULL column is an event with no other fields. The text becomes the event directly, with no JSON tree in between,
/// and the timestamp column is read only when the text has no timestamp of its own.
pub(crate) fn decode_event_text(
    data: Option<&str>,
    id: String,
    invocation_id: String,
    column_micros: impl FnOnce() -> Result<i64>,
) -> Result<Event> {
    /// Whether the text has a `timestamp`: a scan that skips every value.
    #[derive(serde::Deserialize)]
    struct Probe {
        timestamp: Option<serde::de::IgnoredAny>,
    }
    let Some(text) = data else { return with_columns(Event::default(), id, invocation_id, false, column_micros) };
    let probe: Probe = serde_json::from_str(text)
        .map_err(|e| corrupt(format!("event {id} has event_data that is not a JSON object: {e}")))?;
    let event: Event =
        serde_json::from_str(text).map_err(|e| corrupt(format!("event {id} has unreadable event_data: {e}")))?;
    with_columns(event, id, invocation_id, probe.timestamp.is_some(), column_micros)
}

/// `event` with its row's id and invocation id, and the row's timestamp unless `event_data` had one.
fn with_columns(
    mut event: Event,
    id: String,
    invocation_id: String,
    has_timestamp: bool,
    column_micros: impl FnOnce() -> Result<i64>,
) -> Result<Event> {
    if !has_timestamp {
        event.timestamp = agentstate::store::micros_to_secs(column_micros()?);
    }
    event.id = id;
    event.invocation_id = invocation_id;
    Ok(event)
}

/// A session's attributes as stored: `labels` is a JSON object of strings.
pub(crate) fn attributes(
    display_name: Option<String>,
    labels: Option<&str>,
    expire_time_micros: Option<i64>,
) -> Result<Option<Arc<SessionAttributes>>> {
    let labels: BTreeMap<String, String> = match labels {
        None => BTreeMap::new(),
        Some(text) => serde_json::from_str(text).map_err(|e| corrupt(format!("labels are unreadable: {e}")))?,
    };
    let attributes = SessionAttributes { display_name, labels, expire_time_micros };
    Ok((!attributes.is_empty()).then(|| Arc::new(attributes)))
}

/// Labels as stored: a JSON object, or `None` for none.
pub(crate) fn labels_text(attributes: &SessionAttributes) -> Option<String> {
    (!attributes.labels.is_empty()).then(|| serde_json::to_string(&attributes.labels).unwrap_or_default())
}

/// Replaces each value of `swaps` that `state` still holds as expected; how many it replaced.
pub(crate) fn swap(state: &mut Map<String, Value>, swaps: &[agentstate::store::ValueSwap]) -> usize {
    let mut swapped = 0;
    for swap in swaps {
        if let Some(value) = state.get_mut(&swap.key)
            && *value == swap.old
        {
            *value = swap.new.clone();
            swapped += 1;
        }
    }
    swapped
}

/// A backend error for data this service cannot read: not retryable.
pub(crate) fn corrupt(message: String) -> Error {
    Error::Backend { message, retryable: false, source: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_text_matches_sqlalchemy() {
        assert_eq!(sqlite_text(1_795_318_375_281_155).unwrap(), "2026-11-22 03:32:55.281155");
        assert_eq!(sqlite_text(1_795_318_375_000_000).unwrap(), "2026-11-22 03:32:55.000000");
        for text in ["2026-11-22 03:32:55.281155", "2026-11-22T03:32:55.281155"] {
            assert_eq!(parse_sqlite_text(text).unwrap(), 1_795_318_375_281_155);
        }
        assert_eq!(parse_sqlite_text("2026-11-22 03:32:55").unwrap(), 1_795_318_375_000_000);
        assert!(parse_sqlite_text("yesterday").is_err());
    }
}
