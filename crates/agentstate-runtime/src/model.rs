//! What an agent asks a model and what it gets back, and the [`Model`] trait providers implement.
//!
//! A model call yields a stream of [`LlmResponse`]s. Without streaming that is one complete
//! response. With streaming it is any number of `partial` chunks (shown to the user as they come,
//! never stored) followed by one complete, non-partial response holding the whole turn: the
//! runtime stores and acts on that one only.

use std::pin::Pin;

use agentstate::{Content, FunctionCall, Map, Value};
use async_trait::async_trait;
use futures_core::Stream;
use serde::{Deserialize, Serialize};

/// A tool as the model sees it: name, description and JSON-schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDeclaration {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON schema (`{"type": "object", "properties": …}`) of the arguments.
    pub parameters: Value,
}

/// One request to a model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmRequest {
    /// The model name, as the provider knows it (`gemini-2.5-flash`, `gpt-4o-mini`, `llama3.2`).
    pub model: String,
    /// The system instruction (the agent's rendered instruction), if any.
    pub system_instruction: Option<String>,
    /// The conversation so far, oldest first; roles are `user` and `model`.
    pub contents: Vec<Content>,
    /// The tools the model may call.
    pub tools: Vec<ToolDeclaration>,
    /// Sampling temperature, when set.
    pub temperature: Option<f64>,
    /// Cap on generated tokens, when set.
    pub max_output_tokens: Option<u32>,
    /// A JSON schema the answer must follow (JSON output), when set.
    pub response_schema: Option<Value>,
}

impl LlmRequest {
    /// Appends text to the system instruction (on a new line if there is one already).
    pub fn append_instruction(&mut self, text: &str) {
        match &mut self.system_instruction {
            Some(existing) if !existing.is_empty() => {
                existing.push_str("\n\n");
                existing.push_str(text);
            }
            _ => self.system_instruction = Some(text.to_owned()),
        }
    }
}

/// One response (or, when `partial`, one streamed chunk of a response) from a model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmResponse {
    /// What the model said: text and/or function calls, role `model`.
    pub content: Option<Content>,
    /// A streamed chunk; the complete response follows it.
    pub partial: bool,
    /// Why generation stopped (`STOP`, `MAX_TOKENS`, …), as the provider reports it.
    pub finish_reason: Option<String>,
    /// Token counts, as the provider reports them.
    pub usage: Option<Value>,
    /// The exact model version that answered, when reported.
    pub model_version: Option<String>,
    /// An error the provider reported in-band (e.g. a safety block), with its message.
    pub error_code: Option<String>,
    /// The message going with `error_code`.
    pub error_message: Option<String>,
}

impl LlmResponse {
    /// A complete text response.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: Some(Content::text("model", text)), ..Self::default() }
    }

    /// A complete response calling one tool.
    pub fn call(name: impl Into<String>, args: Value) -> Self {
        Self::calls([(name.into(), args)])
    }

    /// A complete response calling several tools in one turn (they run in parallel).
    pub fn calls(calls: impl IntoIterator<Item = (String, Value)>) -> Self {
        let parts = calls
            .into_iter()
            .map(|(name, args)| agentstate::Part {
                function_call: Some(FunctionCall {
                    id: None,
                    name: Some(name),
                    args: Some(match args {
                        Value::Object(map) => map,
                        _ => Map::new(),
                    }),
                    extra: Map::new(),
                }),
                ..agentstate::Part::default()
            })
            .collect();
        Self {
            content: Some(Content { parts: Some(parts), role: Some("model".into()), extra: Map::new() }),
            ..Self::default()
        }
    }

    /// Marks this a streamed chunk.
    pub fn partial(mut self) -> Self {
        self.partial = true;
        self
    }

    /// The function calls in the content, in order.
    pub fn function_calls(&self) -> impl Iterator<Item = &FunctionCall> {
        self.content.iter().flat_map(|c| c.parts()).filter_map(|p| p.function_call.as_ref())
    }
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider answered with an error status.
    #[error("{provider} returned HTTP {status}: {body}")]
    Status {
        /// Which provider.
        provider: &'static str,
        /// The HTTP status.
        status: u16,
        /// The body (the provider's error message), cut to 2 KiB.
        body: String,
    },
    /// The request did not get an answer (connection refused, timeout, TLS, …).
    #[error("{provider} request failed: {message}")]
    Transport {
        /// Which provider.
        provider: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The answer could not be understood.
    #[error("{provider} sent a response that could not be read: {message}")]
    Decode {
        /// Which provider.
        provider: &'static str,
        /// What was wrong with it.
        message: String,
    },
    /// The model is not usable as configured (no API key, unknown provider, …).
    #[error("{0}")]
    Config(String),
    /// A scripted model ran out of responses.
    #[error("the scripted model has no response left for call {0}")]
    ScriptExhausted(usize),
}

/// The responses of one model call.
pub type ResponseStream = Pin<Box<dyn Stream<Item = Result<LlmResponse, ModelError>> + Send>>;

/// A language model.
#[async_trait]
pub trait Model: Send + Sync {
    /// The model name (what [`LlmRequest::model`] is set to).
    fn name(&self) -> &str;

    /// Who serves it, as OpenTelemetry's GenAI conventions name providers (`gen_ai.provider.name`:
    /// `gcp.gemini`, `openai`, …) in the model call's span.
    fn provider(&self) -> &str {
        "other"
    }

    /// Calls the model. With `stream`, partial chunks may precede the complete response.
    async fn generate(&self, request: LlmRequest, stream: bool) -> Result<ResponseStream, ModelError>;
}
