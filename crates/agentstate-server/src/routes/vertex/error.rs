//! Errors as Google APIs answer them: `{"error": {"code", "message", "status"}}` with the
//! canonical status names, and the access check of the managed-service routes in that shape.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::Tokens;
use crate::error::ApiError;

/// An error of the managed-service surface.
#[derive(Debug)]
pub(crate) struct GoogleError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl GoogleError {
    /// 400 `INVALID_ARGUMENT`.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, code: "INVALID_ARGUMENT", message: message.into() }
    }

    /// 404 `NOT_FOUND`.
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, code: "NOT_FOUND", message: message.into() }
    }

    /// 409 `ABORTED`: a concurrent change won (the stale-handle conflict).
    pub(crate) fn aborted(message: impl Into<String>) -> Self {
        Self { status: StatusCode::CONFLICT, code: "ABORTED", message: message.into() }
    }

    /// 400 `FAILED_PRECONDITION`: the server is not set up for the call.
    pub(crate) fn failed_precondition(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, code: "FAILED_PRECONDITION", message: message.into() }
    }

    /// 409 `ALREADY_EXISTS`.
    pub(crate) fn already_exists(message: impl Into<String>) -> Self {
        Self { status: StatusCode::CONFLICT, code: "ALREADY_EXISTS", message: message.into() }
    }

    /// The canonical status name (`NOT_FOUND`, …): the gRPC code.
    #[cfg(feature = "grpc")]
    pub(crate) fn code(&self) -> &'static str {
        self.code
    }

    /// The message, as the REST surface answers it.
    #[cfg(feature = "grpc")]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// 403 `PERMISSION_DENIED`.
    pub(crate) fn denied(message: impl Into<String>) -> Self {
        Self { status: StatusCode::FORBIDDEN, code: "PERMISSION_DENIED", message: message.into() }
    }
}

impl From<ApiError> for GoogleError {
    fn from(e: ApiError) -> Self {
        let message = e.to_string();
        let (status, code) = match e {
            ApiError::BadRequest(_) | ApiError::TooLarge(_) | ApiError::Unprocessable(_) => {
                (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT")
            }
            ApiError::Timeout(_) => (StatusCode::REQUEST_TIMEOUT, "DEADLINE_EXCEEDED"),
            ApiError::Unauthorized(_) | ApiError::InvalidToken(_) => (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "PERMISSION_DENIED"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "ABORTED"),
            ApiError::NotImplemented(_) => (StatusCode::NOT_IMPLEMENTED, "UNIMPLEMENTED"),
            ApiError::Unavailable(_) => {
                tracing::warn!(error = %message, "storage unavailable");
                return Self {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    code: "UNAVAILABLE",
                    message: "The session store is unavailable; retry later.".into(),
                };
            }
            ApiError::Internal(_) | ApiError::Agent(_) | ApiError::BadGateway(_) => {
                tracing::error!(error = %message, "internal error");
                return Self {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    code: "INTERNAL",
                    message: "Internal error".into(),
                };
            }
        };
        Self { status, code, message }
    }
}

impl From<agentstate::Error> for GoogleError {
    fn from(e: agentstate::Error) -> Self {
        match &e {
            agentstate::Error::Conflict { kind: agentstate::ConflictKind::DuplicateEventId { .. } } => {
                Self::already_exists(e.to_string())
            }
            agentstate::Error::NotFound { .. } => Self::not_found(e.to_string()),
            _ => ApiError::from(e).into(),
        }
    }
}

impl IntoResponse for GoogleError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.status.as_u16(), "message": self.message, "status": self.code}});
        (self.status, Json(body)).into_response()
    }
}

/// Middleware of the managed-service routes: authenticates the request (`Authorization: Bearer`
/// or `x-goog-api-key`) and checks the engine (the app) in the path, if it names one; the
/// handler checks the user once it knows it.
pub(crate) async fn authorize_engine(
    State(tokens): State<Arc<Tokens>>,
    Path(params): Path<HashMap<String, String>>,
    mut request: Request,
    next: Next,
) -> Response {
    let engine = params.get("engine");
    let checked = tokens
        .authenticate(request.headers())
        .await
        .and_then(|permit| engine.map_or(Ok(()), |engine| permit.check_app(engine)).map(|()| permit));
    match checked {
        Ok(permit) => {
            request.extensions_mut().insert(permit);
            next.run(request).await
        }
        Err(denied) => GoogleError::from(denied).into_response(),
    }
}
