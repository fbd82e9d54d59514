//! Summarisers: what turns a window of events into one compaction event.

use std::sync::Arc;

use agentstate::{Content, Event, Part, Value};
use async_trait::async_trait;
use futures_util::StreamExt;

use super::python;
use super::select::{is_compaction, is_credential_event};
use crate::error::RuntimeError;
use crate::model::{LlmRequest, Model};

/// Turns the events of a window into a compaction event (ADK's `BaseEventsSummarizer`).
#[async_trait]
pub trait EventsSummarizer: Send + Sync {
    /// The compaction event standing for `events` (oldest first), or `None` to leave them.
    async fn summarize(&self, events: &[Arc<Event>]) -> Result<Option<Event>, RuntimeError>;
}

/// ADK for Python's `LlmEventSummarizer`: asks a model for a summary of the window, with ADK's
/// prompt, and writes it as ADK does: an event of `user` in a new invocation whose
/// `actions.compaction` holds the window's first and last times and the model's answer (role
/// `model`), with the answer's usage.
#[derive(Clone)]
pub struct LlmEventSummarizer {
    model: Arc<dyn Model>,
    template: String,
}

impl std::fmt::Debug for LlmEventSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmEventSummarizer").field("model", &self.model.name()).finish_non_exhaustive()
    }
}

/// ADK for Python 2.13's prompt; `{conversation_history}` is replaced by the window.
pub const DEFAULT_PROMPT_TEMPLATE: &str = "The following is a conversation history between a user and an AI agent. \
It may or may not start from a compacted history. Please identify and reiterate the user request, summarize the \
context so far, focusing on key decisions made and information obtained, as well as any unresolved questions or \
tasks. CRITICAL INSTRUCTIONS: 1. Explicitly identify and state the primary language used by the user at the top of \
your summary (e.g., \"Conversation Language: English\"). 2. If the agent called any tools, accurately list the exact \
tool names used to maintain tool grounding. The rest of the summary should be concise and capture the essence of the \
interaction.\n\n{conversation_history}";

/// How much of a tool call's arguments or a tool's response the prompt shows.
const MAX_TOOL_CHARS: usize = 2000;

impl LlmEventSummarizer {
    /// A summariser asking `model` with ADK's prompt.
    pub fn new(model: Arc<dyn Model>) -> Self {
        Self { model, template: DEFAULT_PROMPT_TEMPLATE.to_owned() }
    }

    /// Asks with this prompt instead; `{conversation_history}` in it is replaced by the window.
    #[must_use]
    pub fn prompt_template(mut self, template: impl Into<String>) -> Self {
        self.template = template.into();
        self
    }

    /// The window as the prompt shows it: a line per text, thought, call and response.
    pub fn format_events(events: &[Arc<Event>]) -> String {
        let mut lines = Vec::new();
        for event in events {
            let parts = event.content.as_ref().map(Content::parts).unwrap_or_default();
            if parts.is_empty() || is_credential_event(event) {
                continue;
            }
            let author = &event.author;
            for part in parts {
                // A summary's own thoughts stay out of the next summary.
                if let Some(text) = part.text.as_deref().filter(|t| !t.is_empty()) {
                    if part.thought != Some(true) {
                        lines.push(format!("{author}: {text}"));
                    } else if !is_compaction(event) {
                        lines.push(format!("{author} (thought): {text}"));
                    }
                }
                if let Some(call) = &part.function_call {
                    let args = call.args.clone().map_or(Value::Null, Value::Object);
                    let name = call.name.as_deref().map_or("None", |n| n);
                    lines.push(format!("{author} called tool: {name}({})", truncate(python::repr(&args))));
                }
                if let Some(response) = &part.function_response {
                    let result = response.response.clone().map_or(Value::Null, Value::Object);
                    let name = response.name.as_deref().map_or("None", |n| n);
                    lines.push(format!("Tool response from {name}: {}", truncate(python::repr(&result))));
                }
            }
        }
        lines.join("\n")
    }
}

/// `text` cut at the tool limit, saying how much was cut.
fn truncate(text: String) -> String {
    let length = text.chars().count();
    if length <= MAX_TOOL_CHARS {
        return text;
    }
    let kept: String = text.chars().take(MAX_TOOL_CHARS).collect();
    format!("{kept}... [truncated {} chars]", length - MAX_TOOL_CHARS)
}

#[async_trait]
impl EventsSummarizer for LlmEventSummarizer {
    async fn summarize(&self, events: &[Arc<Event>]) -> Result<Option<Event>, RuntimeError> {
        let (Some(first), Some(last)) = (events.first(), events.last()) else { return Ok(None) };
        let prompt = self.template.replace("{conversation_history}", &Self::format_events(events));
        let request = LlmRequest {
            model: self.model.name().to_owned(),
            system_instruction: None,
            contents: vec![Content {
                parts: Some(vec![Part::text(prompt)]),
                role: Some("user".into()),
                ..Content::default()
            }],
            tools: Vec::new(),
            temperature: None,
            max_output_tokens: None,
            response_schema: None,
        };
        let model_error = |source| RuntimeError::Model { agent: "compaction".into(), source };
        let mut responses = self.model.generate(request, false).await.map_err(model_error)?;
        let mut answer = None;
        while let Some(response) = responses.next().await {
            let response = response.map_err(model_error)?;
            if let Some(content) = response.content {
                answer = Some((content, response.usage));
                break;
            }
        }
        let Some((mut summary, usage)) = answer else { return Ok(None) };
        summary.role = Some("model".into());
        let mut event = Event::new(Event::new_id()).author("user");
        let compaction = serde_json::json!({
            "start_timestamp": first.timestamp,
            "end_timestamp": last.timestamp,
            "compacted_content": summary,
        });
        event.actions.extra.insert(agentstate::compaction::COMPACTION_KEY.into(), compaction);
        if let Some(usage) = usage {
            event.extra.insert("usage_metadata".into(), usage);
        }
        Ok(Some(event))
    }
}
