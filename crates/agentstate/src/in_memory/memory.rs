//! The in-memory store's long-term memories: per owner, memories in create order with their
//! terms, and the ids the owner deleted. A search scans the owner's memories (ADK for Python's
//! in-memory service does the same), counting the alternatives each matches.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{PoisonError, RwLock};

use async_trait::async_trait;

use crate::error::Result;
use crate::memory::model::{Memory, MemoryOwner};
use crate::store::{MemoryCursor, MemoryList, MemoryPut, MemorySearch, MemoryStore, PutMode};

/// Every owner's memories.
#[derive(Debug, Default)]
pub(super) struct Memories(RwLock<HashMap<MemoryOwner, OwnerMemories>>);

#[derive(Debug, Default)]
struct OwnerMemories {
    /// In (create time, source, id) order.
    kept: BTreeMap<MemoryCursor, Kept>,
    /// (source, id) → position in `kept`.
    positions: HashMap<(String, String), MemoryCursor>,
    /// Ids the owner deleted.
    deleted: HashSet<String>,
}

#[derive(Debug)]
struct Kept {
    memory: Memory,
    terms: HashSet<String>,
}

impl OwnerMemories {
    fn remove(&mut self, source: &str, id: &str) -> bool {
        let Some(at) = self.positions.remove(&(source.to_owned(), id.to_owned())) else { return false };
        self.kept.remove(&at).is_some()
    }

    fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.deleted.is_empty()
    }
}

#[async_trait]
impl MemoryStore for Memories {
    async fn put_memories(&self, put: &MemoryPut) -> Result<usize> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let owner = all.entry(put.owner.clone()).or_default();
        let source = put.source.clone().unwrap_or_default();
        if put.mode == PutMode::Replace {
            let given: HashSet<&str> = put.memories.iter().map(|m| m.memory.id.as_str()).collect();
            let gone: Vec<String> = owner
                .positions
                .keys()
                .filter(|(s, id)| *s == source && !given.contains(id.as_str()))
                .map(|(_, id)| id.clone())
                .collect();
            for id in gone {
                owner.remove(&source, &id);
            }
        }
        let mut stored = 0;
        for indexed in &put.memories {
            let mut memory = indexed.memory.clone();
            if owner.deleted.contains(&memory.id) {
                continue;
            }
            match owner.positions.get(&(source.clone(), memory.id.clone())) {
                Some(_) if put.mode == PutMode::Add => continue,
                Some(at) => {
                    memory.create_micros = at.create_micros;
                    owner.remove(&source, &indexed.memory.id);
                }
                None if put.mode == PutMode::Rewrite => continue,
                None => {}
            }
            let at = MemoryCursor::of(&memory);
            owner.positions.insert((source.clone(), memory.id.clone()), at.clone());
            let terms = indexed.terms.split(' ').filter(|t| !t.is_empty()).map(str::to_owned).collect();
            owner.kept.insert(at, Kept { memory, terms });
            stored += 1;
        }
        Ok(stored)
    }

    async fn search_memories(&self, search: &MemorySearch) -> Result<Vec<Memory>> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        let Some(owner) = all.get(&search.owner) else { return Ok(Vec::new()) };
        let mut found: Vec<(usize, &Memory)> = owner
            .kept
            .values()
            .filter(|kept| kept.memory.live_at(search.now_micros))
            .filter_map(|kept| {
                let alternatives =
                    search.any_of.iter().filter(|all| all.iter().all(|term| kept.terms.contains(term))).count();
                (alternatives > 0).then_some((alternatives, &kept.memory))
            })
            .collect();
        found.sort_by_key(|(alternatives, _)| std::cmp::Reverse(*alternatives));
        Ok(found.into_iter().take(search.limit).map(|(_, memory)| memory.clone()).collect())
    }

    async fn list_memories(&self, list: &MemoryList) -> Result<Vec<Memory>> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        let Some(owner) = all.get(&list.owner) else { return Ok(Vec::new()) };
        let after = |at: &&MemoryCursor| list.after.as_ref().is_none_or(|after| *at > after);
        Ok(owner
            .kept
            .iter()
            .skip_while(|(at, _)| !after(at))
            .map(|(_, kept)| &kept.memory)
            .filter(|memory| memory.live_at(list.now_micros))
            .take(list.limit)
            .cloned()
            .collect())
    }

    async fn find_memories(
        &self,
        app: &str,
        id: &str,
        now_micros: i64,
        limit: usize,
    ) -> Result<Vec<(MemoryOwner, Memory)>> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        let mut found: Vec<(MemoryOwner, Memory)> = all
            .iter()
            .filter(|(owner, _)| owner.app_name() == app)
            .flat_map(|(owner, memories)| {
                memories
                    .positions
                    .iter()
                    .filter(|((_, i), _)| i == id)
                    .filter_map(|(_, at)| memories.kept.get(at))
                    .filter(|kept| kept.memory.live_at(now_micros))
                    .map(|kept| (owner.clone(), kept.memory.clone()))
            })
            .collect();
        found.sort_by(|(a, m), (b, n)| (a, &m.session_id).cmp(&(b, &n.session_id)));
        found.truncate(limit);
        Ok(found)
    }

    async fn delete_memory(&self, owner: &MemoryOwner, id: &str) -> Result<usize> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let Some(memories) = all.get_mut(owner) else { return Ok(0) };
        let sources: Vec<String> =
            memories.positions.keys().filter(|(_, i)| i == id).map(|(source, _)| source.clone()).collect();
        let removed = sources.iter().filter(|source| memories.remove(source, id)).count();
        if removed > 0 {
            memories.deleted.insert(id.to_owned());
        }
        Ok(removed)
    }

    async fn erase_memories(&self, owner: &MemoryOwner) -> Result<usize> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        Ok(all.remove(owner).map_or(0, |memories| memories.kept.len()))
    }

    async fn delete_expired_memories(&self, before_micros: i64, limit: usize) -> Result<usize> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let mut removed = 0;
        for memories in all.values_mut() {
            let expired: Vec<(String, String)> = memories
                .kept
                .values()
                .filter(|kept| !kept.memory.live_at(before_micros))
                .map(|kept| (kept.memory.session_id.clone().unwrap_or_default(), kept.memory.id.clone()))
                .take(limit - removed)
                .collect();
            for (source, id) in expired {
                removed += usize::from(memories.remove(&source, &id));
            }
            if removed >= limit {
                break;
            }
        }
        all.retain(|_, memories| !memories.is_empty());
        Ok(removed)
    }

    async fn count_memories(&self, owner: &MemoryOwner, now_micros: i64) -> Result<usize> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        Ok(all.get(owner).map_or(0, |memories| memories.kept.values().filter(|k| k.memory.live_at(now_micros)).count()))
    }

    async fn memory_owners(&self, after: Option<&MemoryOwner>, limit: usize) -> Result<Vec<MemoryOwner>> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        let mut owners: Vec<&MemoryOwner> = all
            .iter()
            .filter(|(owner, memories)| !memories.kept.is_empty() && after.is_none_or(|after| *owner > after))
            .map(|(owner, _)| owner)
            .collect();
        owners.sort();
        Ok(owners.into_iter().take(limit).cloned().collect())
    }
}
