//! [`InMemoryStore`]: the reference store, with every capability. Nothing survives a restart.
//!
//! Layout: app → (app state, users); user → (user state, sessions); session → (state, events,
//! event-id index, each event's compaction facts, history snapshots). Appends are O(1) amortised
//! (the id index replaces the reference's scan of the history), a windowed read costs O(log
//! history + returned events), and the compacted view reads the kept facts and hands out only
//! the events it keeps.
//!
//! One `std::sync::RwLock` guards the whole tree. Every critical section is short, synchronous
//! and never held across an `.await` (clippy's `await_holding_lock` is denied), so a std lock is
//! cheaper than an async one. One lock also makes each call trivially atomic across the app,
//! user and session levels, which is what the per-key merge and the stale check need.

mod artifact;
mod memory;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::compaction::{self, Facts};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::key::SessionKey;
use crate::session::{Session, SessionAttributes};
use crate::store::{
    AdminStore, AttributesUpdate, Capabilities, CommitOutcome, EventCommit, EventCopy, EventCursor, EventQuery,
    HistorySnapshot, HistoryStore, LifecycleStore, ListOrder, ListQuery, LoadedSession, LocalLeases, NewSession,
    SessionRead, SessionStore, StateOwner, UserDataCounts, ValueSwap, apply_changes, merge_scopes, replay,
};

/// Sessions kept in process memory: for development, tests and examples.
///
/// ```
/// use agentstate::{InMemoryStore, SessionService};
/// let service = SessionService::new(InMemoryStore::new());
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    apps: RwLock<HashMap<String, AppEntry>>,
    metadata: RwLock<BTreeMap<String, String>>,
    memories: memory::Memories,
    artifacts: artifact::Artifacts,
    leases: LocalLeases,
}

#[derive(Debug, Default)]
struct AppEntry {
    state: Map<String, Value>,
    users: HashMap<String, UserEntry>,
    /// The log of `app:` writes without a session, oldest first.
    writes: Vec<crate::store::SharedStateWrite>,
}

#[derive(Debug, Default)]
struct UserEntry {
    state: Map<String, Value>,
    sessions: HashMap<String, Entry>,
    /// The log of `user:` writes without a session, oldest first.
    writes: Vec<crate::store::SharedStateWrite>,
}

/// One session as kept here.
#[derive(Debug)]
struct Entry {
    state: Map<String, Value>,
    create_time_micros: i64,
    attributes: Option<Arc<SessionAttributes>>,
    /// In storage order; times strictly increase.
    events: Vec<Arc<Event>>,
    /// What the compacted view needs to know of each event, position for position.
    facts: Vec<Facts>,
    index_of_id: HashMap<String, usize>,
    last_update_micros: i64,
    /// History snapshots by position (see [`crate::history`]).
    snapshots: BTreeMap<EventCursor, Map<String, Value>>,
}

impl Entry {
    fn expire_micros(&self) -> Option<i64> {
        self.attributes.as_ref().and_then(|a| a.expire_time_micros)
    }

    fn live_at(&self, now_micros: i64) -> bool {
        crate::session::live_at(self.expire_micros(), now_micros)
    }

    fn set_expire(&mut self, expire_micros: Option<i64>) {
        let mut attributes = self.attributes.as_deref().cloned().unwrap_or_default();
        attributes.expire_time_micros = expire_micros;
        self.attributes = (!attributes.is_empty()).then(|| Arc::new(attributes));
    }
}

/// The live session `key` at `now`, if any.
fn live<'a>(apps: &'a HashMap<String, AppEntry>, key: &SessionKey, now: i64) -> Option<&'a Entry> {
    let entry = apps.get(key.app_name())?.users.get(key.user_id())?.sessions.get(key.session_id())?;
    entry.live_at(now).then_some(entry)
}

/// The session `key`, live or not, to change.
fn entry_mut<'a>(apps: &'a mut HashMap<String, AppEntry>, key: &SessionKey) -> Option<&'a mut Entry> {
    apps.get_mut(key.app_name())?.users.get_mut(key.user_id())?.sessions.get_mut(key.session_id())
}

/// What a user holds.
fn counts(user: &UserEntry) -> UserDataCounts {
    UserDataCounts {
        sessions: user.sessions.len(),
        events: user.sessions.values().map(|s| s.events.len()).sum(),
        user_state_keys: user.state.len(),
        memories: 0,
        artifacts: 0,
    }
}

fn handle(key: SessionKey, app: &AppEntry, user: &UserEntry, entry: &Entry, events: &[Arc<Event>]) -> Session {
    let state = merge_scopes(&entry.state, &app.state, &user.state);
    Session::from_storage(key, state, events.iter().cloned(), entry.last_update_micros)
        .created_at(entry.create_time_micros)
        .with_attributes(entry.attributes.clone())
}

impl InMemoryStore {
    /// An empty store.
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

#[async_trait]
impl SessionStore for InMemoryStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        let NewSession { key, state, create_time_micros, attributes, history_start } = new;
        let mut apps = self.write();
        let app = apps.entry(key.app_name().to_owned()).or_default();
        let taken = app
            .users
            .get(key.user_id())
            .and_then(|u| u.sessions.get(key.session_id()))
            .is_some_and(|s| s.live_at(create_time_micros));
        if taken {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
        }
        apply_changes(&mut app.state, &state.app, &[]);
        let user = app.users.entry(key.user_id().to_owned()).or_default();
        apply_changes(&mut user.state, &state.user, &[]);
        let entry = Entry {
            state: state.session,
            create_time_micros,
            attributes: (!attributes.is_empty()).then(|| Arc::new(attributes)),
            events: Vec::new(),
            facts: Vec::new(),
            index_of_id: HashMap::new(),
            last_update_micros: create_time_micros,
            snapshots: history_start.map(|start| (EventCursor::CREATION, start)).into_iter().collect(),
        };
        let merged = merge_scopes(&entry.state, &app.state, &user.state);
        let session = Session::from_storage(key.clone(), merged, Vec::<Arc<Event>>::new(), create_time_micros)
            .created_at(create_time_micros)
            .with_attributes(entry.attributes.clone());
        // An expired session under this id is replaced, events and history with it.
        user.sessions.insert(key.session_id().to_owned(), entry);
        Ok(session)
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        let apps = self.read();
        let Some(entry) = live(&apps, key, read.now_micros) else { return Ok(None) };
        let app = &apps[key.app_name()];
        let user = &app.users[key.user_id()];
        let Some(overlap) = read.compacted() else {
            let session = handle(key.clone(), app, user, entry, read.window.slice(&entry.events));
            return Ok(Some(LoadedSession::decoded(session)));
        };
        // The view from the facts kept at each append: only its events are handed out.
        let kept: Vec<Arc<Event>> =
            compaction::view(&entry.facts, overlap).into_iter().map(|i| Arc::clone(&entry.events[i])).collect();
        let session = handle(key.clone(), app, user, entry, &kept);
        Ok(Some(LoadedSession { view: read.view, ..LoadedSession::decoded(session) }))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let apps = self.read();
        let Some(app) = apps.get(&query.app_name) else { return Ok(Vec::new()) };
        let filter = &query.filter;
        let mut rows: Vec<(i64, &str, &str, &UserEntry, &Entry)> = app
            .users
            .iter()
            .flat_map(|(user_id, user)| {
                user.sessions.iter().map(move |(id, s)| {
                    let at = match query.order {
                        ListOrder::UpdateTime => s.last_update_micros,
                        ListOrder::CreateTime => s.create_time_micros,
                    };
                    (at, user_id.as_str(), id.as_str(), user, s)
                })
            })
            .filter(|(t, user_id, id, _, s)| {
                query.admits(*t, user_id, id, s.expire_micros())
                    && filter.update_time.contains(s.last_update_micros)
                    && filter.create_time.contains(s.create_time_micros)
            })
            .collect();
        rows.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        if query.descending {
            rows.reverse();
        }
        rows.truncate(query.limit.unwrap_or(usize::MAX));
        Ok(rows
            .into_iter()
            .map(|(_, user_id, id, user, entry)| {
                handle(SessionKey::from_storage(query.app_name.as_str(), user_id, id), app, user, entry, &[])
            })
            .collect())
    }

    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        let apps = self.read();
        let Some(app) = apps.get(&query.app_name) else { return Ok(0) };
        let query = query.whole();
        Ok(app
            .users
            .iter()
            .flat_map(|(user_id, user)| user.sessions.iter().map(move |(id, s)| (user_id, id, s)))
            .filter(|(user_id, id, s)| query.admits(s.last_update_micros, user_id, id, s.expire_micros()))
            .count())
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        if let Some(user) = self.write().get_mut(key.app_name()).and_then(|a| a.users.get_mut(key.user_id())) {
            user.sessions.remove(key.session_id());
        }
        Ok(())
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let EventCommit { key, event, delta, deleted, .. } = &commit;
        let mut apps = self.write();
        let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
        let app = apps.get_mut(key.app_name()).ok_or_else(not_found)?;
        let user = app.users.get_mut(key.user_id()).ok_or_else(not_found)?;
        let entry =
            user.sessions.get_mut(key.session_id()).filter(|s| s.live_at(commit.now_micros)).ok_or_else(not_found)?;

        if let Some(&i) = entry.index_of_id.get(&event.id) {
            return CommitOutcome::of_stored(Event::clone(&entry.events[i]), event);
        }
        if entry.last_update_micros != commit.expected_last_update_micros {
            return Err(Error::stale());
        }

        apply_changes(&mut entry.state, &delta.session, &deleted.session);
        entry.index_of_id.insert(event.id.clone(), entry.events.len());
        entry.events.push(Arc::clone(event));
        entry.facts.push(Facts::of(event));
        entry.last_update_micros = commit.timestamp_micros;
        if let (Some(to), Some(expire)) = (commit.extend_expiry_to, entry.expire_micros())
            && to > expire
        {
            entry.set_expire(Some(to));
        }
        apply_changes(&mut user.state, &delta.user, &deleted.user);
        apply_changes(&mut app.state, &delta.app, &deleted.app);
        Ok(CommitOutcome::Committed)
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let apps = self.read();
        let Some(entry) = live(&apps, &query.key, query.now_micros) else { return Ok(None) };
        let picked = match &query.select {
            crate::store::EventSelect::Id(id) => {
                entry.index_of_id.get(id).map(|&i| Arc::clone(&entry.events[i])).into_iter().collect()
            }
            select => select.pick(&entry.events),
        };
        Ok(Some(picked.into_iter().map(Arc::unwrap_or_clone).collect()))
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        Ok(live(&self.read(), key, now_micros).map(|s| s.events.len()))
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        let apps = self.read();
        let Some(app) = apps.get(app) else { return Ok(Vec::new()) };
        let mut users: Vec<String> = app
            .users
            .iter()
            .filter(|(_, user)| user.sessions.get(session_id).is_some_and(|s| s.live_at(now_micros)))
            .map(|(id, _)| id.clone())
            .collect();
        users.sort_unstable();
        Ok(users)
    }

    fn system(&self) -> &'static str {
        "memory"
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::none()
            .with_history(self)
            .with_lifecycle(self)
            .with_admin(self)
            .with_shared_state(self)
            .with_memory(&self.memories)
            .with_artifacts(&self.artifacts)
            .with_leases(&self.leases)
    }
}

#[async_trait]
impl HistoryStore for InMemoryStore {
    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let apps = self.read();
        let Some(entry) = live(&apps, key, i64::MIN) else { return Ok(None) };
        let found = match at_or_before_micros.checked_add(1) {
            Some(end) => {
                entry.snapshots.range(..EventCursor { timestamp_micros: end, event_id: String::new() }).next_back()
            }
            None => entry.snapshots.iter().next_back(),
        };
        Ok(found.map(|(at, state)| HistorySnapshot { at: at.clone(), state: state.clone() }))
    }

    async fn put_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        if let Some(entry) = entry_mut(&mut self.write(), key) {
            for snapshot in snapshots {
                entry.snapshots.insert(snapshot.at.clone(), snapshot.state.clone());
            }
        }
        Ok(())
    }

    async fn copy_events(&self, copy: &EventCopy) -> Result<Option<EventCursor>> {
        replay::copy_events(self, copy).await
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let mut apps = self.write();
        let Some(entry) = entry_mut(&mut apps, key) else { return Ok(0) };
        let dropped = crate::store::EventWindow { recent: None, since_micros: Some(cut_micros) }.slice(&entry.events);
        let dropped = entry.events.len() - dropped.len();
        entry.events.drain(..dropped);
        entry.facts.drain(..dropped);
        entry.index_of_id = entry.events.iter().enumerate().map(|(i, e)| (e.id.clone(), i)).collect();
        entry.snapshots.retain(|at, _| at.timestamp_micros >= cut_micros);
        entry.snapshots.insert(boundary.at.clone(), boundary.state.clone());
        Ok(dropped)
    }
}

#[async_trait]
impl LifecycleStore for InMemoryStore {
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>> {
        let mut apps = self.write();
        let mut expired: Vec<(i64, String, String, String)> = Vec::new();
        for (app_name, app) in apps.iter() {
            for (user_id, user) in &app.users {
                for (id, entry) in &user.sessions {
                    if let Some(at) = entry.expire_micros().filter(|&t| t <= before_micros) {
                        expired.push((at, app_name.clone(), user_id.clone(), id.clone()));
                    }
                }
            }
        }
        expired.sort_unstable();
        expired.truncate(limit);
        let mut removed = Vec::with_capacity(expired.len());
        for (_, app, user, id) in expired {
            if let Some(entry) = apps.get_mut(&app).and_then(|a| a.users.get_mut(&user)) {
                entry.sessions.remove(&id);
            }
            self.artifacts.remove_where(|k| k.app == app && k.user == user && k.session.as_ref() == Some(&id));
            removed.push(SessionKey::from_storage(app, user, id));
        }
        Ok(removed)
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>, now_micros: i64) -> Result<bool> {
        let mut apps = self.write();
        let Some(entry) = entry_mut(&mut apps, key).filter(|s| s.live_at(now_micros)) else { return Ok(false) };
        entry.set_expire(expire_micros);
        Ok(true)
    }

    async fn set_attributes(&self, key: &SessionKey, update: &AttributesUpdate, now_micros: i64) -> Result<bool> {
        let mut apps = self.write();
        let Some(entry) = entry_mut(&mut apps, key).filter(|s| s.live_at(now_micros)) else { return Ok(false) };
        let mut attributes = entry.attributes.as_deref().cloned().unwrap_or_default();
        if let Some(name) = &update.display_name {
            attributes.display_name.clone_from(name);
        }
        if let Some(labels) = &update.labels {
            attributes.labels.clone_from(labels);
        }
        if let Some(expire) = update.expire_time_micros {
            attributes.expire_time_micros = expire;
        }
        entry.attributes = (!attributes.is_empty()).then(|| Arc::new(attributes));
        Ok(true)
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        let removed = self.write().get_mut(app).and_then(|a| a.users.remove(user));
        self.leases.erase_user(app, user);
        Ok(removed.as_ref().map(counts).unwrap_or_default())
    }

    async fn count_user_data(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        Ok(self.read().get(app).and_then(|a| a.users.get(user)).map(counts).unwrap_or_default())
    }
}

#[async_trait]
impl AdminStore for InMemoryStore {
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
            StateOwner::Session(key) => live(&apps, key, i64::MIN).map(|s| &s.state),
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
            StateOwner::Session(key) => entry_mut(&mut apps, key).map(|s| &mut s.state),
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
        let Some(entry) = entry_mut(&mut apps, key) else { return Ok(false) };
        let Some(&i) = entry.index_of_id.get(&event.id) else { return Ok(false) };
        let timestamp = entry.events[i].timestamp;
        entry.events[i] = Arc::new(Event { timestamp, ..event.clone() });
        entry.facts[i] = Facts::of(&entry.events[i]);
        Ok(true)
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        Ok(self.metadata.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned())
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        self.metadata.write().unwrap_or_else(PoisonError::into_inner).insert(name.to_owned(), value.to_owned());
        Ok(())
    }
}

#[async_trait]
impl crate::store::SharedStateStore for InMemoryStore {
    async fn shared_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        crate::store::shared_state_as_stored(self, owner).await
    }

    async fn update_shared_state(&self, update: &crate::store::SharedStateUpdate) -> Result<()> {
        let (app, user) = update.owner.shared()?;
        let mut apps = self.write();
        let entry = apps.entry(app.to_owned()).or_default();
        let (state, writes) = match user {
            None => (&mut entry.state, &mut entry.writes),
            Some(user) => {
                let entry = entry.users.entry(user.to_owned()).or_default();
                (&mut entry.state, &mut entry.writes)
            }
        };
        apply_changes(state, &update.delta, &update.deleted);
        writes.push(crate::store::SharedStateWrite::of(update));
        Ok(())
    }

    async fn shared_state_writes(
        &self,
        query: &crate::store::SharedStateWrites,
    ) -> Result<Vec<crate::store::SharedStateWrite>> {
        let apps = self.read();
        let writes = match &query.owner {
            StateOwner::App(app) => apps.get(app).map(|a| &a.writes),
            StateOwner::User { app, user } => apps.get(app).and_then(|a| a.users.get(user)).map(|u| &u.writes),
            StateOwner::Session(_) => None,
        };
        let mut page: Vec<_> = writes
            .into_iter()
            .flatten()
            .filter(|w| query.before.as_ref().is_none_or(|before| w.position() < *before))
            .cloned()
            .collect();
        page.sort_unstable_by_key(|w| std::cmp::Reverse(w.position()));
        page.truncate(query.limit);
        Ok(page)
    }
}
