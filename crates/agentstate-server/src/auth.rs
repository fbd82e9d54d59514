//! Bearer-token access control: each token may touch some apps (or all) and, optionally, only
//! some users in them. A request outside its grant gets 403 and touches nothing.
//!
//! Configuration (a file given to `--tokens-file`, or the same JSON in `AGENTSTATE_TOKENS`):
//!
//! ```json
//! {"tokens": [
//!   {"token": "s3cret-admin", "apps": "*"},
//!   {"token": "s3cret-support", "apps": ["support_bot"], "users": ["alice", "bob"]}
//! ]}
//! ```

use std::collections::HashMap;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::error::ApiError;
use crate::sessions::AppState;

/// What one token may touch.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Grant {
    /// The token, sent as `Authorization: Bearer <token>`.
    pub token: String,
    /// `"*"` for every app, or a list of app names.
    pub apps: Apps,
    /// Only these users' sessions; absent for every user.
    #[serde(default)]
    pub users: Option<Vec<String>>,
}

/// The apps a grant covers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Apps {
    /// `"*"`.
    All(String),
    /// These apps.
    Only(Vec<String>),
}

/// Every configured token. Empty: no authentication (the server then refuses non-loopback
/// addresses unless told otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Tokens {
    /// The grants.
    pub tokens: Vec<Grant>,
}

/// Why a token configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// Not the documented JSON.
    #[error(
        "the token configuration is not valid JSON of the form {{\"tokens\": [{{\"token\": …, \"apps\": \"*\" or [...], \"users\": [...]}}]}}: {0}"
    )]
    Parse(#[from] serde_json::Error),
    /// A grant that cannot work.
    #[error("token #{index}: {problem}")]
    Invalid {
        /// Position in the list, from 1.
        index: usize,
        /// What is wrong.
        problem: String,
    },
}

impl Tokens {
    /// Parses and checks a configuration.
    pub fn parse(json: &str) -> Result<Self, TokensError> {
        let tokens: Tokens = serde_json::from_str(json)?;
        for (i, grant) in tokens.tokens.iter().enumerate() {
            let invalid = |problem: &str| TokensError::Invalid { index: i + 1, problem: problem.to_owned() };
            if grant.token.len() < 16 {
                return Err(invalid("tokens must be at least 16 characters long"));
            }
            if let Apps::All(s) = &grant.apps
                && s != "*"
            {
                return Err(invalid("apps must be \"*\" or a list of app names"));
            }
        }
        Ok(tokens)
    }

    /// Whether any token is configured.
    pub fn is_enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    fn find(&self, presented: &str) -> Option<&Grant> {
        // Compare with every token in constant time, so timing reveals nothing about them.
        let mut found = None;
        for grant in &self.tokens {
            if constant_time_eq(grant.token.as_bytes(), presented.as_bytes()) {
                found = Some(grant);
            }
        }
        found
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Middleware for the session routes: checks the bearer token against the path's app and user.
pub(crate) async fn authorize(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
    next: Next,
) -> Response {
    let app = params.get("app_name").map(String::as_str).unwrap_or_default();
    let user = params.get("user_id").map(String::as_str).unwrap_or_default();
    match permit(&state.tokens, request.headers(), app, user) {
        Ok(()) => next.run(request).await,
        Err(denied) => denied.into_response(),
    }
}

/// Checks the request's bearer token against `app` and `user` (for routes that name them in the
/// body, such as `/run`). `Err` is the 401 or 403 to send.
pub(crate) fn permit(tokens: &Tokens, headers: &HeaderMap, app: &str, user: &str) -> Result<(), ApiError> {
    if !tokens.is_enabled() {
        return Ok(());
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(grant) = presented.and_then(|t| tokens.find(t)) else {
        return Err(ApiError::Unauthorized(
            "Missing or unknown bearer token: send `Authorization: Bearer <token>`.".into(),
        ));
    };
    if let Apps::Only(apps) = &grant.apps
        && !apps.iter().any(|a| a == app)
    {
        return Err(ApiError::Forbidden(format!("This token may not access app {app:?}.")));
    }
    if let Some(users) = &grant.users
        && !users.iter().any(|u| u == user)
    {
        return Err(ApiError::Forbidden(format!("This token may not access the sessions of user {user:?}.")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_checks_grants() {
        let t = Tokens::parse(r#"{"tokens": [{"token": "0123456789abcdef", "apps": "*"}, {"token": "fedcba9876543210", "apps": ["a"], "users": ["u"]}]}"#).unwrap();
        assert!(t.is_enabled());
        assert_eq!(t.find("fedcba9876543210").map(|g| &g.apps), Some(&Apps::Only(vec!["a".into()])));
        assert!(t.find("fedcba987654321").is_none());
        assert!(Tokens::parse(r#"{"tokens": [{"token": "short", "apps": "*"}]}"#).is_err());
        assert!(Tokens::parse(r#"{"tokens": [{"token": "0123456789abcdef", "apps": "some"}]}"#).is_err());
        assert!(Tokens::parse("{").is_err());
    }
}
