//! [`AppState`]: what the router shares with every handler and middleware. Middlewares take only
//! the part they need (`State<Arc<Tokens>>`, `State<Arc<Metrics>>`) through `FromRef`.

use std::sync::Arc;

use agentstate::SessionService;
use axum::extract::FromRef;

use crate::auth::Tokens;
use crate::expiry::Sweep;
use crate::limits::Limits;
use crate::metrics::Metrics;

/// The service behind the API and how the API is served.
///
/// ```
/// use agentstate::SessionService;
/// use agentstate_server::{AppState, Limits, app};
///
/// let state = AppState::new(SessionService::in_memory())
///     .with_limits(Limits { max_key_chars: 64, ..Limits::default() });
/// let router = app(state);
/// # let _ = router;
/// ```
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// What [`AppState`] shares: one reference count for a handler's copy of the state rather than
/// one for each part (axum clones the state for every extractor and middleware of a request).
#[derive(Clone)]
struct Shared {
    service: SessionService,
    memory: agentstate::memory::MemoryService,
    limits: Limits,
    tokens: Arc<Tokens>,
    metrics: Arc<Metrics>,
    sweep: Sweep,
    ui_secret: Arc<str>,
    running: Arc<crate::running::Running>,
    #[cfg(feature = "agents")]
    runners: std::collections::BTreeMap<String, agentstate_runtime::Runner>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("AppState");
        debug.field("limits", &self.0.limits).field("tokens", &self.0.tokens.len());
        #[cfg(feature = "agents")]
        debug.field("apps", &self.0.runners.keys().collect::<Vec<_>>());
        debug.finish_non_exhaustive()
    }
}

impl AppState {
    /// Serves `service` with the default limits, no access tokens and no agents.
    pub fn new(service: SessionService) -> Self {
        Self(Arc::new(Shared {
            memory: agentstate::memory::MemoryService::new(service.clone()),
            service,
            limits: Limits::default(),
            tokens: Arc::default(),
            metrics: Arc::default(),
            sweep: Sweep::default(),
            ui_secret: uuid::Uuid::new_v4().simple().to_string().into(),
            running: Arc::default(),
            #[cfg(feature = "agents")]
            runners: std::collections::BTreeMap::new(),
        }))
    }

    /// How often the background sweep runs (the service's policies say what it removes).
    #[must_use]
    pub fn with_sweep(mut self, sweep: Sweep) -> Self {
        Arc::make_mut(&mut self.0).sweep = sweep;
        self
    }

    /// The long-running operations going in the background (Memory Bank's generation).
    pub(crate) fn running(&self) -> &crate::running::Running {
        &self.0.running
    }

    /// The secret the inspector's forms carry (against requests forged by other sites).
    pub(crate) fn ui_secret(&self) -> &str {
        &self.0.ui_secret
    }

    /// The background sweep of expired sessions and old events, to spawn beside the server (it
    /// runs until dropped; it returns at once when the sweep is off).
    pub fn sweeper(&self) -> impl Future<Output = ()> + Send + 'static {
        crate::expiry::sweeper(self.0.service.clone(), self.0.sweep, Arc::clone(&self.0.metrics))
    }

    /// Request limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        Arc::make_mut(&mut self.0).limits = limits;
        self
    }

    /// Access tokens: with any configured, every route but the probes needs one.
    #[must_use]
    pub fn with_tokens(mut self, tokens: Tokens) -> Self {
        Arc::make_mut(&mut self.0).tokens = Arc::new(tokens);
        self
    }

    /// Serves `agent` as app `app_name` on `/run` and `/run_sse`, over this state's service (and
    /// its memory, when the store keeps memories: `load_memory` and `preload_memory` search it).
    /// An app served already is replaced.
    #[cfg(feature = "agents")]
    #[must_use]
    pub fn with_agent(
        mut self,
        app_name: impl Into<String>,
        agent: impl Into<Arc<dyn agentstate_runtime::agent::Agent>>,
    ) -> Self {
        let app_name = app_name.into();
        let mut runner = agentstate_runtime::Runner::new(&app_name, agent, self.0.service.clone());
        if self.0.memory.is_supported() {
            runner = runner.memory(self.0.memory.clone());
        }
        Arc::make_mut(&mut self.0).runners.insert(app_name, runner);
        self
    }

    /// How runs of `app_name`'s sessions take turns (`None`: every app served now).
    #[cfg(feature = "agents")]
    #[must_use]
    pub fn with_run_concurrency(
        mut self,
        app_name: Option<&str>,
        concurrency: &agentstate_runtime::RunConcurrency,
    ) -> Self {
        for (app, runner) in &mut Arc::make_mut(&mut self.0).runners {
            if app_name.is_none_or(|name| name == app) {
                *runner = runner.clone().concurrency(concurrency.clone());
            }
        }
        self
    }

    /// Whether an agent is served as `app_name`.
    #[cfg(feature = "agents")]
    pub fn serves(&self, app_name: &str) -> bool {
        self.0.runners.contains_key(app_name)
    }

    /// The apps served on `/run`, sorted.
    #[cfg(feature = "agents")]
    pub(crate) fn runners(&self) -> &std::collections::BTreeMap<String, agentstate_runtime::Runner> {
        &self.0.runners
    }

    /// Embedding providers for memory's search by meaning, per app (see
    /// [`agentstate::memory::embed`]); agents served already search with them too.
    #[must_use]
    pub fn with_embedders(self, embedders: agentstate::memory::Embedders) -> Self {
        let memory = self.0.memory.clone().with_embedders(embedders);
        self.with_memory(memory)
    }

    /// The models that write Memory Bank's memories from conversations, per app (see
    /// [`agentstate::memory::generate`]).
    #[must_use]
    pub fn with_fact_models(self, models: agentstate::memory::FactModels) -> Self {
        let memory = self.0.memory.clone().with_fact_models(models);
        self.with_memory(memory)
    }

    /// Default times to live of memories written without one, per app; agents served already
    /// write with them too.
    #[must_use]
    pub fn with_memory_ttls(self, ttls: agentstate::memory::MemoryTtls) -> Self {
        let memory = self.0.memory.clone().with_ttls(ttls);
        self.with_memory(memory)
    }

    /// `memory` for the routes, the inspector and the agents served.
    fn with_memory(mut self, memory: agentstate::memory::MemoryService) -> Self {
        let shared = Arc::make_mut(&mut self.0);
        shared.memory = memory;
        #[cfg(feature = "agents")]
        if shared.memory.is_supported() {
            for runner in shared.runners.values_mut() {
                *runner = runner.clone().memory(shared.memory.clone());
            }
        }
        self
    }

    /// The memory service (over the session service's store, with the embedders).
    pub fn memory(&self) -> &agentstate::memory::MemoryService {
        &self.0.memory
    }

    /// The artifact service (over the session service's store, at most
    /// [`Limits::max_artifact_bytes`] per save).
    pub fn artifacts(&self) -> agentstate::artifact::ArtifactService {
        agentstate::artifact::ArtifactService::new(self.0.service.clone())
            .with_max_bytes(self.0.limits.max_artifact_bytes)
    }

    /// The session service.
    pub fn service(&self) -> &SessionService {
        &self.0.service
    }

    /// The request limits.
    pub fn limits(&self) -> Limits {
        self.0.limits
    }

    /// The access tokens.
    pub fn tokens(&self) -> &Tokens {
        &self.0.tokens
    }

    /// The counters served at `/metrics`.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.0.metrics
    }
}

impl FromRef<AppState> for Arc<Tokens> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.0.tokens)
    }
}

impl FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.0.metrics)
    }
}

impl FromRef<AppState> for Limits {
    fn from_ref(state: &AppState) -> Self {
        state.0.limits
    }
}

impl FromRef<AppState> for SessionService {
    fn from_ref(state: &AppState) -> Self {
        state.0.service.clone()
    }
}
