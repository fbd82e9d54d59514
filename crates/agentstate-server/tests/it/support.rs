//! What the router tests share: a router over the in-memory store, and requests to it.

use agentstate::SessionService;
use agentstate_server::{AppState, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

/// The sessions of user `u1` of app `myapp`.
pub(crate) const S: &str = "/apps/myapp/users/u1/sessions";

/// The API over a new in-memory store.
pub(crate) fn router() -> Router {
    app(AppState::new(SessionService::in_memory()))
}

/// Sends a request with an optional JSON body; its status and JSON answer (`null` when empty).
pub(crate) async fn call(router: &Router, method: Method, path: &str, body: Option<&str>) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_owned())))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() })
}

/// [`call`] with a JSON value as the body.
pub(crate) async fn call_json(router: &Router, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
    call(router, method, path, body.map(|b| b.to_string()).as_deref()).await
}

/// Sends a request with a bearer token and `body` (JSON text, or empty); its status and JSON
/// answer (`null` when empty or not JSON).
pub(crate) async fn call_as(
    router: &Router,
    token: &str,
    method: Method,
    path: &str,
    body: &str,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A router over a fresh in-memory service that admits the tokens of `tokens_json`.
pub(crate) fn with_tokens(tokens_json: &str) -> Router {
    let tokens = agentstate_server::Tokens::parse(tokens_json).unwrap();
    app(AppState::new(SessionService::in_memory()).with_tokens(tokens))
}
