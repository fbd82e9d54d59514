//! The sessions this service has created, read, listed or appended to: how a bare session id is
//! found on a store that cannot list its apps (the managed service), as ADK-Rust's own Agent
//! Engine client finds one. Bounded: the oldest are forgotten first. A remembered session is
//! checked before it is used, and forgotten when it is found gone.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use agentstate::SessionKey;

/// How many sessions are remembered.
pub(crate) const CAPACITY: usize = 4096;

#[derive(Default)]
pub(crate) struct Seen {
    keys: Mutex<VecDeque<SessionKey>>,
}

impl Seen {
    /// Remembers `key` as the most recently seen.
    pub(crate) fn remember(&self, key: &SessionKey) {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = keys.iter().position(|k| k == key) {
            keys.remove(at);
        } else if keys.len() == CAPACITY {
            keys.pop_front();
        }
        keys.push_back(key.clone());
    }

    /// Forgets `key` (a session found gone).
    pub(crate) fn forget(&self, key: &SessionKey) {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner).retain(|k| k != key);
    }

    /// The remembered sessions called `session_id`.
    pub(crate) fn called(&self, session_id: &str) -> Vec<SessionKey> {
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        keys.iter().filter(|k| k.session_id() == session_id).cloned().collect()
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
    }
}
