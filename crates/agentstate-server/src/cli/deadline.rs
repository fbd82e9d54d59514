//! A deadline on each call of the session core: a store whose database stalls (a cluster holding
//! commits while it evicts a dead node, a lock held by a stuck client) fails the call retryably
//! once the deadline passes, so a server answers 503 in bounded time instead of holding the
//! request until the database moves.

use std::time::Duration;

use async_trait::async_trait;

use agentstate::store::{
    Capabilities, CommitOutcome, EventCommit, EventQuery, ListQuery, LoadedSession, NewSession, SessionRead,
    SessionStore,
};
use agentstate::{Error, Event, Result, Session, SessionKey};

/// `S` with every core call ([`SessionStore`]'s methods) bounded by a deadline. A call that
/// passes it fails with a retryable backend error; what it had started may still complete in the
/// database (as when a connection drops), so a write that timed out is unacknowledged, not undone.
/// Capabilities are `S`'s own, unbounded.
#[derive(Debug)]
pub(crate) struct Deadline<S> {
    inner: S,
    limit: Duration,
}

impl<S: SessionStore> Deadline<S> {
    /// `inner`, each call bounded by `limit`.
    pub(crate) fn new(inner: S, limit: Duration) -> Self {
        Self { inner, limit }
    }

    /// `call`, or the retryable error of a call that took longer than the deadline.
    async fn bounded<T>(&self, operation: &str, call: impl Future<Output = Result<T>>) -> Result<T> {
        match tokio::time::timeout(self.limit, call).await {
            Ok(done) => done,
            Err(_) => Err(Error::backend(
                format!("the store did not finish {operation} within {:?}", self.limit),
                true,
                "deadline passed",
            )),
        }
    }
}

#[async_trait]
impl<S: SessionStore> SessionStore for Deadline<S> {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.bounded("a create", self.inner.create(new)).await
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        self.bounded("a read", self.inner.get(key, read)).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        self.bounded("a list", self.inner.list(query)).await
    }

    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        self.bounded("a count", self.inner.count_sessions(query)).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        self.bounded("a delete", self.inner.delete(key)).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.bounded("an append", self.inner.commit(commit)).await
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        self.bounded("an events read", self.inner.events(query)).await
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        self.bounded("a count", self.inner.count_events(key, now_micros)).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        self.bounded("a lookup", self.inner.users_with_session(app, session_id, now_micros)).await
    }

    fn system(&self) -> &'static str {
        self.inner.system()
    }

    fn capabilities(&self) -> Capabilities<'_> {
        self.inner.capabilities()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentstate::InMemoryStore;

    #[tokio::test]
    async fn a_call_past_the_deadline_fails_retryably_and_one_within_it_answers() {
        let store = Deadline::new(InMemoryStore::new(), Duration::from_millis(50));
        assert_eq!(store.users_with_session("app", "s", 0).await.unwrap(), Vec::<String>::new());

        let stalled = store.bounded("a read", std::future::pending::<Result<()>>());
        let err = stalled.await.unwrap_err();
        assert!(err.is_retryable(), "{err}");
        assert!(err.to_string().contains("did not finish a read within 50ms"), "{err}");
    }
}
