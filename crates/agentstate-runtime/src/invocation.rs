//! One invocation (one user turn) and the [`Agent`] trait.
//!
//! An [`InvocationContext`] is shared by every agent of the invocation: the invocation id, the
//! session handle (its state includes this invocation's `temp:` keys), and where events go.
//! [`InvocationContext::emit`] appends a non-partial event through the session service *before*
//! passing it on, so whatever runs next (the same agent's next step, the next agent of a
//! sequence) sees its state delta; partial events are passed on and never stored.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentstate::{Event, Map, Session, SessionService, Value};
use async_trait::async_trait;
use tokio::sync::{Mutex, mpsc};

use crate::context::CallbackContext;
use crate::error::RuntimeError;
use crate::template::{Template, TemplateError};

/// An agent: something that, given the invocation, emits events.
///
/// Implement it for custom agents; [`LlmAgent`](crate::LlmAgent),
/// [`SequentialAgent`](crate::SequentialAgent) and [`ParallelAgent`](crate::ParallelAgent) are
/// the built-in ones.
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
    /// handed the conversation, hand it on, and the next turn resumes with it. [`LlmAgent`]s do;
    /// workflow agents do not (a sequence restarts from its root every turn).
    ///
    /// [`LlmAgent`]: crate::LlmAgent
    fn transfers(&self) -> bool {
        false
    }

    /// Whether, once handed the conversation, it may hand it back to its parent; when not, the
    /// next turn starts at the root again (the reference's `disallow_transfer_to_parent`).
    fn hands_back(&self) -> bool {
        self.transfers()
    }

    /// How much of the session's history it reads, so the runner loads no more than needed.
    fn history(&self) -> History {
        let mut need = History::Recent(0);
        for agent in self.sub_agents() {
            need = need.max(agent.history());
        }
        need
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
/// otherwise `root`. Looks at the loaded history only.
pub(crate) fn agent_to_run(root: &Arc<dyn Agent>, events: &[Arc<Event>]) -> Arc<dyn Agent> {
    for event in events.iter().rev() {
        if event.author == root.name() {
            break;
        }
        let Some(path) = path_to(root, &event.author) else { continue };
        if path.iter().all(|agent| agent.transfers() && agent.hands_back()) {
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
    service: Arc<dyn SessionService>,
    live: Mutex<Live>,
    events: mpsc::Sender<Event>,
    root: Arc<dyn Agent>,
    streaming: bool,
    llm_calls: AtomicUsize,
    max_llm_calls: usize,
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

    async fn append(&mut self, service: &dyn SessionService, event: Event) -> Result<Event, RuntimeError> {
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
    pub(crate) service: Arc<dyn SessionService>,
    pub(crate) session: Session,
    pub(crate) events: mpsc::Sender<Event>,
    pub(crate) root: Arc<dyn Agent>,
    pub(crate) streaming: bool,
    pub(crate) max_llm_calls: usize,
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

    /// A callback context of `agent` over the live state.
    pub async fn callback_context(&self, agent: &str) -> CallbackContext {
        CallbackContext::over(self.invocation_id(), agent, self.state().await)
    }

    /// Emits an event: a non-partial one is appended to the session first (its state delta
    /// applied, `temp:` keys kept for the rest of the invocation), then passed to the caller.
    /// Returns the event as stored. The invocation id and branch are filled in when empty.
    pub async fn emit(&self, mut event: Event) -> Result<Event, RuntimeError> {
        self.stamp(&mut event);
        let event = if event.is_partial() { event } else { self.store(event).await? };
        // A closed channel means the caller dropped the run; the run is being dropped with it.
        let _ = self.shared.events.send(event.clone()).await;
        Ok(event)
    }

    /// Appends an event without passing it on (the user's message: stored, not echoed back).
    pub(crate) async fn append_only(&self, mut event: Event) -> Result<Event, RuntimeError> {
        self.stamp(&mut event);
        self.store(event).await
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

    async fn store(&self, event: Event) -> Result<Event, RuntimeError> {
        self.shared.live.lock().await.append(&*self.shared.service, event).await
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

/// What an [`InstructionProvider`](crate::InstructionProvider) sees: the invocation, the agent
/// and the live state, read-only.
#[derive(Debug, Clone, Copy)]
pub struct ReadonlyContext<'a> {
    /// The invocation id.
    pub invocation_id: &'a str,
    /// The agent whose instruction is being built.
    pub agent_name: &'a str,
    /// The session.
    pub session: &'a Session,
}

impl ReadonlyContext<'_> {
    /// The live state (this invocation's `temp:` keys included).
    pub fn state(&self) -> &Map<String, Value> {
        self.session.state().all()
    }

    /// One value of it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.state().get(key)
    }
}

/// Fills `{key}` placeholders of `template` from the live state, as an agent's instruction
/// template is filled: for an [`InstructionProvider`](crate::InstructionProvider) that wants
/// injection after all.
pub fn inject_session_state(template: &str, ctx: &ReadonlyContext<'_>) -> Result<String, TemplateError> {
    Template::parse(template).render(ctx.state(), ctx.agent_name)
}
