//! A store that sends each call to the next of several stores in turn. Given independent service
//! instances on one database (as separate processes would have), it turns every conformance case
//! into a multi-process one: a handle loaded through one instance is appended through another,
//! and concurrent writers go through different connections, writer threads and pools.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentstate::store::{DelegatingStore, SessionStore};

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
}

impl DelegatingStore for Alternating {
    fn delegate(&self) -> &dyn SessionStore {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.stores.len();
        self.stores[i].as_ref()
    }
}
