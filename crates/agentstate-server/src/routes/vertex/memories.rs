//! Memory Bank's REST surface (Agent Engine, `v1` and `v1beta1`, both path forms), over the
//! memory store: a client written for the managed service (ADK for Python's
//! `VertexAiMemoryBankService`, its base URL pointed at this server) keeps its memories here,
//! and agentstate's own memory clients read them. How scopes map to owners is
//! [`agentstate::memory::bank`]'s.
//!
//! Memories are written directly (create, patch, delete, `generate` from direct memories), or
//! generated from conversations (`generate` from contents or a session, `ingestEvents`) by the
//! engine's model ([`agentstate::memory::generate`]) in the background, behind an operation to
//! poll ([`crate::running::Running`]); without a model, those answer `FAILED_PRECONDITION`.
//! Every other operation is done when it is answered. Bodies are read as protobuf's JSON mapping
//! reads them: every field in camelCase or snake_case, unknown fields refused.

use std::collections::{BTreeMap, HashMap};

use agentstate::memory::{BankMemory, EngineCursor, GenerateOptions, MemoryService, Scope, Turn};
use agentstate::store::MemoryCursor;
use agentstate::{Map, Timestamp, Value};
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;

use super::error::GoogleError;
use super::request::{self, duration, object, string, take};
use super::resource::{self, Engine};
use super::{Page, query};
use crate::auth::Permit;
use crate::limits::{Body, check_path_safe};
use crate::state::AppState;

type Reply = Result<Json<Value>, GoogleError>;

/// How many memories a similarity search answers when `top_k` is not given (the managed
/// service's default).
const DEFAULT_TOP_K: usize = 3;
/// The largest page of a listing or a simple retrieval, and the default.
const PAGE: usize = 100;
/// The most direct memories one `generate` takes (the managed service's limit).
const MAX_DIRECT_MEMORIES: usize = 5;

/// What every memory route starts from: the server, the engine its path names, the caller's
/// permit and the path's memory segment (if it has one).
pub(crate) struct MemoryCall {
    state: AppState,
    engine: Engine,
    permit: Permit,
    memory: String,
}

impl FromRequestParts<AppState> for MemoryCall {
    type Rejection = GoogleError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, GoogleError> {
        let (params, permit) = super::params_and_permit(parts, state).await?;
        MemoryCall::new(state.clone(), params, permit)
    }
}

impl MemoryCall {
    fn new(state: AppState, mut params: HashMap<String, String>, permit: Permit) -> Result<Self, GoogleError> {
        let memory = params.remove("memory").unwrap_or_default();
        Ok(Self { engine: Engine::from_params(&params)?, state, permit, memory })
    }

    fn service(&self) -> &MemoryService {
        self.state.memory()
    }

    /// 403 unless the caller may touch the scope's memories: its `user_id`'s, or (a scope
    /// without one) every user's of the engine.
    fn check_scope(&self, scope: &Scope) -> Result<(), GoogleError> {
        match scope.entries().get("user_id") {
            Some(user) => self.permit.check(&self.engine.app, user)?,
            None => self.permit.check_every_user(&self.engine.app)?,
        }
        Ok(())
    }

    /// The memory the path names, if the caller may see it.
    async fn named(&self) -> Result<BankMemory, GoogleError> {
        agentstate::validate_id("memory", &self.memory)?;
        check_path_safe("memory", &self.memory)?;
        let found = self.service().bank_get(&self.engine.app, &self.memory).await?;
        let memory = found.ok_or_else(|| self.not_found())?;
        self.check_scope(&memory.scope)?;
        Ok(memory)
    }

    fn not_found(&self) -> GoogleError {
        GoogleError::not_found(format!("Memory {} not found.", self.engine.memory_name(&self.memory)))
    }

    /// A memory as the API shows it.
    fn memory_json(&self, memory: &BankMemory) -> Value {
        let mut out = Map::new();
        out.insert("name".into(), json!(self.engine.memory_name(&memory.id)));
        if let Some(name) = &memory.display_name {
            out.insert("displayName".into(), json!(name));
        }
        if let Some(description) = &memory.description {
            out.insert("description".into(), json!(description));
        }
        out.insert("fact".into(), json!(memory.fact));
        out.insert("scope".into(), json!(memory.scope.entries()));
        out.insert("createTime".into(), json!(Timestamp::from_micros(memory.create_micros).rfc3339()));
        out.insert("updateTime".into(), json!(Timestamp::from_micros(memory.update_micros).rfc3339()));
        if let Some(expire) = memory.expire_micros {
            out.insert("expireTime".into(), json!(Timestamp::from_micros(expire).rfc3339()));
        }
        if !memory.topics.is_empty() {
            out.insert("topics".into(), Value::Array(memory.topics.clone()));
        }
        if !memory.metadata.is_empty() {
            let typed: Map<String, Value> = memory
                .metadata
                .iter()
                .map(|(key, value)| (key.clone(), typed_value(value, memory.timestamp_keys.contains(key))))
                .collect();
            out.insert("metadata".into(), Value::Object(typed));
        }
        Value::Object(out)
    }

    /// A done operation on a memory, answering it.
    fn memory_operation(&self, memory: &BankMemory) -> Value {
        let mut response = self.memory_json(memory);
        response["@type"] =
            json!(format!("type.googleapis.com/google.cloud.aiplatform.{}.Memory", self.engine.version));
        json!({"name": self.engine.memory_operation_name(&memory.id), "done": true, "response": response})
    }
}

/// A metadata value as the API types it.
fn typed_value(value: &Value, timestamp: bool) -> Value {
    match value {
        Value::String(text) if timestamp => json!({"timestampValue": text}),
        Value::String(text) => json!({"stringValue": text}),
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) => json!({"doubleValue": n}),
        other => json!({"stringValue": other.to_string()}),
    }
}

/// The request's `scope`: an object of strings.
fn scope_of(body: &mut Map<String, Value>) -> Result<Scope, GoogleError> {
    let scope =
        take(body, "scope").ok_or_else(|| GoogleError::invalid("scope is required, e.g. {\"user_id\": \"123\"}"))?;
    let mut entries = BTreeMap::new();
    for (key, value) in object(scope, "scope")? {
        match value {
            Value::String(text) => entries.insert(key, text),
            other => return Err(GoogleError::invalid(format!("scope.{key} must be a string, not {other}"))),
        };
    }
    Ok(Scope::new(entries)?)
}

/// The request's `metadata` (`{key: {string_value | double_value | bool_value | timestamp_value}}`)
/// as plain values, and the keys of the times.
fn metadata_of(value: Value) -> Result<(Map<String, Value>, Vec<String>), GoogleError> {
    let mut plain = Map::new();
    let mut times = Vec::new();
    for (key, typed) in object(value, "metadata")? {
        let mut typed = object(typed, &format!("metadata.{key}"))?;
        let one = |typed: &mut Map<String, Value>, name: &str| take(typed, name);
        let value = if let Some(text) = one(&mut typed, "stringValue") {
            json!(string(text, &format!("metadata.{key}.string_value"))?)
        } else if let Some(number) = one(&mut typed, "doubleValue") {
            match number {
                Value::Number(n) => Value::Number(n),
                other => {
                    return Err(GoogleError::invalid(format!(
                        "metadata.{key}.double_value must be a number, not {other}"
                    )));
                }
            }
        } else if let Some(flag) = one(&mut typed, "boolValue") {
            match flag {
                Value::Bool(b) => Value::Bool(b),
                other => {
                    return Err(GoogleError::invalid(format!(
                        "metadata.{key}.bool_value must be a boolean, not {other}"
                    )));
                }
            }
        } else if let Some(time) = one(&mut typed, "timestampValue") {
            let text = string(time, &format!("metadata.{key}.timestamp_value"))?;
            let micros = resource::parse_rfc3339(&text, &format!("metadata.{key}.timestamp_value"))?;
            times.push(key.clone());
            json!(Timestamp::from_micros(micros).rfc3339())
        } else {
            return Err(GoogleError::invalid(format!(
                "metadata.{key} must have one of string_value, double_value, bool_value or timestamp_value"
            )));
        };
        if let Some(unknown) = typed.keys().next() {
            return Err(GoogleError::invalid(format!("metadata.{key}: unknown or second value {unknown:?}")));
        }
        plain.insert(key, value);
    }
    Ok((plain, times))
}

/// When a memory written now expires: `expireTime`, else `ttl`, else not (the app's default).
fn expiry_of(body: &mut Map<String, Value>, now_micros: i64) -> Result<Option<i64>, GoogleError> {
    let expire = take(body, "expireTime").map(|v| string(v, "expireTime")).transpose()?;
    let ttl = take(body, "ttl").map(|v| string(v, "ttl")).transpose()?;
    match (expire, ttl) {
        (Some(_), Some(_)) => Err(GoogleError::invalid("give ttl or expireTime, not both")),
        (Some(time), None) => Ok(Some(resource::parse_rfc3339(&time, "expireTime")?)),
        (None, Some(ttl)) => {
            let micros = i64::try_from(duration(&ttl, "ttl")?.as_micros()).unwrap_or(i64::MAX);
            Ok(Some(now_micros.saturating_add(micros)))
        }
        (None, None) => Ok(None),
    }
}

/// Fields about revisions, which this server does not keep: read and left aside.
const REVISION_FIELDS: [&str; 4] = ["revisionExpireTime", "revisionTtl", "disableMemoryRevisions", "revisionLabels"];

/// Sets the memory's optional fields the body has.
fn set_fields(memory: &mut BankMemory, body: &mut Map<String, Value>) -> Result<(), GoogleError> {
    if let Some(name) = take(body, "displayName") {
        memory.display_name = Some(string(name, "displayName")?);
    }
    if let Some(description) = take(body, "description") {
        memory.description = Some(string(description, "description")?);
    }
    if let Some(topics) = take(body, "topics") {
        memory.topics = match topics {
            Value::Array(topics) => topics,
            other => return Err(GoogleError::invalid(format!("topics must be a list, not {other}"))),
        };
    }
    if let Some(metadata) = take(body, "metadata") {
        (memory.metadata, memory.timestamp_keys) = metadata_of(metadata)?;
    }
    for field in REVISION_FIELDS {
        take(body, field);
    }
    Ok(())
}

fn refuse_unknown(body: &Map<String, Value>, of: &str) -> Result<(), GoogleError> {
    match body.keys().next() {
        Some(unknown) => Err(GoogleError::invalid(format!("Unknown name \"{unknown}\" at '{of}': Cannot find field."))),
        None => Ok(()),
    }
}

/// The query of the create route.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateQuery {
    memory_id: Option<String>,
}

/// `POST …/memories[?memoryId=ID]`: stores a memory `{fact, scope, …}`; a done operation holding
/// it.
pub(crate) async fn create(
    call: MemoryCall,
    create_query: Result<Query<CreateQuery>, QueryRejection>,
    Body(bytes): Body,
) -> Reply {
    let id = match query(create_query)?.memory_id.filter(|id| !id.is_empty()) {
        Some(id) => {
            agentstate::validate_id("memoryId", &id)?;
            check_path_safe("memoryId", &id)?;
            id
        }
        None => resource::new_memory_id(),
    };
    let mut body = request::body(&bytes)?;
    let memory = new_memory(&call, id, &mut body)?;
    refuse_unknown(&body, "memory")?;
    let stored = store(&call, memory).await?;
    Ok(Json(call.memory_operation(&stored)))
}

/// A memory to store from a body's fields (`fact`, `scope`, the optional ones).
fn new_memory(call: &MemoryCall, id: String, body: &mut Map<String, Value>) -> Result<BankMemory, GoogleError> {
    let fact = take(body, "fact").map(|v| string(v, "fact")).transpose()?.unwrap_or_default();
    if fact.trim().is_empty() {
        return Err(GoogleError::invalid("fact is required and must not be empty"));
    }
    let scope = scope_of(body)?;
    call.check_scope(&scope)?;
    let mut memory = BankMemory::new(id, scope, fact);
    memory.expire_micros = expiry_of(body, call.state.service().now_micros())?;
    set_fields(&mut memory, body)?;
    Ok(memory)
}

async fn store(call: &MemoryCall, memory: BankMemory) -> Result<BankMemory, GoogleError> {
    let id = memory.id.clone();
    match call.service().bank_create(&call.engine.app, memory).await {
        Err(agentstate::Error::AlreadyExists { .. }) => {
            Err(GoogleError::already_exists(format!("Memory {} already exists.", call.engine.memory_name(&id))))
        }
        other => Ok(other?),
    }
}

/// `GET …/memories/{id}`.
pub(crate) async fn get(call: MemoryCall) -> Reply {
    let memory = call.named().await?;
    Ok(Json(call.memory_json(&memory)))
}

/// The query of `PATCH …/memories/{id}`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PatchQuery {
    update_mask: Option<String>,
}

/// `PATCH …/memories/{id}[?updateMask=fact,display_name,…]`: sets the fields the mask names
/// (without one, those the body has); a done operation holding the memory.
pub(crate) async fn patch(
    call: MemoryCall,
    patch_query: Result<Query<PatchQuery>, QueryRejection>,
    Body(bytes): Body,
) -> Reply {
    let mask = query(patch_query)?.update_mask;
    let mut memory = call.named().await?;
    let mut body = request::body(&bytes)?;
    body.remove("name");
    let fields: Vec<String> = match mask.as_deref().filter(|m| !m.trim().is_empty()) {
        Some(mask) => mask.split(',').map(|f| agentstate::wire::to_camel(f.trim())).collect(),
        None => body.keys().map(|k| agentstate::wire::to_camel(k)).collect(),
    };
    let now = call.state.service().now_micros();
    for field in &fields {
        match field.as_str() {
            "fact" => {
                let fact = take(&mut body, "fact").map(|v| string(v, "fact")).transpose()?.unwrap_or_default();
                if fact.trim().is_empty() {
                    return Err(GoogleError::invalid("fact must not be empty"));
                }
                memory.fact = fact;
            }
            "displayName" | "description" | "topics" | "metadata" => {
                let mut one = Map::new();
                if let Some(value) = take(&mut body, field) {
                    one.insert(field.clone(), value);
                }
                match field.as_str() {
                    "displayName" => memory.display_name = None,
                    "description" => memory.description = None,
                    "topics" => memory.topics.clear(),
                    _ => (memory.metadata, memory.timestamp_keys) = (Map::new(), Vec::new()),
                }
                set_fields(&mut memory, &mut one)?;
            }
            "expireTime" | "ttl" => {
                let mut one = Map::new();
                if let Some(value) = take(&mut body, field) {
                    one.insert(field.clone(), value);
                }
                memory.expire_micros = expiry_of(&mut one, now)?;
            }
            "scope" => {
                let same = scope_of(&mut body)?;
                if same != memory.scope {
                    return Err(GoogleError::invalid("scope cannot be updated"));
                }
            }
            other if REVISION_FIELDS.contains(&other) => {
                take(&mut body, other);
            }
            other => {
                return Err(GoogleError::invalid(format!(
                    "{other:?} cannot be updated; update_mask takes fact, display_name, description, topics, \
                     metadata, expire_time or ttl"
                )));
            }
        }
    }
    // Fields the mask leaves out are not updated.
    body.clear();
    let id = memory.id.clone();
    match call.service().bank_update(&call.engine.app, memory).await? {
        Some(updated) => Ok(Json(call.memory_operation(&updated))),
        None => Err(GoogleError::not_found(format!("Memory {} not found.", call.engine.memory_name(&id)))),
    }
}

/// `DELETE …/memories/{id}`: a done operation.
pub(crate) async fn delete(call: MemoryCall) -> Reply {
    let memory = call.named().await?;
    if !call.service().bank_delete(&call.engine.app, &memory.id).await? {
        return Err(call.not_found());
    }
    Ok(Json(json!({
        "name": call.engine.memory_operation_name(&memory.id),
        "done": true,
        "response": {"@type": "type.googleapis.com/google.protobuf.Empty"},
    })))
}

/// `GET …/memories[?pageSize][&pageToken]`: every memory of the engine, of every scope (the
/// caller's token must cover every user).
pub(crate) async fn list(call: MemoryCall, page_query: Result<Query<Page>, QueryRejection>) -> Reply {
    let page = query(page_query)?;
    call.permit.check_every_user(&call.engine.app)?;
    if page.filter.as_deref().is_some_and(|f| !f.trim().is_empty()) {
        return Err(GoogleError::invalid("filter is not supported on memories here; retrieve a scope's memories"));
    }
    if page.order_by.as_deref().is_some_and(|o| !o.trim().is_empty()) {
        return Err(GoogleError::invalid("orderBy is not supported on memories here; they are listed by scope"));
    }
    let after = page.page_token.as_deref().filter(|t| !t.is_empty()).map(EngineCursor::from_page_token).transpose()?;
    let listed = call.service().bank_list_engine(&call.engine.app, after, page_size(page.page_size)).await?;
    let mut out = json!({"memories": listed.memories.iter().map(|m| call.memory_json(m)).collect::<Vec<_>>()});
    if let Some(next) = listed.next {
        out["nextPageToken"] = json!(next.to_page_token());
    }
    Ok(Json(out))
}

fn page_size(requested: Option<i64>) -> usize {
    requested.and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0).map_or(PAGE, |n| n.min(PAGE))
}

/// `POST …/memories:retrieve {scope, similaritySearchParams {searchQuery, topK} |
/// simpleRetrievalParams {pageSize, pageToken}}`: the scope's memories nearest the query (no
/// page token: a similarity search is one page), or a page of them oldest first.
pub(crate) async fn retrieve(call: MemoryCall, Body(bytes): Body) -> Reply {
    let mut body = request::body(&bytes)?;
    let scope = scope_of(&mut body)?;
    call.check_scope(&scope)?;
    let similarity =
        take(&mut body, "similaritySearchParams").map(|v| object(v, "similarity_search_params")).transpose()?;
    let simple = take(&mut body, "simpleRetrievalParams").map(|v| object(v, "simple_retrieval_params")).transpose()?;
    take(&mut body, "filter")
        .filter(|f| f.as_str().is_some_and(|f| !f.trim().is_empty()))
        .map_or(Ok(()), |_| Err(GoogleError::invalid("filter is not supported on retrieval here")))?;
    refuse_unknown(&body, "retrieve")?;
    let app = &call.engine.app;
    match (similarity, simple) {
        (Some(_), Some(_)) => {
            Err(GoogleError::invalid("give similarity_search_params or simple_retrieval_params, not both"))
        }
        (Some(mut params), None) => {
            let query = take(&mut params, "searchQuery").map(|v| string(v, "search_query")).transpose()?;
            let query = query
                .filter(|q| !q.trim().is_empty())
                .ok_or_else(|| GoogleError::invalid("similarity_search_params.search_query is required"))?;
            let top_k = match take(&mut params, "topK") {
                None => DEFAULT_TOP_K,
                Some(n) => {
                    n.as_u64().and_then(|n| usize::try_from(n).ok()).filter(|n| (1..=PAGE).contains(n)).ok_or_else(
                        || GoogleError::invalid(format!("similarity_search_params.top_k must be 1 to {PAGE}, not {n}")),
                    )?
                }
            };
            refuse_unknown(&params, "similarity_search_params")?;
            let found = call.service().bank_search(app, &scope, &query, top_k).await?;
            let retrieved: Vec<Value> = found.iter().map(|m| json!({"memory": call.memory_json(m)})).collect();
            Ok(Json(json!({"retrievedMemories": retrieved})))
        }
        (None, params) => {
            let mut params = params.unwrap_or_default();
            let size = take(&mut params, "pageSize").map(|n| n.as_i64().unwrap_or(-1));
            if size.is_some_and(|n| n < 0) {
                return Err(GoogleError::invalid("simple_retrieval_params.page_size must be a positive number"));
            }
            let token = take(&mut params, "pageToken").map(|v| string(v, "page_token")).transpose()?;
            refuse_unknown(&params, "simple_retrieval_params")?;
            let after = token.as_deref().filter(|t| !t.is_empty()).map(MemoryCursor::from_page_token).transpose()?;
            let page = call.service().bank_list(app, &scope, after, page_size(size)).await?;
            let retrieved: Vec<Value> = page.memories.iter().map(|m| json!({"memory": call.memory_json(m)})).collect();
            let mut out = json!({"retrievedMemories": retrieved});
            if let Some(next) = page.next {
                out["nextPageToken"] = json!(next.to_page_token());
            }
            Ok(Json(out))
        }
    }
}

/// The refusal of a generation from conversations when the engine's app has no model.
fn needs_a_model(call: &MemoryCall, what: &str) -> Result<(), GoogleError> {
    if call.service().has_fact_model(&call.engine.app) {
        return Ok(());
    }
    Err(GoogleError::failed_precondition(format!(
        "{what} needs a model to extract the memories, and engine {:?} has none: start the server with \
         --memory-model {}=openai:MODEL@BASE_URL (or gemini:MODEL); direct memories need none",
        call.engine.app, call.engine.app
    )))
}

/// The turns of `direct_contents_source {events: [{content}]}`: each content's text parts.
fn turns_of_contents(source: Value) -> Result<Vec<Turn>, GoogleError> {
    let mut source = object(source, "direct_contents_source")?;
    let events = match take(&mut source, "events") {
        Some(Value::Array(events)) => events,
        None => Vec::new(),
        Some(other) => {
            return Err(GoogleError::invalid(format!("direct_contents_source.events must be a list, not {other}")));
        }
    };
    let mut turns = Vec::with_capacity(events.len());
    for (i, event) in events.into_iter().enumerate() {
        let mut event = object(event, &format!("events[{i}]"))?;
        let content = take(&mut event, "content")
            .ok_or_else(|| GoogleError::invalid(format!("events[{i}].content is required")))?;
        let content: agentstate::Content = serde_json::from_value(content)
            .map_err(|e| GoogleError::invalid(format!("events[{i}].content is not a Content: {e}")))?;
        let role = content.role.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| "user".to_owned());
        turns.push(Turn { role, text: agentstate::memory::text_of(&content) });
    }
    Ok(turns)
}

/// The turns of a session of the engine (`vertex_session_source {session, start_time?,
/// end_time?}`: its events at or after the start and before the end), which the caller's token
/// must cover, and the session's user.
async fn turns_of_session(call: &MemoryCall, source: Value) -> Result<(Vec<Turn>, String), GoogleError> {
    let mut source = object(source, "vertex_session_source")?;
    let name = take(&mut source, "session").map(|v| string(v, "vertex_session_source.session")).transpose()?;
    let name = name.ok_or_else(|| GoogleError::invalid("vertex_session_source.session is required"))?;
    let mut bound = |field: &str| -> Result<Option<i64>, GoogleError> {
        let text = take(&mut source, field).map(|v| string(v, field)).transpose()?;
        text.map(|t| resource::parse_rfc3339(&t, field)).transpose()
    };
    let (start, end) = (bound("startTime")?, bound("endTime")?);
    refuse_unknown(&source, "vertex_session_source")?;
    let Some((_, id)) = name.rsplit_once("/sessions/") else {
        return Err(GoogleError::invalid(format!("{name:?} is not a session name (…/reasoningEngines/E/sessions/S)")));
    };
    let headers = axum::http::HeaderMap::new();
    let caller = super::Caller { state: &call.state, engine: &call.engine, permit: &call.permit, headers: &headers };
    let key = caller.resolve(id).await?;
    let session = call.state.service().get_session(&key, agentstate::GetSessionConfig::default()).await?;
    let session = session.ok_or_else(|| super::api::not_found(&call.engine, id))?;
    let within = |micros: i64| start.is_none_or(|s| micros >= s) && end.is_none_or(|e| micros < e);
    let turns = session
        .events()
        .iter()
        .filter(|event| within(event.time().micros()))
        .filter_map(|event| event.content.as_ref().map(|c| (event, c)))
        .map(|(event, content)| {
            let role = if event.author == "user" { "user" } else { "model" };
            Turn { role: role.to_owned(), text: agentstate::memory::text_of(content) }
        })
        .collect();
    Ok((turns, key.user_id().to_owned()))
}

/// Starts a generation from a conversation in the background; the operation that polls it.
fn start_generation(call: &MemoryCall, scope: Scope, turns: Vec<Turn>, options: GenerateOptions) -> Value {
    let name = call.engine.empty_operation_name();
    let state = call.state.clone();
    let (engine, version) = (call.engine.app.clone(), call.engine.version);
    let prefix = call.engine.memory_name("");
    state.running().start(&name, &engine, scope.entries().get("user_id").map(String::as_str));
    let operation = name.clone();
    tokio::spawn(async move {
        let generated = state.memory().bank_generate(&engine, &scope, &turns, &options, &resource::new_memory_id).await;
        let done = match generated {
            Ok(generated) => {
                let listed: Vec<Value> = generated
                    .iter()
                    .map(|g| json!({"memory": {"name": format!("{prefix}{}", g.memory.id)}, "action": g.action.as_str()}))
                    .collect();
                tracing::info!(engine, memories = listed.len(), "memories generated");
                let response = json!({
                    "@type": format!("type.googleapis.com/google.cloud.aiplatform.{version}.GenerateMemoriesResponse"),
                    "generatedMemories": listed,
                });
                json!({"name": operation, "done": true, "response": response})
            }
            Err(error) => {
                tracing::warn!(engine, %error, "memory generation failed");
                // google.rpc.Code: UNAVAILABLE for what may pass, else INTERNAL.
                let code = if error.is_retryable() { 14 } else { 13 };
                let message = match error {
                    agentstate::Error::Backend { message, .. } => message,
                    other => other.to_string(),
                };
                json!({"name": operation, "done": true, "error": {"code": code, "message": message}})
            }
        };
        state.running().finish(&operation, done);
    });
    json!({"name": name, "done": false})
}

/// The options of a generation from a body: `allowed_topics`, `ttl`, `metadata`.
fn generate_options(call: &MemoryCall, body: &mut Map<String, Value>) -> Result<GenerateOptions, GoogleError> {
    let mut options = GenerateOptions::default();
    if let Some(topics) = take(body, "allowedTopics") {
        options.topics = match topics {
            Value::Array(topics) => topics,
            other => return Err(GoogleError::invalid(format!("allowed_topics must be a list, not {other}"))),
        };
        agentstate::memory::generate::topic_lines(&options.topics)?;
    }
    if let Some(metadata) = take(body, "metadata") {
        (options.metadata, options.timestamp_keys) = metadata_of(metadata)?;
    }
    let mut ttl = Map::new();
    if let Some(value) = take(body, "ttl") {
        ttl.insert("ttl".into(), value);
    }
    options.expire_micros = expiry_of(&mut ttl, call.state.service().now_micros())?;
    Ok(options)
}

/// Fields of a generation this server reads and leaves aside (consolidation always runs; no
/// revisions are kept).
const GENERATE_ASIDE: [&str; 3] = ["disableConsolidation", "metadataMergeStrategy", "disableMemoryRevisions"];

/// `POST …/memories:generate`: from `directMemoriesSource {directMemories [{fact}]}` (at most 5),
/// each fact stored as a memory of the scope, a done operation listing them (`CREATED`); from
/// `directContentsSource {events [{content}]}` or `vertexSessionSource {session}`, the engine's
/// model extracts facts and consolidates them with the scope's memories in the background, an
/// operation to poll (without a model, `FAILED_PRECONDITION`).
pub(crate) async fn generate(call: MemoryCall, Body(bytes): Body) -> Reply {
    let mut body = request::body(&bytes)?;
    let contents = take(&mut body, "directContentsSource");
    let session = take(&mut body, "vertexSessionSource");
    let direct = take(&mut body, "directMemoriesSource");
    if usize::from(contents.is_some()) + usize::from(session.is_some()) + usize::from(direct.is_some()) != 1 {
        return Err(GoogleError::invalid(
            "give exactly one of direct_memories_source, direct_contents_source or vertex_session_source",
        ));
    }
    for field in REVISION_FIELDS.into_iter().chain(GENERATE_ASIDE) {
        take(&mut body, field);
    }
    if let Some(direct) = direct {
        return generate_direct(call, body, direct).await;
    }
    needs_a_model(&call, "generating memories from conversations")?;
    let options = generate_options(&call, &mut body)?;
    let (turns, scope) = match (contents, session) {
        (Some(contents), _) => (turns_of_contents(contents)?, scope_of(&mut body)?),
        (_, Some(session)) => {
            let (turns, user) = turns_of_session(&call, session).await?;
            let scope = match body.contains_key("scope") {
                true => scope_of(&mut body)?,
                false => Scope::new([("user_id".to_owned(), user)].into())?,
            };
            (turns, scope)
        }
        (None, None) => return Err(GoogleError::invalid("a source is required")),
    };
    refuse_unknown(&body, "generate")?;
    call.check_scope(&scope)?;
    Ok(Json(start_generation(&call, scope, turns, options)))
}

async fn generate_direct(call: MemoryCall, mut body: Map<String, Value>, source: Value) -> Reply {
    let mut source = object(source, "direct_memories_source")?;
    let direct = match take(&mut source, "directMemories") {
        Some(Value::Array(items)) => items,
        _ => return Err(GoogleError::invalid("direct_memories_source.direct_memories must be a list of {fact}")),
    };
    refuse_unknown(&source, "direct_memories_source")?;
    if direct.is_empty() || direct.len() > MAX_DIRECT_MEMORIES {
        let n = direct.len();
        return Err(GoogleError::invalid(format!("direct_memories has {n} items; give 1 to {MAX_DIRECT_MEMORIES}")));
    }
    let scope = scope_of(&mut body)?;
    call.check_scope(&scope)?;
    let options = generate_options(&call, &mut body)?;
    take(&mut body, "allowedTopics");
    refuse_unknown(&body, "generate")?;
    let mut memories = Vec::with_capacity(direct.len());
    for (i, item) in direct.into_iter().enumerate() {
        let mut item = object(item, &format!("direct_memories[{i}]"))?;
        let fact = take(&mut item, "fact").map(|v| string(v, "fact")).transpose()?.unwrap_or_default();
        if fact.trim().is_empty() {
            return Err(GoogleError::invalid(format!("direct_memories[{i}].fact is required and must not be empty")));
        }
        refuse_unknown(&item, &format!("direct_memories[{i}]"))?;
        let mut memory = BankMemory::new(resource::new_memory_id(), scope.clone(), fact);
        memory.expire_micros = options.expire_micros;
        memory.metadata.clone_from(&options.metadata);
        memory.timestamp_keys.clone_from(&options.timestamp_keys);
        memory.validate()?;
        memories.push(memory);
    }
    let mut generated = Vec::with_capacity(memories.len());
    for memory in memories {
        let stored = store(&call, memory).await?;
        generated.push(json!({"memory": {"name": call.engine.memory_name(&stored.id)}, "action": "CREATED"}));
    }
    let response = json!({
        "@type": format!("type.googleapis.com/google.cloud.aiplatform.{}.GenerateMemoriesResponse", call.engine.version),
        "generatedMemories": generated,
    });
    Ok(Json(json!({"name": call.engine.empty_operation_name(), "done": true, "response": response})))
}

/// `POST …/memories:ingestEvents {scope, directContentsSource {events}, streamId?, …}`: the
/// events' facts extracted and consolidated in the background at once (no buffering by stream:
/// `streamId`, `forceFlush` and `generationTriggerConfig` are read and left aside); an
/// operation to poll. Without a model, `FAILED_PRECONDITION`.
pub(crate) async fn ingest_events(call: MemoryCall, Body(bytes): Body) -> Reply {
    let mut body = request::body(&bytes)?;
    let scope = scope_of(&mut body)?;
    call.check_scope(&scope)?;
    needs_a_model(&call, "ingesting events")?;
    let turns = match take(&mut body, "directContentsSource") {
        Some(source) => turns_of_contents(source)?,
        None => Vec::new(),
    };
    for field in ["streamId", "forceFlush", "generationTriggerConfig", "config"] {
        take(&mut body, field);
    }
    refuse_unknown(&body, "ingest_events")?;
    Ok(Json(start_generation(&call, scope, turns, GenerateOptions::default())))
}

/// `GET …/memories/{id}/operations/{op}`: every operation is done when it is answered; one on a
/// memory that still exists (and the caller may see) holds it.
pub(crate) async fn operation(
    State(state): State<AppState>,
    Path(params): Path<HashMap<String, String>>,
    Extension(permit): Extension<Permit>,
    uri: axum::http::Uri,
) -> Reply {
    let Some(version) = crate::engine_api::version_of(uri.path()) else {
        return Err(GoogleError::not_found("no such API version; this server answers v1 and v1beta1"));
    };
    let name = uri.path().trim_start_matches('/').trim_start_matches(version).trim_start_matches('/').to_owned();
    if let Ok(call) = MemoryCall::new(state, params, permit)
        && let Ok(memory) = call.named().await
    {
        let mut operation = call.memory_operation(&memory);
        operation["name"] = json!(name);
        return Ok(Json(operation));
    }
    Ok(Json(json!({"name": name, "done": true})))
}
