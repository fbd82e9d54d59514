//! Events both ways between ADK-Rust's `Event` and agentstate's (the reference's storage form,
//! which ADK for Python, ADK for TypeScript and agentstate's own runtime read), losing nothing.
//!
//! What both models have is mapped field by field: ids, author, branch, the time (to the
//! nanosecond), content (parts in the reference's shape: `function_call`, `function_response`,
//! `inline_data` with base64, `file_data`, thoughts as `thought: true` text), the flags, errors,
//! long-running tool ids, and the actions both know. What only one side has travels in a place
//! the other side keeps without reading it:
//! - ADK-Rust's own fields (`finish_reason`, `usage_metadata`, `llm_request`, provider
//!   metadata, tool confirmations, compaction, routes…) in agentstate's `custom_metadata` under
//!   an internal key (stored, never shown on the APIs);
//! - agentstate's fields ADK-Rust has no place for (`node_info`, `custom_metadata`, unknown
//!   fields, a `false` written out) as one JSON string in ADK-Rust's `event_metadata`.
//!
//! So an ADK-Rust event stored and read back is the same event, and an event another ADK wrote,
//! read through ADK-Rust and stored again, is the same too.

use adk_core::Event as RustEvent;
use agentstate::{Event, Map, Timestamp, Value};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use chrono::{DateTime, Utc};

/// `custom_metadata` key of agentstate's event holding what only ADK-Rust's event has.
const RUST_ONLY: &str = "__adk_internal_adk_rust";
/// The key of a content part that only ADK-Rust's model has a shape for.
const RUST_PART: &str = "adk_rust_part";
/// `event_metadata` key of ADK-Rust's event holding what only agentstate's event has.
pub const REFERENCE_ONLY: &str = "agentstate.reference";

/// ADK-Rust's event as agentstate's.
///
/// # Errors
/// When the event's JSON is not an object a model reads (never for an event ADK-Rust built).
pub fn to_agentstate(event: &RustEvent) -> serde_json::Result<Event> {
    let Value::Object(mut rust) = serde_json::to_value(event)? else {
        return Err(serde::de::Error::custom("an ADK-Rust event is not a JSON object"));
    };
    let stash = take_stash(&mut rust);
    let mut out = Map::new();
    for field in ["id", "invocation_id", "author"] {
        if let Some(value) = rust.remove(field) {
            out.insert(field.into(), value);
        }
    }
    rust.remove("timestamp");
    if let Some(Value::String(branch)) = rust.remove("branch")
        && !branch.is_empty()
    {
        out.insert("branch".into(), Value::String(branch));
    }
    if let Some(Value::Object(mut content)) = rust.remove("content") {
        if let Some(Value::Array(parts)) = content.get_mut("parts") {
            for part in parts.iter_mut() {
                *part = part_to_reference(std::mem::take(part));
            }
        }
        out.insert("content".into(), Value::Object(content));
    }
    for flag in ["partial", "turn_complete", "interrupted"] {
        if rust.remove(flag) == Some(Value::Bool(true)) {
            out.insert(flag.into(), Value::Bool(true));
        }
    }
    for field in ["error_code", "error_message"] {
        if let Some(value) = rust.remove(field).filter(|v| !v.is_null()) {
            out.insert(field.into(), value);
        }
    }
    if let Some(Value::Array(ids)) = rust.remove("long_running_tool_ids")
        && !ids.is_empty()
    {
        out.insert("long_running_tool_ids".into(), Value::Array(ids));
    }
    let mut rust_actions = match rust.remove("actions") {
        Some(Value::Object(actions)) => actions,
        _ => Map::new(),
    };
    let mut actions = Map::new();
    for field in ["state_delta", "artifact_delta"] {
        actions.insert(field.into(), rust_actions.remove(field).unwrap_or_else(|| Value::Object(Map::new())));
    }
    for flag in ["skip_summarization", "escalate"] {
        if rust_actions.remove(flag) == Some(Value::Bool(true)) {
            actions.insert(flag.into(), Value::Bool(true));
        }
    }
    if let Some(target) = rust_actions.remove("transfer_to_agent").filter(|v| !v.is_null()) {
        actions.insert("transfer_to_agent".into(), target);
    }
    out.insert("actions".into(), Value::Object(actions));
    let from_elsewhere = stash.is_some();
    if let Some(stash) = stash {
        apply_stash(&mut out, stash);
    }
    // What only ADK-Rust has: kept where agentstate keeps metadata it does not read. There for
    // every event ADK-Rust made (empty when there is nothing), so that reading it back knows it
    // converts exactly without checking; not for one that came from elsewhere and carries a
    // stash, which goes back as it was.
    rust.retain(|_, v| !v.is_null() && *v != Value::Object(Map::new()));
    rust_actions.retain(|_, v| !v.is_null());
    let mut only = Map::new();
    if !rust.is_empty() {
        only.insert("event".into(), Value::Object(rust));
    }
    if !rust_actions.is_empty() {
        only.insert("actions".into(), Value::Object(rust_actions));
    }
    if !from_elsewhere || !only.is_empty() {
        let meta = out.entry("custom_metadata").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(RUST_ONLY.into(), Value::Object(only));
        }
    }
    let mut converted: Event = serde_json::from_value(Value::Object(out))?;
    converted.set_time(timestamp(event.timestamp));
    Ok(converted)
}

/// agentstate's event as ADK-Rust's.
///
/// # Errors
/// When a part of the event is of a shape ADK-Rust's model refuses.
pub fn from_agentstate(event: &Event) -> serde_json::Result<RustEvent> {
    let mut rust = rust_fields(event)?;
    // Written from an ADK-Rust event: it converts back exactly, nothing to keep.
    let from_rust = |meta: &Value| meta.get(RUST_ONLY).is_some();
    if event.extra.get("custom_metadata").is_some_and(from_rust) {
        return Ok(rust);
    }
    // What this conversion cannot say, so that converting back gives `event` again.
    let back = to_agentstate(&rust)?;
    let stash = stash_between(&serde_json::to_value(event)?, &serde_json::to_value(&back)?);
    if !stash.is_empty() {
        rust.provider_metadata.insert(REFERENCE_ONLY.into(), Value::Object(stash).to_string());
    }
    Ok(rust)
}

/// The fields of ADK-Rust's event `event` has, and what an earlier conversion kept of ADK-Rust's.
fn rust_fields(event: &Event) -> serde_json::Result<RustEvent> {
    let Value::Object(mut reference) = serde_json::to_value(event)? else {
        return Err(serde::de::Error::custom("an event is not a JSON object"));
    };
    let kept = match reference.get_mut("custom_metadata") {
        Some(Value::Object(meta)) => meta.shift_remove(RUST_ONLY),
        _ => None,
    };
    let (mut out, mut actions_out) = match kept {
        Some(Value::Object(mut kept)) => (object(kept.remove("event")), object(kept.remove("actions"))),
        _ => (Map::new(), Map::new()),
    };
    for field in ["id", "invocation_id", "author", "error_code", "error_message"] {
        if let Some(value) = reference.remove(field) {
            out.insert(field.into(), value);
        }
    }
    out.insert("timestamp".into(), Value::String(rfc3339(event.time())));
    out.insert("branch".into(), reference.remove("branch").unwrap_or_else(|| Value::String(String::new())));
    if let Some(Value::Object(mut content)) = reference.remove("content") {
        if let Some(Value::Array(parts)) = content.get_mut("parts") {
            for part in parts.iter_mut() {
                *part = part_to_rust(std::mem::take(part));
            }
        }
        content.entry("role").or_insert_with(|| Value::String(String::new()));
        content.entry("parts").or_insert_with(|| Value::Array(Vec::new()));
        out.insert("content".into(), Value::Object(content));
    }
    for flag in ["partial", "turn_complete", "interrupted"] {
        out.insert(flag.into(), Value::Bool(reference.remove(flag) == Some(Value::Bool(true))));
    }
    out.insert(
        "long_running_tool_ids".into(),
        reference.remove("long_running_tool_ids").unwrap_or(Value::Array(vec![])),
    );
    let mut actions = object(reference.remove("actions"));
    for field in ["state_delta", "artifact_delta"] {
        actions_out.insert(field.into(), actions.remove(field).unwrap_or_else(|| Value::Object(Map::new())));
    }
    for flag in ["skip_summarization", "escalate"] {
        actions_out.insert(flag.into(), Value::Bool(actions.remove(flag) == Some(Value::Bool(true))));
    }
    actions_out.insert("transfer_to_agent".into(), actions.remove("transfer_to_agent").unwrap_or(Value::Null));
    // ADK-Rust counts artifact versions in integers; a delta that is not one stays in the stash.
    if let Some(Value::Object(delta)) = actions_out.get_mut("artifact_delta") {
        delta.retain(|_, v| v.is_i64());
    }
    out.insert("actions".into(), Value::Object(actions_out));
    serde_json::from_value(Value::Object(out))
}

/// Top-level fields (and `actions` fields) where `event` and `back` differ: `event`'s value,
/// and under `"remove"` the fields only `back` has.
fn stash_between(event: &Value, back: &Value) -> Map<String, Value> {
    fn diff(event: &Map<String, Value>, back: &Map<String, Value>, skip: &str) -> Map<String, Value> {
        let mut set = Map::new();
        for (k, v) in event {
            if k != skip && back.get(k) != Some(v) {
                set.insert(k.clone(), v.clone());
            }
        }
        let remove: Vec<Value> =
            back.keys().filter(|k| *k != skip && !event.contains_key(*k)).map(|k| Value::String(k.clone())).collect();
        let mut stash = Map::new();
        if !set.is_empty() {
            stash.insert("set".into(), Value::Object(set));
        }
        if !remove.is_empty() {
            stash.insert("remove".into(), Value::Array(remove));
        }
        stash
    }
    let empty = Map::new();
    let (event, back) = (event.as_object().unwrap_or(&empty), back.as_object().unwrap_or(&empty));
    let mut stash = diff(event, back, "actions");
    let actions = |m: &Map<String, Value>| m.get("actions").and_then(Value::as_object).cloned().unwrap_or_default();
    let in_actions = diff(&actions(event), &actions(back), "");
    if !in_actions.is_empty() {
        stash.insert("actions".into(), Value::Object(in_actions));
    }
    stash
}

/// Takes the stash out of ADK-Rust's `event_metadata`, dropping the map when nothing else is
/// in it.
fn take_stash(rust: &mut Map<String, Value>) -> Option<Map<String, Value>> {
    let Some(Value::Object(meta)) = rust.get_mut("event_metadata") else { return None };
    let text = meta.shift_remove(REFERENCE_ONLY)?;
    if meta.is_empty() {
        rust.shift_remove("event_metadata");
    }
    match serde_json::from_str(text.as_str()?) {
        Ok(Value::Object(stash)) => Some(stash),
        _ => None,
    }
}

/// Applies a stash (see [`stash_between`]) to an event's fields.
fn apply_stash(out: &mut Map<String, Value>, mut stash: Map<String, Value>) {
    fn apply(fields: &mut Map<String, Value>, stash: &mut Map<String, Value>) {
        if let Some(Value::Object(set)) = stash.remove("set") {
            fields.extend(set);
        }
        if let Some(Value::Array(remove)) = stash.remove("remove") {
            for key in remove.iter().filter_map(Value::as_str) {
                fields.shift_remove(key);
            }
        }
    }
    let actions_stash = stash.remove("actions");
    apply(out, &mut stash);
    if let Some(Value::Object(mut in_actions)) = actions_stash
        && let Some(Value::Object(actions)) = out.get_mut("actions")
    {
        apply(actions, &mut in_actions);
    }
}

/// A part of ADK-Rust's content (untagged) in the reference's shape, when it has one that
/// says all of it; else as it is.
fn part_to_reference(part: Value) -> Value {
    let Value::Object(mut p) = part else { return part };
    let keys: Vec<&str> = p.keys().map(String::as_str).collect();
    let only = |allowed: &[&str]| keys.iter().all(|k| allowed.contains(k));
    if p.contains_key("thinking") && only(&["thinking", "signature"]) {
        let mut out = Map::new();
        out.insert("text".into(), p.remove("thinking").unwrap_or_default());
        out.insert("thought".into(), Value::Bool(true));
        if let Some(signature) = p.remove("signature").filter(|v| !v.is_null()) {
            out.insert("thought_signature".into(), signature);
        }
        return Value::Object(out);
    }
    // The reference's arguments and responses are objects; others stay in ADK-Rust's shape.
    if p.get("args").is_some_and(Value::is_object)
        && p.contains_key("name")
        && only(&["name", "args", "id", "thought_signature"])
    {
        let signature = p.remove("thought_signature");
        let mut out = Map::new();
        out.insert("function_call".into(), Value::Object(p));
        if let Some(signature) = signature {
            out.insert("thought_signature".into(), signature);
        }
        return Value::Object(out);
    }
    if let Some(Value::Object(response)) = p.get("functionResponse")
        && only(&["functionResponse", "id"])
        && response.keys().all(|k| k == "name" || k == "response")
        && response.get("response").is_some_and(Value::is_object)
    {
        let mut response = response.clone();
        if let Some(id) = p.remove("id") {
            response.insert("id".into(), id);
        }
        return json_object([("function_response", Value::Object(response))]);
    }
    if let (Some(Value::String(mime)), Some(Value::Array(bytes))) = (p.get("mime_type"), p.get("data"))
        && only(&["mime_type", "data"])
        && let Some(bytes) =
            bytes.iter().map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok())).collect::<Option<Vec<u8>>>()
    {
        let blob =
            json_object([("mime_type", Value::String(mime.clone())), ("data", Value::String(STANDARD.encode(bytes)))]);
        return json_object([("inline_data", blob)]);
    }
    if p.contains_key("file_uri") && p.contains_key("mime_type") && only(&["mime_type", "file_uri"]) {
        return json_object([("file_data", Value::Object(p))]);
    }
    // No shape of the reference's says it all (a server tool call, an embedded resource,
    // annotations…): ADK-Rust's own, under a key of its own.
    json_object([(RUST_PART, Value::Object(p))])
}

/// A part in the reference's shape as ADK-Rust's content has it (see [`part_to_reference`]);
/// a part ADK-Rust has no variant for is kept as its text, so nothing is dropped.
fn part_to_rust(part: Value) -> Value {
    let Value::Object(mut p) = part else { return part };
    if p.len() == 1
        && let Some(own) = p.remove(RUST_PART)
    {
        return own;
    }
    if p.get("thought") == Some(&Value::Bool(true))
        && let Some(text) = p.remove("text")
    {
        let mut out = json_object([("thinking", text)]);
        if let (Some(signature), Value::Object(out)) = (p.remove("thought_signature"), &mut out) {
            out.insert("signature".into(), signature);
        }
        return out;
    }
    if let Some(Value::Object(mut call)) = p.remove("function_call") {
        if let Some(signature) = p.remove("thought_signature") {
            call.insert("thought_signature".into(), signature);
        }
        call.entry("args").or_insert_with(|| Value::Object(Map::new()));
        return Value::Object(call);
    }
    if let Some(Value::Object(mut response)) = p.remove("function_response") {
        let id = response.shift_remove("id");
        response.entry("response").or_insert_with(|| Value::Object(Map::new()));
        let mut out = json_object([("functionResponse", Value::Object(response))]);
        if let (Some(id), Value::Object(out)) = (id, &mut out) {
            out.insert("id".into(), id);
        }
        return out;
    }
    if let Some(Value::Object(mut blob)) = p.remove("inline_data") {
        let data = blob
            .get("data")
            .and_then(Value::as_str)
            .and_then(|d| STANDARD.decode(d).or_else(|_| URL_SAFE.decode(d)).ok());
        blob.insert(
            "data".into(),
            data.map_or(Value::Array(vec![]), |bytes| bytes.into_iter().map(Value::from).collect()),
        );
        return Value::Object(blob);
    }
    if let Some(file) = p.remove("file_data") {
        return file;
    }
    if p.contains_key("text") {
        p.retain(|k, _| k == "text");
        return Value::Object(p);
    }
    // A part ADK-Rust has no variant for (code, its result, video metadata…): its JSON as text.
    json_object([("text", Value::String(Value::Object(p).to_string()))])
}

fn json_object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn object(value: Option<Value>) -> Map<String, Value> {
    match value {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// An ADK-Rust time as an instant (the first or last instant for one outside the years 0001
/// to 9999, which neither Google's API nor ADK for Python can carry).
pub(crate) fn timestamp(time: DateTime<Utc>) -> Timestamp {
    Timestamp::from_date_time(time).unwrap_or(if time.timestamp() < 0 { Timestamp::MIN } else { Timestamp::MAX })
}

/// Epoch nanoseconds of an ADK-Rust time (saturating outside 1677–2262).
#[cfg(test)]
pub(crate) fn nanos(time: DateTime<Utc>) -> i64 {
    time.timestamp_nanos_opt().unwrap_or(if time.timestamp() < 0 { i64::MIN } else { i64::MAX })
}

/// An instant as ADK-Rust's JSON writes times.
fn rfc3339(time: Timestamp) -> String {
    time.date_time().to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn text() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 é_:\"\\\\]{0,12}"
    }

    fn json_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            text().prop_map(Value::from),
            prop::collection::vec(any::<i32>(), 0..3).prop_map(|v| json!(v)),
            (text(), any::<i32>()).prop_map(|(k, v)| json!({ k: v })),
        ]
    }

    /// ADK-Rust's parts, each kind, as its serde writes them.
    fn rust_part() -> impl Strategy<Value = Value> {
        prop_oneof![
            text().prop_map(|t| json!({"text": t})),
            (text(), prop::option::of(text())).prop_map(|(t, s)| match s {
                Some(s) => json!({"thinking": t, "signature": s}),
                None => json!({"thinking": t}),
            }),
            (text(), json_value(), prop::option::of(text())).prop_map(|(n, a, id)| match id {
                Some(id) => json!({"name": n, "args": a, "id": id}),
                None => json!({"name": n, "args": a}),
            }),
            (text(), json_value(), prop::option::of(text())).prop_map(|(n, r, id)| match id {
                Some(id) => json!({"functionResponse": {"name": n, "response": r}, "id": id}),
                None => json!({"functionResponse": {"name": n, "response": r}}),
            }),
            (text(), prop::collection::vec(any::<u8>(), 0..8)).prop_map(|(m, d)| json!({"mime_type": m, "data": d})),
            (text(), text()).prop_map(|(m, u)| json!({"mime_type": m, "file_uri": u})),
            json_value().prop_map(|v| json!({"server_tool_call": v})),
        ]
    }

    prop_compose! {
        fn rust_event()(
            parts in prop::collection::vec(rust_part(), 0..4),
            role in prop::option::of(text()),
            branch in text(),
            flags in any::<(bool, bool, bool, bool, bool)>(),
            error in prop::option::of(text()),
            delta in prop::collection::vec((text(), json_value()), 0..3),
            artifacts in prop::collection::vec((text(), any::<i64>()), 0..2),
            transfer in prop::option::of(text()),
            long_running in prop::collection::vec(text(), 0..2),
            metadata in prop::collection::vec((text(), text()), 0..2),
            finish in prop::option::of(Just("Stop")),
            nanos in 0_i64..4_000_000_000_000_000_000,
        ) -> RustEvent {
            let mut event = json!({
                "id": "e1", "timestamp": rfc3339(Timestamp::from_nanos(nanos)), "invocation_id": "inv",
                "branch": branch, "author": "agent", "partial": flags.0, "turn_complete": flags.1,
                "interrupted": flags.2, "error_code": error, "error_message": null, "finish_reason": finish,
                "actions": {
                    "state_delta": delta.into_iter().collect::<Map<String, Value>>(),
                    "artifact_delta": artifacts.into_iter().map(|(k, v)| (k, Value::from(v))).collect::<Map<String, Value>>(),
                    "skip_summarization": flags.3, "transfer_to_agent": transfer, "escalate": flags.4,
                },
                "long_running_tool_ids": long_running,
                "event_metadata": metadata.into_iter().map(|(k, v)| (k, Value::String(v))).collect::<Map<String, Value>>(),
            });
            if let Some(role) = role {
                event["content"] = json!({"role": role, "parts": parts});
            }
            serde_json::from_value(event).unwrap()
        }
    }

    /// Reference events: every field ADK's models have, some ADK-Rust has no place for.
    fn reference_part() -> impl Strategy<Value = Value> {
        prop_oneof![
            text().prop_map(|t| json!({"text": t})),
            (text(), text()).prop_map(|(t, s)| json!({"text": t, "thought": true, "thought_signature": s})),
            text().prop_map(|t| json!({"text": t, "thought": false})),
            (text(), json_value())
                .prop_map(|(n, a)| json!({"function_call": {"id": "c1", "name": n, "args": {"a": a}}})),
            (text(), json_value()).prop_map(|(n, r)| json!({"function_response": {"name": n, "response": {"r": r}}})),
            prop::collection::vec(any::<u8>(), 0..8)
                .prop_map(|d| json!({"inline_data": {"mime_type": "image/png", "data": STANDARD.encode(d)}})),
            text().prop_map(|c| json!({"executable_code": {"code": c, "language": "PYTHON"}})),
        ]
    }

    prop_compose! {
        fn reference_event()(
            parts in prop::collection::vec(reference_part(), 0..4),
            content in any::<bool>(),
            branch in prop::option::of(text()),
            partial in prop::option::of(any::<bool>()),
            delta in prop::collection::vec((text(), json_value()), 0..3),
            artifact in prop::option::of(json_value()),
            custom in prop::option::of(json_value()),
            unknown in prop::option::of(json_value()),
            nanos in 0_i64..4_000_000_000_000_000_000,
        ) -> Event {
            let mut event = json!({
                "id": "e1", "invocation_id": "inv", "author": "agent",
                "actions": {"state_delta": delta.into_iter().collect::<Map<String, Value>>(), "artifact_delta": {}},
                "node_info": {"path": "root"},
            });
            if content {
                event["content"] = json!({"role": "model", "parts": parts});
            }
            if let Some(branch) = branch { event["branch"] = json!(branch); }
            if let Some(partial) = partial { event["partial"] = json!(partial); }
            if let Some(artifact) = artifact { event["actions"]["artifact_delta"] = json!({"f.txt": artifact}); }
            if let Some(custom) = custom { event["custom_metadata"] = json!({"mine": custom}); }
            if let Some(unknown) = unknown { event["unknown_field"] = unknown; }
            let mut event: Event = serde_json::from_value(event).unwrap();
            event.set_time(Timestamp::from_nanos(nanos));
            event
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// An ADK-Rust event stored by agentstate reads back as the same event.
        #[test]
        fn adk_rust_events_round_trip(event in rust_event()) {
            let stored = to_agentstate(&event).unwrap();
            prop_assert_eq!(stored.time().nanos(), nanos(event.timestamp));
            let back = from_agentstate(&stored).unwrap();
            prop_assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&event).unwrap());
            // Through storage's JSON too.
            let (reread, _) = Event::from_stored_json(&serde_json::to_string(&stored).unwrap()).unwrap();
            let back = from_agentstate(&reread).unwrap();
            prop_assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&event).unwrap());
        }

        /// An event another ADK wrote, read through ADK-Rust and stored again, is the same event.
        #[test]
        fn reference_events_round_trip(event in reference_event()) {
            let rust = from_agentstate(&event).unwrap();
            prop_assert_eq!(nanos(rust.timestamp), event.time().nanos());
            let back = to_agentstate(&rust).unwrap();
            prop_assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&event).unwrap());
        }
    }

    #[test]
    fn parts_take_the_references_shape() {
        let event: RustEvent = serde_json::from_value(json!({
            "id": "e", "timestamp": "2030-01-01T00:00:00.000000001Z", "invocation_id": "i", "branch": "a.b",
            "author": "agent", "partial": false, "turn_complete": true, "interrupted": false,
            "content": {"role": "model", "parts": [
                {"thinking": "hmm", "signature": "sig"},
                {"name": "f", "args": {"a": 1}, "id": "c1"},
                {"functionResponse": {"name": "f", "response": {"r": 2}}, "id": "c1"},
                {"mime_type": "image/png", "data": [1, 2, 3]},
                {"mime_type": "text/plain", "file_uri": "gs://b/o"},
            ]},
            "actions": {"state_delta": {"k": 1}, "artifact_delta": {}, "skip_summarization": false, "escalate": false},
            "long_running_tool_ids": [],
        }))
        .unwrap();
        let stored = serde_json::to_value(to_agentstate(&event).unwrap()).unwrap();
        assert_eq!(
            stored["content"]["parts"],
            json!([
                {"text": "hmm", "thought": true, "thought_signature": "sig"},
                {"function_call": {"name": "f", "args": {"a": 1}, "id": "c1"}},
                {"function_response": {"name": "f", "response": {"r": 2}, "id": "c1"}},
                {"inline_data": {"mime_type": "image/png", "data": "AQID"}},
                {"file_data": {"mime_type": "text/plain", "file_uri": "gs://b/o"}},
            ])
        );
        assert_eq!((stored["branch"].clone(), stored["turn_complete"].clone()), (json!("a.b"), json!(true)));
        assert!(stored.get("partial").is_none(), "false is ADK-Rust's default, not written: {stored}");
    }
}
