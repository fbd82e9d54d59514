//! Resource names and the JSON of sessions, events and operations, as the Agent Engine Sessions
//! API (`v1beta1`) writes them.

use std::collections::HashMap;

use agentstate::{Event, Map, Session, Value};
use serde_json::json;

use super::error::GoogleError;
use crate::limits::check_path_safe;
use agentstate::wire;

const SESSION_TYPE: &str = "type.googleapis.com/google.cloud.aiplatform.v1beta1.Session";
const EMPTY_TYPE: &str = "type.googleapis.com/google.protobuf.Empty";

/// The engine a request names, and the prefix of the names it is answered with: the form it
/// used (`projects/P/locations/L/reasoningEngines/E` or `reasoningEngines/E`), so that clients
/// request back what they were given.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    prefix: String,
    location: Option<String>,
    /// The engine id: the agentstate app.
    pub(crate) app: String,
}

impl Engine {
    /// From a route's path parameters (`project`, `location`, `engine`).
    pub(crate) fn from_params(params: &HashMap<String, String>) -> Result<Self, GoogleError> {
        let engine = params.get("engine").cloned().unwrap_or_default();
        agentstate::validate_id("engine", &engine)?;
        check_path_safe("engine", &engine)?;
        let (prefix, location) = match (params.get("project"), params.get("location")) {
            (Some(project), Some(location)) => (
                format!("projects/{project}/locations/{location}/reasoningEngines/{engine}"),
                Some(format!("projects/{project}/locations/{location}")),
            ),
            _ => (format!("reasoningEngines/{engine}"), None),
        };
        Ok(Self { prefix, location, app: engine })
    }

    /// `…/sessions/{id}`.
    pub(crate) fn session_name(&self, id: &str) -> String {
        format!("{}/sessions/{id}", self.prefix)
    }

    /// A done long-running operation that created (or concerns) a session.
    pub(crate) fn session_operation(&self, session: &Session) -> Value {
        let mut response = self.session(session);
        response["@type"] = json!(SESSION_TYPE);
        json!({
            "name": format!("{}/operations/{}", self.session_name(session.id()), operation_id()),
            "done": true,
            "response": response,
        })
    }

    /// A done long-running operation with nothing to answer (a delete).
    pub(crate) fn empty_operation(&self) -> Value {
        let parent = self.location.as_deref().unwrap_or(&self.prefix);
        json!({
            "name": format!("{parent}/operations/{}", operation_id()),
            "done": true,
            "response": {"@type": EMPTY_TYPE},
        })
    }

    /// A session as the API shows it: merged state, no events.
    pub(crate) fn session(&self, session: &Session) -> Value {
        let mut out = Map::new();
        out.insert("name".into(), json!(self.session_name(session.id())));
        out.insert("userId".into(), json!(session.user_id()));
        out.insert("sessionState".into(), Value::Object(session.state().all().clone()));
        out.insert("createTime".into(), json!(rfc3339(session.create_time_micros())));
        out.insert("updateTime".into(), json!(rfc3339(session.last_update_micros())));
        let attributes = session.attributes();
        if let Some(expire) = attributes.expire_time_micros {
            out.insert("expireTime".into(), json!(rfc3339(expire)));
        }
        if let Some(name) = &attributes.display_name {
            out.insert("displayName".into(), json!(name));
        }
        if !attributes.labels.is_empty() {
            out.insert("labels".into(), json!(attributes.labels));
        }
        Value::Object(out)
    }

    /// An event as agentstate's client reads it (the `agentstateEvents` extension): its name,
    /// time and the whole ADK event, without the typed fields that repeat it.
    pub(crate) fn raw_event(&self, session_id: &str, event: &Event) -> Value {
        json!({
            "name": format!("{}/events/{}", self.session_name(session_id), event.id),
            "timestamp": rfc3339(agentstate::store::secs_to_micros(event.timestamp).unwrap_or(0)),
            "rawEvent": wire::event_to_camel(event),
        })
    }

    /// An event as the API lists it: the typed fields (camelCase) and the whole ADK event as
    /// `rawEvent`.
    pub(crate) fn event(&self, session_id: &str, event: &Event) -> Value {
        let raw = wire::event_to_camel(event);
        let mut out = Map::new();
        out.insert("name".into(), json!(format!("{}/events/{}", self.session_name(session_id), event.id)));
        out.insert("author".into(), json!(event.author));
        out.insert("invocationId".into(), json!(event.invocation_id));
        out.insert("timestamp".into(), json!(rfc3339(agentstate::store::secs_to_micros(event.timestamp).unwrap_or(0))));
        if let Some(content) = raw.get("content") {
            out.insert("content".into(), content.clone());
        }
        let actions = &event.actions;
        let mut typed = Map::new();
        typed.insert("stateDelta".into(), Value::Object(actions.state_delta.clone()));
        typed.insert("artifactDelta".into(), Value::Object(actions.artifact_delta.clone()));
        if let Some(target) = &actions.transfer_to_agent {
            typed.insert("transferAgent".into(), json!(target));
        }
        if let Some(escalate) = actions.escalate {
            typed.insert("escalate".into(), json!(escalate));
        }
        if let Some(skip) = actions.skip_summarization {
            typed.insert("skipSummarization".into(), json!(skip));
        }
        if let Some(auth) = raw.get("actions").and_then(|a| a.get("requestedAuthConfigs")) {
            typed.insert("requestedAuthConfigs".into(), auth.clone());
        }
        out.insert("actions".into(), Value::Object(typed));
        if let Some(code) = &event.error_code {
            out.insert("errorCode".into(), json!(code));
        }
        if let Some(message) = &event.error_message {
            out.insert("errorMessage".into(), json!(message));
        }
        let mut metadata = Map::new();
        for (field, name) in [
            ("partial", "partial"),
            ("turnComplete", "turnComplete"),
            ("interrupted", "interrupted"),
            ("branch", "branch"),
            ("customMetadata", "customMetadata"),
            ("longRunningToolIds", "longRunningToolIds"),
            ("groundingMetadata", "groundingMetadata"),
        ] {
            if let Some(value) = raw.get(field) {
                metadata.insert(name.into(), value.clone());
            }
        }
        out.insert("eventMetadata".into(), Value::Object(metadata));
        out.insert("rawEvent".into(), raw);
        Value::Object(out)
    }
}

/// A fresh operation id: the real service's are decimal numbers.
fn operation_id() -> u64 {
    let random = uuid::Uuid::new_v4().as_u128();
    u64::try_from(random % 9_000_000_000_000_000_000).unwrap_or(0) + 1_000_000_000_000_000_000
}

/// A fresh session id, as the real service makes them: 19 decimal digits.
pub(crate) fn new_session_id() -> String {
    operation_id().to_string()
}

/// Epoch microseconds as RFC 3339, UTC, to the microsecond.
pub(crate) fn rfc3339(micros: i64) -> String {
    crate::expiry::rfc3339(micros)
}

/// An RFC 3339 time (`Z` or an offset; any fraction, cut to the microsecond) as epoch
/// microseconds.
pub(crate) fn parse_rfc3339(text: &str, field: &str) -> Result<i64, GoogleError> {
    crate::expiry::parse_rfc3339(text, field).map_err(GoogleError::invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_to_the_microsecond() {
        assert_eq!(rfc3339(1_795_318_375_281_155), "2026-11-22T03:32:55.281155Z");
        assert_eq!(parse_rfc3339("2026-11-22T03:32:55.281155Z", "t").unwrap(), 1_795_318_375_281_155);
        assert_eq!(parse_rfc3339("2026-11-22T04:32:55.281155+01:00", "t").unwrap(), 1_795_318_375_281_155);
        assert_eq!(parse_rfc3339("2026-11-22T03:32:55.281155999Z", "t").unwrap(), 1_795_318_375_281_155);
        assert_eq!(parse_rfc3339("2026-11-22T03:32:55Z", "t").unwrap(), 1_795_318_375_000_000);
        assert!(parse_rfc3339("yesterday", "t").is_err());
    }

    #[test]
    fn generated_ids_have_nineteen_digits() {
        for _ in 0..100 {
            let id = new_session_id();
            assert_eq!(id.len(), 19, "{id}");
            assert!(id.bytes().all(|b| b.is_ascii_digit()));
        }
    }
}
