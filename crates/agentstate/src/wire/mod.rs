//! Events and sessions in the JSON of ADK's HTTP APIs (`adk api_server`, the managed service's
//! `rawEvent`): camelCase field names, absent fields omitted. Storage keeps the reference's
//! snake_case; this module converts between the two.
//!
//! Only *model* field names are renamed. Free-form maps (state, deltas, metadata, tool arguments
//! and results) are user data and keep their keys; maps from ids to models keep their keys and
//! have their values converted.

use crate::{Event, Session, Value};
use serde::ser::{Serialize, SerializeMap, Serializer};

mod stream;

pub use stream::WireEvent;

/// Fields (snake_case) whose values are user data, never renamed inside.
const FREE_FORM: &[&str] =
    &["state", "state_delta", "artifact_delta", "custom_metadata", "args", "response", "agent_state", "output"];
/// Fields whose values map user keys to models.
const MAP_OF_MODELS: &[&str] = &["requested_auth_configs", "requested_tool_confirmations"];
/// `custom_metadata` keys only ADK may write; stored, never shown.
const INTERNAL_METADATA_PREFIX: &str = "__adk_internal_";

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
