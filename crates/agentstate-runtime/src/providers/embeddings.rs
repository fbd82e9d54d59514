//! Embedding providers for memory's search by meaning ([`agentstate::memory::embed`]):
//! [`OpenAiEmbeddings`] (`POST {base}/embeddings`: OpenAI, Ollama, vLLM, LM Studio, …) and
//! [`GeminiEmbeddings`] (the Gemini API's `batchEmbedContents`, the batch form of
//! `embedContent`). Keys never show in `Debug`, logs or errors.

use agentstate::memory::{Embedder, Purpose};
use agentstate::{Error, Value};
use async_trait::async_trait;
use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

use super::{DEFAULT_RETRIES, GEMINI_DEFAULT_BASE_URL, client, decode, send, trim_slash};
use crate::model::ModelError;

/// A provider's failure as a memory error: retryable when the provider may answer later.
fn memory_error(error: &ModelError) -> Error {
    let retryable = match error {
        ModelError::Status { status, .. } => matches!(status, 429 | 500 | 502 | 503 | 504),
        ModelError::Transport { .. } => true,
        _ => false,
    };
    Error::Backend { message: format!("embeddings: {error}"), retryable, source: None }
}

/// A vector as JSON numbers.
fn floats(value: &Value) -> Option<Vec<f32>> {
    value.as_array()?.iter().map(|x| x.as_f64().map(|x| x as f32)).collect()
}

/// Checks a provider answered one vector per text.
fn one_each(provider: &'static str, vectors: Vec<Vec<f32>>, asked: usize) -> Result<Vec<Vec<f32>>, ModelError> {
    if vectors.len() != asked || vectors.iter().any(Vec::is_empty) {
        return Err(decode(provider, format!("asked for {asked} vectors, got {}", vectors.len())));
    }
    Ok(vectors)
}

/// The two settings both providers take, each documented as its provider means it:
/// `dimensions(n)` (asked of the model) and `retries(n)`.
macro_rules! settings {
    ($(#[$dimensions:meta])* dimensions, $(#[$retries:meta])* retries) => {
        $(#[$dimensions])*
        #[must_use]
        pub fn dimensions(mut self, dimensions: u32) -> Self {
            self.dimensions = Some(dimensions);
            self
        }

        $(#[$retries])*
        #[must_use]
        pub fn retries(mut self, retries: u32) -> Self {
            self.retries = retries;
            self
        }
    };
}

const OPENAI: &str = "OpenAI-compatible embeddings";

/// Embeddings from an OpenAI-compatible `/embeddings` endpoint.
///
/// ```
/// use agentstate::memory::Embedder;
/// use agentstate_runtime::providers::OpenAiEmbeddings;
/// let local = OpenAiEmbeddings::new("nomic-embed-text", "http://localhost:11434/v1");
/// assert_eq!(local.model(), "nomic-embed-text");
/// let openai = OpenAiEmbeddings::new("text-embedding-3-small", "https://api.openai.com/v1").api_key("sk-secret");
/// assert!(!format!("{openai:?}").contains("sk-secret"));
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddings {
    model: String,
    base_url: String,
    api_key: Option<SecretString>,
    dimensions: Option<u32>,
    retries: u32,
}

impl OpenAiEmbeddings {
    /// `model` at `base_url` (ending in `/v1` for most servers), without a key.
    pub fn new(model: impl Into<String>, base_url: &str) -> Self {
        Self {
            model: model.into(),
            base_url: trim_slash(base_url),
            api_key: None,
            dimensions: None,
            retries: DEFAULT_RETRIES,
        }
    }

    /// `model` at `OPENAI_BASE_URL` (default OpenAI's) with the key in `OPENAI_API_KEY`,
    /// read through `lookup`; the key is required only for OpenAI itself.
    pub fn from_lookup(model: impl Into<String>, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let (base_url, key) = super::openai::endpoint_from(&lookup, "OpenAI embeddings")?;
        let embeddings = Self::new(model, &base_url);
        Ok(match key {
            Some(key) => embeddings.api_key(key),
            None => embeddings,
        })
    }

    /// Sends `Authorization: Bearer <key>`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(SecretString::from(key.into()));
        self
    }

    settings! {
        /// Asks for vectors of this many dimensions (models that can shorten theirs).
        dimensions,
        /// Retries of a rate-limited, overloaded or unreachable server (default 2).
        retries
    }

    async fn call(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if let Some(dimensions) = self.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        let mut http = client(OPENAI)?.post(format!("{}/embeddings", self.base_url)).json(&body);
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key.expose_secret());
        }
        let answer: Value = send(OPENAI, http, self.retries).await?.json().await.map_err(|e| decode(OPENAI, e))?;
        let mut data: Vec<(u64, Vec<f32>)> = answer
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| decode(OPENAI, "no `data` array"))?
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let index = item.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
                let vector = item
                    .get("embedding")
                    .and_then(floats)
                    .ok_or_else(|| decode(OPENAI, "an item has no `embedding`"))?;
                Ok((index, vector))
            })
            .collect::<Result<_, ModelError>>()?;
        data.sort_by_key(|(index, _)| *index);
        one_each(OPENAI, data.into_iter().map(|(_, v)| v).collect(), texts.len())
    }
}

#[async_trait]
impl Embedder for OpenAiEmbeddings {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[String], _: Purpose) -> agentstate::Result<Vec<Vec<f32>>> {
        self.call(texts).await.map_err(|e| memory_error(&e))
    }
}

const GEMINI: &str = "Gemini embeddings";

/// Embeddings from the Gemini API (`models/{model}:batchEmbedContents`), with the task type of
/// each purpose (`RETRIEVAL_DOCUMENT`, `RETRIEVAL_QUERY`).
///
/// ```
/// use agentstate::memory::Embedder;
/// use agentstate_runtime::providers::GeminiEmbeddings;
/// let gemini = GeminiEmbeddings::new("gemini-embedding-001", "my-key").base_url("http://127.0.0.1:9");
/// assert_eq!(gemini.model(), "gemini-embedding-001");
/// assert!(!format!("{gemini:?}").contains("my-key"));
/// ```
#[derive(Debug, Clone)]
pub struct GeminiEmbeddings {
    model: String,
    api_key: SecretString,
    base_url: String,
    dimensions: Option<u32>,
    retries: u32,
}

impl GeminiEmbeddings {
    /// `model` with `api_key`, at the public endpoint.
    pub fn new(model: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            api_key: SecretString::from(api_key.into()),
            base_url: GEMINI_DEFAULT_BASE_URL.into(),
            dimensions: None,
            retries: DEFAULT_RETRIES,
        }
    }

    /// `model` with the key in `GEMINI_API_KEY` (or `GOOGLE_API_KEY`) and the base URL in
    /// `GEMINI_BASE_URL` when set, read through `lookup`.
    pub fn from_lookup(model: impl Into<String>, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let key = lookup("GEMINI_API_KEY").or_else(|| lookup("GOOGLE_API_KEY")).filter(|k| !k.is_empty());
        let key =
            key.ok_or_else(|| ModelError::Config("Gemini embeddings need an API key: set GEMINI_API_KEY".into()))?;
        let mut embeddings = Self::new(model, key);
        if let Some(url) = lookup("GEMINI_BASE_URL").filter(|u| !u.is_empty()) {
            embeddings = embeddings.base_url(&url);
        }
        Ok(embeddings)
    }

    /// Another endpoint (a proxy, a local test server).
    #[must_use]
    pub fn base_url(mut self, url: &str) -> Self {
        self.base_url = trim_slash(url);
        self
    }

    settings! {
        /// Asks for vectors of this many dimensions (`outputDimensionality`).
        dimensions,
        /// Retries of a rate-limited, overloaded or unreachable provider (default 2).
        retries
    }

    async fn call(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, ModelError> {
        let task = match purpose {
            Purpose::Document => "RETRIEVAL_DOCUMENT",
            Purpose::Query => "RETRIEVAL_QUERY",
        };
        let name = format!("models/{}", self.model);
        let requests: Vec<Value> = texts
            .iter()
            .map(|text| {
                let mut request = json!({"model": name, "content": {"parts": [{"text": text}]}, "taskType": task});
                if let Some(dimensions) = self.dimensions {
                    request["outputDimensionality"] = json!(dimensions);
                }
                request
            })
            .collect();
        let mut key = HeaderValue::from_str(self.api_key.expose_secret()).map_err(|_| {
            ModelError::Config("the Gemini API key holds characters an HTTP header cannot carry".into())
        })?;
        key.set_sensitive(true);
        let url = format!("{}/v1beta/{name}:batchEmbedContents", self.base_url);
        let http = client(GEMINI)?.post(url).header("x-goog-api-key", key).json(&json!({"requests": requests}));
        let answer: Value = send(GEMINI, http, self.retries).await?.json().await.map_err(|e| decode(GEMINI, e))?;
        let vectors = answer
            .get("embeddings")
            .and_then(Value::as_array)
            .ok_or_else(|| decode(GEMINI, "no `embeddings` array"))?
            .iter()
            .map(|item| {
                item.get("values").and_then(floats).ok_or_else(|| decode(GEMINI, "an embedding has no `values`"))
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        one_each(GEMINI, vectors, texts.len())
    }
}

#[async_trait]
impl Embedder for GeminiEmbeddings {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[String], purpose: Purpose) -> agentstate::Result<Vec<Vec<f32>>> {
        self.call(texts, purpose).await.map_err(|e| memory_error(&e))
    }
}
