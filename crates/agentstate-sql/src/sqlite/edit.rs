//! A state column changed in place by SQLite's JSON functions, so an append neither reads the
//! state nor parses and re-encodes it in Rust. Either way an existing key keeps its place and
//! takes the new value, a new key goes last (the reference's `dict.update`), and numbers keep
//! their text, so a value reads back exactly as written.
//!
//! - Most deltas replace values whole (no `null`, no object, nothing deleted): then
//!   `json_patch(state, delta)` does exactly that, in a statement that never changes.
//! - Otherwise (`json_patch` would delete a `null` key and merge an object into the old one)
//!   each key is set with `json_set` and each deleted key removed with `json_remove`, a path per
//!   key. Paths quote the key with JSON's escapes (`$."a\"b"`), which SQLite (3.45 on) compares
//!   with stored keys escapes and all.

use std::fmt::Write;

use agentstate::{Map, Value};

/// Keys in one statement: SQLite takes at most 1,000 arguments a function and 32,766 parameters
/// a statement, so a delta larger than this takes more than one statement.
const KEYS_PER_STATEMENT: usize = 2_000;
/// Keys in one `json_set` or `json_remove` call; larger edits nest calls.
const KEYS_PER_CALL: usize = 400;

/// One state change, as SQL.
pub(super) enum StateEdit {
    /// Nothing changes.
    Nothing,
    /// `json_patch` with this JSON object: every value replaces its key's whole.
    Patch(String),
    /// `json_set` per key set and `json_remove` per key deleted: the paths and values.
    Paths { set: Vec<(String, String)>, removed: Vec<String> },
}

/// One statement's share of an edit: the expression that replaces `state`, and its parameters
/// (numbered from the statement's first free one).
pub(super) struct Chunk<'a> {
    pub(super) expression: String,
    pub(super) params: Vec<&'a str>,
}

/// `key` as a path to a member of the top-level object.
fn path(key: &str) -> String {
    let plain = !key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
    if plain {
        let mut path = String::with_capacity(key.len() + 4);
        path.extend(["$.\"", key, "\""]);
        path
    } else {
        format!("$.{}", Value::String(key.to_owned()))
    }
}

impl StateEdit {
    /// Sets every key of `delta`, then removes `deleted`.
    pub(super) fn new(delta: &Map<String, Value>, deleted: &[String]) -> Self {
        if delta.is_empty() && deleted.is_empty() {
            Self::Nothing
        } else if deleted.is_empty() && delta.values().all(|v| !v.is_null() && !v.is_object()) {
            Self::Patch(serde_json::to_string(delta).unwrap_or_default())
        } else {
            Self::Paths {
                set: delta.iter().map(|(k, v)| (path(k), v.to_string())).collect(),
                removed: deleted.iter().map(|k| path(k)).collect(),
            }
        }
    }

    /// For [`StateEdit::Paths`]: the statements' shares, in order (every key set before any is
    /// removed), with the parameters of each numbered from `first` on. None for the others.
    pub(super) fn chunks(&self, first: usize) -> Vec<Chunk<'_>> {
        let Self::Paths { set, removed } = self else { return Vec::new() };
        let set: Vec<&[(String, String)]> = set.chunks(KEYS_PER_STATEMENT).collect();
        let removed: Vec<&[String]> = removed.chunks(KEYS_PER_STATEMENT).collect();
        // The last keys set share a statement with the first keys removed.
        let shared = set.len().max(1) - 1;
        let pieces = (0..shared)
            .map(|i| (set[i], &[][..]))
            .chain(std::iter::once((
                set.get(shared).copied().unwrap_or_default(),
                removed.first().copied().unwrap_or_default(),
            )))
            .chain(removed.iter().skip(1).map(|r| (&[][..], *r)));
        pieces.map(|(s, r)| Self::chunk(s, r, first)).collect()
    }

    /// One statement's share: `json_remove(json_set(json_set(state, ?1, jsonb(?2), …), …), ?k, …)`.
    fn chunk<'a>(set: &'a [(String, String)], removed: &'a [String], first: usize) -> Chunk<'a> {
        let (set_calls, remove_calls) = (set.len().div_ceil(KEYS_PER_CALL), removed.len().div_ceil(KEYS_PER_CALL));
        let mut expression =
            String::with_capacity(13 * (set_calls + remove_calls) + 22 * set.len() + 8 * removed.len() + 5);
        (0..remove_calls).for_each(|_| expression.push_str("json_remove("));
        (0..set_calls).for_each(|_| expression.push_str("json_set("));
        expression.push_str("state");
        let mut params = Vec::with_capacity(2 * set.len() + removed.len());
        let mut next = first;
        for call in set.chunks(KEYS_PER_CALL) {
            for (path, value) in call {
                let _ = write!(expression, ", ?{next}, jsonb(?{})", next + 1);
                params.extend([path.as_str(), value.as_str()]);
                next += 2;
            }
            expression.push(')');
        }
        for call in removed.chunks(KEYS_PER_CALL) {
            for path in call {
                let _ = write!(expression, ", ?{next}");
                params.push(path.as_str());
                next += 1;
            }
            expression.push(')');
        }
        Chunk { expression, params }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;
    use serde_json::json;

    /// Applies the edit to `state` in SQLite, as the commit does.
    fn apply(state: &Value, delta: &Map<String, Value>, deleted: &[String]) -> Value {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (state TEXT)").unwrap();
        conn.execute("INSERT INTO t VALUES (?1)", [state.to_string()]).unwrap();
        let edit = StateEdit::new(delta, deleted);
        if let StateEdit::Patch(patch) = &edit {
            conn.execute("UPDATE t SET state = json_patch(state, ?1)", [patch]).unwrap();
        }
        for chunk in edit.chunks(1) {
            let sql = format!("UPDATE t SET state = {}", chunk.expression);
            conn.execute(&sql, rusqlite::params_from_iter(chunk.params)).unwrap();
        }
        let text: String = conn.query_row("SELECT state FROM t", [], |r| r.get(0)).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// What the commit did before, in Rust: the oracle.
    fn merged(state: &Value, delta: &Map<String, Value>, deleted: &[String]) -> Value {
        let mut state = state.as_object().unwrap().clone();
        agentstate::store::apply_changes(&mut state, delta, deleted);
        Value::Object(state)
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn edits_in_sql_as_the_rust_merge_did() {
        let keys = ["plain", "a\"b", "back\\slash", "a.b", "[0]", "$", "", "é", "tab\t", "nul\u{0}", "\u{1f600}", "'"];
        let state = Value::Object(keys.iter().enumerate().map(|(i, k)| ((*k).to_owned(), json!(i))).collect());
        for (i, key) in keys.iter().enumerate() {
            let delta =
                object(json!({ *key: {"nested": [1, 2.5, null]}, "new": null, "user:x": 3.3333333333333335e100 }));
            let deleted = vec![keys[(i + 1) % keys.len()].to_owned()];
            let got = apply(&state, &delta, &deleted);
            assert_eq!(got, merged(&state, &delta, &deleted), "key {key:?}");
            // Order as well: an existing key keeps its place, a new one goes last.
            let order = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(order(&got), order(&merged(&state, &delta, &deleted)), "key {key:?}");
        }
    }

    /// Whole values, no deletion: `json_patch`, for every kind of key, as the Rust merge.
    #[test]
    fn whole_values_are_patched_as_the_rust_merge_did() {
        let keys = ["plain", "a\"b", "back\\slash", "a.b", "", "é", "tab\t", "\u{1f600}"];
        let state = json!({"plain": {"deep": 1}, "a\"b": [1], "kept": true, "é": "x"});
        for key in keys {
            let delta = object(json!({ key: [1, {"o": null}], "n": 3.3333333333333335e100, "s": "t\u{0}" }));
            assert!(matches!(StateEdit::new(&delta, &[]), StateEdit::Patch(_)));
            let got = apply(&state, &delta, &[]);
            assert_eq!(got, merged(&state, &delta, &[]), "key {key:?}");
            let order = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(order(&got), order(&merged(&state, &delta, &[])), "key {key:?}");
        }
        // A `null` or an object value, or a deletion, takes paths instead.
        for (delta, deleted) in
            [(json!({"k": null}), vec![]), (json!({"k": {}}), vec![]), (json!({"k": 1}), vec!["x".into()])]
        {
            assert!(matches!(StateEdit::new(&object(delta), &deleted), StateEdit::Paths { .. }));
        }
    }

    #[test]
    fn keys_stored_with_escapes_are_found() {
        // As Python's json.dumps writes them (ensure_ascii): non-ASCII and quotes escaped.
        let conn = Connection::open_in_memory().unwrap();
        let stored = r#"{"caf\u00e9": 1, "q\"k": 2}"#;
        let delta = object(json!({"café": 10, "q\"k": {"object": "takes paths"}}));
        let edit = StateEdit::new(&delta, &[]);
        let chunk = &edit.chunks(2)[0];
        let sql = format!("SELECT {} FROM (SELECT ?1 AS state)", chunk.expression);
        let params: Vec<&str> = std::iter::once(stored).chain(chunk.params.iter().copied()).collect();
        let text: String = conn.query_row(&sql, rusqlite::params_from_iter(params), |r| r.get(0)).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"café": 10, "q\"k": {"object": "takes paths"}})
        );
    }

    #[test]
    fn large_edits_take_several_calls_and_statements() {
        let delta: Map<String, Value> = (0..5_000).map(|i| (format!("k{i}"), json!({"v": i}))).collect();
        let deleted: Vec<String> = (0..900).map(|i| format!("k{}", i * 3)).collect();
        let edit = StateEdit::new(&delta, &deleted);
        assert_eq!(edit.chunks(1).len(), 3);
        let state = json!({"k1": "old", "other": true});
        assert_eq!(apply(&state, &delta, &deleted), merged(&state, &delta, &deleted));
    }

    #[test]
    fn numbers_keep_their_text() {
        let state = json!({"a": 0.1, "b": 12345678901234567890_u64, "c": -0.0});
        let delta = object(json!({"d": 1e-7, "e": 0.30000000000000004}));
        assert!(matches!(StateEdit::new(&delta, &[]), StateEdit::Patch(_)));
        let got = apply(&state, &delta, &[]);
        assert_eq!(got, merged(&state, &delta, &[]));
        assert_eq!(got["e"].as_f64(), Some(0.30000000000000004));
    }
}
