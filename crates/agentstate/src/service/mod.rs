//! [`SessionService`]: what applications and agent runtimes call. It owns a store, the policies
//! and a clock; the behaviour shared by all backends is implemented here once.

mod commit;
mod history;
mod lifecycle;
mod policy;
mod requests;
mod shared;
mod window;

use std::fmt;
use std::sync::Arc;

use tracing::Instrument;

pub use commit::{Appended, MAX_INVOCATION_ID_CHARS};
pub use policy::Policies;
pub use requests::{
    BLIND_APPEND_ATTEMPTS, CreateSession, EventPage, GetSessionConfig, ListEvents, ListSessions, MAX_EVENT_PAGE,
    Retention, SessionPage,
};
pub use shared::{MAX_ORIGIN_CHARS, MAX_WRITES_PAGE, StateWrite};

use crate::clock::{self, Clock, SystemClock};
use crate::compaction::EventView;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::in_memory::InMemoryStore;
use crate::key::{SessionKey, validate_id};
use crate::page;
use crate::scope::ScopedState;
use crate::session::Session;
use crate::store::{
    Capabilities, CommitOutcome, EventCursor, EventForm, EventQuery, EventSelect, EventWindow, LeaseStore, ListCursor,
    ListQuery, LoadedSession, LocalLeases, NewSession, SessionRead, SessionStore, merge_scopes,
};
use crate::time::Timestamp;

/// Creates, loads, lists and deletes sessions, and appends events to them, on any store. Cheap
/// to clone: clones share the store.
///
/// ```
/// use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};
/// use serde_json::json;
///
/// # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
/// async fn run() -> agentstate::Result<()> {
///     let service = SessionService::in_memory();
///     let mut session = service
///         .create_session(CreateSession::new("app", "alice").state("user:login_count", json!(0)))
///         .await?;
///     service
///         .append_event(&mut session, Event::new("inv1").author("system").delta("user:login_count", json!(1)))
///         .await?;
///     let reloaded = service.get_session(session.key(), GetSessionConfig::default()).await?.unwrap();
///     assert_eq!(reloaded.state().get("user:login_count"), Some(&json!(1)));
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct SessionService {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn SessionStore>,
    policies: Policies,
    clock: Arc<dyn Clock>,
    /// Run leases for a store that keeps none: runs take turns within this process.
    local_leases: LocalLeases,
}

impl fmt::Debug for SessionService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionService")
            .field("capabilities", &self.capabilities())
            .field("policies", &self.inner.policies)
            .field("clock", &self.inner.clock)
            .finish_non_exhaustive()
    }
}

/// Builds a [`SessionService`] with policies or a clock of its own.
#[derive(Debug)]
#[must_use]
pub struct SessionServiceBuilder {
    store: Arc<dyn SessionStore>,
    policies: Policies,
    clock: Arc<dyn Clock>,
}

impl SessionServiceBuilder {
    /// Lifecycle policies: default times to live, refresh on append, retention.
    pub fn policies(mut self, policies: Policies) -> Self {
        self.policies = policies;
        self
    }

    /// The clock (the system's by default).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The service. The refresh-on-append policy needs a store with the
    /// [`LifecycleStore`](crate::store::LifecycleStore) capability (it moves expire times inside
    /// the append): without it, [`Error::Unsupported`].
    pub fn build(self) -> Result<SessionService> {
        if self.policies.refresh_ttl_on_append && self.store.capabilities().lifecycle.is_none() {
            return Err(Error::Unsupported { operation: "refresh expire times on append", capability: "lifecycle" });
        }
        Ok(self.build_unchecked())
    }

    fn build_unchecked(self) -> SessionService {
        SessionService {
            inner: Arc::new(Inner {
                store: self.store,
                policies: self.policies,
                clock: self.clock,
                local_leases: LocalLeases::new(),
            }),
        }
    }
}

impl SessionService {
    /// The span of one storage step: named by the operation, with the database it runs on
    /// (OpenTelemetry's `db.operation.name` and `db.system.name`).
    fn span(&self, op: &'static str, key: &SessionKey) -> tracing::Span {
        let (app, user, session) = (key.app_name(), key.user_id(), key.session_id());
        let system = self.inner.store.system();
        tracing::debug_span!(
            "session",
            otel.name = op,
            db.operation.name = op,
            db.system.name = system,
            op,
            app,
            user,
            session
        )
    }

    /// The service over `store`, with no policies and the system clock.
    pub fn new(store: impl SessionStore) -> Self {
        Self::builder(store).build_unchecked()
    }

    /// The service over a store already shared.
    pub fn shared(store: Arc<dyn SessionStore>) -> Self {
        SessionServiceBuilder { store, policies: Policies::default(), clock: Arc::new(SystemClock) }.build_unchecked()
    }

    /// The service over a new [`InMemoryStore`].
    pub fn in_memory() -> Self {
        Self::new(InMemoryStore::new())
    }

    /// A builder over `store`.
    pub fn builder(store: impl SessionStore) -> SessionServiceBuilder {
        SessionServiceBuilder { store: Arc::new(store), policies: Policies::default(), clock: Arc::new(SystemClock) }
    }

    /// The store, for maintenance that works below the service's rules (imports, re-encryption).
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// What the store offers beyond the core.
    pub fn capabilities(&self) -> Capabilities<'_> {
        self.inner.store.capabilities()
    }

    /// Run leases: the store's, shared by every service over it, or (for a store that keeps
    /// none, such as the managed service) this service's own, which runs of other processes do
    /// not see. [`leases_are_shared`](Self::leases_are_shared) tells which.
    pub fn leases(&self) -> &dyn LeaseStore {
        match self.inner.store.capabilities().leases {
            Some(leases) => leases,
            None => &self.inner.local_leases,
        }
    }

    /// Whether [`leases`](Self::leases) are kept in the store.
    pub fn leases_are_shared(&self) -> bool {
        self.inner.store.capabilities().leases.is_some()
    }

    /// The lifecycle policies.
    pub fn policies(&self) -> &Policies {
        &self.inner.policies
    }

    /// The time now by the service's clock, epoch microseconds.
    pub fn now_micros(&self) -> i64 {
        self.inner.clock.now_micros()
    }

    /// Creates a session. Initial state is split by scope (`app:`, `user:`, session; `temp:` is
    /// dropped). An existing id for (app, user) → [`Error::AlreadyExists`]; the id of an expired
    /// session is free (the old one is removed in the same step). Without a time to live or an
    /// expire time, the policies' default for the app applies.
    pub async fn create_session(&self, request: CreateSession) -> Result<Session> {
        let CreateSession { app_name, user_id, session_id, state, mut attributes, ttl } = request;
        let session_id = session_id.filter(|id| !id.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let key = SessionKey::new(app_name, user_id, session_id)?;
        attributes.validate()?;
        let now = self.now_micros();
        if ttl.is_some() && attributes.expire_time_micros.is_some() {
            return Err(Error::invalid("ttl", "give a time to live or an expire time, not both"));
        }
        let ttl = ttl.or_else(|| {
            attributes.expire_time_micros.is_none().then(|| self.policies().ttl_for(key.app_name())).flatten()
        });
        if let Some(ttl) = ttl {
            attributes.expire_time_micros = Some(clock::after(now, ttl));
        }
        let span = self.span("create_session", &key);
        let state = ScopedState::split(state);
        let history_start = Some(merge_scopes(&state.session, &state.app, &state.user));
        let new = NewSession { key, state, create_time_micros: now, attributes, history_start };
        self.inner.store.create(new).instrument(span).await
    }

    /// Loads a session with the events `config` selects; `Ok(None)` when it does not exist or
    /// has expired.
    pub async fn get_session(&self, key: &SessionKey, config: GetSessionConfig) -> Result<Option<Session>> {
        Ok(self.load(key, config, EventForm::Decoded, "get_session").await?.map(|loaded| loaded.session))
    }

    /// Like [`get_session`](Self::get_session), for writing the session out rather than using
    /// it: where the store keeps events as their JSON text, they come as that text, undecoded,
    /// and [`wire::StoredWireSession`](crate::wire::StoredWireSession) writes them with no
    /// `Event` built. The same answer, a few times faster for long histories.
    pub async fn get_session_stored(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
    ) -> Result<Option<LoadedSession>> {
        self.load(key, config, EventForm::Stored, "get_session_stored").await
    }

    /// Like [`get_session_stored`](Self::get_session_stored), where nothing is left to do to
    /// the store's answer (the whole view, no bound finer than a microsecond): a store that
    /// keeps events as text may then write them as the API shows them as it reads each row
    /// ([`EventForm::Written`]), with no copy of a row kept. The same answer.
    pub async fn get_session_written(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
    ) -> Result<Option<LoadedSession>> {
        let whole = config.view == EventView::Whole && window::finer_than_storage(config.after_timestamp).is_none();
        let form = if whole { EventForm::Written } else { EventForm::Stored };
        self.load(key, config, form, "get_session_written").await
    }

    /// A session read in `form`: the window storage selects, or the compacted view of every
    /// event with the window applied to it.
    async fn load(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
        form: EventForm,
        name: &'static str,
    ) -> Result<Option<LoadedSession>> {
        let window = match config.view {
            EventView::Whole => config.window(),
            EventView::Compacted { .. } => EventWindow::ALL,
        };
        let read = SessionRead { window, form, now_micros: self.now_micros(), view: config.view };
        let found = self.inner.store.get(key, &read).instrument(self.span(name, key)).await?;
        Ok(found.map(|loaded| {
            let loaded = match config.view {
                EventView::Whole => loaded,
                // The store answered the view itself: only the window is left to apply.
                view if loaded.view == view => window::narrowed(loaded, config.window()),
                EventView::Compacted { overlap } => window::compacted(loaded, overlap, config.window()),
            };
            window::since(loaded, config.after_timestamp)
        }))
    }

    /// Lists sessions ordered by (last update or creation time, user id, session id), with
    /// merged state and no events, a page at a time, of those `request.filter` admits.
    ///
    /// The store applies what it can of the filter (from an index, in its statement); what it
    /// returns is checked here, and reading goes on until the page is full, so a filter the
    /// store cannot apply costs the sessions read past, not a wrong page.
    pub async fn list_sessions(&self, request: ListSessions) -> Result<SessionPage> {
        validate_id("app_name", &request.app_name)?;
        if let Some(user) = &request.user_id {
            validate_id("user_id", user)?;
        }
        if request.page_size == Some(0) {
            return Err(Error::invalid("page_size", "must be at least 1"));
        }
        let order = page::TokenOrder { by: request.order_by, newest_first: request.newest_first };
        let after = match request.page_token.as_deref().map(page::decode).transpose()? {
            Some((_, made)) if made != order => {
                let made =
                    format!("{} {}", made.by.field(), if made.newest_first { "newest first" } else { "oldest first" });
                return Err(Error::invalid("page_token", format!("continues a list by {made}; ask for that order")));
            }
            token => token.map(|(cursor, _)| cursor),
        };
        let span = tracing::debug_span!("list_sessions", app = request.app_name, user = request.user_id);
        let mut query = ListQuery {
            app_name: request.app_name,
            user_id: request.user_id,
            after,
            order: request.order_by,
            descending: request.newest_first,
            filter: request.filter,
            limit: None,
            now_micros: self.now_micros(),
        };
        if query.filter.update_time.is_empty() || query.filter.create_time.is_empty() {
            let total_size = request.count.then_some(0);
            return Ok(SessionPage { sessions: Vec::new(), next_page_token: None, total_size });
        }
        let total_size = if !request.count {
            None
        } else if query.filter.is_empty() {
            Some(self.inner.store.count_sessions(&query).instrument(span.clone()).await?)
        } else {
            Some(self.filtered(query.whole(), None).instrument(span.clone()).await?.len())
        };
        if request.offset > 0 {
            // The skipped sessions are read, in order, to find where the page starts.
            let skipped = self.filtered(query.clone(), Some(request.offset)).instrument(span.clone()).await?;
            if skipped.len() < request.offset {
                return Ok(SessionPage { sessions: Vec::new(), next_page_token: None, total_size });
            }
            query.after = skipped.last().map(|s| ListCursor::of(s, query.order));
        }
        // One extra session tells whether another page follows.
        let mut sessions =
            self.filtered(query.clone(), request.page_size.map(|n| n.saturating_add(1))).instrument(span).await?;
        let next_page_token = match request.page_size {
            Some(n) if sessions.len() > n => {
                sessions.truncate(n);
                sessions.last().map(|s| page::encode(&ListCursor::of(s, query.order), order))
            }
            _ => None,
        };
        Ok(SessionPage { sessions, next_page_token, total_size })
    }

    /// Up to `wanted` sessions of `query` (all with `None`) that its filter admits, in its order:
    /// the store's pages, checked here, read on past those the store could not rule out.
    async fn filtered(&self, mut query: ListQuery, wanted: Option<usize>) -> Result<Vec<Session>> {
        let store = &self.inner.store;
        if query.filter.is_empty() {
            query.limit = wanted;
            return store.list(&query).await;
        }
        // A filter the store applies answers in one read of what is wanted; past sessions it could
        // not rule out, reads grow, up to this many at a time.
        const MOST: usize = 1024;
        let (mut found, mut more) = (Vec::new(), 0);
        loop {
            let want = wanted.map(|w| w - found.len());
            query.limit = want.map(|w| w.max(more));
            more = (more * 2).clamp(32, MOST);
            let batch = store.list(&query).await?;
            let exhausted = query.limit.is_none_or(|l| batch.len() < l);
            let Some(last) = batch.last() else { return Ok(found) };
            query.after = Some(ListCursor::of(last, query.order));
            found.extend(batch.into_iter().filter(|s| query.filter.admits(s)));
            if let Some(w) = wanted
                && found.len() >= w
            {
                found.truncate(w);
                return Ok(found);
            }
            if exhausted {
                return Ok(found);
            }
        }
    }

    /// Deletes a session, its events and its artifacts (the user's `user:` artifacts stay).
    /// Deleting a missing session succeeds; app and user state stay.
    pub async fn delete_session(&self, key: &SessionKey) -> Result<()> {
        self.inner.store.delete(key).instrument(self.span("delete_session", key)).await?;
        if let Some(artifacts) = self.capabilities().artifacts {
            artifacts.delete_session_artifacts(key.app_name(), key.user_id(), key.session_id()).await?;
        }
        Ok(())
    }

    /// Appends `event` to the session and applies its `actions.state_delta`, returning the stored
    /// event (id assigned, `temp:` keys removed, timestamp normalised).
    ///
    /// - A partial event is returned untouched; nothing is stored.
    /// - `temp:` keys are applied to `session` (visible for the rest of the invocation) but
    ///   never stored.
    /// - The event's time is kept as given, to the nanosecond, when the microsecond nearest it
    ///   is later than the session's last update; otherwise it is moved to 1 µs after that, so
    ///   history order is append order on every backend ([`Event::time`]).
    /// - `session` is updated only after the write succeeded; on any error it is unchanged.
    /// - If storage changed since `session` was loaded → `Conflict` (stale handle): reload and
    ///   retry. Re-appending an event already stored is idempotent and returns the stored event.
    pub async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event> {
        if event.is_partial() {
            return Ok(event);
        }
        let (commit, temp) = commit::prepare(&self.target(session.key(), session.last_update_micros()), event)?;
        let (event, extended) = (Arc::clone(&commit.event), commit.extend_expiry_to);
        match self.inner.store.commit(commit).instrument(self.span("append_event", session.key())).await? {
            CommitOutcome::Committed => {
                session.record_commit(Arc::clone(&event), &temp, extended);
                Ok(Arc::unwrap_or_clone(event))
            }
            CommitOutcome::Duplicate(stored) => Ok(*stored),
        }
    }

    /// Appends `event` to the session `key` as a handle loaded at `marker` would (see
    /// [`append_event`](Self::append_event)): for a server that holds no handle, only the marker
    /// its client saw. The store decides, atomically and in this order: a missing session, the
    /// same event stored already (a retry, answered as stored), a session changed since the
    /// marker (the stale-handle conflict).
    pub async fn append_at(&self, key: &SessionKey, marker: i64, event: Event) -> Result<Appended> {
        if event.is_partial() {
            return Ok(Appended { event, duplicate: false });
        }
        let (commit, _temp) = commit::prepare(&self.target(key, marker), event)?;
        let event = Arc::clone(&commit.event);
        match self.inner.store.commit(commit).instrument(self.span("append_at", key)).await? {
            CommitOutcome::Committed => Ok(Appended { event: Arc::unwrap_or_clone(event), duplicate: false }),
            CommitOutcome::Duplicate(stored) => Ok(Appended { event: *stored, duplicate: true }),
        }
    }

    /// Appends `event` to the session `key` as it is in storage now, holding no handle (a
    /// blind write, as ADK-Rust's stores append): at the marker just read; when another writer
    /// appended in between, it reads again and retries, so no update is lost. Refused with the
    /// stale-session conflict only after [`BLIND_APPEND_ATTEMPTS`] lost races.
    pub async fn append_now(&self, key: &SessionKey, event: Event) -> Result<Appended> {
        let again = |lost: u32| std::future::ready(usize::try_from(lost).is_ok_and(|n| n < BLIND_APPEND_ATTEMPTS));
        self.append_blind(key, event, again).await
    }

    /// [`append_now`](Self::append_now) with the caller's say after each lost race:
    /// `lost_race(n)` is awaited after the `n`-th (from 1), may pause, and answers whether to
    /// read again and retry; when it answers no, the append is the stale-session conflict.
    pub async fn append_blind<F, Fut>(&self, key: &SessionKey, event: Event, mut lost_race: F) -> Result<Appended>
    where
        F: FnMut(u32) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        for lost in 1.. {
            let marker = self
                .get_session(key, GetSessionConfig::recent(0))
                .await?
                .ok_or_else(|| Error::NotFound { session_id: key.session_id().to_owned() })?
                .last_update_micros();
            match self.append_at(key, marker, event.clone()).await {
                Err(Error::Conflict { kind: crate::ConflictKind::StaleSession }) => {
                    tracing::debug!(session = %key, "session changed during a blind append");
                    if !lost_race(lost).await {
                        break;
                    }
                }
                done => return done,
            }
        }
        Err(Error::stale())
    }

    /// Where an append to `key` at `marker` goes now, with the refresh policy applied.
    fn target<'a>(&self, key: &'a SessionKey, marker: i64) -> commit::Target<'a> {
        let now_micros = self.now_micros();
        let policies = self.policies();
        let extend_expiry_to = policies
            .refresh_ttl_on_append
            .then(|| policies.ttl_for(key.app_name()))
            .flatten()
            .map(|ttl| clock::after(now_micros, ttl));
        commit::Target { key, marker, now_micros, extend_expiry_to }
    }

    /// Reads a session's history a page at a time, oldest first (or newest first, with
    /// [`ListEvents::newest_first`]), without loading the rest;
    /// `Ok(None)` when the session does not exist. Pages stay consistent while events are
    /// appended: a page token marks a position, so nothing is skipped or repeated.
    pub async fn list_events(&self, key: &SessionKey, request: ListEvents) -> Result<Option<EventPage>> {
        if !(1..=MAX_EVENT_PAGE).contains(&request.page_size) {
            return Err(Error::invalid("page_size", format!("must be between 1 and {MAX_EVENT_PAGE}")));
        }
        let cursor = request.page_token.as_deref().map(page::decode_events).transpose()?;
        let (since, until) = (request.after_timestamp, request.until_timestamp);
        let (since_micros, until_micros) = (since.map(Timestamp::micros), until.map(Timestamp::micros));
        // One extra event tells whether another page follows; storage selects by microsecond,
        // so one more stands in for an event of a bound's microsecond that is outside it.
        let bounds_within_micros = usize::from(since.is_some_and(|t| !t.is_whole_micros()))
            + usize::from(request.newest_first && until.is_some());
        let limit = request.page_size + 1 + bounds_within_micros;
        let select = if request.newest_first {
            // Backwards from the upper bound: strictly before (until + 1 µs, ""), ids being
            // never empty, is in or before `until`'s microsecond.
            let from_bound =
                || until_micros.map(|t| EventCursor { timestamp_micros: t.saturating_add(1), event_id: String::new() });
            EventSelect::Latest { before: cursor.or_else(from_bound), since_micros, limit }
        } else {
            EventSelect::Page { after: cursor, since_micros, limit }
        };
        let query = EventQuery { key: key.clone(), select, now_micros: self.now_micros() };
        let found = self.inner.store.events(&query).instrument(self.span("list_events", key)).await?;
        Ok(found.map(|mut events| {
            window::drop_before(&mut events, since);
            if request.newest_first {
                window::drop_after(&mut events, until);
                // Oldest first from the store: the extra ones are the first; the page is
                // reversed.
                let more = events.len() > request.page_size;
                if more {
                    events.drain(..events.len() - request.page_size);
                }
                let next_page_token = more.then(|| events.first().map(|e| page::encode_events(&EventCursor::of(e))));
                events.reverse();
                return EventPage { events, next_page_token: next_page_token.flatten() };
            }
            // Forwards, the history is in time order: past the upper bound, nothing more fits.
            let within = until.map_or(events.len(), |until| events.partition_point(|e| e.time() <= until));
            let ended = within < events.len();
            events.truncate(within);
            let next_page_token = (!ended && events.len() > request.page_size).then(|| {
                events.truncate(request.page_size);
                events.last().map(|e| page::encode_events(&EventCursor::of(e)))
            });
            EventPage { events, next_page_token: next_page_token.flatten() }
        }))
    }

    /// The sessions of `app_name` whose id is `session_id`: one per user that has one (ids are
    /// unique per user, not per app). For addressing a session by app and id alone, as the
    /// managed service does.
    pub async fn find_sessions(&self, app_name: &str, session_id: &str) -> Result<Vec<SessionKey>> {
        validate_id("app_name", app_name)?;
        validate_id("session_id", session_id)?;
        let span = tracing::debug_span!("find_sessions", app = app_name, session = session_id);
        let users =
            self.inner.store.users_with_session(app_name, session_id, self.now_micros()).instrument(span).await?;
        Ok(users.into_iter().map(|user| SessionKey::from_storage(app_name, user, session_id)).collect())
    }

    /// How many events the session holds; `None` if it does not exist (or expired).
    pub async fn count_events(&self, key: &SessionKey) -> Result<Option<usize>> {
        self.inner.store.count_events(key, self.now_micros()).instrument(self.span("count_events", key)).await
    }
}
