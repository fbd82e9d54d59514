//! The merged, read-only state view of a session.

use serde::Serialize;
use serde_json::{Map, Value};

/// A session's state as the service hands it out: session keys, then `app:` keys, then `user:`
/// keys (and, on a live handle, the invocation's `temp:` keys).
///
/// It is read-only on purpose. State changes only by appending an event whose
/// `actions.state_delta` carries them, so every change is recorded, persisted and thread-safe;
/// the reference's warning against editing `session.state` directly is a compile error here.
///
/// ```compile_fail
/// # async fn f(session: agentstate::Session) {
/// session.state().insert("k".into(), 1.into()); // no such method: state is read-only
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct State(Map<String, Value>);

impl State {
    pub(crate) fn from_map(map: Map<String, Value>) -> Self {
        Self(map)
    }

    /// The value of `key`, with its prefix (`"user:name"`).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Whether `key` is present (a key set to `null` is present).
    pub fn contains(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Every key and value, in the merged order.
    pub fn all(&self) -> &Map<String, Value> {
        &self.0
    }

    /// Iterates over keys and values in the merged order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Removes each of `keys` (prefixed).
    pub(crate) fn remove(&mut self, keys: &[String]) {
        for key in keys {
            self.0.shift_remove(key);
        }
    }

    /// Sets each key of `delta` (prefixed keys stay prefixed).
    pub(crate) fn apply(&mut self, delta: &Map<String, Value>) {
        for (k, v) in delta {
            self.0.insert(k.clone(), v.clone());
        }
    }
}

impl<'a> IntoIterator for &'a State {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
