//! Memory Bank (Agent Engine's long-term memory) on the memory store: a scope is an owner, and
//! what a Memory Bank memory has beyond ADK's `MemoryEntry` is kept in its metadata.
//!
//! A scope is a map of strings matched exactly. The scope ADK's `VertexAiMemoryBankService`
//! sends when its sessions live on the same engine, `{app_name: ENGINE, user_id: U}`, is the
//! owner (ENGINE, U): the memories ADK's other memory services, agentstate's own clients and
//! the runtime's `load_memory` read for that app and user, and those `erase-user` removes. Any
//! other scope is an owner of the engine whose user is a digest of the scope (starting with a
//! space, which no user id may): exact by construction, and never a real user's.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tracing::Instrument;

use super::model::{BANK_KEY, Memory, MemoryOwner, text_of};
use super::service::{MemoryService, indexed_one};
use super::words::words;
use crate::content::Content;
use crate::error::{Error, Result};
use crate::key::validate_id;
use crate::store::{MemoryCursor, MemoryList, MemoryPut, PutMode};
use crate::time::Timestamp;

/// The most keys a scope may have.
pub const MAX_SCOPE_KEYS: usize = 10;

/// The largest fact, in bytes.
pub const MAX_FACT_BYTES: usize = 16 * 1024;

/// A Memory Bank scope: string keys and values, matched exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope(BTreeMap<String, String>);

impl Scope {
    /// Validates a scope: 1 to [`MAX_SCOPE_KEYS`] keys, keys and values printable, non-empty,
    /// at most 128 characters.
    pub fn new(entries: BTreeMap<String, String>) -> Result<Self> {
        if entries.is_empty() {
            return Err(Error::invalid("scope", "must have at least one key, such as user_id"));
        }
        if entries.len() > MAX_SCOPE_KEYS {
            let n = entries.len();
            return Err(Error::invalid("scope", format!("has {n} keys; at most {MAX_SCOPE_KEYS} are allowed")));
        }
        for (key, value) in &entries {
            validate_id("scope key", key)?;
            validate_id("scope value", value).map_err(|e| Error::invalid("scope", format!("{key:?}: {e}")))?;
        }
        Ok(Self(entries))
    }

    /// The scope ADK sends for an app's user: `{app_name, user_id}`.
    pub fn of_user(app: &str, user: &str) -> Self {
        Self(BTreeMap::from([("app_name".to_owned(), app.to_owned()), ("user_id".to_owned(), user.to_owned())]))
    }

    /// Its keys and values.
    pub fn entries(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// The owner its memories of `engine` are kept under (see the module).
    pub fn owner(&self, engine: &str) -> MemoryOwner {
        let app = self.0.get("app_name").map(String::as_str);
        match (self.0.len(), app, self.0.get("user_id")) {
            (2, Some(app), Some(user)) if app == engine => MemoryOwner::from_storage(engine, user),
            _ => MemoryOwner::from_storage(engine, self.digest()),
        }
    }

    fn digest(&self) -> String {
        let canonical = serde_json::to_string(&self.0).unwrap_or_default();
        let digest = Sha256::digest(canonical.as_bytes());
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!(" scope:{hex}")
    }
}

/// The owner of the scope `{user_id: user}` in `app`: the other scope of a user `erase-user`
/// removes.
pub fn user_only_owner(app: &str, user: &str) -> MemoryOwner {
    Scope(BTreeMap::from([("user_id".to_owned(), user.to_owned())])).owner(app)
}

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
        }
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
    /// at its `expire_micros` or after the app's default time to live. Ids are distinct per
    /// engine: an id any scope of the engine holds is refused with `AlreadyExists`, the id of a
    /// memory the scope deleted with `InvalidArgument` (as ADK's memory services leave it out).
    pub async fn bank_create(&self, engine: &str, mut memory: BankMemory) -> Result<BankMemory> {
        memory.validate()?;
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

    /// Rewrites a stored memory (its scope and id unchanged), its `update` time now when its
    /// fact changed. Answers it as stored, or `None` if it is gone.
    pub async fn bank_update(&self, engine: &str, mut memory: BankMemory) -> Result<Option<BankMemory>> {
        memory.validate()?;
        let store = self.store("update a memory")?;
        let Some(before) = self.bank_get(engine, &memory.id).await? else { return Ok(None) };
        if before.fact != memory.fact {
            memory.update_micros = self.sessions.now_micros();
        }
        memory.create_micros = before.create_micros;
        memory.source = before.source;
        let owner = memory.scope.owner(engine);
        let indexed = indexed_one(self, &owner, memory.clone().into_memory()).await?;
        let source = memory.source.clone();
        let put = MemoryPut { owner, source, mode: PutMode::Rewrite, memories: vec![indexed] };
        let span = tracing::info_span!("bank_update", app = engine);
        let rewritten = store.put_memories(&put).instrument(span).await?;
        Ok((rewritten > 0).then_some(memory))
    }

    /// Deletes the memory of `engine` with this id; answers whether there was one.
    pub async fn bank_delete(&self, engine: &str, id: &str) -> Result<bool> {
        let store = self.store("delete a memory")?;
        let Some(memory) = self.bank_get(engine, id).await? else { return Ok(false) };
        let owner = memory.scope.owner(engine);
        Ok(store.delete_memory(&owner, id).await? > 0)
    }

    /// The scope's memories of `engine` nearest `query` (as [`search`](Self::search) ranks
    /// them), at most `limit`.
    pub async fn bank_search(&self, engine: &str, scope: &Scope, query: &str, limit: usize) -> Result<Vec<BankMemory>> {
        let owner = scope.owner(engine);
        let options = super::SearchOptions { limit: Some(limit), ..Default::default() };
        let found = self.search_kept(&owner, query, &options).await?;
        Ok(found.into_iter().map(|m| BankMemory::from_memory(&owner, m)).filter(|m| &m.scope == scope).collect())
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
