//! The agent runtime on top of agentstate (SPEC §5–6).
//!
//! - [`Runner`] runs an [`Agent`] for one user turn: it loads the session (only the history the
//!   agent reads), appends the user's message and every non-partial event through the
//!   [`SessionService`](agentstate::SessionService), and streams the events as they happen.
//! - [`LlmAgent`]: a model, an instruction [`Template`] over session state (or an
//!   [`InstructionProvider`]), tools, callbacks, `output_key`, `output_schema`, and sub-agents it
//!   hands the conversation to. [`SequentialAgent`] and [`ParallelAgent`] compose agents;
//!   [`AgentTool`] lets a model call an agent like a tool.
//! - [`CallbackContext`] / [`ToolContext`]: state writes in agent code become the event's
//!   `state_delta`; the tools of one turn share their writes, so none is lost.
//! - [`Model`]: [`Gemini`], [`OpenAiCompatible`] (OpenAI, Ollama, vLLM, llama.cpp server) and
//!   [`ScriptedModel`] for tests.
//! - [`config`]: agents declared in YAML.

mod agent_tool;
pub mod config;
pub mod context;
mod error;
mod invocation;
mod llm_agent;
pub mod model;
pub mod providers;
mod runner;
mod scripted;
pub mod template;
mod tool;
mod workflow;

pub use agent_tool::AgentTool;
pub use context::{CallbackContext, StateMut, ToolContext};
pub use error::RuntimeError;
pub use invocation::{Agent, History, InvocationContext, ReadonlyContext, find_agent, inject_session_state, parent_of};
pub use llm_agent::{
    AfterModelCallback, AfterToolCallback, AgentCallback, BeforeModelCallback, BeforeToolCallback, BuildError,
    InstructionProvider, LlmAgent, LlmAgentBuilder, TRANSFER_TOOL, validate_agent_name,
};
pub use model::{LlmRequest, LlmResponse, Model, ModelError, ResponseStream, ToolDeclaration};
pub use providers::{Gemini, OpenAiCompatible};
pub use runner::{DEFAULT_MAX_LLM_CALLS, EventStream, RunRequest, Runner};
pub use scripted::{Gate, ScriptedModel};
pub use template::{Placeholder, Template, TemplateError};
pub use tool::{FunctionTool, Tool, ToolFuture, check_arguments};
pub use workflow::{ParallelAgent, SequentialAgent};

/// The README's Rust code blocks (the session quickstart and the agent quickstart), run as
/// doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
