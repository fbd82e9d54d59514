//! Encodings shared by every dialect, as the reference stores them: naive-UTC timestamps to the
//! microsecond, state as a JSON object, events as snake_case `event_data` with absent fields
//! omitted.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentstate::{Error, Event, Map, Result, SessionAttributes, Value};
use chrono::{DateTime, NaiveDateTime};

/// A user's data as the `user_data` and `user_erase` statements count it, by column
/// (`sessions`, `events`, `user_keys`, read by `count`); memories and artifacts are counted
/// apart.
pub(crate) fn user_data_counts<E>(
    mut count: impl FnMut(&'static str) -> std::result::Result<i64, E>,
) -> std::result::Result<agentstate::store::UserDataCounts, E> {
    let mut column = |name| count(name).map(|n| usize::try_from(n).unwrap_or_default());
    Ok(agentstate::store::UserDataCounts {
        sessions: column("sessions")?,
        events: column("events")?,
        user_state_keys: column("user_keys")?,
        memories: 0,
        artifacts: 0,
    })
}

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

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// (year, month, day) → days since 1970-01-01 (`days_from_civil`); the date must be valid.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let doy = (153 * if month > 2 { month - 3 } else { month + 9 } + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Epoch microseconds → `YYYY-MM-DD HH:MM:SS.ffffff`, the reference's text form on SQLite.
/// Written by hand for years 0 to 9999 (every append writes one, and chrono's formatter
/// interprets its format string each time); chrono's for the rest.
pub(crate) fn sqlite_text(micros: i64) -> Result<String> {
    let (days, in_day) = (micros.div_euclid(MICROS_PER_DAY), micros.rem_euclid(MICROS_PER_DAY));
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return Ok(naive(micros)?.format(SQLITE_DATETIME).to_string());
    }
    let secs = in_day / 1_000_000;
    let mut text = *b"0000-00-00 00:00:00.000000";
    let fields = [(0, 4, year), (5, 2, i64::from(month)), (8, 2, i64::from(day)), (11, 2, secs / 3600)];
    let fields = fields.into_iter().chain([(14, 2, secs / 60 % 60), (17, 2, secs % 60), (20, 6, in_day % 1_000_000)]);
    for (at, width, mut value) in fields {
        for digit in text[at..at + width].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    Ok(text.iter().map(|&b| char::from(b)).collect())
}

/// The canonical form `YYYY-MM-DD HH:MM:SS.ffffff` → epoch microseconds; `None` for any other
/// text, or an impossible date.
fn parse_canonical(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 26 || [4, 7, 10, 13, 16, 19].map(|i| b[i]) != [b'-', b'-', b' ', b':', b':', b'.'] {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0_i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = (number(0, 4)?, u32::try_from(number(5, 7)?).ok()?, u32::try_from(number(8, 10)?).ok()?);
    let (hour, minute, second, fraction) = (number(11, 13)?, number(14, 16)?, number(17, 19)?, number(20, 26)?);
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(secs * 1_000_000 + fraction)
}

/// Parses a SQLite date-time text: with or without fraction, `T` or space separator.
pub(crate) fn parse_sqlite_text(text: &str) -> Result<i64> {
    if let Some(micros) = parse_canonical(text) {
        return Ok(micros);
    }
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
    agentstate::store::apply_changes(&mut state, delta, deleted);
    (state, write)
}

/// A state column's text with `delta` merged in and `deleted` removed; unchanged (not
/// re-encoded) when there is nothing to do.
pub(crate) fn merged_text(text: String, delta: &Map<String, Value>, deleted: &[String]) -> Result<String> {
    if delta.is_empty() && deleted.is_empty() {
        return Ok(text);
    }
    let mut state = parse_state(&text)?;
    agentstate::store::apply_changes(&mut state, delta, deleted);
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
/// cast to text); a NULL column is an event with no other fields. The text becomes the event in
/// one pass, with no JSON tree in between, and the timestamp column is read only when the text
/// has no timestamp of its own.
pub(crate) fn decode_event_text(
    data: Option<&str>,
    id: String,
    invocation_id: String,
    column_micros: impl FnOnce() -> Result<i64>,
) -> Result<Event> {
    let Some(text) = data else { return with_columns(Event::default(), id, invocation_id, false, column_micros) };
    let (event, has_timestamp) =
        Event::from_stored_json(text).map_err(|e| corrupt(format!("event {id} has unreadable event_data: {e}")))?;
    with_columns(event, id, invocation_id, has_timestamp, column_micros)
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

    /// The hand-written form and parse agree with chrono's everywhere, impossible dates included.
    #[test]
    fn canonical_text_agrees_with_chrono() {
        let chrono_text = |micros: i64| naive(micros).unwrap().format(SQLITE_DATETIME).to_string();
        let chrono_parse = |text: &str| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").ok().map(micros);
        let mut samples = vec![0, -1, 1, 951_782_400_000_000, 4_107_542_399_999_999, -62_167_219_200_000_000];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Years −300 to 10300: the hand-written range, its edges and beyond.
            samples.push((x % 331_000_000_000_000_000) as i64 - 71_000_000_000_000_000);
        }
        for micros in samples {
            let text = sqlite_text(micros).unwrap();
            assert_eq!(text, chrono_text(micros), "{micros}");
            assert_eq!(parse_sqlite_text(&text).ok(), chrono_parse(&text), "{text}");
        }
        for text in [
            "2025-02-29 00:00:00.000000",
            "2024-02-29 24:00:00.000000",
            "2024-13-01 00:00:00.000000",
            "2024-00-01 00:00:00.000000",
            "2024-01-00 00:00:00.000000",
            "2024-04-31 00:00:00.000000",
            "2024-01-01 00:60:00.000000",
            "2024-01-01 00:00:60.000000",
            "2024-01-01T00:00:00.000000",
            "+024-01-01 00:00:00.000000",
            "2024-01-01 00:00:00.00000a",
        ] {
            // What the fast path refuses, chrono decides (a leap second, the `T` form).
            assert_eq!(parse_sqlite_text(text).ok(), chrono_parse(&text.replacen('T', " ", 1)), "{text}");
            if let Some(micros) = parse_canonical(text) {
                assert_eq!(Some(micros), chrono_parse(text), "{text}");
            }
        }
    }
}
