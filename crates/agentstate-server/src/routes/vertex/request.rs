//! What clients send to the managed-service routes: session bodies, event bodies and filters.
//! Field names are accepted in camelCase and in snake_case at every level, as a protobuf JSON
//! parser does (the Python client sends nested messages in snake_case, others in camelCase).

use std::time::Duration;

use agentstate::store::AttributesUpdate;
use agentstate::{Event, Map, SessionAttributes, Value};

use super::error::GoogleError;
use super::resource::{parse_rfc3339, parse_time};
use agentstate::Timestamp;
use agentstate::wire::{self, engine};

/// `field` of `object` under its camelCase or snake_case name.
pub(super) fn take(object: &mut Map<String, Value>, camel: &str) -> Option<Value> {
    let snake = wire::to_snake(camel);
    object.remove(camel).or_else(|| object.remove(&snake)).filter(|v| !v.is_null())
}

pub(super) fn string(value: Value, field: &str) -> Result<String, GoogleError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(GoogleError::invalid(format!("{field} must be a string, not {other}"))),
    }
}

pub(super) fn object(value: Value, field: &str) -> Result<Map<String, Value>, GoogleError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(GoogleError::invalid(format!("{field} must be an object, not {other}"))),
    }
}

/// A request body as a JSON object.
pub(crate) fn body(bytes: &[u8]) -> Result<Map<String, Value>, GoogleError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(GoogleError::invalid(format!("the body must be a JSON object, not {other}"))),
        Err(e) => Err(GoogleError::invalid(format!("the body is not JSON: {e}"))),
    }
}

/// A session to create.
#[derive(Debug)]
pub(crate) struct NewSession {
    pub(crate) user_id: String,
    pub(crate) state: Map<String, Value>,
    pub(crate) attributes: SessionAttributes,
    /// The time to live, counted by the service's clock at creation.
    pub(crate) ttl: Option<Duration>,
}

/// The body of `POST …/sessions`. Unknown fields are refused, as the real service refuses them.
pub(crate) fn new_session(mut body: Map<String, Value>) -> Result<NewSession, GoogleError> {
    let user_id = take(&mut body, "userId").map(|v| string(v, "userId")).transpose()?;
    let user_id = user_id.filter(|u| !u.is_empty()).ok_or_else(|| GoogleError::invalid("userId is required"))?;
    let state = take(&mut body, "sessionState").map(|v| object(v, "sessionState")).transpose()?.unwrap_or_default();
    let mut attributes = SessionAttributes {
        display_name: take(&mut body, "displayName").map(|v| string(v, "displayName")).transpose()?,
        ..SessionAttributes::default()
    };
    if let Some(labels) = take(&mut body, "labels") {
        for (key, value) in object(labels, "labels")? {
            attributes.labels.insert(key, string(value, "a label value")?);
        }
    }
    let ttl = take(&mut body, "ttl").map(|v| string(v, "ttl")).transpose()?;
    let expire = take(&mut body, "expireTime").map(|v| string(v, "expireTime")).transpose()?;
    let ttl = match (ttl, expire) {
        (Some(_), Some(_)) => return Err(GoogleError::invalid("give ttl or expireTime, not both")),
        (Some(ttl), None) => Some(duration(&ttl, "ttl")?),
        (None, Some(time)) => {
            attributes.expire_time_micros = Some(parse_rfc3339(&time, "expireTime")?);
            None
        }
        (None, None) => None,
    };
    body.remove("name");
    if let Some(unknown) = body.keys().next() {
        return Err(GoogleError::invalid(format!("Unknown name \"{unknown}\" at 'session': Cannot find field.")));
    }
    Ok(NewSession { user_id, state, attributes, ttl })
}

/// What `PATCH …/sessions/{id}` changes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SessionPatch {
    pub(crate) attributes: AttributesUpdate,
    pub(crate) expiry: Option<Expiry>,
    /// The session's state as it is to be: the keys it names are set, its session-scoped keys it
    /// does not name are deleted (`user:` and `app:` keys it does not name stay: they are not
    /// only this session's).
    pub(crate) state: Option<Map<String, Value>>,
}

/// A new expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// This long from now.
    In(Duration),
    /// At this time, epoch microseconds.
    At(i64),
    /// Never.
    Never,
}

/// The body of `PATCH …/sessions/{id}` under `update_mask` (comma-separated: `display_name`,
/// `labels`, `expire_time`, `ttl`, `session_state`, in either case); without a mask, the fields
/// the body has. A field in the mask and not in the body is cleared.
pub(crate) fn session_patch(
    mut body: Map<String, Value>,
    update_mask: Option<&str>,
) -> Result<SessionPatch, GoogleError> {
    // The session's name, user and times are not updated: a whole session read back is a body.
    for field in ["name", "userId", "user_id", "createTime", "create_time", "updateTime", "update_time"] {
        body.remove(field);
    }
    let fields: Vec<String> = match update_mask.map(str::trim).filter(|m| !m.is_empty()) {
        Some(mask) => mask.split(',').map(|f| f.trim().to_owned()).collect(),
        None => body.keys().cloned().collect(),
    };
    let mut patch = SessionPatch::default();
    for field in fields {
        match field.as_str() {
            "display_name" | "displayName" => {
                let name = take(&mut body, "displayName").map(|v| string(v, "displayName")).transpose()?;
                patch.attributes.display_name = Some(name.filter(|n| !n.is_empty()));
            }
            "labels" => {
                let mut labels = std::collections::BTreeMap::new();
                if let Some(given) = take(&mut body, "labels") {
                    for (key, value) in object(given, "labels")? {
                        labels.insert(key, string(value, "a label value")?);
                    }
                }
                patch.attributes.labels = Some(labels);
            }
            "expire_time" | "expireTime" => {
                let time = take(&mut body, "expireTime").map(|v| string(v, "expireTime")).transpose()?;
                let expiry = match time {
                    Some(time) => Expiry::At(parse_rfc3339(&time, "expireTime")?),
                    None => Expiry::Never,
                };
                set_expiry(&mut patch, expiry)?;
            }
            "ttl" => {
                let ttl = take(&mut body, "ttl").map(|v| string(v, "ttl")).transpose()?;
                let ttl = ttl.ok_or_else(|| GoogleError::invalid("ttl is in the update mask but not in the body"))?;
                set_expiry(&mut patch, Expiry::In(duration(&ttl, "ttl")?))?;
            }
            "session_state" | "sessionState" => {
                let state = take(&mut body, "sessionState").map(|v| object(v, "sessionState")).transpose()?;
                patch.state = Some(state.unwrap_or_default());
            }
            other => {
                return Err(GoogleError::invalid(format!(
                    "{other:?} cannot be updated; update_mask takes display_name, labels, expire_time, ttl or \
                     session_state"
                )));
            }
        }
    }
    // Fields of a session the mask leaves out are not updated.
    for field in
        ["displayName", "display_name", "labels", "expireTime", "expire_time", "ttl", "sessionState", "session_state"]
    {
        body.remove(field);
    }
    if let Some(unknown) = body.keys().next() {
        return Err(GoogleError::invalid(format!("Unknown name \"{unknown}\" at 'session': Cannot find field.")));
    }
    Ok(patch)
}

fn set_expiry(patch: &mut SessionPatch, expiry: Expiry) -> Result<(), GoogleError> {
    if patch.expiry.replace(expiry).is_some() {
        return Err(GoogleError::invalid("give ttl or expireTime, not both"));
    }
    Ok(())
}

/// A protobuf JSON duration (see [`crate::expiry::parse_duration`]).
pub(super) fn duration(text: &str, field: &str) -> Result<Duration, GoogleError> {
    crate::expiry::parse_duration(text, field).map_err(GoogleError::invalid)
}

/// The body of `POST …:appendEvent` as an event: the ADK event in `rawEvent` when there is one
/// (else the typed fields), with the top-level author, invocation id and timestamp, and the
/// typed `actions.stateDelta` when given (it is what the service merges).
pub(crate) fn appended(mut body: Map<String, Value>) -> Result<Event, GoogleError> {
    let author = take(&mut body, "author").map(|v| string(v, "author")).transpose()?;
    let invocation_id = take(&mut body, "invocationId").map(|v| string(v, "invocationId")).transpose()?;
    let timestamp = take(&mut body, "timestamp");
    let (Some(author), Some(invocation_id), Some(timestamp)) = (author, invocation_id, timestamp) else {
        return Err(GoogleError::invalid("author, invocationId and timestamp are required"));
    };
    let time = event_time(timestamp)?;
    let typed_actions = take(&mut body, "actions").map(|v| object(v, "actions")).transpose()?;
    let mut raw = match take(&mut body, "rawEvent") {
        Some(raw) => object(raw, "rawEvent")?,
        None => {
            if let Some(metadata) = body.get("eventMetadata") {
                object(metadata.clone(), "eventMetadata")?;
            }
            let mut typed = body.clone();
            typed.extend(typed_actions.clone().map(|a| ("actions".to_owned(), Value::Object(a))));
            engine::event_from_typed_fields(&typed)
        }
    };
    let raw_timestamp = raw.remove("timestamp");
    let mut event = wire::event_from_wire(Value::Object(raw))
        .map_err(|e| GoogleError::invalid(format!("the event cannot be read: {e}")))?;
    event.author = author;
    event.invocation_id = invocation_id;
    event.set_time(time);
    event.keep_given_time();
    engine::keep_raw_timestamp(&mut event, raw_timestamp);
    if let Some(mut actions) = typed_actions {
        if let Some(delta) = take(&mut actions, "stateDelta") {
            event.actions.state_delta = object(delta, "actions.stateDelta")?;
        }
        if event.actions.transfer_to_agent.is_none() {
            event.actions.transfer_to_agent =
                take(&mut actions, "transferAgent").map(|v| string(v, "actions.transferAgent")).transpose()?;
        }
    }
    Ok(event)
}

/// An event's `timestamp`: RFC 3339 text, as protobuf's JSON writes a `Timestamp`, or the
/// message's own fields, `{"seconds": …, "nanos": …}`, as ADK for Java writes it.
fn event_time(value: Value) -> Result<Timestamp, GoogleError> {
    let fields = match value {
        Value::String(text) => return parse_time(&text, "timestamp"),
        Value::Object(fields) => fields,
        other => {
            return Err(GoogleError::invalid(format!(
                "timestamp must be an RFC 3339 string or {{\"seconds\", \"nanos\"}}, not {other}"
            )));
        }
    };
    let field = |name: &str| -> Result<i64, GoogleError> {
        let parsed = match fields.get(name) {
            None | Some(Value::Null) => Some(0),
            // proto3 JSON writes 64-bit integers as strings.
            Some(Value::String(text)) => text.parse().ok(),
            Some(number) => number.as_i64(),
        };
        parsed.ok_or_else(|| GoogleError::invalid(format!("timestamp.{name} must be an integer")))
    };
    let (seconds, nanos) = (field("seconds")?, field("nanos")?);
    if let Some(unknown) = fields.keys().find(|k| *k != "seconds" && *k != "nanos") {
        return Err(GoogleError::invalid(format!("timestamp has no field {unknown:?}; it takes seconds and nanos")));
    }
    if !(0..1_000_000_000).contains(&nanos) {
        return Err(GoogleError::invalid(format!("timestamp.nanos must be 0 to 999999999, not {nanos}")));
    }
    chrono::DateTime::from_timestamp(seconds, u32::try_from(nanos).unwrap_or_default())
        .and_then(Timestamp::from_date_time)
        .ok_or_else(|| GoogleError::invalid(format!("timestamp.seconds {seconds} is outside the years 0001 to 9999")))
}

/// A lower and an upper bound on event times (both inclusive, to the nanosecond).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TimeRange {
    pub(crate) since: Option<Timestamp>,
    pub(crate) until: Option<Timestamp>,
}

impl TimeRange {
    /// Whether `time` is within the range (its bounds included).
    pub(crate) fn contains(&self, time: Timestamp) -> bool {
        self.since.is_none_or(|since| time >= since) && self.until.is_none_or(|until| time <= until)
    }
}

/// An events filter: `timestamp` compared (`>=`, `>`, `<=`, `<`) with a quoted RFC 3339 time,
/// terms joined by `AND`.
pub(crate) fn event_filter(filter: &str) -> Result<TimeRange, GoogleError> {
    let mut range = TimeRange::default();
    for term in split_and(filter) {
        let (field, op, value) = comparison(term)?;
        if field != "timestamp" {
            return Err(GoogleError::invalid(format!("events can be filtered by timestamp only, not {field:?}")));
        }
        let time = parse_time(&value, "filter")?;
        let (after, before) = (time.plus_nanos(1), time.plus_nanos(-1));
        match op {
            ">=" => range.since = range.since.max(Some(time)),
            ">" => range.since = range.since.max(Some(after)),
            "<=" => range.until = Some(range.until.map_or(time, |u| u.min(time))),
            "<" => range.until = Some(range.until.map_or(before, |u| u.min(before))),
            _ => return Err(GoogleError::invalid(format!("timestamp takes >=, >, <= or <, not {op}"))),
        }
    }
    Ok(range)
}

/// An events `orderBy`: `timestamp` (or none, or `timestamp asc`) oldest first, `timestamp desc`
/// newest first; whether newest first.
pub(crate) fn event_order(order_by: Option<&str>) -> Result<bool, GoogleError> {
    newest_first(order_by, "events", &["timestamp"])
}

/// Whether `order_by` (absent or empty: the default) orders `what` by its one field (any of
/// `names`) newest first, `desc`, rather than oldest first (`asc` or nothing).
fn newest_first(order_by: Option<&str>, what: &str, names: &[&str]) -> Result<bool, GoogleError> {
    let text = order_by.unwrap_or_default();
    if text.is_empty() {
        return Ok(false);
    }
    match text.split_whitespace().collect::<Vec<_>>().as_slice() {
        [field] if names.contains(field) => Ok(false),
        [field, "asc"] if names.contains(field) => Ok(false),
        [field, "desc"] if names.contains(field) => Ok(true),
        _ => Err(GoogleError::invalid(format!(
            "{what} can be ordered by \"{0}\" or \"{0} desc\", not {text:?}",
            names[0]
        ))),
    }
}

/// The terms of `a AND b AND c` (outside quotes).
fn split_and(filter: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    let bytes = filter.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if quoted {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => quoted = false,
                _ => {}
            }
        } else if c == b'"' {
            quoted = true;
        } else if bytes[i..].starts_with(b" AND ") {
            // Compared as bytes: `i` may be inside a multi-byte character; a match starts at an
            // ASCII space, so the slices below are on character boundaries.
            terms.push(filter[start..i].trim());
            i += 5;
            start = i;
            continue;
        }
        i += 1;
    }
    terms.push(filter[start..].trim());
    terms.into_iter().filter(|t| !t.is_empty()).collect()
}

/// `field op "value"` with `\"` and `\\` escapes in the value (an AIP-160 string literal).
fn comparison(term: &str) -> Result<(&str, &str, String), GoogleError> {
    let bad = || GoogleError::invalid(format!("cannot read the filter term {term:?}; write e.g. user_id=\"alice\""));
    let split = term.find(['=', '<', '>', '!']).ok_or_else(bad)?;
    let field = term[..split].trim();
    let rest = &term[split..];
    let op_len = if rest.starts_with(">=") || rest.starts_with("<=") || rest.starts_with("!=") { 2 } else { 1 };
    let (op, value) = rest.split_at(op_len);
    let value = value.trim();
    let inner = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).ok_or_else(bad)?;
    let mut literal = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => literal.push(chars.next().ok_or_else(bad)?),
            '"' => return Err(bad()),
            c => literal.push(c),
        }
    }
    Ok((field, op, literal))
}

#[cfg(test)]
mod tests {
    #[test]
    fn filters_with_any_characters_never_panic() {
        for filter in [
            "\u{7}G\u{f6}\u{bc}\u{c}\u{80}",
            "\u{bb}\u{377db}\u{6a023}",
            "}\u{ff}C~m AND \u{e9}=\"\u{e9}\"",
            "\u{e9}\u{e9} AND x",
        ] {
            let _ = agentstate::filter::parse_session_filter(filter);
            let _ = event_filter(filter);
        }
    }

    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn filters() {
        let user = |text: &str| agentstate::filter::parse_session_filter(text).map(|p| p.user_id);
        assert_eq!(user(r#"user_id="a\"b\\c""#).unwrap().as_deref(), Some(r#"a"b\c"#));
        assert_eq!(user(r#"userId="u AND v""#).unwrap().as_deref(), Some("u AND v"));
        assert_eq!(user("").unwrap(), None);
        assert_eq!(user("user_id=alice").unwrap().as_deref(), Some("alice"), "ADK for Java writes it unquoted");
        let range =
            event_filter(r#"timestamp>="2026-11-22T03:32:55.281155+00:00" AND timestamp<"2026-11-22T03:33:00Z""#)
                .unwrap();
        let nanos = |n: i64| Some(Timestamp::from_nanos(n));
        assert_eq!(
            range,
            TimeRange { since: nanos(1_795_318_375_281_155_000), until: nanos(1_795_318_379_999_999_999) }
        );
        let exact = event_filter(r#"timestamp>"2026-11-22T03:32:55.000000001Z""#).unwrap();
        assert_eq!(exact.since, nanos(1_795_318_375_000_000_002), "to the nanosecond");
        assert!(event_filter(r#"author="x""#).is_err());
        assert!(event_filter("timestamp>=yesterday").is_err());
    }

    #[test]
    fn session_bodies() {
        let new =
            new_session(map(json!({"userId": "u", "sessionState": {"k": 1}, "ttl": "7200s", "labels": {"a": "b"}})))
                .unwrap();
        assert_eq!((new.user_id.as_str(), new.ttl), ("u", Some(Duration::from_secs(7200))));
        assert_eq!(new.attributes.labels["a"], "b");
        let snake = new_session(map(json!({"user_id": "u", "session_state": {"k": 1}, "display_name": "d"}))).unwrap();
        assert_eq!(snake.attributes.display_name.as_deref(), Some("d"));
        for bad in [
            json!({}),
            json!({"userId": "u", "ttl": "1s", "expireTime": "2026-11-22T03:32:55Z"}),
            json!({"userId": "u", "ttl": "-5s"}),
            json!({"userId": "u", "ttl": "soon"}),
            json!({"userId": "u", "colour": "red"}),
            json!({"userId": 5}),
        ] {
            assert!(new_session(map(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn event_bodies_in_either_case() {
        let python = json!({
            "author": "agent", "invocationId": "inv1", "timestamp": "2026-11-22T22:23:15.746858+00:00",
            "content": {"role": "model", "parts": [{"function_call": {"id": "fc1", "name": "tool", "args": {"q_x": 1}}}]},
            "actions": {"state_delta": {"a": 1}, "transfer_agent": "other", "escalate": true},
            "eventMetadata": {"partial": false, "long_running_tool_ids": ["fc1"], "branch": "root.agent"},
            "rawEvent": {"id": "e-1", "author": "agent", "content": {"role": "model", "parts": [{"functionCall": {"id": "fc1", "name": "tool", "args": {"q_x": 1}}}]},
                          "actions": {"stateDelta": {"a": 1}, "transferToAgent": "other", "escalate": true},
                          "longRunningToolIds": ["fc1"], "branch": "root.agent", "timestamp": 1.5}
        });
        let event = appended(map(python)).unwrap();
        assert_eq!(event.id, "e-1");
        assert_eq!(event.actions.state_delta["a"], 1);
        assert_eq!(event.actions.transfer_to_agent.as_deref(), Some("other"));
        assert_eq!(event.long_running_tool_ids, Some(vec!["fc1".to_owned()]));
        assert_eq!(event.content.unwrap().parts()[0].function_call.as_ref().unwrap().args.as_ref().unwrap()["q_x"], 1);
        assert!((event.timestamp - 1_795_386_195.746_858).abs() < 1e-6);
        let typed = json!({
            "author": "agent", "invocationId": "inv1", "timestamp": "2026-11-22T22:23:15Z",
            "content": {"role": "model", "parts": [{"text": "hi"}]},
            "actions": {"stateDelta": {"b": 2}, "transferAgent": "x"},
            "eventMetadata": {"branch": "root", "turnComplete": true}
        });
        let event = appended(map(typed)).unwrap();
        assert_eq!(
            (event.text(), event.branch.as_deref(), event.turn_complete),
            ("hi".into(), Some("root"), Some(true))
        );
        assert_eq!(event.actions.transfer_to_agent.as_deref(), Some("x"));
        assert!(appended(map(json!({"author": "a"}))).is_err());
    }
}
