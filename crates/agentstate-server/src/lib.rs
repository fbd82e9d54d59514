//! The agentstate session server: the session routes of ADK's `adk api_server` over any
//! [`SessionService`](agentstate::SessionService), so clients written for it work unchanged, plus
//! health and readiness probes.
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
mod sessions;
pub mod transfer;
pub mod wire;

use agentstate::{GetSessionConfig, SessionKey};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::json;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use auth::Tokens;
pub use error::ApiError;
pub use limits::Limits;
pub use metrics::Metrics;
pub use sessions::AppState;

/// The router: session routes, `/healthz`, `/readyz`, `/metrics`.
pub fn app(state: AppState) -> Router {
    let limits = state.limits;
    let sessions = "/apps/{app_name}/users/{user_id}/sessions";
    let session_routes = Router::new()
        .route(sessions, post(sessions::create).get(sessions::list))
        .route(
            &format!("{sessions}/{{session_id}}"),
            get(sessions::get).post(sessions::create_with_id).patch(sessions::patch).delete(sessions::delete),
        )
        .route(&format!("{sessions}/{{session_id}}/events"), get(sessions::events))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::authorize));
    Router::new()
        .merge(session_routes)
        .route("/healthz", get(|| async { axum::Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics::render))
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
