//! [`MemoryService`]: ADK's memory service over any store with the
//! [`MemoryStore`](crate::store::MemoryStore) capability.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tracing::Instrument;

use super::embed::{Embedders, RESERVED_PREFIX, VECTOR_KEY, vector_value};
use super::model::{Memory, MemoryOwner, text_of};
use super::terms::index_terms;
use super::words::words;
use crate::content::Content;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::key::validate_id;
use crate::service::SessionService;
use crate::session::Session;
use crate::store::{IndexedMemory, MemoryCursor, MemoryList, MemoryPut, MemoryStore, PutMode};

/// How many memories a search answers when the caller does not say (ADK's in-memory service's
/// number).
pub const DEFAULT_SEARCH_LIMIT: usize = 10;

/// The most a search or a page answers.
pub const MAX_MEMORY_PAGE: usize = 100;

/// The custom-metadata key that gives a memory a time to live: seconds as a number, or a
/// duration such as `"3600s"` (ADK's portable metadata is where it asks such options to go).
pub const TTL_METADATA_KEY: &str = "ttl";

/// Bounds on what one call may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    /// The largest memory, in bytes of its content's JSON.
    pub max_memory_bytes: usize,
    /// The most memories one call writes.
    pub max_memories_per_call: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self { max_memory_bytes: 256 * 1024, max_memories_per_call: 10_000 }
    }
}

/// Options of a write: metadata given to every memory it writes, and their time to live.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryOptions {
    /// Metadata for each memory (a memory's own keys win); a [`TTL_METADATA_KEY`] entry sets
    /// the time to live when `ttl` does not.
    pub custom_metadata: Map<String, Value>,
    /// How long the memories live; `None`: forever (or as the metadata says).
    pub ttl: Option<Duration>,
}

/// A memory to write directly (ADK's `add_memory`), as its `MemoryEntry` carries it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewMemory {
    /// The id; a UUID is generated when `None`.
    pub id: Option<String>,
    /// What to recall; it must have text.
    pub content: Content,
    /// Its metadata (a [`TTL_METADATA_KEY`] entry sets its time to live).
    pub custom_metadata: Map<String, Value>,
    /// Who said it.
    pub author: Option<String>,
    /// When, as text (ISO 8601 preferred).
    pub timestamp: Option<String>,
}

/// A page of memories and where the next starts.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPage {
    /// The memories, oldest first.
    pub memories: Vec<Memory>,
    /// Pass it back for the next page; `None` after the last.
    pub next: Option<MemoryCursor>,
}

/// Long-term memory, ADK's `BaseMemoryService` with what users ask for beyond it (listing,
/// deleting a user's memories, time to live, sources). Cheap to clone.
///
/// ```
/// use agentstate::memory::{MemoryOwner, MemoryService};
/// use agentstate::{Content, CreateSession, Event, SessionService};
///
/// # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
/// async fn run() -> agentstate::Result<()> {
///     let sessions = SessionService::in_memory();
///     let memory = MemoryService::new(sessions.clone());
///     let mut session = sessions.create_session(CreateSession::new("app", "alice")).await?;
///     let said = Event::new("inv-1").author("user").content(Content::text("user", "I like green tea"));
///     sessions.append_event(&mut session, said).await?;
///     memory.add_session(&session).await?;
///     let owner = MemoryOwner::new("app", "alice")?;
///     let found = memory.search(&owner, "which tea do I like", None).await?;
///     assert_eq!(found[0].text(), "I like green tea");
///     Ok(())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct MemoryService {
    pub(super) sessions: SessionService,
    limits: MemoryLimits,
    pub(super) embedders: Embedders,
    ttls: MemoryTtls,
    pub(super) fact_models: super::fact_model::FactModels,
}

/// How long memories written without a time to live of their own (neither
/// [`MemoryOptions::ttl`] nor a [`TTL_METADATA_KEY`] entry) live: one for every app, one per app
/// over it. None: forever.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryTtls {
    every_app: Option<Duration>,
    apps: std::collections::HashMap<String, Duration>,
}

impl MemoryTtls {
    /// Memories live forever unless written with a time to live.
    pub fn new() -> Self {
        Self::default()
    }

    /// `ttl` for every app without one of its own.
    #[must_use]
    pub fn every_app(mut self, ttl: Duration) -> Self {
        self.every_app = Some(ttl);
        self
    }

    /// `ttl` for `app`.
    #[must_use]
    pub fn app(mut self, app: impl Into<String>, ttl: Duration) -> Self {
        self.apps.insert(app.into(), ttl);
        self
    }

    /// The default time to live of `app`'s memories.
    pub fn of(&self, app: &str) -> Option<Duration> {
        self.apps.get(app).copied().or(self.every_app)
    }
}

impl MemoryService {
    /// Memory on the store of `sessions`, with the default limits.
    pub fn new(sessions: SessionService) -> Self {
        Self {
            sessions,
            limits: MemoryLimits::default(),
            embedders: Embedders::default(),
            ttls: MemoryTtls::default(),
            fact_models: super::fact_model::FactModels::default(),
        }
    }

    /// With default times to live: a memory written without one expires after its app's.
    #[must_use]
    pub fn with_ttls(mut self, ttls: MemoryTtls) -> Self {
        self.ttls = ttls;
        self
    }

    /// With embedders: memories of their apps are embedded as they are written, and searched by
    /// meaning too (see [`super::embed`]).
    #[must_use]
    pub fn with_embedders(mut self, embedders: Embedders) -> Self {
        self.embedders = embedders;
        self
    }

    /// The embedders.
    pub fn embedders(&self) -> &Embedders {
        &self.embedders
    }

    /// With other limits.
    #[must_use]
    pub fn with_limits(mut self, limits: MemoryLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits.
    pub fn limits(&self) -> &MemoryLimits {
        &self.limits
    }

    /// Whether the store keeps memories.
    pub fn is_supported(&self) -> bool {
        self.sessions.capabilities().memory.is_some()
    }

    pub(super) fn store(&self, operation: &'static str) -> Result<&dyn MemoryStore> {
        self.sessions.capabilities().memory.ok_or(Error::Unsupported { operation, capability: "memory" })
    }

    /// ADK's `add_session_to_memory`: the session's events with text become its memories,
    /// replacing what it contributed before (adding a session again and again stores each
    /// event once). Events whose id was deleted stay out. Works for any session handle, held by
    /// this store or not. Returns how many memories the session has now.
    pub async fn add_session(&self, session: &Session) -> Result<usize> {
        let owner = MemoryOwner::new(session.app_name(), session.user_id())?;
        let events: Vec<&Event> = session.events().into_iter().collect();
        let source = Some(session.id().to_owned());
        self.put_events(owner, source, PutMode::Replace, &events, &MemoryOptions::default()).await
    }

    /// [`add_session`](Self::add_session) for a session given as its id and events (a session
    /// kept elsewhere, sent over the network).
    /// `options` apply to every memory it keeps.
    pub async fn replace_session(
        &self,
        owner: &MemoryOwner,
        session_id: &str,
        events: &[Event],
        options: &MemoryOptions,
    ) -> Result<usize> {
        validate_id("session_id", session_id)?;
        let events: Vec<&Event> = events.iter().collect();
        let source = Some(session_id.to_owned());
        self.put_events(owner.clone(), source, PutMode::Replace, &events, options).await
    }

    /// ADK's `add_events_to_memory`: the events with text are added to what `session_id`
    /// (or, without one, the owner's events of no session) contributed, each event id once.
    /// Returns how many were added.
    pub async fn add_events(
        &self,
        owner: &MemoryOwner,
        session_id: Option<&str>,
        events: &[Event],
        options: &MemoryOptions,
    ) -> Result<usize> {
        if let Some(id) = session_id {
            validate_id("session_id", id)?;
        }
        let events: Vec<&Event> = events.iter().collect();
        self.put_events(owner.clone(), session_id.map(str::to_owned), PutMode::Add, &events, options).await
    }

    /// ADK's `add_memory`: memories written directly, of no session. One whose id the owner
    /// already has there is left out. Returns the memories stored, ids filled in.
    pub async fn add_memories(
        &self,
        owner: &MemoryOwner,
        memories: Vec<NewMemory>,
        options: &MemoryOptions,
    ) -> Result<Vec<Memory>> {
        let store = self.store("add memories")?;
        self.check_count(memories.len())?;
        let base = self.sessions.now_micros();
        check_metadata(&options.custom_metadata)?;
        let mut kept = Vec::with_capacity(memories.len());
        let mut ids = HashSet::new();
        for (i, new) in memories.into_iter().enumerate() {
            let id = new.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            validate_id("id", &id)?;
            if words(&text_of(&new.content)).is_empty() {
                return Err(Error::invalid("content", format!("memory {id} has no words to recall")));
            }
            check_metadata(&new.custom_metadata)?;
            let mut custom_metadata = options.custom_metadata.clone();
            custom_metadata.extend(new.custom_metadata);
            let expire_micros = expiry(base, options.ttl, &custom_metadata, self.ttls.of(owner.app_name()))?;
            let memory = Memory {
                id,
                session_id: None,
                content: new.content,
                custom_metadata,
                author: new.author,
                timestamp: new.timestamp,
                create_micros: base + i as i64,
                expire_micros,
            };
            if ids.insert(memory.id.clone()) {
                kept.push(memory);
            }
        }
        let indexed = self.indexed_all(owner, kept).await?;
        let put = MemoryPut { owner: owner.clone(), source: None, mode: PutMode::Add, memories: indexed };
        let span = tracing::info_span!("add_memories", app = owner.app_name(), memories = put.memories.len());
        store.put_memories(&put).instrument(span).await?;
        Ok(put.memories.into_iter().map(|m| shown(m.memory)).collect())
    }

    async fn put_events(
        &self,
        owner: MemoryOwner,
        source: Option<String>,
        mode: PutMode,
        events: &[&Event],
        options: &MemoryOptions,
    ) -> Result<usize> {
        let store = self.store("add to memory")?;
        check_metadata(&options.custom_metadata)?;
        let base = self.sessions.now_micros();
        let default_ttl = self.ttls.of(owner.app_name());
        let expire_micros = expiry(base, options.ttl, &options.custom_metadata, default_ttl)?;
        let mut ids = HashSet::new();
        let mut memories = Vec::new();
        for event in events {
            let Some(content) = event.content.as_ref().filter(|c| !text_of(c).is_empty()) else { continue };
            let id = if event.id.is_empty() { derived_id(event) } else { event.id.clone() };
            if !ids.insert(id.clone()) {
                continue;
            }
            let memory = Memory {
                id,
                session_id: source.clone(),
                content: content.clone(),
                custom_metadata: options.custom_metadata.clone(),
                author: Some(event.author.clone()).filter(|a| !a.is_empty()),
                timestamp: Some(event.time().rfc3339()),
                create_micros: base + memories.len() as i64,
                expire_micros,
            };
            memories.push(memory);
        }
        self.check_count(memories.len())?;
        let memories = self.indexed_all(&owner, memories).await?;
        if memories.is_empty() && mode == PutMode::Add {
            return Ok(0);
        }
        let put = MemoryPut { owner, source, mode, memories };
        let span = tracing::info_span!("add_to_memory", app = put.owner.app_name(), memories = put.memories.len());
        store.put_memories(&put).instrument(span).await
    }

    fn check_count(&self, count: usize) -> Result<()> {
        let max = self.limits.max_memories_per_call;
        if count > max {
            return Err(Error::invalid("memories", format!("{count} in one call; at most {max} are allowed")));
        }
        Ok(())
    }

    /// The memories with their terms, checked against the limits, and with their vectors when
    /// the owner's app has an embedder. A provider that fails leaves the memories without
    /// vectors (found by text; adding them again embeds them): the text is never lost to it.
    pub(super) async fn indexed_all(
        &self,
        owner: &MemoryOwner,
        mut memories: Vec<Memory>,
    ) -> Result<Vec<IndexedMemory>> {
        let max = self.limits.max_memory_bytes;
        for memory in &memories {
            let bytes = serde_json::to_vec(&memory.content).map_or(usize::MAX, |json| json.len());
            if bytes > max {
                let id = &memory.id;
                let message = format!("memory {id} is {bytes} bytes; at most {max} are allowed");
                return Err(Error::invalid("content", message));
            }
        }
        if let Some(embedder) = self.embedders.of(owner.app_name()).filter(|_| !memories.is_empty()) {
            let texts: Vec<String> = memories.iter().map(Memory::text).collect();
            let span = tracing::info_span!("embed_memories", app = owner.app_name(), texts = texts.len());
            match self.embedders.documents(embedder.as_ref(), &texts).instrument(span).await {
                Ok(vectors) => {
                    for (memory, vector) in memories.iter_mut().zip(vectors) {
                        memory.custom_metadata.insert(VECTOR_KEY.to_owned(), vector_value(embedder.model(), &vector));
                    }
                }
                Err(error) => tracing::warn!(
                    app = owner.app_name(),
                    %error,
                    "memories stored without vectors: the embedding provider failed"
                ),
            }
        }
        Ok(memories
            .into_iter()
            .map(|memory| {
                let terms = index_terms(owner, &memory.text());
                IndexedMemory { memory, terms }
            })
            .collect())
    }

    /// ADK's `search_memory`: the owner's memories sharing words with `query` (as ADK for
    /// Python's in-memory service matches them), those sharing the most first, at most `limit`
    /// ([`DEFAULT_SEARCH_LIMIT`] when `None`); when the app has an embedder, those nearest in
    /// meaning join them ([`SearchMode::Hybrid`](super::SearchMode)). A query without a word
    /// is refused. [`search_with`](Self::search_with) chooses the ranking.
    pub async fn search(&self, owner: &MemoryOwner, query: &str, limit: Option<usize>) -> Result<Vec<Memory>> {
        self.search_with(owner, query, &super::SearchOptions { limit, ..Default::default() }).await
    }

    /// A page of the owner's memories, oldest first.
    pub async fn list(&self, owner: &MemoryOwner, after: Option<MemoryCursor>, limit: usize) -> Result<MemoryPage> {
        let page = self.list_kept(owner, after, limit).await?;
        Ok(MemoryPage { memories: page.memories.into_iter().map(shown).collect(), next: page.next })
    }

    /// [`list`](Self::list), the memories as kept (with agentstate's own metadata).
    pub(super) async fn list_kept(
        &self,
        owner: &MemoryOwner,
        after: Option<MemoryCursor>,
        limit: usize,
    ) -> Result<MemoryPage> {
        let store = self.store("list memories")?;
        let limit = page_limit(limit)?;
        let list = MemoryList { owner: owner.clone(), after, limit, now_micros: self.sessions.now_micros() };
        let memories = store.list_memories(&list).instrument(tracing::info_span!("list_memories")).await?;
        let next = if memories.len() == limit { memories.last().map(MemoryCursor::of) } else { None };
        Ok(MemoryPage { memories, next })
    }

    /// How many live memories the owner has.
    pub async fn count(&self, owner: &MemoryOwner) -> Result<usize> {
        self.store("count memories")?.count_memories(owner, self.sessions.now_micros()).await
    }

    /// ADK's `delete_memory`: removes the owner's memories with this id; adding their session
    /// again leaves them out. Returns how many (0: the owner has none with that id).
    pub async fn delete(&self, owner: &MemoryOwner, id: &str) -> Result<usize> {
        validate_id("memory_id", id)?;
        let span = tracing::info_span!("delete_memory", app = owner.app_name());
        self.store("delete a memory")?.delete_memory(owner, id).instrument(span).await
    }

    /// Removes every memory of the owner (and the ids it deleted); returns how many memories.
    pub async fn erase(&self, owner: &MemoryOwner) -> Result<usize> {
        let span = tracing::info_span!("erase_memories", app = owner.app_name());
        self.store("erase memories")?.erase_memories(owner).instrument(span).await
    }

    /// When a memory of `app` written at `now_micros` expires by the app's default time to live.
    pub(super) fn default_expiry(&self, app: &str, now_micros: i64) -> Option<i64> {
        let micros = self.ttls.of(app).map(|ttl| i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX))?;
        Some(now_micros.saturating_add(micros))
    }

    /// Removes up to `limit` expired memories; returns how many.
    pub async fn delete_expired(&self, limit: usize) -> Result<usize> {
        self.store("delete expired memories")?.delete_expired_memories(self.sessions.now_micros(), limit).await
    }
}

/// `memory` as callers see it: without what agentstate keeps in its metadata.
pub(super) fn shown(mut memory: Memory) -> Memory {
    strip_vector(&mut memory);
    memory.custom_metadata.remove(super::model::BANK_KEY);
    memory
}

/// `memory` without its vector.
pub(super) fn strip_vector(memory: &mut Memory) {
    memory.custom_metadata.remove(VECTOR_KEY);
}

/// One memory with its terms (and vector), as [`MemoryService`] indexes every memory it writes.
pub(super) async fn indexed_one(service: &MemoryService, owner: &MemoryOwner, memory: Memory) -> Result<IndexedMemory> {
    let mut indexed = service.indexed_all(owner, vec![memory]).await?;
    indexed.pop().ok_or_else(|| Error::invalid("memory", "was not indexed"))
}

/// Refuses metadata keys agentstate keeps its own data under.
pub(super) fn check_metadata(metadata: &Map<String, Value>) -> Result<()> {
    match metadata.keys().find(|k| k.starts_with(RESERVED_PREFIX)) {
        Some(key) => Err(Error::invalid(
            "customMetadata",
            format!("{key:?}: keys starting with {RESERVED_PREFIX:?} are reserved for agentstate"),
        )),
        None => Ok(()),
    }
}

pub(super) fn page_limit(limit: usize) -> Result<usize> {
    if limit == 0 || limit > MAX_MEMORY_PAGE {
        return Err(Error::invalid("limit", format!("is {limit}; it must be 1 to {MAX_MEMORY_PAGE}")));
    }
    Ok(limit)
}

/// When memories written at `now_micros` expire: `ttl`, else the metadata's [`TTL_METADATA_KEY`],
/// else the app's default.
fn expiry(
    now_micros: i64,
    ttl: Option<Duration>,
    metadata: &Map<String, Value>,
    default: Option<Duration>,
) -> Result<Option<i64>> {
    let ttl = match (ttl, metadata.get(TTL_METADATA_KEY), default) {
        (Some(ttl), ..) => ttl,
        (None, Some(value), _) => parse_ttl(value)?,
        (None, None, Some(ttl)) => ttl,
        (None, None, None) => return Ok(None),
    };
    if ttl.is_zero() {
        return Err(Error::invalid("ttl", "must be longer than zero"));
    }
    let micros = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
    Ok(Some(now_micros.saturating_add(micros)))
}

/// A time to live as metadata carries it: seconds, or `"<seconds>s"` (protobuf's duration).
fn parse_ttl(value: &Value) -> Result<Duration> {
    let secs = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.strip_suffix('s').and_then(|n| n.trim().parse::<f64>().ok()),
        _ => None,
    };
    secs.and_then(|s| Duration::try_from_secs_f64(s).ok()).ok_or_else(|| {
        Error::invalid("ttl", format!("{value} is not a duration: give seconds, e.g. 3600 or \"3600s\""))
    })
}

/// An id for an event that has none, the same each time it is added: a hash of its author,
/// time and content.
fn derived_id(event: &Event) -> String {
    let content = event.content.as_ref().and_then(|c| serde_json::to_string(c).ok()).unwrap_or_default();
    let digest = Sha256::new()
        .chain_update(event.author.as_bytes())
        .chain_update([0])
        .chain_update(event.time().nanos().to_be_bytes())
        .chain_update(content.as_bytes())
        .finalize();
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}
