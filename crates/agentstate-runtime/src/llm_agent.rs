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

use std::sync::Arc;

use agentstate::{BoxError, Content, Event, EventActions, FunctionCall, FunctionResponse, Map, Part, Value};
use async_trait::async_trait;
use futures_util::StreamExt;

use crate::context::{CallbackContext, ToolContext};
use crate::error::RuntimeError;
use crate::invocation::{Agent, History, InvocationContext, ReadonlyContext, find_agent, parent_of};
use crate::model::{LlmRequest, LlmResponse, Model};
use crate::template::Template;
use crate::tool::{FunctionTool, Tool, check_arguments};

/// Builds an instruction from the live context instead of a template. Its result is used as is:
/// no `{key}` injection (call [`inject_session_state`](crate::inject_session_state) for that).
pub type InstructionProvider = Arc<dyn Fn(&ReadonlyContext<'_>) -> Result<String, BoxError> + Send + Sync>;
/// Runs before or after the agent; content it returns becomes the agent's answer.
pub type AgentCallback = Arc<dyn Fn(&mut CallbackContext) -> Option<Content> + Send + Sync>;
/// Runs before the model with the request; a response it returns is used instead of the model's.
pub type BeforeModelCallback = Arc<dyn Fn(&mut CallbackContext, &mut LlmRequest) -> Option<LlmResponse> + Send + Sync>;
/// Runs on the model's complete response; a response it returns replaces it.
pub type AfterModelCallback = Arc<dyn Fn(&mut CallbackContext, &LlmResponse) -> Option<LlmResponse> + Send + Sync>;
/// Runs before a tool with its name and arguments; a value it returns is used instead of the tool's.
pub type BeforeToolCallback =
    Arc<dyn Fn(&str, &mut Map<String, Value>, &mut ToolContext) -> Option<Value> + Send + Sync>;
/// Runs on a tool's result; a value it returns replaces it.
pub type AfterToolCallback =
    Arc<dyn Fn(&str, &Map<String, Value>, &mut ToolContext, &Value) -> Option<Value> + Send + Sync>;

/// The name of the tool an agent with sub-agents gets for handing the conversation over.
pub const TRANSFER_TOOL: &str = "transfer_to_agent";

#[derive(Clone)]
enum Instruction {
    None,
    Template(Template),
    Provider(InstructionProvider),
}

/// Why an agent could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Agent names are identifiers (letters, digits, `_`, not starting with a digit) and not `user`.
    #[error(
        "Found invalid agent name: `{0}`. Agent name must be a valid identifier. It should start with a letter \
         (a-z, A-Z) or an underscore (_), and can only contain letters, digits (0-9), and underscores."
    )]
    InvalidName(String),
    /// `user` is reserved for the end user's events.
    #[error("Agent name cannot be `user`. `user` is reserved for end-user's input.")]
    ReservedName,
    /// Two tools with one name.
    #[error("agent '{agent}' has two tools named '{tool}'")]
    DuplicateTool {
        /// The agent.
        agent: String,
        /// The tool name.
        tool: String,
    },
    /// `transfer_to_agent` is the runtime's own tool.
    #[error("agent '{agent}' has a tool named '{tool}', a name reserved for handing over to other agents")]
    ReservedTool {
        /// The agent.
        agent: String,
        /// The tool name.
        tool: String,
    },
    /// Two sub-agents with one name.
    #[error("agent '{agent}' has two sub-agents named '{sub_agent}'")]
    DuplicateSubAgent {
        /// The agent.
        agent: String,
        /// The sub-agent name.
        sub_agent: String,
    },
}

/// Checks an agent name (the reference's rule: an identifier, not `user`).
pub fn validate_agent_name(name: &str) -> Result<(), BuildError> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c == '_' || unicode_ident::is_xid_start(c))
        && chars.all(unicode_ident::is_xid_continue);
    if !valid {
        return Err(BuildError::InvalidName(name.to_owned()));
    }
    if name == "user" {
        return Err(BuildError::ReservedName);
    }
    Ok(())
}

/// An agent backed by a model. Build one with [`LlmAgent::builder`].
#[derive(Clone)]
pub struct LlmAgent {
    name: String,
    description: String,
    model: Arc<dyn Model>,
    instruction: Instruction,
    output_key: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
    sub_agents: Vec<Arc<dyn Agent>>,
    include_contents: bool,
    identity: bool,
    to_parent: bool,
    to_peers: bool,
    history_limit: Option<usize>,
    temperature: Option<f64>,
    max_output_tokens: Option<u32>,
    output_schema: Option<Value>,
    before_agent: Vec<AgentCallback>,
    after_agent: Vec<AgentCallback>,
    before_model: Vec<BeforeModelCallback>,
    after_model: Vec<AfterModelCallback>,
    before_tool: Vec<BeforeToolCallback>,
    after_tool: Vec<AfterToolCallback>,
}

impl std::fmt::Debug for LlmAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmAgent")
            .field("name", &self.name)
            .field("model", &self.model.name())
            .field("output_key", &self.output_key)
            .field("tools", &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>())
            .field("sub_agents", &self.sub_agents.iter().map(|a| a.name()).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Builds an [`LlmAgent`].
#[derive(Clone)]
pub struct LlmAgentBuilder {
    agent: LlmAgent,
}

impl LlmAgent {
    /// Starts an agent called `name` using `model`.
    pub fn builder(name: impl Into<String>, model: impl Model + 'static) -> LlmAgentBuilder {
        Self::builder_shared(name, Arc::new(model))
    }

    /// The same with a model shared with other agents.
    pub fn builder_shared(name: impl Into<String>, model: Arc<dyn Model>) -> LlmAgentBuilder {
        LlmAgentBuilder {
            agent: LlmAgent {
                name: name.into(),
                description: String::new(),
                model,
                instruction: Instruction::None,
                output_key: None,
                tools: Vec::new(),
                sub_agents: Vec::new(),
                include_contents: true,
                identity: true,
                to_parent: true,
                to_peers: true,
                history_limit: None,
                temperature: None,
                max_output_tokens: None,
                output_schema: None,
                before_agent: Vec::new(),
                after_agent: Vec::new(),
                before_model: Vec::new(),
                after_model: Vec::new(),
                before_tool: Vec::new(),
                after_tool: Vec::new(),
            },
        }
    }

    /// The instruction template, when it is one (to list its placeholders).
    pub fn instruction_template(&self) -> Option<&Template> {
        match &self.instruction {
            Instruction::Template(t) => Some(t),
            _ => None,
        }
    }

    /// Where the final answer is saved in state.
    pub fn output_key(&self) -> Option<&str> {
        self.output_key.as_deref()
    }
}

impl LlmAgentBuilder {
    /// What it does, for models choosing whom to transfer to.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.agent.description = description.into();
        self
    }

    /// The instruction: a template reading state (`{key}`, `{key?}`, `{user:key}`, `{{`/`}}`).
    pub fn instruction(mut self, template: &str) -> Self {
        self.agent.instruction = Instruction::Template(Template::parse(template));
        self
    }

    /// The instruction, built by a function of the live context (no `{key}` injection).
    pub fn instruction_provider(
        mut self,
        provider: impl Fn(&ReadonlyContext<'_>) -> Result<String, BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.agent.instruction = Instruction::Provider(Arc::new(provider));
        self
    }

    /// Saves the final text answer in state under `key` (any scope; `temp:` lasts the invocation).
    pub fn output_key(mut self, key: impl Into<String>) -> Self {
        self.agent.output_key = Some(key.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.agent.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    pub fn tool_shared(mut self, tool: Arc<dyn Tool>) -> Self {
        self.agent.tools.push(tool);
        self
    }

    /// Adds a sub-agent the model can hand the conversation to (`transfer_to_agent`).
    pub fn sub_agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agent.sub_agents.push(agent);
        self
    }

    /// `false`: the model sees no history, only the instruction and this turn (reference
    /// `include_contents='none'`); the runner then loads no events for it.
    pub fn include_contents(mut self, include: bool) -> Self {
        self.agent.include_contents = include;
        self
    }

    /// It may not hand the conversation back to its parent; a turn it answered is followed by
    /// one that starts at the root (the reference's `disallow_transfer_to_parent`).
    pub fn disallow_transfer_to_parent(mut self) -> Self {
        self.agent.to_parent = false;
        self
    }

    /// It may not hand the conversation to its peers (the reference's `disallow_transfer_to_peers`).
    pub fn disallow_transfer_to_peers(mut self) -> Self {
        self.agent.to_peers = false;
        self
    }

    /// `false`: no identity line (`You are an agent. Your internal name is "…".`, which the
    /// reference appends to every instruction, as agentstate does by default).
    pub fn identity(mut self, identity: bool) -> Self {
        self.agent.identity = identity;
        self
    }

    /// The model sees at most the `n` most recent events; the runner loads no more.
    pub fn history_limit(mut self, n: usize) -> Self {
        self.agent.history_limit = Some(n);
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.agent.temperature = Some(temperature);
        self
    }

    /// Cap on generated tokens per model call.
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.agent.max_output_tokens = Some(tokens);
        self
    }

    /// The final answer must be JSON following this schema: the model is asked for it (Gemini's
    /// `responseSchema`, OpenAI's `response_format`), the answer is checked (a ```` ```json ````
    /// fence is allowed) and `output_key` saves the parsed value instead of the text.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.agent.output_schema = Some(schema);
        self
    }

    /// Runs before the agent; content returned is the agent's answer and the agent is skipped.
    pub fn before_agent_callback(
        mut self,
        f: impl Fn(&mut CallbackContext) -> Option<Content> + Send + Sync + 'static,
    ) -> Self {
        self.agent.before_agent.push(Arc::new(f));
        self
    }

    /// Runs after the agent; content returned is emitted as a last answer.
    pub fn after_agent_callback(
        mut self,
        f: impl Fn(&mut CallbackContext) -> Option<Content> + Send + Sync + 'static,
    ) -> Self {
        self.agent.after_agent.push(Arc::new(f));
        self
    }

    /// Runs before each model call.
    pub fn before_model_callback(
        mut self,
        f: impl Fn(&mut CallbackContext, &mut LlmRequest) -> Option<LlmResponse> + Send + Sync + 'static,
    ) -> Self {
        self.agent.before_model.push(Arc::new(f));
        self
    }

    /// Runs on each complete model response.
    pub fn after_model_callback(
        mut self,
        f: impl Fn(&mut CallbackContext, &LlmResponse) -> Option<LlmResponse> + Send + Sync + 'static,
    ) -> Self {
        self.agent.after_model.push(Arc::new(f));
        self
    }

    /// Runs before each tool call.
    pub fn before_tool_callback(
        mut self,
        f: impl Fn(&str, &mut Map<String, Value>, &mut ToolContext) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.agent.before_tool.push(Arc::new(f));
        self
    }

    /// Runs after each tool call.
    pub fn after_tool_callback(
        mut self,
        f: impl Fn(&str, &Map<String, Value>, &mut ToolContext, &Value) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.agent.after_tool.push(Arc::new(f));
        self
    }

    /// Checks the agent and returns it.
    pub fn build(mut self) -> Result<LlmAgent, BuildError> {
        let agent = &mut self.agent;
        crate::workflow::check_agent(&agent.name, &agent.sub_agents)?;
        if agent.tools.iter().any(|t| t.name() == TRANSFER_TOOL) {
            return Err(BuildError::ReservedTool { agent: agent.name.clone(), tool: TRANSFER_TOOL.into() });
        }
        let mut names = std::collections::HashSet::new();
        for tool in &agent.tools {
            if !names.insert(tool.name()) {
                return Err(BuildError::DuplicateTool { agent: agent.name.clone(), tool: tool.name().into() });
            }
        }
        Ok(self.agent)
    }
}

/// The tool that hands the conversation to one of `targets`.
fn transfer_tool(targets: &[Arc<dyn Agent>]) -> FunctionTool {
    let names: Vec<&str> = targets.iter().map(|a| a.name()).collect();
    let mut description = String::from("Hands the conversation to another agent better suited to answer. Agents:");
    for agent in targets {
        description.push_str(&format!("\n- {}: {}", agent.name(), agent.description()));
    }
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

#[async_trait]
impl Agent for LlmAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn sub_agents(&self) -> &[Arc<dyn Agent>] {
        &self.sub_agents
    }

    fn transfers(&self) -> bool {
        true
    }

    fn hands_back(&self) -> bool {
        self.to_parent
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
                    agent.run(ctx).await?;
                    break;
                }
            }
        }
        self.agent_callbacks(ctx, &self.after_agent).await?;
        Ok(())
    }
}

enum Next {
    Model,
    Done,
    Transfer(String),
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
            Instruction::Template(template) => Some(template.render(state, &self.name)?),
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
        let events = ctx.events().await;
        let contents = if self.include_contents {
            let window = self.history_limit.map_or(0, |n| events.len().saturating_sub(n));
            history_contents(&events[window..], &self.name, ctx.branch())
        } else {
            // Only this turn: the user's message of this invocation.
            let turn: Vec<_> = events.iter().filter(|e| e.invocation_id == ctx.invocation_id()).cloned().collect();
            history_contents(&turn, &self.name, ctx.branch())
        };
        let mut request = LlmRequest {
            model: self.model.name().to_owned(),
            system_instruction,
            contents,
            tools: tools.iter().map(|t| t.declaration()).collect(),
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
            let mut guide = String::from("Other agents can take over the conversation:");
            for agent in targets {
                guide.push_str(&format!("\n- {}: {}", agent.name(), agent.description()));
            }
            guide.push_str(&format!(
                "\nAnswer yourself when your description fits the question best. Otherwise call `{TRANSFER_TOOL}` \
                 with the name of the agent that fits better, and write nothing besides that call."
            ));
            request.append_instruction(&guide);
        }
        Ok(request)
    }

    /// One model call and, if it asks for them, its tool calls.
    async fn step(&self, ctx: &InvocationContext) -> Result<Next, RuntimeError> {
        ctx.count_llm_call()?;
        let state = ctx.state().await;
        let targets = self.transfer_targets(ctx);
        let tools = self.tools_with(&targets);
        let mut request = self.request(ctx, &state, &tools, &targets).await?;
        let mut cb = CallbackContext::over(ctx.invocation_id(), &self.name, state);
        let mut responses = match self.before_model.iter().find_map(|f| f(&mut cb, &mut request)) {
            Some(response) => futures_util::stream::iter([Ok(response)]).boxed(),
            None => self
                .model
                .generate(request, ctx.streaming())
                .await
                .map_err(|source| RuntimeError::Model { agent: self.name.clone(), source })?,
        };

        let mut actions = Some(cb.into_actions());
        // The partial events of this call and its answer share one id (as in the reference), so a
        // client can replace the streamed text with the answer.
        let mut event_id = Some(Event::new_id());
        let mut text = String::new();
        let mut calls: Vec<FunctionCall> = Vec::new();
        let mut failed = false;
        while let Some(response) = responses.next().await {
            let mut response = response.map_err(|source| RuntimeError::Model { agent: self.name.clone(), source })?;
            if response.partial {
                let mut partial = response_event(&self.name, response, EventActions::default());
                partial.id = event_id.clone().unwrap_or_else(Event::new_id);
                ctx.emit(partial).await?;
                continue;
            }
            let mut event_actions = actions.take().unwrap_or_default();
            if !self.after_model.is_empty() {
                // The same actions as the before-model callbacks: their writes are visible here.
                let mut cb = CallbackContext::over(ctx.invocation_id(), &self.name, ctx.state().await);
                *cb.actions_mut() = event_actions;
                if let Some(replaced) = self.after_model.iter().find_map(|f| f(&mut cb, &response)) {
                    response = replaced;
                }
                event_actions = cb.into_actions();
            }
            assign_call_ids(&mut response);
            let mut event = response_event(&self.name, response, event_actions);
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
        if let Some(actions) = actions.filter(|a| !a.state_delta.is_empty()) {
            // A before-model callback wrote state but no response came: keep its writes.
            let mut event = Event::new(ctx.invocation_id()).author(&self.name);
            event.actions = actions;
            ctx.emit(event).await?;
        }
        if calls.is_empty() || failed {
            return Ok(Next::Done);
        }
        self.call_tools(ctx, calls, &tools).await
    }

    /// Saves the answer under `output_key`: the text, or with an `output_schema` the JSON it holds
    /// (final answers only; a blank one is not saved).
    fn save_output(&self, event: &mut Event, text: &str) -> Result<(), RuntimeError> {
        let Some(key) = &self.output_key else { return Ok(()) };
        let value = match &self.output_schema {
            None => Value::String(text.to_owned()),
            Some(schema) => {
                let calls = event.content.iter().flat_map(|c| c.parts()).any(|p| p.function_call.is_some());
                if calls || text.trim().is_empty() {
                    return Ok(());
                }
                parse_output(schema, text)
                    .map_err(|message| RuntimeError::Output { agent: self.name.clone(), message })?
            }
        };
        event.actions.state_delta.insert(key.clone(), value);
        Ok(())
    }

    /// The agents it may hand the conversation to: its sub-agents; its parent and peers when the
    /// parent takes part in transfers (unless disallowed).
    fn transfer_targets(&self, ctx: &InvocationContext) -> Vec<Arc<dyn Agent>> {
        let mut targets: Vec<Arc<dyn Agent>> = self.sub_agents.clone();
        if let Some(parent) = parent_of(ctx.root_agent(), &self.name).filter(|p| p.transfers()) {
            if self.to_parent {
                targets.push(Arc::clone(&parent));
            }
            if self.to_peers {
                targets.extend(parent.sub_agents().iter().filter(|a| a.name() != self.name && a.transfers()).cloned());
            }
        }
        let mut seen = std::collections::HashSet::new();
        targets.retain(|agent| seen.insert(agent.name().to_owned()));
        targets
    }

    /// Its tools in this invocation: its own, and `transfer_to_agent` when it has `targets`.
    fn tools_with(&self, targets: &[Arc<dyn Agent>]) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.tools.clone();
        if !targets.is_empty() {
            tools.push(Arc::new(transfer_tool(targets)));
        }
        tools
    }

    /// Runs the calls of one model turn concurrently and emits their answers as one event.
    async fn call_tools(
        &self,
        ctx: &InvocationContext,
        calls: Vec<FunctionCall>,
        tools: &[Arc<dyn Tool>],
    ) -> Result<Next, RuntimeError> {
        // One context per call, all siblings: they share the turn's writes (see `context`).
        let turn = ToolContext::over(ctx.invocation_id(), &self.name, ctx.state().await);
        let runs = calls.into_iter().map(|call| {
            let tool_ctx = turn.sibling(call.id.clone().unwrap_or_default());
            self.call_tool(call, tool_ctx, tools)
        });
        let answers = futures_util::future::join_all(runs).await;

        let mut actions = EventActions { state_delta: turn.shared_writes(), ..EventActions::default() };
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
        event.actions = actions;
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

/// The JSON in an answer (inside a ```` ```json ```` fence or not), checked against `schema`.
fn parse_output(schema: &Value, text: &str) -> Result<Value, String> {
    let mut body = text.trim();
    if let Some(fenced) = body.strip_prefix("```") {
        let fenced = fenced.strip_prefix("json").unwrap_or(fenced);
        body = fenced.strip_suffix("```").unwrap_or(fenced).trim();
    }
    let value: Value = serde_json::from_str(body).map_err(|e| format!("not JSON ({e})"))?;
    match (&value, schema.get("type").and_then(Value::as_str)) {
        (Value::Object(map), _) => crate::tool::check_object(schema, map, "field")?,
        (_, Some("object")) => return Err(format!("expected an object, got {value}")),
        _ => {}
    }
    Ok(value)
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

fn response_event(author: &str, response: LlmResponse, actions: EventActions) -> Event {
    let mut event = Event::new("").author(author);
    event.content = response.content;
    if response.partial {
        event.partial = Some(true);
    }
    event.error_code = response.error_code;
    event.error_message = response.error_message;
    event.actions = actions;
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

/// Whether an event of `event_branch` is visible on `branch`: events of the branch itself and of
/// its ancestors are; those of sibling branches are not.
fn visible_on(branch: Option<&str>, event_branch: Option<&str>) -> bool {
    match (event_branch, branch) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(event), Some(current)) => {
            current == event || current.strip_prefix(event).is_some_and(|rest| rest.starts_with('.'))
        }
    }
}

/// The conversation as `agent` sees it: the user's and its own messages as they are, other
/// agents' messages retold as user-side context (the reference's "For context:" form).
pub(crate) fn history_contents(events: &[Arc<Event>], agent: &str, branch: Option<&str>) -> Vec<Content> {
    let mut contents = Vec::new();
    for event in events {
        if event.is_partial() || !visible_on(branch, event.branch.as_deref()) {
            continue;
        }
        let Some(content) = &event.content else { continue };
        if content.parts().is_empty() {
            continue;
        }
        if event.author == "user" || event.author == agent {
            let mut content = content.clone();
            content.role.get_or_insert_with(|| if event.author == "user" { "user" } else { "model" }.into());
            contents.push(content);
        } else if let Some(retold) = retell(&event.author, content) {
            contents.push(retold);
        }
    }
    contents
}

fn retell(author: &str, content: &Content) -> Option<Content> {
    let mut parts = vec![Part::text("For context:")];
    for part in content.parts() {
        if part.thought == Some(true) {
            continue;
        }
        if let Some(text) = part.text.as_deref().filter(|t| !t.is_empty()) {
            parts.push(Part::text(format!("[{author}] said: {text}")));
        } else if let Some(call) = &part.function_call {
            let args = Value::Object(call.args.clone().unwrap_or_default());
            let name = call.name.as_deref().unwrap_or_default();
            parts.push(Part::text(format!("[{author}] called tool `{name}` with parameters: {args}")));
        } else if let Some(response) = &part.function_response {
            let result = Value::Object(response.response.clone().unwrap_or_default());
            let name = response.name.as_deref().unwrap_or_default();
            parts.push(Part::text(format!("[{author}] `{name}` tool returned result: {result}")));
        }
    }
    (parts.len() > 1).then(|| Content { parts: Some(parts), role: Some("user".into()), extra: Map::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_see_their_ancestors_only() {
        assert!(visible_on(None, None));
        assert!(visible_on(Some("p.a"), None));
        assert!(!visible_on(None, Some("p.a")));
        assert!(visible_on(Some("p.a"), Some("p.a")));
        assert!(visible_on(Some("p.a.x"), Some("p.a")));
        assert!(!visible_on(Some("p.ab"), Some("p.a")));
        assert!(!visible_on(Some("p.b"), Some("p.a")));
    }

    #[test]
    fn agent_names_follow_the_reference() {
        assert!(validate_agent_name("story_agent").is_ok());
        assert!(validate_agent_name("_x1").is_ok());
        assert_eq!(validate_agent_name("user"), Err(BuildError::ReservedName));
        for bad in ["", "1abc", "my-agent", "a b"] {
            assert!(matches!(validate_agent_name(bad), Err(BuildError::InvalidName(_))), "{bad}");
        }
    }

    #[test]
    fn other_agents_are_retold_as_context() {
        let events = vec![
            Arc::new(Event::new("i").author("user").content(Content::text("user", "hi"))),
            Arc::new(Event::new("i").author("writer").content(Content::text("model", "a draft"))),
            Arc::new(Event::new("i").author("reader").content(Content::text("model", "mine"))),
        ];
        let contents = history_contents(&events, "reader", None);
        assert_eq!(contents.len(), 3);
        assert_eq!(contents[1].role.as_deref(), Some("user"));
        assert_eq!(contents[1].joined_text(), "For context:[writer] said: a draft");
        assert_eq!(contents[2].role.as_deref(), Some("model"));
    }
}
