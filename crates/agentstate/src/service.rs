//! [`SessionService`]: what applications and agent runtimes call. Every [`SessionStore`] is one;
//! the behaviour shared by all backends is implemented here once.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::history::{EventDiff, ForkSession, HistoryAt, StateAt};
use crate::key::{SessionKey, validate_id};
use crate::page;
use crate::scope::{Scope, ScopedKeys};
use crate::session::{Session, SessionAttributes, TempChanges};
use crate::store::{
    CommitOutcome, EventCommit, EventCursor, EventQuery, EventWindow, ListCursor, ListQuery, NewSession, RawSession,
    ScopedState, SessionStore, UserData, merge_scopes, micros_to_secs, now_micros, secs_to_micros,
};

/// The longest invocation id accepted, in characters (the reference's `VARCHAR(256)`).
pub const MAX_INVOCATION_ID_CHARS: usize = 256;

/// Arguments of [`SessionService::create_session`].
///
/// ```
/// use agentstate::CreateSession;
/// use serde_json::json;
/// let request = CreateSession::new("my_app", "alice")
///     .id("s1")
///     .state("app:theme", json!("dark"))
///     .state("context", json!("session1"));
/// assert_eq!(request.state.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CreateSession {
    /// The app.
    pub app_name: String,
    /// The user.
    pub user_id: String,
    /// The id to use; `None` or empty → a generated UUIDv4.
    pub session_id: Option<String>,
    /// Initial state, keys with their scope prefix; `temp:` keys are dropped.
    pub state: Map<String, Value>,
    /// Display name, labels, expiry.
    pub attributes: SessionAttributes,
}

impl CreateSession {
    /// A request for a new session of `user_id` in `app_name`, with a generated id and no state.
    pub fn new(app_name: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self { app_name: app_name.into(), user_id: user_id.into(), ..Self::default() }
    }

    /// Uses this session id.
    #[must_use]
    pub fn id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Adds one initial state key.
    #[must_use]
    pub fn state(mut self, key: impl Into<String>, value: Value) -> Self {
        self.state.insert(key.into(), value);
        self
    }

    /// Replaces the initial state.
    #[must_use]
    pub fn with_state(mut self, state: Map<String, Value>) -> Self {
        self.state = state;
        self
    }

    /// A name to show people.
    #[must_use]
    pub fn display_name(mut self, name: impl Into<String>) -> Self {
        self.attributes.display_name = Some(name.into());
        self
    }

    /// Adds a label.
    #[must_use]
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.attributes.labels.insert(key.into(), value.into());
        self
    }

    /// Expires at `time` (epoch seconds).
    #[must_use]
    pub fn expire_time(mut self, time: f64) -> Self {
        self.attributes.expire_time_micros = secs_to_micros(time);
        self
    }

    /// Expires `ttl` from now.
    #[must_use]
    pub fn ttl(mut self, ttl: std::time::Duration) -> Self {
        let ttl = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
        self.attributes.expire_time_micros = Some(now_micros().saturating_add(ttl));
        self
    }
}

/// Which events [`SessionService::get_session`] loads. The default loads all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GetSessionConfig {
    /// `None`: all events; `Some(0)`: none; `Some(n)`: the `n` most recent.
    pub num_recent_events: Option<usize>,
    /// Only events with a timestamp at or after this (epoch seconds).
    pub after_timestamp: Option<f64>,
}

impl GetSessionConfig {
    /// Loads only the `n` most recent events.
    pub fn recent(n: usize) -> Self {
        Self { num_recent_events: Some(n), after_timestamp: None }
    }

    fn window(self) -> Result<EventWindow> {
        let after_micros = timestamp_micros("after_timestamp", self.after_timestamp)?;
        Ok(EventWindow { recent: self.num_recent_events, after_micros })
    }
}

/// An optional epoch-seconds argument in epoch microseconds.
fn timestamp_micros(field: &'static str, secs: Option<f64>) -> Result<Option<i64>> {
    secs.map(|t| {
        secs_to_micros(t).ok_or_else(|| Error::invalid(field, format!("{t} is not a valid epoch time in seconds")))
    })
    .transpose()
}

/// Arguments of [`SessionService::list_sessions`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListSessions {
    /// The app.
    pub app_name: String,
    /// One user, or `None` for every user of the app.
    pub user_id: Option<String>,
    /// At most this many sessions per page; `None` for all in one page.
    pub page_size: Option<usize>,
    /// `next_page_token` of the previous page.
    pub page_token: Option<String>,
}

impl ListSessions {
    /// Every session of `user_id` in `app_name`, in one page.
    pub fn user(app_name: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self { app_name: app_name.into(), user_id: Some(user_id.into()), ..Self::default() }
    }

    /// Every session of every user of `app_name`, in one page.
    pub fn app(app_name: impl Into<String>) -> Self {
        Self { app_name: app_name.into(), ..Self::default() }
    }

    /// Pages of at most `page_size` sessions.
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// Continues after the page that returned `token`.
    #[must_use]
    pub fn page_token(mut self, token: impl Into<String>) -> Self {
        self.page_token = Some(token.into());
        self
    }
}

/// How much of a session's history to keep (see [`SessionService::apply_retention`]): the newest
/// `keep_last` events and/or the events younger than `max_age`; both bounds apply together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Keep at most this many of the newest events (at least 1).
    pub keep_last: Option<usize>,
    /// Keep only events younger than this.
    pub max_age: Option<std::time::Duration>,
}

/// One page of sessions, oldest update first. Sessions carry merged state and no events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionPage {
    /// The sessions of this page.
    pub sessions: Vec<Session>,
    /// Pass it as `page_token` for the next page; `None` on the last page.
    pub next_page_token: Option<String>,
}

/// Arguments of [`SessionService::list_events`].
#[derive(Debug, Clone, PartialEq)]
pub struct ListEvents {
    /// At most this many events per page (1 to [`MAX_EVENT_PAGE`]).
    pub page_size: usize,
    /// `next_page_token` of the previous page; `None` for the first.
    pub page_token: Option<String>,
    /// Only events with a timestamp at or after this (epoch seconds).
    pub after_timestamp: Option<f64>,
}

impl Default for ListEvents {
    fn default() -> Self {
        Self { page_size: 100, page_token: None, after_timestamp: None }
    }
}

/// The largest event page.
pub const MAX_EVENT_PAGE: usize = 1000;

/// One page of a session's history, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventPage {
    /// The events of this page.
    pub events: Vec<Event>,
    /// Pass it as `page_token` for the next page; `None` on the last page.
    pub next_page_token: Option<String>,
}

/// Creates, loads, lists and deletes sessions, and appends events to them.
///
/// Implemented for every [`SessionStore`]; use it as `Arc<dyn SessionService>`.
///
/// ```
/// use agentstate::{CreateSession, Event, GetSessionConfig, InMemorySessionService, SessionService};
/// use serde_json::json;
///
/// # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
/// async fn run() -> agentstate::Result<()> {
///     let service = InMemorySessionService::new();
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
#[async_trait]
pub trait SessionService: Send + Sync {
    /// Creates a session. Initial state is split by scope (`app:`, `user:`, session; `temp:` is
    /// dropped). An existing id for (app, user) → [`Error::AlreadyExists`].
    async fn create_session(&self, request: CreateSession) -> Result<Session>;

    /// Loads a session with the events `config` selects; `Ok(None)` when it does not exist.
    async fn get_session(&self, key: &SessionKey, config: GetSessionConfig) -> Result<Option<Session>>;

    /// Like [`get_session`](Self::get_session), for writing the session out rather than using
    /// it: where the store keeps events as their JSON text, they come as that text, undecoded,
    /// and [`wire::RawWireSession`](crate::wire::RawWireSession) writes them with no `Event`
    /// built. The same answer, a few times faster for long histories.
    async fn get_session_raw(&self, key: &SessionKey, config: GetSessionConfig) -> Result<Option<RawSession>>;

    /// Lists sessions ordered by (last update time, user id, session id), with merged state and
    /// no events, a page at a time.
    async fn list_sessions(&self, request: ListSessions) -> Result<SessionPage>;

    /// Deletes a session and its events. Deleting a missing session succeeds; app and user state
    /// stay.
    async fn delete_session(&self, key: &SessionKey) -> Result<()>;

    /// Appends `event` to the session and applies its `actions.state_delta`, returning the stored
    /// event (id assigned, `temp:` keys removed, timestamp normalised).
    ///
    /// - A partial event is returned untouched; nothing is stored.
    /// - `temp:` keys are applied to `session` (visible for the rest of the invocation) but
    ///   never stored.
    /// - The event's timestamp is kept later than the session's last update (at least 1 µs
    ///   after), so history order is append order on every backend.
    /// - `session` is updated only after the write succeeded; on any error it is unchanged.
    /// - If storage changed since `session` was loaded → `Conflict` (stale handle): reload and
    ///   retry. Re-appending an event already stored is idempotent and returns the stored event.
    async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event>;

    /// Reads a session's history a page at a time, oldest first, without loading the rest;
    /// `Ok(None)` when the session does not exist. Pages stay consistent while events are
    /// appended: a page token marks a position, so nothing is skipped or repeated.
    async fn list_events(&self, key: &SessionKey, request: ListEvents) -> Result<Option<EventPage>>;

    /// The sessions of `app_name` whose id is `session_id`: one per user that has one (ids are
    /// unique per user, not per app). For addressing a session by app and id alone, as the
    /// managed service does.
    async fn find_sessions(&self, app_name: &str, session_id: &str) -> Result<Vec<SessionKey>>;

    /// The session's history state at `at` (see [`crate::history`]); `Ok(None)` when the
    /// session does not exist. An event id the session does not have, or a time before its
    /// creation, is [`Error::InvalidArgument`].
    async fn state_at(&self, key: &SessionKey, at: HistoryAt) -> Result<Option<StateAt>>;

    /// What the event `event_id` changed: each key it set, changed (old and new value) or
    /// deleted; `Ok(None)` when the session does not exist. An unknown event id is
    /// [`Error::InvalidArgument`].
    async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>>;

    /// Rewinds `session` to before invocation `before_invocation_id`, as ADK for Python's
    /// `Runner.rewind_async` does: appends one event (author `user`, invocation `e-<uuid>`,
    /// `actions.rewind_before_invocation_id`) whose delta restores every session-scoped key to
    /// its value before that invocation's first event and deletes the keys that did not exist
    /// then. `app:`, `user:` and `temp:` keys are not rewound. The events from that first event
    /// on are no longer live ([`history::live_events`](crate::history::live_events)); they stay
    /// in the history.
    ///
    /// Unlike the reference, the state the session was created with counts as the state before
    /// its first event (the reference sets those keys to `null`), keys are deleted rather than
    /// set to `null`, and only the snapshot and events needed are read. An invocation the
    /// session does not have is [`Error::InvalidArgument`] (`Invocation ID not found: …`); a
    /// stale handle is a [`Error::Conflict`], as for any append.
    async fn rewind(&self, session: &mut Session, before_invocation_id: &str) -> Result<Event>;

    /// A new session of the same user whose history is the source's up to and including
    /// `request.at_event_id` (the same events: ids, contents and times) and whose own state is
    /// the history state there; `app:`/`user:` state is shared as always, and the source is
    /// untouched. The fork keeps its source's creation time and creation state (so its history
    /// reads as the source's), and its last update is its last event's time until it is
    /// appended to. Returns it without events. A missing source is [`Error::NotFound`], an
    /// unknown event [`Error::InvalidArgument`], a taken id [`Error::AlreadyExists`].
    async fn fork_session(&self, request: ForkSession) -> Result<Session>;

    /// Removes up to `limit` sessions that have expired, with their events; returns how many.
    /// Expired sessions already behave as deleted; this reclaims their space. Call it until it
    /// returns less than `limit` to sweep everything; each call is one bounded batch (no long
    /// locks), found through an index on the expire time.
    async fn sweep_expired(&self, limit: usize) -> Result<usize>;

    /// Erases everything of `user_id` in `app_name` (a right-to-erasure request): every session,
    /// event and `user:` key; returns what it removed. `app:` state, shared with other users, is
    /// untouched. See [`SessionStore::erase_user`] for each backend's guarantees.
    async fn erase_user(&self, app_name: &str, user_id: &str) -> Result<UserData>;

    /// What [`erase_user`](Self::erase_user) would remove now, removing nothing.
    async fn user_data(&self, app_name: &str, user_id: &str) -> Result<UserData>;

    /// Drops the session's events that `policy` does not keep; returns how many. The state is
    /// untouched (it is never recomputed from events). History answers stop at the oldest kept
    /// event: state at, diffs, rewind and fork before it are an error that says so. A missing
    /// session drops nothing.
    async fn apply_retention(&self, key: &SessionKey, policy: Retention) -> Result<usize>;

    /// Moves the session's expire time (epoch seconds; `None`: it never expires), as the managed
    /// service's `PATCH` of `expireTime` does. An expired session cannot be revived: like a
    /// missing one, it is [`Error::NotFound`].
    async fn set_expire_time(&self, key: &SessionKey, expire_time: Option<f64>) -> Result<()>;

    /// Every app that has sessions or state, sorted.
    async fn list_apps(&self) -> Result<Vec<String>>;

    /// Every user of `app_name` that has sessions or `user:` state, sorted.
    async fn list_users(&self, app_name: &str) -> Result<Vec<String>>;

    /// How many events the session holds; `None` if it does not exist (or expired).
    async fn count_events(&self, key: &SessionKey) -> Result<Option<usize>>;
}

#[async_trait]
impl<S: SessionStore + ?Sized> SessionService for S {
    async fn create_session(&self, request: CreateSession) -> Result<Session> {
        let CreateSession { app_name, user_id, session_id, state, attributes } = request;
        let session_id = session_id.filter(|id| !id.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let key = SessionKey::new(app_name, user_id, session_id)?;
        attributes.validate()?;
        let span = tracing::debug_span!(
            "create_session",
            app = key.app_name(),
            user = key.user_id(),
            session = key.session_id()
        );
        let state = ScopedState::split(state);
        let history_start = Some(merge_scopes(&state.session, &state.app, &state.user));
        let new = NewSession { key, state, create_time_micros: now_micros(), attributes, history_start };
        match self.create(new.clone()).instrument(span.clone()).await {
            // An expired session is deleted in all but storage: its id is free.
            Err(Error::AlreadyExists { .. }) if !live(self, &new.key).await? => {
                self.delete(&new.key).await?;
                self.create(new).instrument(span).await
            }
            other => other,
        }
    }

    async fn get_session(&self, key: &SessionKey, config: GetSessionConfig) -> Result<Option<Session>> {
        let window = config.window()?;
        let span =
            tracing::debug_span!("get_session", app = key.app_name(), user = key.user_id(), session = key.session_id());
        let found = self.get(key, window).instrument(span).await?;
        Ok(found.filter(|s| !s.is_expired_at(now_micros())))
    }

    async fn get_session_raw(&self, key: &SessionKey, config: GetSessionConfig) -> Result<Option<RawSession>> {
        let window = config.window()?;
        let span = tracing::debug_span!(
            "get_session_raw",
            app = key.app_name(),
            user = key.user_id(),
            session = key.session_id()
        );
        let found = self.get_raw(key, window).instrument(span).await?;
        Ok(found.filter(|s| !s.session.is_expired_at(now_micros())))
    }

    async fn list_sessions(&self, request: ListSessions) -> Result<SessionPage> {
        validate_id("app_name", &request.app_name)?;
        if let Some(user) = &request.user_id {
            validate_id("user_id", user)?;
        }
        if request.page_size == Some(0) {
            return Err(Error::invalid("page_size", "must be at least 1"));
        }
        let after = request.page_token.as_deref().map(page::decode).transpose()?;
        let span = tracing::debug_span!("list_sessions", app = request.app_name, user = request.user_id);
        // One extra row tells whether another page follows.
        let query = ListQuery {
            app_name: request.app_name,
            user_id: request.user_id,
            after,
            limit: request.page_size.map(|n| n.saturating_add(1)),
        };
        let mut sessions = list_live(self, query).instrument(span).await?;
        let next_page_token = match request.page_size {
            Some(n) if sessions.len() > n => {
                sessions.truncate(n);
                sessions.last().map(|s| {
                    page::encode(&ListCursor {
                        last_update_micros: s.last_update_micros(),
                        user_id: s.user_id().to_owned(),
                        session_id: s.id().to_owned(),
                    })
                })
            }
            _ => None,
        };
        Ok(SessionPage { sessions, next_page_token })
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<()> {
        let span = tracing::debug_span!(
            "delete_session",
            app = key.app_name(),
            user = key.user_id(),
            session = key.session_id()
        );
        self.delete(key).instrument(span).await
    }

    async fn list_events(&self, key: &SessionKey, request: ListEvents) -> Result<Option<EventPage>> {
        if !(1..=MAX_EVENT_PAGE).contains(&request.page_size) {
            return Err(Error::invalid("page_size", format!("must be between 1 and {MAX_EVENT_PAGE}")));
        }
        let after = request.page_token.as_deref().map(page::decode_events).transpose()?;
        let since_micros = timestamp_micros("after_timestamp", request.after_timestamp)?;
        let span =
            tracing::debug_span!("list_events", app = key.app_name(), user = key.user_id(), session = key.session_id());
        // One extra event tells whether another page follows.
        let query = EventQuery { key: key.clone(), after, since_micros, limit: request.page_size + 1 };
        if !live(self, key).await? {
            return Ok(None);
        }
        let found = self.events(&query).instrument(span).await?;
        Ok(found.map(|mut events| {
            let next_page_token = (events.len() > request.page_size).then(|| {
                events.truncate(request.page_size);
                events.last().map(|e| {
                    page::encode_events(&EventCursor {
                        timestamp_micros: secs_to_micros(e.timestamp).unwrap_or(i64::MIN),
                        event_id: e.id.clone(),
                    })
                })
            });
            EventPage { events, next_page_token: next_page_token.flatten() }
        }))
    }

    async fn find_sessions(&self, app_name: &str, session_id: &str) -> Result<Vec<SessionKey>> {
        validate_id("app_name", app_name)?;
        validate_id("session_id", session_id)?;
        let span = tracing::debug_span!("find_sessions", app = app_name, session = session_id);
        let users = self.users_with_session(app_name, session_id).instrument(span).await?;
        let mut keys = Vec::with_capacity(users.len());
        for user in users {
            let key = SessionKey::from_storage(app_name, user, session_id);
            if live(self, &key).await? {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    async fn state_at(&self, key: &SessionKey, at: HistoryAt) -> Result<Option<StateAt>> {
        let span =
            tracing::debug_span!("state_at", app = key.app_name(), user = key.user_id(), session = key.session_id());
        if !live(self, key).await? {
            return Ok(None);
        }
        SessionStore::state_at(self, key, &at).instrument(span).await
    }

    async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>> {
        validate_id("event_id", event_id)?;
        let span =
            tracing::debug_span!("event_diff", app = key.app_name(), user = key.user_id(), session = key.session_id());
        if !live(self, key).await? {
            return Ok(None);
        }
        SessionStore::event_diff(self, key, event_id).instrument(span).await
    }

    async fn rewind(&self, session: &mut Session, before_invocation_id: &str) -> Result<Event> {
        let key = session.key().clone();
        if session.is_expired_at(now_micros()) && !live(self, &key).await? {
            return Err(Error::NotFound { session_id: key.session_id().to_owned() });
        }
        let not_found = || {
            Error::invalid("rewind_before_invocation_id", format!("Invocation ID not found: {before_invocation_id}"))
        };
        if before_invocation_id.is_empty() {
            return Err(not_found());
        }
        let first = self.first_event_of_invocation(&key, before_invocation_id).await?;
        let Some(first) = first else {
            return Err(match self.get(&key, EventWindow { recent: Some(0), after_micros: None }).await? {
                None => Error::NotFound { session_id: key.session_id().to_owned() },
                Some(_) => not_found(),
            });
        };
        let before = SessionStore::state_at(self, &key, &HistoryAt::BeforeEvent(first.id))
            .await?
            .ok_or_else(|| Error::NotFound { session_id: key.session_id().to_owned() })?;
        let then = crate::history::session_keys(&before.state);
        let now = crate::history::session_keys(session.state().all());
        let mut event = Event::new(format!("e-{}", uuid::Uuid::new_v4())).author("user");
        event.actions.rewind_before_invocation_id = Some(before_invocation_id.to_owned());
        for (k, v) in &then {
            if now.get(k) != Some(v) {
                event.actions.state_delta.insert(k.clone(), v.clone());
            }
        }
        for k in now.keys().filter(|k| !then.contains_key(*k)) {
            event = event.delete(k.clone());
        }
        self.append_event(session, event).await
    }

    async fn fork_session(&self, request: ForkSession) -> Result<Session> {
        validate_id("at_event_id", &request.at_event_id)?;
        if let Some(id) = request.session_id.as_deref().filter(|id| !id.is_empty()) {
            validate_id("session_id", id)?;
        }
        let span = tracing::debug_span!(
            "fork_session",
            app = request.source.app_name(),
            user = request.source.user_id(),
            session = request.source.session_id()
        );
        if !live(self, &request.source).await? {
            return Err(Error::NotFound { session_id: request.source.session_id().to_owned() });
        }
        self.fork(&request).instrument(span).await
    }

    async fn erase_user(&self, app_name: &str, user_id: &str) -> Result<UserData> {
        validate_id("app_name", app_name)?;
        validate_id("user_id", user_id)?;
        let span = tracing::info_span!("erase_user", app = app_name);
        let erased = SessionStore::erase_user(self, app_name, user_id).instrument(span).await?;
        tracing::info!(
            app = app_name,
            sessions = erased.sessions,
            events = erased.events,
            user_state_keys = erased.user_state_keys,
            "erased a user's data"
        );
        Ok(erased)
    }

    async fn user_data(&self, app_name: &str, user_id: &str) -> Result<UserData> {
        validate_id("app_name", app_name)?;
        validate_id("user_id", user_id)?;
        SessionStore::user_data(self, app_name, user_id).await
    }

    async fn list_apps(&self) -> Result<Vec<String>> {
        self.apps().await
    }

    async fn list_users(&self, app_name: &str) -> Result<Vec<String>> {
        validate_id("app_name", app_name)?;
        self.users(app_name).await
    }

    async fn count_events(&self, key: &SessionKey) -> Result<Option<usize>> {
        if !live(self, key).await? {
            return Ok(None);
        }
        self.event_count(key).await
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_time: Option<f64>) -> Result<()> {
        let micros = expire_time
            .map(|t| {
                secs_to_micros(t)
                    .ok_or_else(|| Error::invalid("expire_time", format!("{t} is not a valid epoch time in seconds")))
            })
            .transpose()?;
        let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
        if !live(self, key).await? {
            return Err(not_found());
        }
        let span = tracing::debug_span!(
            "set_expire_time",
            app = key.app_name(),
            user = key.user_id(),
            session = key.session_id()
        );
        match SessionStore::set_expire_time(self, key, micros).instrument(span).await? {
            true => Ok(()),
            false => Err(not_found()),
        }
    }

    async fn apply_retention(&self, key: &SessionKey, policy: Retention) -> Result<usize> {
        if policy.keep_last == Some(0) {
            return Err(Error::invalid("keep_last", "must keep at least 1 event"));
        }
        let span = tracing::debug_span!(
            "apply_retention",
            app = key.app_name(),
            user = key.user_id(),
            session = key.session_id()
        );
        let event_time = |e: &Event| secs_to_micros(e.timestamp).unwrap_or(i64::MIN);
        // Events older than `cut` go: the oldest of the newest `keep_last`, and the oldest young
        // enough (or, when every event is too old, the time after the newest).
        let mut cut: Option<i64> = None;
        if let Some(n) = policy.keep_last {
            let window = EventWindow { recent: Some(n.saturating_add(1)), after_micros: None };
            let Some(newest) = self.get(key, window).instrument(span.clone()).await? else { return Ok(0) };
            if newest.events().len() > n {
                cut = newest.events().get(1).map(event_time);
            }
        }
        if let Some(age) = policy.max_age {
            let oldest_kept = now_micros().saturating_sub(i64::try_from(age.as_micros()).unwrap_or(i64::MAX));
            let query = EventQuery { key: key.clone(), after: None, since_micros: Some(oldest_kept), limit: 1 };
            let Some(young) = self.events(&query).await? else { return Ok(0) };
            let by_age = match young.first() {
                Some(first) => Some(event_time(first)),
                None => {
                    let newest = self.get(key, EventWindow { recent: Some(1), after_micros: None }).await?;
                    newest.and_then(|s| s.events().last().map(|e| event_time(e).saturating_add(1)))
                }
            };
            cut = cut.max(by_age);
        }
        let Some(cut) = cut else { return Ok(0) };
        let first = EventQuery { key: key.clone(), after: None, since_micros: None, limit: 1 };
        let oldest = self.events(&first).await?.and_then(|page| page.first().map(event_time));
        if oldest.is_none_or(|t| t >= cut) {
            return Ok(0);
        }
        let Some(boundary) = crate::store::replay::state_before(self, key, cut).await? else { return Ok(0) };
        self.drop_events_before(key, cut, &boundary).instrument(span).await
    }

    async fn sweep_expired(&self, limit: usize) -> Result<usize> {
        let span = tracing::debug_span!("sweep_expired", limit);
        let removed = self.delete_expired(now_micros(), limit).instrument(span).await?;
        if removed > 0 {
            tracing::debug!(removed, "swept expired sessions");
        }
        Ok(removed)
    }

    async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event> {
        if event.is_partial() {
            return Ok(event);
        }
        // A handle that looks expired may predate a refresh of its expire time: storage decides.
        if session.is_expired_at(now_micros()) && !live(self, session.key()).await? {
            return Err(Error::NotFound { session_id: session.id().to_owned() });
        }
        let (commit, temp) = prepare_commit(session, event)?;
        let event = Arc::clone(&commit.event);
        let span = tracing::debug_span!(
            "append_event",
            app = session.app_name(),
            user = session.user_id(),
            session = session.id(),
            event = event.id
        );
        match self.commit(commit).instrument(span).await? {
            CommitOutcome::Committed => {
                session.record_commit(Arc::clone(&event), &temp);
                Ok(Arc::unwrap_or_clone(event))
            }
            CommitOutcome::Duplicate(stored) => Ok(*stored),
        }
    }
}

/// Validates `event`, assigns its id, moves its `temp:` keys out, normalises its deletions
/// (each key once, and `null` in the delta) and its timestamp. Returns the commit and the
/// `temp:` changes for the caller's handle.
/// Whether the session exists and has not expired.
async fn live<S: SessionStore + ?Sized>(store: &S, key: &SessionKey) -> Result<bool> {
    let found = store.get(key, EventWindow { recent: Some(0), after_micros: None }).await?;
    Ok(found.is_some_and(|s| !s.is_expired_at(now_micros())))
}

/// A page of `query` without expired sessions, as full as the store can fill it.
async fn list_live<S: SessionStore + ?Sized>(store: &S, mut query: ListQuery) -> Result<Vec<Session>> {
    let now = now_micros();
    let wanted = query.limit;
    let mut sessions = Vec::new();
    loop {
        let page = store.list(&query).await?;
        let full = query.limit.is_some_and(|n| page.len() >= n);
        let last = page.last().map(|s| ListCursor {
            last_update_micros: s.last_update_micros(),
            user_id: s.user_id().to_owned(),
            session_id: s.id().to_owned(),
        });
        sessions.extend(page.into_iter().filter(|s| !s.is_expired_at(now)));
        match (wanted, last) {
            (Some(wanted), Some(last)) if full && sessions.len() < wanted => {
                query.after = Some(last);
                query.limit = Some(wanted - sessions.len());
            }
            _ => return Ok(sessions),
        }
    }
}

fn prepare_commit(session: &Session, mut event: Event) -> Result<(EventCommit, TempChanges)> {
    if event.id.is_empty() {
        event.id = Event::new_id();
    } else {
        validate_id("event.id", &event.id)?;
    }
    let invocation_chars = event.invocation_id.chars().count();
    if invocation_chars > MAX_INVOCATION_ID_CHARS {
        return Err(Error::invalid(
            "event.invocation_id",
            format!("is {invocation_chars} characters long; at most {MAX_INVOCATION_ID_CHARS} are allowed"),
        ));
    }
    let requested = secs_to_micros(event.timestamp).ok_or_else(|| {
        Error::invalid("event.timestamp", format!("{} is not a valid epoch time in seconds", event.timestamp))
    })?;
    let timestamp_micros = requested.max(session.last_update_micros().saturating_add(1));
    event.timestamp = micros_to_secs(timestamp_micros);

    let mut deleted: Vec<String> = Vec::with_capacity(event.deleted_keys.len());
    for key in std::mem::take(&mut event.deleted_keys) {
        if key.is_empty() {
            return Err(Error::invalid("event.deleted_keys", "holds an empty key"));
        }
        if !deleted.contains(&key) {
            event.actions.state_delta.insert(key.clone(), Value::Null);
            deleted.push(key);
        }
    }
    let is_temp = |k: &str| Scope::of(k).0 == Scope::Temp;
    let (temp_deleted, kept_deleted): (Vec<String>, Vec<String>) = deleted.into_iter().partition(|k| is_temp(k));
    event.deleted_keys = kept_deleted;
    // Most events carry no `temp:` key: their delta stays as it is.
    let temp = if event.actions.state_delta.keys().any(|k| is_temp(k)) {
        let (temp, kept): (Map<String, Value>, Map<String, Value>) =
            std::mem::take(&mut event.actions.state_delta).into_iter().partition(|(k, _)| is_temp(k));
        event.actions.state_delta = kept;
        temp
    } else {
        Map::new()
    };
    let delta = ScopedState::split_copy(&event.actions.state_delta);
    let deleted = ScopedKeys::split(&event.deleted_keys);
    let commit = EventCommit {
        key: session.key().clone(),
        expected_last_update_micros: session.last_update_micros(),
        event: Arc::new(event),
        timestamp_micros,
        delta,
        deleted,
    };
    Ok((commit, TempChanges { set: temp, deleted: temp_deleted }))
}
