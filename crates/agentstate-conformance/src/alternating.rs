//! A store that sends each call to the next of several stores in turn. Given independent service
//! instances on one database (as separate processes would have), it turns every conformance case
//! into a multi-process one: a handle loaded through one instance is appended through another,
//! and concurrent writers go through different connections, writer threads and pools.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentstate::{
    CommitOutcome, Event, EventCommit, EventCursor, EventWindow, ListQuery, NewSession, Result, Session, SessionKey,
    SessionStore,
};
use async_trait::async_trait;

/// Round-robin over `stores`.
pub struct Alternating {
    stores: Vec<Arc<dyn SessionStore>>,
    next: AtomicUsize,
}

impl Alternating {
    /// Alternates between `stores` (at least one).
    pub fn new(stores: Vec<Arc<dyn SessionStore>>) -> Self {
        assert!(!stores.is_empty(), "Alternating needs at least one store");
        Self { stores, next: AtomicUsize::new(0) }
    }

    fn pick(&self) -> &dyn SessionStore {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.stores.len();
        self.stores[i].as_ref()
    }
}

#[async_trait]
impl SessionStore for Alternating {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.pick().create(new).await
    }

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        self.pick().get(key, window).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        self.pick().list(query).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        self.pick().delete(key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.pick().commit(commit).await
    }

    async fn events_after(
        &self,
        key: &SessionKey,
        after: Option<&EventCursor>,
        limit: usize,
    ) -> Result<Option<Vec<Event>>> {
        self.pick().events_after(key, after, limit).await
    }
}
