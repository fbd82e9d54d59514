//! What a store may offer beyond the core: each capability is a trait, and a store says which it
//! has in [`SessionStore::capabilities`](super::SessionStore::capabilities). A store without one
//! says so there, in its type's own code; the service then answers
//! [`Error::Unsupported`](crate::Error::Unsupported) for the operations that need it, naming the
//! operation. Nothing refuses at run time by default.
//!
//! | capability | what it adds | used for |
//! |---|---|---|
//! | [`HistoryStore`] | history snapshots, copying events, dropping old ones | exact history reads, fast forks, retention |
//! | [`LifecycleStore`] | the expiry sweep, moving expiry, erasure and its counts | expiry, `erase-user` |
//! | [`AdminStore`] | apps and users, stored values, the store's metadata | listings, re-encryption, encryption's key check |
//! | [`RemoteHistory`] | history answered by the store itself | a client of another agentstate server |
//! | [`SharedStateStore`] | `app:` and `user:` state read and written without a session | ADK's `get_user_state`, the state routes |
//! | [`MemoryStore`] | long-term memories with a full-text index | [`crate::memory`], ADK's memory service |
//! | [`LeaseStore`] | run leases shared by every server over the store | runs of one session taking turns (double texting) |
//! | [`ArtifactStore`] | numbered versions of files, per session or per user | [`crate::artifact`], ADK's artifact service |

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::Result;
use crate::event::Event;
use crate::history::{EventDiff, ForkSession, HistoryAt, StateAt};
use crate::key::SessionKey;
use crate::session::Session;

use super::EventCursor;
use super::artifact::ArtifactStore;
use super::lease::LeaseStore;
use super::memory::MemoryStore;

/// The capabilities a store has: each `None` it lacks. Build it with the `with_…` methods.
///
/// ```
/// # use agentstate::store::{Capabilities, HistoryStore};
/// # fn f(history: &dyn HistoryStore) {
/// let capabilities = Capabilities::none().with_history(history);
/// assert!(capabilities.history.is_some() && capabilities.lifecycle.is_none());
/// # }
/// ```
#[derive(Clone, Copy, Default)]
#[non_exhaustive]
pub struct Capabilities<'a> {
    /// History snapshots, event copies and retention.
    pub history: Option<&'a dyn HistoryStore>,
    /// Expiry sweeps, moving expire times, erasure.
    pub lifecycle: Option<&'a dyn LifecycleStore>,
    /// Listings of apps and users, stored values, metadata.
    pub admin: Option<&'a dyn AdminStore>,
    /// History the store answers itself.
    pub remote_history: Option<&'a dyn RemoteHistory>,
    /// `app:` and `user:` state read without a session.
    pub shared_state: Option<&'a dyn SharedStateStore>,
    /// Long-term memories.
    pub memory: Option<&'a dyn MemoryStore>,
    /// Run leases.
    pub leases: Option<&'a dyn LeaseStore>,
    /// Versioned artifacts.
    pub artifacts: Option<&'a dyn ArtifactStore>,
}

impl<'a> Capabilities<'a> {
    /// None at all: the core alone.
    pub fn none() -> Self {
        Self::default()
    }

    /// Every capability a database store can have (all but remote history), each served by
    /// `store`.
    pub fn every<S>(store: &'a S) -> Self
    where
        S: HistoryStore + LifecycleStore + AdminStore + SharedStateStore + MemoryStore + LeaseStore + ArtifactStore,
    {
        Self::none()
            .with_history(store)
            .with_lifecycle(store)
            .with_admin(store)
            .with_shared_state(store)
            .with_memory(store)
            .with_leases(store)
            .with_artifacts(store)
    }

    /// With history.
    #[must_use]
    pub fn with_history(mut self, history: &'a dyn HistoryStore) -> Self {
        self.history = Some(history);
        self
    }

    /// With lifecycle operations.
    #[must_use]
    pub fn with_lifecycle(mut self, lifecycle: &'a dyn LifecycleStore) -> Self {
        self.lifecycle = Some(lifecycle);
        self
    }

    /// With administration.
    #[must_use]
    pub fn with_admin(mut self, admin: &'a dyn AdminStore) -> Self {
        self.admin = Some(admin);
        self
    }

    /// With history answered remotely.
    #[must_use]
    pub fn with_remote_history(mut self, remote: &'a dyn RemoteHistory) -> Self {
        self.remote_history = Some(remote);
        self
    }

    /// With `app:` and `user:` state read without a session.
    #[must_use]
    pub fn with_shared_state(mut self, shared: &'a dyn SharedStateStore) -> Self {
        self.shared_state = Some(shared);
        self
    }

    /// With long-term memories.
    #[must_use]
    pub fn with_memory(mut self, memory: &'a dyn MemoryStore) -> Self {
        self.memory = Some(memory);
        self
    }

    /// With run leases.
    #[must_use]
    pub fn with_leases(mut self, leases: &'a dyn LeaseStore) -> Self {
        self.leases = Some(leases);
        self
    }

    /// With versioned artifacts.
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: &'a dyn ArtifactStore) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    /// Whether the service can answer history questions (state at, diffs, rewind, fork) over
    /// this store: it keeps history, or a remote service answers them.
    pub fn answers_history(&self) -> bool {
        self.history.is_some() || self.remote_history.is_some()
    }

    /// The names of those it has, for logs and docs: `history`, `lifecycle`, `admin`,
    /// `remote_history`, `shared_state`, `memory`, `leases`, `artifacts`.
    pub fn names(&self) -> Vec<&'static str> {
        [
            ("history", self.history.is_some()),
            ("lifecycle", self.lifecycle.is_some()),
            ("admin", self.admin.is_some()),
            ("remote_history", self.remote_history.is_some()),
            ("shared_state", self.shared_state.is_some()),
            ("memory", self.memory.is_some()),
            ("leases", self.leases.is_some()),
            ("artifacts", self.artifacts.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, has)| has.then_some(name))
        .collect()
    }
}

impl std::fmt::Debug for Capabilities<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// A session's history state at a position: the fold of its creation state and its events'
/// deltas and deletions up to and including `at` (`temp:` keys never appear). See
/// [`crate::history`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistorySnapshot {
    /// The position: after this event, or [`EventCursor::CREATION`].
    pub at: EventCursor,
    /// The state there (flat, prefixed).
    pub state: Map<String, Value>,
}

/// Events to copy from one session into another, as history (see
/// [`HistoryStore::copy_events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCopy {
    /// The source session.
    pub from: SessionKey,
    /// The session to copy into: just created, no events yet.
    pub to: SessionKey,
    /// Copy the source's events up to and including this position.
    pub upto: EventCursor,
    /// The marker `to` has now; copied events go after it.
    pub to_marker: i64,
}

/// History kept in the store: snapshots of the history state, so reads replay little; events
/// copied inside the store, so forks are fast; old events dropped by a retention policy.
#[async_trait]
pub trait HistoryStore: Send + Sync {
    /// The newest snapshot of the session at or before `at_or_before_micros` (an event time;
    /// [`EventCursor::CREATION`]'s for the creation snapshot alone); `None` if there is none, or
    /// no such session. The creation snapshot is kept by
    /// [`SessionStore::create`](super::SessionStore::create) from
    /// [`NewSession::history_start`](super::NewSession::history_start).
    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>>;

    /// Keeps snapshots a history read computed, so later reads replay less. A snapshot at a
    /// position already kept is the same state (history never changes): keep either. Nothing
    /// for a session that no longer exists.
    async fn put_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()>;

    /// Copies the events of `copy.from` up to and including `copy.upto` into `copy.to` as
    /// history: the same ids, contents and times (moved forward only where they are not after
    /// `copy.to_marker`), no delta applied. `to`'s marker becomes the last copied event's time.
    /// Returns that event's position in `to` (`None` when nothing was copied).
    /// [`replay::copy_events`](super::replay::copy_events) does it with one commit per event,
    /// for the cases a store's own copy cannot take.
    async fn copy_events(&self, copy: &EventCopy) -> Result<Option<EventCursor>>;

    /// Drops the session's events older than `cut_micros`, with the snapshots before it, and
    /// keeps `boundary` (the history state just before the cut, at position
    /// (`cut_micros - 1`, `""`)) as the oldest snapshot, so history reads stop there with a clear
    /// error instead of a wrong answer. The state is untouched. Atomic; returns how many events
    /// it dropped (none for a missing session).
    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize>;
}

/// What [`LifecycleStore::erase_user`] removed (or, from
/// [`LifecycleStore::count_user_data`], would remove): counts of a user's sessions, their
/// events, the keys of the user's `user:` state, and the user's memories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserDataCounts {
    /// Sessions.
    pub sessions: usize,
    /// Their events.
    pub events: usize,
    /// Keys of the user's `user:` state.
    pub user_state_keys: usize,
    /// Long-term memories (counted and removed by the service, through [`MemoryStore`]; a
    /// store leaves it 0).
    pub memories: usize,
    /// Artifact versions, of every session and user-scoped (counted and removed by the service,
    /// through [`ArtifactStore`]; a store leaves it 0).
    pub artifacts: usize,
}

impl UserDataCounts {
    /// Whether there is nothing.
    pub fn is_empty(&self) -> bool {
        self.sessions == 0 && self.events == 0 && self.user_state_keys == 0 && self.memories == 0 && self.artifacts == 0
    }
}

/// Expiry and erasure in the store.
#[async_trait]
pub trait LifecycleStore: Send + Sync {
    /// Deletes up to `limit` sessions whose expire time is at or before `before_micros` (oldest
    /// expiry first), with their events, in one atomic step: a session created again under the
    /// same id after its predecessor expired is never touched. Returns the sessions it deleted.
    /// Found through an index on the expire time, never a scan of every session. A store whose
    /// storage expires data by itself (Redis) removes what is left of them (list entries). A store
    /// that keeps artifacts removes the deleted sessions' artifacts too.
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>>;

    /// Sets the session's expire time (epoch µs; `None`: never expires); `false` if there is no
    /// such session, or it expired at or before `now_micros`. Atomic; on stores with native
    /// expiry, every key of the session follows.
    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>, now_micros: i64) -> Result<bool>;

    /// Sets the session's display name, labels and expire time as `update` says, in one atomic
    /// step, keeping what `update` leaves alone (an expire time set as
    /// [`set_expire_time`](Self::set_expire_time) sets it); `false` if there is no such session,
    /// or it expired at or before `now_micros`. Neither the session's state nor its last update
    /// time moves: a handle loaded before may still append.
    async fn set_attributes(&self, key: &SessionKey, update: &AttributesUpdate, now_micros: i64) -> Result<bool>;

    /// Removes everything of `user` in `app`: every session with its events, history snapshots
    /// and attributes, and the user's `user:` state; `app:` state stays. Atomic, or resumable
    /// (calling it again after an interruption finishes the job). Deleted content is overwritten
    /// where the storage would otherwise keep it (SQLite's `secure_delete`), not only unlinked.
    async fn erase_user(&self, app: &str, user: &str) -> Result<UserDataCounts>;

    /// What [`erase_user`](Self::erase_user) would remove now.
    async fn count_user_data(&self, app: &str, user: &str) -> Result<UserDataCounts>;
}

/// What [`LifecycleStore::set_attributes`] sets: each `None` is left as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttributesUpdate {
    /// The display name: `Some(None)` clears it.
    pub display_name: Option<Option<String>>,
    /// Every label, replacing those there (an empty map clears them).
    pub labels: Option<std::collections::BTreeMap<String, String>>,
    /// The expire time (epoch µs): `Some(None)` never expires.
    pub expire_time_micros: Option<Option<i64>>,
}

impl AttributesUpdate {
    /// The labels as stored: JSON text, `None` for none. For SQL stores.
    pub fn labels_json(&self) -> Option<String> {
        self.labels.as_ref().filter(|l| !l.is_empty()).and_then(|l| serde_json::to_string(l).ok())
    }
}

/// The [metadata](AdminStore::metadata) entry that says a store is encrypted (see
/// `agentstate::crypt`, feature `encryption`), with a check value per key id.
pub const ENCRYPTION_METADATA: &str = "agentstate_encryption";

/// Whose state a stored value belongs to, for [`AdminStore::stored_state`] and
/// [`AdminStore::swap_values`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateOwner {
    /// An app's `app:` state (keys without the prefix).
    App(String),
    /// A user's `user:` state in an app (keys without the prefix).
    User {
        /// The app.
        app: String,
        /// The user.
        user: String,
    },
    /// One session's own keys.
    Session(SessionKey),
}

impl StateOwner {
    /// The app, and the user for a user's state (`None` for the app's): the owner of shared
    /// state, which a session is not.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a session.
    pub fn shared(&self) -> Result<(&str, Option<&str>)> {
        match self {
            StateOwner::App(app) => Ok((app, None)),
            StateOwner::User { app, user } => Ok((app, Some(user))),
            StateOwner::Session(key) => Err(crate::error::Error::invalid(
                "owner",
                format!("{key} is a session; shared state is an app's or a user's"),
            )),
        }
    }
}

/// A stored state value to replace, only if it is still `old` (a concurrent writer wins).
#[derive(Debug, Clone, PartialEq)]
pub struct ValueSwap {
    /// The key, as stored (no scope prefix for app and user state).
    pub key: String,
    /// The value expected in storage.
    pub old: Value,
    /// Its replacement.
    pub new: Value,
}

/// Maintenance that visits everything: listings of apps and users, values as stored (for
/// re-encryption), and the store's own metadata (encryption's key check).
#[async_trait]
pub trait AdminStore: Send + Sync {
    /// Every app that has sessions or state, sorted.
    async fn apps(&self) -> Result<Vec<String>>;

    /// Every user of `app` that has sessions or `user:` state, sorted.
    async fn users(&self, app: &str) -> Result<Vec<String>>;

    /// The state `owner` holds, as stored (values are not interpreted); empty if none.
    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>>;

    /// Replaces stored values of `owner`, each only if it is still the `old` one; atomic;
    /// returns how many it replaced. Changes nothing else (not the session's marker).
    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize>;

    /// Rewrites the stored form of event `event.id` of the session (same id, time and
    /// invocation; the content is the caller's, e.g. re-encrypted); `false` if there is none.
    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool>;

    /// A named entry of the store's metadata (for instance [`ENCRYPTION_METADATA`]), or `None`.
    async fn metadata(&self, name: &str) -> Result<Option<String>>;

    /// Sets a named entry of the store's metadata.
    async fn set_metadata(&self, name: &str, value: &str) -> Result<()>;
}

/// `app:` and `user:` state read and written without a session: what every session of the app,
/// or of the user, sees under those prefixes.
#[async_trait]
pub trait SharedStateStore: Send + Sync {
    /// The state of `owner` ([`StateOwner::App`] or [`StateOwner::User`]), keys without their
    /// prefix, values as the sessions see them; empty if it has none.
    async fn shared_state(&self, owner: &StateOwner) -> Result<Map<String, Value>>;

    /// Merges `update.delta` into the owner's state key by key, then removes `update.deleted`,
    /// atomically per key as an append's `app:`/`user:` changes are (a concurrent append or
    /// write of other keys loses nothing). The owner's row is created if it has none. The write
    /// is recorded in the owner's log of writes ([`SharedStateWrite`]) with it, atomically.
    async fn update_shared_state(&self, update: &SharedStateUpdate) -> Result<()>;

    /// A page of the owner's log of writes without a session, newest first: those strictly
    /// before `query.before` (a position `(at_micros, id)`), at most `query.limit`.
    async fn shared_state_writes(&self, query: &SharedStateWrites) -> Result<Vec<SharedStateWrite>>;
}

/// A page of an owner's log of state writes without a session (see
/// [`SharedStateStore::shared_state_writes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStateWrites {
    /// [`StateOwner::App`] or [`StateOwner::User`].
    pub owner: StateOwner,
    /// Strictly before this position (time in epoch µs, then id), newest first.
    pub before: Option<(i64, String)>,
    /// At most this many.
    pub limit: usize,
}

/// One write of `app:` or `user:` state without a session, as its owner's log keeps it: when,
/// by what, which keys. Values are not kept (the state holds the current ones): the log explains
/// a value without copying it, so encryption, re-keying and erasure have nothing more to reach
/// than the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStateWrite {
    /// Unique per write.
    pub id: String,
    /// When (epoch µs).
    pub at_micros: i64,
    /// What wrote it: a route (`PATCH /apps/{app}/users/{user}/state`), the CLI, or what the
    /// caller of [`SessionService::update_user_state`](crate::SessionService::update_user_state)
    /// named.
    pub origin: String,
    /// The keys set (without their prefix).
    pub set: Vec<String>,
    /// The keys removed.
    pub deleted: Vec<String>,
}

impl SharedStateWrite {
    /// The entry recording `update` (its keys sorted).
    pub fn of(update: &SharedStateUpdate) -> Self {
        let mut set: Vec<String> = update.delta.keys().filter(|k| !update.deleted.contains(k)).cloned().collect();
        let mut deleted = update.deleted.clone();
        set.sort_unstable();
        deleted.sort_unstable();
        Self { id: update.write_id.clone(), at_micros: update.now_micros, origin: update.origin.clone(), set, deleted }
    }

    /// Its position in the log, as [`SharedStateWrites::before`] takes it.
    pub fn position(&self) -> (i64, String) {
        (self.at_micros, self.id.clone())
    }
}

/// A write of `app:` or `user:` state without a session (see
/// [`SharedStateStore::update_shared_state`]), validated by the service.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedStateUpdate {
    /// [`StateOwner::App`] or [`StateOwner::User`].
    pub owner: StateOwner,
    /// Keys without their prefix and their new values; each key of `deleted` is here too, as
    /// `null` (as in an [`EventCommit`](super::EventCommit)'s delta).
    pub delta: Map<String, Value>,
    /// Keys to remove (without their prefix).
    pub deleted: Vec<String>,
    /// The time of the write (epoch µs): the row's update time.
    pub now_micros: i64,
    /// What writes it (recorded in the owner's log).
    pub origin: String,
    /// The log entry's id (unique).
    pub write_id: String,
}

/// [`SharedStateStore::shared_state`] for a store whose stored values are what its sessions see
/// (every store but one that transforms values, such as the encrypting wrapper): its admin read.
pub async fn shared_state_as_stored(admin: &dyn AdminStore, owner: &StateOwner) -> Result<Map<String, Value>> {
    owner.shared()?;
    admin.stored_state(owner).await
}

/// History a store answers itself (a client of another agentstate server, which keeps the
/// snapshots and the creation state), instead of the service replaying events.
#[async_trait]
pub trait RemoteHistory: Send + Sync {
    /// See [`SessionService::state_at`](crate::SessionService::state_at).
    async fn state_at(&self, key: &SessionKey, at: &HistoryAt) -> Result<Option<StateAt>>;

    /// See [`SessionService::event_diff`](crate::SessionService::event_diff).
    async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>>;

    /// See [`SessionService::fork_session`](crate::SessionService::fork_session).
    async fn fork(&self, request: &ForkSession) -> Result<Session>;
}
