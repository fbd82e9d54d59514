//! The embedding providers against local mock servers that answer deterministic vectors (never
//! the network): the requests they send, how they read answers and failures, and memory found by
//! meaning through each.

use std::sync::Arc;

use agentstate::memory::{
    Embedder, Embedders, MemoryOptions, MemoryOwner, MemoryService, NewMemory, Purpose, SearchMode, SearchOptions,
};
use agentstate::{Content, ErrorKind, SessionService, Value};
use agentstate_runtime::providers::{GeminiEmbeddings, OpenAiEmbeddings};
use serde_json::json;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A deterministic vector of a text: one dimension per topic word it has, plus a small constant
/// (so no vector is zero). Synonyms of a topic share its dimension.
fn vector_of(text: &str) -> Vec<f32> {
    let topics: [&[&str]; 3] = [&["car", "automobile", "vehicle"], &["tea", "matcha"], &["dog", "puppy"]];
    let lower = text.to_lowercase();
    let mut v: Vec<f32> =
        topics.iter().map(|words| words.iter().filter(|w| lower.contains(*w)).count() as f32).collect();
    v.push(0.05);
    v
}

/// OpenAI's `/embeddings`: the answer lists the items in reverse (the index says where each goes).
struct OpenAiVectors;

impl Respond for OpenAiVectors {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let inputs = body["input"].as_array().unwrap();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev()
            .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": vector_of(text.as_str().unwrap())}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": data, "model": body["model"]}))
    }
}

/// Gemini's `batchEmbedContents`.
struct GeminiVectors;

impl Respond for GeminiVectors {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let embeddings: Vec<Value> = body["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json!({"values": vector_of(r["content"]["parts"][0]["text"].as_str().unwrap())}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"embeddings": embeddings}))
    }
}

/// Memory over an in-memory store with `embedder` for every app; three memories of alice's.
async fn memory_with(embedder: Arc<dyn Embedder>) -> (MemoryService, MemoryOwner) {
    let memory = MemoryService::new(SessionService::in_memory()).with_embedders(Embedders::new().every_app(embedder));
    let owner = MemoryOwner::new("app", "alice").unwrap();
    let texts = ["I drive an automobile", "green matcha at noon", "my puppy sleeps a lot"];
    let memories =
        texts.iter().map(|t| NewMemory { content: Content::text("user", *t), ..NewMemory::default() }).collect();
    memory.add_memories(&owner, memories, &MemoryOptions::default()).await.unwrap();
    (memory, owner)
}

async fn nearest(memory: &MemoryService, owner: &MemoryOwner, query: &str) -> String {
    let semantic = SearchOptions { limit: Some(1), mode: SearchMode::Semantic, ..SearchOptions::default() };
    memory.search_with(owner, query, &semantic).await.unwrap()[0].text()
}

#[tokio::test]
async fn openai_compatible_embeddings_find_by_meaning() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-test"))
        .and(body_partial_json(json!({"model": "embed-small", "encoding_format": "float", "dimensions": 4})))
        .respond_with(OpenAiVectors)
        .expect(3)
        .mount(&server)
        .await;
    let embeddings =
        OpenAiEmbeddings::new("embed-small", &format!("{}/v1/", server.uri())).api_key("sk-test").dimensions(4);
    let vectors = embeddings.embed(&["a car".into(), "tea".into()], Purpose::Document).await.unwrap();
    assert_eq!(vectors, [vector_of("a car"), vector_of("tea")], "in the order asked, whatever the order answered");

    let (memory, owner) = memory_with(Arc::new(embeddings)).await;
    assert_eq!(nearest(&memory, &owner, "which vehicle").await, "I drive an automobile");
}

#[tokio::test]
async fn gemini_embeddings_find_by_meaning_with_task_types() {
    let server = MockServer::start().await;
    let url = "/v1beta/models/gemini-embedding-001:batchEmbedContents";
    for task in ["RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY"] {
        let request = json!({"requests": [{"model": "models/gemini-embedding-001", "taskType": task, "outputDimensionality": 4}]});
        Mock::given(method("POST"))
            .and(path(url))
            .and(header("x-goog-api-key", "g-key"))
            .and(body_partial_json(request))
            .respond_with(GeminiVectors)
            .expect(1)
            .mount(&server)
            .await;
    }
    let embeddings = GeminiEmbeddings::new("gemini-embedding-001", "g-key").base_url(&server.uri()).dimensions(4);
    let (memory, owner) = memory_with(Arc::new(embeddings)).await;
    assert_eq!(nearest(&memory, &owner, "dog").await, "my puppy sleeps a lot");
}

#[tokio::test]
async fn provider_failures_are_clear_and_keep_keys_secret() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(503).set_body_string("overloaded, try later"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/bad:batchEmbedContents"))
        .respond_with(ResponseTemplate::new(400).set_body_string("model not found"))
        .mount(&server)
        .await;
    let openai = OpenAiEmbeddings::new("m", &format!("{}/v1", server.uri())).api_key("sk-secret").retries(0);
    let error = openai.embed(&["x".into()], Purpose::Query).await.unwrap_err();
    let message = error.to_string();
    assert!(error.is_retryable() && message.contains("503") && message.contains("overloaded"), "{message}");
    assert!(!message.contains("sk-secret"), "{message}");
    let gemini = GeminiEmbeddings::new("bad", "g-secret").base_url(&server.uri()).retries(0);
    let error = gemini.embed(&["x".into()], Purpose::Query).await.unwrap_err();
    assert!(!error.is_retryable() && error.to_string().contains("model not found"), "{error}");
    assert_eq!(error.kind(), ErrorKind::Backend);

    // Memory keeps the text when the provider fails, and finds it by words.
    let (memory, owner) = memory_with(Arc::new(openai)).await;
    let found = memory.search(&owner, "matcha", None).await.unwrap();
    assert_eq!(found[0].text(), "green matcha at noon");
    // A provider answering the wrong number of vectors is an error, not a misfiled vector.
    let short = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [{"index": 0, "embedding": [1.0]}]})))
        .mount(&short)
        .await;
    let error =
        OpenAiEmbeddings::new("m", &short.uri()).embed(&["a".into(), "b".into()], Purpose::Document).await.unwrap_err();
    assert!(error.to_string().contains("asked for 2 vectors, got 1"), "{error}");
}
