//! The definition of an [`LlmAgent`]: its fields, the callback types it holds, and the builder
//! that makes one.

use std::collections::HashSet;
use std::sync::Arc;

use agentstate::{BoxError, Content, Map, Value};

use crate::agent::{Agent, BuildError, check_sub_agent_names};
use crate::context::{CallbackContext, ReadonlyContext, ToolContext};
use crate::model::{LlmRequest, LlmResponse, Model};
use crate::template::Template;
use crate::tool::Tool;

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

/// Where an agent's instruction comes from.
#[derive(Clone)]
pub(super) enum Instruction {
    None,
    Template(Template),
    Provider(InstructionProvider),
}

/// An agent backed by a model. Build one with [`LlmAgent::builder`].
#[derive(Clone)]
pub struct LlmAgent {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) model: Arc<dyn Model>,
    pub(super) instruction: Instruction,
    pub(super) output_key: Option<String>,
    pub(super) tools: Vec<Arc<dyn Tool>>,
    pub(super) sub_agents: Vec<Arc<dyn Agent>>,
    pub(super) include_contents: bool,
    pub(super) identity: bool,
    pub(super) to_parent: bool,
    pub(super) to_peers: bool,
    pub(super) history_limit: Option<usize>,
    pub(super) temperature: Option<f64>,
    pub(super) max_output_tokens: Option<u32>,
    pub(super) output_schema: Option<Value>,
    pub(super) before_agent: Vec<AgentCallback>,
    pub(super) after_agent: Vec<AgentCallback>,
    pub(super) before_model: Vec<BeforeModelCallback>,
    pub(super) after_model: Vec<AfterModelCallback>,
    pub(super) before_tool: Vec<BeforeToolCallback>,
    pub(super) after_tool: Vec<AfterToolCallback>,
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
    /// Starts an agent called `name` using `model`: one of the providers, or any model as
    /// `Arc<dyn Model>` (shared with other agents, say).
    pub fn builder(name: impl Into<String>, model: impl Into<Arc<dyn Model>>) -> LlmAgentBuilder {
        LlmAgentBuilder {
            agent: LlmAgent {
                name: name.into(),
                description: String::new(),
                model: model.into(),
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

    /// Adds a tool: a [`FunctionTool`](crate::FunctionTool), an [`AgentTool`](crate::AgentTool), or
    /// any tool as `Arc<dyn Tool>`.
    pub fn tool(mut self, tool: impl Into<Arc<dyn Tool>>) -> Self {
        self.agent.tools.push(tool.into());
        self
    }

    /// Adds a sub-agent the model can hand the conversation to (`transfer_to_agent`).
    pub fn sub_agent(mut self, agent: impl Into<Arc<dyn Agent>>) -> Self {
        self.agent.sub_agents.push(agent.into());
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
        check_sub_agent_names(&agent.name, &agent.sub_agents)?;
        if agent.tools.iter().any(|t| t.name() == TRANSFER_TOOL) {
            return Err(BuildError::ReservedTool { agent: agent.name.clone(), tool: TRANSFER_TOOL.into() });
        }
        let mut names = HashSet::new();
        for tool in &agent.tools {
            if !names.insert(tool.name()) {
                return Err(BuildError::DuplicateTool { agent: agent.name.clone(), tool: tool.name().into() });
            }
        }
        Ok(self.agent)
    }
}
