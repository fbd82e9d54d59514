//! One error type for every handler, answered as `{"detail": …}` with the reference's status codes.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An error answered to the client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400.
    #[error("{0}")]
    BadRequest(String),
    /// 401: no bearer token.
    #[error("{0}")]
    Unauthorized(String),
    /// 401: a bearer token that is unknown, or a JWT that does not verify
    /// (`WWW-Authenticate: Bearer error="invalid_token"`).
    #[error("{0}")]
    InvalidToken(String),
    /// 403: the token may not touch this app or user.
    #[error("{0}")]
    Forbidden(String),
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409.
    #[error("{0}")]
    Conflict(String),
    /// 413: a request exceeds a configured limit.
    #[error("{0}")]
    TooLarge(String),
    /// 408: the request's body did not arrive in time.
    #[error("{0}")]
    Timeout(String),
    /// 422, with FastAPI's list of validation problems as `detail`.
    #[error("invalid request: {0}")]
    Unprocessable(Value),
    /// 500: the message is logged, the client gets a generic one.
    #[error("{0}")]
    Internal(String),
    /// 500 with the message shown: an agent failed (its instruction, its tools, its limits);
    /// the operator's own configuration, so the message helps and reveals nothing.
    #[error("{0}")]
    Agent(String),
    /// 502: the model provider failed or refused.
    #[error("{0}")]
    BadGateway(String),
    /// 501: the backend cannot do this (its store lacks the capability); the message says which.
    #[error("{0}")]
    NotImplemented(String),
    /// 503: the storage backend is unavailable or busy; the client may retry.
    #[error("{0}")]
    Unavailable(String),
}

impl ApiError {
    /// FastAPI's 422 for a request body that is not JSON.
    pub fn invalid_json(error: &serde_json::Error) -> Self {
        Self::Unprocessable(json!([{
            "type": "json_invalid", "loc": ["body", error.column()], "msg": "JSON decode error",
            "input": {}, "ctx": {"error": error.to_string()}
        }]))
    }

    /// FastAPI's 422 for a required body field that is missing.
    pub fn missing(field: &str, input: &Value) -> Self {
        Self::Unprocessable(
            json!([{"type": "missing", "loc": ["body", field], "msg": "Field required", "input": input}]),
        )
    }
}

impl From<agentstate::Error> for ApiError {
    fn from(e: agentstate::Error) -> Self {
        use agentstate::Error as E;
        match e {
            E::NotFound { .. } => Self::NotFound("Session not found".into()),
            E::AlreadyExists { session_id } => Self::Conflict(format!("Session already exists: {session_id}")),
            e @ E::Conflict { .. } => Self::Conflict(e.to_string()),
            e @ E::InvalidArgument { .. } => Self::BadRequest(e.to_string()),
            e @ E::Unsupported { .. } => Self::NotImplemented(e.to_string()),
            e if e.is_retryable() => Self::Unavailable(e.to_string()),
            e => Self::Internal(e.to_string()),
        }
    }
}

/// 401 with its `WWW-Authenticate` challenge.
fn unauthorized(detail: &str, challenge: &'static str) -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, Json(json!({ "detail": detail }))).into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, detail) = match self {
            Self::BadRequest(m) => (StatusCode::BAD_REQUEST, Value::String(m)),
            Self::NotFound(m) => (StatusCode::NOT_FOUND, Value::String(m)),
            Self::Unauthorized(m) => return unauthorized(&m, "Bearer"),
            Self::InvalidToken(m) => return unauthorized(&m, r#"Bearer error="invalid_token""#),
            Self::Forbidden(m) => (StatusCode::FORBIDDEN, Value::String(m)),
            Self::Conflict(m) => (StatusCode::CONFLICT, Value::String(m)),
            Self::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, Value::String(m)),
            Self::Timeout(m) => (StatusCode::REQUEST_TIMEOUT, Value::String(m)),
            Self::Unprocessable(v) => (StatusCode::UNPROCESSABLE_ENTITY, v),
            Self::NotImplemented(m) => (StatusCode::NOT_IMPLEMENTED, Value::String(m)),
            Self::Unavailable(m) => {
                tracing::warn!(error = %m, "storage unavailable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Value::String("The session store is unavailable; retry later.".into()),
                )
            }
            Self::Agent(m) => {
                tracing::warn!(error = %m, "agent failed");
                (StatusCode::INTERNAL_SERVER_ERROR, Value::String(m))
            }
            Self::BadGateway(m) => {
                tracing::warn!(error = %m, "model provider failed");
                (StatusCode::BAD_GATEWAY, Value::String(m))
            }
            Self::Internal(m) => {
                tracing::error!(error = %m, "internal error");
                (StatusCode::INTERNAL_SERVER_ERROR, Value::String("Internal server error".into()))
            }
        };
        (status, Json(json!({ "detail": detail }))).into_response()
    }
}

/// Middleware: the framework's own refusals (a query string or path that does not parse, a
/// missing content type) come as plain text; they are answered as every other error is, JSON in
/// the surface's shape (`{"detail"}`, or Google's `{"error"}` on the managed-service routes).
pub(crate) async fn json_rejections(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
    let google = crate::engine_api::version_of(request.uri().path()).is_some();
    let response = next.run(request).await;
    let status = response.status();
    let plain =
        response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/plain"));
    if !(status.is_client_error() && plain) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let value = if google {
        serde_json::json!({"error": {"code": status.as_u16(), "message": text, "status": "INVALID_ARGUMENT"}})
    } else {
        serde_json::json!({"detail": text})
    };
    parts.headers.insert(CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
    parts.headers.remove(CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(value.to_string()))
}
