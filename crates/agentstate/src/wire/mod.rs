//! Events and sessions in the JSON of ADK's HTTP APIs (`adk api_server`, the managed service's
//! `rawEvent`): camelCase field names, absent fields omitted. Storage keeps the reference's
//! snake_case; this module converts between the two.
//!
//! Only *model* field names are renamed. Free-form maps (state, deltas, metadata, tool arguments
//! and results) are user data and keep their keys; maps from ids to models keep their keys and
//! have their values converted.

use std::borrow::Cow;

use crate::store::LoadedSession;
use crate::{Event, Session, Value};
use serde::ser::{Serialize, SerializeMap, Serializer};

mod content;
pub mod engine;
mod stored;
mod stream;

pub use {content::*, stored::write_stored_event, stream::WireEvent};

/// Fields (snake_case) whose values are user data, never renamed inside.
const FREE_FORM: &[&str] =
    &["state", "state_delta", "artifact_delta", "custom_metadata", "args", "response", "agent_state", "output"];
/// Fields whose values map user keys to models.
const MAP_OF_MODELS: &[&str] = &["requested_auth_configs", "requested_tool_confirmations"];
/// `custom_metadata` keys only ADK may write; stored, never shown.
const INTERNAL_METADATA_PREFIX: &str = "__adk_internal_";

/// `key` in snake_case, borrowed when it already is.
fn snake(key: &str) -> Cow<'_, str> {
    if key.bytes().any(|b| b.is_ascii_uppercase()) { Cow::Owned(to_snake(key)) } else { Cow::Borrowed(key) }
}

/// `key` in camelCase ([`to_camel`]), borrowed when nothing changes or it is a field name of
/// ADK's models (written on every event: no allocation for those).
fn camel(key: &str) -> Cow<'_, str> {
    if !key.bytes().skip(1).any(|b| b == b'_') {
        return Cow::Borrowed(key);
    }
    let known = match key {
        "invocation_id" => "invocationId",
        "turn_complete" => "turnComplete",
        "error_code" => "errorCode",
        "error_message" => "errorMessage",
        "long_running_tool_ids" => "longRunningToolIds",
        "deleted_keys" => "deletedKeys",
        "custom_metadata" => "customMetadata",
        "node_info" => "nodeInfo",
        "usage_metadata" => "usageMetadata",
        "grounding_metadata" => "groundingMetadata",
        "finish_reason" => "finishReason",
        "model_version" => "modelVersion",
        "skip_summarization" => "skipSummarization",
        "state_delta" => "stateDelta",
        "artifact_delta" => "artifactDelta",
        "transfer_to_agent" => "transferToAgent",
        "requested_auth_configs" => "requestedAuthConfigs",
        "requested_tool_confirmations" => "requestedToolConfirmations",
        "rewind_before_invocation_id" => "rewindBeforeInvocationId",
        "end_of_agent" => "endOfAgent",
        "agent_state" => "agentState",
        "function_call" => "functionCall",
        "function_response" => "functionResponse",
        "inline_data" => "inlineData",
        "file_data" => "fileData",
        "mime_type" => "mimeType",
        "file_uri" => "fileUri",
        "thought_signature" => "thoughtSignature",
        "prompt_token_count" => "promptTokenCount",
        "candidates_token_count" => "candidatesTokenCount",
        "total_token_count" => "totalTokenCount",
        "thoughts_token_count" => "thoughtsTokenCount",
        "run_id" => "runId",
        _ => return Cow::Owned(to_camel(key)),
    };
    Cow::Borrowed(known)
}

/// `snake_case` → `camelCase`, as pydantic's `to_camel` for ADK's field names: an `_` (not the
/// first character) before an ASCII lowercase letter goes, and the letter is capitalised; any
/// other `_` stays. So [`to_snake`] undoes it for every name without capitals: an unknown field
/// such as `state__delta` shows as `state_Delta`, never as the real `stateDelta` (found by
/// fuzzing).
pub fn to_camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut chars = key.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match chars.peek() {
            Some(&(_, next)) if c == '_' && i > 0 && next.is_ascii_lowercase() => {
                out.push(next.to_ascii_uppercase());
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `camelCase` → `snake_case`.
pub fn to_snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `key` is `snake` once converted to snake_case, without converting it.
fn snake_eq(key: &str, snake: &str) -> bool {
    let mut expected = snake.bytes();
    for b in key.bytes() {
        if b.is_ascii_uppercase() {
            if expected.next() != Some(b'_') || expected.next() != Some(b.to_ascii_lowercase()) {
                return false;
            }
        } else if expected.next() != Some(b) {
            return false;
        }
    }
    expected.next().is_none()
}

/// `key` in snake_case, the same `String` back when nothing changes.
fn snake_owned(key: String) -> String {
    if key.bytes().any(|b| b.is_ascii_uppercase()) { to_snake(&key) } else { key }
}

/// A JSON tree with its model field names renamed by `rename`: free-form maps keep their keys,
/// maps of models keep theirs and have their values converted. The stored form of API input;
/// output goes through the streaming writer (`stream`) instead.
fn convert(value: Value, rename: fn(String) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if FREE_FORM.iter().any(|f| snake_eq(&k, f)) {
                        v
                    } else if MAP_OF_MODELS.iter().any(|f| snake_eq(&k, f)) {
                        match v {
                            Value::Object(m) => {
                                Value::Object(m.into_iter().map(|(k, v)| (k, convert(v, rename))).collect())
                            }
                            other => other,
                        }
                    } else {
                        convert(v, rename)
                    };
                    (rename(k), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| convert(v, rename)).collect()),
        other => other,
    }
}

/// An event in camelCase exactly as stored: nothing added, nothing removed. The managed-service
/// surface keeps events this way (`rawEvent`), so they read back as they were appended.
pub fn event_to_camel(event: &Event) -> Value {
    serde_json::to_value(stream::CamelEvent(event)).unwrap_or(Value::Null)
}

/// An event as the API shows it: camelCase, internal metadata removed, the reference's default
/// fields present. To write it out, serialize [`WireEvent`] instead: the same JSON, with no tree.
pub fn event_to_wire(event: &Event) -> Value {
    serde_json::to_value(WireEvent(event)).unwrap_or(Value::Null)
}

/// An event from API JSON (camelCase or snake_case), stored in snake_case.
pub fn event_from_wire(value: Value) -> Result<Event, serde_json::Error> {
    serde_json::from_value(convert(value, snake_owned))
}

/// A session as the API shows it. To write it out, serialize [`WireSession`] instead.
pub fn session_to_wire(session: &Session) -> Value {
    serde_json::to_value(WireSession(session)).unwrap_or(Value::Null)
}

/// A session as the API shows it, written without building a JSON tree (its events as
/// [`WireEvent`]s).
#[derive(Debug, Clone, Copy)]
pub struct WireSession<'a>(pub &'a Session);

impl WireSession<'_> {
    /// Writes the session's fields into `map`, for a body that adds its own.
    pub fn write_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        struct Events<'a>(&'a crate::session::Events);
        impl Serialize for Events<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().map(WireEvent))
            }
        }
        let session = self.0;
        map.serialize_entry("id", session.id())?;
        map.serialize_entry("appName", session.app_name())?;
        map.serialize_entry("userId", session.user_id())?;
        map.serialize_entry("state", session.state().all())?;
        map.serialize_entry("events", &Events(session.events()))?;
        map.serialize_entry("lastUpdateTime", &session.last_update_time())
    }
}

/// A session read with [`get_session_stored`](crate::SessionService::get_session_stored) as the
/// API shows it: the JSON of [`WireSession`], written as bytes, its stored events from their text
/// ([`write_stored_event`]).
#[derive(Debug, Clone, Copy)]
pub struct StoredWireSession<'a>(pub &'a LoadedSession);

impl StoredWireSession<'_> {
    /// The JSON object.
    pub fn to_vec(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(self.size_hint());
        out.push(b'{');
        self.write_fields(&mut out)?;
        out.push(b'}');
        Ok(out)
    }

    /// About how many bytes it takes.
    pub fn size_hint(&self) -> usize {
        let events = self.0.stored_events.as_deref().unwrap_or_default();
        256 + events.iter().map(|e| e.data.as_ref().map_or(0, String::len) + 160).sum::<usize>()
    }

    /// Writes the session's fields (no braces) at the end of `out`, for a body that adds its own.
    pub fn write_fields(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let session = &self.0.session;
        field(out, "\"id\":", session.id())?;
        field(out, ",\"appName\":", session.app_name())?;
        field(out, ",\"userId\":", session.user_id())?;
        field(out, ",\"state\":", session.state().all())?;
        out.extend_from_slice(b",\"events\":[");
        match &self.0.stored_events {
            Some(stored) => {
                for (i, event) in stored.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_stored_event(event, out)?;
                }
            }
            None => {
                for (i, event) in session.events().iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, &WireEvent(event))?;
                }
            }
        }
        out.push(b']');
        field(out, ",\"lastUpdateTime\":", &session.last_update_time())
    }
}

/// Writes `name` (a member's name, quoted, with its `:`, and `,` before it but for the first)
/// and `value` as JSON at the end of `out`.
fn field<T: Serialize + ?Sized>(out: &mut Vec<u8>, name: &str, value: &T) -> Result<(), serde_json::Error> {
    out.extend_from_slice(name.as_bytes());
    serde_json::to_writer(out, value)
}

impl Serialize for WireSession<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(6))?;
        self.write_fields(&mut map)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoredEvent;
    use serde_json::json;

    /// `key` in camelCase, the same `String` back when nothing changes (the oracle's renaming).
    fn camel_owned(key: String) -> String {
        if key.bytes().skip(1).any(|b| b == b'_') { to_camel(&key) } else { key }
    }

    /// The tree conversion the streaming writer replaced: the oracle it is checked against.
    fn event_to_wire_tree(event: &Event) -> Value {
        let mut value = serde_json::to_value(event).unwrap();
        if let Value::Object(map) = &mut value {
            if let Some(Value::Object(meta)) = map.get_mut("custom_metadata") {
                meta.retain(|k, _| !k.starts_with(INTERNAL_METADATA_PREFIX));
                if meta.is_empty() {
                    map.shift_remove("custom_metadata");
                }
            }
            if let Some(Value::Object(actions)) = map.get_mut("actions") {
                for default in ["requested_auth_configs", "requested_tool_confirmations"] {
                    actions.entry(default).or_insert_with(|| json!({}));
                }
            }
            map.entry("node_info").or_insert_with(|| json!({"path": ""}));
        }
        convert(value, camel_owned)
    }

    /// Events with every kind of field: models, free-form maps (whose keys stay), maps of
    /// models, unknown fields, internal metadata alone and mixed.
    fn varied_events() -> Vec<Event> {
        let raw = [
            json!({"invocation_id": "i", "author": "a", "id": "e1", "timestamp": 1.5}),
            json!({"content": {"role": "model", "parts": [
                        {"function_call": {"id": "c1", "name": "f", "args": {"city_name": "Paris", "nested_key": {"inner_key": 1}}}},
                        {"function_response": {"name": "f", "response": {"result_value": [1, {"deep_key": 2}]}}},
                        {"inline_data": {"mime_type": "image/png", "data": "AAE="}, "thought_signature": "x", "extra_part_field": {"snake_case": true}},
                        {"text": "hi", "thought": true}]},
                   "invocation_id": "inv", "author": "a", "turn_complete": true, "id": "e2", "timestamp": 2.0,
                   "long_running_tool_ids": ["t1"], "branch": "a.b",
                   "actions": {"state_delta": {"user_name": 1, "app:some_key": {"x_y": 2}}, "artifact_delta": {"file_name": 1},
                               "requested_auth_configs": {"call_1": {"auth_scheme": "x", "raw_auth": {"client_id": 1}}},
                               "requested_tool_confirmations": [1, {"a_b": 2}],
                               "transfer_to_agent": "b", "escalate": false, "skip_summarization": true, "agent_state": {"k_v": 1},
                               "end_of_agent": true, "rewind_before_invocation_id": "x"},
                   "custom_metadata": {"__adk_internal_x": 1, "user_meta": {"a_b": 1}},
                   "grounding_metadata": {"web_search_queries": ["q"], "grounding_chunks": [{"web": {"uri": "u", "title_text": "t"}}]},
                   "usage_metadata": {"prompt_token_count": 3}, "node_info": {"path": "a/b", "run_id": "r"},
                   "deleted_keys": ["gone_key"], "output": {"free_form": {"x_y": 1}}}),
            json!({"author": "a", "custom_metadata": {"__adk_internal_only": true}, "id": "e3", "timestamp": 3.0,
                   "error_code": "E", "error_message": "m", "partial": false, "interrupted": true}),
            json!({"author": "a", "id": "e4", "timestamp": 4.0, "actions": {"state_delta": {}},
                   "x": null, "_leading": 1, "trailing_": [{"in_array_key": {"deeper_key": 1}}]}),
        ];
        raw.into_iter().map(|v| serde_json::from_value(v).unwrap()).collect()
    }

    #[test]
    fn the_streaming_writer_writes_what_the_tree_conversion_did() {
        for event in varied_events() {
            assert_eq!(event_to_wire(&event), event_to_wire_tree(&event), "{event:?}");
            let text = serde_json::to_string(&WireEvent(&event)).unwrap();
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), event_to_wire_tree(&event));
            // As stored: renamed, nothing added or dropped.
            assert_eq!(event_to_camel(&event), convert(serde_json::to_value(&event).unwrap(), camel_owned));
        }
    }

    /// What a store's typed read gives for a row: the text decoded, the row's ids winning, the
    /// row's time when the text has none. The oracle of the stored-text writer.
    fn decoded(stored: &StoredEvent) -> Event {
        let (mut event, own_time) = match &stored.data {
            Some(text) => Event::from_stored_json(text).unwrap(),
            None => (Event::default(), false),
        };
        event.id = stored.id.clone();
        event.invocation_id = stored.invocation_id.clone();
        if !own_time {
            event.timestamp = crate::time::micros_to_secs(stored.timestamp_micros);
        }
        event
    }

    fn row(data: Option<String>) -> StoredEvent {
        StoredEvent {
            id: "row-id".into(),
            invocation_id: "row-inv".into(),
            timestamp_micros: 1_700_000_000_123_456,
            data,
        }
    }

    #[test]
    fn stored_text_is_written_as_the_decoded_event_would_be() {
        let mut texts: Vec<String> = varied_events().iter().map(|e| serde_json::to_string(e).unwrap()).collect();
        texts.extend(
            [
                // As ADK for Python stores it.
                json!({"content": {"parts": [{"text": "hello"}], "role": "user"}, "invocation_id": "inv1", "author": "user",
                       "actions": {"state_delta": {"k": 2, "none": null}, "artifact_delta": {}, "requested_auth_configs": {},
                                   "requested_tool_confirmations": {}},
                       "node_info": {"path": ""}, "id": "57616c03", "timestamp": 1795318375.2811546}),
                // Fields an event always has, missing; no time of its own; an integer time.
                json!({}),
                json!({"content": {"role": "model"}}),
                json!({"author": "a", "actions": {"escalate": true}, "timestamp": 1795318375}),
                // camelCase as stored by another writer; escapes in keys and values.
                json!({"invocationId": "text-inv", "turnComplete": true, "actions": {"stateDelta": {"k\"q": "\u{e9}\n"}},
                       "longRunningToolIds": ["t"], "custom_metadata": {"__adk_internal_x": 1}}),
            ]
            .iter()
            .map(Value::to_string),
        );
        texts.push(
            r#"{"author":"caf\u00e9","actions":{"state_delta":{"x":1.0,"y":1e300,"z":-0.0}},"id":"text-id"}"#.into(),
        );
        // Found by fuzzing: empty lists of deleted keys, which the model leaves out.
        texts.push("{\"author\":\"a\",\"deleted_keys\":[\r\r]}".into());
        texts.push("{\"author\":\"a\",\"deletedKeys\":[ ]}".into());
        // Escaped names in models: renamed, and escaped again where they must be.
        texts.push(
            r#"{"we\"ird_key":1,"caf\u00e9_x":{"inner_key":"v","tab\tkey":[{"deep_key":true}]},"author":"a"}"#.into(),
        );
        // Times as floats are copied: a trailing zero, 17 digits, more digits than a double holds.
        for time in ["1795318375.50", "1795318375.2811546", "1795318375.281154612345"] {
            texts.push(format!(r#"{{"author":"a","timestamp":{time}}}"#));
        }
        let mut rows: Vec<StoredEvent> = texts.into_iter().map(|t| row(Some(t))).collect();
        rows.push(row(None));
        // Ids in the row's columns that need escaping, and ids longer than eight bytes that do not.
        for (id, invocation_id) in [("q\"uote\\back\u{1}", "caf\u{e9}-\u{7f}-\t"), ("a-much-longer-id-0001", "inv-é")]
        {
            let mut stored = row(Some(r#"{"author":"a"}"#.into()));
            (stored.id, stored.invocation_id) = (id.into(), invocation_id.into());
            rows.push(stored);
        }
        for stored in rows {
            let mut out = Vec::new();
            write_stored_event(&stored, &mut out).unwrap();
            let written: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(written, event_to_wire(&decoded(&stored)), "{:?}", stored.data);
        }
    }

    /// Mutated texts: whatever is not JSON is refused, as serde_json refuses it; a JSON object only
    /// when no event can be read from it either; whatever is written is JSON; and where the text
    /// decodes as an event, the writing is its wire form.
    #[test]
    fn stored_text_is_checked_as_json_is() {
        let mut seeds: Vec<String> = varied_events().iter().map(|e| serde_json::to_string(e).unwrap()).collect();
        // Found by fuzzing: a JSON object whose timestamp is not a number.
        seeds.push(r#"{"author":"a","timestamp":{"x":1},"actions":{"stateDelta":{"x":null}}}"#.into());
        let alphabet = b"{}[]\":,.-+eE0123456789 tfnrua\\\x7f\x01x_";
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let (mut refused, mut as_events) = (0, 0);
        for round in 0..30_000 {
            let mut bytes = seeds[round % seeds.len()].clone().into_bytes();
            for _ in 0..1 + next(3) {
                let at = next(bytes.len() + 1);
                match next(3) {
                    0 if at < bytes.len() => drop(bytes.remove(at)),
                    1 if at < bytes.len() => bytes[at] = alphabet[next(alphabet.len())],
                    _ => bytes.insert(at, alphabet[next(alphabet.len())]),
                }
            }
            let Ok(text) = String::from_utf8(bytes) else { continue };
            let stored = row(Some(text.clone()));
            let mut out = Vec::new();
            let written = write_stored_event(&stored, &mut out);
            match serde_json::from_str::<Value>(&text) {
                Err(e) if e.to_string().contains("out of range") => continue,
                Err(_) => {
                    assert!(written.is_err(), "not JSON, yet written: {text}");
                    refused += 1;
                }
                // Refused only where no event can be read either (a timestamp not a number).
                Ok(Value::Object(_)) if written.is_err() => {
                    assert!(Event::from_stored_json(&text).is_err(), "an event's text refused: {text}: {written:?}");
                }
                Ok(Value::Object(_)) => {
                    let value: Value =
                        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{text} → invalid JSON: {e}"));
                    if Event::from_stored_json(&text).is_ok() {
                        assert_eq!(value, event_to_wire(&decoded(&stored)), "{text}");
                        as_events += 1;
                    }
                }
                Ok(_) => assert!(written.is_err(), "not an object, yet written: {text}"),
            }
        }
        assert!(refused > 1_000 && as_events > 1_000, "{refused} refused, {as_events} decoded");
    }

    #[test]
    fn unreadable_stored_text_is_an_error_naming_the_event() {
        for text in ["{", "[]", r#"{"timestamp": "noon"}"#, r#"{"a": 1} trailing"#] {
            let err = write_stored_event(&row(Some(text.into())), &mut Vec::new()).unwrap_err();
            assert!(err.to_string().contains("event row-id is unreadable"), "{text}: {err}");
        }
    }

    #[test]
    fn snake_eq_is_comparing_the_snake_case_form() {
        for key in [
            "state_delta",
            "stateDelta",
            "state_Delta",
            "StateDelta",
            "state",
            "State",
            "stateDeltas",
            "",
            "é_x",
            "x_É",
        ] {
            for snake in FREE_FORM.iter().chain(MAP_OF_MODELS) {
                assert_eq!(snake_eq(key, snake), to_snake(key) == *snake, "{key} vs {snake}");
            }
        }
        for key in ["requestedAuth_configs", "requested_authConfigs", "requestedAuthConfigs"] {
            assert!(snake_eq(key, "requested_auth_configs"), "{key}");
        }
        for key in ["a_b", "_a", "aB", "é_b", "abc"] {
            assert_eq!(camel_owned(key.to_owned()), to_camel(key));
            assert_eq!(snake_owned(key.to_owned()), to_snake(key));
        }
    }

    /// An unknown field that camelCases like a known one stays unknown through a round trip.
    #[test]
    fn a_round_trip_keeps_unknown_fields_unknown() {
        let sent = json!({"author": "a", "actions": {"state__delta": {"k": 0}}, "deleted_+eys": ["old"]});
        let event = event_from_wire(sent).unwrap();
        assert!(event.actions.state_delta.is_empty());
        let again = event_from_wire(event_to_wire(&event)).unwrap();
        assert_eq!(again.actions.state_delta, event.actions.state_delta);
        assert_eq!(event_to_wire(&again), event_to_wire(&event));
    }

    #[test]
    fn known_names_are_camelcased_as_to_camel_does() {
        let names = [
            "invocation_id",
            "turn_complete",
            "error_code",
            "error_message",
            "long_running_tool_ids",
            "deleted_keys",
            "custom_metadata",
            "node_info",
            "usage_metadata",
            "grounding_metadata",
            "finish_reason",
            "model_version",
            "skip_summarization",
            "state_delta",
            "artifact_delta",
            "transfer_to_agent",
            "requested_auth_configs",
            "requested_tool_confirmations",
            "rewind_before_invocation_id",
            "end_of_agent",
            "agent_state",
            "function_call",
            "function_response",
            "inline_data",
            "file_data",
            "mime_type",
            "file_uri",
            "thought_signature",
            "prompt_token_count",
            "candidates_token_count",
            "total_token_count",
            "thoughts_token_count",
            "run_id",
            "unknown_field",
            "plain",
            "_x",
            "a__b",
        ];
        for name in names {
            assert_eq!(camel(name), to_camel(name), "{name}");
        }
        assert!(matches!(camel("state_delta"), Cow::Borrowed(_)));
    }

    #[test]
    fn case_conversion() {
        assert_eq!(to_camel("long_running_tool_ids"), "longRunningToolIds");
        assert_eq!(to_camel("id"), "id");
        assert_eq!(to_snake("mimeType"), "mime_type");
        assert_eq!(to_snake(&to_camel("thought_signature")), "thought_signature");
        for key in ["state__delta", "a_1", "a_", "_leading", "a_é", "x__y_z", "__adk_internal_x"] {
            assert_eq!(to_snake(&to_camel(key)), key, "{key} → {}", to_camel(key));
        }
        assert_eq!(to_camel("state__delta"), "state_Delta");
    }

    #[test]
    fn model_fields_are_renamed_and_user_data_is_not() {
        let event: Event = serde_json::from_value(json!({
            "content": {"parts": [{"function_call": {"name": "f", "args": {"city_name": "Paris"}}},
                                  {"inline_data": {"mime_type": "image/png", "data": "AAE="}}], "role": "model"},
            "invocation_id": "inv", "author": "a", "turn_complete": true,
            "actions": {"state_delta": {"user_name": 1}, "requested_auth_configs": {"call_1": {"auth_scheme": "x"}}},
            "custom_metadata": {"some_key": 1, "__adk_internal_restored_event": true},
            "usage_metadata": {"prompt_token_count": 3},
            "id": "e", "timestamp": 1.5
        }))
        .unwrap();
        let wire = event_to_wire(&event);
        assert_eq!(wire["content"]["parts"][0]["functionCall"]["args"], json!({"city_name": "Paris"}));
        assert_eq!(wire["content"]["parts"][1]["inlineData"]["mimeType"], "image/png");
        assert_eq!(wire["actions"]["stateDelta"], json!({"user_name": 1}));
        assert_eq!(wire["actions"]["requestedAuthConfigs"], json!({"call_1": {"authScheme": "x"}}));
        assert_eq!(wire["actions"]["requestedToolConfirmations"], json!({}));
        assert_eq!(wire["customMetadata"], json!({"some_key": 1}));
        assert_eq!(wire["usageMetadata"], json!({"promptTokenCount": 3}));
        assert_eq!(wire["nodeInfo"], json!({"path": ""}));
        assert_eq!((wire["invocationId"].as_str(), wire["turnComplete"].as_bool()), (Some("inv"), Some(true)));
        // And back: storage form is snake_case again, user keys untouched.
        let back = event_from_wire(wire).unwrap();
        assert_eq!(back.extra["usage_metadata"], json!({"prompt_token_count": 3}));
        assert_eq!(back.actions.state_delta["user_name"], 1);
    }
}
