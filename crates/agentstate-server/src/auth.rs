//! Bearer-token access control. Each token may touch some apps (or all) and, optionally, only
//! some users in them. Every route says in the route table what it needs ([`Access`]); with no
//! tokens configured, nothing is checked (the server then listens on loopback only, unless told
//! otherwise).
//!
//! Configuration (a file given to `--tokens-file`, or the same JSON in `AGENTSTATE_TOKENS`):
//!
//! ```json
//! {"tokens": [
//!   {"token": "s3cret-admin-0123456789", "apps": "*", "admin": true},
//!   {"token": "s3cret-support-0123456789", "apps": ["support_bot"], "users": ["alice", "bob"]}
//! ]}
//! ```
//!
//! Tokens never show in `Debug`, logs or error messages. Refused attempts are logged (without
//! the token) and counted in `agentstate_auth_failures_total`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::jwt::Jwt;

/// What a route needs from the caller when tokens are configured: the route table's
/// authentication column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Nothing: liveness and readiness probes.
    Public,
    /// Any valid token. Routes that list things (`/list-apps`) show only what the token may touch.
    Token,
    /// A token that may touch the app and user named in the path.
    PathAppUser,
    /// A token that may touch the app named in the path and every user of it.
    PathApp,
    /// A valid token; the handler checks it against the app and user named in the body, after
    /// authenticating and before looking anything up.
    BodyAppUser,
    /// A token for the engine (the app) in the path of a managed-service route; the handler
    /// checks the user once it knows it (from the body, the filter, or the session).
    EngineUser,
    /// An admin token (`"admin": true`) covering the app in the path: operations on data beyond
    /// one session's, such as erasing a user.
    Admin,
    /// The inspector's pages: a token from its login cookie (or a bearer token) covering the app
    /// and user in the path; without one, the login page.
    Ui,
}

impl Access {
    /// How the OpenAPI document and the README describe it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Public => "none",
            Self::Token => "any valid token",
            Self::PathAppUser => "a token for the app and user in the path",
            Self::PathApp => "a token for the app in the path and all its users",
            Self::BodyAppUser => "a token for the app and user in the body",
            Self::EngineUser => "a token for the engine (app) in the path and the session's user",
            Self::Admin => "an admin token (\"admin\": true) for the app in the path",
            Self::Ui => "the inspector's login cookie (or a bearer token) for the app and user in the path",
        }
    }
}

/// What one token may touch.
#[derive(Debug, Clone, Deserialize)]
struct Grant {
    /// The token, sent as `Authorization: Bearer <token>`.
    token: SecretString,
    /// `"*"` for every app, or a list of app names.
    apps: Apps,
    /// Only these users' sessions; absent for every user.
    #[serde(default)]
    users: Option<Vec<String>>,
    /// May call the admin routes (erasing a user) for its apps.
    #[serde(default)]
    admin: bool,
}

/// The apps a grant covers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum Apps {
    /// `"*"`.
    All(String),
    /// These apps.
    Only(Vec<String>),
}

/// Every configured token. Empty: no authentication.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    tokens: Vec<Grant>,
    /// Requests refused so far: without a token, and with an unknown one (shared by clones).
    #[serde(skip)]
    failures: Arc<[AtomicU64; 2]>,
    /// JWTs of an OpenID provider, beside the static tokens.
    #[serde(skip)]
    jwt: Option<Arc<Jwt>>,
}

/// Why a token configuration is unusable. Its messages never contain a token.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// Not the documented JSON.
    #[error(
        "the token configuration is not valid JSON of the form {{\"tokens\": [{{\"token\": …, \"apps\": \"*\" or [...], \"users\": [...]}}]}} (line {line}, column {column})"
    )]
    Parse {
        /// Where the problem is.
        line: usize,
        /// Where on the line.
        column: usize,
    },
    /// A grant that cannot work.
    #[error("token #{index}: {problem}")]
    Invalid {
        /// Position in the list, from 1.
        index: usize,
        /// What is wrong.
        problem: String,
    },
}

/// What an authenticated request may touch: the grant of its token, or everything when no tokens
/// are configured. Handlers that name the app and user outside the path check them here.
#[derive(Debug, Clone)]
pub(crate) struct Permit {
    apps: Option<Arc<[String]>>,
    users: Option<Arc<[String]>>,
    admin: bool,
}

impl Permit {
    /// Everything (no tokens configured).
    pub(crate) fn all() -> Self {
        Self { apps: None, users: None, admin: true }
    }

    /// A grant's permit: these apps (`None`: every app), these users (`None`: every user).
    pub(crate) fn granted(apps: Option<Vec<String>>, users: Option<Vec<String>>, admin: bool) -> Self {
        Self { apps: apps.map(Into::into), users: users.map(Into::into), admin }
    }

    fn of(grant: &Grant) -> Self {
        let apps = match &grant.apps {
            Apps::All(_) => None,
            Apps::Only(apps) => Some(apps.as_slice().into()),
        };
        Self { apps, users: grant.users.as_deref().map(Into::into), admin: grant.admin }
    }

    /// Whether it covers `app`.
    pub(crate) fn covers_app(&self, app: &str) -> bool {
        self.apps.as_ref().is_none_or(|apps| apps.iter().any(|a| a == app))
    }

    /// Whether it covers every user of the apps it covers.
    pub(crate) fn covers_every_user(&self) -> bool {
        self.users.is_none()
    }

    /// 403 unless it covers `app`.
    pub(crate) fn check_app(&self, app: &str) -> Result<(), ApiError> {
        if !self.covers_app(app) {
            return Err(ApiError::Forbidden(format!("This token may not access app {app:?}.")));
        }
        Ok(())
    }

    /// 403 unless it covers `app` and every user of it.
    pub(crate) fn check_every_user(&self, app: &str) -> Result<(), ApiError> {
        self.check_app(app)?;
        if self.users.is_some() {
            return Err(ApiError::Forbidden(format!("This token may not access every user of app {app:?}.")));
        }
        Ok(())
    }

    /// 403 unless it covers `app` and `user`.
    pub(crate) fn check(&self, app: &str, user: &str) -> Result<(), ApiError> {
        self.check_app(app)?;
        if self.users.as_ref().is_some_and(|users| !users.iter().any(|u| u == user)) {
            return Err(ApiError::Forbidden(format!("This token may not access the sessions of user {user:?}.")));
        }
        Ok(())
    }
}

impl Tokens {
    /// Parses and checks a configuration.
    pub fn parse(json: &str) -> Result<Self, TokensError> {
        // serde's message may quote the input; only its position is reported.
        let tokens: Tokens =
            serde_json::from_str(json).map_err(|e| TokensError::Parse { line: e.line(), column: e.column() })?;
        for (i, grant) in tokens.tokens.iter().enumerate() {
            let invalid = |problem: &str| TokensError::Invalid { index: i + 1, problem: problem.to_owned() };
            if grant.token.expose_secret().len() < 16 {
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

    /// Also accepts JWTs `jwt` verifies, beside the static tokens.
    #[must_use]
    pub fn with_jwt(mut self, jwt: Jwt) -> Self {
        self.jwt = Some(Arc::new(jwt));
        self
    }

    /// Whether any token is configured (static ones, or JWTs).
    pub fn is_enabled(&self) -> bool {
        !self.tokens.is_empty() || self.jwt.is_some()
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    fn find(&self, presented: &str) -> Option<&Grant> {
        // Compare with every token in constant time, so timing reveals nothing about them.
        let mut found = None;
        for grant in &self.tokens {
            if bool::from(grant.token.expose_secret().as_bytes().ct_eq(presented.as_bytes())) {
                found = Some(grant);
            }
        }
        found
    }

    /// The permit of the request's token (`Authorization: Bearer <token>`, or `x-goog-api-key`
    /// as Google's clients send an API key): a static token's grant, or a JWT's when JWTs are
    /// configured; everything without tokens configured, 401 without a valid token.
    pub(crate) async fn authenticate(&self, headers: &HeaderMap) -> Result<Permit, ApiError> {
        if !self.is_enabled() {
            return Ok(Permit::all());
        }
        let bearer =
            headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        let api_key = headers.get("x-goog-api-key").and_then(|v| v.to_str().ok());
        let Some(presented) = bearer.or(api_key).map(str::trim) else {
            self.failures[0].fetch_add(1, Ordering::Relaxed);
            tracing::warn!(reason = "no token", "authentication failed");
            return Err(ApiError::Unauthorized(
                "Missing access token: send `Authorization: Bearer <token>` (or `x-goog-api-key: <token>`).".into(),
            ));
        };
        if let Some(grant) = self.find(presented) {
            return Ok(Permit::of(grant));
        }
        let reason = match &self.jwt {
            Some(jwt) if Jwt::looks_like_jwt(presented) => match jwt.verify(presented).await {
                Ok(grant) => return Ok(Permit::granted(grant.apps, grant.users, grant.admin)),
                Err(reason) => reason,
            },
            _ => "unknown token".to_owned(),
        };
        self.failures[1].fetch_add(1, Ordering::Relaxed);
        tracing::warn!(reason, "authentication failed");
        Err(ApiError::InvalidToken("Unknown or invalid access token.".into()))
    }

    /// Requests refused so far, as `(without a token, with an unknown token)`.
    pub fn failures(&self) -> (u64, u64) {
        (self.failures[0].load(Ordering::Relaxed), self.failures[1].load(Ordering::Relaxed))
    }
}

/// Middleware of [`Access::Token`] and [`Access::BodyAppUser`] routes: authenticates the
/// request; the handler gets its [`Permit`].
pub(crate) async fn authenticate(State(tokens): State<Arc<Tokens>>, mut request: Request, next: Next) -> Response {
    match tokens.authenticate(request.headers()).await {
        Ok(permit) => {
            request.extensions_mut().insert(permit);
            next.run(request).await
        }
        Err(denied) => denied.into_response(),
    }
}

/// Middleware of [`Access::Admin`] routes: an admin token that covers the path's app (and every
/// user of it).
pub(crate) async fn authorize_admin(
    State(tokens): State<Arc<Tokens>>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
    next: Next,
) -> Response {
    let app = params.get("app_name").map(String::as_str).unwrap_or_default();
    let checked = tokens.authenticate(request.headers()).await.and_then(|permit| {
        if !permit.admin || !permit.covers_every_user() {
            return Err(ApiError::Forbidden("This route needs an admin token (\"admin\": true, every user).".into()));
        }
        permit.check_app(app)
    });
    match checked {
        Ok(()) => next.run(request).await,
        Err(denied) => denied.into_response(),
    }
}

/// Middleware of [`Access::PathAppUser`] routes: authenticates the request and checks the path's
/// app and user before the handler runs.
pub(crate) async fn authorize_path(
    State(tokens): State<Arc<Tokens>>,
    Path(params): Path<HashMap<String, String>>,
    mut request: Request,
    next: Next,
) -> Response {
    let app = params.get("app_name").map(String::as_str).unwrap_or_default();
    let checked = tokens.authenticate(request.headers()).await.and_then(|permit| {
        match params.get("user_id") {
            Some(user) => permit.check(app, user)?,
            // A route of the whole app: every user's sessions.
            None if permit.covers_every_user() => permit.check_app(app)?,
            None => {
                return Err(ApiError::Forbidden(format!(
                    "This token may access only some users of app {app:?}; list their sessions one user at a time."
                )));
            }
        }
        Ok(permit)
    });
    match checked {
        Ok(permit) => {
            request.extensions_mut().insert(permit);
            next.run(request).await
        }
        Err(denied) => denied.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        headers
    }

    #[tokio::test]
    async fn parses_and_checks_grants() {
        let t = Tokens::parse(r#"{"tokens": [{"token": "0123456789abcdef", "apps": "*"}, {"token": "fedcba9876543210", "apps": ["a"], "users": ["u"]}]}"#).unwrap();
        assert!(t.is_enabled());
        let permit = t.authenticate(&bearer("fedcba9876543210")).await.unwrap();
        assert!(permit.check("a", "u").is_ok() && permit.check("a", "v").is_err() && permit.check("b", "u").is_err());
        assert!(t.authenticate(&bearer("fedcba987654321")).await.is_err());
        assert!(t.authenticate(&HeaderMap::new()).await.is_err());
        assert!(Tokens::parse(r#"{"tokens": [{"token": "short", "apps": "*"}]}"#).is_err());
        assert!(Tokens::parse(r#"{"tokens": [{"token": "0123456789abcdef", "apps": "some"}]}"#).is_err());
        assert!(Tokens::parse("{").is_err());
    }

    #[test]
    fn tokens_never_show() {
        let secret = "never-show-this-token-0123";
        let t = Tokens::parse(&format!(r#"{{"tokens": [{{"token": "{secret}", "apps": ["a"]}}]}}"#)).unwrap();
        assert!(!format!("{t:?}").contains(secret));
        let bad = Tokens::parse(&format!(r#"{{"tokens": [{{"token": "{secret}", "apps": 7}}]}}"#)).unwrap_err();
        assert!(!bad.to_string().contains(secret) && !format!("{bad:?}").contains(secret), "{bad}");
    }
}
