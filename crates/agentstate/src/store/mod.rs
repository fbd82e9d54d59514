//! The backend interface: a small core every store implements ([`SessionStore`]), and
//! capabilities a store may add ([`capability`]).
//!
//! Applications call [`SessionService`](crate::SessionService), which owns a store. The rules
//! common to all backends (validation, ids, `temp:` handling, timestamp order, updating the
//! caller's handle only after a write, policies, the clock) live in the service, written once,
//! so a store only does the storage work. Each core method is atomic: a concurrent reader sees a
//! call's effect whole or not at all.
//!
//! A store builds the handles it returns with [`Session::from_storage`] and reads keys back with
//! [`SessionKey::from_storage`]. State arrives split by scope ([`ScopedState`]); the merged view a
//! handle shows is [`merge_scopes`]. Times are epoch microseconds (see [`secs_to_micros`]).
//! Every read and write carries the time expiry is judged at: an expired session is missing, in
//! the statement that reads it. Run the conformance suite (`agentstate-conformance`) against a
//! new store before calling it done.

pub mod artifact;
pub mod capability;
mod filter;
pub mod lease;
pub mod memory;
mod query;
pub mod replay;
mod stored;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

pub use crate::scope::{ScopedKeys, ScopedState, apply_changes, merge_scopes};
pub use crate::time::{micros_to_secs, now_micros, now_secs, secs_to_micros};
pub use artifact::{
    ArtifactKey, ArtifactMeta, ArtifactStore, Bytes, NewArtifactVersion, Payload, PayloadKind, PayloadStream,
    StoredArtifact, TOO_LARGE_FIELD, copy_through, gather, next_chunk, too_large,
};
pub use capability::{
    AdminStore, AttributesUpdate, Capabilities, ENCRYPTION_METADATA, EventCopy, HistorySnapshot, HistoryStore,
    LifecycleStore, RemoteHistory, SharedStateStore, SharedStateUpdate, SharedStateWrite, SharedStateWrites,
    StateOwner, UserDataCounts, ValueSwap, shared_state_as_stored,
};
pub use filter::{ListOrder, SessionFilter, TimeRange};
pub use lease::{LeaseRequest, LeaseState, LeaseStore, LocalLeases};
pub use memory::{IndexedMemory, MemoryCursor, MemoryList, MemoryPut, MemorySearch, MemoryStore, PutMode, rank_hits};
pub use query::{EventCursor, EventForm, EventQuery, EventSelect, EventWindow, ListCursor, ListQuery, SessionRead};
pub use stored::{LoadedSession, StoredEvent, WrittenEvents};

use crate::error::{ConflictKind, Error, Result};
use crate::event::Event;
use crate::key::SessionKey;
use crate::session::{Session, SessionAttributes};

/// A session to create, validated and split by scope.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Identity; the session id is the caller's or a generated UUIDv4.
    pub key: SessionKey,
    /// Initial state by scope (`temp:` keys already dropped).
    pub state: ScopedState,
    /// Creation time, epoch microseconds; also the first storage marker, and the time expiry
    /// is judged at: a session under this key that expired at or before it is replaced.
    pub create_time_micros: i64,
    /// Display name, labels, expiry (validated); stored with the session when not empty.
    pub attributes: SessionAttributes,
    /// The state the session's history starts from (flat, prefixed), kept as its creation
    /// snapshot ([`EventCursor::CREATION`]) by a store with [`HistoryStore`]; `None` when it is
    /// not known (an import), and the history then starts empty.
    pub history_start: Option<Map<String, Value>>,
}

/// An append that passed the common checks, ready to store.
#[derive(Debug, Clone)]
pub struct EventCommit {
    /// The session appended to.
    pub key: SessionKey,
    /// The storage marker the caller's handle was loaded at; storage must still hold it.
    pub expected_last_update_micros: i64,
    /// The event to store: id assigned, `temp:` keys trimmed, time placed.
    pub event: Arc<Event>,
    /// The microsecond the event is stored at (the one nearest its [`time`](Event::time)), later
    /// than `expected_last_update_micros`; it becomes the session's new marker.
    pub timestamp_micros: i64,
    /// The event's state delta split by scope, to merge key by key.
    pub delta: ScopedState,
    /// Keys to delete after merging `delta`, split by scope (each is also in `delta`, as
    /// `null`).
    pub deleted: ScopedKeys,
    /// The session is missing if it expired at or before this (epoch microseconds).
    pub now_micros: i64,
    /// A session that expires gets its expire time moved to this, if that is later (the
    /// service's refresh-on-append policy), in the same atomic step.
    pub extend_expiry_to: Option<i64>,
}

impl EventCommit {
    /// An event copied into a session's history as it is (an import, a fork): stored after
    /// `marker` (its time moved just past it if it is not later), no delta applied, expiry not
    /// judged.
    pub fn history_only(key: SessionKey, marker: i64, mut event: Event) -> Self {
        let timestamp_micros = event.place_after(marker);
        Self {
            key,
            expected_last_update_micros: marker,
            event: Arc::new(event),
            timestamp_micros,
            delta: ScopedState::default(),
            deleted: ScopedKeys::default(),
            now_micros: i64::MIN,
            extend_expiry_to: None,
        }
    }
}

/// What [`SessionStore::commit`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum CommitOutcome {
    /// The event was stored and its delta applied.
    Committed,
    /// The same event (see [`Event::same_as_retry`]) was already stored; nothing changed.
    /// Carries the stored event.
    Duplicate(Box<Event>),
}

impl CommitOutcome {
    /// What a commit answers when an event with the sent one's id is already stored: the sent
    /// event again (a retry) → [`Duplicate`](Self::Duplicate); anything else → `Conflict`
    /// (`DuplicateEventId`).
    pub fn of_stored(stored: Event, sent: &Event) -> Result<Self> {
        if stored.same_as_retry(sent) {
            Ok(Self::Duplicate(Box::new(stored)))
        } else {
            Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: sent.id.clone() } })
        }
    }
}

/// Storage for sessions: the core every backend implements. Anything more is a
/// [capability](capability) the store declares in [`capabilities`](Self::capabilities).
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Creates a session. Atomically: if (app, user, id) exists and has not expired at
    /// `new.create_time_micros` → `AlreadyExists` and nothing changes; an expired one is removed
    /// with its events and history in the same step. Then merge `state.app`/`state.user` into the
    /// app/user state key by key, store the session with its attributes (and the creation
    /// snapshot, with [`HistoryStore`]), and return its handle with the merged state, its
    /// creation time, its attributes and no events.
    async fn create(&self, new: NewSession) -> Result<Session>;

    /// Loads a session with the events of `read.window`, its creation time and attributes, or
    /// `None` if it does not exist or expired at `read.now_micros`. The state is the merged view,
    /// read with the events in one consistent snapshot. With [`EventForm::Stored`], a store that
    /// keeps events as JSON text answers them as that text, undecoded; other stores (encrypted,
    /// say) answer them decoded. With [`EventForm::Written`], a store may answer them written
    /// as the API shows them ([`crate::wire::write_stored_row`]), or else as for `Stored`.
    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>>;

    /// Lists sessions in the order (`query.order`'s time, user id, session id), or its reverse
    /// when `query.descending`, with merged state, creation time and attributes, and no events;
    /// expired ones are left out. Of `query.filter` a store applies what it can and may return
    /// sessions it does not admit ([`SessionFilter`]); `query.limit` counts what it returns.
    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>>;

    /// How many sessions [`list`](Self::list) would give for `query.whole()` (every page). By
    /// default it pages through the list and counts; stores with an index count there.
    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        const PAGE: usize = 1000;
        let mut page = ListQuery { limit: Some(PAGE), ..query.whole() };
        let mut count = 0;
        loop {
            let sessions = self.list(&page).await?;
            count += sessions.len();
            match sessions.last() {
                Some(last) if sessions.len() == PAGE => page.after = Some(ListCursor::of(last, page.order)),
                _ => return Ok(count),
            }
        }
    }

    /// Deletes a session and its events; a missing session is not an error. App and user state
    /// stay.
    async fn delete(&self, key: &SessionKey) -> Result<()>;

    /// Stores an event. Atomically, in this order:
    /// 1. the session is missing, or expired at `now_micros` → `NotFound`;
    /// 2. an event with this id is stored: the same event → [`CommitOutcome::Duplicate`], a
    ///    different one → `Conflict` (`DuplicateEventId`);
    /// 3. the session's marker differs from `expected_last_update_micros` → `Conflict`
    ///    (`StaleSession`);
    /// 4. store the event, merge the delta key by key into app, user and session state, then
    ///    remove the `deleted` keys (a concurrent writer of other keys loses nothing), set the
    ///    marker to `timestamp_micros`, and move the expire time to `extend_expiry_to` if the
    ///    session expires earlier.
    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome>;

    /// The events `query.select` picks, oldest first; `None` if the session does not exist or
    /// expired at `query.now_micros`.
    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>>;

    /// How many events the session holds; `None` if it does not exist or expired at
    /// `now_micros`.
    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>>;

    /// The users of `app` that have a live session called `session_id` (at `now_micros`),
    /// sorted: for addressing a session by app and id alone, as the managed service does.
    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>>;

    /// The database behind it, as OpenTelemetry's `db.system.name` names it (`sqlite`,
    /// `postgresql`, `mysql`, `redis`, …), for the storage spans. The default: `other`.
    fn system(&self) -> &'static str {
        "other"
    }

    /// What the store offers beyond the core. The default: nothing.
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::none()
    }
}

/// A store that hands each operation to another store, picked per call: one chosen at run time
/// (by database URL), a round-robin over instances, a shared handle. Implementing this gives the
/// whole [`SessionStore`], capabilities included, without forwarding each method by hand.
pub trait DelegatingStore: Send + Sync + 'static {
    /// The store for the next operation.
    fn delegate(&self) -> &dyn SessionStore;
}

/// A shared store is a store.
impl DelegatingStore for Arc<dyn SessionStore> {
    fn delegate(&self) -> &dyn SessionStore {
        &**self
    }
}

#[async_trait]
impl<T: DelegatingStore> SessionStore for T {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.delegate().create(new).await
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        self.delegate().get(key, read).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        self.delegate().list(query).await
    }

    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        self.delegate().count_sessions(query).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        self.delegate().delete(key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.delegate().commit(commit).await
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        self.delegate().events(query).await
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        self.delegate().count_events(key, now_micros).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        self.delegate().users_with_session(app, session_id, now_micros).await
    }

    fn system(&self) -> &'static str {
        self.delegate().system()
    }

    fn capabilities(&self) -> Capabilities<'_> {
        self.delegate().capabilities()
    }
}

impl std::fmt::Debug for dyn SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore").field("capabilities", &self.capabilities()).finish_non_exhaustive()
    }
}
