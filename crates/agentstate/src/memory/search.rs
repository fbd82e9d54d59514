//! Memory search: by words (the engine's full-text index, confirmed against ADK's word rules),
//! by meaning (a scan of the owner's vectors), or both fused.

use std::collections::HashMap;

use tracing::Instrument;

use super::embed::{Embedder, Purpose, SearchMode, cosine, vector_of};
use super::model::{Memory, MemoryOwner};
use super::service::{DEFAULT_SEARCH_LIMIT, MemoryService, page_limit, shown};
use super::terms::query_terms;
use super::words::{matched, words};
use crate::error::{Error, Result};
use crate::store::{MemoryList, MemorySearch, MemoryStore};

/// How a search ranks and how much it answers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SearchOptions {
    /// At most this many ([`DEFAULT_SEARCH_LIMIT`] when `None`, at most
    /// [`MAX_MEMORY_PAGE`](super::MAX_MEMORY_PAGE)).
    pub limit: Option<usize>,
    /// The ranking.
    pub mode: SearchMode,
    /// Semantic candidates less similar than this (cosine, -1 to 1) are left out.
    pub min_similarity: Option<f32>,
}

/// What a search found, as kept.
pub(super) struct Found {
    /// The memories, best first.
    pub(super) memories: Vec<Memory>,
    /// The embedding model and the query's vector, when the query was embedded.
    pub(super) query: Option<(String, Vec<f32>)>,
}

/// The most candidates one text search asks the store for.
const MAX_CANDIDATES: usize = 10_000;
/// Memories read per page by a scan of vectors.
const SCAN_PAGE: usize = 1000;
/// Reciprocal rank fusion's constant (the usual 60: ranks far down weigh little, never nothing).
const RRF_K: f32 = 60.0;

impl MemoryService {
    /// [`search`](Self::search) with a choice of ranking. Semantic and hybrid ranking need an
    /// embedder for the app (else `Unsupported`); a hybrid search whose query embedding fails
    /// answers the text ranking alone (and logs why), a semantic one fails.
    pub async fn search_with(&self, owner: &MemoryOwner, query: &str, options: &SearchOptions) -> Result<Vec<Memory>> {
        Ok(self.search_found(owner, query, options).await?.memories.into_iter().map(shown).collect())
    }

    /// [`search_with`](Self::search_with), the memories as kept (with agentstate's own
    /// metadata), and the query's embedding if it was embedded.
    pub(super) async fn search_found(
        &self,
        owner: &MemoryOwner,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Found> {
        let store = self.store("search memory")?;
        let limit = page_limit(options.limit.unwrap_or(DEFAULT_SEARCH_LIMIT))?;
        if query.trim().is_empty() {
            return Err(Error::invalid("query", "has no words to search for"));
        }
        let embedder = self.embedders.of(owner.app_name());
        let mode = match (options.mode, embedder) {
            (SearchMode::Auto, Some(_)) => SearchMode::Hybrid,
            (SearchMode::Auto, None) => SearchMode::Text,
            (mode, _) => mode,
        };
        let query_words = words(query);
        let embedder = match (mode, embedder) {
            (SearchMode::Text, _) => None,
            (_, Some(embedder)) => Some(embedder.as_ref()),
            (_, None) => return Err(Error::Unsupported { operation: "search by meaning", capability: "embeddings" }),
        };
        if query_words.is_empty() && mode == SearchMode::Text {
            return Err(Error::invalid("query", "has no words to search for"));
        }
        let span = tracing::info_span!("search_memory", app = owner.app_name(), words = query_words.len(), ?mode);
        let text = if query_words.is_empty() || mode == SearchMode::Semantic {
            Vec::new()
        } else {
            self.text_ranked(store, owner, &query_words, limit).instrument(span.clone()).await?
        };
        let (semantic, query_vector) = match embedder {
            None => (Vec::new(), None),
            Some(embedder) => {
                let ranked = self.semantic_ranked(store, owner, embedder, query, limit, options.min_similarity);
                match ranked.instrument(span).await {
                    Err(error) if mode == SearchMode::Hybrid => {
                        tracing::warn!(app = owner.app_name(), %error, "searching by words alone: the query embedding failed");
                        (Vec::new(), None)
                    }
                    ranked => {
                        let (ranked, vector) = ranked?;
                        (ranked, Some((embedder.model().to_owned(), vector)))
                    }
                }
            }
        };
        let mut found = match mode {
            SearchMode::Semantic => semantic,
            SearchMode::Hybrid if !semantic.is_empty() => fuse(text, semantic, limit),
            _ => text,
        };
        found.truncate(limit);
        Ok(Found { memories: found, query: query_vector })
    }

    /// The owner's memories sharing words with the query, those sharing the most first. The
    /// engine finds candidates; confirmation drops the few that only share characters or a
    /// hash with the query. It asks for more until enough are confirmed or none are left.
    async fn text_ranked(
        &self,
        store: &dyn MemoryStore,
        owner: &MemoryOwner,
        query_words: &std::collections::BTreeSet<String>,
        limit: usize,
    ) -> Result<Vec<Memory>> {
        let mut any_of = query_terms(owner, query_words);
        if any_of.len() > 1 {
            // Every word at once, first: the same memories are found, and a store that looks
            // alternatives up one by one (PostgreSQL) reads those sharing the most words first.
            let all: std::collections::BTreeSet<String> = any_of.iter().flatten().cloned().collect();
            any_of.insert(0, all.into_iter().collect());
        }
        let mut fetch = (limit * 4).max(40);
        loop {
            let search = MemorySearch {
                owner: owner.clone(),
                any_of: any_of.clone(),
                limit: fetch,
                now_micros: self.sessions.now_micros(),
            };
            let found = store.search_memories(&search).await?;
            let exhausted = found.len() < fetch;
            let mut scored: Vec<(usize, Memory)> = found
                .into_iter()
                .filter_map(|memory| Some((matched(query_words, &memory.text()), memory)).filter(|(n, _)| *n > 0))
                .collect();
            if scored.len() >= limit || exhausted || fetch >= MAX_CANDIDATES {
                scored.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
                return Ok(scored.into_iter().take(limit).map(|(_, memory)| memory).collect());
            }
            fetch = (fetch * 4).min(MAX_CANDIDATES);
        }
    }

    /// The owner's memories nearest the query in meaning: a scan of their vectors (those of the
    /// embedder's model), most similar first; and the query's vector.
    async fn semantic_ranked(
        &self,
        store: &dyn MemoryStore,
        owner: &MemoryOwner,
        embedder: &dyn Embedder,
        query: &str,
        limit: usize,
        min_similarity: Option<f32>,
    ) -> Result<(Vec<Memory>, Vec<f32>)> {
        let asked = [query.to_owned()];
        let query_vector = embedder.embed(&asked, Purpose::Query).await?.into_iter().next().unwrap_or_default();
        let model = embedder.model();
        let floor = min_similarity.unwrap_or(f32::MIN);
        let mut best: Vec<(f32, Memory)> = Vec::new();
        let mut list =
            MemoryList { owner: owner.clone(), after: None, limit: SCAN_PAGE, now_micros: self.sessions.now_micros() };
        loop {
            let page = store.list_memories(&list).await?;
            list.after = page.last().filter(|_| page.len() == SCAN_PAGE).map(crate::store::MemoryCursor::of);
            for memory in page {
                let Some(vector) = vector_of(&memory.custom_metadata, model) else { continue };
                let similarity = cosine(&query_vector, &vector);
                if vector.len() == query_vector.len() && similarity >= floor {
                    best.push((similarity, memory));
                }
            }
            if best.len() > limit * 4 {
                keep_best(&mut best, limit);
            }
            if list.after.is_none() {
                break;
            }
        }
        keep_best(&mut best, limit);
        Ok((best.into_iter().map(|(_, memory)| memory).collect(), query_vector))
    }
}

/// Keeps the `n` most similar, most similar first (ties: the older first, as stored).
fn keep_best(scored: &mut Vec<(f32, Memory)>, n: usize) {
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.truncate(n);
}

/// Reciprocal rank fusion of two rankings: each memory scores the sum of `1 / (60 + rank)` over
/// the rankings it is in. A memory in both outranks one in either alone at the same ranks.
fn fuse(text: Vec<Memory>, semantic: Vec<Memory>, limit: usize) -> Vec<Memory> {
    let mut scores: HashMap<(Option<String>, String), (f32, usize, Memory)> = HashMap::new();
    for ranking in [text, semantic] {
        for (rank, memory) in ranking.into_iter().enumerate() {
            let score = 1.0 / (RRF_K + rank as f32 + 1.0);
            let key = (memory.session_id.clone(), memory.id.clone());
            let order = scores.len();
            scores.entry(key).and_modify(|(s, ..)| *s += score).or_insert((score, order, memory));
        }
    }
    let mut fused: Vec<(f32, usize, Memory)> = scores.into_values().collect();
    fused.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    fused.into_iter().take(limit).map(|(_, _, memory)| memory).collect()
}
