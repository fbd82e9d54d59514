//! OpenAI-compatible chat completions: `POST {base}/chat/completions`, streamed with
//! `"stream": true`. Spoken by OpenAI, Ollama (`http://localhost:11434/v1`), vLLM, llama.cpp
//! server, LM Studio and many more.

use agentstate::{Content, FunctionCall, Map, Part, Value};
use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

use super::{Aggregator, DEFAULT_RETRIES, client, decode, send, sse_json, streamed, trim_slash};
use crate::model::{LlmRequest, LlmResponse, Model, ModelError, ResponseStream};

const PROVIDER: &str = "OpenAI-compatible server";
/// OpenAI's endpoint, used unless `OPENAI_BASE_URL` says otherwise.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A model behind an OpenAI-compatible chat completions endpoint. The API key never shows in
/// `Debug`, logs or errors.
///
/// ```
/// use agentstate_runtime::model::Model;
/// use agentstate_runtime::providers::OpenAiCompatible;
/// // A local Ollama: no key needed.
/// let model = OpenAiCompatible::new("llama3.2", "http://localhost:11434/v1");
/// assert_eq!(model.name(), "llama3.2");
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    model: String,
    base_url: String,
    api_key: Option<SecretString>,
    retries: u32,
}

impl OpenAiCompatible {
    /// `model` at `base_url` (ending in `/v1` for most servers), without a key.
    pub fn new(model: impl Into<String>, base_url: &str) -> Self {
        Self { model: model.into(), base_url: trim_slash(base_url), api_key: None, retries: DEFAULT_RETRIES }
    }

    /// `model` at `OPENAI_BASE_URL` (default OpenAI's) with the key in `OPENAI_API_KEY`. The key
    /// is required only for OpenAI itself.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        Self::from_lookup(model, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) reading variables through `lookup`.
    pub fn from_lookup(model: impl Into<String>, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let (base_url, key) = endpoint_from(&lookup, "OpenAI")?;
        let model = Self::new(model, &base_url);
        Ok(match key {
            Some(key) => model.api_key(key),
            None => model,
        })
    }

    /// Retries of a rate-limited, overloaded or unreachable server (default 2; 0 for none).
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Sends `Authorization: Bearer <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(SecretString::from(key.into()));
        self
    }
}

#[async_trait]
impl Model for OpenAiCompatible {
    fn name(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &str {
        "openai"
    }

    async fn generate(&self, request: LlmRequest, stream: bool) -> Result<ResponseStream, ModelError> {
        let body = request_body(&self.model, &request, stream);
        let mut http = client(PROVIDER)?.post(format!("{}/chat/completions", self.base_url)).json(&body);
        if let Some(key) = &self.api_key {
            // reqwest marks the header sensitive, so it never shows in its own Debug either.
            http = http.bearer_auth(key.expose_secret());
        }
        let response = send(PROVIDER, http, self.retries).await?;
        if !stream {
            let body: Value = response.json().await.map_err(|e| decode(PROVIDER, e))?;
            return Ok(Box::pin(futures_util::stream::once(std::future::ready(parse_response(&body)))));
        }
        Ok(streamed(sse_json(PROVIDER, response), Aggregate::default()))
    }
}

/// The base URL (`OPENAI_BASE_URL`, else OpenAI's) and key (`OPENAI_API_KEY`) read through
/// `lookup`; OpenAI itself needs the key, a local server not. `who` names what needs it.
pub(super) fn endpoint_from(
    lookup: &dyn Fn(&str) -> Option<String>,
    who: &str,
) -> Result<(String, Option<String>), ModelError> {
    let base_url =
        lookup("OPENAI_BASE_URL").filter(|u| !u.is_empty()).unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.into());
    let key = lookup("OPENAI_API_KEY").filter(|k| !k.is_empty());
    if key.is_none() && trim_slash(&base_url) == OPENAI_DEFAULT_BASE_URL {
        return Err(ModelError::Config(format!(
            "{who} needs an API key: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)"
        )));
    }
    Ok((base_url, key))
}

/// Our request as chat-completions JSON.
fn request_body(model: &str, request: &LlmRequest, stream: bool) -> Value {
    let mut messages = Vec::new();
    if let Some(instruction) = &request.system_instruction {
        messages.push(json!({"role": "system", "content": instruction}));
    }
    for content in &request.contents {
        push_messages(&mut messages, content);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = request.max_output_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(schema) = &request.response_schema {
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}),
        );
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// One content as chat messages: the model's as an assistant message (text and tool calls),
/// function responses as `tool` messages, the rest as a user message.
fn push_messages(messages: &mut Vec<Value>, content: &Content) {
    let parts = content.parts();
    if content.role.as_deref() == Some("model") {
        let text: String = content.joined_text();
        let calls: Vec<Value> = parts
            .iter()
            .filter_map(|p| p.function_call.as_ref())
            .map(|c| {
                json!({"id": c.id.as_deref().unwrap_or_default(), "type": "function", "function": {
                    "name": c.name.as_deref().unwrap_or_default(),
                    "arguments": Value::Object(c.args.clone().unwrap_or_default()).to_string()}})
            })
            .collect();
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        message.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
        if !calls.is_empty() {
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        messages.push(Value::Object(message));
        return;
    }
    for response in parts.iter().filter_map(|p| p.function_response.as_ref()) {
        messages.push(json!({
            "role": "tool",
            "tool_call_id": response.id.as_deref().unwrap_or_default(),
            "content": Value::Object(response.response.clone().unwrap_or_default()).to_string(),
        }));
    }
    let user_parts: Vec<&Part> =
        parts.iter().filter(|p| p.function_response.is_none() && p.thought != Some(true)).collect();
    if user_parts.is_empty() {
        return;
    }
    if user_parts.iter().all(|p| p.inline_data.is_none()) {
        let text: String = user_parts.iter().filter_map(|p| p.text.as_deref()).collect();
        messages.push(json!({"role": "user", "content": text}));
        return;
    }
    let items: Vec<Value> = user_parts
        .iter()
        .filter_map(|p| match (&p.text, &p.inline_data) {
            (Some(text), _) => Some(json!({"type": "text", "text": text})),
            (None, Some(blob)) => Some(json!({"type": "image_url", "image_url": {"url": format!(
                "data:{};base64,{}",
                blob.mime_type.as_deref().unwrap_or("application/octet-stream"),
                blob.data.as_deref().unwrap_or_default()
            )}})),
            (None, None) => None,
        })
        .collect();
    messages.push(json!({"role": "user", "content": items}));
}

fn call_part(id: Option<&str>, name: &str, arguments: &str) -> Result<Part, ModelError> {
    let args: Map<String, Value> = if arguments.trim().is_empty() {
        Map::new()
    } else {
        serde_json::from_str(arguments)
            .map_err(|e| decode(PROVIDER, format!("arguments of the call of '{name}' are not a JSON object: {e}")))?
    };
    Ok(Part {
        function_call: Some(FunctionCall {
            id: id.filter(|id| !id.is_empty()).map(str::to_owned),
            name: Some(name.to_owned()),
            args: Some(args),
            extra: Map::new(),
        }),
        ..Part::default()
    })
}

fn model_content(parts: Vec<Part>) -> Option<Content> {
    (!parts.is_empty()).then(|| Content { parts: Some(parts), role: Some("model".into()), extra: Map::new() })
}

fn parse_response(body: &Value) -> Result<LlmResponse, ModelError> {
    let choice = body.pointer("/choices/0").ok_or_else(|| decode(PROVIDER, format!("no choices in {body}")))?;
    let message = choice.get("message").ok_or_else(|| decode(PROVIDER, "a choice without a message"))?;
    let mut parts = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        parts.push(Part::text(text));
    }
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
        let arguments = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or_default();
        parts.push(call_part(call.get("id").and_then(Value::as_str), name, arguments)?);
    }
    let finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned);
    let refusal = message.get("refusal").and_then(Value::as_str).filter(|r| !r.is_empty());
    Ok(LlmResponse {
        content: model_content(parts),
        finish_reason,
        usage: body.get("usage").filter(|u| !u.is_null()).cloned(),
        model_version: body.get("model").and_then(Value::as_str).map(str::to_owned),
        error_code: refusal.map(|_| "REFUSAL".to_owned()),
        error_message: refusal.map(str::to_owned),
        ..LlmResponse::default()
    })
}

/// A tool call being streamed: its id and name come first, its arguments in pieces.
#[derive(Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
struct Aggregate {
    text: String,
    calls: Vec<PendingCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    model: Option<String>,
}

impl Aggregator for Aggregate {
    fn add(&mut self, chunk: Value) -> Result<Option<LlmResponse>, ModelError> {
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(usage.clone());
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            self.model = Some(model.to_owned());
        }
        let Some(choice) = chunk.pointer("/choices/0") else { return Ok(None) };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else { return Ok(None) };
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(self.calls.len() as u64);
            let index = usize::try_from(index).map_err(|e| decode(PROVIDER, e))?;
            if index > 1024 {
                return Err(decode(PROVIDER, format!("tool call index {index}")));
            }
            if self.calls.len() <= index {
                self.calls.resize_with(index + 1, PendingCall::default);
            }
            let pending = &mut self.calls[index];
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                pending.id.push_str(id);
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                pending.name.push_str(name);
            }
            if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str) {
                pending.arguments.push_str(arguments);
            }
        }
        match delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            Some(text) => {
                self.text.push_str(text);
                Ok(Some(LlmResponse {
                    content: model_content(vec![Part::text(text)]),
                    partial: true,
                    ..Default::default()
                }))
            }
            None => Ok(None),
        }
    }

    fn finish(self) -> Result<LlmResponse, ModelError> {
        let mut parts = Vec::new();
        if !self.text.is_empty() {
            parts.push(Part::text(self.text));
        }
        for call in self.calls.iter().filter(|c| !c.name.is_empty()) {
            parts.push(call_part(Some(&call.id), &call.name, &call.arguments)?);
        }
        Ok(LlmResponse {
            content: model_content(parts),
            finish_reason: self.finish_reason,
            usage: self.usage,
            model_version: self.model,
            ..LlmResponse::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_env_requires_a_key_only_for_openai_itself() {
        assert!(OpenAiCompatible::from_lookup("gpt-4o-mini", |_| None).is_err());
        let ollama = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://localhost:11434/v1/".to_owned());
        let model = OpenAiCompatible::from_lookup("llama3.2", ollama).unwrap();
        assert_eq!(
            (model.base_url.as_str(), model.api_key.as_ref().map(|k| k.expose_secret())),
            ("http://localhost:11434/v1", None)
        );
    }

    #[test]
    fn an_output_schema_asks_for_json() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let request = LlmRequest { response_schema: Some(schema.clone()), ..LlmRequest::default() };
        let body = request_body("m", &request, false);
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema}})
        );
    }

    #[test]
    fn bad_tool_arguments_name_the_tool() {
        let body = json!({"choices": [{"message": {"tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}}]});
        let err = parse_response(&body).unwrap_err().to_string();
        assert!(err.contains("call of 'f'"), "{err}");
    }
}
