//! The [`Runner`]: runs an agent for one user turn and streams its events.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::task::{Context, Poll};

use agentstate::memory::{MemoryOwner, MemoryService};
use agentstate::{Content, CreateSession, Event, GetSessionConfig, Map, SessionKey, SessionService, Value};
use futures_core::Stream;
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::agent::{Agent, History, InvocationContext, InvocationSetup, agent_to_run};
use crate::compaction::EventsCompactionConfig;
use crate::concurrency::{DoubleTexting, RunConcurrency, RunLease, Turns};
use crate::context::MemoryAccess;
use crate::error::RuntimeError;

/// The reference's default cap on model calls per invocation.
pub const DEFAULT_MAX_LLM_CALLS: usize = 500;

/// Runs an agent over sessions of one app.
///
/// Each [`run`](Self::run) is one invocation, started with the root agent or, when an earlier turn
/// handed the conversation to one of its [`LlmAgent`](crate::LlmAgent)s, with that agent (see
/// [`Agent::is_transfer_target`]). The session is loaded (only the history the agent
/// reads, see [`Agent::history`]), the user's message is appended (stored, not yielded, as in the
/// reference), then the agent runs. Every non-partial event is appended through the
/// [`SessionService`] before the stream yields it.
/// `temp:` keys written during the invocation are visible to every agent of it and gone in the
/// next one.
///
/// Two runs of one session at once never interleave: each takes the session's run lease first
/// (see [`RunConcurrency`]), shared by every server over the store, and what the second does
/// while the first goes is the [`DoubleTexting`] policy: wait its turn (the default), be refused,
/// or interrupt the first. Writers outside runs are still checked on every append: a run whose
/// session changed under it fails with the stale-session
/// [`Conflict`](agentstate::Error::Conflict) (what it stored before stays).
///
/// ```
/// use std::sync::Arc;
/// use agentstate::{Content, CreateSession, GetSessionConfig, SessionService};
/// use agentstate_runtime::model::LlmResponse;
/// use agentstate_runtime::testing::ScriptedModel;
/// use agentstate_runtime::{LlmAgent, Runner};
/// use futures_util::TryStreamExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> anyhow::Result<()> {
/// let service = SessionService::in_memory();
/// let model = ScriptedModel::new("scripted").reply(LlmResponse::text("Hello there!"));
/// let agent = LlmAgent::builder("Greeter", model)
///     .instruction("Generate a short, friendly greeting.")
///     .output_key("last_greeting")
///     .build()?;
/// let runner = Runner::new("app", agent, service.clone());
///
/// let session = service.create_session(CreateSession::new("app", "u").id("s1")).await?;
/// let events: Vec<_> = runner.run("u", "s1", Content::text("user", "Hello")).try_collect().await?;
/// assert_eq!(events.len(), 1); // the greeting (the user's message is stored, not echoed)
///
/// let session = service.get_session(session.key(), GetSessionConfig::default()).await?.unwrap();
/// assert_eq!(session.state().get("last_greeting"), Some(&serde_json::json!("Hello there!")));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runner {
    app_name: String,
    agent: Arc<dyn Agent>,
    service: SessionService,
    auto_create_session: bool,
    history: Option<History>,
    max_llm_calls: usize,
    memory: Option<MemoryService>,
    artifacts: Option<agentstate::artifact::ArtifactService>,
    add_to_memory: bool,
    concurrency: RunConcurrency,
    turns: Arc<Turns>,
    compaction: Option<Arc<EventsCompactionConfig>>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").field("app_name", &self.app_name).field("agent", &self.agent.name()).finish()
    }
}

/// One run: who, which session, what they said.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The user.
    pub user_id: String,
    /// The session.
    pub session_id: String,
    /// The user's message; `None` runs the agent without one.
    pub new_message: Option<Content>,
    /// State to set on the user's event (session, `user:`, `app:` or `temp:` keys).
    pub state_delta: Map<String, Value>,
    /// Emit partial events as the model streams.
    pub streaming: bool,
}

impl RunRequest {
    /// A run with a message.
    pub fn new(user_id: impl Into<String>, session_id: impl Into<String>, new_message: Content) -> Self {
        Self {
            user_id: user_id.into(),
            session_id: session_id.into(),
            new_message: Some(new_message),
            ..Self::default()
        }
    }

    /// Streams partial events.
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Sets a key on the user's event.
    pub fn state(mut self, key: impl Into<String>, value: Value) -> Self {
        self.state_delta.insert(key.into(), value);
        self
    }
}

impl Runner {
    /// A runner of `agent` for `app_name`, storing sessions in `service`.
    pub fn new(app_name: impl Into<String>, agent: impl Into<Arc<dyn Agent>>, service: SessionService) -> Self {
        Self {
            app_name: app_name.into(),
            agent: agent.into(),
            service,
            auto_create_session: false,
            history: None,
            max_llm_calls: DEFAULT_MAX_LLM_CALLS,
            memory: None,
            artifacts: None,
            add_to_memory: false,
            concurrency: RunConcurrency::default(),
            turns: Arc::default(),
            compaction: None,
        }
    }

    /// Compacts the app's conversations as `config` says (ADK's
    /// `App(events_compaction_config=...)`; see [`compaction`](crate::compaction)): summaries are
    /// written after invocations (and, with a token threshold, before model calls), and each run
    /// loads only what the model is shown of the history.
    pub fn compaction(mut self, config: EventsCompactionConfig) -> Self {
        self.compaction = Some(Arc::new(config));
        self
    }

    /// How runs of one session take turns (default: [`DoubleTexting::Enqueue`], 30 s leases).
    pub fn concurrency(mut self, concurrency: RunConcurrency) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// What a run does while another run of its session goes.
    pub fn double_texting(mut self, policy: DoubleTexting) -> Self {
        self.concurrency.policy = policy;
        self
    }

    /// How runs of one session take turns.
    pub fn run_concurrency(&self) -> &RunConcurrency {
        &self.concurrency
    }

    /// Long-term memory for the agents: `load_memory`, `preload_memory` and
    /// [`ToolContext::search_memory`](crate::CallbackContext::search_memory) search it for the
    /// session's user.
    pub fn memory(mut self, memory: MemoryService) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Artifacts for the agents: tools and callbacks save, load and list them through their
    /// context ([`CallbackContext::save_artifact`](crate::CallbackContext::save_artifact)), and
    /// instructions read them (`{artifact.notes.txt}`).
    pub fn artifacts(mut self, artifacts: agentstate::artifact::ArtifactService) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    /// After each run that ends well, adds the events it stored to memory (ADK's
    /// `add_events_to_memory` for the session): what the user and the agents said becomes
    /// searchable in later sessions. Needs [`memory`](Self::memory).
    pub fn add_runs_to_memory(mut self, yes: bool) -> Self {
        self.add_to_memory = yes;
        self
    }

    /// Creates a session that does not exist yet instead of failing with "Session not found".
    pub fn auto_create_session(mut self, yes: bool) -> Self {
        self.auto_create_session = yes;
        self
    }

    /// Loads this much history whatever the agent says it needs.
    pub fn history(mut self, history: History) -> Self {
        self.history = Some(history);
        self
    }

    /// Caps model calls per invocation (default 500, as the reference).
    pub fn max_llm_calls(mut self, limit: usize) -> Self {
        self.max_llm_calls = limit;
        self
    }

    /// The app.
    pub fn app_name(&self) -> &str {
        &self.app_name
    }

    /// The agent.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// The session service.
    pub fn service(&self) -> &SessionService {
        &self.service
    }

    /// Rewinds the session to before invocation `before_invocation_id`, as ADK for Python's
    /// `Runner.rewind_async`: see [`SessionService::rewind`]. The rewound events stay in the
    /// history but are no longer shown to the model, nor decide which agent answers next.
    /// Returns the rewind event.
    ///
    /// # Errors
    /// [`RuntimeError::SessionNotFound`] for a missing session; the service's error for an
    /// unknown invocation.
    pub async fn rewind(
        &self,
        user_id: &str,
        session_id: &str,
        before_invocation_id: &str,
    ) -> Result<Event, RuntimeError> {
        let key = SessionKey::new(&self.app_name, user_id, session_id)?;
        let mut session = self
            .service
            .get_session(&key, GetSessionConfig::recent(0))
            .await?
            .ok_or_else(|| RuntimeError::SessionNotFound(session_id.to_owned()))?;
        Ok(self.service.rewind(&mut session, before_invocation_id).await?)
    }

    /// Runs the agent on the user's message.
    pub fn run(&self, user_id: &str, session_id: &str, new_message: Content) -> EventStream {
        self.run_request(RunRequest::new(user_id, session_id, new_message))
    }

    /// Runs the agent as `request` says. The run waits for its turn (or is refused, by the
    /// policy) inside the stream: see [`start`](Self::start) to learn that before streaming.
    pub fn run_request(&self, request: RunRequest) -> EventStream {
        let runner = self.clone();
        EventStream::driven(|events| async move {
            let turn = runner.take_turn(&request).await?;
            runner.hold(turn, request, events).await
        })
    }

    /// Takes the session's turn (waiting, refused or interrupting the running one, as the
    /// [`DoubleTexting`] policy says), then runs as [`run_request`](Self::run_request) does.
    ///
    /// # Errors
    /// [`RuntimeError::SessionBusy`] or [`RuntimeError::RunNotQueued`] before anything is
    /// stored; an invalid id.
    pub async fn start(&self, request: RunRequest) -> Result<EventStream, RuntimeError> {
        let turn = self.take_turn(&request).await?;
        let runner = self.clone();
        Ok(EventStream::driven(|events| runner.hold(turn, request, events)))
    }

    async fn take_turn(&self, request: &RunRequest) -> Result<(RunLease, SessionKey, String), RuntimeError> {
        let key = SessionKey::new(&self.app_name, &request.user_id, &request.session_id)?;
        let invocation_id = format!("e-{}", uuid::Uuid::new_v4());
        let lease = RunLease::take(&self.service, &self.turns, &key, &invocation_id, &self.concurrency).await?;
        Ok((lease, key, invocation_id))
    }

    /// The run, holding its turn; gives the turn back when it ends.
    async fn hold(
        self,
        (lease, key, invocation_id): (RunLease, SessionKey, String),
        request: RunRequest,
        events: mpsc::Sender<Event>,
    ) -> Result<(), RuntimeError> {
        let stop = lease.stop_flag();
        let result = self.invoke(request, key, invocation_id, events, stop).await;
        lease.release().await;
        result
    }

    /// One invocation, holding the session's lease.
    async fn invoke(
        self,
        request: RunRequest,
        key: SessionKey,
        invocation_id: String,
        events: mpsc::Sender<Event>,
        stop: Arc<AtomicBool>,
    ) -> Result<(), RuntimeError> {
        let history = self.history.unwrap_or_else(|| self.agent.history());
        let config = match &self.compaction {
            // The compactor reads the invocations since the last summary: the view keeps them.
            Some(compaction) => GetSessionConfig::compacted(compaction.overlap()),
            None => GetSessionConfig { num_recent_events: history.recent(), ..GetSessionConfig::default() },
        };
        let session = match self.service.get_session(&key, config).await? {
            Some(session) => session,
            None if self.auto_create_session => {
                let create = CreateSession::new(&self.app_name, &request.user_id).id(&request.session_id);
                self.service.create_session(create).await?
            }
            None => return Err(RuntimeError::SessionNotFound(request.session_id)),
        };
        let agent = agent_to_run(&self.agent, session.events().shared());
        let memory = match &self.memory {
            Some(service) => {
                let owner = MemoryOwner::new(&self.app_name, &request.user_id)?;
                Some(MemoryAccess { service: service.clone(), owner })
            }
            None => None,
        };
        tracing::debug!(%invocation_id, agent = agent.name(), session = %key.session_id(), "invocation");
        let ctx = InvocationContext::new(InvocationSetup {
            invocation_id,
            service: self.service,
            session,
            events,
            root: Arc::clone(&self.agent),
            streaming: request.streaming,
            max_llm_calls: self.max_llm_calls,
            memory: memory.clone(),
            artifacts: self.artifacts.clone().map(|service| crate::context::ArtifactAccess {
                service,
                app: key.app_name().to_owned(),
                user: key.user_id().to_owned(),
                session: key.session_id().to_owned(),
            }),
            stop: Some(stop),
            compaction: self.compaction.clone(),
        });
        if request.new_message.is_some() || !request.state_delta.is_empty() {
            let mut event = Event::new(ctx.invocation_id()).author("user");
            event.content = request.new_message;
            event.actions.state_delta = request.state_delta;
            ctx.append_only(event).await?;
        }
        match crate::telemetry::invoke(&*agent, &ctx).await {
            Err(RuntimeError::Interrupted) => {
                // A newer run asked this one to stop: what it stored stays, and its turn ends
                // with an event saying so (ADK's `interrupted`).
                let mut last = Event::new(ctx.invocation_id()).author(agent.name());
                last.turn_complete = Some(true);
                last.extra.insert("interrupted".into(), Value::Bool(true));
                ctx.emit_last(last).await?;
                return Ok(());
            }
            other => other?,
        }
        if let Some(compaction) = &self.compaction {
            crate::compaction::after_invocation(&ctx, compaction).await?;
        }
        if let (true, Some(memory)) = (self.add_to_memory, memory) {
            let run: Vec<Event> = ctx
                .events()
                .await
                .iter()
                .filter(|e| e.invocation_id == ctx.invocation_id())
                .map(|e| Event::clone(e))
                .collect();
            memory.service.add_events(&memory.owner, Some(key.session_id()), &run, &Default::default()).await?;
        }
        Ok(())
    }
}

type Driver = Pin<Box<dyn Future<Output = Result<(), RuntimeError>> + Send>>;

/// The events of one run, as they happen. Dropping it stops the run.
///
/// Ends with an `Err` item if the run failed; the events before it were stored.
pub struct EventStream {
    driver: Option<Driver>,
    events: mpsc::Receiver<Event>,
    error: Option<RuntimeError>,
}

impl EventStream {
    /// The stream of the events `drive` sends, driven as it is polled, in the span current now
    /// (a streamed answer is polled after its request's handler returned).
    fn driven<F>(drive: impl FnOnce(mpsc::Sender<Event>) -> F) -> Self
    where
        F: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        let (sender, receiver) = mpsc::channel(16);
        let driver = drive(sender).instrument(tracing::Span::current());
        Self { driver: Some(Box::pin(driver)), events: receiver, error: None }
    }
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").field("running", &self.driver.is_some()).finish_non_exhaustive()
    }
}

impl Stream for EventStream {
    type Item = Result<Event, RuntimeError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Poll::Ready(Some(event)) = this.events.poll_recv(cx) {
                return Poll::Ready(Some(Ok(event)));
            }
            let Some(driver) = this.driver.as_mut() else {
                // Finished: what is still queued, then the error if there was one.
                return Poll::Ready(match this.events.try_recv() {
                    Ok(event) => Some(Ok(event)),
                    Err(_) => this.error.take().map(Err),
                });
            };
            match driver.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(result) => {
                    this.driver = None;
                    this.error = result.err();
                }
            }
        }
    }
}
