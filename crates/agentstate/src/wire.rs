//! Events and sessions in the JSON of ADK's HTTP APIs (`adk api_server`, the managed service's
//! `rawEvent`): camelCase field names, absent fields omitted. Storage keeps the reference's
//! snake_case; this module converts between the two.
//!
//! Only *model* field names are renamed. Free-form maps (state, deltas, metadata, tool arguments
//! and results) are user data and keep their keys; maps from ids to models keep their keys and
//! have their values converted.

use crate::{Event, Session, Value};
use serde_json::json;

/// Fields (snake_case) whose values are user data, never renamed inside.
const FREE_FORM: &[&str] =
    &["state", "state_delta", "artifact_delta", "custom_metadata", "args", "response", "agent_state", "output"];
/// Fields whose values map user keys to models.
const MAP_OF_MODELS: &[&str] = &["requested_auth_configs", "requested_tool_confirmations"];
/// `custom_metadata` keys only ADK may write; stored, never shown.
const INTERNAL_METADATA_PREFIX: &str = "__adk_internal_";

/// `snake_case` → `camelCase`, as pydantic's `to_camel`.
pub fn to_camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for (i, c) in key.chars().enumerate() {
        if c == '_' && i > 0 {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
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

fn convert(value: Value, rename: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let snake = to_snake(&k);
                    let v = if FREE_FORM.contains(&snake.as_str()) {
                        v
                    } else if MAP_OF_MODELS.contains(&snake.as_str()) {
                        match v {
                            Value::Object(m) => {
                                Value::Object(m.into_iter().map(|(k, v)| (k, convert(v, rename))).collect())
                            }
                            other => other,
                        }
                    } else {
                        convert(v, rename)
                    };
                    (rename(&k), v)
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
    convert(serde_json::to_value(event).unwrap_or(Value::Null), to_camel)
}

/// An event as the API shows it: camelCase, internal metadata removed, the reference's default
/// fields present.
pub fn event_to_wire(event: &Event) -> Value {
    let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        if let Some(Value::Object(meta)) = map.get_mut("custom_metadata") {
            meta.retain(|k, _| !k.starts_with(INTERNAL_METADATA_PREFIX));
            if meta.is_empty() {
                map.remove("custom_metadata");
            }
        }
        if let Some(Value::Object(actions)) = map.get_mut("actions") {
            for default in ["requested_auth_configs", "requested_tool_confirmations"] {
                actions.entry(default).or_insert_with(|| json!({}));
            }
        }
        map.entry("node_info").or_insert_with(|| json!({"path": ""}));
    }
    convert(value, to_camel)
}

/// An event from API JSON (camelCase or snake_case), stored in snake_case.
pub fn event_from_wire(value: Value) -> Result<Event, serde_json::Error> {
    serde_json::from_value(convert(value, to_snake))
}

/// A session as the API shows it.
pub fn session_to_wire(session: &Session) -> Value {
    json!({
        "id": session.id(),
        "appName": session.app_name(),
        "userId": session.user_id(),
        "state": Value::Object(session.state().all().clone()),
        "events": session.events().iter().map(event_to_wire).collect::<Vec<_>>(),
        "lastUpdateTime": session.last_update_time(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_conversion() {
        assert_eq!(to_camel("long_running_tool_ids"), "longRunningToolIds");
        assert_eq!(to_camel("id"), "id");
        assert_eq!(to_snake("mimeType"), "mime_type");
        assert_eq!(to_snake(&to_camel("thought_signature")), "thought_signature");
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
