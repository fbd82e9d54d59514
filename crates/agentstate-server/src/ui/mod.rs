//! The session inspector, `/ui`: apps → users → sessions, a session's timeline with the state as
//! of any event, live updates, and the operator's actions. Server-rendered HTML (maud, which
//! escapes everything it shows) and one small script; the binary serves all of it.
//!
//! With access tokens, `/ui/login` takes a token and keeps it in an HttpOnly, SameSite=Strict
//! cookie; every page then shows only what that token may read. Forms that change data also
//! carry a per-process secret, so another site cannot make a browser submit them (the server
//! without tokens listens on loopback, where that would otherwise be possible).

mod artifacts;
mod login;
mod memories;
mod page;

pub(crate) use login::{authorize, login, login_page, logout};
pub(crate) use memories::memories;

use agentstate::history::{ForkSession, HistoryAt};
use agentstate::{GetSessionConfig, ListEvents, ListSessions, SessionKey, SessionService};
use axum::extract::{Form, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use crate::auth::Permit;
use crate::state::AppState;
use login::check_csrf;
use page::{Coverage, event_row, layout, preview, problem, seg, state_panel};

/// Events per timeline page.
const PAGE: usize = 100;
/// Sessions per list page.
const LIST_PAGE: usize = 50;
type Page = Result<Html<String>, Refused>;

/// A page that answers something else than the page asked for (an error, a redirect).
pub(crate) struct Refused(Box<Response>);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        *self.0
    }
}

impl From<Response> for Refused {
    fn from(response: Response) -> Self {
        Self(Box::new(response))
    }
}

fn failure(status: StatusCode, csrf: &str, message: &str) -> Refused {
    let body = layout("Error", &[], csrf, &problem(message));
    (status, Html(body.into_string())).into_response().into()
}

fn backend(state: &AppState, e: &agentstate::Error) -> Refused {
    let status = match e.kind() {
        agentstate::ErrorKind::NotFound => StatusCode::NOT_FOUND,
        agentstate::ErrorKind::InvalidArgument => StatusCode::BAD_REQUEST,
        agentstate::ErrorKind::Conflict | agentstate::ErrorKind::AlreadyExists => StatusCode::CONFLICT,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    failure(status, state.ui_secret(), &e.to_string())
}

fn key(state: &AppState, app: &str, user: &str, id: &str) -> Result<SessionKey, Refused> {
    SessionKey::new(app, user, id).map_err(|e| backend(state, &e))
}

/// `GET /`: the inspector.
pub(crate) async fn root() -> Redirect {
    Redirect::to("/ui")
}

/// `GET /ui/assets/{file}`.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "inspector.css" => (page::CSS, "text/css; charset=utf-8"),
        "inspector.js" => (page::JS, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, Html("<p>No such file.</p>")).into_response(),
    };
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// `GET /ui`: the apps the caller may read.
pub(crate) async fn apps(State(state): State<AppState>, axum::Extension(permit): axum::Extension<Permit>) -> Page {
    let apps = state.service().list_apps().await.map_err(|e| backend(&state, &e))?;
    let apps: Vec<String> = apps.into_iter().filter(|a| permit.covers_app(a)).collect();
    let body = html! {
        h1 { "Apps" }
        @if apps.is_empty() { p.empty { "No sessions yet." } }
        ul.list { @for app in &apps { li { a href={ "/ui/apps/" (seg(app)) } { (app) } } } }
    };
    Ok(Html(layout("Apps", &[("apps".into(), None)], state.ui_secret(), &body).into_string()))
}

#[derive(Deserialize, Default)]
pub(crate) struct Filter {
    user: Option<String>,
    session: Option<String>,
    page: Option<usize>,
    /// A user's sessions page: a filter in Agent Engine's syntax.
    filter: Option<String>,
}

/// `GET /ui/apps/{app}`: its users, or the sessions a filter finds.
pub(crate) async fn users(
    State(state): State<AppState>,
    axum::Extension(permit): axum::Extension<Permit>,
    Path(app): Path<String>,
    Query(filter): Query<Filter>,
) -> Page {
    let service = state.service();
    let crumbs = [("apps".to_owned(), Some("/ui".to_owned())), (app.clone(), None)];
    let form = html! {
        form.filter method="get" {
            input name="user" placeholder="user id" value=(filter.user.as_deref().unwrap_or(""));
            input name="session" placeholder="session id" value=(filter.session.as_deref().unwrap_or(""));
            button { "Find" }
        }
    };
    if let Some(id) = filter.session.as_deref().filter(|s| !s.is_empty()) {
        let found = service.find_sessions(&app, id).await.map_err(|e| backend(&state, &e))?;
        let found: Vec<_> = found.into_iter().filter(|k| permit.check(&app, k.user_id()).is_ok()).collect();
        let body = html! {
            h1 { "Sessions called " code { (id) } }
            (form)
            @if found.is_empty() { p.empty { "None." } }
            ul.list { @for k in &found { li { a href=(session_path(k)) { (k.user_id()) " / " (k.session_id()) } } } }
        };
        return Ok(Html(layout(&app, &crumbs, state.ui_secret(), &body).into_string()));
    }
    if let Some(user) = filter.user.as_deref().filter(|u| !u.is_empty()) {
        return Err(Redirect::to(&format!("/ui/apps/{}/users/{}", seg(&app), seg(user))).into_response().into());
    }
    let users = service.list_users(&app).await.map_err(|e| backend(&state, &e))?;
    let users: Vec<String> = users.into_iter().filter(|u| permit.check(&app, u).is_ok()).collect();
    let page = filter.page.unwrap_or(1).max(1);
    let shown: Vec<&String> = users.iter().skip((page - 1) * LIST_PAGE).take(LIST_PAGE).collect();
    let body = html! {
        h1 { "Users of " (app) }
        (form)
        @if users.is_empty() { p.empty { "No users." } }
        ul.list { @for user in &shown { li { a href={ "/ui/apps/" (seg(&app)) "/users/" (seg(user)) } { (user) } } } }
        (pager(page, users.len(), LIST_PAGE, "?page="))
    };
    Ok(Html(layout(&app, &crumbs, state.ui_secret(), &body).into_string()))
}

fn pager(page: usize, total: usize, size: usize, link: &str) -> Markup {
    let pages = total.div_ceil(size).max(1);
    html! {
        @if pages > 1 {
            nav.pager {
                @if page > 1 { a href={ (link) (page - 1) } rel="prev" { "‹ previous" } }
                span { "page " (page) " of " (pages) }
                @if page < pages { a href={ (link) (page + 1) } rel="next" { "next ›" } }
            }
        }
    }
}

fn session_path(key: &SessionKey) -> String {
    format!("/ui/apps/{}/users/{}/sessions/{}", seg(key.app_name()), seg(key.user_id()), seg(key.session_id()))
}

/// `GET /ui/apps/{app}/users/{user}`: the user's sessions, newest first.
pub(crate) async fn sessions(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    Query(filter): Query<Filter>,
) -> Page {
    let service = state.service();
    let page = filter.page.unwrap_or(1).max(1);
    let text = filter.filter.unwrap_or_default();
    let parsed = agentstate::filter::parse_session_filter(&text)
        .map_err(|e| failure(StatusCode::BAD_REQUEST, state.ui_secret(), &e.to_string()))?;
    // One page, newest first, from the store; counted there.
    let request = ListSessions::user(&app, &user)
        .filter(parsed.filter)
        .newest_first()
        .offset((page - 1).saturating_mul(LIST_PAGE))
        .page_size(LIST_PAGE)
        .count();
    let listed = service.list_sessions(request).await.map_err(|e| backend(&state, &e))?;
    let total = listed.total_size.unwrap_or_default();
    let shown = listed.sessions;
    let mut counts = Vec::with_capacity(shown.len());
    for s in &shown {
        counts.push(service.count_events(s.key()).await.map_err(|e| backend(&state, &e))?.unwrap_or_default());
    }
    let crumbs = [
        ("apps".to_owned(), Some("/ui".to_owned())),
        (app.clone(), Some(format!("/ui/apps/{}", seg(&app)))),
        (user.clone(), None),
    ];
    let body = html! {
        h1 { "Sessions of " (user) }
        p { a href=(format!("/ui/apps/{}/users/{}/memories", seg(&app), seg(&user))) { "Memories of " (user) " →" } }
        form.search method="get" {
            input type="search" name="filter" value=(text) placeholder=r#"filter, e.g. labels.team="red" AND state.stage=2"#;
            button type="submit" { "Filter" }
        }
        @if total == 0 { p.empty { "No sessions." } }
        table.sessions {
            thead { tr { th { "session" } th { "last update" } th { "events" } th { "state" } } }
            tbody {
                @for (s, count) in shown.iter().zip(&counts) {
                    tr {
                        td {
                            a href=(session_path(s.key())) { (s.id()) }
                            @if let Some(name) = &s.attributes().display_name { " " span.name { (name) } }
                            @for (k, v) in &s.attributes().labels { " " span.label { (k) "=" (v) } }
                        }
                        td { time { (crate::expiry::rfc3339(s.last_update_micros())) } }
                        td.num { (count) }
                        td.preview { (preview(s.state().all())) }
                    }
                }
            }
        }
        (pager(page, total, LIST_PAGE, &format!("?filter={}&page=", seg(&text))))
    };
    Ok(Html(layout(&user, &crumbs, state.ui_secret(), &body).into_string()))
}

#[derive(Deserialize, Default)]
pub(crate) struct SessionQuery {
    page: Option<usize>,
    at: Option<String>,
}

/// `GET /ui/apps/{app}/users/{user}/sessions/{id}`: the timeline (the newest page first) and the
/// state as of the selected event.
pub(crate) async fn session(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Query(query): Query<SessionQuery>,
) -> Page {
    let service = state.service();
    let key = key(&state, &app, &user, &id)?;
    let not_found =
        || failure(StatusCode::NOT_FOUND, state.ui_secret(), &format!("No session {key} (deleted or expired)."));
    let total = service.count_events(&key).await.map_err(|e| backend(&state, &e))?.ok_or_else(not_found)?;
    let pages = total.div_ceil(PAGE).max(1);
    let page = query.page.unwrap_or(pages).clamp(1, pages);
    let first = (page - 1) * PAGE;
    let events = if page == pages {
        let window = GetSessionConfig::recent(total - first);
        let session =
            service.get_session(&key, window).await.map_err(|e| backend(&state, &e))?.ok_or_else(not_found)?;
        session.events().iter().cloned().collect::<Vec<_>>()
    } else {
        events_at(service, &key, first, PAGE).await.map_err(|e| backend(&state, &e))?
    };
    let coverage = coverage(service, &key).await.map_err(|e| backend(&state, &e))?;
    let base = session_path(&key);
    let selected = query.at.clone().or_else(|| events.last().map(|e| e.id.clone()));
    let panel = state_fragment(&state, &key, selected.as_deref()).await?;
    let artifacts = artifacts::panel(&state, &key).await;
    let crumbs = [
        ("apps".to_owned(), Some("/ui".to_owned())),
        (app.clone(), Some(format!("/ui/apps/{}", seg(&app)))),
        (user.clone(), Some(format!("/ui/apps/{}/users/{}", seg(&app), seg(&user)))),
        (id.clone(), None),
    ];
    let last = events.last().map(|e| format!("{}:{}", e.time().micros(), e.id));
    let body = html! {
        div.session data-base=(base) data-live=[(page == pages).then_some("1")] data-after=[last] {
            section.timeline {
                header {
                    h1 { "Session " code { (id) } }
                    span.count { (total) " events" }
                    form.inline method="post" action={ (base) "/delete" } data-confirm={ "Delete session " (id) " and its events?" } {
                        input type="hidden" name="csrf" value=(state.ui_secret());
                        button.danger { "Delete session" }
                    }
                }
                @if !events.is_empty() {
                    input.scrub type="range" min="0" max=(events.len() - 1) value=(events.len() - 1) aria-label="Scrub through the events";
                }
                (pager(page, total, PAGE, "?page="))
                ol.events start=(first + 1) {
                    @for (i, event) in events.iter().enumerate() {
                        (event_row(event, first + i, selected.as_deref() == Some(event.id.as_str()), &base, &coverage))
                    }
                }
                @if events.is_empty() { p.empty { "No events yet. New ones appear here as they are appended." } }
                (artifacts)
            }
            (panel)
        }
    };
    Ok(Html(layout(&id, &crumbs, state.ui_secret(), &body).into_string()))
}

/// The session's summaries and what they cover, read from every event's facts (the stored text
/// where the store keeps it, no event built).
async fn coverage(service: &agentstate::SessionService, key: &SessionKey) -> agentstate::Result<Coverage> {
    use agentstate::compaction::Facts;
    let Some(loaded) = service.get_session_stored(key, GetSessionConfig::default()).await? else {
        return Ok(Coverage::default());
    };
    let facts: Vec<Facts> = match &loaded.stored_events {
        Some(stored) => stored.iter().map(Facts::of_stored).collect(),
        None => loaded.session.events().iter().map(Facts::of).collect(),
    };
    Ok(Coverage::of(&facts))
}

/// `count` events from position `first` (from 0), oldest first.
async fn events_at(
    service: &SessionService,
    key: &SessionKey,
    first: usize,
    count: usize,
) -> agentstate::Result<Vec<agentstate::Event>> {
    let mut skipped = 0;
    let mut out = Vec::with_capacity(count);
    let mut request = ListEvents { page_size: agentstate::MAX_EVENT_PAGE, ..ListEvents::default() };
    loop {
        let Some(page) = service.list_events(key, request.clone()).await? else { return Ok(out) };
        for event in page.events {
            if skipped < first {
                skipped += 1;
            } else if out.len() < count {
                out.push(event);
            }
        }
        match page.next_page_token {
            Some(token) if out.len() < count => request.page_token = Some(token),
            _ => return Ok(out),
        }
    }
}

/// The state panel as of `at` (the session's creation when `None`), with its actions.
async fn state_fragment(state: &AppState, key: &SessionKey, at: Option<&str>) -> Result<Markup, Refused> {
    let service = state.service();
    let question = at.map_or(HistoryAt::Creation, |id| HistoryAt::AfterEvent(id.to_owned()));
    let found = match service.state_at(key, question).await {
        Ok(found) => found,
        Err(e) => return Ok(html! { section.state id="state" { (problem(&e.to_string())) } }),
    };
    let Some(found) = found else {
        return Err(failure(StatusCode::NOT_FOUND, state.ui_secret(), &format!("No session {key}.")));
    };
    let diff = match at {
        Some(id) => service.event_diff(key, id).await.ok().flatten(),
        None => None,
    };
    let base = session_path(key);
    let csrf = state.ui_secret();
    let actions = match (&diff, at) {
        (Some(diff), Some(id)) => html! {
            div.actions {
                form.inline method="post" action={ (base) "/rewind" }
                    data-confirm={ "Rewind the session to before invocation " (diff.invocation_id) "?" } {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="invocation" value=(diff.invocation_id);
                    button { "Rewind before this invocation" }
                }
                form.inline method="post" action={ (base) "/fork" } data-confirm="Fork a new session with the history up to this event?" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="at" value=(id);
                    button { "Fork here" }
                }
            }
        },
        _ => html! {},
    };
    Ok(state_panel(&found, diff.as_ref(), &actions))
}

#[derive(Deserialize)]
pub(crate) struct AtQuery {
    at: Option<String>,
}

/// `GET …/sessions/{id}/state?at=EVENT`: the state panel alone, for the page's script.
pub(crate) async fn state(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Query(query): Query<AtQuery>,
) -> Page {
    let key = key(&state, &app, &user, &id)?;
    let panel = state_fragment(&state, &key, query.at.as_deref().filter(|a| !a.is_empty())).await?;
    Ok(Html(panel.into_string()))
}

#[derive(Deserialize)]
pub(crate) struct AfterQuery {
    after: Option<String>,
}

/// `GET …/sessions/{id}/live?after=MICROS:ID`: the events appended since, as timeline rows (JSON:
/// `html`, `after`, `count`), for the page's script to add.
pub(crate) async fn live(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Query(query): Query<AfterQuery>,
) -> Response {
    let key = match SessionKey::new(app, user, id) {
        Ok(key) => key,
        Err(e) => {
            return (StatusCode::BAD_REQUEST, axum::Json(serde_json::json!({"detail": e.to_string()}))).into_response();
        }
    };
    let service = state.service();
    let after =
        query.after.as_deref().and_then(|a| a.split_once(':')).and_then(|(t, id)| Some((t.parse::<i64>().ok()?, id)));
    let since = after.map(|(t, _)| agentstate::Timestamp::from_micros(t));
    let request = ListEvents { page_size: 200, after_timestamp: since, ..ListEvents::default() };
    let page = match service.list_events(&key, request).await {
        Ok(Some(page)) => page,
        Ok(None) => return (StatusCode::NOT_FOUND, axum::Json(serde_json::json!({"gone": true}))).into_response(),
        Err(e) => return backend(&state, &e).into_response(),
    };
    let total = service.count_events(&key).await.ok().flatten().unwrap_or_default();
    let new: Vec<_> = page.events.iter().filter(|e| after.is_none_or(|(_, last)| e.id != last)).collect();
    let base = session_path(&key);
    let first = total.saturating_sub(new.len());
    // New events are covered by no summary yet; a new summary shows its range.
    let rows = html! { @for (i, e) in new.iter().enumerate() { (event_row(e, first + i, false, &base, &Coverage::default())) } };
    let next = new.last().map(|e| format!("{}:{}", e.time().micros(), e.id)).or(query.after);
    axum::Json(serde_json::json!({"html": rows.into_string(), "after": next, "count": total})).into_response()
}

#[derive(Deserialize)]
pub(crate) struct ActionForm {
    csrf: String,
    invocation: Option<String>,
    at: Option<String>,
}

/// The session a form action names, once its CSRF token checks out.
fn action_key(state: &AppState, form: &ActionForm, app: &str, user: &str, id: &str) -> Result<SessionKey, Refused> {
    check_csrf(state, &form.csrf)?;
    key(state, app, user, id)
}

/// `POST …/sessions/{id}/delete`.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Form(form): Form<ActionForm>,
) -> Result<Response, Refused> {
    let key = action_key(&state, &form, &app, &user, &id)?;
    state.service().delete_session(&key).await.map_err(|e| backend(&state, &e))?;
    Ok(Redirect::to(&format!("/ui/apps/{}/users/{}", seg(&app), seg(&user))).into_response())
}

/// `POST …/sessions/{id}/rewind`.
pub(crate) async fn rewind(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Form(form): Form<ActionForm>,
) -> Result<Response, Refused> {
    let key = action_key(&state, &form, &app, &user, &id)?;
    let service = state.service();
    let invocation = form.invocation.unwrap_or_default();
    let outcome = async {
        let mut session = service
            .get_session(&key, GetSessionConfig::recent(0))
            .await?
            .ok_or_else(|| agentstate::Error::NotFound { session_id: key.session_id().to_owned() })?;
        service.rewind(&mut session, &invocation).await
    };
    let event = outcome.await.map_err(|e| backend(&state, &e))?;
    Ok(Redirect::to(&format!("{}?at={}", session_path(&key), seg(&event.id))).into_response())
}

/// `POST …/sessions/{id}/fork`.
pub(crate) async fn fork(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Form(form): Form<ActionForm>,
) -> Result<Response, Refused> {
    let source = action_key(&state, &form, &app, &user, &id)?;
    let request = ForkSession { source, at_event_id: form.at.unwrap_or_default(), session_id: None };
    let fork = state.service().fork_session(request).await.map_err(|e| backend(&state, &e))?;
    Ok(Redirect::to(&session_path(fork.key())).into_response())
}
