//! Memory Bank (Agent Engine's long-term memory) on the memory store: a scope is an owner, and
//! what a Memory Bank memory has beyond ADK's `MemoryEntry` is kept in its metadata.
//!
//! A scope is a map of strings matched exactly. The scope ADK's `VertexAiMemoryBankService`
//! sends when its sessions live on the same engine, `{app_name: ENGINE, user_id: U}`, is the
//! owner (ENGINE, U): the memories ADK's other memory services, agentstate's own clients and
//! the runtime's `load_memory` read for that app and user, and those `erase-user` removes. Any
//! other scope is an owner of the engine whose user is a digest of the scope (starting with a
//! space, which no user id may): exact by construction, and never a real user's.
//!
//! Every write keeps a [`Revision`] (unless asked not to): the fact as written, with its labels
//! and what a generation extracted, inside the memory's own record. A memory's revisions are
//! therefore read, encrypted, expired, erased and deleted with it, and a write and its revision
//! are one atomic put; at most [`MAX_REVISIONS`] are kept, and [`MAX_REVISION_BYTES`] of their
//! facts, the oldest dropped first.

use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::embed::{cosine, vector_of};
use super::model::{BANK_KEY, Memory, MemoryOwner, text_of};
use super::service::{MemoryService, indexed_one};
use super::words::{matched, words};
use crate::content::Content;
use crate::error::{Error, Result};
use crate::key::validate_id;
use crate::store::{MemoryCursor, MemoryList, MemoryPut, PutMode};
use crate::time::Timestamp;

mod revision;
mod scope;

use revision::revisions_in;
pub use revision::{MAX_REVISION_BYTES, MAX_REVISION_LABELS, MAX_REVISIONS, Revision, RevisionOptions};
pub(crate) use scope::owners_of_user;
pub use scope::{MAX_SCOPE_KEYS, Scope, user_only_owner};

/// The largest fact, in bytes.
pub const MAX_FACT_BYTES: usize = 16 * 1024;

/// A Memory Bank memory.
#[derive(Debug, Clone, PartialEq)]
pub struct BankMemory {
    /// The id: the last segment of its name.
    pub id: String,
    /// Whose.
    pub scope: Scope,
    /// What is remembered.
    pub fact: String,
    /// The caller's metadata, as plain JSON values.
    pub metadata: Map<String, Value>,
    /// The metadata keys whose values are times (Memory Bank's `timestamp_value`).
    pub timestamp_keys: Vec<String>,
    /// Its display name.
    pub display_name: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Its topics, as the API writes them.
    pub topics: Vec<Value>,
    /// When it was created, epoch microseconds.
    pub create_micros: i64,
    /// When its fact last changed, epoch microseconds.
    pub update_micros: i64,
    /// When it expires, epoch microseconds; `None`: never.
    pub expire_micros: Option<i64>,
    /// The session it came from, for a memory ADK's memory services wrote (kept on updates).
    source: Option<String>,
    /// Its revisions, oldest first.
    revisions: Vec<Revision>,
    /// The number of the last revision written (revision ids are never taken again).
    last_revision: u64,
}

impl BankMemory {
    /// A new memory: the times are set when it is stored.
    pub fn new(id: impl Into<String>, scope: Scope, fact: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            scope,
            fact: fact.into(),
            metadata: Map::new(),
            timestamp_keys: Vec::new(),
            display_name: None,
            description: None,
            topics: Vec::new(),
            create_micros: 0,
            update_micros: 0,
            expire_micros: None,
            source: None,
            revisions: Vec::new(),
            last_revision: 0,
        }
    }

    /// Its live revisions, oldest first.
    pub fn revisions(&self) -> &[Revision] {
        &self.revisions
    }

    /// Its revision with this id.
    pub fn revision(&self, id: &str) -> Option<&Revision> {
        self.revisions.iter().find(|r| r.id == id)
    }

    /// Keeps a revision of the memory as it is now (unless `options` disable it), dropping
    /// those expired at `now` and the oldest beyond [`MAX_REVISIONS`] or [`MAX_REVISION_BYTES`].
    fn revise(&mut self, options: &RevisionOptions, now: i64) {
        self.revisions.retain(|r| r.expire_micros.is_none_or(|e| e > now));
        if !options.disabled {
            self.last_revision += 1;
            self.revisions.push(Revision {
                id: self.last_revision.to_string(),
                fact: self.fact.clone(),
                create_micros: now,
                expire_micros: options.expire_micros.or(options.ttl_micros.map(|ttl| now.saturating_add(ttl))),
                labels: options.labels.clone(),
                extracted: options.extracted.clone(),
            });
        }
        let mut kept_bytes = 0;
        let mut keep = 0;
        for revision in self.revisions.iter().rev() {
            kept_bytes += revision.fact.len();
            if keep > 0 && (keep == MAX_REVISIONS || kept_bytes > MAX_REVISION_BYTES) {
                break;
            }
            keep += 1;
        }
        let over = self.revisions.len() - keep;
        self.revisions.drain(..over);
    }

    /// Checks the fact and the metadata.
    pub fn validate(&self) -> Result<()> {
        validate_id("memory id", &self.id)?;
        if words(&self.fact).is_empty() {
            return Err(Error::invalid("fact", "must have words to remember"));
        }
        if self.fact.len() > MAX_FACT_BYTES {
            let n = self.fact.len();
            return Err(Error::invalid("fact", format!("is {n} bytes; at most {MAX_FACT_BYTES} are allowed")));
        }
        super::service::check_metadata(&self.metadata)
    }

    fn into_memory(self) -> Memory {
        let mut custom_metadata = self.metadata;
        let mut own = Map::new();
        own.insert("scope".into(), json!(self.scope.0));
        own.insert("update".into(), json!(self.update_micros));
        if !self.timestamp_keys.is_empty() {
            own.insert("timestamps".into(), json!(self.timestamp_keys));
        }
        if let Some(name) = self.display_name {
            own.insert("displayName".into(), json!(name));
        }
        if let Some(description) = self.description {
            own.insert("description".into(), json!(description));
        }
        if !self.topics.is_empty() {
            own.insert("topics".into(), Value::Array(self.topics));
        }
        if self.last_revision > 0 {
            own.insert("revised".into(), json!(self.last_revision));
            own.insert("revisions".into(), self.revisions.iter().map(Revision::to_json).collect());
        }
        custom_metadata.insert(BANK_KEY.to_owned(), Value::Object(own));
        Memory {
            id: self.id,
            session_id: self.source,
            content: Content::text("user", self.fact),
            custom_metadata,
            author: Some("user".to_owned()),
            timestamp: Some(Timestamp::from_micros(self.update_micros).rfc3339()),
            create_micros: self.create_micros,
            expire_micros: self.expire_micros,
        }
    }

    /// Any memory of `owner` as Memory Bank shows it (one written by ADK's memory services
    /// too: its text is the fact, its scope the owner's).
    pub(crate) fn from_memory(owner: &MemoryOwner, mut memory: Memory) -> Self {
        super::service::strip_vector(&mut memory);
        let own = match memory.custom_metadata.remove(BANK_KEY) {
            Some(Value::Object(own)) => own,
            _ => Map::new(),
        };
        let scope = match own.get("scope") {
            Some(Value::Object(entries)) => {
                Scope(entries.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect())
            }
            _ => Scope::of_user(owner.app_name(), owner.user_id()),
        };
        let text = |key: &str| own.get(key).and_then(Value::as_str).map(str::to_owned);
        Self {
            fact: text_of(&memory.content),
            scope,
            timestamp_keys: own
                .get("timestamps")
                .and_then(Value::as_array)
                .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            display_name: text("displayName"),
            description: text("description"),
            topics: own.get("topics").and_then(Value::as_array).cloned().unwrap_or_default(),
            update_micros: own.get("update").and_then(Value::as_i64).unwrap_or(memory.create_micros),
            revisions: revisions_in(&own),
            last_revision: own.get("revised").and_then(Value::as_u64).unwrap_or(0),
            id: memory.id,
            source: memory.session_id,
            metadata: memory.custom_metadata,
            create_micros: memory.create_micros,
            expire_micros: memory.expire_micros,
        }
    }
}

/// Where a page of an engine's memories (of every scope) starts: after this memory of this
/// owner's user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineCursor {
    /// The owner's user.
    pub user: String,
    /// The owner's last memory listed.
    pub after: MemoryCursor,
}

/// Tags the page tokens of engine listings.
const ENGINE_TOKEN: &str = "bank";

impl EngineCursor {
    /// The page token that starts after this position.
    pub fn to_page_token(&self) -> String {
        let after = &self.after;
        crate::page::to_hex(&json!([ENGINE_TOKEN, self.user, after.create_micros, after.source, after.id]).to_string())
    }

    /// The position a token of [`to_page_token`](Self::to_page_token) starts after.
    pub fn from_page_token(token: &str) -> Result<Self> {
        let bad =
            || Error::invalid("page_token", "is not a memory page token this service issued; pass it back unchanged");
        let value: Value = serde_json::from_slice(&crate::page::hex(token).ok_or_else(bad)?).map_err(|_| bad())?;
        match value.as_array().map(Vec::as_slice) {
            Some(
                [Value::String(tag), Value::String(user), Value::Number(t), Value::String(source), Value::String(id)],
            ) if tag == ENGINE_TOKEN => {
                let after =
                    MemoryCursor { create_micros: t.as_i64().ok_or_else(bad)?, source: source.clone(), id: id.clone() };
                Ok(Self { user: user.clone(), after })
            }
            _ => Err(bad()),
        }
    }
}

/// A page of an engine's memories, by owner, and where the next starts.
#[derive(Debug, Clone, PartialEq)]
pub struct EnginePage {
    /// The memories, an owner's oldest first, owners in order.
    pub memories: Vec<BankMemory>,
    /// Pass it back for the next page; `None` after the last.
    pub next: Option<EngineCursor>,
}

/// A memory a similarity search found, and how far from the query it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved {
    /// The memory.
    pub memory: BankMemory,
    /// Its distance from the query, smaller nearer: `1 - cosine similarity` of the two
    /// embeddings (0 to 2) when the app has embeddings and the memory a vector of its model,
    /// else the share of the query's words the memory lacks (0 to 1).
    pub distance: f64,
}

/// The share of the query's words `text` lacks.
fn word_distance(query_words: &std::collections::BTreeSet<String>, text: &str) -> f64 {
    if query_words.is_empty() {
        return 1.0;
    }
    let lacking = query_words.len().saturating_sub(matched(query_words, text));
    lacking as f64 / query_words.len() as f64
}

/// A page of a scope's memories and where the next starts.
#[derive(Debug, Clone, PartialEq)]
pub struct BankPage {
    /// The memories, oldest first.
    pub memories: Vec<BankMemory>,
    /// Pass it back for the next page; `None` after the last.
    pub next: Option<MemoryCursor>,
}

impl MemoryService {
    /// Stores a new Memory Bank memory of `engine`, created now (its `update` too), expiring
    /// at its `expire_micros` or after the app's default time to live, with its first revision
    /// (as `revision` says). Ids are distinct per engine: an id any scope of the engine holds is
    /// refused with `AlreadyExists`, the id of a memory the scope deleted with `InvalidArgument`
    /// (as ADK's memory services leave it out).
    pub async fn bank_create(
        &self,
        engine: &str,
        mut memory: BankMemory,
        revision: &RevisionOptions,
    ) -> Result<BankMemory> {
        memory.validate()?;
        revision.validate()?;
        let store = self.store("create a memory")?;
        let owner = memory.scope.owner(engine);
        if self.bank_get(engine, &memory.id).await?.is_some() {
            return Err(Error::AlreadyExists { session_id: memory.id });
        }
        let now = self.sessions.now_micros();
        memory.create_micros = now;
        memory.update_micros = now;
        if memory.expire_micros.is_none() {
            memory.expire_micros = self.default_expiry(owner.app_name(), now);
        }
        memory.revise(revision, now);
        let indexed = indexed_one(self, &owner, memory.clone().into_memory()).await?;
        let put = MemoryPut { owner, source: None, mode: PutMode::Add, memories: vec![indexed] };
        let span = tracing::info_span!("bank_create", app = engine);
        if store.put_memories(&put).instrument(span).await? == 0 {
            // The owner deleted this id before: ADK's services leave such a memory out.
            let message =
                format!("{} was the id of a deleted memory of this scope; ids are not taken again", memory.id);
            return Err(Error::invalid("memory_id", message));
        }
        Ok(memory)
    }

    /// The memory of `engine` with this id, of whichever scope.
    pub async fn bank_get(&self, engine: &str, id: &str) -> Result<Option<BankMemory>> {
        let store = self.store("get a memory")?;
        let found = store.find_memories(engine, id, self.sessions.now_micros(), 1).await?;
        Ok(found.into_iter().next().map(|(owner, memory)| BankMemory::from_memory(&owner, memory)))
    }

    /// Rewrites `before` (as read) as `after` (its scope and id unchanged), its `update` time
    /// now when its fact changed, keeping a revision as `revision` says. Answers it as stored,
    /// or `None` if it is gone.
    pub async fn bank_update(
        &self,
        engine: &str,
        before: &BankMemory,
        mut after: BankMemory,
        revision: &RevisionOptions,
    ) -> Result<Option<BankMemory>> {
        after.validate()?;
        revision.validate()?;
        if after.id != before.id || after.scope != before.scope {
            return Err(Error::invalid("memory", "an update keeps the memory's id and scope"));
        }
        let store = self.store("update a memory")?;
        let now = self.sessions.now_micros();
        after.update_micros = if before.fact == after.fact { before.update_micros } else { now };
        after.create_micros = before.create_micros;
        after.source.clone_from(&before.source);
        after.revisions.clone_from(&before.revisions);
        after.last_revision = before.last_revision;
        after.revise(revision, now);
        let owner = after.scope.owner(engine);
        let indexed = indexed_one(self, &owner, after.clone().into_memory()).await?;
        let source = after.source.clone();
        let put = MemoryPut { owner, source, mode: PutMode::Rewrite, memories: vec![indexed] };
        let span = tracing::info_span!("bank_update", app = engine);
        let rewritten = store.put_memories(&put).instrument(span).await?;
        Ok((rewritten > 0).then_some(after))
    }

    /// Sets the memory's fact back to that of its revision `revision_id`, keeping a new
    /// revision. Answers it as stored, or `None` if it is gone; an unknown revision is
    /// `InvalidArgument`.
    pub async fn bank_rollback(
        &self,
        engine: &str,
        memory: &BankMemory,
        revision_id: &str,
    ) -> Result<Option<BankMemory>> {
        let Some(target) = memory.revision(revision_id) else {
            let message = format!("memory {} has no revision {revision_id:?}", memory.id);
            return Err(Error::invalid("target_revision_id", message));
        };
        let mut after = memory.clone();
        after.fact.clone_from(&target.fact);
        self.bank_update(engine, memory, after, &RevisionOptions::default()).await
    }

    /// Deletes the memory (and its revisions); answers whether it was still there.
    pub async fn bank_delete(&self, engine: &str, memory: &BankMemory) -> Result<bool> {
        let store = self.store("delete a memory")?;
        let owner = memory.scope.owner(engine);
        Ok(store.delete_memory(&owner, &memory.id).await? > 0)
    }

    /// The scope's memories of `engine` nearest `query` (as [`search`](Self::search) ranks
    /// them), at most `limit`.
    pub async fn bank_search(&self, engine: &str, scope: &Scope, query: &str, limit: usize) -> Result<Vec<BankMemory>> {
        Ok(self.bank_retrieve(engine, scope, query, limit).await?.into_iter().map(|r| r.memory).collect())
    }

    /// [`bank_search`](Self::bank_search) with each memory's distance from the query.
    pub async fn bank_retrieve(
        &self,
        engine: &str,
        scope: &Scope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Retrieved>> {
        let owner = scope.owner(engine);
        let options = super::SearchOptions { limit: Some(limit), ..Default::default() };
        let found = self.search_found(&owner, query, &options).await?;
        let query_words = words(query);
        let mut retrieved = Vec::with_capacity(found.memories.len());
        for memory in found.memories {
            let by_meaning = found.query.as_ref().and_then(|(model, query_vector)| {
                let vector = vector_of(&memory.custom_metadata, model).filter(|v| v.len() == query_vector.len())?;
                Some(1.0 - f64::from(cosine(query_vector, &vector)))
            });
            let distance = by_meaning.unwrap_or_else(|| word_distance(&query_words, &memory.text()));
            let memory = BankMemory::from_memory(&owner, memory);
            if &memory.scope == scope {
                retrieved.push(Retrieved { memory, distance });
            }
        }
        Ok(retrieved)
    }

    /// A page of every memory of `engine`, of every scope: an owner's oldest first, owners in
    /// the order of their users.
    pub async fn bank_list_engine(
        &self,
        engine: &str,
        after: Option<EngineCursor>,
        limit: usize,
    ) -> Result<EnginePage> {
        let store = self.store("list memories")?;
        let limit = super::service::page_limit(limit)?;
        let now_micros = self.sessions.now_micros();
        let (mut user, mut after) = match after {
            Some(cursor) => (Some(cursor.user), Some(cursor.after)),
            None => (None, None),
        };
        if user.is_none() {
            user = self.next_owner(engine, "").await?;
        }
        // One more than the page, so a last page is known to be the last (Google's pagers read
        // a token as the promise of another item).
        let mut read: Vec<(String, Memory)> = Vec::new();
        while let Some(current) = user.take() {
            let want = limit + 1 - read.len();
            let owner = MemoryOwner::from_storage(engine, &current);
            let list = MemoryList { owner, after: after.take(), limit: want, now_micros };
            let page = store.list_memories(&list).await?;
            let full = page.len() == want;
            read.extend(page.into_iter().map(|memory| (current.clone(), memory)));
            if full {
                break;
            }
            user = self.next_owner(engine, &current).await?;
        }
        let more = read.len() > limit;
        read.truncate(limit);
        let next = read
            .last()
            .filter(|_| more)
            .map(|(user, memory)| EngineCursor { user: user.clone(), after: MemoryCursor::of(memory) });
        let memories = read
            .into_iter()
            .map(|(user, memory)| BankMemory::from_memory(&MemoryOwner::from_storage(engine, user), memory))
            .collect();
        Ok(EnginePage { memories, next })
    }

    /// The user of the engine's first owner after `user`.
    async fn next_owner(&self, engine: &str, user: &str) -> Result<Option<String>> {
        let store = self.store("list memories")?;
        let after = MemoryOwner::from_storage(engine, user);
        let next = store.memory_owners(Some(&after), 1).await?;
        Ok(next.into_iter().find(|owner| owner.app_name() == engine).map(|owner| owner.user_id().to_owned()))
    }

    /// [`list`](Self::list) with each memory's Memory Bank revisions, oldest first (none for a
    /// memory no Memory Bank write kept one of): what the inspector shows.
    pub async fn list_with_revisions(
        &self,
        owner: &MemoryOwner,
        after: Option<MemoryCursor>,
        limit: usize,
    ) -> Result<(super::MemoryPage, Vec<Vec<Revision>>)> {
        let mut page = self.list_kept(owner, after, limit).await?;
        let revisions = page
            .memories
            .iter()
            .map(|m| m.custom_metadata.get(BANK_KEY).and_then(Value::as_object).map(revisions_in).unwrap_or_default())
            .collect();
        page.memories = page.memories.into_iter().map(super::service::shown).collect();
        Ok((page, revisions))
    }

    /// A page of the scope's memories of `engine`, oldest first.
    pub async fn bank_list(
        &self,
        engine: &str,
        scope: &Scope,
        after: Option<MemoryCursor>,
        limit: usize,
    ) -> Result<BankPage> {
        let store = self.store("list memories")?;
        let owner = scope.owner(engine);
        let limit = super::service::page_limit(limit)?;
        // One more than the page: see `bank_list_engine`.
        let list = MemoryList { owner: owner.clone(), after, limit: limit + 1, now_micros: self.sessions.now_micros() };
        let mut memories = store.list_memories(&list).await?;
        let more = memories.len() > limit;
        memories.truncate(limit);
        let next = memories.last().filter(|_| more).map(MemoryCursor::of);
        let memories = memories.into_iter().map(|m| BankMemory::from_memory(&owner, m)).collect();
        Ok(BankPage { memories, next })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn scope(pairs: &[(&str, &str)]) -> Scope {
        Scope::new(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()).unwrap()
    }

    #[test]
    fn adk_scopes_of_the_engine_are_its_users_and_others_are_digests() {
        assert_eq!(
            scope(&[("app_name", "e1"), ("user_id", "alice")]).owner("e1"),
            MemoryOwner::from_storage("e1", "alice")
        );
        let other_app = scope(&[("app_name", "my_agent"), ("user_id", "alice")]).owner("e1");
        let user_only = scope(&[("user_id", "alice")]).owner("e1");
        assert_eq!(user_only, user_only_owner("e1", "alice"));
        for owner in [&other_app, &user_only] {
            assert_eq!(owner.app_name(), "e1");
            assert!(owner.user_id().starts_with(" scope:"), "{owner}");
            assert!(MemoryOwner::new("e1", owner.user_id()).is_err(), "no user id looks like a digest");
        }
        assert_ne!(other_app, user_only);
        assert!(Scope::new(BTreeMap::new()).is_err());
        assert!(Scope::new(BTreeMap::from([("user_id".to_owned(), String::new())])).is_err());
    }

    #[test]
    fn revisions_are_bounded_in_number_and_in_bytes_oldest_first() {
        let mut memory = BankMemory::new("7", scope(&[("user_id", "alice")]), "short fact");
        for now in 0..150 {
            memory.revise(&RevisionOptions::default(), now);
        }
        let ids: Vec<u64> = memory.revisions().iter().map(|r| r.id.parse().unwrap()).collect();
        assert_eq!((ids.len(), ids[0], ids[99]), (MAX_REVISIONS, 51, 150), "the newest 100");
        memory.fact = "x".repeat(MAX_FACT_BYTES);
        for now in 150..160 {
            memory.revise(&RevisionOptions::default(), now);
        }
        let bytes: usize = memory.revisions().iter().map(|r| r.fact.len()).sum();
        assert_eq!(memory.revisions().len(), MAX_REVISION_BYTES / MAX_FACT_BYTES, "{bytes} bytes");
        assert_eq!(memory.revisions().last().map(|r| r.id.as_str()), Some("160"));
        memory.fact = "y".repeat(MAX_REVISION_BYTES);
        memory.revise(&RevisionOptions::default(), 161);
        assert_eq!(memory.revisions().len(), 1, "the newest is always kept");
    }

    #[test]
    fn a_memory_keeps_its_own_fields_in_its_metadata() {
        let mut memory = BankMemory::new("7", scope(&[("user_id", "alice")]), "likes green tea");
        memory.metadata.insert("source".into(), json!("chat"));
        memory.display_name = Some("tea".into());
        memory.topics = vec![json!({"managedMemoryTopic": "USER_PREFERENCES"})];
        memory.create_micros = 5;
        memory.update_micros = 9;
        let owner = memory.scope.owner("e1");
        let stored = memory.clone().into_memory();
        assert_eq!(stored.text(), "likes green tea");
        assert_eq!(BankMemory::from_memory(&owner, stored), memory);
    }
}
