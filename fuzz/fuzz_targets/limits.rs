//! The limits checker: a state passes exactly when every key is within the key length, every
//! value within the nesting depth, and the whole within the size, each counted independently
//! here; and a refusal names the option that sets the limit.
#![no_main]

use agentstate::{Map, Value};
use agentstate_server::Limits;
use libfuzzer_sys::fuzz_target;

fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0)];
    while let Some((v, d)) = stack.pop() {
        let children: Vec<&Value> = match v {
            Value::Array(items) => items.iter().collect(),
            Value::Object(map) => map.values().collect(),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

fuzz_target!(|data: &[u8]| {
    let [a, b, c, rest @ ..] = data else { return };
    let Ok(Value::Object(state)) = serde_json::from_slice::<Value>(rest) else { return };
    let limits = Limits {
        max_body_bytes: 1 << 20,
        max_key_chars: usize::from(*a % 32),
        max_json_depth: usize::from(*b % 8),
        max_state_bytes: usize::from(*c) * 4,
        ..Limits::default()
    };
    let state: Map<String, Value> = state;
    let keys_ok = state.keys().all(|k| k.chars().count() <= limits.max_key_chars);
    let depth_ok = state.values().all(|v| depth(v) <= limits.max_json_depth);
    let size_ok = Value::Object(state.clone()).to_string().len() <= limits.max_state_bytes;
    match limits.check_state("state", &state) {
        Ok(()) => assert!(keys_ok && depth_ok && size_ok, "accepted past a limit: {limits:?}"),
        Err(e) => {
            assert!(!(keys_ok && depth_ok && size_ok), "refused within the limits: {e}");
            let message = e.to_string();
            assert!(
                ["--max-key-chars", "--max-json-depth", "--max-state-bytes"].iter().any(|o| message.contains(o)),
                "a refusal that names no option: {message}"
            );
        }
    }
});
