//! The sessions this service has created, read, listed or appended to: how a bare session id is
//! found on a store that cannot list its apps (the managed service), as ADK-Rust's own Agent
//! Engine client finds one. Bounded: the least recently seen are forgotten first. A remembered
//! session is checked before it is used, and forgotten when it is found gone.

use std::sync::{Mutex, PoisonError};

use agentstate::SessionKey;
use hashlink::LinkedHashMap;

/// How many session ids are remembered.
pub(crate) const CAPACITY: usize = 4096;
/// How many sessions of one id (in different apps or of different users) are remembered.
const PER_ID: usize = 16;

/// The sessions seen, by id, least recently seen first: every call is O(1).
#[derive(Default)]
pub(crate) struct Seen {
    ids: Mutex<LinkedHashMap<String, Vec<SessionKey>>>,
}

impl Seen {
    /// Remembers `key` as the most recently seen.
    pub(crate) fn remember(&self, key: &SessionKey) {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(keys) = ids.get_mut(key.session_id()) {
            keys.retain(|k| k != key);
            if keys.len() == PER_ID {
                keys.remove(0);
            }
            keys.push(key.clone());
            ids.to_back(key.session_id());
            return;
        }
        if ids.len() == CAPACITY {
            ids.pop_front();
        }
        ids.insert(key.session_id().to_owned(), vec![key.clone()]);
    }

    /// Forgets `key` (a session found gone).
    pub(crate) fn forget(&self, key: &SessionKey) {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(keys) = ids.get_mut(key.session_id()) {
            keys.retain(|k| k != key);
            if keys.is_empty() {
                ids.remove(key.session_id());
            }
        }
    }

    /// The remembered sessions called `session_id`, the most recently seen last.
    pub(crate) fn called(&self, session_id: &str) -> Vec<SessionKey> {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        ids.get(session_id).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(app: &str, id: &str) -> SessionKey {
        SessionKey::new(app, "u", id).unwrap()
    }

    #[test]
    fn bounded_deduplicated_and_exact() {
        let seen = Seen::default();
        for i in 0..CAPACITY + 10 {
            seen.remember(&key("a", &format!("s{i}")));
        }
        assert!(seen.called("s0").is_empty(), "the oldest is forgotten");
        assert_eq!(seen.called("s10"), [key("a", "s10")]);
        seen.remember(&key("a", "s10"));
        seen.remember(&key("b", "s10"));
        assert_eq!(seen.called("s10"), [key("a", "s10"), key("b", "s10")], "once each, most recent last");
        assert!(seen.called("s1").is_empty() && seen.called("s").is_empty(), "whole ids only");
        seen.forget(&key("b", "s10"));
        assert_eq!(seen.called("s10"), [key("a", "s10")]);
        // Seen again, s10 outlives the ids seen before it.
        for i in 0..CAPACITY - 1 {
            seen.remember(&key("a", &format!("t{i}")));
        }
        assert_eq!(seen.called("s10"), [key("a", "s10")]);
        assert!(seen.called("s11").is_empty());
        // One id in many apps: the most recent PER_ID.
        for app in 0..PER_ID + 3 {
            seen.remember(&key(&format!("app{app}"), "shared"));
        }
        let shared = seen.called("shared");
        assert_eq!((shared.len(), shared[0].app_name()), (PER_ID, "app3"));
    }
}
