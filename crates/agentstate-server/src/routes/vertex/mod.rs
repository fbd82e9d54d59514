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

mod api;
mod error;
pub(crate) mod memories;
mod request;
mod resource;

use std::collections::HashMap;

use agentstate::{GetSessionConfig, Value};
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;

pub(crate) use api::{Caller, Page};
pub(crate) use error::{GoogleError, authorize_engine};
pub(crate) use resource::Engine;
#[cfg(feature = "grpc")]
pub(crate) use resource::EventsPage;

use crate::auth::Permit;
use crate::limits::Body;
use crate::state::AppState;

/// The session's user, sent by agentstate's client.
const USER_HEADER: &str = "x-agentstate-user-id";
/// The storage marker the client's handle was loaded at (epoch microseconds).
const LAST_UPDATE_HEADER: &str = "x-agentstate-last-update";

type Reply = Result<Json<Value>, GoogleError>;

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

pub(super) fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, GoogleError> {
    query.map(|Query(q)| q).map_err(|e| GoogleError::invalid(e.body_text()))
}

/// What every session route starts from: the server, the engine its path names, the caller's
/// permit and headers, and the path's session segment (if it has one).
pub(crate) struct Call {
    state: AppState,
    engine: Engine,
    permit: Permit,
    headers: HeaderMap,
    session: String,
}

impl FromRequestParts<AppState> for Call {
    type Rejection = GoogleError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, GoogleError> {
        let (mut params, permit) = params_and_permit(parts, state).await?;
        Ok(Self {
            engine: Engine::from_params(&params)?,
            session: params.remove("session").unwrap_or_default(),
            state: state.clone(),
            permit,
            headers: parts.headers.clone(),
        })
    }
}

/// A request's path parameters and the permit its authentication left.
pub(super) async fn params_and_permit(
    parts: &mut Parts,
    state: &AppState,
) -> Result<(HashMap<String, String>, Permit), GoogleError> {
    let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
        .await
        .map_err(|e| GoogleError::invalid(e.body_text()))?;
    let Extension(permit) =
        Extension::<Permit>::from_request_parts(parts, state).await.map_err(|e| GoogleError::invalid(e.body_text()))?;
    Ok((params, permit))
}

impl Call {
    fn caller(&self) -> Caller<'_> {
        Caller { state: &self.state, engine: &self.engine, permit: &self.permit, headers: &self.headers }
    }
}

/// `POST …/sessions[?sessionId=ID]`: creates a session; answers a done operation holding it.
pub(crate) async fn create(
    call: Call,
    create_query: Result<Query<CreateQuery>, QueryRejection>,
    Body(bytes): Body,
) -> Reply {
    let requested_id = query(create_query)?.session_id;
    let session = call.caller().create(requested_id, request::body(&bytes)?).await?;
    Ok(Json(call.engine.session_operation(&session)))
}

/// `GET …/sessions[?filter=…][&orderBy=update_time desc][&pageSize][&pageToken]`: sessions with
/// their merged state, no events, oldest update first (or as `orderBy` says: `update_time` or
/// `create_time`, `asc` or `desc`), of those the filter admits (`user_id`, `display_name`,
/// `labels.KEY`, `state.KEY`, `update_time` and `create_time` ranges; [`agentstate::filter`]).
pub(crate) async fn list(call: Call, page_query: Result<Query<Page>, QueryRejection>) -> Reply {
    Ok(Json(call.caller().list(query(page_query)?).await?))
}

/// `GET …/sessions/{id}`: the session with its merged state; with `agentstateEvents`, also its
/// events (the newest `agentstateNumRecentEvents`, those at or after `agentstateAfter`).
pub(crate) async fn get(call: Call, get_query: Result<Query<GetQuery>, QueryRejection>) -> Reply {
    let (engine, id) = (&call.engine, call.session.as_str());
    let get_query = query(get_query)?;
    let config = if get_query.agentstate_events {
        let after =
            get_query.agentstate_after.as_deref().map(|t| resource::parse_time(t, "agentstateAfter")).transpose()?;
        GetSessionConfig {
            num_recent_events: get_query.agentstate_num_recent_events,
            after_timestamp: after,
            ..GetSessionConfig::default()
        }
    } else {
        GetSessionConfig::recent(0)
    };
    let session = call.caller().get(id, config).await?;
    let mut body = engine.session(&session);
    if get_query.agentstate_events {
        body["agentstateEvents"] = session.events().iter().map(|e| engine.raw_event(id, e)).collect();
    }
    Ok(Json(body))
}

/// `DELETE …/sessions/{id}`: answers a done operation.
pub(crate) async fn delete(call: Call) -> Reply {
    call.caller().delete(&call.session).await?;
    Ok(Json(call.engine.empty_operation()))
}

/// The query of `PATCH …/sessions/{id}`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PatchQuery {
    update_mask: Option<String>,
}

/// `PATCH …/sessions/{id}[?updateMask=display_name,labels,expire_time,session_state]`: sets the
/// session's display name, labels, expiry (`expireTime` or `ttl`) and state as the mask says
/// (without one, the fields the body has; a masked field the body lacks is cleared), and answers
/// the session, as the managed service's `sessions.patch` does ([`Caller::patch`]).
pub(crate) async fn patch(
    call: Call,
    patch_query: Result<Query<PatchQuery>, QueryRejection>,
    Body(bytes): Body,
) -> Reply {
    let mask = query(patch_query)?.update_mask;
    Ok(Json(call.caller().patch(&call.session, request::body(&bytes)?, mask.as_deref()).await?))
}

/// `POST …/sessions/{id}:appendEvent`: appends the event and applies its state delta. Answers
/// `{}`, as the managed service does.
pub(crate) async fn append_event(call: Call, Body(bytes): Body) -> Reply {
    let segment = call.session.as_str();
    let Some(id) = segment.strip_suffix(":appendEvent") else {
        return Err(GoogleError::not_found(format!("no method {segment:?}; sessions answer :appendEvent")));
    };
    Ok(Json(call.caller().append(id, request::body(&bytes)?).await?))
}

/// `GET …/sessions/{id}/events[?filter=timestamp>="…"][&orderBy=timestamp desc][&pageSize][&pageToken]`:
/// the history, oldest first (or newest first), a page at a time.
pub(crate) async fn events(
    call: Call,
    page_query: Result<Query<Page>, QueryRejection>,
) -> Result<resource::EventsPage, GoogleError> {
    call.caller().events(&call.session, query(page_query)?).await
}

/// `GET …/operations/{id}`: a Memory Bank generation running in this process, while it runs and
/// once it ended (the caller's token must cover its scope); every other operation is done when
/// it is answered, one under a session holding the session (if it still exists).
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
    if let Some(running) = state.running().get(&name) {
        match &running.user {
            Some(user) => permit.check(&running.app, user)?,
            None => permit.check_every_user(&running.app)?,
        }
        return Ok(Json(running.done.unwrap_or_else(|| json!({"name": name, "done": false}))));
    }
    if let (Some(id), Ok(engine)) = (params.get("session"), Engine::from_params(&params))
        && let Some(session) = (Caller { state: &state, engine: &engine, permit: &permit, headers: &headers })
            .operation_session(id)
            .await?
    {
        let mut operation = engine.session_operation(&session);
        operation["name"] = json!(name);
        return Ok(Json(operation));
    }
    Ok(Json(json!({"name": name, "done": true})))
}
