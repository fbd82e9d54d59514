//! The runtime's spans, named and attributed by OpenTelemetry's GenAI semantic conventions:
//! `invoke_agent {agent}` around each agent's run, `chat {model}` around each model call (from
//! the request until its last streamed chunk), `execute_tool {tool}` around each tool call. They
//! are `tracing` spans at debug level, so a log at `info` does not print them; the server's
//! OpenTelemetry layer exports them as children of the request that ran the agent. Prompts,
//! answers and tool arguments are never recorded: token counts and names only.

use tracing::field::Empty;
use tracing::{Instrument as _, Span};

use crate::agent::{Agent, InvocationContext};
use crate::error::RuntimeError;
use crate::model::{LlmRequest, LlmResponse, ModelError};

/// Runs `agent` in its span.
pub(crate) async fn invoke(agent: &dyn Agent, ctx: &InvocationContext) -> Result<(), RuntimeError> {
    let name = agent.name();
    let span = tracing::debug_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {name}"),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = name,
    );
    agent.run(ctx).instrument(span).await
}

/// The span of one model call, before it is made.
pub(crate) fn chat_span(provider: &str, request: &LlmRequest) -> Span {
    let span = tracing::debug_span!(
        "chat",
        otel.name = %format_args!("chat {}", request.model),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = %request.model,
        gen_ai.request.temperature = Empty,
        gen_ai.request.max_tokens = Empty,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    );
    if let Some(temperature) = request.temperature {
        span.record("gen_ai.request.temperature", temperature);
    }
    if let Some(max) = request.max_output_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max));
    }
    span
}

/// Records what the complete response of a model call says about it.
pub(crate) fn record_response(span: &Span, response: &LlmResponse) {
    if let Some(model) = &response.model_version {
        span.record("gen_ai.response.model", model.as_str());
    }
    let usage = response.usage.as_ref();
    // Gemini's `usageMetadata` and OpenAI's `usage`, as the providers hand them over.
    let count = |names: [&str; 2]| usage.and_then(|u| names.iter().find_map(|n| u.get(*n)?.as_i64()));
    if let Some(tokens) = count(["promptTokenCount", "prompt_tokens"]) {
        span.record("gen_ai.usage.input_tokens", tokens);
    }
    if let Some(tokens) = count(["candidatesTokenCount", "completion_tokens"]) {
        span.record("gen_ai.usage.output_tokens", tokens);
    }
    if let Some(code) = &response.error_code {
        record_error(span, code);
    }
}

/// Marks the model call failed.
pub(crate) fn record_model_error(span: &Span, error: &ModelError) {
    let kind = match error {
        ModelError::Status { status, .. } => status.to_string(),
        ModelError::Transport { .. } => "transport".into(),
        ModelError::Decode { .. } => "decode".into(),
        ModelError::Config(_) => "config".into(),
        ModelError::ScriptExhausted(_) => "script_exhausted".into(),
    };
    record_error(span, &kind);
}

/// Marks the span failed, with the error's kind (never its message: it may quote the prompt).
fn record_error(span: &Span, kind: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", kind);
}

/// The span of one tool call.
pub(crate) fn tool_span(tool: &str, call_id: Option<&str>) -> Span {
    tracing::debug_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id.unwrap_or_default(),
    )
}
