//! ADK's memory tools: [`load_memory`] lets the model search the user's long-term memory;
//! [`preload_memory`] starts each model request with what memory recalls of the user's latest
//! message. Both need the runner's memory service ([`Runner::memory`](crate::Runner::memory)).
//!
//! ```
//! use agentstate_runtime::{LlmAgent, load_memory, preload_memory};
//! # let model = agentstate_runtime::testing::ScriptedModel::new("m");
//! let agent = LlmAgent::builder("helper", model).tool(load_memory()).tool(preload_memory()).build()?;
//! # Ok::<(), agentstate_runtime::agent::BuildError>(())
//! ```

use std::sync::Arc;

use agentstate::memory::Memory;
use agentstate::wire::content_to_wire;
use agentstate::{BoxError, Content, Map, Part, Value};
use async_trait::async_trait;
use serde_json::json;

use crate::context::ToolContext;
use crate::model::LlmRequest;
use crate::tool::Tool;

/// The `load_memory` tool.
pub fn load_memory() -> Arc<dyn Tool> {
    Arc::new(LoadMemoryTool)
}

/// The `preload_memory` tool.
pub fn preload_memory() -> Arc<dyn Tool> {
    Arc::new(PreloadMemoryTool)
}

/// A memory as ADK's `MemoryEntry` shows it to the model.
fn entry(memory: &Memory) -> Value {
    json!({
        "content": content_to_wire(&memory.content),
        "custom_metadata": memory.custom_metadata,
        "id": memory.id,
        "author": memory.author,
        "timestamp": memory.timestamp,
    })
}

/// ADK's `load_memory`: the model calls it with a query and gets `{"memories": [MemoryEntry…]}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadMemoryTool;

#[async_trait]
impl Tool for LoadMemoryTool {
    fn name(&self) -> &str {
        "load_memory"
    }

    fn description(&self) -> &str {
        "Loads the memory for the current user."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"query": {"type": "string", "description": "The query to load the memory for."}},
               "required": ["query"]})
    }

    async fn call(&self, args: Map<String, Value>, ctx: &mut ToolContext) -> Result<Value, BoxError> {
        let query = args.get("query").and_then(Value::as_str).unwrap_or_default();
        let found = ctx.search_memory(query).await?;
        Ok(json!({"memories": found.iter().map(entry).collect::<Vec<_>>()}))
    }
}

/// ADK's `preload_memory`: not shown to the model; before each request, memory is searched with
/// the user's latest message and what it recalls goes in front of that message, as ADK words it
/// (`<PAST_CONVERSATIONS>`). A failed search leaves the request as it was (logged), as in ADK.
#[derive(Debug, Clone, Copy, Default)]
pub struct PreloadMemoryTool;

#[async_trait]
impl Tool for PreloadMemoryTool {
    fn name(&self) -> &str {
        "preload_memory"
    }

    fn description(&self) -> &str {
        "preload_memory"
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn is_declared(&self) -> bool {
        false
    }

    async fn call(&self, _args: Map<String, Value>, _ctx: &mut ToolContext) -> Result<Value, BoxError> {
        Err("preload_memory is not called: it prepares requests".into())
    }

    async fn prepare_request(&self, ctx: &ToolContext, request: &mut LlmRequest) -> Result<(), BoxError> {
        let texts = |content: &Content| -> String {
            let parts: Vec<&str> = content.parts().iter().filter_map(|p| p.text.as_deref()).collect();
            parts.join(" ")
        };
        let Some(at) = request.contents.iter().rposition(|c| c.role.as_deref() == Some("user") && !texts(c).is_empty())
        else {
            return Ok(());
        };
        let query = texts(&request.contents[at]);
        let memories = match ctx.search_memory(&query).await {
            Ok(memories) => memories,
            Err(e) => {
                tracing::warn!(query_chars = query.chars().count(), error = %e, "preload_memory: memory was not searched");
                return Ok(());
            }
        };
        let mut lines = Vec::new();
        for memory in &memories {
            if let Some(time) = &memory.timestamp {
                lines.push(format!("Time: {time}"));
            }
            let text = memory.text();
            if !text.is_empty() {
                lines.push(match &memory.author {
                    Some(author) => format!("{author}: {text}"),
                    None => text,
                });
            }
        }
        if lines.is_empty() {
            return Ok(());
        }
        let recalled = format!(
            "The following content is from your previous conversations with the user.\n\
             They may be useful for answering the user's current query.\n\
             <PAST_CONVERSATIONS>\n{}\n</PAST_CONVERSATIONS>\n",
            lines.join("\n")
        );
        let content = Content { parts: Some(vec![Part::text(recalled)]), role: Some("user".into()), extra: Map::new() };
        request.contents.insert(at, content);
        Ok(())
    }
}
