//! Request limits, each answered with a message naming the limit and the option that sets it.

use agentstate::{Map, Value};
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};

use crate::error::ApiError;

/// Bounds on what one request may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes (`--max-body-bytes`).
    pub max_body_bytes: usize,
    /// Longest state key, in characters (`--max-key-chars`).
    pub max_key_chars: usize,
    /// Deepest nesting of a JSON value in state (`--max-json-depth`).
    pub max_json_depth: usize,
    /// Largest state (initial state or delta) one request may write, in bytes of JSON
    /// (`--max-state-bytes`).
    pub max_state_bytes: usize,
    /// Largest artifact a save takes, in bytes of its payload with its metadata
    /// (`--max-artifact-bytes`); the save route reads a body up to a third more (base64) and
    /// 64 KiB of JSON around it, beyond `max_body_bytes`.
    pub max_artifact_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1 << 20,
            max_key_chars: 256,
            max_json_depth: 32,
            max_state_bytes: 256 << 10,
            max_artifact_bytes: 32 << 20,
        }
    }
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

impl Limits {
    /// Checks a state map a request writes (initial state, a delta).
    pub fn check_state(&self, what: &str, state: &Map<String, Value>) -> Result<(), ApiError> {
        for (key, value) in state {
            let chars = key.chars().count();
            if chars > self.max_key_chars {
                return Err(ApiError::BadRequest(format!(
                    "{what}: key {:?}… is {chars} characters long; the limit is {} (--max-key-chars)",
                    key.chars().take(32).collect::<String>(),
                    self.max_key_chars
                )));
            }
            let d = depth(value);
            if d > self.max_json_depth {
                return Err(ApiError::BadRequest(format!(
                    "{what}: the value of {key:?} is nested {d} levels deep; the limit is {} (--max-json-depth)",
                    self.max_json_depth
                )));
            }
        }
        let bytes = Value::Object(state.clone()).to_string().len();
        if bytes > self.max_state_bytes {
            return Err(ApiError::TooLarge(format!(
                "{what} is {bytes} bytes of JSON; the limit is {} (--max-state-bytes)",
                self.max_state_bytes
            )));
        }
        Ok(())
    }
}

/// Ids that are printable but unsafe wherever ids become paths or keys elsewhere: path
/// separators and dot segments.
pub(crate) fn check_path_safe(field: &str, id: &str) -> Result<(), ApiError> {
    if id.contains(['/', '\\']) || id == "." || id == ".." {
        return Err(ApiError::BadRequest(format!(
            "invalid {field}: {id:?} contains a path separator or is a dot segment; use letters, digits, '-', '_', '.' or ':'"
        )));
    }
    Ok(())
}

/// The request body, refused with 413 past [`Limits::max_body_bytes`] (set as axum's body limit).
pub(crate) struct Body(pub(crate) Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let limit = request.extensions().get::<Limits>().map(|l| l.max_body_bytes);
        Bytes::from_request(request, state).await.map(Body).map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                let limit = limit.map_or_else(String::new, |l| format!(" of {l} bytes"));
                ApiError::TooLarge(format!("The request body exceeds the limit{limit} (--max-body-bytes)"))
            } else if timed_out(&e) {
                ApiError::Timeout("The request body did not arrive in time (--body-read-timeout-secs)".to_owned())
            } else {
                ApiError::BadRequest(format!("Could not read the request body: {e}"))
            }
        })
    }
}

/// Whether reading the body failed on the body read timeout.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn each_limit_names_itself() {
        let limits = Limits {
            max_body_bytes: 10,
            max_key_chars: 4,
            max_json_depth: 2,
            max_state_bytes: 40,
            ..Limits::default()
        };
        assert!(limits.check_state("state", &map(json!({"abcd": [[1]]}))).is_ok());
        let e = limits.check_state("state", &map(json!({"abcde": 1}))).unwrap_err().to_string();
        assert!(e.contains("--max-key-chars"), "{e}");
        let e = limits.check_state("state", &map(json!({"a": [[[1]]]}))).unwrap_err().to_string();
        assert!(e.contains("--max-json-depth"), "{e}");
        let e = limits.check_state("stateDelta", &map(json!({"a": "x".repeat(50)}))).unwrap_err().to_string();
        assert!(e.contains("--max-state-bytes"), "{e}");
    }

    #[test]
    fn path_unsafe_ids() {
        for bad in ["a/b", "..", ".", "a\\b"] {
            assert!(check_path_safe("session_id", bad).is_err(), "{bad}");
        }
        for ok in ["a.b", "..a", "user:1", "s-1_x"] {
            assert!(check_path_safe("session_id", ok).is_ok(), "{ok}");
        }
    }
}
