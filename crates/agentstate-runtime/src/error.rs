//! Why a run stopped.

use agentstate::BoxError;

use crate::model::ModelError;
use crate::template::TemplateError;

/// Why a run (or one agent of it) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The session does not exist (the reference's message) and the runner does not create it.
    #[error("Session not found: {0}")]
    SessionNotFound(String),
    /// The session service failed, e.g. the store is down or another writer got in first.
    #[error(transparent)]
    Session(#[from] agentstate::Error),
    /// A model call failed.
    #[error("model call of agent '{agent}' failed: {source}")]
    Model {
        /// The agent calling it.
        agent: String,
        /// Why.
        #[source]
        source: ModelError,
    },
    /// The instruction could not be rendered (a required `{key}` is missing, …).
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// An instruction provider failed.
    #[error("instruction provider of agent '{agent}' failed: {source}")]
    Instruction {
        /// The agent.
        agent: String,
        /// What it returned.
        #[source]
        source: BoxError,
    },
    /// A tool could not prepare a model request (`preload_memory` could not search memory).
    #[error("tool '{tool}' of agent '{agent}' could not prepare the model request: {source}")]
    ToolPreparation {
        /// The agent.
        agent: String,
        /// The tool.
        tool: String,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// With an `output_schema`: the answer is not JSON of that schema.
    #[error("agent '{agent}' answered with output that does not fit its output_schema: {message}")]
    Output {
        /// The agent.
        agent: String,
        /// What is wrong with it.
        message: String,
    },
    /// The invocation called models more often than its limit allows (a model looping on tools).
    #[error("Max number of llm calls limit of {0} exceeded")]
    LlmCallLimit(usize),
    /// An agent named as a transfer target or by a request does not exist.
    #[error("Agent not found: {0}")]
    AgentNotFound(String),
    /// Another run of the session is going and the policy is
    /// [`Reject`](crate::DoubleTexting::Reject): nothing of this run was stored.
    #[error("Session {0} is running another turn; send the message again once it ends")]
    SessionBusy(String),
    /// Another run of the session is going and this one could not wait for it: as many runs as
    /// allowed already wait, or it waited as long as allowed. Nothing of this run was stored.
    #[error("Session {session_id} is running another turn and {reason}; send the message again later")]
    RunNotQueued {
        /// The session.
        session_id: String,
        /// Why it did not wait (longer).
        reason: String,
    },
    /// Another run of the session asked this one to stop, or took its lease (see
    /// [`DoubleTexting::Interrupt`](crate::DoubleTexting::Interrupt)): raised at an event
    /// boundary, and turned by the runner into the run's last event, marked `interrupted`.
    #[error("the run was interrupted by a newer run of its session")]
    Interrupted,
    /// A custom agent failed.
    #[error("agent '{agent}' failed: {source}")]
    Agent {
        /// The agent.
        agent: String,
        /// Why.
        #[source]
        source: BoxError,
    },
}
