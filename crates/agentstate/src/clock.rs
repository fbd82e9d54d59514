//! Time as the service reads it: a [`Clock`], injectable, so that expiry, retention and time to
//! live are tested by moving a [`ManualClock`] instead of sleeping.
//!
//! ```
//! use std::time::Duration;
//! use agentstate::clock::{Clock, ManualClock};
//! use agentstate::{CreateSession, SessionService};
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! # async fn run() -> agentstate::Result<()> {
//! let clock = ManualClock::new();
//! let service = SessionService::builder(agentstate::InMemoryStore::new()).clock(clock.clone()).build()?;
//! let session = service.create_session(CreateSession::new("app", "u").ttl(Duration::from_secs(60))).await?;
//! clock.advance(Duration::from_secs(61));
//! assert!(service.get_session(session.key(), Default::default()).await?.is_none());
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::time::now_micros;

/// Where the service reads the time: creation times, expiry, retention ages.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Microseconds since the Unix epoch, now.
    fn now_micros(&self) -> i64;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> i64 {
        now_micros()
    }
}

/// A clock that moves only when told to, for tests. Starts at the system's time (so stores with
/// native expiry, Redis, see sensible times); clones share one time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock at the system's time now.
    pub fn new() -> Self {
        Self(Arc::new(AtomicI64::new(now_micros())))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        self.0.fetch_add(by, Ordering::SeqCst);
    }

    /// Sets the time, epoch microseconds.
    pub fn set_micros(&self, micros: i64) {
        self.0.store(micros, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// `now` plus `ttl` (epoch microseconds), saturating: an expire time `ttl` from `now`.
pub fn after(now: i64, ttl: Duration) -> i64 {
    now.saturating_add(i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_clones_share_it() {
        let clock = ManualClock::new();
        let other = clock.clone();
        let start = clock.now_micros();
        clock.advance(Duration::from_millis(1500));
        assert_eq!(other.now_micros(), start + 1_500_000);
        other.set_micros(7);
        assert_eq!(clock.now_micros(), 7);
        assert!(SystemClock.now_micros() > 1_700_000_000_000_000);
    }
}
