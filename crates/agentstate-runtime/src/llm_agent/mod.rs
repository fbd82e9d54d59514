//! [`LlmAgent`]: an agent backed by a model, with an instruction that reads session state, tools,
//! callbacks and `output_key`.
//!
//! One run of an `LlmAgent`:
//! 1. before-agent callbacks (content they return replaces the run);
//! 2. model steps: the instruction is rendered against the live state, the history becomes the
//!    request's contents, before-model callbacks may answer instead of the model, after-model
//!    callbacks may replace its answer; function calls run as tools (concurrently, each with its
//!    own [`ToolContext`]) and their answers go back to the model, until it answers without
//!    calling anything;
//! 3. after-agent callbacks.
//!
//! State written by a callback travels on the event that callback belongs to: agent callbacks on
//! an event of their own, model callbacks on the model's response event, tool writes on the
//! function-response event. The final text answer goes to `output_key` on the response event.

mod builder;
mod history;
mod output;
mod tools;

use std::sync::Arc;

use agentstate::{Content, Event, FunctionCall, Map, Value};
use async_trait::async_trait;
use futures_util::StreamExt;
use tracing::{Instrument as _, Span};

pub use builder::{
    AfterModelCallback, AfterToolCallback, AgentCallback, BeforeModelCallback, BeforeToolCallback, InstructionProvider,
    LlmAgent, LlmAgentBuilder, TRANSFER_TOOL,
};

use builder::Instruction;
use tools::{Next, transfer_guide};

use crate::agent::{Agent, History, InvocationContext, find_agent};
use crate::context::{CallbackContext, Changes, ReadonlyContext};
use crate::error::RuntimeError;
use crate::model::{LlmRequest, LlmResponse};
use crate::telemetry;
use crate::tool::Tool;

#[async_trait]
impl Agent for LlmAgent {
    agent_fields!();

    fn is_transfer_target(&self) -> bool {
        true
    }

    fn may_return_to_parent(&self) -> bool {
        self.to_parent
    }

    fn model(&self) -> Option<Arc<dyn crate::model::Model>> {
        Some(Arc::clone(&self.model))
    }

    fn history(&self) -> History {
        let own = match (self.include_contents, self.history_limit) {
            (false, _) => History::Recent(0),
            (true, Some(n)) => History::Recent(n),
            (true, None) => History::All,
        };
        self.sub_agents.iter().fold(own, |need, agent| need.max(agent.history()))
    }

    async fn run(&self, ctx: &InvocationContext) -> Result<(), RuntimeError> {
        if self.agent_callbacks(ctx, &self.before_agent).await? {
            return Ok(());
        }
        loop {
            match self.step(ctx).await? {
                Next::Model => continue,
                Next::Done => break,
                Next::Transfer(target) => {
                    let agent = find_agent(ctx.root_agent(), &target)
                        .ok_or_else(|| RuntimeError::AgentNotFound(target.clone()))?;
                    crate::telemetry::invoke(&*agent, ctx).await?;
                    break;
                }
            }
        }
        self.agent_callbacks(ctx, &self.after_agent).await?;
        Ok(())
    }
}

impl LlmAgent {
    /// Runs agent callbacks; emits what they produced. True when one returned content.
    async fn agent_callbacks(
        &self,
        ctx: &InvocationContext,
        callbacks: &[AgentCallback],
    ) -> Result<bool, RuntimeError> {
        if callbacks.is_empty() {
            return Ok(false);
        }
        let mut cb = ctx.callback_context(&self.name).await;
        let content = callbacks.iter().find_map(|f| f(&mut cb));
        if content.is_none() && !cb.has_delta() {
            return Ok(false);
        }
        let replied = content.is_some();
        let mut event = cb.into_event();
        if let Some(mut content) = content {
            content.role.get_or_insert_with(|| "model".into());
            event.content = Some(content);
            let text = event.text();
            self.save_output(&mut event, &text)?;
        }
        ctx.emit(event).await?;
        Ok(replied)
    }

    async fn instruction(
        &self,
        ctx: &InvocationContext,
        state: &Map<String, Value>,
    ) -> Result<Option<String>, RuntimeError> {
        Ok(match &self.instruction {
            Instruction::None => None,
            Instruction::Template(template) => {
                let artifacts = match ctx.artifacts() {
                    Some(access) => Some(crate::artifact_text::load_texts(&access, template).await?),
                    None => None,
                };
                Some(template.render_with_artifacts(state, artifacts.as_ref(), &self.name)?)
            }
            Instruction::Provider(provider) => {
                let session = ctx.session().await;
                let readonly =
                    ReadonlyContext { invocation_id: ctx.invocation_id(), agent_name: &self.name, session: &session };
                Some(
                    provider(&readonly)
                        .map_err(|source| RuntimeError::Instruction { agent: self.name.clone(), source })?,
                )
            }
        })
    }

    async fn request(
        &self,
        ctx: &InvocationContext,
        state: &Map<String, Value>,
        tools: &[Arc<dyn Tool>],
        targets: &[Arc<dyn Agent>],
    ) -> Result<LlmRequest, RuntimeError> {
        let system_instruction = self.instruction(ctx, state).await?.filter(|s| !s.is_empty());
        let mut request = LlmRequest {
            model: self.model.name().to_owned(),
            system_instruction,
            contents: self.contents(ctx).await,
            tools: tools.iter().filter(|t| t.is_declared()).map(|t| t.declaration()).collect(),
            temperature: self.temperature,
            max_output_tokens: self.max_output_tokens,
            response_schema: self.output_schema.clone(),
        };
        if self.identity {
            let mut identity = format!("You are an agent. Your internal name is \"{}\".", self.name);
            if !self.description.is_empty() {
                identity.push_str(&format!(" The description about you is \"{}\".", self.description));
            }
            request.append_instruction(&identity);
        }
        if !targets.is_empty() {
            request.append_instruction(&transfer_guide(targets));
        }
        let tool_ctx = ctx.callback_context(&self.name).await;
        for tool in tools {
            tool.prepare_request(&tool_ctx, &mut request).await.map_err(|source| RuntimeError::ToolPreparation {
                agent: self.name.clone(),
                tool: tool.name().to_owned(),
                source,
            })?;
        }
        Ok(request)
    }

    /// One model call and, if it asks for them, its tool calls.
    async fn step(&self, ctx: &InvocationContext) -> Result<Next, RuntimeError> {
        ctx.count_llm_call()?;
        if let Some(compaction) = ctx.compaction() {
            crate::compaction::before_model(ctx, compaction, &self.name).await?;
        }
        let state = ctx.state().await;
        let targets = self.transfer_targets(ctx);
        let tools = self.tools_with(&targets);
        let mut request = self.request(ctx, &state, &tools, &targets).await?;
        let mut cb = CallbackContext::from_snapshot(ctx.invocation_id(), &self.name, state);
        // The model call's span lasts until its last chunk is read (none when a callback answers).
        let mut call = Span::none();
        let mut responses = match self.before_model.iter().find_map(|f| f(&mut cb, &mut request)) {
            Some(response) => futures_util::stream::iter([Ok(response)]).boxed(),
            None => {
                call = telemetry::chat_span(self.model.provider(), &request);
                let generated = self.model.generate(request, ctx.streaming()).instrument(call.clone()).await;
                generated.map_err(|source| {
                    telemetry::record_model_error(&call, &source);
                    RuntimeError::Model { agent: self.name.clone(), source }
                })?
            }
        };

        let mut changes = Some(cb.into_changes());
        // The partial events of this call and its answer share one id (as in the reference), so a
        // client can replace the streamed text with the answer.
        let mut event_id = Some(Event::new_id());
        let mut text = String::new();
        let mut calls: Vec<FunctionCall> = Vec::new();
        let mut failed = false;
        while let Some(response) = responses.next().instrument(call.clone()).await {
            let mut response = response.map_err(|source| {
                telemetry::record_model_error(&call, &source);
                RuntimeError::Model { agent: self.name.clone(), source }
            })?;
            if response.partial {
                let mut partial = response_event(&self.name, response, Changes::default());
                partial.id = event_id.clone().unwrap_or_else(Event::new_id);
                ctx.emit(partial).await?;
                continue;
            }
            telemetry::record_response(&call, &response);
            let mut event_changes = changes.take().unwrap_or_default();
            if !self.after_model.is_empty() {
                // The same changes as the before-model callbacks: their writes are visible here.
                let mut cb = CallbackContext::from_snapshot(ctx.invocation_id(), &self.name, ctx.state().await)
                    .with_changes(event_changes);
                if let Some(replaced) = self.after_model.iter().find_map(|f| f(&mut cb, &response)) {
                    response = replaced;
                }
                event_changes = cb.into_changes();
            }
            assign_call_ids(&mut response);
            let mut event = response_event(&self.name, response, event_changes);
            event.id = event_id.take().unwrap_or_default();
            text.push_str(&event.content.as_ref().map(Content::joined_text).unwrap_or_default());
            if !text.is_empty() {
                self.save_output(&mut event, &text)?;
            }
            failed |= event.error_code.is_some();
            if event.content.iter().flat_map(|c| c.parts()).any(|p| p.function_call.is_some()) {
                // The reference lists long-running tool ids on every function-call event (none here).
                event.long_running_tool_ids = Some(Vec::new());
            }
            let event = ctx.emit(event).await?;
            calls.extend(event.content.iter().flat_map(|c| c.parts()).filter_map(|p| p.function_call.clone()));
        }
        drop(call);
        if let Some(changes) = changes.filter(Changes::touches_state) {
            // A before-model callback wrote state but no response came: keep its writes.
            let mut event = Event::new(ctx.invocation_id()).author(&self.name);
            changes.apply_to(&mut event);
            ctx.emit(event).await?;
        }
        if calls.is_empty() || failed {
            return Ok(Next::Done);
        }
        self.call_tools(ctx, calls, &tools).await
    }
}

/// Gives every function call an id (`adk-<uuid>`, as the reference) so answers pair with calls.
fn assign_call_ids(response: &mut LlmResponse) {
    let parts = response.content.iter_mut().flat_map(|c| c.parts.iter_mut().flatten());
    for call in parts.filter_map(|p| p.function_call.as_mut()) {
        if call.id.as_deref().is_none_or(str::is_empty) {
            call.id = Some(format!("adk-{}", uuid::Uuid::new_v4()));
        }
    }
}

fn response_event(author: &str, response: LlmResponse, changes: Changes) -> Event {
    let mut event = Event::new("").author(author);
    event.content = response.content;
    if response.partial {
        event.partial = Some(true);
    }
    event.error_code = response.error_code;
    event.error_message = response.error_message;
    changes.apply_to(&mut event);
    if let Some(reason) = response.finish_reason {
        event.extra.insert("finish_reason".into(), Value::String(reason));
    }
    if let Some(usage) = response.usage {
        event.extra.insert("usage_metadata".into(), usage);
    }
    if let Some(version) = response.model_version {
        event.extra.insert("model_version".into(), Value::String(version));
    }
    event
}

into_dyn!(Agent: LlmAgent);
