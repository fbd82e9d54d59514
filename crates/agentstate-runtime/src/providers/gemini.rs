//! The Gemini API: `models/{model}:generateContent` and `:streamGenerateContent?alt=sse`.

use agentstate::{Content, Map, Part, Value};
use async_trait::async_trait;
use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

use super::{Aggregator, DEFAULT_RETRIES, client, decode, send, sse_json, streamed, trim_slash};
use crate::model::{LlmRequest, LlmResponse, Model, ModelError, ResponseStream};

const PROVIDER: &str = "Gemini";
/// Where the Gemini API lives unless `GEMINI_BASE_URL` says otherwise.
pub const GEMINI_DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// A Gemini model over the Gemini API. The API key never shows in `Debug`, logs or errors.
///
/// ```
/// use agentstate_runtime::model::Model;
/// use agentstate_runtime::providers::Gemini;
/// let model = Gemini::new("gemini-2.5-flash", "my-key").base_url("http://127.0.0.1:8080");
/// assert_eq!(model.name(), "gemini-2.5-flash");
/// assert!(!format!("{model:?}").contains("my-key"));
/// ```
#[derive(Debug, Clone)]
pub struct Gemini {
    model: String,
    api_key: SecretString,
    base_url: String,
    retries: u32,
}

impl Gemini {
    /// `model` with `api_key`, at the public endpoint.
    pub fn new(model: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            api_key: SecretString::from(api_key.into()),
            base_url: GEMINI_DEFAULT_BASE_URL.into(),
            retries: DEFAULT_RETRIES,
        }
    }

    /// `model` with the key in `GEMINI_API_KEY` (or `GOOGLE_API_KEY`) and the base URL in
    /// `GEMINI_BASE_URL` when set.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        Self::from_lookup(model, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) reading variables through `lookup`.
    pub fn from_lookup(model: impl Into<String>, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let key = lookup("GEMINI_API_KEY").or_else(|| lookup("GOOGLE_API_KEY")).filter(|k| !k.is_empty());
        let key = key.ok_or_else(|| ModelError::Config("Gemini needs an API key: set GEMINI_API_KEY".into()))?;
        let mut model = Self::new(model, key);
        if let Some(url) = lookup("GEMINI_BASE_URL").filter(|u| !u.is_empty()) {
            model = model.base_url(&url);
        }
        Ok(model)
    }

    /// Retries of a rate-limited, overloaded or unreachable provider (default 2; 0 for none).
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Another endpoint (a proxy, a local test server).
    pub fn base_url(mut self, url: &str) -> Self {
        self.base_url = trim_slash(url);
        self
    }

    fn url(&self, stream: bool) -> String {
        let (method, query) = if stream { ("streamGenerateContent", "?alt=sse") } else { ("generateContent", "") };
        format!("{}/v1beta/models/{}:{method}{query}", self.base_url, self.model)
    }
}

#[async_trait]
impl Model for Gemini {
    fn name(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &str {
        "gcp.gemini"
    }

    async fn generate(&self, request: LlmRequest, stream: bool) -> Result<ResponseStream, ModelError> {
        let body = request_body(&request);
        let mut key = HeaderValue::from_str(self.api_key.expose_secret()).map_err(|_| {
            ModelError::Config("the Gemini API key holds characters an HTTP header cannot carry".into())
        })?;
        key.set_sensitive(true);
        let http = client(PROVIDER)?.post(self.url(stream)).header("x-goog-api-key", key).json(&body);
        let response = send(PROVIDER, http, self.retries).await?;
        if !stream {
            let body: Value = response.json().await.map_err(|e| decode(PROVIDER, e))?;
            return Ok(Box::pin(futures_util::stream::once(std::future::ready(parse_response(&body)))));
        }
        Ok(streamed(sse_json(PROVIDER, response), Aggregate::default()))
    }
}

/// Streamed chunks summed up: text and thoughts concatenated, calls in order.
#[derive(Default)]
struct Aggregate {
    thought: String,
    text: String,
    calls: Vec<Part>,
    last: LlmResponse,
}

impl Aggregator for Aggregate {
    fn add(&mut self, chunk: Value) -> Result<Option<LlmResponse>, ModelError> {
        let mut chunk = parse_response(&chunk)?;
        let mut shown = Vec::new();
        for part in chunk.content.take().and_then(|c| c.parts).unwrap_or_default() {
            if part.function_call.is_some() {
                self.calls.push(part);
            } else if let Some(text) = part.text.as_deref().filter(|t| !t.is_empty()) {
                if part.thought == Some(true) {
                    self.thought.push_str(text);
                } else {
                    self.text.push_str(text);
                }
                shown.push(part);
            }
        }
        self.last = chunk;
        Ok((!shown.is_empty()).then(|| LlmResponse {
            content: Some(Content { parts: Some(shown), role: Some("model".into()), extra: Map::new() }),
            partial: true,
            ..LlmResponse::default()
        }))
    }

    fn finish(self) -> Result<LlmResponse, ModelError> {
        let mut parts = Vec::new();
        if !self.thought.is_empty() {
            parts.push(Part { thought: Some(true), ..Part::text(self.thought) });
        }
        if !self.text.is_empty() {
            parts.push(Part::text(self.text));
        }
        parts.extend(self.calls);
        let content =
            (!parts.is_empty()).then(|| Content { parts: Some(parts), role: Some("model".into()), extra: Map::new() });
        Ok(LlmResponse { content, partial: false, ..self.last })
    }
}

/// Our request as the Gemini API's JSON (camelCase).
fn request_body(request: &LlmRequest) -> Value {
    let mut body = Map::new();
    let contents: Vec<Value> = request.contents.iter().map(content_json).collect();
    body.insert("contents".into(), Value::Array(contents));
    if let Some(instruction) = &request.system_instruction {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": instruction}]}));
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
    }
    let mut config = Map::new();
    if let Some(t) = request.temperature {
        config.insert("temperature".into(), json!(t));
    }
    if let Some(n) = request.max_output_tokens {
        config.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(schema) = &request.response_schema {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseSchema".into(), schema.clone());
    }
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    Value::Object(body)
}

fn content_json(content: &Content) -> Value {
    let parts: Vec<Value> = content.parts().iter().map(part_json).collect();
    json!({"role": content.role.as_deref().unwrap_or("user"), "parts": parts})
}

fn part_json(part: &Part) -> Value {
    let mut out = Map::new();
    if let Some(text) = &part.text {
        out.insert("text".into(), json!(text));
    }
    if let Some(thought) = part.thought {
        out.insert("thought".into(), json!(thought));
    }
    if let Some(call) = &part.function_call {
        let body = function_part(call.id.as_deref(), call.name.as_deref(), "args", call.args.as_ref());
        out.insert("functionCall".into(), body);
    }
    if let Some(response) = &part.function_response {
        let body =
            function_part(response.id.as_deref(), response.name.as_deref(), "response", response.response.as_ref());
        out.insert("functionResponse".into(), body);
    }
    if let Some(blob) = &part.inline_data {
        out.insert("inlineData".into(), json!({"mimeType": blob.mime_type, "data": blob.data}));
    }
    // What we do not model (thought signatures, …) goes back as it came.
    out.extend(part.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    Value::Object(out)
}

/// A `GenerateContentResponse` (or one streamed chunk of it) as our response.
fn parse_response(body: &Value) -> Result<LlmResponse, ModelError> {
    let usage = body.get("usageMetadata").cloned();
    let model_version = body.get("modelVersion").and_then(Value::as_str).map(str::to_owned);
    let Some(candidate) = body.get("candidates").and_then(|c| c.get(0)) else {
        if let Some(reason) = body.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
            return Ok(LlmResponse {
                error_code: Some(reason.to_owned()),
                error_message: body
                    .pointer("/promptFeedback/blockReasonMessage")
                    .and_then(Value::as_str)
                    .map(Into::into),
                usage,
                model_version,
                ..LlmResponse::default()
            });
        }
        // A streamed chunk may carry only usage.
        if usage.is_some() {
            return Ok(LlmResponse { usage, model_version, ..LlmResponse::default() });
        }
        return Err(decode(PROVIDER, format!("no candidates in {body}")));
    };
    let content = match candidate.get("content") {
        Some(c) if c.get("parts").is_some() => {
            let mut content: Content = serde_json::from_value(c.clone()).map_err(|e| decode(PROVIDER, e))?;
            content.role.get_or_insert_with(|| "model".into());
            Some(content)
        }
        _ => None,
    };
    let finish_reason = candidate.get("finishReason").and_then(Value::as_str).map(str::to_owned);
    let (error_code, error_message) = match (&content, finish_reason.as_deref()) {
        (None, Some(reason)) if reason != "STOP" => {
            (Some(reason.to_owned()), candidate.get("finishMessage").and_then(Value::as_str).map(str::to_owned))
        }
        _ => (None, None),
    };
    Ok(LlmResponse { content, partial: false, finish_reason, usage, model_version, error_code, error_message })
}

/// A `functionCall` or `functionResponse` body: its id, its name, and its `payload` under `key`.
fn function_part(id: Option<&str>, name: Option<&str>, key: &str, payload: Option<&Map<String, Value>>) -> Value {
    let mut body = Map::new();
    // Ids we made up (`adk-…`) mean nothing to the model; its own ones go back.
    if let Some(id) = id.filter(|id| !id.starts_with("adk-")) {
        body.insert("id".into(), json!(id));
    }
    body.insert("name".into(), json!(name.unwrap_or_default()));
    body.insert(key.into(), Value::Object(payload.cloned().unwrap_or_default()));
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_env_needs_a_key_and_reads_the_base_url() {
        let err = Gemini::from_lookup("m", |_| None).unwrap_err();
        assert!(err.to_string().contains("GEMINI_API_KEY"), "{err}");
        let vars = |name: &str| match name {
            "GOOGLE_API_KEY" => Some("k2".to_owned()),
            "GEMINI_BASE_URL" => Some("http://localhost:9/".to_owned()),
            _ => None,
        };
        let model = Gemini::from_lookup("m", vars).unwrap();
        assert_eq!(
            (model.api_key.expose_secret(), model.url(true).as_str()),
            ("k2", "http://localhost:9/v1beta/models/m:streamGenerateContent?alt=sse")
        );
    }

    #[test]
    fn an_output_schema_asks_for_json() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let request = LlmRequest { response_schema: Some(schema.clone()), ..LlmRequest::default() };
        let body = request_body(&request);
        assert_eq!(body["generationConfig"], json!({"responseMimeType": "application/json", "responseSchema": schema}));
    }

    #[test]
    fn blocked_prompts_and_safety_stops_are_errors_in_band() {
        let blocked = parse_response(&json!({"promptFeedback": {"blockReason": "SAFETY"}})).unwrap();
        assert_eq!(blocked.error_code.as_deref(), Some("SAFETY"));
        let stopped =
            parse_response(&json!({"candidates": [{"finishReason": "RECITATION", "finishMessage": "no"}]})).unwrap();
        assert_eq!((stopped.error_code.as_deref(), stopped.error_message.as_deref()), (Some("RECITATION"), Some("no")));
        assert!(parse_response(&json!({"nothing": 1})).is_err());
    }
}
