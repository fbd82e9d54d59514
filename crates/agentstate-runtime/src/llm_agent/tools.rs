//! Tool calls and transfer: the calls of one model turn run concurrently, their answers go back
//! as one event; `transfer_to_agent` hands the conversation to another agent of the tree.

use std::collections::HashSet;
use std::sync::Arc;

use agentstate::{Content, Event, FunctionCall, FunctionResponse, Map, Part, Value};
use tracing::Instrument as _;

use super::builder::{LlmAgent, TRANSFER_TOOL};
use crate::agent::{Agent, InvocationContext, parent_of};
use crate::context::ToolContext;
use crate::error::RuntimeError;
use crate::function_tool::FunctionTool;
use crate::telemetry;
use crate::tool::{Tool, check_arguments};

/// What an agent does after a model step.
pub(super) enum Next {
    /// Call the model again (with the tools' answers).
    Model,
    /// Its turn is over.
    Done,
    /// Hand the conversation to the named agent.
    Transfer(String),
}

/// The tool that hands the conversation to one of `targets`.
fn transfer_tool(targets: &[Arc<dyn Agent>]) -> FunctionTool {
    let names: Vec<&str> = targets.iter().map(|a| a.name()).collect();
    let description =
        format!("Hands the conversation to another agent better suited to answer. Agents:{}", agent_list(targets));
    FunctionTool::new(
        TRANSFER_TOOL,
        description,
        serde_json::json!({
            "type": "object",
            "properties": {"agent_name": {"type": "string", "enum": names}},
            "required": ["agent_name"],
        }),
        |args, ctx| {
            let target = args.get("agent_name").and_then(Value::as_str).ok_or("agent_name is required")?;
            ctx.actions_mut().transfer_to_agent = Some(target.to_owned());
            Ok(Value::Null)
        },
    )
}

/// `\n- name: description` for each agent.
fn agent_list(agents: &[Arc<dyn Agent>]) -> String {
    agents.iter().map(|a| format!("\n- {}: {}", a.name(), a.description())).collect()
}

/// The lines an agent's instruction gets when it can hand over: whom to, and when.
pub(super) fn transfer_guide(targets: &[Arc<dyn Agent>]) -> String {
    format!(
        "Other agents can take over the conversation:{}\nAnswer yourself when your description fits the question \
         best. Otherwise call `{TRANSFER_TOOL}` with the name of the agent that fits better, and write nothing \
         besides that call.",
        agent_list(targets)
    )
}

impl LlmAgent {
    /// The agents it may hand the conversation to: its sub-agents; its parent and peers when the
    /// parent takes part in transfers (unless disallowed).
    pub(super) fn transfer_targets(&self, ctx: &InvocationContext) -> Vec<Arc<dyn Agent>> {
        let mut targets: Vec<Arc<dyn Agent>> = self.sub_agents.clone();
        if let Some(parent) = parent_of(ctx.root_agent(), &self.name).filter(|p| p.is_transfer_target()) {
            if self.to_parent {
                targets.push(Arc::clone(&parent));
            }
            if self.to_peers {
                targets.extend(
                    parent.sub_agents().iter().filter(|a| a.name() != self.name && a.is_transfer_target()).cloned(),
                );
            }
        }
        let mut seen = HashSet::new();
        targets.retain(|agent| seen.insert(agent.name().to_owned()));
        targets
    }

    /// Its tools in this invocation: its own, and `transfer_to_agent` when it has `targets`.
    pub(super) fn tools_with(&self, targets: &[Arc<dyn Agent>]) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.tools.clone();
        if !targets.is_empty() {
            tools.push(Arc::new(transfer_tool(targets)));
        }
        tools
    }

    /// Runs the calls of one model turn concurrently and emits their answers as one event.
    pub(super) async fn call_tools(
        &self,
        ctx: &InvocationContext,
        calls: Vec<FunctionCall>,
        tools: &[Arc<dyn Tool>],
    ) -> Result<Next, RuntimeError> {
        // One context per call, all siblings: they share the turn's writes (see `context`).
        let turn = ToolContext::from_snapshot(ctx.invocation_id(), &self.name, ctx.state().await)
            .with_memory(ctx.memory())
            .with_artifacts(ctx.artifacts());
        let runs = calls.into_iter().map(|call| {
            let tool_ctx = turn.sibling(call.id.clone().unwrap_or_default());
            let span = telemetry::tool_span(call.name.as_deref().unwrap_or_default(), call.id.as_deref());
            self.call_tool(call, tool_ctx, tools).instrument(span)
        });
        let answers = futures_util::future::join_all(runs).await;

        let mut changes = turn.shared_writes();
        let actions = &mut changes.actions;
        for (_, tool_ctx) in &answers {
            let a = tool_ctx.actions();
            if a.skip_summarization == Some(true) {
                actions.skip_summarization = Some(true);
            }
            if a.escalate == Some(true) {
                actions.escalate = Some(true);
            }
            if a.transfer_to_agent.is_some() {
                actions.transfer_to_agent.clone_from(&a.transfer_to_agent);
            }
            actions.artifact_delta.extend(a.artifact_delta.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let parts = answers
            .into_iter()
            .map(|(response, _)| Part { function_response: Some(response), ..Part::default() })
            .collect();
        let mut event = Event::new(ctx.invocation_id()).author(&self.name);
        event.content = Some(Content { parts: Some(parts), role: Some("user".into()), extra: Map::new() });
        changes.apply_to(&mut event);
        let event = ctx.emit(event).await?;
        if let Some(target) = event.actions.transfer_to_agent {
            return Ok(Next::Transfer(target));
        }
        if event.actions.skip_summarization == Some(true) {
            return Ok(Next::Done);
        }
        Ok(Next::Model)
    }

    async fn call_tool(
        &self,
        call: FunctionCall,
        mut ctx: ToolContext,
        tools: &[Arc<dyn Tool>],
    ) -> (FunctionResponse, ToolContext) {
        let name = call.name.clone().unwrap_or_default();
        let mut args = call.args.unwrap_or_default();
        let result = match self.before_tool.iter().find_map(|f| f(&name, &mut args, &mut ctx)) {
            Some(result) => result,
            None => {
                let result = match tools.iter().find(|t| t.name() == name) {
                    Some(tool) => match check_arguments(&tool.parameters(), &args) {
                        Ok(()) => tool.call(args.clone(), &mut ctx).await,
                        Err(problem) => Err(format!("Invalid arguments for tool '{name}': {problem}").into()),
                    },
                    None => {
                        let available: Vec<&str> = tools.iter().map(|t| t.name()).collect();
                        Err(format!("Tool '{name}' not found. Available tools: {}", available.join(", ")).into())
                    }
                };
                let result = result.unwrap_or_else(|error| {
                    tracing::warn!(agent = %self.name, tool = %name, %error, "tool failed");
                    serde_json::json!({ "error": error.to_string() })
                });
                self.after_tool.iter().find_map(|f| f(&name, &args, &mut ctx, &result)).unwrap_or(result)
            }
        };
        let response = match result {
            Value::Object(map) => map,
            other => Map::from_iter([("result".to_owned(), other)]),
        };
        (FunctionResponse { id: call.id, name: Some(name), response: Some(response), extra: Map::new() }, ctx)
    }
}
