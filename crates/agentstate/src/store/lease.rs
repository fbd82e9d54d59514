//! Run leases: which run of a session may write to it now, shared by every server over one store.
//!
//! A run of an agent takes its session's lease before it loads the session and gives it back when
//! it ends; while it runs it renews it (the same call as taking it). A lease names its holder (one
//! run) and the time it lapses, so a server that crashes mid-run never holds a session for longer
//! than a lease's time to live. Another run asking meanwhile learns who holds it and may ask the
//! holder to stop ([`LeaseStore::interrupt_lease`]): the holder sees that on its next renewal.
//! The policies built on this (reject, enqueue, interrupt) live in the agent runtime.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use crate::error::Result;
use crate::key::SessionKey;

/// A request to take or renew a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRequest {
    /// The session.
    pub key: SessionKey,
    /// Who asks: one run (unique per run, e.g. its invocation id).
    pub holder: String,
    /// The time the request is judged at (epoch microseconds): a lease lapsed at or before it is
    /// free.
    pub now_micros: i64,
    /// Until when the lease is held if granted (epoch microseconds).
    pub until_micros: i64,
}

/// Who holds a session's lease after a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// The asker holds it (until the requested time); `interrupt_requested` when another run has
    /// asked it to stop since it took it.
    Held {
        /// Another run asked this one to stop.
        interrupt_requested: bool,
    },
    /// Another run holds it.
    Busy {
        /// The holder.
        holder: String,
        /// When its lease lapses unless renewed (epoch microseconds).
        until_micros: i64,
    },
}

/// Run leases in the store, so runs on several servers over one store take turns.
///
/// Each call is atomic: of two runs asking for a free lease at once exactly one gets it.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Takes the session's lease for `request.holder` if it is free (none, lapsed at
    /// `now_micros`, or already this holder's, which renews it), until `until_micros`. An
    /// interruption requested of a holder is kept while it renews and cleared when another takes
    /// the lease. The session need not exist.
    async fn acquire_lease(&self, request: &LeaseRequest) -> Result<LeaseState>;

    /// Gives the lease back if `holder` holds it; whether it did.
    async fn release_lease(&self, key: &SessionKey, holder: &str) -> Result<bool>;

    /// Asks the run holding a live lease (not lapsed at `now_micros`) to stop: its next
    /// [`acquire_lease`](Self::acquire_lease) answers `interrupt_requested`. Whether a run held
    /// it.
    async fn interrupt_lease(&self, key: &SessionKey, now_micros: i64) -> Result<bool>;
}

/// One lease as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lease {
    holder: String,
    until_micros: i64,
    interrupt_requested: bool,
}

/// Leases held in this process: the in-memory store's, and the service's stand-in for a store
/// that keeps none (runs then take turns within one process only).
#[derive(Debug, Default)]
pub struct LocalLeases {
    leases: Mutex<HashMap<SessionKey, Lease>>,
}

impl LocalLeases {
    /// No leases.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionKey, Lease>> {
        // A lease table has no invariant a panicking holder could leave half-made.
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leases still kept (lapsed ones are dropped as they are met).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every lease of a user of an app (erasure).
    pub fn erase_user(&self, app: &str, user: &str) {
        self.lock().retain(|key, _| key.app_name() != app || key.user_id() != user);
    }
}

#[async_trait]
impl LeaseStore for LocalLeases {
    async fn acquire_lease(&self, request: &LeaseRequest) -> Result<LeaseState> {
        let mut leases = self.lock();
        match leases.get_mut(&request.key) {
            Some(lease) if lease.holder == request.holder => {
                lease.until_micros = request.until_micros;
                Ok(LeaseState::Held { interrupt_requested: lease.interrupt_requested })
            }
            Some(lease) if lease.until_micros > request.now_micros => {
                Ok(LeaseState::Busy { holder: lease.holder.clone(), until_micros: lease.until_micros })
            }
            _ => {
                let lease = Lease {
                    holder: request.holder.clone(),
                    until_micros: request.until_micros,
                    interrupt_requested: false,
                };
                leases.insert(request.key.clone(), lease);
                Ok(LeaseState::Held { interrupt_requested: false })
            }
        }
    }

    async fn release_lease(&self, key: &SessionKey, holder: &str) -> Result<bool> {
        let mut leases = self.lock();
        if leases.get(key).is_some_and(|lease| lease.holder == holder) {
            leases.remove(key);
            return Ok(true);
        }
        Ok(false)
    }

    async fn interrupt_lease(&self, key: &SessionKey, now_micros: i64) -> Result<bool> {
        let mut leases = self.lock();
        match leases.get_mut(key) {
            Some(lease) if lease.until_micros > now_micros => {
                lease.interrupt_requested = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
