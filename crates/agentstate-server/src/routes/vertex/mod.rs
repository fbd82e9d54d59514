//! The Agent Engine Sessions REST surface (Vertex AI, `v1` and `v1beta1`: one implementation),
//! over the same sessions as the ADK routes: a client written for the managed service (ADK for
//! Python's and ADK-Rust's `VertexAiSessionService`, pointed at this server) keeps its sessions
//! here.
//!
//! The engine id is the app. Every route answers under both path forms,
//! `/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/…` and
//! `/{version}/reasoningEngines/{engine}/…`, and names resources in the form it was asked in.
//! Session ids are unique per engine here, as on the managed service: a create whose id any
//! user of the app already has is refused.
//!
//! Two request headers, which the managed service does not know, let agentstate's own client
//! keep every guarantee: `x-agentstate-user-id` (the session's user, which spares a lookup) and
//! `x-agentstate-last-update` (the storage marker its handle was loaded at, in epoch
//! microseconds): an append is then refused with 409 `ABORTED` if the session changed since.
//! Without it, an append is a blind write, retried if another writer got in first.

mod error;
mod request;
mod resource;

use std::collections::HashMap;

use agentstate::filter::{parse_session_filter, parse_session_order};
use agentstate::store::AttributesUpdate;
use agentstate::{CreateSession, Error, GetSessionConfig, ListEvents, ListSessions, MAX_EVENT_PAGE, SessionKey, Value};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;

use error::GoogleError;
pub(crate) use error::authorize_engine;
use resource::Engine;

use super::append;
use crate::auth::Permit;
use crate::limits::{Body, check_path_safe};
use crate::state::AppState;

/// The session's user, sent by agentstate's client.
const USER_HEADER: &str = "x-agentstate-user-id";
/// The storage marker the client's handle was loaded at (epoch microseconds).
const LAST_UPDATE_HEADER: &str = "x-agentstate-last-update";
/// The largest page of sessions or events, and the default.
const PAGE: usize = 100;

type Reply = Result<Json<Value>, GoogleError>;

/// The query of the list routes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageQuery {
    filter: Option<String>,
    order_by: Option<String>,
    page_size: Option<i64>,
    page_token: Option<String>,
}

/// The query of the get route: agentstate's extension that answers the events with the session,
/// read together in one snapshot (the managed service answers them only page by page).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetQuery {
    #[serde(default)]
    agentstate_events: bool,
    agentstate_num_recent_events: Option<usize>,
    agentstate_after: Option<String>,
}

/// The query of the create route.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateQuery {
    session_id: Option<String>,
}

fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, GoogleError> {
    query.map(|Query(q)| q).map_err(|e| GoogleError::invalid(e.body_text()))
}

fn page_size(requested: Option<i64>) -> usize {
    requested.and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0).map_or(PAGE, |n| n.min(PAGE))
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The session `id` of `engine`: the one of the user the client names, or the only one of the
/// app with that id. The caller's token must cover its user.
async fn resolve(
    state: &AppState,
    engine: &Engine,
    id: &str,
    headers: &HeaderMap,
    permit: &Permit,
) -> Result<SessionKey, GoogleError> {
    agentstate::validate_id("session_id", id)?;
    check_path_safe("session_id", id)?;
    let key = match header(headers, USER_HEADER) {
        Some(user) => SessionKey::new(&engine.app, user, id)?,
        None => {
            let mut found = state.service().find_sessions(&engine.app, id).await?;
            match found.len() {
                0 => return Err(not_found(engine, id)),
                1 => found.remove(0),
                _ => {
                    return Err(GoogleError::invalid(format!(
                        "session id {id:?} is used by several users of app {:?}; address it through \
                         /apps/{{app}}/users/{{user}}/sessions/{{id}}",
                        engine.app
                    )));
                }
            }
        }
    };
    permit.check(key.app_name(), key.user_id())?;
    Ok(key)
}

fn not_found(engine: &Engine, id: &str) -> GoogleError {
    GoogleError::not_found(format!("Session {} not found.", engine.session_name(id)))
}

/// `POST …/sessions[?sessionId=ID]`: creates a session; answers a done operation holding it.
pub(crate) async fn create(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    create_query: Result<Query<CreateQuery>, QueryRejection>,
    Body(bytes): Body,
) -> Reply {
    let engine = Engine::from_params(&params)?;
    let requested_id = query(create_query)?.session_id.filter(|id| !id.is_empty());
    let new = request::new_session(request::body(&bytes)?)?;
    permit.check(&engine.app, &new.user_id)?;
    state.limits().check_state("sessionState", &new.state)?;
    let id = match requested_id {
        Some(id) => {
            check_path_safe("session_id", &id)?;
            agentstate::validate_id("session_id", &id)?;
            if !state.service().find_sessions(&engine.app, &id).await?.is_empty() {
                return Err(already_exists(&engine, &id));
            }
            id
        }
        None => resource::new_session_id(),
    };
    let request =
        CreateSession { attributes: new.attributes, ttl: new.ttl, ..CreateSession::new(&engine.app, &new.user_id) }
            .id(&id)
            .with_state(new.state);
    match state.service().create_session(request).await {
        Ok(session) => Ok(Json(engine.session_operation(&session))),
        Err(Error::AlreadyExists { .. }) => Err(already_exists(&engine, &id)),
        Err(e) => Err(e.into()),
    }
}

/// A create with an id the engine has: v1beta1 answers 400 `INVALID_ARGUMENT`, as the managed
/// service was seen to; v1 answers 409 `ALREADY_EXISTS`, the status ADK-Rust's v1 client handles.
fn already_exists(engine: &Engine, id: &str) -> GoogleError {
    let message = format!("Session with user-provided ID '{id}' already exists");
    if engine.version == "v1" { GoogleError::already_exists(message) } else { GoogleError::invalid(message) }
}

/// `GET …/sessions[?filter=…][&orderBy=update_time desc][&pageSize][&pageToken]`: sessions with
/// their merged state, no events, oldest update first (or as `orderBy` says: `update_time` or
/// `create_time`, `asc` or `desc`), of those the filter admits (`user_id`, `display_name`,
/// `labels.KEY`, `state.KEY`, `update_time` and `create_time` ranges; [`agentstate::filter`]).
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    page_query: Result<Query<PageQuery>, QueryRejection>,
) -> Reply {
    let engine = Engine::from_params(&params)?;
    let page_query = query(page_query)?;
    let parsed = parse_session_filter(page_query.filter.as_deref().unwrap_or_default()).map_err(GoogleError::from)?;
    let (order_by, newest_first) =
        parse_session_order(page_query.order_by.as_deref().unwrap_or_default()).map_err(GoogleError::from)?;
    let user = parsed.user_id;
    match &user {
        Some(user) => permit.check(&engine.app, user)?,
        None if !permit.covers_every_user() => {
            return Err(GoogleError::denied("This token may list only its users' sessions: filter by user_id."));
        }
        None => {}
    }
    let request = ListSessions {
        app_name: engine.app.clone(),
        user_id: user,
        page_size: Some(page_size(page_query.page_size)),
        page_token: page_query.page_token.filter(|t| !t.is_empty()),
        order_by,
        newest_first,
        filter: parsed.filter,
        ..ListSessions::default()
    };
    let page = state.service().list_sessions(request).await?;
    let sessions: Vec<Value> = page.sessions.iter().map(|s| engine.session(s)).collect();
    let mut body = json!({ "sessions": sessions });
    if let Some(token) = page.next_page_token {
        body["nextPageToken"] = json!(token);
    }
    Ok(Json(body))
}

/// `GET …/sessions/{id}`: the session with its merged state; with `agentstateEvents`, also its
/// events (the newest `agentstateNumRecentEvents`, those at or after `agentstateAfter`).
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    headers: HeaderMap,
    get_query: Result<Query<GetQuery>, QueryRejection>,
) -> Reply {
    let engine = Engine::from_params(&params)?;
    let id = params.get("session").map(String::as_str).unwrap_or_default();
    let get_query = query(get_query)?;
    let config = if get_query.agentstate_events {
        let after =
            get_query.agentstate_after.as_deref().map(|t| resource::parse_time(t, "agentstateAfter")).transpose()?;
        GetSessionConfig { num_recent_events: get_query.agentstate_num_recent_events, after_timestamp: after }
    } else {
        GetSessionConfig::recent(0)
    };
    let key = resolve(&state, &engine, id, &headers, &permit).await?;
    let session = state.service().get_session(&key, config).await?;
    let session = session.ok_or_else(|| not_found(&engine, id))?;
    let mut body = engine.session(&session);
    if get_query.agentstate_events {
        body["agentstateEvents"] = session.events().iter().map(|e| engine.raw_event(id, e)).collect();
    }
    Ok(Json(body))
}

/// `DELETE …/sessions/{id}`: answers a done operation.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    headers: HeaderMap,
) -> Reply {
    let engine = Engine::from_params(&params)?;
    let id = params.get("session").map(String::as_str).unwrap_or_default();
    let key = resolve(&state, &engine, id, &headers, &permit).await?;
    state.service().delete_session(&key).await?;
    Ok(Json(engine.empty_operation()))
}

/// The query of `PATCH …/sessions/{id}`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PatchQuery {
    update_mask: Option<String>,
}

/// `PATCH …/sessions/{id}[?updateMask=display_name,labels,expire_time]`: sets the session's
/// display name, labels and expiry (`expireTime` or `ttl`) as the mask says (without one, the
/// fields the body has; a masked field the body lacks is cleared), and answers the session, as
/// the managed service's `sessions.patch` does. State and last update time do not move.
pub(crate) async fn patch(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    headers: HeaderMap,
    patch_query: Result<Query<PatchQuery>, QueryRejection>,
    Body(bytes): Body,
) -> Reply {
    let engine = Engine::from_params(&params)?;
    let id = params.get("session").map(String::as_str).unwrap_or_default();
    let patch = request::session_patch(request::body(&bytes)?, query(patch_query)?.update_mask.as_deref())?;
    let key = resolve(&state, &engine, id, &headers, &permit).await?;
    let service = state.service();
    let missing = |e: Error| match e {
        Error::NotFound { .. } => not_found(&engine, id),
        e => e.into(),
    };
    if patch.attributes != AttributesUpdate::default() {
        service.set_attributes(&key, patch.attributes).await.map_err(missing)?;
    }
    if let Some(expiry) = patch.expiry {
        let at = match expiry {
            request::Expiry::In(ttl) => Some(agentstate::clock::after(service.now_micros(), ttl)),
            request::Expiry::At(micros) => Some(micros),
            request::Expiry::Never => None,
        };
        service.set_expire_time(&key, at.map(agentstate::store::micros_to_secs)).await.map_err(missing)?;
    }
    let session =
        service.get_session(&key, GetSessionConfig::recent(0)).await?.ok_or_else(|| not_found(&engine, id))?;
    Ok(Json(engine.session(&session)))
}

/// `POST …/sessions/{id}:appendEvent`: appends the event and applies its state delta. Answers
/// `{}`, as the managed service does.
pub(crate) async fn append_event(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    headers: HeaderMap,
    Body(bytes): Body,
) -> Reply {
    let engine = Engine::from_params(&params)?;
    let segment = params.get("session").map(String::as_str).unwrap_or_default();
    let Some(id) = segment.strip_suffix(":appendEvent") else {
        return Err(GoogleError::not_found(format!("no method {segment:?}; sessions answer :appendEvent")));
    };
    let event = request::appended(request::body(&bytes)?)?;
    state.limits().check_state("actions.stateDelta", &event.actions.state_delta)?;
    let expected = header(&headers, LAST_UPDATE_HEADER)
        .map(|v| v.parse::<i64>().map_err(|_| GoogleError::invalid(format!("{LAST_UPDATE_HEADER} must be an integer"))))
        .transpose()?;
    let key = resolve(&state, &engine, id, &headers, &permit).await?;
    let appended = match append::append(&state, &key, event, expected).await {
        Ok(appended) => appended,
        Err(Error::NotFound { .. }) => return Err(not_found(&engine, id)),
        Err(e @ Error::Conflict { kind: agentstate::ConflictKind::StaleSession }) => {
            return Err(GoogleError::aborted(e.to_string()));
        }
        Err(e) => return Err(e.into()),
    };
    // As the managed service, an empty AppendEventResponse. agentstate's client (it names the
    // user) learns of a retry of a stored event: the stored event, marked.
    if appended.duplicate && header(&headers, USER_HEADER).is_some() {
        let mut body = engine.event(id, &appended.event);
        body["agentstateDuplicate"] = json!(true);
        return Ok(Json(body));
    }
    Ok(Json(json!({})))
}

/// `GET …/sessions/{id}/events[?filter=timestamp>="…"][&orderBy=timestamp desc][&pageSize][&pageToken]`:
/// the history, oldest first (or newest first), a page at a time.
pub(crate) async fn events(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    headers: HeaderMap,
    page_query: Result<Query<PageQuery>, QueryRejection>,
) -> Reply {
    let engine = Engine::from_params(&params)?;
    let id = params.get("session").map(String::as_str).unwrap_or_default();
    let page_query = query(page_query)?;
    let range = page_query.filter.as_deref().map(request::event_filter).transpose()?.unwrap_or_default();
    let newest_first = request::event_order(page_query.order_by.as_deref())?;
    let key = resolve(&state, &engine, id, &headers, &permit).await?;
    // A client that names no page size gets the whole history in one page: ADK for TypeScript
    // reads the first page only and never follows a token, so a default page would cut its
    // sessions short. Clients that name a size get pages, and tokens, as before.
    let whole = page_query.page_size.is_none();
    let mut request = ListEvents {
        page_size: if whole { MAX_EVENT_PAGE } else { page_size(page_query.page_size) },
        page_token: page_query.page_token.filter(|t| !t.is_empty()),
        after_timestamp: range.since,
        until_timestamp: range.until,
        newest_first,
    };
    let mut events = Vec::new();
    let next_page_token = loop {
        let page = state.service().list_events(&key, request.clone()).await?.ok_or_else(|| not_found(&engine, id))?;
        events.extend(page.events.iter().map(|event| engine.event(id, event)));
        match page.next_page_token {
            Some(token) if whole => request.page_token = Some(token),
            token => break token,
        }
    };
    let mut body = json!({ "sessionEvents": events });
    if let Some(token) = next_page_token {
        body["nextPageToken"] = json!(token);
    }
    Ok(Json(body))
}

/// `GET …/operations/{id}`: every operation is done when it is answered; one under a session
/// holds the session (if it still exists).
pub(crate) async fn operation(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Reply {
    let Some(version) = crate::engine_api::version_of(uri.path()) else {
        return Err(GoogleError::not_found("no such API version; this server answers v1 and v1beta1"));
    };
    let name = uri.path().trim_start_matches('/').trim_start_matches(version).trim_start_matches('/').to_owned();
    if let (Some(id), Ok(engine)) = (params.get("session"), Engine::from_params(&params))
        && let Ok(key) = resolve(&state, &engine, id, &headers, &permit).await
        && let Some(session) = state.service().get_session(&key, GetSessionConfig::recent(0)).await?
    {
        let mut operation = engine.session_operation(&session);
        operation["name"] = json!(name);
        return Ok(Json(operation));
    }
    Ok(Json(json!({"name": name, "done": true})))
}
