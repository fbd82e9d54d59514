//! Signing in to the inspector: the login page and cookie, the middleware that turns a request's
//! cookie or bearer token into a permit for the app and user in its path, and the check of the
//! per-process secret that forms carry.

use std::collections::HashMap;

use axum::extract::{Form, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::page::{layout, problem, seg};
use super::{Refused, failure};
use crate::auth::Tokens;
use crate::state::AppState;

/// The login cookie.
const COOKIE: &str = "agentstate_ui";

/// The token a UI request carries: its login cookie, else a bearer token.
fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE).and_then(|rest| rest.strip_prefix('=')).map(str::to_owned))
}

/// Middleware of the inspector's pages: the request's permit (from its login cookie or bearer
/// token), checked against the app and user in the path; without one, the login page.
pub(crate) async fn authorize(
    State(tokens): State<std::sync::Arc<Tokens>>,
    Path(params): Path<HashMap<String, String>>,
    mut request: Request,
    next: Next,
) -> Response {
    let mut headers = request.headers().clone();
    if !headers.contains_key(header::AUTHORIZATION)
        && let Some(token) = cookie_token(&headers)
        && let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}"))
    {
        headers.insert(header::AUTHORIZATION, value);
    }
    // Not signed in yet is not a failed attempt: straight to the sign-in page, unasked.
    let asks = headers.contains_key(header::AUTHORIZATION) || !tokens.is_enabled();
    let permit = match if asks { Some(tokens.authenticate(&headers).await) } else { None } {
        Some(Ok(permit)) => permit,
        _ => {
            let next = request.uri().path().to_owned();
            return Redirect::to(&format!("/ui/login?next={}", seg(&next))).into_response();
        }
    };
    let app = params.get("app_name");
    let checked = match (app, params.get("user_id")) {
        (Some(app), Some(user)) => permit.check(app, user),
        (Some(app), None) => permit.check_app(app),
        _ => Ok(()),
    };
    if let Err(denied) = checked {
        return (
            StatusCode::FORBIDDEN,
            Html(layout("Forbidden", &[], "", &problem(&denied.to_string())).into_string()),
        )
            .into_response();
    }
    request.extensions_mut().insert(permit);
    next.run(request).await
}

pub(super) fn check_csrf(state: &AppState, sent: &str) -> Result<(), Refused> {
    if bool::from(sent.as_bytes().ct_eq(state.ui_secret().as_bytes())) {
        Ok(())
    } else {
        Err(failure(
            StatusCode::FORBIDDEN,
            state.ui_secret(),
            "The form is stale or from another site; reload the page.",
        ))
    }
}

#[derive(Deserialize)]
pub(crate) struct NextQuery {
    next: Option<String>,
    failed: Option<u8>,
}

/// `GET /ui/login`.
pub(crate) async fn login_page(State(state): State<AppState>, Query(query): Query<NextQuery>) -> Html<String> {
    let next = query.next.unwrap_or_else(|| "/ui".to_owned());
    let body = html! {
        section.login {
            h1 { "Sign in" }
            p { "This server has access tokens: give yours to see what it may read." }
            @if query.failed.is_some() { (problem("That token is not one of this server's.")) }
            form method="post" action="/ui/login" {
                input type="hidden" name="next" value=(next);
                label { "Access token " input type="password" name="token" autocomplete="current-password" autofocus required; }
                button type="submit" { "Sign in" }
            }
        }
    };
    Html(layout("Sign in", &[], state.ui_secret(), &body).into_string())
}

#[derive(Deserialize)]
pub(crate) struct LoginForm {
    token: String,
    next: Option<String>,
}

/// `POST /ui/login`: checks the token, keeps it in the login cookie.
pub(crate) async fn login(State(state): State<AppState>, Form(form): Form<LoginForm>) -> Response {
    let mut headers = HeaderMap::new();
    let Ok(value) = HeaderValue::from_str(&format!("Bearer {}", form.token.trim())) else {
        return Redirect::to("/ui/login?failed=1").into_response();
    };
    headers.insert(header::AUTHORIZATION, value);
    if state.tokens().authenticate(&headers).await.is_err() {
        return Redirect::to("/ui/login?failed=1").into_response();
    }
    // Only paths of this inspector: never an open redirect.
    let next = form.next.filter(|n| n.starts_with("/ui") && !n.starts_with("//")).unwrap_or_else(|| "/ui".to_owned());
    let cookie = format!("{COOKIE}={}; Path=/ui; HttpOnly; SameSite=Strict", form.token.trim());
    let mut response = Redirect::to(&next).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /ui/logout`.
pub(crate) async fn logout() -> Response {
    let mut response = Redirect::to("/ui/login").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("agentstate_ui=; Path=/ui; Max-Age=0; HttpOnly; SameSite=Strict"),
    );
    response
}
