//! Semantic search, optional: an [`Embedder`] per app turns memories and queries into vectors.
//!
//! Without one, memory search is text search alone (ADK's word matching). With one, each memory
//! written is embedded and its vector kept beside its text (inside the stored record, so every
//! backend keeps it, expiry and erasure remove it with the memory, and encryption at rest seals
//! it); a search can then rank by meaning ([`SearchMode::Semantic`]: cosine similarity over a scan
//! of the user's vectors) or by both ([`SearchMode::Hybrid`]: the text ranking and the vector
//! ranking fused by reciprocal rank, so memories sharing words with the query stay on top and
//! memories that only mean the same join them). Only vectors of the embedder's model (and
//! dimension) are compared: after a model change, memories are found by text until added again.
//!
//! Providers over HTTP (OpenAI-compatible `/v1/embeddings`, Gemini's `batchEmbedContents`) are in
//! `agentstate_runtime::providers`; any other is a type implementing [`Embedder`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::error::Result;

/// What a text is embedded for: providers that distinguish them (Gemini's task types) embed
/// documents and queries differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A memory, to be found.
    Document,
    /// A search query.
    Query,
}

/// Turns texts into vectors.
#[async_trait]
pub trait Embedder: Send + Sync + fmt::Debug {
    /// The model: kept with each vector, and only vectors of the same model are compared.
    fn model(&self) -> &str;

    /// One vector per text, in order, all of one dimension. An error is
    /// [`Error::Backend`](crate::Error::Backend), retryable when the provider may answer later.
    async fn embed(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>>;
}

/// How a search ranks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SearchMode {
    /// Hybrid when the app has an embedder, text otherwise.
    #[default]
    Auto,
    /// Words only, as ADK's in-memory service matches them.
    Text,
    /// Meaning only: the memories whose vectors are nearest the query's.
    Semantic,
    /// Both rankings fused (reciprocal rank fusion).
    Hybrid,
}

impl std::str::FromStr for SearchMode {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "auto" => Ok(Self::Auto),
            "text" => Ok(Self::Text),
            "semantic" => Ok(Self::Semantic),
            "hybrid" => Ok(Self::Hybrid),
            other => Err(format!("{other:?} is not a search mode: auto, text, semantic or hybrid")),
        }
    }
}

/// The embedders of a memory service: one for every app, and one per app over it.
#[derive(Debug, Clone, Default)]
pub struct Embedders {
    every_app: Option<Arc<dyn Embedder>>,
    apps: HashMap<String, Arc<dyn Embedder>>,
    cache: Arc<VectorCache>,
}

impl Embedders {
    /// None: text search alone.
    pub fn new() -> Self {
        Self::default()
    }

    /// `embedder` for every app without one of its own.
    #[must_use]
    pub fn every_app(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.every_app = Some(embedder);
        self
    }

    /// `embedder` for `app`.
    #[must_use]
    pub fn app(mut self, app: impl Into<String>, embedder: Arc<dyn Embedder>) -> Self {
        self.apps.insert(app.into(), embedder);
        self
    }

    /// The embedder of `app`, if any.
    pub fn of(&self, app: &str) -> Option<&Arc<dyn Embedder>> {
        self.apps.get(app).or(self.every_app.as_ref())
    }

    /// Whether no app has one.
    pub fn is_empty(&self) -> bool {
        self.every_app.is_none() && self.apps.is_empty()
    }

    /// Vectors of `texts` as documents, those embedded lately taken from a cache (adding a
    /// session again embeds only its new events).
    pub(super) async fn documents(&self, embedder: &dyn Embedder, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let model = embedder.model();
        let mut vectors: Vec<Option<Arc<Vec<f32>>>> = texts.iter().map(|t| self.cache.get(model, t)).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| vectors[i].is_none()).collect();
        for batch in missing.chunks(EMBED_BATCH) {
            let asked: Vec<String> = batch.iter().map(|&i| texts[i].clone()).collect();
            let answered = embedder.embed(&asked, Purpose::Document).await?;
            if answered.len() != asked.len() {
                let message = format!("embed memories: asked for {} vectors, got {}", asked.len(), answered.len());
                return Err(crate::Error::Backend { message, retryable: false, source: None });
            }
            for (&i, vector) in batch.iter().zip(answered) {
                let vector = Arc::new(vector);
                self.cache.put(model, &texts[i], Arc::clone(&vector));
                vectors[i] = Some(vector);
            }
        }
        Ok(vectors.into_iter().map(|v| v.map(|v| v.as_ref().clone()).unwrap_or_default()).collect())
    }
}

/// Texts per embedding request.
const EMBED_BATCH: usize = 64;
/// Vectors the cache keeps before it starts again.
const CACHE_ENTRIES: usize = 8192;

/// Recently embedded texts (by model and SHA-256 of the text): adding a session again, as ADK's
/// runners do after every turn, embeds only what is new.
#[derive(Default)]
struct VectorCache(Mutex<HashMap<[u8; 32], Arc<Vec<f32>>>>);

impl fmt::Debug for VectorCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorCache").finish_non_exhaustive()
    }
}

impl VectorCache {
    fn key(model: &str, text: &str) -> [u8; 32] {
        let digest = Sha256::new().chain_update(model.as_bytes()).chain_update([0]).chain_update(text).finalize();
        let mut key = [0; 32];
        key.copy_from_slice(&digest);
        key
    }

    fn get(&self, model: &str, text: &str) -> Option<Arc<Vec<f32>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(&Self::key(model, text)).cloned()
    }

    fn put(&self, model: &str, text: &str, vector: Arc<Vec<f32>>) {
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(Self::key(model, text), vector);
    }
}

/// The custom-metadata key a memory's vector is kept under (removed before a memory is shown;
/// keys starting `agentstate_` are refused from callers).
pub(crate) const VECTOR_KEY: &str = "agentstate_vector";

/// Keys callers may not set: agentstate keeps its own data under them.
pub(crate) const RESERVED_PREFIX: &str = "agentstate_";

/// `vector` of `model` as kept in metadata: the model and the little-endian `f32`s in base64.
pub(crate) fn vector_value(model: &str, vector: &[f32]) -> Value {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    json!({"model": model, "f32": BASE64.encode(bytes)})
}

/// The vector kept in `metadata`, if it is of `model`.
pub(crate) fn vector_of(metadata: &Map<String, Value>, model: &str) -> Option<Vec<f32>> {
    let kept = metadata.get(VECTOR_KEY)?;
    if kept.get("model").and_then(Value::as_str) != Some(model) {
        return None;
    }
    let bytes = BASE64.decode(kept.get("f32")?.as_str()?).ok()?;
    let floats = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    Some(floats.collect())
}

/// Cosine similarity; 0 for vectors of different dimensions or of length 0.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut aa, mut bb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 { 0.0 } else { dot / (aa.sqrt() * bb.sqrt()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_and_compare() {
        let v = [0.25f32, -1.5, 3.0];
        let mut metadata = Map::new();
        metadata.insert(VECTOR_KEY.into(), vector_value("m1", &v));
        assert_eq!(vector_of(&metadata, "m1").unwrap(), v);
        assert!(vector_of(&metadata, "m2").is_none(), "another model's vector is not compared");
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&v, &[1.0, 2.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
        assert!(cosine(&[1.0, 0.0], &[-1.0, 0.0]) < -0.99);
    }
}
