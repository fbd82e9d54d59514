//! Long-term memory over HTTP: `adk api_server`'s memory route (add a stored session to memory),
//! answered as it answers it, and agentstate's own routes to add events and memories, search,
//! list and delete. Every route names its owner in the path, so a user's token reaches that
//! user's memories only.

use std::collections::HashMap;

use agentstate::memory::{
    MAX_MEMORY_PAGE, Memory, MemoryOptions, MemoryOwner, MemoryService, NewMemory, SearchMode, SearchOptions,
};
use agentstate::store::MemoryCursor;
use agentstate::wire::engine::rfc3339;
use agentstate::wire::{content_from_wire, content_to_wire, event_from_wire};
use agentstate::{Event, GetSessionConfig, Map, SessionKey, Value};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use serde::Deserialize;
use serde_json::json;

use crate::error::ApiError;
use crate::limits::{Body, check_path_safe};
use crate::state::AppState;

type Reply = Result<Json<Value>, ApiError>;

fn owner(app: &str, user: &str) -> Result<MemoryOwner, ApiError> {
    check_path_safe("app_name", app)?;
    check_path_safe("user_id", user)?;
    Ok(MemoryOwner::new(app, user)?)
}

fn memory(state: &AppState) -> MemoryService {
    state.memory().clone()
}

/// A JSON object body; empty → `{}`.
fn object(bytes: &Bytes) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(bytes).map_err(|e| ApiError::invalid_json(&e))? {
        Value::Object(map) => Ok(map),
        other => Err(invalid("body", "Input should be a valid dictionary", &other)),
    }
}

fn invalid(field: &str, message: impl std::fmt::Display, input: &Value) -> ApiError {
    ApiError::Unprocessable(
        json!([{"type": "model_type", "loc": ["body", field], "msg": message.to_string(), "input": input}]),
    )
}

/// A field by its camelCase or snake_case name.
fn field<'a>(body: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    body.get(camel).or_else(|| body.get(snake)).filter(|v| !v.is_null())
}

fn metadata(body: &Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    match field(body, "customMetadata", "custom_metadata") {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(invalid("customMetadata", "Input should be a valid dictionary", other)),
    }
}

fn events(body: &Map<String, Value>) -> Result<Vec<Event>, ApiError> {
    let Some(value) = field(body, "events", "events") else {
        return Err(ApiError::missing("events", &Value::Object(body.clone())));
    };
    let Value::Array(items) = value else { return Err(invalid("events", "Input should be a valid list", value)) };
    items.iter().map(|raw| event_from_wire(raw.clone()).map_err(|e| invalid("events", e, raw))).collect()
}

/// A memory as the API shows it: ADK's `MemoryEntry` (camelCase), with where it came from.
pub(crate) fn memory_json(memory: &Memory) -> Value {
    let mut out = json!({
        "id": memory.id,
        "content": content_to_wire(&memory.content),
        "customMetadata": memory.custom_metadata,
        "author": memory.author,
        "timestamp": memory.timestamp,
        "sessionId": memory.session_id,
        "createTime": rfc3339(memory.create_micros),
    });
    if let Some(expire) = memory.expire_micros {
        out["expireTime"] = json!(rfc3339(expire));
    }
    out
}

/// What a memory write starts from: the server, the owner its path names, the session the path
/// names (on the routes that have one) and the body's JSON object.
pub(crate) struct Write {
    state: AppState,
    owner: MemoryOwner,
    session_id: Option<String>,
    body: Map<String, Value>,
}

impl FromRequest<AppState> for Write {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = request.into_parts();
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(&mut parts, state)
            .await
            .map_err(|e| ApiError::BadRequest(e.body_text()))?;
        let Body(bytes) = Body::from_request(Request::from_parts(parts, body), state).await?;
        let param = |name: &str| params.get(name).map_or("", String::as_str);
        let owner = owner(param("app_name"), param("user_id"))?;
        let session_id = params.get("session_id").cloned();
        if let Some(id) = &session_id {
            check_path_safe("session_id", id)?;
        }
        Ok(Self { state: state.clone(), owner, session_id, body: object(&bytes)? })
    }
}

impl Write {
    /// The write's options: the body's `customMetadata`.
    fn options(&self) -> Result<MemoryOptions, ApiError> {
        Ok(MemoryOptions { custom_metadata: metadata(&self.body)?, ..MemoryOptions::default() })
    }

    /// The body's `sessionId` (or `session_id`), if it has one.
    fn body_session_id(&self) -> Result<Option<String>, ApiError> {
        match field(&self.body, "sessionId", "session_id") {
            None => Ok(None),
            Some(Value::String(id)) => Ok(Some(id.clone())),
            Some(other) => Err(invalid("sessionId", "Input should be a valid string", other)),
        }
    }
}

/// `PATCH /apps/{app}/users/{user}/memory` (`adk api_server`): adds the stored session
/// `sessionId` to memory; `null`, or 404 `Session not found`.
pub(crate) async fn add_session(write: Write) -> Reply {
    let Some(session_id) = write.body_session_id()? else {
        return Err(ApiError::missing("sessionId", &Value::Object(write.body)));
    };
    check_path_safe("session_id", &session_id)?;
    let key = SessionKey::new(write.owner.app_name(), write.owner.user_id(), &session_id)?;
    let Some(session) = write.state.service().get_session(&key, GetSessionConfig::default()).await? else {
        return Err(ApiError::NotFound("Session not found".into()));
    };
    memory(&write.state).add_session(&session).await?;
    Ok(Json(Value::Null))
}

/// `PUT /apps/{app}/users/{user}/memory/sessions/{session}`: `{"events": […], "customMetadata"?}`
/// is the session's whole contribution to memory now (ADK's `add_session_to_memory` for a session
/// held elsewhere); answers how many memories it has.
pub(crate) async fn put_session(write: Write) -> Reply {
    let (options, events) = (write.options()?, events(&write.body)?);
    let session_id = write.session_id.as_deref().unwrap_or_default();
    let memories = memory(&write.state).replace_session(&write.owner, session_id, &events, &options).await?;
    Ok(Json(json!({"memories": memories})))
}

/// `POST /apps/{app}/users/{user}/memory/events`: ADK's `add_events_to_memory`
/// (`{"events", "sessionId"?, "customMetadata"?}`); answers how many were added.
pub(crate) async fn add_events(write: Write) -> Reply {
    let session_id = write.body_session_id()?;
    let (options, events) = (write.options()?, events(&write.body)?);
    let added = memory(&write.state).add_events(&write.owner, session_id.as_deref(), &events, &options).await?;
    Ok(Json(json!({"added": added})))
}

/// `POST /apps/{app}/users/{user}/memories`: ADK's `add_memory`
/// (`{"memories": [MemoryEntry…], "customMetadata"?}`); answers the memories stored.
pub(crate) async fn add_memories(write: Write) -> Reply {
    let options = write.options()?;
    let Some(value) = field(&write.body, "memories", "memories") else {
        return Err(ApiError::missing("memories", &Value::Object(write.body.clone())));
    };
    let Value::Array(items) = value else { return Err(invalid("memories", "Input should be a valid list", value)) };
    let entries = items.iter().map(new_memory).collect::<Result<Vec<_>, _>>()?;
    let stored = memory(&write.state).add_memories(&write.owner, entries, &options).await?;
    Ok(Json(json!({"memories": stored.iter().map(memory_json).collect::<Vec<_>>()})))
}

/// One `MemoryEntry` of a request.
fn new_memory(raw: &Value) -> Result<NewMemory, ApiError> {
    let Value::Object(entry) = raw else { return Err(invalid("memories", "Input should be a valid dictionary", raw)) };
    let text = |camel: &str| match field(entry, camel, camel) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(camel, "Input should be a valid string", other)),
    };
    let Some(content) = field(entry, "content", "content") else { return Err(ApiError::missing("content", raw)) };
    Ok(NewMemory {
        id: text("id")?,
        content: content_from_wire(content.clone()).map_err(|e| invalid("content", e, content))?,
        custom_metadata: metadata(entry)?,
        author: text("author")?,
        timestamp: text("timestamp")?,
    })
}

/// The query of `GET …/memories`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MemoryQuery {
    query: Option<String>,
    limit: Option<usize>,
    mode: Option<String>,
    min_similarity: Option<f32>,
    page_size: Option<usize>,
    page_token: Option<String>,
}

/// `GET /apps/{app}/users/{user}/memories`: with `query`, ADK's `search_memory` (`limit`, 10 by
/// default, at most 100; `mode` `auto`, `text`, `semantic` or `hybrid`, and `minSimilarity`,
/// when the app has an embedding provider); without, the memories oldest first a page at a time (`pageSize`,
/// `pageToken`).
pub(crate) async fn search_or_list(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    query: Result<Query<MemoryQuery>, axum::extract::rejection::QueryRejection>,
) -> Reply {
    let owner = owner(&app, &user)?;
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let service = memory(&state);
    let mode = match query.mode.as_deref() {
        None => SearchMode::Auto,
        Some(mode) => mode.parse().map_err(ApiError::BadRequest)?,
    };
    // Every parameter is checked whichever of search and listing uses it.
    for (name, value) in [("limit", query.limit), ("pageSize", query.page_size)] {
        if value.is_some_and(|n| !(1..=MAX_MEMORY_PAGE).contains(&n)) {
            return Err(ApiError::BadRequest(format!("{name} must be from 1 to {MAX_MEMORY_PAGE}")));
        }
    }
    if query.min_similarity.is_some_and(|floor| !(-1.0..=1.0).contains(&floor)) {
        return Err(ApiError::BadRequest("minSimilarity must be from -1 to 1 (a cosine similarity)".into()));
    }
    if matches!(mode, SearchMode::Semantic | SearchMode::Hybrid) && service.embedders().of(&app).is_none() {
        return Err(ApiError::BadRequest(format!(
            "mode {}: app {app} has no embedding provider to search by meaning (serve --embeddings)",
            query.mode.as_deref().unwrap_or_default()
        )));
    }
    if let Some(text) = &query.query {
        let options = SearchOptions { limit: query.limit, mode, min_similarity: query.min_similarity };
        let found = service.search_with(&owner, text, &options).await?;
        return Ok(Json(json!({"memories": found.iter().map(memory_json).collect::<Vec<_>>()})));
    }
    let after = query.page_token.as_deref().filter(|t| !t.is_empty()).map(MemoryCursor::from_page_token).transpose()?;
    let page = service.list(&owner, after, query.page_size.unwrap_or(100)).await?;
    let mut out = json!({"memories": page.memories.iter().map(memory_json).collect::<Vec<_>>()});
    if let Some(next) = &page.next {
        out["nextPageToken"] = json!(next.to_page_token());
    }
    Ok(Json(out))
}

/// `DELETE /apps/{app}/users/{user}/memories/{memory}`: ADK's `delete_memory`; 404 when the
/// user has no memory with that id.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path((app, user, id)): Path<(String, String, String)>,
) -> Reply {
    let owner = owner(&app, &user)?;
    check_path_safe("memory_id", &id)?;
    match memory(&state).delete(&owner, &id).await? {
        0 => Err(ApiError::NotFound(format!("Memory {id} not found"))),
        deleted => Ok(Json(json!({"deleted": deleted}))),
    }
}

/// `DELETE /apps/{app}/users/{user}/memories`: every memory of the user.
pub(crate) async fn erase(State(state): State<AppState>, Path((app, user)): Path<(String, String)>) -> Reply {
    let owner = owner(&app, &user)?;
    let deleted = memory(&state).erase(&owner).await?;
    Ok(Json(json!({"deleted": deleted})))
}
