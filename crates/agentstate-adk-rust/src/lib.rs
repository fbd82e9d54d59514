//! ADK-Rust's [`SessionService`](adk_session::SessionService) (adk-session 2.3) over every
//! agentstate backend. An ADK-Rust agent switches to agentstate by changing the line that builds
//! its session service:
//!
//! ```no_run
//! use adk_session::{CreateRequest, SessionService};
//! use agentstate_adk_rust::AdkSessionService;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Was: let service = adk_session::InMemorySessionService::new();
//! let service = AdkSessionService::open("sqlite://sessions.db").await?;
//! let session = service
//!     .create(CreateRequest {
//!         app_name: "my_app".into(),
//!         user_id: "alice".into(),
//!         session_id: None,
//!         state: Default::default(),
//!     })
//!     .await?;
//! println!("{}", session.id());
//! # Ok(()) }
//! ```
//!
//! What changes for the better: scoped merges are atomic per key (concurrent writers of one
//! `user:` key lose nothing), appends are checked by storage, history, lifecycle and encryption
//! come with every backend, and event times are kept to the nanosecond. Events are stored in the
//! form ADK for Python, ADK for TypeScript and agentstate's runtime read (see [`convert`]).

use std::collections::HashMap;
use std::sync::Arc;

use adk_core::identity::{AppName, SessionId, UserId};
use adk_core::{AdkError, ErrorCategory, ErrorComponent};
use adk_session::{
    AppendEventRequest, CreateRequest, DeleteRequest, Event as RustEvent, Events, GetRequest, ListRequest, Session,
    SessionService as AdkService, State,
};
use agentstate::{CreateSession, ErrorKind, GetSessionConfig, ListSessions, SessionKey, SessionService, Value};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use seen::Seen;

pub mod convert;
mod seen;

/// What [`AdkSessionService::without_llm_requests`] leaves out of `provider_metadata`.
const TELEMETRY_COPIES: [&str; 2] = ["gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response"];

/// ADK-Rust's session service over an agentstate [`SessionService`]: any backend, any stack
/// (encryption, policies) the service was built with.
///
/// ADK-Rust's `append_event`, `rewind` and `rewind_steps` name a session by its id alone. It is
/// found in every app of the store; on a store that cannot list its apps (the managed service)
/// among the sessions this service created, read, listed or appended to (the newest 4096), as
/// ADK-Rust's own Agent Engine client finds it.
#[derive(Clone)]
pub struct AdkSessionService {
    service: SessionService,
    /// On a store that cannot list its apps: the sessions seen, to find bare ids among.
    seen: Option<Arc<Seen>>,
    keep_llm_requests: bool,
}

impl std::fmt::Debug for AdkSessionService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdkSessionService").finish_non_exhaustive()
    }
}

impl AdkSessionService {
    /// Over `service`.
    pub fn new(service: SessionService) -> Self {
        let seen = service.capabilities().admin.is_none().then(Arc::default);
        Self { service, seen, keep_llm_requests: true }
    }

    /// Stores events without the copies of the model's request that ADK-Rust's `LlmAgent`
    /// puts on each model event: `llm_request` and, in `provider_metadata`,
    /// `gcp.vertex.agent.llm_request` and `gcp.vertex.agent.llm_response` (telemetry). ADK-Rust's
    /// SQL services store none of them. By default the adapter keeps every field; but each of
    /// those requests carries the whole conversation so far, so a session's stored size, and the
    /// time ADK-Rust's runner takes to read it every turn, grow with the square of its length.
    /// Everything else is kept.
    #[must_use]
    pub fn without_llm_requests(mut self) -> Self {
        self.keep_llm_requests = false;
        self
    }

    /// Over the backend `url` names, as `agentstate serve --db` takes it (SQLite, PostgreSQL,
    /// MySQL/MariaDB, Redis and Redis Cluster, the Agent Engine Sessions API), with the same
    /// errors for a bad URL.
    ///
    /// # Errors
    /// When the URL is not a backend's or the backend cannot be opened.
    pub async fn open(url: &str) -> Result<Self, agentstate_backends::OpenError> {
        Ok(Self::new(SessionService::shared(agentstate_backends::open(url).await?)))
    }

    /// The agentstate service underneath (for history, lifecycle, export…).
    pub fn service(&self) -> &SessionService {
        &self.service
    }

    /// The one session called `session_id`, in whichever app and for whichever user: ADK-Rust's
    /// bare-id addressing. Refused when none or several have that id.
    async fn locate(&self, session_id: &str) -> adk_core::Result<SessionKey> {
        let checked = SessionId::try_from(session_id).map_err(AdkError::from)?;
        let mut found = Vec::new();
        match &self.seen {
            None => {
                for app in self.service.list_apps().await.map_err(error)? {
                    found.extend(self.service.find_sessions(&app, checked.as_ref()).await.map_err(error)?);
                }
            }
            Some(seen) => {
                let candidates = seen.called(checked.as_ref());
                if candidates.is_empty() {
                    return Err(invalid(format!(
                        "this backend cannot list its apps, and this service has not created, read or listed a \
                         session '{session_id}': append with append_event_for_identity"
                    )));
                }
                for key in candidates {
                    match self.service.get_session(&key, GetSessionConfig::recent(0)).await.map_err(error)? {
                        Some(_) => found.push(key),
                        None => seen.forget(&key),
                    }
                }
            }
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(AdkError::not_found(
                ErrorComponent::Session,
                "session.not_found",
                format!("session '{session_id}' was not found"),
            )),
            _ => {
                let owners: Vec<String> = found.iter().map(|k| format!("{}/{}", k.app_name(), k.user_id())).collect();
                Err(invalid(format!(
                    "session id '{session_id}' is used by {} sessions ({}): append with \
                     append_event_for_identity to say which",
                    found.len(),
                    owners.join(", ")
                )))
            }
        }
    }

    /// Notes that the session `key` exists, on a store that cannot list its apps.
    fn remember(&self, key: &SessionKey) {
        if let Some(seen) = &self.seen {
            seen.remember(key);
        }
    }

    /// The session with all its events, or ADK-Rust's not-found error.
    async fn load(&self, key: &SessionKey) -> adk_core::Result<agentstate::Session> {
        self.service.get_session(key, GetSessionConfig::default()).await.map_err(error)?.ok_or_else(|| not_found(key))
    }

    async fn append(&self, key: &SessionKey, mut event: RustEvent) -> adk_core::Result<()> {
        if !self.keep_llm_requests {
            event.llm_request = None;
            event.provider_metadata.retain(|k, _| !TELEMETRY_COPIES.contains(&k.as_str()));
        }
        let event = convert::to_agentstate(&event).map_err(|e| invalid(format!("the event cannot be stored: {e}")))?;
        self.service.append_now(key, event).await.map_err(error)?;
        Ok(())
    }
}

/// A session key from ADK-Rust's strings, checked by ADK-Rust's identity rules and then
/// agentstate's.
fn key(app_name: &str, user_id: &str, session_id: &str) -> adk_core::Result<SessionKey> {
    let app = AppName::try_from(app_name).map_err(AdkError::from)?;
    let user = UserId::try_from(user_id).map_err(AdkError::from)?;
    let session = SessionId::try_from(session_id).map_err(AdkError::from)?;
    SessionKey::new(app.as_ref(), user.as_ref(), session.as_ref()).map_err(error)
}

#[async_trait]
impl AdkService for AdkSessionService {
    async fn create(&self, req: CreateRequest) -> adk_core::Result<Box<dyn Session>> {
        let (app, user, id) = (req.try_app_name()?, req.try_user_id()?, req.try_session_id()?);
        let mut request = CreateSession::new(app.as_ref(), user.as_ref()).with_state(req.state.into_iter().collect());
        if let Some(id) = id {
            request = request.id(id.as_ref());
        }
        let session = self.service.create_session(request).await.map_err(error)?;
        self.remember(session.key());
        Ok(Box::new(AdkSession::from(session)?))
    }

    async fn get(&self, req: GetRequest) -> adk_core::Result<Box<dyn Session>> {
        let key = key(&req.app_name, &req.user_id, &req.session_id)?;
        let after = req.after.map(convert::timestamp);
        let config = GetSessionConfig {
            num_recent_events: req.num_recent_events,
            after_timestamp: after,
            ..GetSessionConfig::default()
        };
        let mut session =
            self.service.get_session(&key, config).await.map_err(error)?.ok_or_else(|| not_found(&key))?;
        // A window counts stored events; ADK-Rust counts live ones. After a rewind in it, the
        // window is taken again from the live events of the whole range.
        let rewound = |e: &agentstate::Event| {
            e.rewind_after_event_id.is_some() || e.actions.rewind_before_invocation_id.is_some()
        };
        if req.num_recent_events.is_some() && session.events().iter().any(rewound) {
            let whole =
                GetSessionConfig { num_recent_events: None, after_timestamp: after, ..GetSessionConfig::default() };
            session = self.service.get_session(&key, whole).await.map_err(error)?.ok_or_else(|| not_found(&key))?;
        }
        self.remember(&key);
        Ok(Box::new(AdkSession::from(session)?.newest(req.num_recent_events)))
    }

    async fn list(&self, req: ListRequest) -> adk_core::Result<Vec<Box<dyn Session>>> {
        let (app, user) = (req.try_app_name()?, req.try_user_id()?);
        let request = ListSessions {
            page_size: req.limit.filter(|&n| n > 0),
            offset: req.offset.unwrap_or(0),
            ..ListSessions::user(app.as_ref(), user.as_ref())
        };
        if req.limit == Some(0) {
            return Ok(Vec::new());
        }
        let page = self.service.list_sessions(request).await.map_err(error)?;
        page.sessions.iter().for_each(|s| self.remember(s.key()));
        page.sessions.into_iter().map(|s| AdkSession::from(s).map(|s| Box::new(s) as Box<dyn Session>)).collect()
    }

    async fn delete(&self, req: DeleteRequest) -> adk_core::Result<()> {
        let key = key(&req.app_name, &req.user_id, &req.session_id)?;
        self.service.delete_session(&key).await.map_err(error)
    }

    async fn append_event(&self, session_id: &str, event: RustEvent) -> adk_core::Result<()> {
        let key = self.locate(session_id).await?;
        self.append(&key, event).await
    }

    async fn append_event_for_identity(&self, req: AppendEventRequest) -> adk_core::Result<()> {
        let identity = &req.identity;
        let key = key(identity.app_name.as_ref(), identity.user_id.as_ref(), identity.session_id.as_ref())?;
        self.append(&key, req.event).await?;
        self.remember(&key);
        Ok(())
    }

    async fn delete_all_sessions(&self, app_name: &str, user_id: &str) -> adk_core::Result<()> {
        let (app, user) = (AppName::try_from(app_name)?, UserId::try_from(user_id)?);
        match self.service.erase_user(app.as_ref(), user.as_ref()).await {
            Ok(_) => Ok(()),
            // A store without erasure: the sessions one by one.
            Err(e) if e.kind() == ErrorKind::Unsupported => {
                let page = self.service.list_sessions(ListSessions::user(app.as_ref(), user.as_ref()));
                for session in page.await.map_err(error)?.sessions {
                    self.service.delete_session(session.key()).await.map_err(error)?;
                }
                Ok(())
            }
            Err(e) => Err(error(e)),
        }
    }

    async fn rewind(&self, session_id: &str, target_event_id: &str) -> adk_core::Result<Box<dyn Session>> {
        let key = self.locate(session_id).await?;
        let mut session = self.load(&key).await?;
        if !session.events().live().iter().any(|e| e.id == target_event_id) {
            return Err(invalid(format!("session {session_id} has no event {target_event_id}")));
        }
        self.service.rewind_to_event(&mut session, target_event_id).await.map_err(error)?;
        Ok(Box::new(AdkSession::from(self.load(&key).await?)?))
    }

    async fn rewind_steps(&self, session_id: &str, steps: usize) -> adk_core::Result<Box<dyn Session>> {
        let key = self.locate(session_id).await?;
        let mut session = self.load(&key).await?;
        let live: Vec<(String, String)> =
            session.events().live().iter().map(|e| (e.id.clone(), e.invocation_id.clone())).collect();
        if steps > live.len() {
            return Err(invalid(format!("session {session_id} has {} events; cannot rewind {steps}", live.len())));
        }
        if steps > 0 {
            match live.len() - steps {
                // All of them: back to before the first invocation (the state the session was
                // created with).
                0 => self.service.rewind(&mut session, &live[0].1).await.map_err(error)?,
                kept => self.service.rewind_to_event(&mut session, &live[kept - 1].0).await.map_err(error)?,
            };
            session = self.load(&key).await?;
        }
        Ok(Box::new(AdkSession::from(session)?))
    }

    async fn health_check(&self) -> adk_core::Result<()> {
        let probe = SessionKey::new("health-check", "health-check", "health-check").map_err(error)?;
        self.service.get_session(&probe, GetSessionConfig::recent(0)).await.map(|_| ()).map_err(error)
    }
}

/// A session as ADK-Rust reads it: a snapshot, its live events converted (rewound events and
/// the rewinds themselves stay in agentstate's history, not in ADK-Rust's view).
struct AdkSession {
    id: String,
    app_name: String,
    user_id: String,
    state: StateMap,
    events: EventList,
    last_update_time: DateTime<Utc>,
}

impl AdkSession {
    /// The session's live events taken from it, each moved into ADK-Rust's form when no other
    /// handle shares it (a store's fresh read), copied when one does (the in-memory store's).
    fn from(mut session: agentstate::Session) -> adk_core::Result<Self> {
        let events = session
            .take_events()
            .into_live()
            .into_iter()
            .map(|event| {
                let id = event.id.clone();
                let event = Arc::try_unwrap(event).unwrap_or_else(|shared| (*shared).clone());
                convert::from_agentstate_owned(event).map_err(|e| {
                    AdkError::new(
                        ErrorComponent::Session,
                        ErrorCategory::Internal,
                        "session.event_unreadable",
                        format!("event {id} of session {} cannot be read: {e}", session.id()),
                    )
                })
            })
            .collect::<adk_core::Result<Vec<_>>>()?;
        Ok(Self {
            id: session.id().to_owned(),
            app_name: session.app_name().to_owned(),
            user_id: session.user_id().to_owned(),
            state: StateMap(session.state().all().iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            events: EventList(events),
            last_update_time: DateTime::<Utc>::from_timestamp_micros(session.last_update_micros()).unwrap_or_default(),
        })
    }
}

impl AdkSession {
    /// Only the `n` newest events, when a window asks for them.
    fn newest(mut self, n: Option<usize>) -> Self {
        if let Some(n) = n {
            let events = &mut self.events.0;
            events.drain(..events.len().saturating_sub(n));
        }
        self
    }
}

impl Session for AdkSession {
    fn id(&self) -> &str {
        &self.id
    }
    fn app_name(&self) -> &str {
        &self.app_name
    }
    fn user_id(&self) -> &str {
        &self.user_id
    }
    fn state(&self) -> &dyn State {
        &self.state
    }
    fn events(&self) -> &dyn Events {
        &self.events
    }
    fn last_update_time(&self) -> DateTime<Utc> {
        self.last_update_time
    }
}

struct StateMap(HashMap<String, Value>);

impl State for StateMap {
    fn get(&self, key: &str) -> Option<Value> {
        self.0.get(key).cloned()
    }
    fn set(&mut self, key: String, value: Value) {
        self.0.insert(key, value);
    }
    fn all(&self) -> HashMap<String, Value> {
        self.0.clone()
    }
}

struct EventList(Vec<RustEvent>);

impl Events for EventList {
    fn all(&self) -> Vec<RustEvent> {
        self.0.clone()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn at(&self, index: usize) -> Option<&RustEvent> {
        self.0.get(index)
    }
}

fn not_found(key: &SessionKey) -> AdkError {
    AdkError::not_found(
        ErrorComponent::Session,
        "session.not_found",
        format!(
            "session '{}' was not found for app '{}' and user '{}'",
            key.session_id(),
            key.app_name(),
            key.user_id()
        ),
    )
}

fn invalid(message: String) -> AdkError {
    AdkError::new(ErrorComponent::Session, ErrorCategory::InvalidInput, "session.invalid_input", message)
}

/// agentstate's error as ADK-Rust's: its kind as the category, its message as said, itself as
/// the source.
fn error(e: agentstate::Error) -> AdkError {
    let (category, code) = match e.kind() {
        ErrorKind::NotFound => (ErrorCategory::NotFound, "session.not_found"),
        ErrorKind::InvalidArgument => (ErrorCategory::InvalidInput, "session.invalid_input"),
        ErrorKind::AlreadyExists => (ErrorCategory::InvalidInput, "session.already_exists"),
        ErrorKind::Conflict => (ErrorCategory::InvalidInput, "session.conflict"),
        ErrorKind::Unsupported => (ErrorCategory::Unsupported, "session.unsupported"),
        ErrorKind::Backend if e.is_retryable() => (ErrorCategory::Unavailable, "session.backend_unavailable"),
        _ => (ErrorCategory::Internal, "session.backend"),
    };
    AdkError::new(ErrorComponent::Session, category, code, e.to_string()).with_source(e)
}
