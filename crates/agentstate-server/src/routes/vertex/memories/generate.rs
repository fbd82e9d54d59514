//! Memory Bank's generation: `memories:generate` (from direct memories, contents or a session,
//! by the engine's model in the background; direct memories at once without one) and
//! `memories:ingestEvents`.

use agentstate::memory::{GenerateOptions, Scope, Turn};
use agentstate::{Map, Value};
use axum::Json;
use serde_json::json;

use super::{
    MAX_DIRECT_MEMORIES, MemoryCall, Reply, expiry_of, metadata_of, refuse_unknown, revision_of, scope_of, store,
};
use crate::limits::Body;
use crate::routes::vertex::error::GoogleError;
use crate::routes::vertex::request::{self, object, string, take};
use crate::routes::vertex::resource;

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
    let caller = crate::routes::vertex::Caller {
        state: &call.state,
        engine: &call.engine,
        permit: &call.permit,
        headers: &headers,
    };
    let key = caller.resolve(id).await?;
    let session = call.state.service().get_session(&key, agentstate::GetSessionConfig::default()).await?;
    let session = session.ok_or_else(|| crate::routes::vertex::api::not_found(&call.engine, id))?;
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

/// What a generation in the background starts from.
enum Input {
    /// A conversation, whose facts the model extracts.
    Conversation(Vec<Turn>),
    /// Facts given, consolidated as they are.
    Facts(Vec<String>),
}

/// Starts a generation in the background; the operation that polls it.
fn start_generation(call: &MemoryCall, scope: Scope, input: Input, options: GenerateOptions) -> Value {
    let name = call.engine.empty_operation_name();
    let state = call.state.clone();
    let (engine, version) = (call.engine.app.clone(), call.engine.version);
    let prefix = call.engine.memory_name("");
    state.running().start(&name, &engine, scope.entries().get("user_id").map(String::as_str));
    let operation = name.clone();
    tokio::spawn(async move {
        let memory = state.memory();
        let new_id = &resource::new_memory_id;
        let generated = match input {
            Input::Conversation(turns) => memory.bank_generate(&engine, &scope, &turns, &options, new_id).await,
            Input::Facts(facts) => memory.bank_consolidate(&engine, &scope, facts, &options, new_id).await,
        };
        let done = match generated {
            Ok(generated) => {
                let listed: Vec<Value> = generated
                    .iter()
                    .map(|g| {
                        let name = format!("{prefix}{}", g.memory.id);
                        let mut one = json!({"memory": {"name": name}, "action": g.action.as_str()});
                        if let Some(previous) = &g.previous_revision {
                            one["previousRevision"] = json!(format!("{name}/revisions/{previous}"));
                        }
                        one
                    })
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

/// The options of a generation from a body: `allowed_topics`, `ttl`, `metadata`,
/// `metadata_merge_strategy`, `disable_consolidation`, and how revisions are kept.
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
    options.revision = revision_of(body)?;
    if let Some(strategy) = take(body, "metadataMergeStrategy") {
        let name = string(strategy, "metadata_merge_strategy")?;
        options.metadata_merge = agentstate::memory::MetadataMerge::parse(&name)?;
    }
    if let Some(disable) = take(body, "disableConsolidation") {
        options.disable_consolidation = disable
            .as_bool()
            .ok_or_else(|| GoogleError::invalid(format!("disable_consolidation must be a boolean, not {disable}")))?;
    }
    Ok(options)
}

/// `POST …/memories:generate`: from `directMemoriesSource {directMemories [{fact}]}` (at most 5),
/// the facts consolidated with the scope's memories by the engine's model in the background (an
/// operation to poll), or, without a model or with `disableConsolidation`, each stored as a
/// memory of the scope at once (a done operation listing them, `CREATED`); from
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
    Ok(Json(start_generation(&call, scope, Input::Conversation(turns), options)))
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
    refuse_unknown(&body, "generate")?;
    let mut memories = Vec::with_capacity(direct.len());
    for (i, item) in direct.into_iter().enumerate() {
        let mut item = object(item, &format!("direct_memories[{i}]"))?;
        let fact = take(&mut item, "fact").map(|v| string(v, "fact")).transpose()?.unwrap_or_default();
        if fact.trim().is_empty() {
            return Err(GoogleError::invalid(format!("direct_memories[{i}].fact is required and must not be empty")));
        }
        refuse_unknown(&item, &format!("direct_memories[{i}]"))?;
        let memory = options.new_memory(resource::new_memory_id(), scope.clone(), fact);
        memory.validate()?;
        memories.push(memory);
    }
    if !options.disable_consolidation && call.service().has_fact_model(&call.engine.app) {
        let facts = memories.into_iter().map(|m| m.fact).collect();
        return Ok(Json(start_generation(&call, scope, Input::Facts(facts), options)));
    }
    let mut generated = Vec::with_capacity(memories.len());
    for memory in memories {
        let stored = store(&call, memory, &options.revision).await?;
        generated.push(json!({"memory": {"name": call.engine.memory_name(&stored.id)}, "action": "CREATED"}));
    }
    let response = json!({
        "@type": format!("type.googleapis.com/google.cloud.aiplatform.{}.GenerateMemoriesResponse", call.engine.version),
        "generatedMemories": generated,
    });
    Ok(Json(json!({"name": call.engine.empty_operation_name(), "done": true, "response": response})))
}

/// `POST …/memories:ingestEvents {scope, directContentsSource {events}, streamId?, metadata?,
/// revision options?, …}`: the events' facts extracted and consolidated in the background at
/// once (no buffering by stream: `streamId`, `forceFlush` and `generationTriggerConfig` are read
/// and left aside); an operation to poll. Without a model, `FAILED_PRECONDITION`.
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
    let options = generate_options(&call, &mut body)?;
    refuse_unknown(&body, "ingest_events")?;
    Ok(Json(start_generation(&call, scope, Input::Conversation(turns), options)))
}
