//! [`AgentTool`]: another agent, called like a tool.
//!
//! The model calls it with `{"request": "…"}`. The agent runs on its own, in a throwaway
//! in-memory session that starts with a copy of the caller's state (as in ADK for Python), with
//! the request as the user's message. Its final text is the tool's result; the state it wrote
//! (its `output_key`, its tools' writes) is written through the caller's [`ToolContext`], so it
//! travels on the function-response event. Several agent tools called in one turn keep all of
//! their writes.

use std::sync::Arc;

use agentstate::{BoxError, Content, CreateSession, Map, SessionService, Value};
use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::json;

use crate::agent::Agent;
use crate::context::ToolContext;
use crate::runner::Runner;
use crate::tool::Tool;

/// An agent the model calls like a tool.
///
/// ```
/// use agentstate_runtime::testing::ScriptedModel;
/// use agentstate_runtime::{AgentTool, LlmAgent};
///
/// let summarizer = LlmAgent::builder("summarizer", ScriptedModel::new("m"))
///     .description("Summarizes a text.")
///     .output_key("summary")
///     .build()?;
/// let writer = LlmAgent::builder("writer", ScriptedModel::new("m"))
///     .tool(AgentTool::new(summarizer))
///     .build()?;
/// # let _ = writer;
/// # Ok::<(), agentstate_runtime::agent::BuildError>(())
/// ```
#[derive(Clone)]
pub struct AgentTool {
    agent: Arc<dyn Agent>,
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool").field("agent", &self.agent.name()).finish()
    }
}

impl AgentTool {
    /// `agent` as a tool named after it and described by its description.
    pub fn new(agent: impl Into<Arc<dyn Agent>>) -> Self {
        Self { agent: agent.into() }
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        self.agent.name()
    }

    fn description(&self) -> &str {
        self.agent.description()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]})
    }

    async fn call(&self, args: Map<String, Value>, ctx: &mut ToolContext) -> Result<Value, BoxError> {
        let request = args.get("request").and_then(Value::as_str).unwrap_or_default().to_owned();
        let service = SessionService::in_memory();
        let (app, user, session) = ("agent_tool", "caller", "call");
        let create = CreateSession::new(app, user).id(session).with_state(ctx.state());
        service.create_session(create).await?;
        let runner = Runner::new(app, Arc::clone(&self.agent), service);
        let mut events = runner.run(user, session, Content::text("user", request));
        let mut answer = String::new();
        while let Some(event) = events.next().await {
            let event = event?;
            for (key, value) in &event.actions.state_delta {
                ctx.state_mut().set(key.clone(), value.clone());
            }
            if !event.is_partial() && event.content.is_some() {
                answer = event.text();
            }
        }
        Ok(Value::String(answer))
    }
}

into_dyn!(Tool: AgentTool);
