//! The backend interface: everything a storage backend implements and uses, in one module.
//!
//! Applications call [`SessionService`]; every [`SessionStore`] is one. The rules common to all
//! backends (validation, ids, `temp:` handling, timestamp order, updating the caller's handle
//! only after a write) live in that implementation, written once, so a store only does the
//! storage work. Each of its methods must be atomic: a concurrent reader sees a call's effect
//! whole or not at all.
//!
//! A store builds the handles it returns with [`Session::from_storage`] and reads keys back with
//! [`SessionKey::from_storage`]. State arrives split by scope ([`ScopedState`]); the merged view a
//! handle shows is [`merge_scopes`]. Times are epoch microseconds in storage (see
//! [`secs_to_micros`]). Run the conformance suite (`agentstate-conformance`) against a new store
//! before calling it done.
//!
//! [`SessionService`]: crate::SessionService

mod raw;
pub mod replay;

use std::sync::Arc;

use async_trait::async_trait;

pub use crate::scope::{ScopedKeys, ScopedState, merge_scopes};
pub use crate::time::{micros_to_secs, now_micros, now_secs, secs_to_micros};
pub use raw::{RawSession, StoredEvent};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::event::Event;
use crate::history::{EventDiff, ForkSession, HistoryAt, StateAt};
use crate::key::SessionKey;
use crate::session::{Session, SessionAttributes};

/// A session to create, validated and split by scope.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Identity; the session id is the caller's or a generated UUIDv4.
    pub key: SessionKey,
    /// Initial state by scope (`temp:` keys already dropped).
    pub state: ScopedState,
    /// Creation time, epoch microseconds; also the first storage marker.
    pub create_time_micros: i64,
    /// Display name, labels, expiry (validated); stored with the session when not empty.
    pub attributes: SessionAttributes,
    /// The state the session's history starts from (flat, prefixed), stored as its creation
    /// snapshot ([`EventCursor::CREATION`]); `None` when it is not known (an import), and the
    /// history then starts empty.
    pub history_start: Option<Map<String, Value>>,
}

/// Which events [`SessionStore::get`] returns. Both limits apply together: events at or after
/// `after_micros`, of those the `recent` newest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventWindow {
    /// At most this many of the newest events; `None` for no limit.
    pub recent: Option<usize>,
    /// Only events with a timestamp at or after this (epoch microseconds).
    pub after_micros: Option<i64>,
}

/// Where a page of [`SessionStore::list`] starts: strictly after this position in the order
/// (last update time, user id, session id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListCursor {
    /// Last update time of the previous page's last session, epoch microseconds.
    pub last_update_micros: i64,
    /// Its user id.
    pub user_id: String,
    /// Its session id.
    pub session_id: String,
}

/// A validated list query.
#[derive(Debug, Clone)]
pub struct ListQuery {
    /// The app.
    pub app_name: String,
    /// One user, or every user of the app.
    pub user_id: Option<String>,
    /// Start strictly after this position.
    pub after: Option<ListCursor>,
    /// At most this many sessions; `None` for all.
    pub limit: Option<usize>,
}

/// A position in a session's history, in storage order (timestamp, then id): pages of events
/// start strictly after it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventCursor {
    /// The timestamp of the last event already seen, epoch microseconds.
    pub timestamp_micros: i64,
    /// Its id.
    pub event_id: String,
}

impl EventCursor {
    /// The position of a session's creation, before every event.
    pub const CREATION: EventCursor = EventCursor { timestamp_micros: i64::MIN, event_id: String::new() };

    /// The position of `event`.
    pub fn of(event: &Event) -> Self {
        Self { timestamp_micros: secs_to_micros(event.timestamp).unwrap_or(i64::MIN), event_id: event.id.clone() }
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

/// A page of one session's history, for [`SessionStore::events`].
#[derive(Debug, Clone)]
pub struct EventQuery {
    /// The session.
    pub key: SessionKey,
    /// Start strictly after this position; `None` for the oldest event.
    pub after: Option<EventCursor>,
    /// Only events with a timestamp at or after this (epoch microseconds).
    pub since_micros: Option<i64>,
    /// At most this many events.
    pub limit: usize,
}

/// An append that passed the common checks, ready to store.
#[derive(Debug, Clone)]
pub struct EventCommit {
    /// The session appended to.
    pub key: SessionKey,
    /// The storage marker the caller's handle was loaded at; storage must still hold it.
    pub expected_last_update_micros: i64,
    /// The event to store: id assigned, `temp:` keys trimmed, timestamp normalised.
    pub event: Arc<Event>,
    /// The event's timestamp in epoch microseconds, later than `expected_last_update_micros`;
    /// it becomes the session's new marker.
    pub timestamp_micros: i64,
    /// The event's state delta split by scope, to merge key by key.
    pub delta: ScopedState,
    /// Keys to delete after merging `delta`, split by scope (each is also in `delta`, as
    /// `null`).
    pub deleted: ScopedKeys,
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

/// The [metadata](SessionStore::metadata) entry that says a store is encrypted (see
/// `agentstate::crypt`, feature `encryption`), with a check value per key id.
pub const ENCRYPTION_METADATA: &str = "agentstate_encryption";

/// Whose state a value belongs to, for the store's raw state operations
/// ([`SessionStore::stored_state`], [`SessionStore::swap_values`]).
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

/// What [`SessionStore::erase_user`] removed (or, from [`SessionStore::user_data`], would
/// remove): a user's sessions, their events, and the keys of the user's `user:` state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserData {
    /// Sessions.
    pub sessions: usize,
    /// Their events.
    pub events: usize,
    /// Keys of the user's `user:` state.
    pub user_state_keys: usize,
}

impl UserData {
    /// Whether there is nothing.
    pub fn is_empty(&self) -> bool {
        self.sessions == 0 && self.events == 0 && self.user_state_keys == 0
    }
}

/// Storage for sessions. Implement this to add a backend; run the conformance suite
/// (`agentstate-conformance`) against it before calling it done.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Creates a session. Atomically: if (app, user, id) exists → `AlreadyExists` and nothing
    /// changes; else merge `state.app`/`state.user` into the app/user state key by key, store the
    /// session with its attributes, and return its handle with the merged state, its creation
    /// time, its attributes and no events.
    async fn create(&self, new: NewSession) -> Result<Session>;

    /// Loads a session with the events in `window`, its creation time and attributes, or `None`
    /// if it does not exist. The state is the merged view read in one consistent snapshot.
    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>>;

    /// Like [`get`](Self::get), with the events as the store keeps them when that is their JSON
    /// text, undecoded, for writing them out. The provided implementation decodes (calls `get`):
    /// right for any store, and the only right one for a store whose text is not the event's
    /// (encrypted, say). Stores of `event_data` text override it.
    async fn get_raw(&self, key: &SessionKey, window: EventWindow) -> Result<Option<RawSession>> {
        Ok(self.get(key, window).await?.map(|session| RawSession { session, stored_events: None }))
    }

    /// Lists sessions in the order (last update time, user id, session id), with merged state,
    /// creation time and attributes, and no events.
    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>>;

    /// Deletes a session and its events; a missing session is not an error. App and user state
    /// stay.
    async fn delete(&self, key: &SessionKey) -> Result<()>;

    /// Stores an event. Atomically, in this order:
    /// 1. the session is missing → `NotFound`;
    /// 2. an event with this id is stored: the same event → [`CommitOutcome::Duplicate`], a
    ///    different one → `Conflict` (`DuplicateEventId`);
    /// 3. the session's marker differs from `expected_last_update_micros` → `Conflict`
    ///    (`StaleSession`);
    /// 4. store the event, merge the delta key by key into app, user and session state, then
    ///    remove the `deleted` keys (a concurrent writer of other keys loses nothing), set the
    ///    marker to `timestamp_micros`.
    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome>;

    /// The session's events after `query.after` (from the start if `None`) and at or after
    /// `query.since_micros`, oldest first, at most `query.limit`; `None` if the session does not
    /// exist.
    ///
    /// The provided implementation loads the whole history and slices it: correct for any
    /// store, O(history). Stores override it with a query that reads only the page.
    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let window = EventWindow { recent: None, after_micros: query.since_micros };
        let Some(session) = self.get(&query.key, window).await? else { return Ok(None) };
        let position = |e: &Event| (secs_to_micros(e.timestamp).unwrap_or(i64::MIN), e.id.clone());
        let events = session
            .events()
            .iter()
            .filter(|e| query.after.as_ref().is_none_or(|c| position(e) > (c.timestamp_micros, c.event_id.clone())))
            .take(query.limit)
            .cloned()
            .collect();
        Ok(Some(events))
    }

    /// The newest history snapshot of the session at or before `at_or_before_micros` (an event
    /// time; [`EventCursor::CREATION`]'s for the creation snapshot alone); `None` if there is
    /// none, or no such session.
    ///
    /// The provided implementation stores nothing, so history is replayed from an empty state:
    /// correct for events, blind to the creation state. Stores keep snapshots: the creation one
    /// at [`create`](Self::create), the others when [`put_history_snapshots`](Self::put_history_snapshots)
    /// gives them.
    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let _ = (key, at_or_before_micros);
        Ok(None)
    }

    /// Keeps snapshots a history read computed, so later reads replay less. A snapshot at a
    /// position already kept is the same state (history never changes): keep either. Nothing
    /// for a session that no longer exists.
    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        let _ = (key, snapshots);
        Ok(())
    }

    /// The event `event_id` of the session; `None` if it has none (or does not exist).
    ///
    /// The provided implementation pages through the history. Stores override it with a lookup.
    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        self.find_event(key, &|e| e.id == event_id).await
    }

    /// The first event (oldest) of invocation `invocation_id` in the session; `None` if it has
    /// none (or does not exist).
    ///
    /// The provided implementation pages through the history. Stores override it with a query.
    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        self.find_event(key, &|e| e.invocation_id == invocation_id).await
    }

    /// The oldest event that satisfies `matches`, paging through the history.
    #[doc(hidden)]
    async fn find_event(
        &self,
        key: &SessionKey,
        matches: &(dyn for<'e> Fn(&'e Event) -> bool + Sync),
    ) -> Result<Option<Event>> {
        const PAGE: usize = 500;
        let mut query = EventQuery { key: key.clone(), after: None, since_micros: None, limit: PAGE };
        loop {
            let Some(page) = self.events(&query).await? else { return Ok(None) };
            let full = page.len() == PAGE;
            let last = page.last().map(EventCursor::of);
            if let Some(found) = page.into_iter().find(|e| matches(e)) {
                return Ok(Some(found));
            }
            match last {
                Some(last) if full => query.after = Some(last),
                _ => return Ok(None),
            }
        }
    }

    /// The state of the session at `at`: see [`crate::history`]. `None` if the session does
    /// not exist.
    ///
    /// The provided implementation replays from the newest snapshot and keeps a snapshot every
    /// [`history::SNAPSHOT_EVERY`](crate::history::SNAPSHOT_EVERY) events it replayed. A store
    /// whose history lives elsewhere (a remote service) overrides it.
    async fn state_at(&self, key: &SessionKey, at: &HistoryAt) -> Result<Option<StateAt>> {
        replay::state_at(self, key, at).await
    }

    /// What event `event_id` changed: see [`crate::history`]. `None` if the session does not
    /// exist.
    async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>> {
        replay::event_diff(self, key, event_id).await
    }

    /// Copies the events of `from` up to and including `upto` into `to` as history: the same
    /// ids, contents and times (moved forward only where they are not after `to_marker`, the
    /// marker `to` has now), no delta applied. `to` was just created and has no events; its
    /// marker becomes the last copied event's time. Returns that event's position in `to`.
    ///
    /// The provided implementation commits the events one at a time. Stores override it with a
    /// copy inside the store.
    async fn copy_events(
        &self,
        from: &SessionKey,
        to: &SessionKey,
        upto: &EventCursor,
        to_marker: i64,
    ) -> Result<Option<EventCursor>> {
        replay::copy_events(self, from, to, upto, to_marker).await
    }

    /// Forks a session: see [`SessionService::fork_session`](crate::SessionService::fork_session).
    async fn fork(&self, request: &ForkSession) -> Result<Session> {
        replay::fork(self, request).await
    }

    /// Deletes up to `limit` sessions whose expire time is at or before `before_micros` (oldest
    /// expiry first), with their events, in one atomic step: a session created again under the
    /// same id after its predecessor expired is never touched. Returns how many it deleted. Stores
    /// find them through an index on the expire time, never a scan of every session.
    ///
    /// The provided implementation deletes none: a store that does not override it is never
    /// swept (its expired sessions stay hidden, not removed). Stores whose storage expires data
    /// by itself (Redis) may also delete none.
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        let _ = (before_micros, limit);
        Ok(0)
    }

    /// Removes everything of `user` in `app`: every session with its events, history snapshots
    /// and attributes, and the user's `user:` state; `app:` state stays. Atomic, or resumable
    /// (calling it again after an interruption finishes the job). Deleted content is overwritten
    /// where the storage would otherwise keep it (SQLite's `secure_delete`), not only unlinked.
    ///
    /// The provided implementation refuses: a store must say how it erases.
    async fn erase_user(&self, app: &str, user: &str) -> Result<UserData> {
        let _ = (app, user);
        Err(Error::Backend {
            message: "this backend cannot erase a user's data".to_owned(),
            retryable: false,
            source: None,
        })
    }

    /// What [`erase_user`](Self::erase_user) would remove now.
    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        let _ = (app, user);
        Err(Error::Backend {
            message: "this backend cannot count a user's data".to_owned(),
            retryable: false,
            source: None,
        })
    }

    /// Sets the session's expire time (epoch µs; `None`: never expires); `false` if there is no
    /// such session. Atomic; on stores with native expiry, every key of the session follows.
    ///
    /// The provided implementation refuses.
    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>) -> Result<bool> {
        let _ = (key, expire_micros);
        Err(Error::Backend {
            message: "this backend cannot change an expire time".to_owned(),
            retryable: false,
            source: None,
        })
    }

    /// Drops the session's events older than `cut_micros` (a retention policy; see
    /// [`SessionService::apply_retention`](crate::SessionService::apply_retention)), with the
    /// history snapshots before it, and keeps `boundary` (the history state just before the cut,
    /// at position (`cut_micros - 1`, `""`)) as the oldest snapshot, so history reads stop there
    /// with a clear error instead of a wrong answer. The state is untouched. Atomic; returns how
    /// many events it dropped (none for a missing session).
    ///
    /// The provided implementation refuses: a store must say how it drops events.
    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let _ = (key, cut_micros, boundary);
        Err(Error::Backend {
            message: "this backend cannot drop old events".to_owned(),
            retryable: false,
            source: None,
        })
    }

    /// How many events the session holds; `None` if it does not exist.
    ///
    /// The provided implementation pages through the history. Stores override it with a count.
    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        const PAGE: usize = 1000;
        let mut query = EventQuery { key: key.clone(), after: None, since_micros: None, limit: PAGE };
        let mut count = 0;
        loop {
            let Some(page) = self.events(&query).await? else { return Ok(None) };
            count += page.len();
            match page.last() {
                Some(last) if page.len() == PAGE => query.after = Some(EventCursor::of(last)),
                _ => return Ok(Some(count)),
            }
        }
    }

    /// Every app that has sessions or state. For maintenance that visits everything (re-encryption).
    async fn apps(&self) -> Result<Vec<String>> {
        Err(Error::Backend { message: "this backend cannot list its apps".to_owned(), retryable: false, source: None })
    }

    /// Every user of `app` that has sessions or `user:` state.
    async fn users(&self, app: &str) -> Result<Vec<String>> {
        let _ = app;
        Err(Error::Backend { message: "this backend cannot list users".to_owned(), retryable: false, source: None })
    }

    /// The state `owner` holds, as stored (values are not interpreted); empty if none.
    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let _ = owner;
        Err(Error::Backend { message: "this backend cannot read raw state".to_owned(), retryable: false, source: None })
    }

    /// Replaces stored values of `owner`, each only if it is still the `old` one; atomic;
    /// returns how many it replaced. Changes nothing else (not the session's marker).
    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        let _ = (owner, swaps);
        Err(Error::Backend { message: "this backend cannot rewrite state".to_owned(), retryable: false, source: None })
    }

    /// Rewrites the stored form of event `event.id` of the session (same id, time and
    /// invocation; the content is the caller's, e.g. re-encrypted); `false` if there is none.
    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        let _ = (key, event);
        Err(Error::Backend { message: "this backend cannot rewrite events".to_owned(), retryable: false, source: None })
    }

    /// A named entry of the store's own metadata (for instance [`ENCRYPTION_METADATA`]), or
    /// `None`. The provided implementation has none.
    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        let _ = name;
        Ok(None)
    }

    /// Sets a named entry of the store's metadata. The provided implementation refuses.
    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        let _ = (name, value);
        Err(Error::Backend { message: "this backend keeps no metadata".to_owned(), retryable: false, source: None })
    }

    /// The users of `app` that have a session called `session_id`.
    ///
    /// The provided implementation pages through the app's sessions: correct for any store,
    /// O(sessions of the app). Stores override it with a lookup.
    async fn users_with_session(&self, app: &str, session_id: &str) -> Result<Vec<String>> {
        const PAGE: usize = 500;
        let mut query = ListQuery { app_name: app.to_owned(), user_id: None, after: None, limit: Some(PAGE) };
        let mut users = Vec::new();
        loop {
            let page = self.list(&query).await?;
            users.extend(page.iter().filter(|s| s.id() == session_id).map(|s| s.user_id().to_owned()));
            match page.last() {
                Some(last) if page.len() == PAGE => {
                    query.after = Some(ListCursor {
                        last_update_micros: last.last_update_micros(),
                        user_id: last.user_id().to_owned(),
                        session_id: last.id().to_owned(),
                    });
                }
                _ => return Ok(users),
            }
        }
    }
}

/// A store that hands each operation to another store, picked per call: one chosen at run time
/// (by database URL), a round-robin over instances, a router by app. Implementing this gives the
/// whole [`SessionStore`] (and so [`SessionService`](crate::SessionService)) without forwarding
/// each method by hand.
pub trait DelegatingStore: Send + Sync + 'static {
    /// The store for the next operation.
    fn delegate(&self) -> &dyn SessionStore;
}

#[async_trait]
impl<T: DelegatingStore> SessionStore for T {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.delegate().create(new).await
    }

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        self.delegate().get(key, window).await
    }

    async fn get_raw(&self, key: &SessionKey, window: EventWindow) -> Result<Option<RawSession>> {
        self.delegate().get_raw(key, window).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        self.delegate().list(query).await
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

    async fn users_with_session(&self, app: &str, session_id: &str) -> Result<Vec<String>> {
        self.delegate().users_with_session(app, session_id).await
    }

    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        self.delegate().delete_expired(before_micros, limit).await
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserData> {
        self.delegate().erase_user(app, user).await
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        self.delegate().metadata(name).await
    }

    async fn apps(&self) -> Result<Vec<String>> {
        self.delegate().apps().await
    }

    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        self.delegate().event_count(key).await
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        self.delegate().users(app).await
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        self.delegate().stored_state(owner).await
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        self.delegate().swap_values(owner, swaps).await
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        self.delegate().rewrite_event(key, event).await
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        self.delegate().drop_events_before(key, cut_micros, boundary).await
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>) -> Result<bool> {
        self.delegate().set_expire_time(key, expire_micros).await
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        self.delegate().set_metadata(name, value).await
    }

    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        self.delegate().user_data(app, user).await
    }

    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        self.delegate().history_snapshot(key, at_or_before_micros).await
    }

    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        self.delegate().put_history_snapshots(key, snapshots).await
    }

    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        self.delegate().event(key, event_id).await
    }

    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        self.delegate().first_event_of_invocation(key, invocation_id).await
    }

    async fn state_at(&self, key: &SessionKey, at: &HistoryAt) -> Result<Option<StateAt>> {
        self.delegate().state_at(key, at).await
    }

    async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>> {
        self.delegate().event_diff(key, event_id).await
    }

    async fn copy_events(
        &self,
        from: &SessionKey,
        to: &SessionKey,
        upto: &EventCursor,
        to_marker: i64,
    ) -> Result<Option<EventCursor>> {
        self.delegate().copy_events(from, to, upto, to_marker).await
    }

    async fn fork(&self, request: &ForkSession) -> Result<Session> {
        self.delegate().fork(request).await
    }
}
