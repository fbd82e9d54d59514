//! Between gRPC and the REST surface: messages to and from the API's JSON (their proto3 JSON
//! mapping), resource names to engines and sessions, errors to statuses, metadata to a permit.
//!
//! Numbers: a `google.protobuf.Value` holds a double. A whole number a client writes (`2.0`)
//! is stored as the JSON integer `2`, as REST clients write it; an integer stored beyond 2^53
//! (written over REST, where agentstate keeps it exactly) is read over gRPC as the nearest
//! double, as any `Struct` must carry it, and stays exact over REST.

use std::collections::HashMap;

use agentstate::{Map, Value};
use axum::http::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::{Code, Status};

use super::proto::google::cloud::aiplatform::v1beta1 as api;
use crate::auth::Permit;
use crate::routes::vertex::{Engine, GoogleError};
use crate::state::AppState;

/// 2^53: every integer up to it is a double exactly.
const EXACT: f64 = 9_007_199_254_740_992.0;

impl From<GoogleError> for Status {
    fn from(e: GoogleError) -> Self {
        let code = match e.code() {
            "INVALID_ARGUMENT" => Code::InvalidArgument,
            "NOT_FOUND" => Code::NotFound,
            "ALREADY_EXISTS" => Code::AlreadyExists,
            "FAILED_PRECONDITION" => Code::FailedPrecondition,
            "PERMISSION_DENIED" => Code::PermissionDenied,
            "UNAUTHENTICATED" => Code::Unauthenticated,
            "ABORTED" => Code::Aborted,
            "UNAVAILABLE" => Code::Unavailable,
            "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
            "UNIMPLEMENTED" => Code::Unimplemented,
            "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
            _ => Code::Internal,
        };
        Status::new(code, e.message())
    }
}

/// A request message as the REST body that means the same.
pub(super) fn to_json<T: Serialize>(message: &T, what: &str) -> Result<Map<String, Value>, Status> {
    let mut value = serde_json::to_value(message).map_err(|e| Status::invalid_argument(format!("{what}: {e}")))?;
    whole_numbers_as_integers(&mut value);
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Ok(Map::new()),
    }
}

/// A REST answer written by a serializer rather than held as a tree, as the reply message: the
/// messages built directly are held to it.
#[cfg(test)]
pub(super) fn from_answer<T: DeserializeOwned + Nulls>(answer: &impl Serialize) -> Result<T, Status> {
    let value = serde_json::to_value(answer).map_err(|e| {
        tracing::error!(error = %e, "an answer cannot be written as JSON");
        Status::internal("Internal error")
    })?;
    from_json(value)
}

/// A REST answer as the reply message.
pub(super) fn from_json<T: DeserializeOwned + Nulls>(mut value: Value) -> Result<T, Status> {
    large_integers_as_doubles(&mut value);
    let mut message: T = serde_json::from_value(value).map_err(|e| {
        tracing::error!(error = %e, "an answer does not fit its gRPC message");
        Status::internal("Internal error")
    })?;
    message.nulls();
    Ok(message)
}

/// pbjson reads a JSON `null` in a `Struct` as a `Value` of no kind, which clients read as
/// unset, not as null: the replies' structs are given `NULL_VALUE` where it belongs.
pub(super) trait Nulls {
    /// Every kind-less `Value` in the message's structs made `NULL_VALUE`.
    fn nulls(&mut self);
}

fn struct_nulls(fields: &mut Option<pbjson_types::Struct>) {
    fields.iter_mut().flat_map(|s| s.fields.values_mut()).for_each(value_nulls);
}

fn value_nulls(value: &mut pbjson_types::Value) {
    use pbjson_types::value::Kind;
    match &mut value.kind {
        None => value.kind = Some(Kind::NullValue(0)),
        Some(Kind::StructValue(fields)) => fields.fields.values_mut().for_each(value_nulls),
        Some(Kind::ListValue(list)) => list.values.iter_mut().for_each(value_nulls),
        Some(_) => {}
    }
}

impl Nulls for api::Session {
    fn nulls(&mut self) {
        struct_nulls(&mut self.session_state);
    }
}

impl Nulls for api::Content {
    fn nulls(&mut self) {
        use api::part::Data;
        for part in &mut self.parts {
            match &mut part.data {
                Some(Data::FunctionCall(call)) => struct_nulls(&mut call.args),
                Some(Data::FunctionResponse(response)) => struct_nulls(&mut response.response),
                _ => {}
            }
        }
    }
}

/// An event and a page of them are built directly (`messages`); reading them from the REST
/// answer is what the tests hold those to.
#[cfg(test)]
impl Nulls for api::SessionEvent {
    fn nulls(&mut self) {
        struct_nulls(&mut self.raw_event);
        self.content.iter_mut().for_each(Nulls::nulls);
        if let Some(actions) = &mut self.actions {
            struct_nulls(&mut actions.state_delta);
            struct_nulls(&mut actions.requested_auth_configs);
        }
        if let Some(metadata) = &mut self.event_metadata {
            struct_nulls(&mut metadata.custom_metadata);
        }
    }
}

/// Memory Bank's messages, grounding and transcriptions hold no structs.
macro_rules! no_structs {
    ($($message:ty),*) => {$(
        impl Nulls for $message {
            fn nulls(&mut self) {}
        }
    )*};
}

no_structs!(
    api::Memory,
    api::ListMemoriesResponse,
    api::RetrieveMemoriesResponse,
    api::GenerateMemoriesResponse,
    api::GroundingMetadata,
    api::Transcription
);

impl Nulls for api::ListSessionsResponse {
    fn nulls(&mut self) {
        self.sessions.iter_mut().for_each(Nulls::nulls);
    }
}

#[cfg(test)]
impl Nulls for api::ListEventsResponse {
    fn nulls(&mut self) {
        self.session_events.iter_mut().for_each(Nulls::nulls);
    }
}

fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() <= EXACT) {
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *n = whole.into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

fn large_integers_as_doubles(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if !n.is_f64()
                && let Some(rounded) = n.as_f64().filter(|f| f.abs() >= EXACT).and_then(serde_json::Number::from_f64)
            {
                *n = rounded;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(large_integers_as_doubles),
        Value::Object(fields) => fields.values_mut().for_each(large_integers_as_doubles),
        _ => {}
    }
}

/// A resource name: `projects/P/locations/L/reasoningEngines/E` or `reasoningEngines/E`, then
/// `/sessions/S` or `/memories/M`, and `/operations/N`, as the call expects; or a location's
/// operation (`projects/P/locations/L/operations/N`), which names no engine.
#[derive(Debug)]
pub(super) struct Name {
    pub(super) engine: Option<Engine>,
    pub(super) session: Option<String>,
    pub(super) memory: Option<String>,
    pub(super) operation: Option<String>,
}

impl Name {
    /// Reads `name` (the request's `field`).
    pub(super) fn parse(name: &str, field: &str) -> Result<Self, Status> {
        let malformed = || {
            Status::invalid_argument(format!(
                "{field} {name:?} is not a resource name: expected \
                 projects/{{project}}/locations/{{location}}/reasoningEngines/{{engine}}[/sessions/{{session}} \
                 or /memories/{{memory}}]"
            ))
        };
        let segments: Vec<&str> = name.split('/').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(malformed());
        }
        let mut params = HashMap::from([("version".to_owned(), "v1beta1".to_owned())]);
        let rest = match segments.as_slice() {
            ["projects", project, "locations", location, rest @ ..] => {
                params.insert("project".into(), (*project).into());
                params.insert("location".into(), (*location).into());
                rest
            }
            rest => rest,
        };
        let (engine, rest) = match rest {
            ["reasoningEngines", engine, rest @ ..] => {
                params.insert("engine".into(), (*engine).into());
                (Some(Engine::from_params(&params)?), rest)
            }
            ["operations", _] if params.contains_key("location") => (None, rest),
            _ => return Err(malformed()),
        };
        let (session, memory, rest) = match rest {
            ["sessions", session, rest @ ..] => (Some((*session).to_owned()), None, rest),
            ["memories", memory, rest @ ..] => (None, Some((*memory).to_owned()), rest),
            rest => (None, None, rest),
        };
        let operation = match rest {
            [] => None,
            ["operations", operation] => Some((*operation).to_owned()),
            _ => return Err(malformed()),
        };
        Ok(Self { engine, session, memory, operation })
    }

    /// An engine's name (a list's or a create's parent).
    pub(super) fn engine(name: &str, field: &str) -> Result<Engine, Status> {
        match Self::parse(name, field)? {
            Self { engine: Some(engine), session: None, memory: None, operation: None } => Ok(engine),
            _ => Err(Status::invalid_argument(format!(
                "{field} {name:?} is not an engine: expected projects/{{project}}/locations/{{location}}/reasoningEngines/{{engine}}"
            ))),
        }
    }

    /// A session's name: its engine and id.
    pub(super) fn session(name: &str, field: &str) -> Result<(Engine, String), Status> {
        match Self::parse(name, field)? {
            Self { engine: Some(engine), session: Some(session), memory: None, operation: None } => {
                Ok((engine, session))
            }
            _ => Err(Status::invalid_argument(format!(
                "{field} {name:?} is not a session: expected \
                 projects/{{project}}/locations/{{location}}/reasoningEngines/{{engine}}/sessions/{{session}}"
            ))),
        }
    }

    /// A memory's name: its engine and id.
    pub(super) fn memory(name: &str, field: &str) -> Result<(Engine, String), Status> {
        match Self::parse(name, field)? {
            Self { engine: Some(engine), session: None, memory: Some(memory), operation: None } => Ok((engine, memory)),
            _ => Err(Status::invalid_argument(format!(
                "{field} {name:?} is not a memory: expected \
                 projects/{{project}}/locations/{{location}}/reasoningEngines/{{engine}}/memories/{{memory}}"
            ))),
        }
    }
}

/// The caller's permit, from `authorization: Bearer …` or `x-goog-api-key` metadata.
pub(super) async fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Permit, Status> {
    Ok(state.tokens().authenticate(headers).await.map_err(GoogleError::from)?)
}

/// `PERMISSION_DENIED` unless `permit` covers `engine` (its app); its users are checked once
/// the session is known.
pub(super) fn admit(permit: &Permit, engine: &Engine) -> Result<(), Status> {
    Ok(permit.check_app(&engine.app).map_err(GoogleError::from)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_numbers_become_integers_and_large_integers_doubles() {
        let mut sent = json!({"a": 2.0, "b": 2.5, "c": [-0.0, 1e300], "d": {"e": 9007199254740992.0}});
        whole_numbers_as_integers(&mut sent);
        assert_eq!(sent.to_string(), r#"{"a":2,"b":2.5,"c":[0,1e+300],"d":{"e":9007199254740992}}"#);
        let mut stored = json!({"big": 9007199254740993_u64, "small": 7, "neg": -9007199254740993_i64});
        large_integers_as_doubles(&mut stored);
        assert_eq!(stored["big"].as_f64(), Some(9007199254740992.0));
        assert!(stored["big"].is_f64() && stored["neg"].is_f64() && stored["small"].is_u64());
    }

    #[test]
    fn statuses_are_googles_codes() {
        use crate::error::ApiError;
        let outage = Status::from(GoogleError::from(ApiError::Unavailable("pool timed out: secret-host".into())));
        assert_eq!(outage.code(), Code::Unavailable);
        assert!(!outage.message().contains("secret-host"), "the cause is logged, not answered: {outage:?}");
        assert_eq!(Status::from(GoogleError::not_found("gone")).code(), Code::NotFound);
        assert_eq!(Status::from(GoogleError::denied("no")).code(), Code::PermissionDenied);
        assert_eq!(Status::from(GoogleError::from(ApiError::Unauthorized("who".into()))).code(), Code::Unauthenticated);
        assert_eq!(Status::from(GoogleError::from(ApiError::Internal("bug".into()))).message(), "Internal error");
    }

    #[test]
    fn names() {
        let n = Name::parse("projects/p/locations/l/reasoningEngines/e/sessions/s/operations/9", "name").unwrap();
        assert_eq!(
            (n.engine.unwrap().app, n.session.as_deref(), n.operation.as_deref()),
            ("e".into(), Some("s"), Some("9"))
        );
        let n = Name::parse("projects/p/locations/l/operations/9", "name").unwrap();
        assert!(n.engine.is_none() && n.operation.is_some());
        assert_eq!(Name::session("reasoningEngines/e/sessions/s", "name").unwrap().1, "s");
        for bad in [
            "",
            "reasoningEngines",
            "reasoningEngines//sessions/s",
            "projects/p/reasoningEngines/e",
            "foo/e",
            "reasoningEngines/e/sessions/s/events/x",
            "reasoningEngines/e/sessions/s/",
        ] {
            assert_eq!(Name::parse(bad, "name").unwrap_err().code(), Code::InvalidArgument, "{bad}");
        }
        assert_eq!(Name::engine("reasoningEngines/e/sessions/s", "parent").unwrap_err().code(), Code::InvalidArgument);
        assert_eq!(Name::session("reasoningEngines/e", "name").unwrap_err().code(), Code::InvalidArgument);
        let (engine, memory) = Name::memory("projects/p/locations/l/reasoningEngines/e/memories/m", "name").unwrap();
        assert_eq!((engine.app.as_str(), memory.as_str()), ("e", "m"));
        let n = Name::parse("reasoningEngines/e/memories/m/operations/3", "name").unwrap();
        assert_eq!((n.memory.as_deref(), n.operation.as_deref()), (Some("m"), Some("3")));
        assert_eq!(Name::memory("reasoningEngines/e/sessions/s", "name").unwrap_err().code(), Code::InvalidArgument);
    }
}
