//! State key prefixes and the split of a flat state map into its scopes.

use serde_json::{Map, Value};

/// Prefix of keys shared by every session of an app.
pub const APP_PREFIX: &str = "app:";
/// Prefix of keys shared by every session of one user in an app.
pub const USER_PREFIX: &str = "user:";
/// Prefix of keys that live for the current invocation only and are never persisted.
pub const TEMP_PREFIX: &str = "temp:";

/// Where a state key lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// No prefix: this session only.
    Session,
    /// `user:`: every session of this (app, user).
    User,
    /// `app:`: every session of this app.
    App,
    /// `temp:`: this invocation only, never stored.
    Temp,
}

impl Scope {
    /// The scope of `key` and the key without its prefix.
    ///
    /// Prefixes are checked in the reference's order, `app:` first, so `app:user:x` is the app
    /// key `user:x`.
    ///
    /// ```
    /// use agentstate::Scope;
    /// assert_eq!(Scope::of("app:user:x"), (Scope::App, "user:x"));
    /// assert_eq!(Scope::of("user:name"), (Scope::User, "name"));
    /// assert_eq!(Scope::of("topic"), (Scope::Session, "topic"));
    /// ```
    pub fn of(key: &str) -> (Scope, &str) {
        if let Some(rest) = key.strip_prefix(APP_PREFIX) {
            (Scope::App, rest)
        } else if let Some(rest) = key.strip_prefix(USER_PREFIX) {
            (Scope::User, rest)
        } else if key.starts_with(TEMP_PREFIX) {
            (Scope::Temp, key)
        } else {
            (Scope::Session, key)
        }
    }
}

/// A flat state map split by scope, prefixes removed; `temp:` keys are dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScopedState {
    /// App-scope keys, without `app:`.
    pub app: Map<String, Value>,
    /// User-scope keys, without `user:`.
    pub user: Map<String, Value>,
    /// Session-scope keys.
    pub session: Map<String, Value>,
}

impl ScopedState {
    /// Splits a flat map (initial state or a state delta) by scope, dropping `temp:` keys.
    pub fn split(flat: Map<String, Value>) -> Self {
        let mut out = Self::default();
        for (key, value) in flat {
            if let Some((scope, rest)) = out.scope_of(&key) {
                scope.insert(rest.to_owned(), value);
            }
        }
        out
    }

    /// Like [`split`](Self::split), copying from a map that stays as it is.
    pub fn split_copy(flat: &Map<String, Value>) -> Self {
        let mut out = Self::default();
        for (key, value) in flat {
            if let Some((scope, rest)) = out.scope_of(key) {
                scope.insert(rest.to_owned(), value.clone());
            }
        }
        out
    }

    /// The map `key` belongs in and its name there (prefix removed); `None` for `temp:` keys.
    fn scope_of<'k>(&mut self, key: &'k str) -> Option<(&mut Map<String, Value>, &'k str)> {
        match Scope::of(key) {
            (Scope::App, rest) => Some((&mut self.app, rest)),
            (Scope::User, rest) => Some((&mut self.user, rest)),
            (Scope::Session, rest) => Some((&mut self.session, rest)),
            (Scope::Temp, _) => None,
        }
    }

    /// True when no scope has a key.
    pub fn is_empty(&self) -> bool {
        self.app.is_empty() && self.user.is_empty() && self.session.is_empty()
    }
}

/// Keys to delete, split by scope, prefixes removed; `temp:` keys are dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopedKeys {
    /// App-scope keys, without `app:`.
    pub app: Vec<String>,
    /// User-scope keys, without `user:`.
    pub user: Vec<String>,
    /// Session-scope keys.
    pub session: Vec<String>,
}

impl ScopedKeys {
    /// Splits prefixed keys by scope, dropping `temp:` keys.
    pub fn split<'k>(keys: impl IntoIterator<Item = &'k String>) -> Self {
        let mut out = Self::default();
        for key in keys {
            match Scope::of(key) {
                (Scope::App, rest) => out.app.push(rest.to_owned()),
                (Scope::User, rest) => out.user.push(rest.to_owned()),
                (Scope::Session, _) => out.session.push(key.clone()),
                (Scope::Temp, _) => {}
            }
        }
        out
    }

    /// True when no scope has a key.
    pub fn is_empty(&self) -> bool {
        self.app.is_empty() && self.user.is_empty() && self.session.is_empty()
    }
}

/// Applies a change to a state map as a commit does: sets each key of `set` (the reference's
/// `dict.update`: top-level keys replace, `null` is a value), then removes the `deleted` keys.
pub fn apply_changes(state: &mut Map<String, Value>, set: &Map<String, Value>, deleted: &[String]) {
    for (k, v) in set {
        state.insert(k.clone(), v.clone());
    }
    for k in deleted {
        state.shift_remove(k);
    }
}

/// Builds the merged view a session exposes: session keys, then `app:` keys, then `user:` keys.
pub fn merge_scopes(
    session: &Map<String, Value>,
    app: &Map<String, Value>,
    user: &Map<String, Value>,
) -> Map<String, Value> {
    let mut merged = Map::with_capacity(session.len() + app.len() + user.len());
    merged.extend(session.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged.extend(app.iter().map(|(k, v)| (format!("{APP_PREFIX}{k}"), v.clone())));
    merged.extend(user.iter().map(|(k, v)| (format!("{USER_PREFIX}{k}"), v.clone())));
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn split_routes_by_prefix_and_drops_temp() {
        let s = ScopedState::split(map(json!({
            "k": 1, "app:a": "A", "user:u": "U", "temp:t": "T", "app:user:x": 2, "user:app:y": 3,
            "apps": 4, "temp": 5
        })));
        assert_eq!(s.app, map(json!({"a": "A", "user:x": 2})));
        assert_eq!(s.user, map(json!({"u": "U", "app:y": 3})));
        assert_eq!(s.session, map(json!({"k": 1, "apps": 4, "temp": 5})));
    }

    #[test]
    fn merge_orders_session_then_app_then_user() {
        let merged = merge_scopes(&map(json!({"z": 1})), &map(json!({"a": 2})), &map(json!({"b": 3})));
        let keys: Vec<_> = merged.keys().cloned().collect();
        assert_eq!(keys, ["z", "app:a", "user:b"]);
    }
}
