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

use agentstate::memory::{BankMemory, EngineCursor, MemoryService, Revision, RevisionOptions, Scope};
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

mod generate;
mod revisions;

pub(crate) use generate::{generate, ingest_events};
pub(crate) use revisions::{retrieve_profiles, revision, revisions, rollback};

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
    revision: Option<String>,
}

impl FromRequestParts<AppState> for MemoryCall {
    type Rejection = GoogleError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, GoogleError> {
        let (params, permit) = super::params_and_permit(parts, state).await?;
        MemoryCall::new(state.clone(), params, permit)
    }
}

impl MemoryCall {
    /// A call on `engine` (and the memory `memory`, if not empty) for the holder of `permit`:
    /// what the gRPC surface calls the REST one with.
    #[cfg(feature = "grpc")]
    pub(crate) fn of(state: AppState, engine: Engine, permit: Permit, memory: String) -> Self {
        Self { state, engine, permit, memory, revision: None }
    }

    fn new(state: AppState, mut params: HashMap<String, String>, permit: Permit) -> Result<Self, GoogleError> {
        let memory = params.remove("memory").unwrap_or_default();
        let revision = params.remove("revision");
        Ok(Self { engine: Engine::from_params(&params)?, state, permit, memory, revision })
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

    /// A revision of `memory` as the API shows it.
    fn revision_json(&self, memory: &BankMemory, revision: &Revision) -> Value {
        let mut out = Map::new();
        out.insert("name".into(), json!(format!("{}/revisions/{}", self.engine.memory_name(&memory.id), revision.id)));
        out.insert("createTime".into(), json!(Timestamp::from_micros(revision.create_micros).rfc3339()));
        if let Some(expire) = revision.expire_micros.or(memory.expire_micros) {
            out.insert("expireTime".into(), json!(Timestamp::from_micros(expire).rfc3339()));
        }
        out.insert("fact".into(), json!(revision.fact));
        if !revision.labels.is_empty() {
            out.insert("labels".into(), json!(revision.labels));
        }
        if !revision.extracted.is_empty() {
            let extracted: Vec<Value> = revision.extracted.iter().map(|fact| json!({"fact": fact})).collect();
            out.insert("extractedMemories".into(), Value::Array(extracted));
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
    Ok(match expiry_in(body, ["expireTime", "ttl"])? {
        Some(Expiry::At(micros)) => Some(micros),
        Some(Expiry::After(ttl)) => Some(now_micros.saturating_add(ttl)),
        None => None,
    })
}

/// An expiry as a request gives it.
enum Expiry {
    /// At this time, epoch microseconds.
    At(i64),
    /// This many microseconds after the write.
    After(i64),
}

/// The body's expiry, by time (`fields[0]`) or time to live (`fields[1]`, a protobuf
/// duration), if it has either.
fn expiry_in(body: &mut Map<String, Value>, fields: [&str; 2]) -> Result<Option<Expiry>, GoogleError> {
    let [at, ttl_field] = fields;
    let expire = take(body, at).map(|v| string(v, at)).transpose()?;
    let ttl = take(body, ttl_field).map(|v| string(v, ttl_field)).transpose()?;
    match (expire, ttl) {
        (Some(_), Some(_)) => Err(GoogleError::invalid(format!("give {ttl_field} or {at}, not both"))),
        (Some(time), None) => Ok(Some(Expiry::At(resource::parse_rfc3339(&time, at)?))),
        (None, Some(ttl)) => {
            Ok(Some(Expiry::After(i64::try_from(duration(&ttl, ttl_field)?.as_micros()).unwrap_or(i64::MAX))))
        }
        (None, None) => Ok(None),
    }
}

/// The fields of a write that say how its revision is kept.
const REVISION_FIELDS: [&str; 4] = ["revisionExpireTime", "revisionTtl", "disableMemoryRevisions", "revisionLabels"];

/// How a write keeps its revision: `revisionLabels`, `revisionExpireTime` or `revisionTtl`,
/// `disableMemoryRevisions`.
fn revision_of(body: &mut Map<String, Value>) -> Result<RevisionOptions, GoogleError> {
    let mut revision = RevisionOptions::default();
    if let Some(disabled) = take(body, "disableMemoryRevisions") {
        revision.disabled = disabled.as_bool().ok_or_else(|| {
            GoogleError::invalid(format!("disable_memory_revisions must be a boolean, not {disabled}"))
        })?;
    }
    if let Some(labels) = take(body, "revisionLabels") {
        for (key, value) in object(labels, "revision_labels")? {
            let value = string(value, &format!("revision_labels.{key}"))?;
            revision.labels.insert(key, value);
        }
    }
    match expiry_in(body, ["revisionExpireTime", "revisionTtl"])? {
        Some(Expiry::At(micros)) => revision.expire_micros = Some(micros),
        Some(Expiry::After(ttl)) => revision.ttl_micros = Some(ttl),
        None => {}
    }
    revision.validate()?;
    Ok(revision)
}

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
    pub(crate) memory_id: Option<String>,
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
    let revision = revision_of(&mut body)?;
    refuse_unknown(&body, "memory")?;
    let stored = store(&call, memory, &revision).await?;
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

async fn store(call: &MemoryCall, memory: BankMemory, revision: &RevisionOptions) -> Result<BankMemory, GoogleError> {
    let id = memory.id.clone();
    match call.service().bank_create(&call.engine.app, memory, revision).await {
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
    pub(crate) update_mask: Option<String>,
}

/// `PATCH …/memories/{id}[?updateMask=fact,display_name,…]`: sets the fields the mask names
/// (without one, those the body has); a done operation holding the memory.
pub(crate) async fn patch(
    call: MemoryCall,
    patch_query: Result<Query<PatchQuery>, QueryRejection>,
    Body(bytes): Body,
) -> Reply {
    let mask = query(patch_query)?.update_mask;
    let before = call.named().await?;
    let mut memory = before.clone();
    let mut body = request::body(&bytes)?;
    body.remove("name");
    let now = call.state.service().now_micros();
    // Not fields of the memory: they say how this write's revision is kept, masked or not.
    let revision = revision_of(&mut body)?;
    let fields: Vec<String> = match mask.as_deref().filter(|m| !m.trim().is_empty()) {
        Some(mask) => mask.split(',').map(|f| agentstate::wire::to_camel(f.trim())).collect(),
        None => body.keys().map(|k| agentstate::wire::to_camel(k)).collect(),
    };
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
            other if REVISION_FIELDS.contains(&other) => {}
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
    match call.service().bank_update(&call.engine.app, &before, memory, &revision).await? {
        Some(updated) => Ok(Json(call.memory_operation(&updated))),
        None => Err(GoogleError::not_found(format!("Memory {} not found.", call.engine.memory_name(&id)))),
    }
}

/// `DELETE …/memories/{id}`: a done operation.
pub(crate) async fn delete(call: MemoryCall) -> Reply {
    let memory = call.named().await?;
    if !call.service().bank_delete(&call.engine.app, &memory).await? {
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
    take(&mut body, "filterGroups")
        .filter(|groups| groups.as_array().is_none_or(|g| !g.is_empty()))
        .map_or(Ok(()), |_| Err(GoogleError::invalid("filter_groups is not supported on retrieval here")))?;
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
            let found = call.service().bank_retrieve(app, &scope, &query, top_k).await?;
            let retrieved: Vec<Value> =
                found.iter().map(|r| json!({"memory": call.memory_json(&r.memory), "distance": r.distance})).collect();
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
