//! Search by meaning: vectors kept beside the text on every backend (sealed with it behind
//! encryption), semantic and hybrid ranking, and a provider failure that loses no text. The
//! embedder is [`ConceptEmbedder`]: deterministic, offline, with synonyms that share no word.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentstate::memory::words::words;
use agentstate::memory::{
    Embedder, Embedders, MemoryOptions, MemoryOwner, NewMemory, Purpose, SearchMode, SearchOptions,
};
use agentstate::{Content, ErrorKind, Map};
use async_trait::async_trait;
use serde_json::json;

use super::Svc;
use super::memory::memory_of;
use crate::unique;

/// Words of one meaning: a text's vector counts, per group, the words it has of it.
const CONCEPTS: [&[&str]; 5] = [
    &["car", "automobile", "vehicle", "sedan"],
    &["tea", "chai", "matcha"],
    &["dog", "puppy", "hound"],
    &["doctor", "physician", "clinic"],
    &["piano", "keyboard", "sonata"],
];

/// An offline embedder for tests: one dimension per concept group of [`CONCEPTS`], and one more
/// for every other word. Fails while `failing` is set.
#[derive(Debug, Default)]
pub(crate) struct ConceptEmbedder {
    pub(crate) failing: AtomicBool,
}

#[async_trait]
impl Embedder for ConceptEmbedder {
    fn model(&self) -> &str {
        "concepts-1"
    }

    async fn embed(&self, texts: &[String], _: Purpose) -> agentstate::Result<Vec<Vec<f32>>> {
        if self.failing.load(Ordering::SeqCst) {
            let message = "embeddings: the provider is down".to_owned();
            return Err(agentstate::Error::Backend { message, retryable: true, source: None });
        }
        let vector = |text: &String| {
            let mut v = vec![0.0f32; CONCEPTS.len() + 1];
            for word in words(text) {
                match CONCEPTS.iter().position(|group| group.contains(&word.as_str())) {
                    Some(i) => v[i] += 1.0,
                    None => v[CONCEPTS.len()] += 0.1,
                }
            }
            v
        };
        Ok(texts.iter().map(vector).collect())
    }
}

fn texts(found: &[agentstate::memory::Memory]) -> Vec<String> {
    found.iter().map(|m| m.text()).collect()
}

fn new_memory(text: &str) -> NewMemory {
    NewMemory { content: Content::text("user", text), ..NewMemory::default() }
}

pub(crate) async fn memories_are_found_by_meaning(svc: Svc) {
    let Some(plain) = memory_of(&svc).await else { return };
    let embedder = Arc::new(ConceptEmbedder::default());
    let app = unique("memory-semantic");
    let memory = plain.clone().with_embedders(Embedders::new().app(&app, embedder.clone()));
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let said = ["I drive an automobile to work", "my puppy is called Rex", "green matcha every morning", "a car wash"];
    let options = MemoryOptions::default();
    memory.add_memories(&owner, said.iter().map(|t| new_memory(t)).collect(), &options).await.unwrap();

    // By meaning: no shared word needed; the vectors never show.
    let semantic = SearchOptions { limit: Some(2), mode: SearchMode::Semantic, ..SearchOptions::default() };
    let found = memory.search_with(&owner, "which vehicle do I own", &semantic).await.unwrap();
    assert_eq!(texts(&found)[..1], ["I drive an automobile to work"]);
    assert!(texts(&found).contains(&"a car wash".to_owned()), "{:?}", texts(&found));
    assert!(found.iter().all(|m| m.custom_metadata.is_empty()), "{found:?}");
    let found = memory.search_with(&owner, "hound", &semantic).await.unwrap();
    assert_eq!(texts(&found)[0], "my puppy is called Rex");
    // A floor on similarity leaves out what is unrelated.
    let strict = SearchOptions { min_similarity: Some(0.5), ..semantic };
    assert_eq!(texts(&memory.search_with(&owner, "chai", &strict).await.unwrap()), ["green matcha every morning"]);

    // Text alone is ADK's word matching; the default (hybrid) puts word matches first and adds
    // the memories that only mean the same.
    let text = SearchOptions { mode: SearchMode::Text, ..SearchOptions::default() };
    assert_eq!(texts(&memory.search_with(&owner, "car", &text).await.unwrap()), ["a car wash"]);
    let hybrid = texts(&memory.search(&owner, "car", Some(2)).await.unwrap());
    assert_eq!(hybrid, ["a car wash", "I drive an automobile to work"]);

    // Listing shows no vectors; another user sees nothing; the same store without embedders
    // searches by text, and asking it for meaning is refused clearly.
    let page = memory.list(&owner, None, 10).await.unwrap();
    assert!(page.memories.iter().all(|m| m.custom_metadata.is_empty()));
    let bob = MemoryOwner::new(&app, "bob").unwrap();
    assert!(memory.search_with(&bob, "automobile", &semantic).await.unwrap().is_empty());
    assert_eq!(texts(&plain.search(&owner, "car", None).await.unwrap()), ["a car wash"]);
    let error = plain.search_with(&owner, "car", &semantic).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.to_string().contains("embeddings"), "{error}");
}

pub(crate) async fn a_failing_embedder_loses_no_memory(svc: Svc) {
    let Some(plain) = memory_of(&svc).await else { return };
    let embedder = Arc::new(ConceptEmbedder::default());
    let app = unique("memory-embed-down");
    let memory = plain.with_embedders(Embedders::new().every_app(embedder.clone()));
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let options = MemoryOptions::default();

    // The provider is down: the memory is stored (found by text), the hybrid search answers by
    // text, a semantic one fails with the provider's (retryable) error.
    embedder.failing.store(true, Ordering::SeqCst);
    memory.add_memories(&owner, vec![new_memory("my doctor is Dr. Who")], &options).await.unwrap();
    assert_eq!(texts(&memory.search(&owner, "doctor", None).await.unwrap()), ["my doctor is Dr. Who"]);
    let semantic = SearchOptions { mode: SearchMode::Semantic, ..SearchOptions::default() };
    let error = memory.search_with(&owner, "physician", &semantic).await.unwrap_err();
    assert!(error.is_retryable() && error.to_string().contains("provider is down"), "{error}");

    // Back up: memories without a vector are not found by meaning until added again.
    embedder.failing.store(false, Ordering::SeqCst);
    assert!(memory.search_with(&owner, "physician", &semantic).await.unwrap().is_empty());
    memory.add_memories(&owner, vec![new_memory("the piano needs tuning")], &options).await.unwrap();
    assert_eq!(texts(&memory.search_with(&owner, "sonata", &semantic).await.unwrap())[0], "the piano needs tuning");

    // agentstate's own metadata keys are refused, and nothing is written.
    let mut metadata = Map::new();
    metadata.insert("agentstate_vector".into(), json!("mine"));
    let bad = NewMemory { custom_metadata: metadata, ..new_memory("sneaky") };
    let error = memory.add_memories(&owner, vec![bad], &options).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
    assert!(error.to_string().contains("reserved"), "{error}");
    let text = SearchOptions { mode: SearchMode::Text, ..SearchOptions::default() };
    assert!(memory.search_with(&owner, "sneaky", &text).await.unwrap().is_empty());
    assert_eq!(memory.count(&owner).await.unwrap(), 2);
}
