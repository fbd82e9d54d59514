//! Lifecycle and administration through the service: expiry, retention, erasure, listings, app
//! and user state without a session. Each
//! needs a capability of the store; without it the answer is [`Error::Unsupported`], naming the
//! operation.

use tracing::Instrument;

use super::requests::timestamp_micros;
use super::{Retention, SessionService};
use crate::clock;
use crate::error::{Error, Result};
use crate::key::{SessionKey, validate_id};
use crate::session::SessionAttributes;
use crate::store::replay::Replay;
use crate::store::{
    AdminStore, AttributesUpdate, EventQuery, EventSelect, EventWindow, HistoryStore, LifecycleStore, SessionRead,
    UserDataCounts,
};

impl SessionService {
    fn lifecycle(&self, operation: &'static str) -> Result<&dyn LifecycleStore> {
        self.capabilities().lifecycle.ok_or(Error::Unsupported { operation, capability: "lifecycle" })
    }

    fn history_store(&self, operation: &'static str) -> Result<&dyn HistoryStore> {
        self.capabilities().history.ok_or(Error::Unsupported { operation, capability: "history" })
    }

    fn admin(&self, operation: &'static str) -> Result<&dyn AdminStore> {
        self.capabilities().admin.ok_or(Error::Unsupported { operation, capability: "admin" })
    }

    /// Removes up to `limit` sessions that have expired, with their events; returns how many.
    /// Expired sessions already behave as deleted; this reclaims their space. Call it until it
    /// returns less than `limit` to sweep everything; each call is one bounded batch (no long
    /// locks), found through an index on the expire time.
    pub async fn sweep_expired(&self, limit: usize) -> Result<usize> {
        let lifecycle = self.lifecycle("sweep expired sessions")?;
        let span = tracing::debug_span!("sweep_expired", limit);
        let removed = lifecycle.delete_expired(self.now_micros(), limit).instrument(span).await?.len();
        if removed > 0 {
            tracing::debug!(removed, "swept expired sessions");
        }
        Ok(removed)
    }

    /// Erases everything of `user_id` in `app_name` (a right-to-erasure request): every session,
    /// event, `user:` key, memory and artifact; returns what it removed. `app:` state, shared with other users, is
    /// untouched. See [`LifecycleStore::erase_user`] for each backend's guarantees.
    pub async fn erase_user(&self, app_name: &str, user_id: &str) -> Result<UserDataCounts> {
        validate_id("app_name", app_name)?;
        validate_id("user_id", user_id)?;
        let lifecycle = self.lifecycle("erase a user's data")?;
        let span = tracing::info_span!("erase_user", app = app_name);
        let mut erased = lifecycle.erase_user(app_name, user_id).instrument(span).await?;
        if let Some(memory) = self.capabilities().memory {
            // The user's memories, and Memory Bank's scopes naming the user (see `memory::bank`).
            erased.memories = 0;
            for owner in &crate::memory::bank::owners_of_user(memory, app_name, user_id).await? {
                erased.memories += memory.erase_memories(owner).await?;
            }
        }
        if let Some(artifacts) = self.capabilities().artifacts {
            erased.artifacts = artifacts.erase_artifacts(app_name, user_id).await?;
        }
        tracing::info!(
            app = app_name,
            sessions = erased.sessions,
            events = erased.events,
            user_state_keys = erased.user_state_keys,
            memories = erased.memories,
            artifacts = erased.artifacts,
            "erased a user's data"
        );
        Ok(erased)
    }

    /// What [`erase_user`](Self::erase_user) would remove now, removing nothing.
    pub async fn count_user_data(&self, app_name: &str, user_id: &str) -> Result<UserDataCounts> {
        validate_id("app_name", app_name)?;
        validate_id("user_id", user_id)?;
        let mut found = self.lifecycle("count a user's data")?.count_user_data(app_name, user_id).await?;
        if let Some(memory) = self.capabilities().memory {
            found.memories = 0;
            for owner in &crate::memory::bank::owners_of_user(memory, app_name, user_id).await? {
                found.memories += memory.count_memories(owner, i64::MIN).await?;
            }
        }
        if let Some(artifacts) = self.capabilities().artifacts {
            found.artifacts = artifacts.count_artifacts(app_name, user_id).await?;
        }
        Ok(found)
    }

    /// Moves the session's expire time (epoch seconds; `None`: it never expires), as the managed
    /// service's `PATCH` of `expireTime` does. An expired session cannot be revived: like a
    /// missing one, it is [`Error::NotFound`].
    pub async fn set_expire_time(&self, key: &SessionKey, expire_time: Option<f64>) -> Result<()> {
        let micros = timestamp_micros("expire_time", expire_time)?;
        let lifecycle = self.lifecycle("change an expire time")?;
        let moved =
            lifecycle.set_expire_time(key, micros, self.now_micros()).instrument(self.span("set_expire_time", key));
        match moved.await? {
            true => Ok(()),
            false => Err(Error::NotFound { session_id: key.session_id().to_owned() }),
        }
    }

    /// Sets the session's display name, labels and expire time (each `None` in `update` is
    /// kept) in one atomic step, as the managed service's `sessions.patch` does; checked as at
    /// creation. Neither state nor last update time moves. An expired session, like a missing
    /// one, is [`Error::NotFound`].
    pub async fn set_attributes(&self, key: &SessionKey, update: AttributesUpdate) -> Result<()> {
        let checked = SessionAttributes {
            display_name: update.display_name.clone().flatten(),
            labels: update.labels.clone().unwrap_or_default(),
            expire_time_micros: None,
        };
        checked.validate()?;
        let lifecycle = self.lifecycle("change a display name or labels")?;
        let set =
            lifecycle.set_attributes(key, &update, self.now_micros()).instrument(self.span("set_attributes", key));
        match set.await? {
            true => Ok(()),
            false => Err(Error::NotFound { session_id: key.session_id().to_owned() }),
        }
    }

    /// Drops the session's events that `policy` does not keep; returns how many. The state is
    /// untouched (it is never recomputed from events). Session artifacts' versions saved before
    /// the oldest kept event and replaced before it go too (each artifact keeps the version in
    /// effect then, and every later one). History answers stop at the oldest kept
    /// event: state at, diffs, rewind and fork before it are an error that says so. A missing
    /// session drops nothing.
    pub async fn apply_retention(&self, key: &SessionKey, policy: Retention) -> Result<usize> {
        if policy.keep_last == Some(0) {
            return Err(Error::invalid("keep_last", "must keep at least 1 event"));
        }
        let history = self.history_store("drop old events")?;
        let now = self.now_micros();
        let span = self.span("apply_retention", key);
        let store = self.store();
        let event_time = |e: &crate::Event| e.time().micros();
        let newest = |n: usize| async move {
            let read = SessionRead::decoded(EventWindow { recent: Some(n), since_micros: None }, now);
            Ok::<_, Error>(store.get(key, &read).await?.map(|loaded| loaded.session))
        };
        let page = |select: EventSelect| async move {
            store.events(&EventQuery { key: key.clone(), select, now_micros: now }).await
        };
        // Events older than `cut` go: the oldest of the newest `keep_last`, and the oldest young
        // enough (or, when every event is too old, the time after the newest).
        let mut cut: Option<i64> = None;
        if let Some(n) = policy.keep_last {
            let Some(newest) = newest(n.saturating_add(1)).instrument(span.clone()).await? else { return Ok(0) };
            if newest.events().len() > n {
                cut = newest.events().get(1).map(event_time);
            }
        }
        if let Some(age) = policy.max_age {
            let oldest_kept = now.saturating_sub(i64::try_from(age.as_micros()).unwrap_or(i64::MAX));
            let select = EventSelect::Page { after: None, since_micros: Some(oldest_kept), limit: 1 };
            let Some(young) = page(select).await? else { return Ok(0) };
            let by_age = match young.first() {
                Some(first) => Some(event_time(first)),
                None => newest(1).await?.and_then(|s| s.events().last().map(|e| event_time(e).saturating_add(1))),
            };
            cut = cut.max(by_age);
        }
        let Some(cut) = cut else { return Ok(0) };
        self.prune_artifacts(key, cut).instrument(span.clone()).await?;
        let oldest = page(EventSelect::first(1)).await?.and_then(|events| events.first().map(event_time));
        if oldest.is_none_or(|t| t >= cut) {
            return Ok(0);
        }
        let Some(boundary) = Replay::new(store.as_ref(), now).state_before(key, cut).await? else { return Ok(0) };
        history.drop_events_before(key, cut, &boundary).instrument(span).await
    }

    /// Retention's reach into the session's artifacts (when the store keeps them): of each
    /// session-scoped artifact, the versions saved before `cut` that a later version saved
    /// before it replaced; the version in effect at the cut, and every later one, stay.
    async fn prune_artifacts(&self, key: &SessionKey, cut: i64) -> Result<()> {
        let Some(store) = self.capabilities().artifacts else { return Ok(()) };
        let mut pruned = 0;
        for artifact in crate::artifact::session_scoped(store, key).await? {
            let versions = store.artifact_versions(&artifact).await?;
            let in_effect = versions.iter().filter(|v| v.create_micros < cut).map(|v| v.version).max();
            if let Some(below) = in_effect.filter(|&v| versions.first().is_some_and(|first| first.version < v)) {
                pruned += store.prune_artifact(&artifact, below).await?;
            }
        }
        if pruned > 0 {
            tracing::debug!(pruned, "removed artifact versions older than the retention cut");
        }
        Ok(())
    }

    /// Every app that has sessions or state, sorted.
    pub async fn list_apps(&self) -> Result<Vec<String>> {
        self.admin("list its apps")?.apps().await
    }

    /// Every user of `app_name` that has sessions or `user:` state, sorted.
    pub async fn list_users(&self, app_name: &str) -> Result<Vec<String>> {
        validate_id("app_name", app_name)?;
        self.admin("list users")?.users(app_name).await
    }

    /// The expire time (epoch µs) a time to live gives a session created now.
    pub fn expire_after(&self, ttl: std::time::Duration) -> i64 {
        clock::after(self.now_micros(), ttl)
    }
}
