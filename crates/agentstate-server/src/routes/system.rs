//! The routes about the server itself: liveness, readiness, metrics and the OpenAPI document.

use std::fmt::Write as _;
use std::sync::Arc;

use agentstate::{GetSessionConfig, SessionKey, SessionService};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde_json::{Value, json};

use crate::auth::Tokens;
use crate::metrics::Metrics;

/// `GET /healthz`: the process answers.
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: a query reaches the storage backend.
pub(crate) async fn readyz(State(service): State<SessionService>) -> impl IntoResponse {
    let probe = SessionKey::from_storage("agentstate-readyz", "probe", "probe");
    match service.get_session(&probe, GetSessionConfig::recent(0)).await {
        Ok(_) => (StatusCode::OK, Json(json!({"status": "ready"}))),
        Err(e) => {
            tracing::warn!(error = %e, "not ready");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable", "detail": e.to_string()})))
        }
    }
}

/// `GET /metrics`: Prometheus' text format.
pub(crate) async fn metrics(
    State(metrics): State<Arc<Metrics>>,
    State(tokens): State<Arc<Tokens>>,
) -> impl IntoResponse {
    let mut text = metrics.render();
    let (missing, unknown) = tokens.failures();
    text.push_str(
        "# HELP agentstate_auth_failures_total Requests refused for a missing or unknown access token.\n\
         # TYPE agentstate_auth_failures_total counter\n",
    );
    let _ = writeln!(text, "agentstate_auth_failures_total{{reason=\"missing\"}} {missing}");
    let _ = writeln!(text, "agentstate_auth_failures_total{{reason=\"unknown\"}} {unknown}");
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

/// The OpenAPI document as JSON text, made once with the router.
#[derive(Debug, Clone)]
pub(crate) struct OpenApiDocument(pub(crate) Bytes);

/// `GET /openapi.json`.
pub(crate) async fn openapi(Extension(document): Extension<OpenApiDocument>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], document.0)
}
