//! Memories through encryption at rest, searchable.
//!
//! A memory's content, metadata, author and time are sealed in one ciphertext, bound to its
//! owner, source and id; its id, source, create and expire times stay plaintext (the store orders,
//! pages and expires by them). Its search terms (already hashes salted with the owner, see
//! [`crate::memory::terms`]) are hashed again with a key derived from the sealing key
//! (HMAC-SHA-256): the index still finds a memory by its words, and without the key it tells
//! nothing, not even which memories of two users share a word. A search asks for the terms as
//! each key of the ring blinds them, and as written before encryption, so a rotation in progress
//! loses nothing; [`EncryptedStore::rekey`] re-seals and re-indexes memories with the new key.
//! What the index still shows is how many distinct terms a memory has.

use async_trait::async_trait;
use hmac::Mac;
use serde_json::{Map, Value, json};

use super::{EncryptedStore, KeyRing, RingKey, SEALED, seal::undecryptable};
use crate::content::Content;
use crate::error::{Error, Result};
use crate::memory::terms::index_terms;
use crate::memory::{Memory, MemoryOwner};
use crate::store::{IndexedMemory, MemoryList, MemoryPut, MemorySearch, MemoryStore, SessionStore};

/// Letters of a blinded term: 4 bits each, as the plaintext terms.
const TERM_LETTERS: usize = 12;

fn memory_aad(owner: &MemoryOwner, memory: &Memory) -> Vec<u8> {
    let source = memory.session_id.as_deref().unwrap_or_default();
    format!("m\0{}\0{}\0{source}\0{}", owner.app_name(), owner.user_id(), memory.id).into_bytes()
}

impl RingKey {
    /// `term` hashed with this key's term key, as 12 letters `a`–`p`.
    fn blind(&self, term: &str) -> String {
        let tag = self.terms.clone().chain_update(term.as_bytes()).finalize().into_bytes();
        tag.iter().flat_map(|b| [b >> 4, b & 0x0f]).take(TERM_LETTERS).map(|n| char::from(b'a' + n)).collect()
    }
}

impl KeyRing {
    /// A memory's terms as the writing key blinds them.
    fn blind_terms(&self, terms: &str) -> String {
        let key = &self.keys[0];
        terms.split(' ').filter(|t| !t.is_empty()).map(|t| key.blind(t)).collect::<Vec<_>>().join(" ")
    }

    /// A search's alternatives as every key of the ring blinds them, and as they are (memories
    /// written before encryption).
    fn search_terms(&self, any_of: &[Vec<String>]) -> Vec<Vec<String>> {
        let mut all = any_of.to_vec();
        for key in self.keys.iter() {
            all.extend(any_of.iter().map(|terms| terms.iter().map(|t| key.blind(t)).collect()));
        }
        all
    }

    /// `indexed`, its memory sealed and its terms blinded.
    fn seal_memory(&self, owner: &MemoryOwner, indexed: &IndexedMemory) -> IndexedMemory {
        let memory = &indexed.memory;
        let inside = json!({
            "content": memory.content,
            "customMetadata": memory.custom_metadata,
            "author": memory.author,
            "timestamp": memory.timestamp,
        });
        let sealed = self.seal(&memory_aad(owner, memory), inside.to_string().as_bytes());
        let stored = Memory {
            content: Content::default(),
            custom_metadata: Map::from_iter([(SEALED.to_owned(), Value::String(sealed))]),
            author: None,
            timestamp: None,
            ..memory.clone()
        };
        IndexedMemory { memory: stored, terms: self.blind_terms(&indexed.terms) }
    }

    /// A stored memory, opened (one written before encryption is read as it is).
    fn open_memory(&self, owner: &MemoryOwner, mut stored: Memory) -> Result<Memory> {
        let Some(Value::String(sealed)) = stored.custom_metadata.get(SEALED) else { return Ok(stored) };
        let what = || format!("memory {} of {owner}", stored.id);
        let mut inside = self.open_sealed_object(&memory_aad(owner, &stored), sealed, &what)?;
        let mut take = |key: &str| inside.remove(key).unwrap_or(Value::Null);
        let text = |value: Value| value.as_str().map(str::to_owned);
        stored.content = serde_json::from_value(take("content"))
            .map_err(|e| undecryptable(&what(), &format!("its content does not read: {e}")))?;
        stored.custom_metadata = match take("customMetadata") {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        stored.author = text(take("author"));
        stored.timestamp = text(take("timestamp"));
        Ok(stored)
    }

    /// Whether a stored memory needs re-encryption: plaintext, or sealed with another key.
    fn memory_is_stale(&self, stored: &Memory) -> bool {
        match stored.custom_metadata.get(SEALED) {
            Some(Value::String(sealed)) => self.is_stale(sealed),
            _ => true,
        }
    }
}

impl<S: SessionStore> EncryptedStore<S> {
    /// The inner store's memory: present whenever this store offers memory.
    fn inner_memory(&self) -> Result<&dyn MemoryStore> {
        self.inner()
            .capabilities()
            .memory
            .ok_or(Error::Unsupported { operation: "keep memories", capability: "memory" })
    }

    fn open_memories(&self, owner: &MemoryOwner, stored: Vec<Memory>) -> Result<Vec<Memory>> {
        stored.into_iter().map(|memory| self.keys().open_memory(owner, memory)).collect()
    }

    /// Re-seals and re-indexes with the writing key the owner's memories that need it; returns
    /// how many.
    pub(super) async fn rekey_memories_of(&self, owner: &MemoryOwner) -> Result<usize> {
        let memory = self.inner_memory()?;
        let keys = self.keys();
        let mut list = MemoryList { owner: owner.clone(), after: None, limit: REKEY_PAGE, now_micros: i64::MIN };
        let mut rekeyed = 0;
        loop {
            let page = memory.list_memories(&list).await?;
            list.after = page.last().filter(|_| page.len() == REKEY_PAGE).map(crate::store::MemoryCursor::of);
            // A put is per source: group the page's stale memories by theirs.
            let mut puts: Vec<MemoryPut> = Vec::new();
            for stored in page.into_iter().filter(|m| keys.memory_is_stale(m)) {
                let plain = keys.open_memory(owner, stored)?;
                let terms = index_terms(owner, &plain.text());
                let sealed = keys.seal_memory(owner, &IndexedMemory { memory: plain, terms });
                match puts.iter_mut().find(|put| put.source == sealed.memory.session_id) {
                    Some(put) => put.memories.push(sealed),
                    None => puts.push(MemoryPut {
                        owner: owner.clone(),
                        source: sealed.memory.session_id.clone(),
                        mode: crate::store::PutMode::Rewrite,
                        memories: vec![sealed],
                    }),
                }
            }
            for put in &puts {
                rekeyed += memory.put_memories(put).await?;
            }
            if list.after.is_none() {
                return Ok(rekeyed);
            }
        }
    }
}

/// Memories read per page by re-encryption.
const REKEY_PAGE: usize = 100;

/// Memories sealed on the way in and opened on the way out; terms blinded (see the module).
#[async_trait]
impl<S: SessionStore> MemoryStore for EncryptedStore<S> {
    async fn put_memories(&self, put: &MemoryPut) -> Result<usize> {
        let memories = put.memories.iter().map(|m| self.keys().seal_memory(&put.owner, m)).collect();
        let sealed = MemoryPut { owner: put.owner.clone(), source: put.source.clone(), mode: put.mode, memories };
        self.inner_memory()?.put_memories(&sealed).await
    }

    async fn search_memories(&self, search: &MemorySearch) -> Result<Vec<Memory>> {
        let blinded = MemorySearch { any_of: self.keys().search_terms(&search.any_of), ..search.clone() };
        let found = self.inner_memory()?.search_memories(&blinded).await?;
        self.open_memories(&search.owner, found)
    }

    async fn list_memories(&self, list: &MemoryList) -> Result<Vec<Memory>> {
        let found = self.inner_memory()?.list_memories(list).await?;
        self.open_memories(&list.owner, found)
    }

    async fn find_memories(
        &self,
        app: &str,
        id: &str,
        now_micros: i64,
        limit: usize,
    ) -> Result<Vec<(MemoryOwner, Memory)>> {
        let found = self.inner_memory()?.find_memories(app, id, now_micros, limit).await?;
        found.into_iter().map(|(owner, memory)| Ok((owner.clone(), self.keys().open_memory(&owner, memory)?))).collect()
    }

    async fn delete_memory(&self, owner: &MemoryOwner, id: &str) -> Result<usize> {
        self.inner_memory()?.delete_memory(owner, id).await
    }

    async fn erase_memories(&self, owner: &MemoryOwner) -> Result<usize> {
        self.inner_memory()?.erase_memories(owner).await
    }

    async fn delete_expired_memories(&self, before_micros: i64, limit: usize) -> Result<usize> {
        self.inner_memory()?.delete_expired_memories(before_micros, limit).await
    }

    async fn count_memories(&self, owner: &MemoryOwner, now_micros: i64) -> Result<usize> {
        self.inner_memory()?.count_memories(owner, now_micros).await
    }

    async fn memory_owners(&self, after: Option<&MemoryOwner>, limit: usize) -> Result<Vec<MemoryOwner>> {
        self.inner_memory()?.memory_owners(after, limit).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::tests::K1;
    use super::*;
    use crate::memory::terms::query_terms;
    use crate::memory::words::words;
    use crate::memory::{MemoryOptions, MemoryService, NewMemory};
    use crate::{InMemoryStore, SessionService};

    #[tokio::test]
    async fn memories_are_sealed_and_found_by_blinded_terms() {
        let inner: Arc<dyn SessionStore> = Arc::new(InMemoryStore::new());
        let encrypted = EncryptedStore::open(Arc::clone(&inner), KeyRing::parse(K1).unwrap()).await.unwrap();
        let memory = MemoryService::new(SessionService::new(encrypted));
        let owner = MemoryOwner::new("app", "alice").unwrap();
        let new = NewMemory {
            id: Some("m1".into()),
            content: Content::text("user", "my locker code is zebra"),
            custom_metadata: Map::from_iter([("topic".to_owned(), json!("gym"))]),
            author: Some("user".into()),
            timestamp: Some("2026-11-27T05:00:00Z".into()),
        };
        memory.add_memories(&owner, vec![new], &MemoryOptions::default()).await.unwrap();
        let found = memory.search(&owner, "zebra", None).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].text(), found[0].author.as_deref()), ("my locker code is zebra".into(), Some("user")));
        assert_eq!(found[0].custom_metadata.get("topic"), Some(&json!("gym")));

        // Storage: no text, no metadata, no author; the plaintext terms find nothing.
        let store = inner.capabilities().memory.unwrap();
        let list = MemoryList { owner: owner.clone(), after: None, limit: 10, now_micros: 0 };
        let raw = store.list_memories(&list).await.unwrap();
        let shown = format!("{raw:?}");
        for secret in ["zebra", "locker", "gym", "topic", "2026-11-27"] {
            assert!(!shown.contains(secret), "{secret} is stored: {shown}");
        }
        let plain = MemorySearch {
            owner: owner.clone(),
            any_of: query_terms(&owner, &words("zebra")),
            limit: 10,
            now_micros: 0,
        };
        assert!(store.search_memories(&plain).await.unwrap().is_empty(), "terms are blinded");

        // A sealed memory moved to another owner does not open there.
        let bob = MemoryOwner::new("app", "bob").unwrap();
        let moved = IndexedMemory { memory: raw[0].clone(), terms: String::new() };
        store
            .put_memories(&MemoryPut {
                owner: bob.clone(),
                source: None,
                mode: crate::store::PutMode::Add,
                memories: vec![moved],
            })
            .await
            .unwrap();
        let error = memory.list(&bob, None, 10).await.unwrap_err().to_string();
        assert!(error.contains("memory m1 of app/bob cannot be decrypted"), "{error}");
    }
}
