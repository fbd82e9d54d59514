//! The agent runtime on top of agentstate.
//!
//! - [`Runner`] runs an agent for one user turn: it loads the session (only the history the
//!   agent reads), appends the user's message and every non-partial event through the
//!   [`SessionService`](agentstate::SessionService), and streams the events as they happen.
//! - [`LlmAgent`]: a model, an instruction template over session state (or an
//!   [`InstructionProvider`]), tools, callbacks, `output_key`, `output_schema`, and sub-agents it
//!   hands the conversation to. [`SequentialAgent`] and [`ParallelAgent`] compose agents;
//!   [`AgentTool`] lets a model call an agent like a tool; [`FunctionTool`] makes a tool of a
//!   function.
//! - [`CallbackContext`] / [`ToolContext`]: state writes in agent code become the event's
//!   `state_delta`; the tools of one turn share their writes, so none is lost.
//!
//! The modules hold what extends the runtime and its subsystems:
//! - [`agent`]: the [`Agent`](agent::Agent) trait and the invocation it runs in, for agents of
//!   your own; walks over a tree of agents; the rules agent names follow.
//! - [`tool`]: the [`Tool`](tool::Tool) trait and the check of a call's arguments.
//! - [`model`]: the [`Model`](model::Model) trait and what goes to and comes from a model;
//!   [`providers`]: Gemini and OpenAI-compatible models.
//! - [`template`]: instruction templates. [`config`]: agents declared in YAML.
//! - [`testing`]: a scripted model, for tests and examples without a provider.

/// `impl From<Type> for Arc<dyn Trait>` for each type, so builders can take
/// `impl Into<Arc<dyn Trait>>`: the type itself or any `Arc<dyn Trait>`.
macro_rules! into_dyn {
    ($trait:path: $($type:ty),+ $(,)?) => {$(
        impl From<$type> for std::sync::Arc<dyn $trait> {
            fn from(value: $type) -> Self {
                std::sync::Arc::new(value)
            }
        }
    )+};
}

/// Inside `impl Agent for …`: `name`, `description` and `sub_agents` answered from the fields of
/// those names (the built-in agents all keep them so).
macro_rules! agent_fields {
    () => {
        fn name(&self) -> &str {
            &self.name
        }

        fn description(&self) -> &str {
            &self.description
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.sub_agents
        }
    };
}

pub mod agent;
mod agent_tool;
mod artifact_text;
pub mod compaction;
mod concurrency;
pub mod config;
mod context;
mod error;
mod function_tool;
mod llm_agent;
mod memory_tools;
pub mod model;
pub mod providers;
mod runner;
mod telemetry;
pub mod template;
pub mod testing;
pub mod tool;
mod workflow;

pub use agent_tool::AgentTool;
pub use concurrency::{DoubleTexting, RunConcurrency};
pub use context::{
    ArtifactAccess, CallbackContext, Changes, MemoryAccess, ReadonlyContext, StateMut, ToolContext,
    inject_session_state,
};
pub use error::RuntimeError;
pub use function_tool::{FunctionTool, ToolFuture};
pub use llm_agent::{
    AfterModelCallback, AfterToolCallback, AgentCallback, BeforeModelCallback, BeforeToolCallback, InstructionProvider,
    LlmAgent, LlmAgentBuilder, TRANSFER_TOOL,
};
pub use memory_tools::{LoadMemoryTool, PreloadMemoryTool, load_memory, preload_memory};
pub use runner::{DEFAULT_MAX_LLM_CALLS, EventStream, RunRequest, Runner};
pub use workflow::{ParallelAgent, SequentialAgent};

/// The Rust code blocks of the README and of the book (`docs/`), run as doctests so they cannot
/// rot. `.ci/book-check.py` fails when a page with Rust code is missing here.
#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../../../README.md")]
    struct Readme;
    #[doc = include_str!("../../../docs/agent-engine.md")]
    struct AgentEngine;
    #[doc = include_str!("../../../docs/agents.md")]
    struct Agents;
    #[doc = include_str!("../../../docs/artifacts.md")]
    struct Artifacts;
    #[doc = include_str!("../../../docs/compaction.md")]
    struct Compaction;
    #[doc = include_str!("../../../docs/history.md")]
    struct History;
    #[doc = include_str!("../../../docs/memory.md")]
    struct Memory;
    #[doc = include_str!("../../../docs/rust.md")]
    struct Rust;
    #[doc = include_str!("../../../docs/writing-a-store.md")]
    struct WritingAStore;
}
