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

pub use {
    content::*,
    stored::{StoredRow, write_stored_event, write_stored_row},
    stream::WireEvent,
};

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
    match known(key) {
        Some((camel, _)) => Cow::Borrowed(camel),
        None => Cow::Owned(to_camel(key)),
    }
}

/// What the value of a model field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A model (or a list of them, or a scalar).
    Model,
    /// User data ([`FREE_FORM`]).
    FreeForm,
    /// User keys to models ([`MAP_OF_MODELS`]).
    MapOfModels,
}

/// The field names of ADK's models that every event carries or often does, in snake_case: one
/// `match` gives a name's camelCase and its kind, where the general rules ([`to_camel`],
/// [`FREE_FORM`], [`MAP_OF_MODELS`]) take a scan and a dozen comparisons. A test holds each
/// entry to those rules; a name not listed takes them.
macro_rules! known_fields {
    ($($stored:literal => $camel:literal $kind:ident,)*) => {
        /// `stored` (snake_case) as written, and its kind, when it is one of ADK's field names.
        fn known(stored: &str) -> Option<(&'static str, Kind)> {
            match stored {
                $($stored => Some(($camel, Kind::$kind)),)*
                _ => None,
            }
        }

        /// Every name [`known`] knows.
        #[cfg(test)]
        const KNOWN: &[&str] = &[$($stored),*];
    };
}

known_fields! {
    "content" => "content" Model,
    "parts" => "parts" Model,
    "text" => "text" Model,
    "role" => "role" Model,
    "author" => "author" Model,
    "actions" => "actions" Model,
    "id" => "id" Model,
    "timestamp" => "timestamp" Model,
    "partial" => "partial" Model,
    "branch" => "branch" Model,
    "thought" => "thought" Model,
    "name" => "name" Model,
    "path" => "path" Model,
    "interrupted" => "interrupted" Model,
    "escalate" => "escalate" Model,
    "invocation_id" => "invocationId" Model,
    "turn_complete" => "turnComplete" Model,
    "error_code" => "errorCode" Model,
    "error_message" => "errorMessage" Model,
    "long_running_tool_ids" => "longRunningToolIds" Model,
    "deleted_keys" => "deletedKeys" Model,
    "node_info" => "nodeInfo" Model,
    "usage_metadata" => "usageMetadata" Model,
    "grounding_metadata" => "groundingMetadata" Model,
    "finish_reason" => "finishReason" Model,
    "model_version" => "modelVersion" Model,
    "skip_summarization" => "skipSummarization" Model,
    "transfer_to_agent" => "transferToAgent" Model,
    "rewind_before_invocation_id" => "rewindBeforeInvocationId" Model,
    "end_of_agent" => "endOfAgent" Model,
    "function_call" => "functionCall" Model,
    "function_response" => "functionResponse" Model,
    "inline_data" => "inlineData" Model,
    "file_data" => "fileData" Model,
    "mime_type" => "mimeType" Model,
    "file_uri" => "fileUri" Model,
    "thought_signature" => "thoughtSignature" Model,
    "prompt_token_count" => "promptTokenCount" Model,
    "candidates_token_count" => "candidatesTokenCount" Model,
    "total_token_count" => "totalTokenCount" Model,
    "thoughts_token_count" => "thoughtsTokenCount" Model,
    "run_id" => "runId" Model,
    "state" => "state" FreeForm,
    "state_delta" => "stateDelta" FreeForm,
    "artifact_delta" => "artifactDelta" FreeForm,
    "custom_metadata" => "customMetadata" FreeForm,
    "args" => "args" FreeForm,
    "response" => "response" FreeForm,
    "agent_state" => "agentState" FreeForm,
    "output" => "output" FreeForm,
    "requested_auth_configs" => "requestedAuthConfigs" MapOfModels,
    "requested_tool_confirmations" => "requestedToolConfirmations" MapOfModels,
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
        let written = self.0.written_events.as_ref().map_or(0, |w| w.json.len());
        let events = self.0.stored_events.as_deref().unwrap_or_default();
        256 + written + events.iter().map(|e| e.data.as_ref().map_or(0, String::len) + 160).sum::<usize>()
    }

    /// Writes the session's fields (no braces) at the end of `out`, for a body that adds its own.
    pub fn write_fields(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        self.write_head(out)?;
        self.write_events(out)?;
        self.write_tail(out)
    }

    /// Writes the fields before the events' (no brace), up to the opening of their array: a
    /// body sent in pieces (the events as the store wrote them between) is this, the events,
    /// then [`write_tail`](Self::write_tail).
    pub fn write_head(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let session = &self.0.session;
        field(out, "\"id\":", session.id())?;
        field(out, ",\"appName\":", session.app_name())?;
        field(out, ",\"userId\":", session.user_id())?;
        field(out, ",\"state\":", session.state().all())?;
        out.extend_from_slice(b",\"events\":[");
        Ok(())
    }

    /// Writes the fields after the events', from the end of their array (no brace).
    pub fn write_tail(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.push(b']');
        field(out, ",\"lastUpdateTime\":", &self.0.session.last_update_time())
    }

    fn write_events(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let session = &self.0.session;
        match (&self.0.stored_events, &self.0.written_events) {
            (None, Some(written)) => out.extend_from_slice(&written.json),
            (Some(stored), _) => {
                for (i, event) in stored.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_stored_event(event, out)?;
                }
            }
            (None, None) => {
                for (i, event) in session.events().iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, &WireEvent(event))?;
                }
            }
        }
        Ok(())
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
