//! The agentstate HTTP API as a library: the session routes of ADK's `adk api_server` over any
//! [`SessionService`](agentstate::SessionService), so clients written for it work unchanged;
//! `/run` and `/run_sse` for agents (with the default `agents` feature); probes, metrics and an
//! OpenAPI document. The `agentstate` binary serves it.
//!
//! ```no_run
//! use agentstate::SessionService;
//! use agentstate_server::{AppState, app};
//!
//! # async fn f() -> anyhow::Result<()> {
//! let service = SessionService::new(agentstate_sql::SqlStore::connect("sqlite://agentstate.db").await?);
//! let router = app(AppState::new(service));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
//! axum::serve(listener, router).await?;
//! # Ok(()) }
//! ```
//!
//! Every route, with who may call it, is in one table ([`OPERATIONS`]): the router, the access
//! checks and `/openapi.json` are all made from it. An embedder of the session API alone can turn
//! off the `agents` feature, which brings in the agent runtime and its HTTP client.

mod artifact_schemas;
mod auth;
mod engine_api;
mod error;
mod expiry;
#[cfg(feature = "grpc")]
pub mod grpc;
mod jwt;
mod limits;
mod listen;
#[cfg(feature = "agents")]
pub mod memory_model;
mod metrics;
pub mod openapi;
mod pieces;
mod routes;
mod running;
mod state;
mod telemetry;
mod tls;
mod ui;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use auth::{Access, Tokens, TokensError};
pub use error::ApiError;
pub use expiry::{SWEEP_BATCH, Sweep, parse_retention, retain, sweep};
pub use jwt::{Jwt, JwtConfig, JwtError, REFETCH_EVERY};
pub use limits::Limits;
pub use listen::{Connections, serve, serve_tls};
pub use metrics::Metrics;
pub use routes::OPERATIONS;
pub use state::AppState;
pub use tls::{Tls, TlsError, TlsFiles};

/// The router: every route of [`OPERATIONS`] with its access check, request limits, metrics,
/// request ids, tracing, and a 500 instead of a dropped connection should a handler panic; with
/// the `grpc` feature, the Agent Engine Sessions API over gRPC beside it ([`grpc`]).
pub fn app(state: AppState) -> Router {
    let limits = state.limits();
    let document = serde_json::to_vec(&openapi::document(OPERATIONS)).unwrap_or_default();
    let rest = routes::register(&state)
        .route_layer(from_fn_with_state(state.clone(), metrics::track))
        .fallback(routes::not_found)
        .layer(axum::middleware::from_fn(error::json_rejections))
        .with_state(state.clone())
        .layer(axum::Extension(routes::OpenApiDocument(document.into())))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(axum::Extension(limits));
    #[cfg(feature = "grpc")]
    let rest = grpc::beside(rest, state);
    #[cfg(not(feature = "grpc"))]
    drop(state);
    rest.layer(CatchPanicLayer::new())
        .layer(TraceLayer::new_for_http().make_span_with(telemetry::request_span).on_response(telemetry::record_status))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}
