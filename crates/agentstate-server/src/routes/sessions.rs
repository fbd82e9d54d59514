//! The session routes of `adk api_server`, with the same paths, bodies, status codes and JSON.

use agentstate::compaction::EventView;
use agentstate::filter::{parse_session_filter, parse_session_order};
use agentstate::wire;
use agentstate::{
    CreateSession, Error, Event, EventActions, GetSessionConfig, ListEvents, ListSessions, Map, SessionKey, Timestamp,
    Value,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::append;
use crate::error::ApiError;
use crate::expiry::{request_expiry, session_body, session_value, stored_session_body};
use crate::limits::{Body, check_path_safe};
use crate::state::AppState;

/// Sessions whose ids start with these are ADK evaluation runs; lists leave them out.
const EVAL_PREFIXES: [&str; 2] = ["adk-eval-session-", "___eval___session___"];
/// Function calls ADK itself issues; a client may not restore events carrying them.
const RESERVED_FUNCTIONS: [&str; 3] = ["adk_request_credential", "adk_request_confirmation", "adk_request_input"];
type Reply = Result<Json<Value>, ApiError>;

fn key(app: &str, user: &str, id: &str) -> Result<SessionKey, ApiError> {
    check_owner(app, user)?;
    check_path_safe("session_id", id)?;
    Ok(SessionKey::new(app, user, id)?)
}

fn check_owner(app: &str, user: &str) -> Result<(), ApiError> {
    check_path_safe("app_name", app)?;
    check_path_safe("user_id", user)
}

/// Parses an optional JSON body: empty → `None`.
fn body(bytes: &Bytes) -> Result<Option<Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(bytes).map(Some).map_err(|e| ApiError::invalid_json(&e))
}

fn model_error(field: &str, message: impl std::fmt::Display, input: &Value) -> ApiError {
    ApiError::Unprocessable(
        json!([{"type": "model_type", "loc": ["body", field], "msg": message.to_string(), "input": input}]),
    )
}

/// `POST /apps/{app}/users/{user}/sessions` with an optional `CreateSessionRequest`.
pub(crate) async fn create(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    Body(bytes): Body,
) -> Reply {
    check_owner(&app, &user)?;
    let mut request = CreateSession::new(&app, &user);
    let mut events = Vec::new();
    if let Some(value) = body(&bytes)?.filter(|v| !v.is_null()) {
        let Some(mut fields) = object(value.clone()) else {
            return Err(model_error("", "Input should be a valid dictionary or object", &value));
        };
        let mut take =
            |camel: &str, snake: &str| fields.remove(camel).or_else(|| fields.remove(snake)).filter(|v| !v.is_null());
        if let Some(id) = take("sessionId", "session_id") {
            let id = id.as_str().ok_or_else(|| model_error("sessionId", "Input should be a valid string", &id))?;
            check_path_safe("session_id", id)?;
            request.session_id = Some(id.to_owned());
        }
        if let Some(initial) = take("state", "state") {
            request.state = object(initial.clone())
                .ok_or_else(|| model_error("state", "Input should be a valid dictionary", &initial))?;
            state.limits().check_state("state", &request.state)?;
        }
        // agentstate's extension: the managed service's `ttl` or `expireTime`.
        let (ttl, expire_time) = (take("ttl", "ttl"), take("expireTime", "expire_time"));
        request_expiry(&mut request, ttl.as_ref(), expire_time.as_ref()).map_err(ApiError::BadRequest)?;
        if let Some(options) = take("options", "options").and_then(object) {
            check_options(&options)?;
        }
        if let Some(list) = take("events", "events") {
            let Value::Array(list) = list else {
                return Err(model_error("events", "Input should be a valid list", &list));
            };
            for (i, raw) in list.into_iter().enumerate() {
                let event = wire::event_from_wire(raw.clone()).map_err(|e| model_error("events", e, &raw))?;
                check_restored(i, &event)?;
                events.push(event);
            }
        }
    }
    let mut session = state.service().create_session(request).await?;
    for event in events {
        state.service().append_event(&mut session, mark_restored(event)).await?;
        state.metrics().appended(1);
    }
    Ok(Json(session_value(&session)))
}

/// `POST /apps/{app}/users/{user}/sessions/{id}` (deprecated by the reference): the body, if
/// any, is the initial state.
pub(crate) async fn create_with_id(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Body(bytes): Body,
) -> Reply {
    key(&app, &user, &id)?;
    let mut request = CreateSession::new(&app, user).id(id);
    if let Some(value) = body(&bytes)?.filter(|v| !v.is_null()) {
        request.state =
            object(value.clone()).ok_or_else(|| model_error("", "Input should be a valid dictionary", &value))?;
        state.limits().check_state("state", &request.state)?;
    }
    let session = state.service().create_session(request).await?;
    Ok(Json(session_value(&session)))
}

fn check_options(options: &Map<String, Value>) -> Result<(), ApiError> {
    let mut bound: Vec<&str> = options
        .keys()
        .map(String::as_str)
        .filter(|k| ["app_name", "user_id", "state", "session_id"].contains(k))
        .collect();
    bound.sort_unstable();
    if !bound.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "Session options cannot contain keys already bound by the endpoint: {}",
            bound.join(", ")
        )));
    }
    if !options.is_empty() {
        return Err(ApiError::BadRequest(
            "Session options are not supported by the configured session service.".into(),
        ));
    }
    Ok(())
}

/// The reference refuses restored events that claim to be ADK's own.
fn check_restored(index: usize, event: &Event) -> Result<(), ApiError> {
    let refuse =
        |what: &str| ApiError::BadRequest(format!("Session initialization event {index} cannot include {what}."));
    if event.long_running_tool_ids.as_ref().is_some_and(|ids| !ids.is_empty()) {
        return Err(refuse("long-running tool IDs"));
    }
    if event.actions != EventActions::default() {
        return Err(refuse("event actions"));
    }
    let parts = event.content.as_ref().map(|c| c.parts()).unwrap_or_default();
    let names = parts.iter().filter_map(|p| {
        p.function_call
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .or(p.function_response.as_ref().and_then(|f| f.name.as_deref()))
    });
    if names.into_iter().any(|n| RESERVED_FUNCTIONS.contains(&n)) {
        return Err(refuse("ADK protocol function calls"));
    }
    Ok(())
}

fn mark_restored(mut event: Event) -> Event {
    let mut meta = match event.extra.remove("custom_metadata") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    meta.retain(|k, _| !k.starts_with("__adk_internal_"));
    meta.insert("__adk_internal_restored_event".into(), Value::Bool(true));
    event.extra.insert("custom_metadata".into(), Value::Object(meta));
    event
}

/// `GET /apps/{app}/users/{user}/sessions/{id}`: the session with every event.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    query: Result<Query<WindowQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(window) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let after = window.after_timestamp.map(|t| Timestamp::try_from_secs("after_timestamp", t)).transpose()?;
    let view = window.event_view()?;
    let config = GetSessionConfig { num_recent_events: window.num_recent_events, after_timestamp: after, view };
    let session = state.service().get_session_written(&key(&app, &user, &id)?, config).await?;
    let session = session.ok_or_else(|| ApiError::NotFound("Session not found".into()))?;
    stored_session_response(session)
}

/// The answer of a route that returns `session`: written straight from its stored events' text
/// (no `Event`, no JSON tree). Text no JSON reader takes is corrupt data, as when decoding it.
fn stored_session_response(session: agentstate::store::LoadedSession) -> Result<Response, ApiError> {
    let corrupt = |e: serde_json::Error| Error::Backend { message: e.to_string(), retryable: false, source: None };
    let body = axum::body::Body::new(stored_session_body(session).map_err(corrupt)?);
    Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// The event window of `GET …/sessions/{id}` (agentstate's extension; the reference answers every
/// event).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WindowQuery {
    num_recent_events: Option<usize>,
    after_timestamp: Option<f64>,
    /// `whole` (the default) or `compacted`: only what ADK reads of a compacted history.
    view: Option<String>,
    /// The compacted view's overlap (the app's `overlap_size`); 1 when not given.
    overlap: Option<usize>,
}

impl WindowQuery {
    fn event_view(&self) -> Result<EventView, ApiError> {
        match (self.view.as_deref(), self.overlap) {
            (None | Some("whole"), None) => Ok(EventView::Whole),
            (Some("compacted"), overlap) => {
                Ok(EventView::Compacted { overlap: overlap.unwrap_or(agentstate::compaction::DEFAULT_OVERLAP) })
            }
            (None | Some("whole"), Some(_)) => {
                Err(ApiError::BadRequest("overlap applies only to view=compacted".into()))
            }
            (Some(other), _) => Err(ApiError::BadRequest(format!("view must be whole or compacted, not {other:?}"))),
        }
    }
}

/// The page of the list routes (agentstate's extension): its size and token, the order (`orderBy`
/// as Agent Engine takes it, `update_time` or `create_time` then `asc` or `desc`; or `order`,
/// `asc` or `desc` by last update), a `filter` in Agent Engine's syntax
/// ([`agentstate::filter`]), sessions to skip first, and whether to count them all.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageQuery {
    page_size: Option<usize>,
    page_token: Option<String>,
    order: Option<String>,
    order_by: Option<String>,
    filter: Option<String>,
    offset: Option<usize>,
    count: Option<bool>,
}

impl PageQuery {
    /// Whether the client asked for a page (any of the extension's parameters) rather than the
    /// reference's array.
    fn paged(&self) -> bool {
        self.page_size.is_some() || self.order.is_some() || self.offset.is_some() || self.count.is_some()
    }

    /// The request: `page_size` (or `default_size`) clamped to 1–1000. A filter naming a user
    /// narrows the app's list to that user; on a user's route it must name that user.
    fn request(self, app: String, user: Option<String>, default_size: Option<usize>) -> Result<ListSessions, ApiError> {
        let (order_by, mut newest_first) = parse_session_order(self.order_by.as_deref().unwrap_or_default())?;
        match self.order.as_deref() {
            None => {}
            Some("asc") => newest_first = false,
            Some("desc") => newest_first = true,
            Some(other) => return Err(ApiError::BadRequest(format!("order must be asc or desc, not {other:?}"))),
        }
        let parsed = parse_session_filter(self.filter.as_deref().unwrap_or_default())?;
        let user_id = match (user, parsed.user_id) {
            (Some(path), Some(named)) if path != named => {
                return Err(ApiError::BadRequest(format!(
                    "the filter names user {named:?}, the path user {path:?}; list one user's sessions on their own route"
                )));
            }
            (user, named) => user.or(named),
        };
        Ok(ListSessions {
            app_name: app,
            user_id,
            page_size: self.page_size.or(default_size).map(|n| n.clamp(1, 1000)),
            page_token: self.page_token.filter(|t| !t.is_empty()),
            order_by,
            newest_first,
            filter: parsed.filter,
            offset: self.offset.unwrap_or(0),
            count: self.count.unwrap_or(false),
        })
    }
}

fn page_body(page: agentstate::SessionPage) -> Value {
    let sessions: Vec<_> = page.sessions.iter().map(session_body).collect();
    let mut body = json!({ "sessions": sessions });
    if let Some(token) = page.next_page_token {
        body["nextPageToken"] = Value::String(token);
    }
    if let Some(total) = page.total_size {
        body["totalSize"] = json!(total);
    }
    body
}

/// `GET /apps/{app}/sessions?pageSize&pageToken&orderBy&order&filter&offset&count`: every user's
/// sessions of the app, a page at a time, oldest update first (or as `orderBy` says), filtered.
pub(crate) async fn list_app(
    State(state): State<AppState>,
    Path(app): Path<String>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Reply {
    check_path_safe("app_name", &app)?;
    let Query(page) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let request = page.request(app, None, Some(100))?;
    Ok(Json(page_body(state.service().list_sessions(request).await?)))
}

/// `POST /apps/{app}/users/{user}/sessions/{id}/events` with `{"event": …, "expectedLastUpdateTime"?: …}`:
/// appends the event as the reference's `append_event` would, atomically checking that the
/// session is still at `expectedLastUpdateTime` (409 with the reference's stale-session message
/// if not). Without it, a blind append, retried if another writer got in first.
pub(crate) async fn append(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Body(bytes): Body,
) -> Reply {
    let key = key(&app, &user, &id)?;
    let input = body(&bytes)?.unwrap_or(Value::Null);
    let raw = match input.get("event") {
        Some(event @ Value::Object(_)) => event.clone(),
        Some(other) => return Err(model_error("event", "Input should be a valid dictionary or object", other)),
        None => return Err(ApiError::missing("event", &input)),
    };
    let event = wire::event_from_wire(raw.clone()).map_err(|e| model_error("event", e, &raw))?;
    state.limits().check_state("event.actions.stateDelta", &event.actions.state_delta)?;
    let expected = match input.get("expectedLastUpdateTime").or_else(|| input.get("expected_last_update_time")) {
        None | Some(Value::Null) => None,
        // The session's marker is the microsecond its last event's time falls in: a handle
        // may hold that time itself (finer than a microsecond), or the marker.
        Some(Value::Number(n)) => {
            Some(n.as_f64().and_then(Timestamp::from_secs).map(Timestamp::micros).ok_or_else(|| {
                model_error("expectedLastUpdateTime", "Input should be an epoch time in seconds", &input)
            })?)
        }
        Some(other) => return Err(model_error("expectedLastUpdateTime", "Input should be a valid number", other)),
    };
    let appended = append::append(&state, &key, event, expected).await.map_err(|e| match e {
        Error::NotFound { .. } => ApiError::NotFound("Session not found".into()),
        e => e.into(),
    })?;
    // The session's update time now (the microsecond of the stored event's time, as a reload
    // answers it), unless the event was stored before (a retry).
    let marker = if appended.duplicate {
        let session = state.service().get_session(&key, GetSessionConfig::recent(0)).await?;
        session.ok_or_else(|| ApiError::NotFound("Session not found".into()))?.last_update_time()
    } else {
        agentstate::store::micros_to_secs(appended.event.time().micros())
    };
    Ok(Json(json!({
        "event": wire::event_to_wire(&appended.event),
        "lastUpdateTime": marker,
        "duplicate": appended.duplicate,
    })))
}

/// `GET /apps/{app}/users/{user}/sessions`: the user's sessions, merged state, no events (an
/// array, as the reference answers; with `pageSize`, a page with `nextPageToken`), in the order
/// of `orderBy`/`order` and filtered by `filter` either way.
pub(crate) async fn list(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Reply {
    check_owner(&app, &user)?;
    let Query(page) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    if page.paged() {
        let request = page.request(app, Some(user), None)?;
        return Ok(Json(page_body(state.service().list_sessions(request).await?)));
    }
    let page = state.service().list_sessions(page.request(app, Some(user), None)?).await?;
    let sessions: Vec<_> = page
        .sessions
        .iter()
        .filter(|s| !EVAL_PREFIXES.iter().any(|p| s.id().starts_with(p)))
        .map(session_body)
        .collect();
    Ok(Json(serde_json::to_value(sessions).unwrap_or(Value::Null)))
}

/// `DELETE /apps/{app}/users/{user}/sessions/{id}`: `null`, whether or not it existed.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
) -> Reply {
    state.service().delete_session(&key(&app, &user, &id)?).await?;
    Ok(Json(Value::Null))
}

/// The body of a state change: `{"stateDelta": {…}, "deleteKeys": […]}` (snake_case too), one of
/// them at least (422 with neither, as the reference's PATCH).
pub(crate) fn state_patch(bytes: &Bytes) -> Result<(Map<String, Value>, Vec<String>), ApiError> {
    let input = body(bytes)?.unwrap_or(Value::Null);
    let delta = match input.get("stateDelta").or_else(|| input.get("state_delta")) {
        Some(Value::Object(delta)) => Some(delta.clone()),
        None | Some(Value::Null) => None,
        Some(other) => return Err(model_error("stateDelta", "Input should be a valid dictionary", other)),
    };
    let deleted = match input.get("deleteKeys").or_else(|| input.get("delete_keys")) {
        None | Some(Value::Null) => None,
        Some(Value::Array(keys)) => Some(
            keys.iter()
                .map(|k| {
                    k.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| model_error("deleteKeys", "Input should be a valid string", k))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(model_error("deleteKeys", "Input should be a valid list", other)),
    };
    if delta.is_none() && deleted.is_none() {
        return Err(ApiError::missing("stateDelta", &input));
    }
    Ok((delta.unwrap_or_default(), deleted.unwrap_or_default()))
}

/// `PATCH /apps/{app}/users/{user}/sessions/{id}` with `{"stateDelta": {…}, "deleteKeys": […]}`:
/// appends a user event carrying the delta and the deletions (agentstate's extension; either may
/// be absent, not both) and returns the session (with this request's `temp:` keys, as the
/// reference does). The change is a blind per-key write, so if another writer appended
/// meanwhile the session is reloaded and the append retried: no update is lost.
pub(crate) async fn patch(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    Body(bytes): Body,
) -> Result<Response, ApiError> {
    let (delta, deleted) = state_patch(&bytes)?;
    let mut event = Event::new(format!("p-{}", uuid::Uuid::new_v4())).author("user");
    event.actions.state_delta = delta;
    for key in &deleted {
        event = event.delete(key.clone());
    }
    state.limits().check_state("stateDelta", &event.actions.state_delta)?;
    let key = key(&app, &user, &id)?;
    let temp: Map<String, Value> = event
        .actions
        .state_delta
        .iter()
        .filter(|(k, _)| k.starts_with("temp:"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    append::append(&state, &key, event, None).await.map_err(|e| match e {
        Error::NotFound { .. } => ApiError::NotFound("Session not found".into()),
        e => e.into(),
    })?;
    // The session as stored now, plus this request's temp: keys (as the reference shows them),
    // written from the stored events' text as `get` writes it.
    let mut loaded = state
        .service()
        .get_session_written(&key, GetSessionConfig::default())
        .await?
        .ok_or_else(|| ApiError::NotFound("Session not found".into()))?;
    let temp_deleted = deleted.iter().filter(|k| k.starts_with("temp:"));
    if !temp.is_empty() || temp_deleted.clone().next().is_some() {
        let session = &loaded.session;
        let mut shown = session.state().all().clone();
        shown.extend(temp);
        for key in temp_deleted {
            shown.shift_remove(key);
        }
        loaded.session = agentstate::Session::from_storage(
            session.key().clone(),
            shown,
            session.events().shared().to_vec(),
            session.last_update_micros(),
        )
        .created_at(session.create_time_micros())
        .with_attributes(session.shared_attributes().cloned());
    }
    stored_session_response(loaded)
}

/// Query of the events route.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct EventsQuery {
    /// `nextPageToken` of the previous page.
    after: Option<String>,
    /// Events per page, 1 to 1000 (default 100).
    limit: Option<usize>,
}

/// `GET /apps/{app}/users/{user}/sessions/{id}/events?after=&limit=` (an agentstate extension):
/// the history a page at a time, oldest first, `{"events": […], "nextPageToken": "…"}`.
pub(crate) async fn events(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
    axum::extract::Query(query): axum::extract::Query<EventsQuery>,
) -> Reply {
    let request =
        ListEvents { page_size: query.limit.unwrap_or(100), page_token: query.after, ..ListEvents::default() };
    let page = state
        .service()
        .list_events(&key(&app, &user, &id)?, request)
        .await?
        .ok_or_else(|| ApiError::NotFound("Session not found".into()))?;
    let events: Vec<_> = page.events.iter().map(wire::WireEvent).collect();
    let mut body = json!({ "events": events });
    if let Some(token) = page.next_page_token {
        body["nextPageToken"] = Value::String(token);
    }
    Ok(Json(body))
}

/// A JSON object from a request, or `None` if `value` is not one.
fn object(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// The query of `DELETE /apps/{app}/users/{user}`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct EraseQuery {
    #[serde(default)]
    dry_run: bool,
}

/// `DELETE /apps/{app}/users/{user}` (agentstate's extension, admin tokens only): erases the
/// user's data, or with `?dryRun=true` counts it.
pub(crate) async fn erase_user(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    query: Result<axum::extract::Query<EraseQuery>, axum::extract::rejection::QueryRejection>,
) -> Reply {
    let axum::extract::Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let found = if query.dry_run {
        state.service().count_user_data(&app, &user).await?
    } else {
        state.service().erase_user(&app, &user).await?
    };
    Ok(Json(json!({
        "sessions": found.sessions,
        "events": found.events,
        "userStateKeys": found.user_state_keys,
        "memories": found.memories,
        "artifacts": found.artifacts,
        "dryRun": query.dry_run,
    })))
}
