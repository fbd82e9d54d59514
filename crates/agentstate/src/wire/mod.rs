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
mod tests;
