//! How many events each session had when last seen, so a load can tell whether it is short
//! enough to run on its caller's thread without counting them first (a count of a hundred index
//! entries costs about a tenth of the read it decides on).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, PoisonError};

use agentstate::SessionKey;

/// Sessions remembered before the map starts again from empty: a few megabytes at most.
const MOST_SESSIONS: usize = 100_000;

/// Event counts by a hash of the session's key. A count can be stale (another process appended
/// to the session, or two keys share a hash): it only decides where a load runs, never what it
/// reads, and the next whole load puts it right.
#[derive(Debug, Default)]
pub(super) struct LoadSizes {
    hasher: RandomState,
    counts: Mutex<HashMap<u64, usize>>,
}

/// Where a session's count is kept: its key's hash, taken once per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot(u64);

impl LoadSizes {
    /// The session's slot.
    pub(super) fn slot(&self, key: &SessionKey) -> Slot {
        Slot(self.hasher.hash_one((key.app_name(), key.user_id(), key.session_id())))
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<u64, usize>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's event count when last seen.
    pub(super) fn get(&self, slot: Slot) -> Option<usize> {
        self.counts().get(&slot.0).copied()
    }

    /// The session has `count` events.
    pub(super) fn saw(&self, slot: Slot, count: usize) {
        let mut counts = self.counts();
        if counts.len() >= MOST_SESSIONS && !counts.contains_key(&slot.0) {
            counts.clear();
        }
        counts.insert(slot.0, count);
    }

    /// The session gained an event (an append), if its count is known.
    pub(super) fn grew(&self, slot: Slot) {
        if let Some(count) = self.counts().get_mut(&slot.0) {
            *count += 1;
        }
    }

    /// The session's count is no longer known (deleted, copied into, cut).
    pub(super) fn forget(&self, slot: Slot) {
        self.counts().remove(&slot.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> SessionKey {
        SessionKey::new("app", "u", id).unwrap()
    }

    #[test]
    fn counts_are_kept_grown_and_forgotten_per_session() {
        let sizes = LoadSizes::default();
        let (a, b) = (sizes.slot(&key("a")), sizes.slot(&key("b")));
        assert_eq!(a, sizes.slot(&key("a")));
        assert_eq!(sizes.get(a), None);
        sizes.grew(a);
        assert_eq!(sizes.get(a), None, "an unknown count stays unknown");
        sizes.saw(a, 3);
        sizes.grew(a);
        assert_eq!((sizes.get(a), sizes.get(b)), (Some(4), None));
        sizes.forget(a);
        assert_eq!(sizes.get(a), None);
    }

    #[test]
    fn the_map_starts_again_when_full() {
        let sizes = LoadSizes::default();
        for i in 0..MOST_SESSIONS {
            sizes.saw(sizes.slot(&key(&format!("s{i}"))), i);
        }
        let first = sizes.slot(&key("s0"));
        sizes.saw(first, 7);
        assert_eq!(sizes.get(first), Some(7), "a session already there is updated in place");
        let new = sizes.slot(&key("new"));
        sizes.saw(new, 1);
        assert_eq!((sizes.get(new), sizes.get(first)), (Some(1), None));
    }
}
