//! What an agent is: the [`Agent`] trait, the invocation it runs in ([`InvocationContext`]),
//! walks over a tree of agents, and the rules agent names follow. Everything else in the crate
//! builds on this module; implement [`Agent`] for an agent of your own.
//!
//! An [`InvocationContext`] is shared by every agent of one invocation (one user turn): the
//! invocation id, the session handle (its state includes this invocation's `temp:` keys), and
//! where events go. [`InvocationContext::emit`] appends a non-partial event through the session
//! service *before* passing it on, so whatever runs next (the same agent's next step, the next
//! agent of a sequence) sees its state delta; partial events are passed on and never stored.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agentstate::{Event, Map, Session, SessionService, Value};
use async_trait::async_trait;
use tokio::sync::{Mutex, mpsc};

use crate::context::{ArtifactAccess, CallbackContext, MemoryAccess};
use crate::error::RuntimeError;

/// An agent: something that, given the invocation, emits events.
///
/// Implement it for custom agents; [`LlmAgent`](crate::LlmAgent),
/// [`SequentialAgent`](crate::SequentialAgent) and [`ParallelAgent`](crate::ParallelAgent) are
/// the built-in ones. To pass one where an `impl Into<Arc<dyn Agent>>` is asked for, give it as
/// `Arc::new(agent) as Arc<dyn Agent>`, or add `impl From<MyAgent> for Arc<dyn Agent>`.
#[async_trait]
pub trait Agent: Send + Sync {
    /// Its name: the `author` of its events.
    fn name(&self) -> &str;

    /// What it does (shown to models choosing an agent to transfer to).
    fn description(&self) -> &str {
        ""
    }

    /// The agents it runs or can hand over to.
    fn sub_agents(&self) -> &[Arc<dyn Agent>] {
        &[]
    }

    /// Whether it takes part in handing the conversation over (`transfer_to_agent`): it can be
    /// handed the conversation, hand it on, and the next turn resumes with it. [`LlmAgent`]s are;
    /// workflow agents are not (a sequence restarts from its root every turn).
    ///
    /// [`LlmAgent`]: crate::LlmAgent
    fn is_transfer_target(&self) -> bool {
        false
    }

    /// Whether, once handed the conversation, it may hand it back to its parent; when not, the
    /// next turn starts at the root again (the reference's `disallow_transfer_to_parent`).
    fn may_return_to_parent(&self) -> bool {
        self.is_transfer_target()
    }

    /// How much of the session's history it reads, so the runner loads no more than needed.
    fn history(&self) -> History {
        let mut need = History::Recent(0);
        for agent in self.sub_agents() {
            need = need.max(agent.history());
        }
        need
    }

    /// The model it calls, if it calls one (compaction summarises with the root agent's when no
    /// summariser is configured).
    fn model(&self) -> Option<Arc<dyn crate::model::Model>> {
        None
    }

    /// Runs it: emit events through `ctx.emit`.
    async fn run(&self, ctx: &InvocationContext) -> Result<(), RuntimeError>;
}

/// How many past events an agent reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum History {
    /// The `n` most recent events (`0`: none).
    Recent(usize),
    /// The whole history.
    All,
}

impl History {
    pub(crate) fn recent(self) -> Option<usize> {
        match self {
            Self::Recent(n) => Some(n),
            Self::All => None,
        }
    }
}

/// Finds the agent called `name` in the tree under `root` (`root` included).
pub fn find_agent(root: &Arc<dyn Agent>, name: &str) -> Option<Arc<dyn Agent>> {
    if root.name() == name {
        return Some(Arc::clone(root));
    }
    root.sub_agents().iter().find_map(|agent| find_agent(agent, name))
}

/// The agent whose sub-agents include the one called `name`, in the tree under `root`.
pub fn parent_of(root: &Arc<dyn Agent>, name: &str) -> Option<Arc<dyn Agent>> {
    if root.sub_agents().iter().any(|a| a.name() == name) {
        return Some(Arc::clone(root));
    }
    root.sub_agents().iter().find_map(|agent| parent_of(agent, name))
}

/// The agents from `root` down to the one called `name`, both included.
fn path_to(root: &Arc<dyn Agent>, name: &str) -> Option<Vec<Arc<dyn Agent>>> {
    if root.name() == name {
        return Some(vec![Arc::clone(root)]);
    }
    root.sub_agents().iter().find_map(|agent| {
        let mut path = path_to(agent, name)?;
        path.insert(0, Arc::clone(root));
        Some(path)
    })
}

/// The agent a new turn starts with: the one that answered last, when the conversation was handed
/// to it and every agent above it takes part in transfers (as the reference's runner picks it);
/// otherwise `root`. Looks at the loaded history only, and at its live events (rewound ones do not
/// count).
pub(crate) fn agent_to_run(root: &Arc<dyn Agent>, events: &[Arc<Event>]) -> Arc<dyn Agent> {
    for event in agentstate::history::live_events(events).into_iter().rev() {
        if event.author == root.name() {
            break;
        }
        let Some(path) = path_to(root, &event.author) else { continue };
        if path.iter().all(|agent| agent.is_transfer_target() && agent.may_return_to_parent()) {
            return path.last().map_or_else(|| Arc::clone(root), Arc::clone);
        }
        break;
    }
    Arc::clone(root)
}

/// The invocation, as every agent of it sees it. Cheap to clone.
#[derive(Clone)]
pub struct InvocationContext {
    shared: Arc<Shared>,
    branch: Option<String>,
}

struct Shared {
    invocation_id: String,
    service: SessionService,
    live: Mutex<Live>,
    events: mpsc::Sender<Event>,
    root: Arc<dyn Agent>,
    streaming: bool,
    llm_calls: AtomicUsize,
    max_llm_calls: usize,
    memory: Option<MemoryAccess>,
    artifacts: Option<ArtifactAccess>,
    /// Raised when another run of the session asked this one to stop.
    stop: Option<Arc<AtomicBool>>,
    compaction: Option<Arc<crate::compaction::EventsCompactionConfig>>,
}

/// The session handle, and a snapshot of its state shared by every reader until the next append.
struct Live {
    session: Session,
    state: Option<Arc<Map<String, Value>>>,
}

impl Live {
    fn state(&mut self) -> Arc<Map<String, Value>> {
        let session = &self.session;
        Arc::clone(self.state.get_or_insert_with(|| Arc::new(session.state().all().clone())))
    }

    async fn append(&mut self, service: &SessionService, event: Event) -> Result<Event, RuntimeError> {
        let stored = service.append_event(&mut self.session, event).await?;
        self.state = None;
        Ok(stored)
    }
}

impl std::fmt::Debug for InvocationContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvocationContext")
            .field("invocation_id", &self.shared.invocation_id)
            .field("branch", &self.branch)
            .finish_non_exhaustive()
    }
}

/// How an invocation is set up (the [`Runner`](crate::Runner) fills it in).
pub(crate) struct InvocationSetup {
    pub(crate) invocation_id: String,
    pub(crate) service: SessionService,
    pub(crate) session: Session,
    pub(crate) events: mpsc::Sender<Event>,
    pub(crate) root: Arc<dyn Agent>,
    pub(crate) streaming: bool,
    pub(crate) max_llm_calls: usize,
    pub(crate) memory: Option<MemoryAccess>,
    pub(crate) artifacts: Option<ArtifactAccess>,
    pub(crate) stop: Option<Arc<AtomicBool>>,
    pub(crate) compaction: Option<Arc<crate::compaction::EventsCompactionConfig>>,
}

impl InvocationContext {
    pub(crate) fn new(setup: InvocationSetup) -> Self {
        Self {
            shared: Arc::new(Shared {
                invocation_id: setup.invocation_id,
                service: setup.service,
                live: Mutex::new(Live { session: setup.session, state: None }),
                events: setup.events,
                root: setup.root,
                streaming: setup.streaming,
                llm_calls: AtomicUsize::new(0),
                max_llm_calls: setup.max_llm_calls,
                memory: setup.memory,
                artifacts: setup.artifacts,
                stop: setup.stop,
                compaction: setup.compaction,
            }),
            branch: None,
        }
    }

    /// The invocation id (`e-<uuid>`), shared by every event of the invocation.
    pub fn invocation_id(&self) -> &str {
        &self.shared.invocation_id
    }

    /// The branch (`parallel.child`) events of this context are tagged with; `None` at the top.
    pub fn branch(&self) -> Option<&str> {
        self.branch.as_deref()
    }

    /// The same invocation on a sub-branch (what [`ParallelAgent`](crate::ParallelAgent) gives
    /// each child, so siblings do not see each other's conversation).
    pub fn child_branch(&self, parent: &str, child: &str) -> Self {
        let branch = match &self.branch {
            Some(branch) => format!("{branch}.{child}"),
            None => format!("{parent}.{child}"),
        };
        Self { shared: Arc::clone(&self.shared), branch: Some(branch) }
    }

    /// Whether the caller asked for streaming (partial events).
    pub fn streaming(&self) -> bool {
        self.shared.streaming
    }

    /// The agent the invocation started at.
    pub fn root_agent(&self) -> &Arc<dyn Agent> {
        &self.shared.root
    }

    /// A copy of the session handle as it is now (this invocation's appends and `temp:` keys
    /// included). Events are shared, so this is cheap.
    pub async fn session(&self) -> Session {
        self.shared.live.lock().await.session.clone()
    }

    /// The events of the session handle (those loaded and those appended since), shared.
    pub async fn events(&self) -> Vec<Arc<Event>> {
        self.shared.live.lock().await.session.events().shared().to_vec()
    }

    /// The live state: the session's, with this invocation's `temp:` keys. A snapshot shared by
    /// every caller until the next append, so reading it is cheap.
    pub async fn state(&self) -> Arc<Map<String, Value>> {
        self.shared.live.lock().await.state()
    }

    /// A callback context of `agent` over the live state (with the invocation's memory and
    /// artifacts).
    pub async fn callback_context(&self, agent: &str) -> CallbackContext {
        CallbackContext::from_snapshot(self.invocation_id(), agent, self.state().await)
            .with_memory(self.memory())
            .with_artifacts(self.artifacts())
    }

    /// The artifacts the invocation may save and load: the runner's artifact service in the
    /// session's scope (`None` without one).
    pub fn artifacts(&self) -> Option<ArtifactAccess> {
        self.shared.artifacts.clone()
    }

    /// The memory the invocation may search: the runner's memory service for the session's user
    /// (`None` without one).
    pub fn memory(&self) -> Option<MemoryAccess> {
        self.shared.memory.clone()
    }

    /// Emits an event: a non-partial one is appended to the session first (its state delta
    /// applied, `temp:` keys kept for the rest of the invocation), then passed to the caller.
    /// Returns the event as stored. The invocation id and branch are filled in when empty.
    ///
    /// # Errors
    /// [`RuntimeError::Interrupted`] when a newer run of the session asked this one to stop
    /// (the event is not stored): let it through, and the runner ends the run.
    pub async fn emit(&self, mut event: Event) -> Result<Event, RuntimeError> {
        self.stamp(&mut event);
        let event = if event.is_partial() {
            self.check_stop()?;
            event
        } else {
            self.store(event).await?
        };
        // A closed channel means the caller dropped the run; the run is being dropped with it.
        let _ = self.shared.events.send(event.clone()).await;
        Ok(event)
    }

    /// Appends an event without passing it on (the user's message: stored, not echoed back).
    pub(crate) async fn append_only(&self, mut event: Event) -> Result<Event, RuntimeError> {
        self.stamp(&mut event);
        self.store(event).await
    }

    /// Appends an event as it is (no invocation id or branch filled in), without passing it on:
    /// a compaction, which belongs to no invocation and no branch.
    pub(crate) async fn append_as_is(&self, event: Event) -> Result<Event, RuntimeError> {
        self.store(event).await
    }

    /// How the app compacts its conversations, if it does.
    pub(crate) fn compaction(&self) -> Option<&Arc<crate::compaction::EventsCompactionConfig>> {
        self.shared.compaction.as_ref()
    }

    /// Fills in this invocation's id and this context's branch where the event has none.
    fn stamp(&self, event: &mut Event) {
        if event.invocation_id.is_empty() {
            event.invocation_id.clone_from(&self.shared.invocation_id);
        }
        if event.branch.is_none() {
            event.branch.clone_from(&self.branch);
        }
    }

    /// Emits the last event of a run that was asked to stop, whatever the stop says.
    pub(crate) async fn emit_last(&self, mut event: Event) -> Result<Event, RuntimeError> {
        self.stamp(&mut event);
        let event = self.shared.live.lock().await.append(&self.shared.service, event).await?;
        let _ = self.shared.events.send(event.clone()).await;
        Ok(event)
    }

    /// An event boundary: [`RuntimeError::Interrupted`] once another run asked this one to stop.
    fn check_stop(&self) -> Result<(), RuntimeError> {
        match &self.shared.stop {
            Some(stop) if stop.load(Ordering::SeqCst) => Err(RuntimeError::Interrupted),
            _ => Ok(()),
        }
    }

    async fn store(&self, event: Event) -> Result<Event, RuntimeError> {
        self.check_stop()?;
        self.shared.live.lock().await.append(&self.shared.service, event).await
    }

    /// Counts one model call against the invocation's limit.
    pub fn count_llm_call(&self) -> Result<(), RuntimeError> {
        let calls = self.shared.llm_calls.fetch_add(1, Ordering::Relaxed) + 1;
        if calls > self.shared.max_llm_calls {
            return Err(RuntimeError::LlmCallLimit(self.shared.max_llm_calls));
        }
        Ok(())
    }
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

/// Checks an agent's name and that its sub-agents' names are distinct.
pub fn check_sub_agent_names(name: &str, sub_agents: &[Arc<dyn Agent>]) -> Result<(), BuildError> {
    validate_agent_name(name)?;
    let mut seen = HashSet::new();
    for agent in sub_agents {
        if !seen.insert(agent.name()) {
            return Err(BuildError::DuplicateSubAgent { agent: name.to_owned(), sub_agent: agent.name().to_owned() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_follow_the_reference() {
        assert!(validate_agent_name("story_agent").is_ok());
        assert!(validate_agent_name("_x1").is_ok());
        assert_eq!(validate_agent_name("user"), Err(BuildError::ReservedName));
        for bad in ["", "1abc", "my-agent", "a b"] {
            assert!(matches!(validate_agent_name(bad), Err(BuildError::InvalidName(_))), "{bad}");
        }
    }
}
