//! The route table: every route with its handler, who may call it (the authentication column)
//! and how `/openapi.json` describes it. Routes are registered from this table only, so the
//! document, the access checks and the router cannot drift apart.

mod append;
mod artifact_body;
mod artifacts;
mod history;
mod memory;
#[cfg(feature = "agents")]
mod run;
mod sessions;
mod shared;
mod system;
pub(crate) mod vertex;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::MethodRouter;

use crate::auth::{self, Access};
use crate::openapi;
use crate::state::AppState;

pub(crate) use system::OpenApiDocument;

/// Registers every route and describes it for `/openapi.json`, from one table. A row may carry
/// `#[cfg(...)]` attributes; they apply to its registration and to its description. The rows are
/// alike in shape by design (method, path, handler, access, summary, body, answers): the table is
/// the API's one description, read by the router, the OpenAPI document and the access tests.
macro_rules! routes {
    ($( $(#[$meta:meta])* $method:ident $path:literal => $handler:path, $access:ident, $summary:literal, $request:expr,
        [$( $status:literal $description:literal $schema:literal ),*] );* $(;)?) => {
        /// Every route, registered with the access check its row asks for.
        pub(crate) fn register(state: &AppState) -> Router<AppState> {
            let router = Router::new();
            $(
                $(#[$meta])*
                let router = router.route($path, guard(axum::routing::$method($handler), Access::$access, state));
            )*
            router
        }

        /// Every route, as `/openapi.json` describes it.
        pub const OPERATIONS: &[openapi::Operation] = &[$(
            $(#[$meta])*
            openapi::Operation {
                method: stringify!($method),
                path: $path,
                summary: $summary,
                access: Access::$access,
                request: $request,
                responses: &[$(($status, $description, $schema)),*],
            }
        ),*];
    };
}

/// A path no route serves: as Google APIs answer it under the managed-service surface
/// (`/v1/…`, `/v1beta1/…`), else as FastAPI (the reference's server) does.
pub(crate) async fn not_found(uri: axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse;
    if crate::engine_api::version_of(uri.path()).is_some() {
        return vertex::GoogleError::not_found("Requested entity was not found.").into_response();
    }
    (axum::http::StatusCode::NOT_FOUND, axum::Json(serde_json::json!({"detail": "Not Found"}))).into_response()
}

/// The route with the check of `access` in front of its handler.
fn guard(route: MethodRouter<AppState>, access: Access, state: &AppState) -> MethodRouter<AppState> {
    match access {
        Access::Public => route,
        Access::Token | Access::BodyAppUser => route.route_layer(from_fn_with_state(state.clone(), auth::authenticate)),
        Access::PathAppUser | Access::PathApp => {
            route.route_layer(from_fn_with_state(state.clone(), auth::authorize_path))
        }
        Access::EngineUser => route.route_layer(from_fn_with_state(state.clone(), vertex::authorize_engine)),
        Access::Admin => route.route_layer(from_fn_with_state(state.clone(), auth::authorize_admin)),
        Access::Ui => route.route_layer(from_fn_with_state(state.clone(), crate::ui::authorize)),
    }
}

routes! {
    post "/apps/{app_name}/users/{user_id}/sessions" => sessions::create, PathAppUser, "Create a session", Some("CreateSessionRequest"),
        [200 "The session" "Session", 400 "Invalid id, options or events" "Error",
         404 "The session expired (expireTime in the past) before its events were restored" "Error",
         409 "The id is taken" "Error", 422 "Malformed body" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions" => sessions::list, PathAppUser,
        "List a user's sessions (merged state, no events); with `pageSize`, a page; `filter` and `orderBy` (agentstate extensions)", None,
        [200 "The sessions, oldest update first or as orderBy says (an array; with pageSize, a SessionPage)" "SessionListOrPage", 400 "Bad filter, order or page token" "Error"];
    get "/apps/{app_name}/sessions" => sessions::list_app, PathApp,
        "agentstate extension: every user's sessions of an app, a page at a time (`pageSize`, `pageToken`, `filter`, `orderBy`)", None,
        [200 "A page of sessions, oldest update first or as orderBy says" "SessionPage", 400 "Bad filter, order or page token" "Error"];
    get "/apps/{app_name}/users/{user_id}/state" => shared::user_state, PathAppUser,
        "agentstate extension: the user's `user:` state without a session (keys without the prefix), as ADK for Python's get_user_state",
        None,
        [200 "The user's state ({} when none)" "State", 400 "Invalid id" "Error",
         501 "The backend cannot read state without a session" "Error"];
    get "/apps/{app_name}/state" => shared::app_state, PathApp,
        "agentstate extension: the app's `app:` state without a session (keys without the prefix)", None,
        [200 "The app's state ({} when none)" "State", 400 "Invalid id" "Error",
         501 "The backend cannot read state without a session" "Error"];
    patch "/apps/{app_name}/users/{user_id}/state" => shared::update_user_state, PathAppUser,
        "agentstate extension: write the user's `user:` state without a session (`stateDelta`, `deleteKeys`; keys without the prefix), merged key by key",
        Some("StateWrite"),
        [200 "The user's state after the write" "State", 400 "Invalid id, or a key with a scope prefix" "Error",
         413 "Over a size limit" "Error", 422 "stateDelta and deleteKeys both missing" "Error",
         501 "The backend cannot write state without a session" "Error"];
    get "/apps/{app_name}/users/{user_id}/state/writes" => shared::user_state_writes, PathAppUser,
        "agentstate extension: the user's log of state writes without a session, newest first (`pageSize`, `pageToken`): when, what wrote them, which keys; writes through sessions are their events",
        None,
        [200 "A page of writes" "StateWritePage", 400 "Invalid id, page size or token" "Error",
         501 "The backend cannot write state without a session" "Error"];
    get "/apps/{app_name}/state/writes" => shared::app_state_writes, PathApp,
        "agentstate extension: the app's log of state writes without a session, newest first (`pageSize`, `pageToken`)",
        None,
        [200 "A page of writes" "StateWritePage", 400 "Invalid id, page size or token" "Error",
         501 "The backend cannot write state without a session" "Error"];
    patch "/apps/{app_name}/state" => shared::update_app_state, PathApp,
        "agentstate extension: write the app's `app:` state without a session (`stateDelta`, `deleteKeys`; keys without the prefix), merged key by key",
        Some("StateWrite"),
        [200 "The app's state after the write" "State", 400 "Invalid id, or a key with a scope prefix" "Error",
         413 "Over a size limit" "Error", 422 "stateDelta and deleteKeys both missing" "Error",
         501 "The backend cannot write state without a session" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::get, PathAppUser,
        "Get a session with its events (agentstate extensions: `numRecentEvents`, `afterTimestamp` select them; `view=compacted` answers only what ADK reads of a compacted history)", None,
        [200 "The session" "Session", 400 "Bad window or view" "Error", 404 "No such session" "Error"];
    post "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::create_with_id, PathAppUser,
        "Create a session with this id (deprecated by the reference; the body is the initial state)", Some("State"),
        [200 "The session" "Session", 409 "The id is taken" "Error"];
    patch "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::patch, PathAppUser,
        "Append a user event carrying stateDelta (retried, never lost, under concurrent writers)", Some("UpdateSessionRequest"),
        [200 "The session after the append" "Session", 404 "No such session" "Error", 413 "Over a size limit" "Error", 422 "stateDelta missing" "Error"];
    delete "/apps/{app_name}/users/{user_id}/sessions/{session_id}" => sessions::delete, PathAppUser, "Delete a session (also when missing)", None,
        [200 "null" "Null"];
    post "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events" => sessions::append, PathAppUser,
        "agentstate extension: append an event (the reference's JSON), refused if the session changed since `expectedLastUpdateTime`",
        Some("AppendRequest"),
        [200 "The stored event and the session's new update time" "Appended", 404 "No such session" "Error",
         409 "The session changed since expectedLastUpdateTime, or another event has this id" "Error",
         413 "Over a size limit" "Error", 422 "Malformed event" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events" => sessions::events, PathAppUser,
        "agentstate extension: the history a page at a time, oldest first", None,
        [200 "A page of events" "EventPage", 400 "Bad page token or limit" "Error", 404 "No such session" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}/state" => history::state, PathAppUser,
        "agentstate extension: the session's history state at an event (`atEvent`, `beforeEvent`), a time (`atTime`, epoch seconds) or its creation (`atCreation=true`)",
        None,
        [200 "The state there" "HistoryState", 400 "Not exactly one position, an unknown event or a time before creation" "Error",
         404 "No such session" "Error", 501 "The backend keeps no history" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events/{event_id}/diff" => history::diff, PathAppUser,
        "agentstate extension: what an event changed (keys set, changed, deleted)", None,
        [200 "The event's changes, by key" "EventDiff", 404 "No such session or event" "Error",
         501 "The backend keeps no history" "Error"];
    post "/apps/{app_name}/users/{user_id}/sessions/{session_id}/rewind" => history::rewind, PathAppUser,
        "agentstate extension: rewind before an invocation, as ADK for Python's Runner.rewind_async, or to just after an event, as ADK-Rust's rewind (one event restores the session's own keys)",
        Some("RewindRequest"),
        [200 "The session after the rewind" "Session", 400 "Invocation or event not found" "Error", 404 "No such session" "Error",
         422 "Neither rewindBeforeInvocationId nor rewindAfterEventId, or both" "Error", 501 "The backend keeps no history" "Error"];
    post "/apps/{app_name}/users/{user_id}/sessions/{session_id}/fork" => history::fork, PathAppUser,
        "agentstate extension: a new session of the same user with this one's history up to an event", Some("ForkRequest"),
        [200 "The new session" "Session", 400 "Unknown event or bad id" "Error", 404 "No such session" "Error",
         409 "The id is taken" "Error", 422 "atEventId missing" "Error", 501 "The backend keeps no history" "Error"];
    #[cfg(feature = "agents")]
    get "/list-apps" => run::list_apps, Token, "The apps served on /run that the token may touch (sorted)", None, [200 "App names" "AppList"];
    #[cfg(feature = "agents")]
    post "/run" => run::run, BodyAppUser, "Run an agent for one user turn; the run's events (app from appName, or the only one served)",
        Some("RunAgentRequest"),
        [200 "The events of the run, each stored before it is answered" "EventList", 400 "appName missing with several apps served" "Error",
         404 "Unknown app or session" "Error", 409 "Another run of the session goes (policy reject); nothing stored" "Error",
         422 "Malformed body" "Error", 500 "The agent failed (message shown)" "Error",
         502 "The model provider failed" "Error", 503 "Too many runs of the session wait, or this one waited too long" "Error"];
    #[cfg(feature = "agents")]
    post "/run_sse" => run::run_sse, BodyAppUser, "Run an agent for one user turn, streaming its events as server-sent events", Some("RunAgentRequest"),
        [200 "text/event-stream of `data: <Event JSON>`; a late failure as `data: {\"error\": …}`" "EventStream",
         404 "Unknown app or session" "Error", 409 "Another run of the session goes (policy reject); nothing stored" "Error",
         422 "Malformed body" "Error", 503 "Too many runs of the session wait, or this one waited too long" "Error"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions" => vertex::create, EngineUser,
        "Agent Engine: create a session (`?sessionId=`); a done operation holding it", Some("VertexCreateSession"),
        [200 "A done operation" "VertexOperation", 400 "Bad body, or (v1beta1) the id is taken" "GoogleError",
         409 "ALREADY_EXISTS (v1): the id is taken" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/sessions" => vertex::create, EngineUser,
        "Agent Engine (short form): create a session", Some("VertexCreateSession"),
        [200 "A done operation" "VertexOperation", 400 "Bad body, or (v1beta1) the id is taken" "GoogleError",
         409 "ALREADY_EXISTS (v1): the id is taken" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions" => vertex::list, EngineUser,
        "Agent Engine: list sessions (`?filter=` on user, display name, labels, state, times; `orderBy` update or create time; `pageSize` up to 100, `pageToken`)", None,
        [200 "A page of sessions" "VertexSessionList", 400 "Bad filter or token" "GoogleError"];
    get "/{version}/reasoningEngines/{engine}/sessions" => vertex::list, EngineUser,
        "Agent Engine (short form): list sessions", None,
        [200 "A page of sessions" "VertexSessionList", 400 "Bad filter or token" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions/{session}" => vertex::get, EngineUser,
        "Agent Engine: get a session", None,
        [200 "The session" "VertexSession", 404 "No such session" "GoogleError"];
    get "/{version}/reasoningEngines/{engine}/sessions/{session}" => vertex::get, EngineUser,
        "Agent Engine (short form): get a session", None,
        [200 "The session" "VertexSession", 404 "No such session" "GoogleError"];
    patch "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions/{session}" => vertex::patch, EngineUser,
        "Agent Engine: set a session's display name, labels, expiry or state (`?updateMask=`); the session", Some("VertexSessionPatch"),
        [200 "The session" "VertexSession", 400 "Bad body or mask" "GoogleError", 404 "No such session" "GoogleError"];
    delete "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions/{session}" => vertex::delete, EngineUser,
        "Agent Engine: delete a session; a done operation", None,
        [200 "A done operation" "VertexOperation", 404 "No such session" "GoogleError"];
    patch "/{version}/reasoningEngines/{engine}/sessions/{session}" => vertex::patch, EngineUser,
        "Agent Engine (short form): set a session's display name, labels, expiry or state (`?updateMask=`); the session", Some("VertexSessionPatch"),
        [200 "The session" "VertexSession", 400 "Bad body or mask" "GoogleError", 404 "No such session" "GoogleError"];
    delete "/{version}/reasoningEngines/{engine}/sessions/{session}" => vertex::delete, EngineUser,
        "Agent Engine (short form): delete a session", None,
        [200 "A done operation" "VertexOperation", 404 "No such session" "GoogleError"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions/{session}" => vertex::append_event, EngineUser,
        "Agent Engine: `{session}:appendEvent`, append an event", Some("VertexEvent"),
        [200 "`{}`; to agentstate's client, a retried event that was stored already" "VertexEvent", 400 "Bad event" "GoogleError", 404 "No such session" "GoogleError",
         409 "ABORTED: changed since x-agentstate-last-update" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/sessions/{session}" => vertex::append_event, EngineUser,
        "Agent Engine (short form): `{session}:appendEvent`", Some("VertexEvent"),
        [200 "`{}`; to agentstate's client, a retried event that was stored already" "VertexEvent", 400 "Bad event" "GoogleError", 404 "No such session" "GoogleError",
         409 "ABORTED: changed since x-agentstate-last-update" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions/{session}/events" => vertex::events, EngineUser,
        "Agent Engine: a session's events, oldest first or (`orderBy=timestamp desc`) newest first (`?filter=timestamp>=\"…\"`, `pageSize`, `pageToken`)", None,
        [200 "A page of events" "VertexEventList", 400 "Bad filter, order or token" "GoogleError", 404 "No such session" "GoogleError"];
    get "/{version}/reasoningEngines/{engine}/sessions/{session}/events" => vertex::events, EngineUser,
        "Agent Engine (short form): a session's events", None,
        [200 "A page of events" "VertexEventList", 400 "Bad filter, order or token" "GoogleError", 404 "No such session" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/sessions/{session}/operations/{operation}" => vertex::operation, EngineUser,
        "Agent Engine: an operation on a session (always done)", None, [200 "The operation" "VertexOperation"];
    get "/{version}/reasoningEngines/{engine}/sessions/{session}/operations/{operation}" => vertex::operation, EngineUser,
        "Agent Engine (short form): an operation on a session", None, [200 "The operation" "VertexOperation"];
    get "/{version}/projects/{project}/locations/{location}/operations/{operation}" => vertex::operation, EngineUser,
        "Agent Engine: an operation (done, but a Memory Bank generation while it runs)", None, [200 "The operation" "VertexOperation"];
    get "/{version}/reasoningEngines/{engine}/operations/{operation}" => vertex::operation, EngineUser,
        "Agent Engine (short form): an operation", None, [200 "The operation" "VertexOperation"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories" => vertex::memories::create, EngineUser,
        "Memory Bank: create a memory (`?memoryId=`) `{fact, scope, ttl?, expireTime?, metadata?, displayName?, description?, topics?}`; a done operation holding it", Some("VertexMemory"),
        [200 "A done operation holding the memory" "VertexOperation", 400 "Bad body: no fact, a bad scope, metadata or ttl" "GoogleError",
         403 "The token does not cover the scope's user" "GoogleError", 409 "ALREADY_EXISTS: the id is taken" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/memories" => vertex::memories::create, EngineUser,
        "Memory Bank (short form): create a memory (`?memoryId=`) `{fact, scope, ttl?, expireTime?, metadata?, displayName?, description?, topics?}`; a done operation holding it", Some("VertexMemory"),
        [200 "A done operation holding the memory" "VertexOperation", 400 "Bad body: no fact, a bad scope, metadata or ttl" "GoogleError",
         403 "The token does not cover the scope's user" "GoogleError", 409 "ALREADY_EXISTS: the id is taken" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories" => vertex::memories::list, EngineUser,
        "Memory Bank: every memory of the engine, of every scope (`pageSize` up to 100, `pageToken`; a token for every user)", None,
        [200 "A page of memories" "VertexMemoryList", 400 "Bad token, or a filter or order (not supported)" "GoogleError", 403 "The token does not cover every user" "GoogleError"];
    get "/{version}/reasoningEngines/{engine}/memories" => vertex::memories::list, EngineUser,
        "Memory Bank (short form): every memory of the engine, of every scope (`pageSize` up to 100, `pageToken`; a token for every user)", None,
        [200 "A page of memories" "VertexMemoryList", 400 "Bad token, or a filter or order (not supported)" "GoogleError", 403 "The token does not cover every user" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::get, EngineUser,
        "Memory Bank: get a memory", None,
        [200 "The memory" "VertexMemory", 400 "A malformed name" "GoogleError", 404 "No such memory" "GoogleError"];
    get "/{version}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::get, EngineUser,
        "Memory Bank (short form): get a memory", None,
        [200 "The memory" "VertexMemory", 400 "A malformed name" "GoogleError", 404 "No such memory" "GoogleError"];
    patch "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::patch, EngineUser,
        "Memory Bank: update a memory's fact, display name, description, topics, metadata or expiry (`?updateMask=`); a done operation holding it", Some("VertexMemory"),
        [200 "A done operation holding the memory" "VertexOperation", 400 "A malformed name, a bad body or mask" "GoogleError", 404 "No such memory" "GoogleError"];
    patch "/{version}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::patch, EngineUser,
        "Memory Bank (short form): update a memory's fact, display name, description, topics, metadata or expiry (`?updateMask=`); a done operation holding it", Some("VertexMemory"),
        [200 "A done operation holding the memory" "VertexOperation", 400 "A malformed name, a bad body or mask" "GoogleError", 404 "No such memory" "GoogleError"];
    delete "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::delete, EngineUser,
        "Memory Bank: delete a memory; a done operation", None,
        [200 "A done operation" "VertexOperation", 400 "A malformed name" "GoogleError", 404 "No such memory" "GoogleError"];
    delete "/{version}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::delete, EngineUser,
        "Memory Bank (short form): delete a memory; a done operation", None,
        [200 "A done operation" "VertexOperation", 400 "A malformed name" "GoogleError", 404 "No such memory" "GoogleError"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories:retrieve" => vertex::memories::retrieve, EngineUser,
        "Memory Bank: a scope's memories (exact match): nearest a query (`similaritySearchParams {searchQuery, topK}`, 3 by default; by meaning with the app's embeddings, else by words) or a page (`simpleRetrievalParams {pageSize, pageToken}`)", Some("VertexRetrieveMemories"),
        [200 "The memories retrieved" "VertexRetrievedMemories", 400 "Bad scope, parameters or token" "GoogleError", 403 "The token does not cover the scope's user" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/memories:retrieve" => vertex::memories::retrieve, EngineUser,
        "Memory Bank (short form): a scope's memories (exact match): nearest a query (`similaritySearchParams {searchQuery, topK}`, 3 by default; by meaning with the app's embeddings, else by words) or a page (`simpleRetrievalParams {pageSize, pageToken}`)", Some("VertexRetrieveMemories"),
        [200 "The memories retrieved" "VertexRetrievedMemories", 400 "Bad scope, parameters or token" "GoogleError", 403 "The token does not cover the scope's user" "GoogleError"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories:generate" => vertex::memories::generate, EngineUser,
        "Memory Bank: store up to 5 facts of `directMemoriesSource` in a scope (a done operation), or, with the engine's --memory-model, extract and consolidate the facts of `directContentsSource` or `vertexSessionSource` in the background (an operation to poll)", Some("VertexGenerateMemories"),
        [200 "A done operation listing the memories stored, or a running one (from conversations)" "VertexOperation",
         400 "Bad body, or FAILED_PRECONDITION: the engine has no --memory-model" "GoogleError",
         403 "The token does not cover the scope's user" "GoogleError", 404 "No such session (vertexSessionSource)" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/memories:generate" => vertex::memories::generate, EngineUser,
        "Memory Bank (short form): store up to 5 facts of `directMemoriesSource` in a scope (a done operation), or, with the engine's --memory-model, extract and consolidate the facts of `directContentsSource` or `vertexSessionSource` in the background (an operation to poll)", Some("VertexGenerateMemories"),
        [200 "A done operation listing the memories stored, or a running one (from conversations)" "VertexOperation",
         400 "Bad body, or FAILED_PRECONDITION: the engine has no --memory-model" "GoogleError",
         403 "The token does not cover the scope's user" "GoogleError", 404 "No such session (vertexSessionSource)" "GoogleError"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories:ingestEvents" => vertex::memories::ingest_events, EngineUser,
        "Memory Bank: events whose facts the engine's --memory-model extracts and consolidates in the background (an operation to poll)", Some("VertexIngestEvents"),
        [200 "A running operation" "VertexOperation", 400 "A bad scope or events, or FAILED_PRECONDITION: the engine has no --memory-model" "GoogleError",
         403 "The token does not cover the scope's user" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/memories:ingestEvents" => vertex::memories::ingest_events, EngineUser,
        "Memory Bank (short form): events whose facts the engine's --memory-model extracts and consolidates in the background (an operation to poll)", Some("VertexIngestEvents"),
        [200 "A running operation" "VertexOperation", 400 "A bad scope or events, or FAILED_PRECONDITION: the engine has no --memory-model" "GoogleError",
         403 "The token does not cover the scope's user" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories/{memory}/operations/{operation}" => vertex::memories::operation, EngineUser,
        "Memory Bank: an operation on a memory (always done; holding the memory while it exists)", None,
        [200 "The operation" "VertexOperation"];
    get "/{version}/reasoningEngines/{engine}/memories/{memory}/operations/{operation}" => vertex::memories::operation, EngineUser,
        "Memory Bank (short form): an operation on a memory (always done; holding the memory while it exists)", None,
        [200 "The operation" "VertexOperation"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories/{memory}/revisions" => vertex::memories::revisions, EngineUser,
        "Memory Bank: a memory's revisions, newest first (`pageSize` up to 100, `pageToken`, `filter=labels.KEY=\"VALUE\"` terms joined by AND)", None,
        [200 "A page of revisions" "VertexMemoryRevisionList", 400 "A malformed name, a bad filter or token" "GoogleError", 404 "No such memory" "GoogleError"];
    get "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories/{memory}/revisions/{revision}" => vertex::memories::revision, EngineUser,
        "Memory Bank: a revision of a memory", None,
        [200 "The revision" "VertexMemoryRevision", 400 "A malformed name" "GoogleError", 404 "No such memory or revision" "GoogleError"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::rollback, EngineUser,
        "Memory Bank: `{memory}:rollback {targetRevisionId}`, set a memory's fact back to a revision's (a new revision); a done operation", Some("VertexRollbackMemory"),
        [200 "A done operation" "VertexOperation", 400 "A malformed name or body" "GoogleError", 404 "No such memory or revision" "GoogleError"];
    post "/{version}/projects/{project}/locations/{location}/reasoningEngines/{engine}/memories:retrieveProfiles" => vertex::memories::retrieve_profiles, EngineUser,
        "Memory Bank: a scope's structured profiles, one per schema of the engine's structured memory configuration (none are kept here: `{\"profiles\": {}}`)", Some("VertexRetrieveProfiles"),
        [200 "The profiles" "VertexProfiles", 400 "A bad scope" "GoogleError", 403 "The token does not cover the scope's user" "GoogleError"];
    get "/{version}/reasoningEngines/{engine}/memories/{memory}/revisions" => vertex::memories::revisions, EngineUser,
        "Memory Bank (short form): a memory's revisions, newest first (`pageSize` up to 100, `pageToken`, `filter=labels.KEY=\"VALUE\"` terms joined by AND)", None,
        [200 "A page of revisions" "VertexMemoryRevisionList", 400 "A malformed name, a bad filter or token" "GoogleError", 404 "No such memory" "GoogleError"];
    get "/{version}/reasoningEngines/{engine}/memories/{memory}/revisions/{revision}" => vertex::memories::revision, EngineUser,
        "Memory Bank (short form): a revision of a memory", None,
        [200 "The revision" "VertexMemoryRevision", 400 "A malformed name" "GoogleError", 404 "No such memory or revision" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/memories/{memory}" => vertex::memories::rollback, EngineUser,
        "Memory Bank (short form): `{memory}:rollback {targetRevisionId}`, set a memory's fact back to a revision's (a new revision); a done operation", Some("VertexRollbackMemory"),
        [200 "A done operation" "VertexOperation", 400 "A malformed name or body" "GoogleError", 404 "No such memory or revision" "GoogleError"];
    post "/{version}/reasoningEngines/{engine}/memories:retrieveProfiles" => vertex::memories::retrieve_profiles, EngineUser,
        "Memory Bank (short form): a scope's structured profiles, one per schema of the engine's structured memory configuration (none are kept here: `{\"profiles\": {}}`)", Some("VertexRetrieveProfiles"),
        [200 "The profiles" "VertexProfiles", 400 "A bad scope" "GoogleError", 403 "The token does not cover the scope's user" "GoogleError"];
    patch "/apps/{app_name}/users/{user_id}/memory" => memory::add_session, PathAppUser,
        "Add a stored session to memory (`{\"sessionId\"}`), as `adk api_server` does: its events with text replace what it added before",
        Some("UpdateMemoryRequest"),
        [200 "null" "Null", 400 "Bad id" "Error", 404 "Session not found" "Error", 422 "sessionId missing" "Error",
         501 "The backend keeps no memories" "Error"];
    put "/apps/{app_name}/users/{user_id}/memory/sessions/{session_id}" => memory::put_session, PathAppUser,
        "agentstate extension: a session kept elsewhere, as its events (`{\"events\"}`), is its whole contribution to memory now (ADK's add_session_to_memory)",
        Some("MemorySessionRequest"),
        [200 "How many memories the session has (`memories`)" "Status", 400 "Bad id or a memory over the size limit" "Error",
         422 "events missing or malformed" "Error", 501 "The backend keeps no memories" "Error"];
    post "/apps/{app_name}/users/{user_id}/memory/events" => memory::add_events, PathAppUser,
        "agentstate extension: ADK's add_events_to_memory (`events`, `sessionId`?, `customMetadata`? with `ttl`): each event id once per session",
        Some("MemoryEventsRequest"),
        [200 "How many were added (`added`)" "Status", 400 "Bad id, ttl or a memory over the size limit" "Error",
         422 "events missing or malformed" "Error", 501 "The backend keeps no memories" "Error"];
    post "/apps/{app_name}/users/{user_id}/memories" => memory::add_memories, PathAppUser,
        "agentstate extension: ADK's add_memory (`memories`: MemoryEntry list, `customMetadata`?)", Some("AddMemoriesRequest"),
        [200 "The memories stored, ids filled in" "MemoryList", 400 "No text, a bad id or ttl, or over the size limit: nothing written" "Error",
         422 "memories missing or malformed" "Error", 501 "The backend keeps no memories" "Error"];
    get "/apps/{app_name}/users/{user_id}/memories" => memory::search_or_list, PathAppUser,
        "agentstate extension: with `query`, ADK's search_memory (`limit`, 10 by default; by words, by meaning or both: `mode`, `minSimilarity`); without, the memories oldest first (`pageSize`, `pageToken`)",
        None,
        [200 "The memories (and `nextPageToken` when listing)" "MemoryList",
         400 "A query without words, a bad limit, mode, minSimilarity or token; mode semantic or hybrid for an app without an embedding provider" "Error",
         501 "The backend keeps no memories" "Error", 503 "The embedding provider failed (mode semantic)" "Error"];
    delete "/apps/{app_name}/users/{user_id}/memories" => memory::erase, PathAppUser,
        "agentstate extension: delete every memory of the user", None,
        [200 "How many (`deleted`)" "Status", 501 "The backend keeps no memories" "Error"];
    delete "/apps/{app_name}/users/{user_id}/memories/{memory_id}" => memory::delete, PathAppUser,
        "agentstate extension: ADK's delete_memory; adding its session again leaves it out", None,
        [200 "How many copies (`deleted`)" "Status", 404 "The user has no memory with that id" "Error",
         501 "The backend keeps no memories" "Error"];
    post "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts" => artifacts::save, PathAppUser,
        "Save an artifact (`{filename, artifact, customMetadata?}`; the part's bytes URL-safe base64) as its next version, as `adk api_server` does; `user:` names are the user's in every session. The body may be as large as --max-artifact-bytes allows",
        Some("SaveArtifactRequest"),
        [200 "The new version's metadata" "ArtifactVersion", 400 "ADK's InputValidationError (a bad id or name, a part with nothing to keep, a reference outside the caller's scope)" "Error",
         413 "Over --max-artifact-bytes" "Error", 422 "filename or artifact missing or malformed" "Error",
         501 "The backend keeps no artifacts" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts" => artifacts::list, PathAppUser,
        "The names of the session's artifacts and the user's `user:` artifacts, sorted", None,
        [200 "Names" "Names", 400 "Bad id" "Error", 501 "The backend keeps no artifacts" "Error"];
    get "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts/{*artifact_path}" => artifacts::get, PathAppUser,
        "`adk api_server`'s artifact reads (names may hold /, matched in its order): `NAME` (`?version=`, the latest by default) and `NAME/versions/V` (`latest` too) answer the part; `NAME/versions` the version numbers; `NAME/versions/metadata` every version's metadata; `NAME/versions/V/metadata` one version's",
        None,
        [200 "A part, version numbers, or version metadata" "ArtifactRead", 400 "ADK's InputValidationError" "Error",
         404 "Artifact not found, or Artifact version not found" "Error", 422 "Invalid version ID" "Error",
         501 "The backend keeps no artifacts" "Error"];
    delete "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts/{*artifact_path}" => artifacts::delete, PathAppUser,
        "Delete every version of an artifact (also when there is none)", None,
        [200 "null" "Null", 400 "ADK's InputValidationError" "Error", 501 "The backend keeps no artifacts" "Error"];
    post "/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts/{*artifact_path}" => artifacts::upload, PathAppUser,
        "agentstate extension: save the request's body as the artifact's next version, its bytes as they are (no base64, no JSON), typed by the request's Content-Type (application/octet-stream without one); `?metadata=` a JSON object of custom metadata. Streamed to its file with --artifacts-dir, never whole in memory",
        Some("ArtifactBytes"),
        [200 "The new version's metadata" "ArtifactVersion", 400 "ADK's InputValidationError, or metadata that is not a JSON object" "Error",
         413 "Over --max-artifact-bytes" "Error", 501 "The backend keeps no artifacts" "Error"];
    post "/apps/{app_name}/users/{user_id}/artifacts/{*artifact_path}" => artifacts::upload_user, PathAppUser,
        "agentstate extension: the raw save of the session route, for a `user:` name without a session",
        Some("ArtifactBytes"),
        [200 "The new version's metadata" "ArtifactVersion", 400 "ADK's InputValidationError, or metadata that is not a JSON object" "Error",
         413 "Over --max-artifact-bytes" "Error", 501 "The backend keeps no artifacts" "Error"];
    post "/apps/{app_name}/users/{user_id}/artifacts" => artifacts::save_user, PathAppUser,
        "agentstate extension: save a `user:` artifact without a session (ADK's save_artifact with session_id None)",
        Some("SaveArtifactRequest"),
        [200 "The new version's metadata" "ArtifactVersion", 400 "ADK's InputValidationError (a name without `user:` needs a session)" "Error",
         413 "Over --max-artifact-bytes" "Error", 422 "filename or artifact missing or malformed" "Error",
         501 "The backend keeps no artifacts" "Error"];
    get "/apps/{app_name}/users/{user_id}/artifacts" => artifacts::list_user, PathAppUser,
        "agentstate extension: the names of the user's `user:` artifacts, sorted", None,
        [200 "Names" "Names", 400 "Bad id" "Error", 501 "The backend keeps no artifacts" "Error"];
    get "/apps/{app_name}/users/{user_id}/artifacts/{*artifact_path}" => artifacts::get_user, PathAppUser,
        "agentstate extension: the artifact reads of the session routes, for `user:` names without a session", None,
        [200 "A part, version numbers, or version metadata" "ArtifactRead", 400 "ADK's InputValidationError" "Error",
         404 "Artifact not found, or Artifact version not found" "Error", 422 "Invalid version ID" "Error",
         501 "The backend keeps no artifacts" "Error"];
    delete "/apps/{app_name}/users/{user_id}/artifacts/{*artifact_path}" => artifacts::delete_user, PathAppUser,
        "agentstate extension: delete every version of a `user:` artifact without a session", None,
        [200 "null" "Null", 400 "ADK's InputValidationError" "Error", 501 "The backend keeps no artifacts" "Error"];
    delete "/apps/{app_name}/users/{user_id}" => sessions::erase_user, Admin,
        "agentstate extension: erase everything of a user in the app (sessions, events, user: state, memories, artifacts; app: state stays); `?dryRun=true` only counts",
        None,
        [200 "What was (or would be) removed" "Erased", 400 "Bad id" "Error",
         501 "The backend cannot erase (no lifecycle capability)" "Error"];
    get "/" => crate::ui::root, Public, "The session inspector (a redirect to /ui)", None, [303 "To /ui" "Html"];
    get "/ui" => crate::ui::apps, Ui, "Inspector: the apps the caller may read", None, [200 "An HTML page" "Html"];
    get "/ui/login" => crate::ui::login_page, Public, "Inspector: sign in with an access token", None, [200 "An HTML page" "Html"];
    post "/ui/login" => crate::ui::login, Public, "Inspector: keep a valid token in an HttpOnly, SameSite=Strict cookie", None,
        [303 "To the page asked for, or back to the form" "Html"];
    post "/ui/logout" => crate::ui::logout, Public, "Inspector: forget the token", None, [303 "To the sign-in page" "Html"];
    get "/ui/assets/{file}" => crate::ui::asset, Public, "Inspector: its stylesheet and script", None,
        [200 "CSS or JavaScript" "Asset", 404 "No such file" "Html"];
    get "/ui/apps/{app_name}" => crate::ui::users, Ui, "Inspector: an app's users (`?page=`), or the sessions with an id (`?session=`)", None,
        [200 "An HTML page" "Html", 404 "No such app" "Html"];
    get "/ui/apps/{app_name}/users/{user_id}" => crate::ui::sessions, Ui, "Inspector: a user's sessions, newest first", None,
        [200 "An HTML page" "Html", 404 "No such app or user" "Html"];
    get "/ui/apps/{app_name}/users/{user_id}/memories" => crate::ui::memories, Ui,
        "Inspector: a user's memories, oldest first (`?after=` pages on), or those a search finds (`?q=`)", None,
        [200 "An HTML page" "Html", 400 "Bad id or page token" "Html"];
    get "/ui/apps/{app_name}/users/{user_id}/sessions/{session_id}" => crate::ui::session, Ui,
        "Inspector: a session's timeline (`?page=`, newest page by default) and its state as of an event (`?at=`)", None,
        [200 "An HTML page" "Html", 404 "No such session" "Html"];
    get "/ui/apps/{app_name}/users/{user_id}/sessions/{session_id}/state" => crate::ui::state, Ui,
        "Inspector: the state panel as of an event (`?at=`), for the page's script", None,
        [200 "An HTML fragment" "Html", 404 "No such session" "Html"];
    get "/ui/apps/{app_name}/users/{user_id}/sessions/{session_id}/live" => crate::ui::live, Ui,
        "Inspector: events appended after `?after=MICROS:ID`, as timeline rows", None,
        [200 "`html`, `after`, `count`" "Status", 404 "No such session" "Status"];
    post "/ui/apps/{app_name}/users/{user_id}/sessions/{session_id}/delete" => crate::ui::delete, Ui,
        "Inspector: delete the session (a form with the page's secret)", None, [303 "To the user's sessions" "Html", 403 "Stale form" "Html"];
    post "/ui/apps/{app_name}/users/{user_id}/sessions/{session_id}/rewind" => crate::ui::rewind, Ui,
        "Inspector: rewind before an invocation (a form with the page's secret)", None, [303 "To the session" "Html", 403 "Stale form" "Html"];
    post "/ui/apps/{app_name}/users/{user_id}/sessions/{session_id}/fork" => crate::ui::fork, Ui,
        "Inspector: fork at an event (a form with the page's secret)", None, [303 "To the fork" "Html", 403 "Stale form" "Html"];
    get "/healthz" => system::healthz, Public, "Liveness", None, [200 "Alive" "Status"];
    get "/readyz" => system::readyz, Public, "Readiness: the database answers", None, [200 "Ready" "Status", 503 "The database is unreachable" "Status"];
    get "/metrics" => system::metrics, Token, "Prometheus metrics", None, [200 "Metrics" "Metrics"];
    get "/openapi.json" => system::openapi, Token, "This document", None, [200 "OpenAPI 3.1" "Status"];
}
