//! [`RefreshOnAppend`]: sessions whose expiry slides forward with every append.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use crate::event::Event;
use crate::history::{EventDiff, ForkSession, HistoryAt, StateAt};
use crate::key::SessionKey;
use crate::session::Session;
use crate::store::{
    CommitOutcome, EventCommit, EventCursor, EventQuery, EventWindow, HistorySnapshot, ListQuery, NewSession,
    RawSession, SessionStore, StateOwner, UserData, ValueSwap, now_micros,
};
use serde_json::{Map, Value};

/// How long a session lives after an append, by its key.
type TtlFor = dyn Fn(&SessionKey) -> Option<Duration> + Send + Sync;

/// A store whose expiring sessions live on while they are used: after every append, a session
/// that expires gets its expire time moved to now plus the time to live `ttl` gives for its key
/// (the app's default, typically), so it expires that long after its last append. Sessions
/// without an expire time, or for which `ttl` gives none, are untouched. One extra read and,
/// when the time moves, one write per append; a failure to move it is logged, never the
/// append's failure.
///
/// ```
/// use std::time::Duration;
/// use agentstate::lifecycle::RefreshOnAppend;
/// use agentstate::{CreateSession, Event, InMemorySessionService, SessionService};
///
/// # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
/// # async fn run() -> agentstate::Result<()> {
/// let hour = Duration::from_secs(3600);
/// let service = RefreshOnAppend::new(InMemorySessionService::new(), move |_: &_| Some(hour));
/// let mut session = service.create_session(CreateSession::new("app", "u").ttl(hour)).await?;
/// let created = session.attributes().expire_time_micros.unwrap();
/// service.append_event(&mut session, Event::new("inv")).await?;
/// let reloaded = service.get_session(session.key(), Default::default()).await?.unwrap();
/// assert!(reloaded.attributes().expire_time_micros.unwrap() >= created);
/// # Ok(()) }
/// ```
pub struct RefreshOnAppend<S> {
    inner: S,
    ttl: Box<TtlFor>,
}

impl<S> std::fmt::Debug for RefreshOnAppend<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefreshOnAppend").finish_non_exhaustive()
    }
}

impl<S> RefreshOnAppend<S> {
    /// Wraps `inner`; `ttl` says how long a session lives after an append (`None`: its expire
    /// time stays).
    pub fn new(inner: S, ttl: impl Fn(&SessionKey) -> Option<Duration> + Send + Sync + 'static) -> Self {
        Self { inner, ttl: Box::new(ttl) }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: SessionStore> RefreshOnAppend<S> {
    async fn refresh(&self, key: &SessionKey) -> Result<()> {
        let Some(ttl) = (self.ttl)(key) else { return Ok(()) };
        let Some(session) = self.inner.get(key, EventWindow { recent: Some(0), after_micros: None }).await? else {
            return Ok(());
        };
        let Some(expire) = session.attributes().expire_time_micros else { return Ok(()) };
        let moved = now_micros().saturating_add(i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX));
        if moved > expire {
            self.inner.set_expire_time(key, Some(moved)).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl<S: SessionStore> SessionStore for RefreshOnAppend<S> {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.inner.create(new).await
    }

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        self.inner.get(key, window).await
    }

    async fn get_raw(&self, key: &SessionKey, window: EventWindow) -> Result<Option<RawSession>> {
        self.inner.get_raw(key, window).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        self.inner.list(query).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        self.inner.delete(key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let key = commit.key.clone();
        let outcome = self.inner.commit(commit).await?;
        if outcome == CommitOutcome::Committed
            && let Err(e) = self.refresh(&key).await
        {
            tracing::warn!(error = %e, session = key.session_id(), "moving the expire time after an append failed");
        }
        Ok(outcome)
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        self.inner.events(query).await
    }

    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        self.inner.history_snapshot(key, at_or_before_micros).await
    }

    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        self.inner.put_history_snapshots(key, snapshots).await
    }

    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        self.inner.event(key, event_id).await
    }

    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        self.inner.first_event_of_invocation(key, invocation_id).await
    }

    async fn state_at(&self, key: &SessionKey, at: &HistoryAt) -> Result<Option<StateAt>> {
        self.inner.state_at(key, at).await
    }

    async fn event_diff(&self, key: &SessionKey, event_id: &str) -> Result<Option<EventDiff>> {
        self.inner.event_diff(key, event_id).await
    }

    async fn copy_events(
        &self,
        from: &SessionKey,
        to: &SessionKey,
        upto: &EventCursor,
        to_marker: i64,
    ) -> Result<Option<EventCursor>> {
        self.inner.copy_events(from, to, upto, to_marker).await
    }

    async fn fork(&self, request: &ForkSession) -> Result<Session> {
        self.inner.fork(request).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str) -> Result<Vec<String>> {
        self.inner.users_with_session(app, session_id).await
    }

    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        self.inner.delete_expired(before_micros, limit).await
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserData> {
        self.inner.erase_user(app, user).await
    }

    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        self.inner.user_data(app, user).await
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>) -> Result<bool> {
        self.inner.set_expire_time(key, expire_micros).await
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        self.inner.drop_events_before(key, cut_micros, boundary).await
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        self.inner.metadata(name).await
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        self.inner.set_metadata(name, value).await
    }

    async fn apps(&self) -> Result<Vec<String>> {
        self.inner.apps().await
    }

    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        self.inner.event_count(key).await
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        self.inner.users(app).await
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        self.inner.stored_state(owner).await
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        self.inner.swap_values(owner, swaps).await
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        self.inner.rewrite_event(key, event).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CreateSession, GetSessionConfig, InMemorySessionService, SessionService};

    #[tokio::test]
    async fn appends_keep_an_expiring_session_alive() {
        let ttl = Duration::from_millis(300);
        let service = RefreshOnAppend::new(InMemorySessionService::new(), move |_: &SessionKey| Some(ttl));
        let request = CreateSession::new("app", "u").id("s").ttl(Duration::from_millis(300));
        let mut session = service.create_session(request).await.unwrap();
        let mut forever = service.create_session(CreateSession::new("app", "u").id("f")).await.unwrap();
        for _ in 0..4 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            service.append_event(&mut session, Event::new("inv")).await.unwrap();
            service.append_event(&mut forever, Event::new("inv")).await.unwrap();
        }
        // 600 ms after creation, twice its lifetime: alive, because it was used.
        let alive = service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        assert_eq!(alive.events().len(), 4);
        let forever = service.get_session(forever.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        assert_eq!(forever.attributes().expire_time_micros, None, "sessions that never expire stay so");
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(
            service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().is_none(),
            "unused, it expires"
        );
    }
}
