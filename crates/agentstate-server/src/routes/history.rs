//! agentstate's history routes beside the ADK session routes: the state at any event or time,
//! an event's diff, rewind and fork (see `agentstate::history`).

use agentstate::history::{EventDiff, ForkSession, HistoryAt, StateAt};
use agentstate::{Error, GetSessionConfig, SessionKey, Value, wire};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::json;

use crate::error::ApiError;
use crate::limits::{Body, check_path_safe};
use crate::state::AppState;

type Reply = Result<Json<Value>, ApiError>;

fn key(app: &str, user: &str, id: &str) -> Result<SessionKey, ApiError> {
    for (field, value) in [("app_name", app), ("user_id", user), ("session_id", id)] {
        check_path_safe(field, value)?;
    }
    Ok(SessionKey::new(app, user, id)?)
}

fn not_found() -> ApiError {
    ApiError::NotFound("Session not found".into())
}

/// A JSON body with the one string field `field` (camelCase, or snake_case), and an optional
/// second one.
fn fields(bytes: &[u8], required: &str, optional: Option<&str>) -> Result<(String, Option<String>), ApiError> {
    let value = body(bytes)?;
    let first = string(&value, required)?.ok_or_else(|| ApiError::missing(required, &value))?;
    let second = optional.map(|name| string(&value, name)).transpose()?.flatten();
    Ok((first, second))
}

/// A JSON body (an empty one is `null`).
fn body(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::invalid_json(&e))
}

/// The string field `name` (camelCase, or its snake_case) of a body, if there.
fn string(value: &Value, name: &str) -> Result<Option<String>, ApiError> {
    match value.get(name).or_else(|| value.get(wire::to_snake(name))) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ApiError::Unprocessable(json!([{"type": "string_type", "loc": ["body", name],
            "msg": "Input should be a valid string", "input": other}]))),
    }
}

/// Where `GET …/state` reads: one of `atEvent`, `beforeEvent`, `atTime` (epoch seconds), or
/// `atCreation=true`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StateQuery {
    at_event: Option<String>,
    before_event: Option<String>,
    at_time: Option<f64>,
    #[serde(default)]
    at_creation: bool,
}

impl StateQuery {
    fn at(self) -> Result<HistoryAt, ApiError> {
        let chosen = [self.at_event.is_some(), self.before_event.is_some(), self.at_time.is_some(), self.at_creation];
        if chosen.iter().filter(|c| **c).count() != 1 {
            return Err(ApiError::BadRequest(
                "give exactly one of atEvent, beforeEvent, atTime, atCreation=true".into(),
            ));
        }
        Ok(match (self.at_event, self.before_event, self.at_time) {
            (Some(id), _, _) => HistoryAt::AfterEvent(id),
            (_, Some(id), _) => HistoryAt::BeforeEvent(id),
            (_, _, Some(time)) => HistoryAt::Time(time),
            _ => HistoryAt::Creation,
        })
    }
}

/// A history state as the API shows it.
pub(crate) fn state_to_wire(at: &StateAt) -> Value {
    json!({"eventId": at.event_id, "timestamp": at.timestamp, "state": at.state})
}

/// A diff as the API shows it.
pub(crate) fn diff_to_wire(diff: &EventDiff) -> Value {
    let changes: Vec<Value> = diff
        .changes
        .iter()
        .map(|c| {
            let mut change = json!({"key": c.key, "change": c.kind()});
            if let Some(before) = &c.before {
                change["before"] = before.clone();
            }
            if let Some(after) = &c.after {
                change["after"] = after.clone();
            }
            change
        })
        .collect();
    json!({
        "eventId": diff.event_id,
        "timestamp": diff.timestamp,
        "invocationId": diff.invocation_id,
        "author": diff.author,
        "changes": changes,
    })
}

/// `GET /apps/{app}/users/{user}/sessions/{id}/state?atEvent=…|beforeEvent=…|atTime=…|atCreation=true`.
pub(crate) async fn state(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    query: Result<Query<StateQuery>, QueryRejection>,
) -> Reply {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let at = state.service().state_at(&key(&app, &user, &id)?, query.at()?).await?.ok_or_else(not_found)?;
    Ok(Json(state_to_wire(&at)))
}

/// `GET /apps/{app}/users/{user}/sessions/{id}/events/{event_id}/diff`.
pub(crate) async fn diff(
    State(state): State<AppState>,
    Path((app, user, id, event_id)): Path<(String, String, String, String)>,
) -> Reply {
    let key = key(&app, &user, &id)?;
    match state.service().event_diff(&key, &event_id).await {
        Ok(Some(diff)) => Ok(Json(diff_to_wire(&diff))),
        Ok(None) => Err(not_found()),
        Err(Error::InvalidArgument { field: "event_id", .. }) => Err(ApiError::NotFound("Event not found".into())),
        Err(e) => Err(e.into()),
    }
}

/// `POST /apps/{app}/users/{user}/sessions/{id}/rewind` with `{"rewindBeforeInvocationId": …}`:
/// the session after the rewind.
pub(crate) async fn rewind(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Body(bytes): Body,
) -> Reply {
    let key = key(&app, &user, &id)?;
    let value = body(&bytes)?;
    let target = match (string(&value, "rewindBeforeInvocationId")?, string(&value, "rewindAfterEventId")?) {
        (Some(invocation), None) => Ok(invocation),
        (None, Some(event)) => Err(event),
        (None, None) => return Err(ApiError::missing("rewindBeforeInvocationId", &value)),
        (Some(_), Some(_)) => {
            return Err(ApiError::Unprocessable(json!([{"type": "value_error", "loc": ["body"],
                "msg": "Give rewindBeforeInvocationId or rewindAfterEventId, not both", "input": value}])));
        }
    };
    // A rewind made of a blind write, as an append without a marker: read again and retried
    // when another writer appended meanwhile.
    for lost in 1.. {
        let mut session =
            state.service().get_session(&key, GetSessionConfig::recent(0)).await?.ok_or_else(not_found)?;
        let rewound = match &target {
            Ok(invocation) => state.service().rewind(&mut session, invocation).await,
            Err(event) => state.service().rewind_to_event(&mut session, event).await,
        };
        match rewound {
            Ok(_) => {
                let session = state.service().get_session(&key, GetSessionConfig::default()).await?;
                return Ok(Json(crate::expiry::session_value(&session.ok_or_else(not_found)?)));
            }
            Err(Error::Conflict { kind: agentstate::ConflictKind::StaleSession })
                if super::append::lost_race(&state, lost).await => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::stale().into())
}

/// `POST /apps/{app}/users/{user}/sessions/{id}/fork` with `{"atEventId": …, "sessionId"?: …}`:
/// the new session.
pub(crate) async fn fork(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Body(bytes): Body,
) -> Reply {
    let source = key(&app, &user, &id)?;
    let (at_event_id, session_id) = fields(&bytes, "atEventId", Some("sessionId"))?;
    if let Some(id) = &session_id {
        check_path_safe("sessionId", id)?;
    }
    let request = ForkSession { source, at_event_id, session_id };
    let fork = state.service().fork_session(request).await?;
    let fork = state.service().get_session(fork.key(), GetSessionConfig::default()).await?.ok_or_else(not_found)?;
    Ok(Json(crate::expiry::session_value(&fork)))
}
