//! Long-term memory kept by the store: the [`MemoryStore`] capability. The rules (which events
//! become memories, ids, limits, how a query is split into [terms](crate::memory::terms), the
//! confirmation of candidates) are the service's, in [`crate::memory`]; a store keeps memories
//! with their terms and looks terms up with its engine's own full-text index.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::hash::Hash;

use async_trait::async_trait;

use crate::error::Result;
use crate::memory::model::{Memory, MemoryOwner};

/// How [`MemoryStore::put_memories`] treats what the source already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMode {
    /// The memories are the source's whole contribution now: those with an id already there
    /// are rewritten (keeping their create time), the source's others are removed.
    Replace,
    /// The memories are added: one whose id the source already holds is left out.
    Add,
    /// The memories the source holds are rewritten in place (keeping their create time); the
    /// others are left out and nothing is removed (re-encryption uses it).
    Rewrite,
}

/// A memory to store, with the terms it is found by.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedMemory {
    /// The memory; its `session_id` is the put's source.
    pub memory: Memory,
    /// Its [terms](crate::memory::terms::index_terms), space-separated.
    pub terms: String,
}

/// Memories to store for one owner and source.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPut {
    /// Whose.
    pub owner: MemoryOwner,
    /// The session they came from (`None`: no session); ids are unique per owner and source.
    pub source: Option<String>,
    /// Replace the source's memories or add to them.
    pub mode: PutMode,
    /// The memories, ids distinct, in the order of their create times.
    pub memories: Vec<IndexedMemory>,
}

/// A lookup of memories by terms.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySearch {
    /// Whose.
    pub owner: MemoryOwner,
    /// Alternatives: a memory whose terms include every term of any one of them is found.
    pub any_of: Vec<Vec<String>>,
    /// At most this many.
    pub limit: usize,
    /// Memories that expired at or before this are left out.
    pub now_micros: i64,
}

/// Where a page of a listing starts: after this memory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemoryCursor {
    /// Its create time.
    pub create_micros: i64,
    /// Its source (`""`: none).
    pub source: String,
    /// Its id.
    pub id: String,
}

impl MemoryCursor {
    /// The position of `memory`.
    pub fn of(memory: &Memory) -> Self {
        Self {
            create_micros: memory.create_micros,
            source: memory.session_id.clone().unwrap_or_default(),
            id: memory.id.clone(),
        }
    }
}

/// A page of an owner's memories, in the order (create time, source, id).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryList {
    /// Whose.
    pub owner: MemoryOwner,
    /// Start after this one.
    pub after: Option<MemoryCursor>,
    /// At most this many.
    pub limit: usize,
    /// Memories that expired at or before this are left out.
    pub now_micros: i64,
}

/// Memories kept beside sessions, each owner's apart from every other's.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Stores memories, atomically: per [`PutMode`], leaving out those whose id the owner
    /// deleted (see [`delete_memory`](Self::delete_memory)). Two puts of the same memories at
    /// once store each once. Returns how many it stored or rewrote.
    async fn put_memories(&self, put: &MemoryPut) -> Result<usize>;

    /// The owner's live memories matching `search.any_of`, at most `search.limit`, best first
    /// as the engine ranks them (the service then orders what it confirms by words matched,
    /// keeping this order among equals). A store may cut the engine's best `limit` hits first
    /// and drop the expired ones among them after (the SQL stores do, so the engine ranks and
    /// cuts alone): the page is then shorter, never wrong. A store may also read at most
    /// `search.limit` hits per alternative (SQLite, PostgreSQL, MariaDB and Redis read the newest; the
    /// service puts the alternative of all the query's words first), so that a word in most of a
    /// user's memories costs a page of rows: an alternative cut there fills the page alone, so a
    /// page shorter than `limit` still means nothing more matched.
    async fn search_memories(&self, search: &MemorySearch) -> Result<Vec<Memory>>;

    /// A page of the owner's live memories.
    async fn list_memories(&self, list: &MemoryList) -> Result<Vec<Memory>>;

    /// The live memories of `app` with this id, of every user and source, with their owners, in
    /// (user, source) order, at most `limit`: a memory named by its id alone (Memory Bank's
    /// names) found without knowing whose it is.
    async fn find_memories(
        &self,
        app: &str,
        id: &str,
        now_micros: i64,
        limit: usize,
    ) -> Result<Vec<(MemoryOwner, Memory)>>;

    /// Removes the owner's memories with this id (from every source) and, if there were any,
    /// remembers the id as deleted, so putting it again leaves it out. Returns how many.
    async fn delete_memory(&self, owner: &MemoryOwner, id: &str) -> Result<usize>;

    /// Removes every memory of the owner and the ids it deleted; returns how many memories.
    async fn erase_memories(&self, owner: &MemoryOwner) -> Result<usize>;

    /// Removes up to `limit` memories that expired at or before `before_micros`; returns how
    /// many.
    async fn delete_expired_memories(&self, before_micros: i64, limit: usize) -> Result<usize>;

    /// How many live memories the owner has.
    async fn count_memories(&self, owner: &MemoryOwner, now_micros: i64) -> Result<usize>;

    /// Owners that hold memories, in (app, user) order, after `after`, at most `limit` (for
    /// work over every memory, such as re-encryption).
    async fn memory_owners(&self, after: Option<&MemoryOwner>, limit: usize) -> Result<Vec<MemoryOwner>>;
}

/// The ranking of a search whose alternatives each found their hits (in any order; the ids grow
/// with time): the best `limit` ids by how many alternatives found them (every word at once
/// first), then by the fewest hits of one that did (a rarer word), then the newest. The
/// stores that rank outside their engine (SQLite and MariaDB) share it; PostgreSQL and Redis rank
/// the same way in their own statement and script.
pub fn rank_hits<Id: Copy + Ord + Hash>(alternatives: &[Vec<Id>], limit: usize) -> Vec<Id> {
    let mut found: HashMap<Id, (usize, usize)> = HashMap::new();
    for hits in alternatives {
        for id in hits {
            let (alternatives, fewest) = found.entry(*id).or_insert((0, usize::MAX));
            *alternatives += 1;
            *fewest = (*fewest).min(hits.len());
        }
    }
    let mut ranked: Vec<(Id, (usize, usize))> = found.into_iter().collect();
    ranked.sort_unstable_by_key(|&(id, (alternatives, fewest))| (Reverse(alternatives), fewest, Reverse(id)));
    ranked.into_iter().take(limit).map(|(id, _)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::rank_hits;

    #[test]
    fn hits_rank_by_alternatives_then_the_rarer_then_the_newer() {
        // 7 is found by both; of the rest, the rarer alternative's (9) comes before the commoner's,
        // and among those the newer first.
        let common = vec![8, 7, 5, 3];
        let rare = vec![9, 7];
        assert_eq!(rank_hits(&[common.clone(), rare.clone()], 10), vec![7, 9, 8, 5, 3]);
        assert_eq!(rank_hits(&[common, rare], 2), vec![7, 9]);
        assert_eq!(rank_hits::<i64>(&[vec![], vec![]], 10), Vec::<i64>::new());
    }
}
