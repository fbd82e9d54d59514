//! The agentstate session server: the session routes of ADK's `adk api_server` over any
//! [`SessionService`](agentstate::SessionService), so clients written for it work unchanged,
//! `/run` and `/run_sse` for agents registered with [`AppState::agent`], plus health and
//! readiness probes.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agentstate_server::{AppState, app};
//!
//! # async fn f() -> anyhow::Result<()> {
//! let service = agentstate_sql::SqlSessionService::connect("sqlite://agentstate.db").await?;
//! let router = app(AppState::new(Arc::new(service)));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
//! axum::serve(listener, router).await?;
//! # Ok(()) }
//! ```

pub mod adk_import;
pub mod auth;
mod error;
mod limits;
mod metrics;
pub mod openapi;
mod run;
mod sessions;
pub mod transfer;
pub mod wire;

use agentstate::{GetSessionConfig, SessionKey};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::json;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use auth::Tokens;
pub use error::ApiError;
pub use limits::Limits;
pub use metrics::Metrics;
pub use sessions::AppState;

/// Registers every route and describes it for `/openapi.json`, from one table.
macro_rules! routes {
    ($( $method:ident $path:literal => $handler:path, $summary:literal, $request:expr,
        [$( $status:literal $description:literal $schema:literal ),*] );* $(;)?) => {
        fn register(router: Router<AppState>, session_routes: bool) -> Router<AppState> {
            let mut router = router;
            $(
                if $path.starts_with("/apps/") == session_routes {
                    router = router.route($path, axum::routing::$method($handler));
                }
            )*
            router
        }

        /// Every route, as `/openapi.json` describes it.
        pub const OPERATIONS: &[openapi::Operation] = &[$(
            openapi::Operation {
                method: stringify!($method),
                path: $path,
                summary: $summary,
                request: $request,
                responses: &[$(($status, $description, $schema)),*],
            }
        ),*];
    };
}

routes! {
    post "/apps/{app_name}/users/{user_id}/sessions" => sessions::create, "Create a session", Some("CreateSessionRequest"),
        [200 "The session" "Session", 400 "Invalid id, options or events" "Error", 409 "The id is taken" "Error", 422 "Malformed body" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions" => sessions::list, "List a user's sessions (merged state, no events)", None,
        [200 "The sessions, oldest update first" "SessionList"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::get, "Get a session with its events", None,
        [200 "The session" "Session", 404 "No such session" "Error"];
    post "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::create_with_id,
        "Create a session with this id (deprecated by the reference; the body is the initial state)", Some("State"),
        [200 "The session" "Session", 409 "The id is taken" "Error"];
    patch "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::patch,
        "Append a user event carrying stateDelta (retried, never lost, under concurrent writers)", Some("UpdateSessionRequest"),
        [200 "The session after the append" "Session", 404 "No such session" "Error", 413 "Over a size limit" "Error", 422 "stateDelta missing" "Error"];
    delete "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::delete, "Delete a session (also when missing)", None,
        [200 "null" "Null"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events" => sessions::events,
        "agentstate extension: the history a page at a time, oldest first", None,
        [200 "A page of events" "EventPage", 400 "Bad page token or limit" "Error", 404 "No such session" "Error"];
    get "/list-apps" => run::list_apps, "The apps served on /run (sorted)", None, [200 "App names" "AppList"];
    post "/run" => run::run, "Run an agent for one user turn; the run's events (app from appName, or the only one served)",
        Some("RunAgentRequest"),
        [200 "The events of the run, each stored before it is answered" "EventList", 400 "appName missing with several apps served" "Error",
         401 "Missing or unknown token" "Error", 403 "The token may not access this app or user" "Error",
         404 "Unknown app or session" "Error", 422 "Malformed body" "Error", 500 "The agent failed (message shown)" "Error",
         502 "The model provider failed" "Error"];
    post "/run_sse" => run::run_sse, "Run an agent for one user turn, streaming its events as server-sent events", Some("RunAgentRequest"),
        [200 "text/event-stream of `data: <Event JSON>`; a late failure as `data: {\"error\": …}`" "EventStream",
         404 "Unknown app or session" "Error", 422 "Malformed body" "Error"];
    get "/healthz" => healthz, "Liveness", None, [200 "Alive" "Status"];
    get "/readyz" => ready, "Readiness: the database answers", None, [200 "Ready" "Status", 503 "The database is unreachable" "Status"];
    get "/metrics" => metrics::render, "Prometheus metrics", None, [200 "Metrics" "Metrics"];
    get "/openapi.json" => openapi_json, "This document", None, [200 "OpenAPI 3.1" "Status"];
}

async fn healthz() -> axum::Json<serde_json::Value> {
    axum::Json(json!({"status": "ok"}))
}

async fn openapi_json() -> axum::Json<serde_json::Value> {
    axum::Json(openapi::document(OPERATIONS))
}

/// The router: the session routes (behind the access tokens, if any), `/healthz`, `/readyz`,
/// `/metrics`, `/openapi.json`.
pub fn app(state: AppState) -> Router {
    let limits = state.limits;
    let session_routes =
        register(Router::new(), true).route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::authorize));
    register(Router::new(), false)
        .merge(session_routes)
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), metrics::track))
        .with_state(state)
        .layer(axum::extract::DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(axum::Extension(limits))
        .layer(CatchPanicLayer::new())
        .layer(TraceLayer::new_for_http().make_span_with(|request: &axum::http::Request<_>| {
            let id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
            tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id = %id)
        }))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// Ready when a query reaches the storage backend.
async fn ready(State(state): State<AppState>) -> impl IntoResponse {
    let probe = SessionKey::from_storage("agentstate-readyz", "probe", "probe");
    match state.service.get_session(&probe, GetSessionConfig::recent(0)).await {
        Ok(_) => (StatusCode::OK, axum::Json(json!({"status": "ready"}))),
        Err(e) => {
            tracing::warn!(error = %e, "not ready");
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(json!({"status": "unavailable", "detail": e.to_string()})))
        }
    }
}
