//! `POST /run` and `POST /run_sse`: run an agent for one user turn, as `adk api_server` does.
//!
//! The body is the reference's `RunAgentRequest` (camelCase or snake_case):
//! `{"appName", "userId", "sessionId", "newMessage": Content, "streaming": false, "stateDelta": {}}`.
//! `/run` answers the run's events as a JSON array; `/run_sse` streams each as
//! `data: <event JSON>\n\n` as it happens (partial events too when `streaming` is true), and a
//! failure after the stream began as `data: {"error": "…"}`.

use agentstate::{Content, GetSessionConfig, Map, SessionKey, Value};
use agentstate_runtime::{RunRequest, Runner, RuntimeError};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;

use crate::auth::permit;
use crate::error::ApiError;
use crate::limits::{Body, check_path_safe};
use crate::sessions::AppState;
use crate::wire;

/// The reference's `RunAgentRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunAgentRequest {
    #[serde(default, alias = "app_name")]
    app_name: Option<String>,
    #[serde(alias = "user_id")]
    user_id: String,
    #[serde(alias = "session_id")]
    session_id: String,
    #[serde(default, alias = "new_message")]
    new_message: Option<Content>,
    #[serde(default)]
    streaming: bool,
    #[serde(default, alias = "state_delta")]
    state_delta: Option<Map<String, Value>>,
}

/// What every run needs before it starts: a parsed body, a known app, a permitted caller. With
/// `check_session`, also an existing session: `/run_sse` must answer a missing one with 404 before
/// its stream starts (as the reference checks up front). `/run` leaves that to the runner's own
/// load, which fails with the same 404, instead of loading the session twice.
async fn prepare(
    state: &AppState,
    headers: &HeaderMap,
    bytes: &[u8],
    check_session: bool,
) -> Result<(Runner, RunRequest), ApiError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| ApiError::invalid_json(&e))?;
    for field in ["userId", "sessionId"] {
        let snake = wire::to_snake(field);
        if value.get(field).is_none() && value.get(&snake).is_none() {
            return Err(ApiError::missing(field, &value));
        }
    }
    let request = RunAgentRequest::deserialize(&value).map_err(|e| {
        ApiError::Unprocessable(json!([{"type": "model_type", "loc": ["body"], "msg": e.to_string(), "input": value}]))
    })?;
    let runner = pick(state, request.app_name.as_deref())?;
    permit(&state.tokens, headers, runner.app_name(), &request.user_id)?;
    check_path_safe("user_id", &request.user_id)?;
    check_path_safe("session_id", &request.session_id)?;
    let key = SessionKey::new(runner.app_name(), &request.user_id, &request.session_id)?;
    if let Some(delta) = &request.state_delta {
        state.limits.check_state("stateDelta", delta)?;
    }
    if check_session && state.service.get_session(&key, GetSessionConfig::recent(0)).await?.is_none() {
        return Err(ApiError::NotFound(format!("Session not found: {}", request.session_id)));
    }
    let run = RunRequest {
        user_id: request.user_id,
        session_id: request.session_id,
        new_message: request.new_message,
        state_delta: request.state_delta.unwrap_or_default(),
        streaming: request.streaming,
    };
    Ok((runner.clone(), run))
}

fn pick<'a>(state: &'a AppState, app: Option<&str>) -> Result<&'a Runner, ApiError> {
    let apps = || state.runners.keys().cloned().collect::<Vec<_>>().join(", ");
    match app {
        Some(app) => state.runners.get(app).ok_or_else(|| {
            if state.runners.is_empty() {
                ApiError::NotFound(format!("App not found: {app}. No agents are served; start with --agent FILE."))
            } else {
                ApiError::NotFound(format!("App not found: {app}. Served: {}", apps()))
            }
        }),
        None => match state.runners.len() {
            1 => state.runners.values().next().ok_or_else(|| ApiError::BadRequest("appName is required".into())),
            0 => Err(ApiError::NotFound("No agents are served; start with --agent FILE.".into())),
            _ => Err(ApiError::BadRequest(format!("appName is required: several apps are served ({})", apps()))),
        },
    }
}

/// How a failed run is answered.
fn run_error(error: RuntimeError) -> ApiError {
    match error {
        RuntimeError::SessionNotFound(_) => ApiError::NotFound(error.to_string()),
        RuntimeError::Session(e) => ApiError::from(e),
        RuntimeError::Model { .. } => ApiError::BadGateway(error.to_string()),
        other => ApiError::Agent(other.to_string()),
    }
}

/// `GET /list-apps`: the apps served, sorted (as `adk api_server` lists its agent folders).
pub(crate) async fn list_apps(State(state): State<AppState>) -> Json<Value> {
    Json(json!(state.runners.keys().collect::<Vec<_>>()))
}

/// `POST /run`: the events of the run, as a JSON array.
pub(crate) async fn run(State(state): State<AppState>, headers: HeaderMap, Body(bytes): Body) -> Response {
    let (runner, request) = match prepare(&state, &headers, &bytes, false).await {
        Ok(prepared) => prepared,
        Err(error) => return error.into_response(),
    };
    let mut stream = runner.run_request(request);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(wire::event_to_wire(&event)),
            Err(error) => return run_error(error).into_response(),
        }
    }
    Json(Value::Array(events)).into_response()
}

/// `POST /run_sse`: the events of the run as server-sent events, as they happen.
pub(crate) async fn run_sse(State(state): State<AppState>, headers: HeaderMap, Body(bytes): Body) -> Response {
    let (runner, request) = match prepare(&state, &headers, &bytes, true).await {
        Ok(prepared) => prepared,
        Err(error) => return error.into_response(),
    };
    let events = runner.run_request(request).map(|item| {
        let data = match item {
            Ok(event) => wire::event_to_wire(&event).to_string(),
            Err(error) => {
                tracing::warn!(%error, "run failed");
                json!({"error": error.to_string()}).to_string()
            }
        };
        Ok::<_, std::convert::Infallible>(SseEvent::default().data(data))
    });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}
