//! [`InMemorySessionService`]: the reference backend. Nothing survives a restart.
//!
//! Layout: app → (app state, users); user → (user state, sessions); session → (state, events,
//! event-id index). Appends are O(1) amortised (the id index replaces the reference's scan of the
//! history), and a windowed `get` costs O(log history + returned events).
//!
//! One `std::sync::RwLock` guards the whole tree. Every critical section is short, synchronous
//! and never held across an `.await` (clippy's `await_holding_lock` is denied), so a std lock is
//! cheaper than an async one. One lock also makes each call trivially atomic across the app,
//! user and session levels, which is what the per-key merge and the stale check need.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{ConflictKind, Error, Result};
use crate::event::Event;
use crate::key::SessionKey;
use crate::session::{Session, SessionAttributes};
use crate::store::{
    CommitOutcome, EventCommit, EventCursor, EventQuery, EventWindow, HistorySnapshot, ListQuery, NewSession,
    SessionStore, StateOwner, UserData, ValueSwap, merge_scopes,
};

/// Sessions kept in process memory: for development, tests and examples.
///
/// ```
/// use std::sync::Arc;
/// use agentstate::{InMemorySessionService, SessionService};
/// let service: Arc<dyn SessionService> = Arc::new(InMemorySessionService::new());
/// ```
#[derive(Debug, Default)]
pub struct InMemorySessionService {
    apps: RwLock<HashMap<String, AppEntry>>,
    metadata: RwLock<BTreeMap<String, String>>,
}

#[derive(Debug, Default)]
struct AppEntry {
    state: Map<String, Value>,
    users: HashMap<String, UserEntry>,
}

#[derive(Debug, Default)]
struct UserEntry {
    state: Map<String, Value>,
    sessions: HashMap<String, StoredSession>,
}

#[derive(Debug)]
struct StoredSession {
    state: Map<String, Value>,
    create_time_micros: i64,
    attributes: Option<Arc<SessionAttributes>>,
    /// Timestamps in epoch microseconds, strictly increasing, parallel to `events`.
    times: Vec<i64>,
    events: Vec<Arc<Event>>,
    index_of_id: HashMap<String, usize>,
    last_update_micros: i64,
    /// History snapshots by position (see [`crate::history`]).
    snapshots: BTreeMap<EventCursor, Map<String, Value>>,
}

impl StoredSession {
    fn window(&self, window: EventWindow) -> &[Arc<Event>] {
        let by_time = window.after_micros.map_or(0, |after| self.times.partition_point(|&t| t < after));
        let by_count = window.recent.map_or(0, |n| self.events.len().saturating_sub(n));
        &self.events[by_time.max(by_count)..]
    }
}

/// The stored session `key`, if any.
fn stored<'a>(apps: &'a HashMap<String, AppEntry>, key: &SessionKey) -> Option<&'a StoredSession> {
    apps.get(key.app_name()).and_then(|a| a.users.get(key.user_id())).and_then(|u| u.sessions.get(key.session_id()))
}

/// What a user holds.
fn user_data(user: &UserEntry) -> UserData {
    UserData {
        sessions: user.sessions.len(),
        events: user.sessions.values().map(|s| s.events.len()).sum(),
        user_state_keys: user.state.len(),
    }
}

/// Sets each key of `delta` in `target`, then removes `deleted`.
fn merge_into(target: &mut Map<String, Value>, delta: &Map<String, Value>, deleted: &[String]) {
    for (k, v) in delta {
        target.insert(k.clone(), v.clone());
    }
    for k in deleted {
        target.shift_remove(k);
    }
}

impl InMemorySessionService {
    /// An empty service.
    pub fn new() -> Self {
        Self::default()
    }

    // A panic cannot leave the tree half-updated: every write section validates first and only
    // then mutates, with no fallible step in between. So a poisoned lock is still consistent.
    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, AppEntry>> {
        self.apps.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, AppEntry>> {
        self.apps.write().unwrap_or_else(PoisonError::into_inner)
    }
}

fn handle(key: SessionKey, app: &AppEntry, user: &UserEntry, stored: &StoredSession, events: &[Arc<Event>]) -> Session {
    let state = merge_scopes(&stored.state, &app.state, &user.state);
    Session::from_storage(key, state, events.iter().cloned(), stored.last_update_micros)
        .created_at(stored.create_time_micros)
        .with_attributes(stored.attributes.clone())
}

#[async_trait]
impl SessionStore for InMemorySessionService {
    async fn create(&self, new: NewSession) -> Result<Session> {
        let NewSession { key, state, create_time_micros, attributes, history_start } = new;
        let mut apps = self.write();
        let app = apps.entry(key.app_name().to_owned()).or_default();
        let exists = app.users.get(key.user_id()).is_some_and(|u| u.sessions.contains_key(key.session_id()));
        if exists {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
        }
        merge_into(&mut app.state, &state.app, &[]);
        let user = app.users.entry(key.user_id().to_owned()).or_default();
        merge_into(&mut user.state, &state.user, &[]);
        let stored = StoredSession {
            state: state.session,
            create_time_micros,
            attributes: (!attributes.is_empty()).then(|| Arc::new(attributes)),
            times: Vec::new(),
            events: Vec::new(),
            index_of_id: HashMap::new(),
            last_update_micros: create_time_micros,
            snapshots: history_start.map(|start| (EventCursor::CREATION, start)).into_iter().collect(),
        };
        let session = Session::from_storage(
            key.clone(),
            merge_scopes(&stored.state, &app.state, &user.state),
            Vec::<Arc<Event>>::new(),
            create_time_micros,
        )
        .created_at(create_time_micros)
        .with_attributes(stored.attributes.clone());
        user.sessions.insert(key.session_id().to_owned(), stored);
        Ok(session)
    }

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        let apps = self.read();
        let Some(app) = apps.get(key.app_name()) else { return Ok(None) };
        let Some(user) = app.users.get(key.user_id()) else { return Ok(None) };
        let Some(stored) = user.sessions.get(key.session_id()) else { return Ok(None) };
        Ok(Some(handle(key.clone(), app, user, stored, stored.window(window))))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let apps = self.read();
        let Some(app) = apps.get(&query.app_name) else { return Ok(Vec::new()) };
        let mut rows: Vec<(i64, &str, &str, &UserEntry, &StoredSession)> = app
            .users
            .iter()
            .filter(|(user_id, _)| query.user_id.as_deref().is_none_or(|u| u == user_id.as_str()))
            .flat_map(|(user_id, user)| {
                user.sessions.iter().map(move |(id, s)| (s.last_update_micros, user_id.as_str(), id.as_str(), user, s))
            })
            .filter(|(t, u, id, ..)| {
                query
                    .after
                    .as_ref()
                    .is_none_or(|c| (*t, *u, *id) > (c.last_update_micros, c.user_id.as_str(), c.session_id.as_str()))
            })
            .collect();
        rows.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        rows.truncate(query.limit.unwrap_or(usize::MAX));
        Ok(rows
            .into_iter()
            .map(|(_, user_id, id, user, stored)| {
                handle(SessionKey::from_storage(query.app_name.as_str(), user_id, id), app, user, stored, &[])
            })
            .collect())
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        let mut apps = self.write();
        if let Some(user) = apps.get_mut(key.app_name()).and_then(|a| a.users.get_mut(key.user_id())) {
            user.sessions.remove(key.session_id());
        }
        Ok(())
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let EventQuery { key, after, since_micros, limit } = query;
        let apps = self.read();
        let stored = apps
            .get(key.app_name())
            .and_then(|a| a.users.get(key.user_id()))
            .and_then(|u| u.sessions.get(key.session_id()));
        let Some(stored) = stored else { return Ok(None) };
        // Timestamps are strictly increasing here, so the time alone finds the position.
        let after_cursor = after.as_ref().map_or(0, |c| {
            stored.times.partition_point(|&t| t < c.timestamp_micros)
                + usize::from(stored.times.binary_search(&c.timestamp_micros).is_ok())
        });
        let since = since_micros.map_or(0, |since| stored.times.partition_point(|&t| t < since));
        let start = after_cursor.max(since);
        let end = start.saturating_add(*limit).min(stored.events.len());
        Ok(Some(stored.events.get(start..end).unwrap_or_default().iter().map(|e| Event::clone(e)).collect()))
    }

    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let apps = self.read();
        let Some(stored) = stored(&apps, key) else { return Ok(None) };
        let found = match at_or_before_micros.checked_add(1) {
            Some(end) => {
                stored.snapshots.range(..EventCursor { timestamp_micros: end, event_id: String::new() }).next_back()
            }
            None => stored.snapshots.iter().next_back(),
        };
        Ok(found.map(|(at, state)| HistorySnapshot { at: at.clone(), state: state.clone() }))
    }

    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        let mut apps = self.write();
        let stored = apps
            .get_mut(key.app_name())
            .and_then(|a| a.users.get_mut(key.user_id()))
            .and_then(|u| u.sessions.get_mut(key.session_id()));
        if let Some(stored) = stored {
            for snapshot in snapshots {
                stored.snapshots.insert(snapshot.at.clone(), snapshot.state.clone());
            }
        }
        Ok(())
    }

    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        let apps = self.read();
        let found = stored(&apps, key).and_then(|s| s.index_of_id.get(event_id).map(|&i| Event::clone(&s.events[i])));
        Ok(found)
    }

    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        let apps = self.read();
        let found = stored(&apps, key)
            .and_then(|s| s.events.iter().find(|e| e.invocation_id == invocation_id).map(|e| Event::clone(e)));
        Ok(found)
    }

    async fn users_with_session(&self, app: &str, session_id: &str) -> Result<Vec<String>> {
        let apps = self.read();
        let Some(app) = apps.get(app) else { return Ok(Vec::new()) };
        let mut users: Vec<String> = app
            .users
            .iter()
            .filter(|(_, user)| user.sessions.contains_key(session_id))
            .map(|(id, _)| id.clone())
            .collect();
        users.sort_unstable();
        Ok(users)
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>) -> Result<bool> {
        let mut apps = self.write();
        let stored = apps
            .get_mut(key.app_name())
            .and_then(|a| a.users.get_mut(key.user_id()))
            .and_then(|u| u.sessions.get_mut(key.session_id()));
        let Some(stored) = stored else { return Ok(false) };
        let mut attributes = stored.attributes.as_deref().cloned().unwrap_or_default();
        attributes.expire_time_micros = expire_micros;
        stored.attributes = (!attributes.is_empty()).then(|| Arc::new(attributes));
        Ok(true)
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let mut apps = self.write();
        let stored = apps
            .get_mut(key.app_name())
            .and_then(|a| a.users.get_mut(key.user_id()))
            .and_then(|u| u.sessions.get_mut(key.session_id()));
        let Some(stored) = stored else { return Ok(0) };
        let dropped = stored.times.partition_point(|&t| t < cut_micros);
        stored.times.drain(..dropped);
        stored.events.drain(..dropped);
        stored.index_of_id = stored.events.iter().enumerate().map(|(i, e)| (e.id.clone(), i)).collect();
        stored.snapshots.retain(|at, _| at.timestamp_micros >= cut_micros);
        stored.snapshots.insert(boundary.at.clone(), boundary.state.clone());
        Ok(dropped)
    }

    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        Ok(stored(&self.read(), key).map(|s| s.events.len()))
    }

    async fn apps(&self) -> Result<Vec<String>> {
        let mut apps: Vec<String> = self.read().keys().cloned().collect();
        apps.sort_unstable();
        Ok(apps)
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        let mut users: Vec<String> =
            self.read().get(app).map(|a| a.users.keys().cloned().collect()).unwrap_or_default();
        users.sort_unstable();
        Ok(users)
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let apps = self.read();
        let state = match owner {
            StateOwner::App(app) => apps.get(app).map(|a| &a.state),
            StateOwner::User { app, user } => apps.get(app).and_then(|a| a.users.get(user)).map(|u| &u.state),
            StateOwner::Session(key) => stored(&apps, key).map(|s| &s.state),
        };
        Ok(state.cloned().unwrap_or_default())
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        let mut apps = self.write();
        let state = match owner {
            StateOwner::App(app) => apps.get_mut(app).map(|a| &mut a.state),
            StateOwner::User { app, user } => {
                apps.get_mut(app).and_then(|a| a.users.get_mut(user)).map(|u| &mut u.state)
            }
            StateOwner::Session(key) => apps
                .get_mut(key.app_name())
                .and_then(|a| a.users.get_mut(key.user_id()))
                .and_then(|u| u.sessions.get_mut(key.session_id()))
                .map(|s| &mut s.state),
        };
        let Some(state) = state else { return Ok(0) };
        let mut swapped = 0;
        for swap in swaps {
            if let Some(value) = state.get_mut(&swap.key)
                && *value == swap.old
            {
                *value = swap.new.clone();
                swapped += 1;
            }
        }
        Ok(swapped)
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        let mut apps = self.write();
        let stored = apps
            .get_mut(key.app_name())
            .and_then(|a| a.users.get_mut(key.user_id()))
            .and_then(|u| u.sessions.get_mut(key.session_id()));
        let Some(stored) = stored else { return Ok(false) };
        let Some(&i) = stored.index_of_id.get(&event.id) else { return Ok(false) };
        let timestamp = stored.events[i].timestamp;
        stored.events[i] = Arc::new(Event { timestamp, ..event.clone() });
        Ok(true)
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        Ok(self.metadata.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned())
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        self.metadata.write().unwrap_or_else(PoisonError::into_inner).insert(name.to_owned(), value.to_owned());
        Ok(())
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserData> {
        let mut apps = self.write();
        let removed = apps.get_mut(app).and_then(|a| a.users.remove(user));
        Ok(removed.as_ref().map(user_data).unwrap_or_default())
    }

    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        let apps = self.read();
        let found = apps.get(app).and_then(|a| a.users.get(user));
        Ok(found.map(user_data).unwrap_or_default())
    }

    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        let mut apps = self.write();
        let mut expired: Vec<(i64, String, String, String)> = Vec::new();
        for (app_name, app) in apps.iter() {
            for (user_id, user) in &app.users {
                for (id, stored) in &user.sessions {
                    let expires = stored.attributes.as_ref().and_then(|a| a.expire_time_micros);
                    if let Some(at) = expires.filter(|&t| t <= before_micros) {
                        expired.push((at, app_name.clone(), user_id.clone(), id.clone()));
                    }
                }
            }
        }
        expired.sort_unstable();
        expired.truncate(limit);
        for (_, app, user, id) in &expired {
            if let Some(user) = apps.get_mut(app).and_then(|a| a.users.get_mut(user)) {
                user.sessions.remove(id);
            }
        }
        Ok(expired.len())
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let EventCommit { key, expected_last_update_micros, event, timestamp_micros, delta, deleted } = commit;
        let mut apps = self.write();
        let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
        let app = apps.get_mut(key.app_name()).ok_or_else(not_found)?;
        let user = app.users.get_mut(key.user_id()).ok_or_else(not_found)?;
        let stored = user.sessions.get_mut(key.session_id()).ok_or_else(not_found)?;

        if let Some(&i) = stored.index_of_id.get(&event.id) {
            let existing = &stored.events[i];
            return if existing.same_as_retry(&event) {
                Ok(CommitOutcome::Duplicate(Box::new(Event::clone(existing))))
            } else {
                Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: event.id.clone() } })
            };
        }
        if stored.last_update_micros != expected_last_update_micros {
            return Err(Error::stale());
        }

        merge_into(&mut stored.state, &delta.session, &deleted.session);
        stored.index_of_id.insert(event.id.clone(), stored.events.len());
        stored.times.push(timestamp_micros);
        stored.events.push(event);
        stored.last_update_micros = timestamp_micros;
        merge_into(&mut user.state, &delta.user, &deleted.user);
        merge_into(&mut app.state, &delta.app, &deleted.app);
        Ok(CommitOutcome::Committed)
    }
}
