//! Resource names and the JSON of sessions, events and operations, as the Agent Engine Sessions
//! API writes them in the version asked (`v1` or `v1beta1`).
//!
//! The clients disagree on one name: the operation a create answers. ADK for Go and ADK for
//! Python parse the session-scoped form (`…/reasoningEngines/E/sessions/S/operations/N`, the form
//! v1beta1 answers); ADK-Rust's client (`validate_vertex_operation_name`, adk-session 2.3) accepts
//! only the location-scoped form (`projects/P/locations/L/operations/N`), which v1 answers when
//! the request named a project and location. `GetOperation` answers both forms on both versions.

use std::collections::HashMap;

use agentstate::{Event, Session, Timestamp, Value};
use serde_json::json;

use agentstate::wire::engine;

use super::error::GoogleError;
use crate::limits::check_path_safe;

const EMPTY_TYPE: &str = "type.googleapis.com/google.protobuf.Empty";

/// The engine a request names, and the prefix of the names it is answered with: the form it
/// used (`projects/P/locations/L/reasoningEngines/E` or `reasoningEngines/E`), so that clients
/// request back what they were given.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    /// The API version asked (`v1`, `v1beta1`).
    pub(crate) version: &'static str,
    prefix: String,
    location: Option<String>,
    /// The engine id: the agentstate app.
    pub(crate) app: String,
}

impl Engine {
    /// From a route's path parameters (`project`, `location`, `engine`).
    pub(crate) fn from_params(params: &HashMap<String, String>) -> Result<Self, GoogleError> {
        let asked = params.get("version").map_or("", String::as_str);
        let Some(version) = crate::engine_api::VERSIONS.into_iter().find(|v| *v == asked) else {
            return Err(GoogleError::not_found(format!(
                "no API version {asked:?}; this server answers v1 and v1beta1"
            )));
        };
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
        Ok(Self { version, prefix, location, app: engine })
    }

    /// `…/sessions/{id}`.
    pub(crate) fn session_name(&self, id: &str) -> String {
        format!("{}/sessions/{id}", self.prefix)
    }

    /// The name of a fresh operation that created (or concerns) the session `id`.
    pub(crate) fn session_operation_name(&self, id: &str) -> String {
        let parent = match (&self.location, self.version) {
            (Some(location), "v1") => location.clone(),
            _ => self.session_name(id),
        };
        format!("{parent}/operations/{}", operation_id())
    }

    /// `…/memories/{id}`.
    pub(crate) fn memory_name(&self, id: &str) -> String {
        format!("{}/memories/{id}", self.prefix)
    }

    /// The name of a fresh operation on the memory `id`.
    pub(crate) fn memory_operation_name(&self, id: &str) -> String {
        format!("{}/operations/{}", self.memory_name(id), operation_id())
    }

    /// The name of a fresh operation with nothing to answer (a delete).
    pub(crate) fn empty_operation_name(&self) -> String {
        let parent = self.location.as_deref().unwrap_or(&self.prefix);
        format!("{parent}/operations/{}", operation_id())
    }

    /// A done long-running operation that created (or concerns) a session.
    pub(crate) fn session_operation(&self, session: &Session) -> Value {
        let mut response = self.session(session);
        response["@type"] = json!(format!("type.googleapis.com/google.cloud.aiplatform.{}.Session", self.version));
        json!({
            "name": self.session_operation_name(session.id()),
            "done": true,
            "response": response,
        })
    }

    /// A done long-running operation with nothing to answer (a delete).
    pub(crate) fn empty_operation(&self) -> Value {
        json!({
            "name": self.empty_operation_name(),
            "done": true,
            "response": {"@type": EMPTY_TYPE},
        })
    }

    /// A session as the API shows it: merged state, no events.
    pub(crate) fn session(&self, session: &Session) -> Value {
        engine::session_resource(session, &self.session_name(session.id()))
    }

    /// An event as agentstate's client reads it (the `agentstateEvents` extension): its name,
    /// time and the whole ADK event, without the typed fields that repeat it.
    pub(crate) fn raw_event(&self, session_id: &str, event: &Event) -> Value {
        json!({
            "name": self.event_name(session_id, &event.id),
            "timestamp": event.time().rfc3339(),
            "rawEvent": engine::stored_raw_event(event),
        })
    }

    /// An event as the API lists it: its name, the typed fields (camelCase) and the whole ADK
    /// event as `rawEvent`.
    pub(crate) fn event(&self, session_id: &str, event: &Event) -> Value {
        let name = self.event_name(session_id, &event.id);
        let resource = engine::EventResource { name: Some(&name), event, state_delta: &event.actions.state_delta };
        serde_json::to_value(resource).unwrap_or_default()
    }

    /// A page of `listEvents` (`{"sessionEvents": […], "nextPageToken"}`), written out without
    /// building it as a tree.
    pub(crate) fn events_page(
        &self,
        session_id: &str,
        events: Vec<Event>,
        next_page_token: Option<String>,
    ) -> EventsPage {
        EventsPage { session: self.session_name(session_id), events, next_page_token }
    }

    fn event_name(&self, session_id: &str, event_id: &str) -> String {
        format!("{}/events/{event_id}", self.session_name(session_id))
    }
}

/// A page of a session's events as `listEvents` answers it ([`Engine::events_page`]).
#[derive(Debug)]
pub(crate) struct EventsPage {
    /// The session's resource name.
    pub(crate) session: String,
    pub(crate) events: Vec<Event>,
    pub(crate) next_page_token: Option<String>,
}

impl serde::Serialize for EventsPage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;

        struct Events<'a>(&'a EventsPage);
        impl serde::Serialize for Events<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let page = self.0;
                serializer.collect_seq(page.events.iter().map(|event| {
                    let name = format!("{}/events/{}", page.session, event.id);
                    Resource { name, event }
                }))
            }
        }
        struct Resource<'a> {
            name: String,
            event: &'a Event,
        }
        impl serde::Serialize for Resource<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let event = self.event;
                engine::EventResource { name: Some(&self.name), event, state_delta: &event.actions.state_delta }
                    .serialize(serializer)
            }
        }

        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("sessionEvents", &Events(self))?;
        if let Some(token) = &self.next_page_token {
            map.serialize_entry("nextPageToken", token)?;
        }
        map.end()
    }
}

impl axum::response::IntoResponse for EventsPage {
    /// The page written into one buffer sized for it (axum's `Json` grows its buffer as it goes).
    fn into_response(self) -> axum::response::Response {
        /// About what one event of a conversation takes as a resource.
        const EVENT_SIZE_HINT: usize = 768;
        let mut body = Vec::with_capacity(64 + self.events.len() * EVENT_SIZE_HINT);
        match serde_json::to_writer(&mut body, &self) {
            Ok(()) => ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(e) => {
                let e = crate::error::ApiError::Internal(format!("a page of events cannot be written: {e}"));
                super::GoogleError::from(e).into_response()
            }
        }
    }
}

/// A fresh operation id: the real service's are decimal numbers.
fn operation_id() -> u64 {
    let random = uuid::Uuid::new_v4().as_u128();
    u64::try_from(random % 9_000_000_000_000_000_000).unwrap_or(0) + 1_000_000_000_000_000_000
}

/// A fresh memory id, as the real service makes them: 19 decimal digits.
pub(crate) fn new_memory_id() -> String {
    operation_id().to_string()
}

/// A fresh session id, as the real service makes them: 19 decimal digits.
pub(crate) fn new_session_id() -> String {
    operation_id().to_string()
}

/// An RFC 3339 time (`Z` or an offset; any fraction, cut to the microsecond) as epoch
/// microseconds.
pub(crate) fn parse_rfc3339(text: &str, field: &str) -> Result<i64, GoogleError> {
    engine::parse_rfc3339(text, field).map_err(GoogleError::invalid)
}

/// An RFC 3339 time to the nanosecond (an event's, or a bound on events' times).
pub(crate) fn parse_time(text: &str, field: &str) -> Result<Timestamp, GoogleError> {
    Timestamp::parse_rfc3339(text).map_err(|e| GoogleError::invalid(format!("{field}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_have_nineteen_digits() {
        for _ in 0..100 {
            let id = new_session_id();
            assert_eq!(id.len(), 19, "{id}");
            assert!(id.bytes().all(|b| b.is_ascii_digit()));
        }
    }
}
