//! `POST /run` and `POST /run_sse`: run an agent for one user turn, as `adk api_server` does.
//!
//! The body is the reference's `RunAgentRequest` (camelCase or snake_case):
//! `{"appName", "userId", "sessionId", "newMessage": Content, "streaming": false, "stateDelta": {}}`.
//! `/run` answers the run's events as a JSON array; `/run_sse` streams each as
//! `data: <event JSON>\n\n` as it happens (partial events too when `streaming` is true), and a
//! failure after the stream began as `data: {"error": "…"}`.
//!
//! Runs of one session take turns (across servers over one database): while one goes, another
//! waits, is refused with 409, or interrupts it, by the server's `--double-texting` policy (see
//! [`agentstate_runtime::DoubleTexting`]); one that cannot wait (longer) answers 503. Both come
//! before the response starts.
//!
//! With tokens configured the caller is authenticated first (401), then its token is checked
//! against the app and user in the body (403), and only then is anything looked up: an outsider
//! learns nothing about which apps or sessions exist.

use agentstate::{Content, GetSessionConfig, Map, SessionKey, Value};
use agentstate_runtime::{RunRequest, Runner, RuntimeError};
use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;

use crate::auth::Permit;
use crate::error::ApiError;
use crate::limits::{Body, check_path_safe};
use crate::state::AppState;
use agentstate::wire;

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

/// What every run needs before it starts: a parsed body, a permitted caller, a known app. With
/// `check_session`, also an existing session: `/run_sse` must answer a missing one with 404 before
/// its stream starts (as the reference checks up front). `/run` leaves that to the runner's own
/// load, which fails with the same 404, instead of loading the session twice.
async fn prepare(
    state: &AppState,
    permit: &Permit,
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
    if let Some(app) = &request.app_name {
        permit.check(app, &request.user_id)?;
    }
    let runner = pick(state, permit, request.app_name.as_deref())?;
    permit.check(runner.app_name(), &request.user_id)?;
    check_path_safe("user_id", &request.user_id)?;
    check_path_safe("session_id", &request.session_id)?;
    let key = SessionKey::new(runner.app_name(), &request.user_id, &request.session_id)?;
    if let Some(delta) = &request.state_delta {
        state.limits().check_state("stateDelta", delta)?;
    }
    if check_session && state.service().get_session(&key, GetSessionConfig::recent(0)).await?.is_none() {
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

/// The runner of `app`, or of the only app served when the body names none. Only the apps the
/// caller may touch are named in a refusal.
fn pick<'a>(state: &'a AppState, permit: &Permit, app: Option<&str>) -> Result<&'a Runner, ApiError> {
    let runners = state.runners();
    let visible = || runners.keys().filter(|a| permit.covers_app(a)).cloned().collect::<Vec<_>>().join(", ");
    match app {
        Some(app) => runners.get(app).ok_or_else(|| {
            if runners.is_empty() {
                ApiError::NotFound(format!("App not found: {app}. No agents are served; start with --agent FILE."))
            } else {
                ApiError::NotFound(format!("App not found: {app}. Served: {}", visible()))
            }
        }),
        None => match runners.len() {
            1 => runners.values().next().ok_or_else(|| ApiError::BadRequest("appName is required".into())),
            0 => Err(ApiError::NotFound("No agents are served; start with --agent FILE.".into())),
            _ => Err(ApiError::BadRequest(format!("appName is required: several apps are served ({})", visible()))),
        },
    }
}

/// How a failed run is answered.
fn run_error(error: RuntimeError) -> ApiError {
    match error {
        RuntimeError::SessionNotFound(_) => ApiError::NotFound(error.to_string()),
        RuntimeError::Session(e) => ApiError::from(e),
        RuntimeError::Model { .. } => ApiError::BadGateway(error.to_string()),
        RuntimeError::SessionBusy(_) => ApiError::Conflict(error.to_string()),
        RuntimeError::RunNotQueued { .. } => ApiError::Unavailable(error.to_string()),
        other => ApiError::Agent(other.to_string()),
    }
}

/// `GET /list-apps`: the apps served that the caller may touch, sorted (as `adk api_server` lists
/// its agent folders).
pub(crate) async fn list_apps(State(state): State<AppState>, Extension(permit): Extension<Permit>) -> Json<Value> {
    Json(json!(state.runners().keys().filter(|app| permit.covers_app(app)).collect::<Vec<_>>()))
}

/// `POST /run`: the events of the run, as a JSON array.
pub(crate) async fn run(
    State(state): State<AppState>,
    Extension(permit): Extension<Permit>,
    Body(bytes): Body,
) -> Result<Json<Value>, ApiError> {
    let (runner, request) = prepare(&state, &permit, &bytes, false).await?;
    let mut stream = runner.start(request).await.map_err(run_error)?;
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        events.push(wire::event_to_wire(&item.map_err(run_error)?));
    }
    Ok(Json(Value::Array(events)))
}

/// `POST /run_sse`: the events of the run as server-sent events, as they happen.
pub(crate) async fn run_sse(
    State(state): State<AppState>,
    Extension(permit): Extension<Permit>,
    Body(bytes): Body,
) -> Result<Response, ApiError> {
    let (runner, request) = prepare(&state, &permit, &bytes, true).await?;
    // The response starts once the run has its turn: a refusal is a status, not a stream.
    let events = runner.start(request).await.map_err(run_error)?.map(|item| {
        let data = match item {
            Ok(event) => wire::event_to_wire(&event).to_string(),
            Err(error) => {
                tracing::warn!(%error, "run failed");
                json!({"error": error.to_string()}).to_string()
            }
        };
        Ok::<_, std::convert::Infallible>(SseEvent::default().data(data))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}
