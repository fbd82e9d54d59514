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
//!
//! Two things keep long sessions cheap to read back, each turn reading every event: the copy of
//! the model's request that ADK-Rust's `LlmAgent` puts in `event_metadata` beside `llm_request`
//! (the whole conversation so far, on every model event) is stored once and copied on reading;
//! and an event ADK-Rust wrote is read into ADK-Rust's types field by field (`owned`), its
//! own fields moved rather than copied, with no JSON tree of the whole event in between.

use adk_core::Event as RustEvent;
use agentstate::{Event, Map, Timestamp, Value};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use chrono::{DateTime, Utc};

mod owned;

/// `custom_metadata` key of agentstate's event holding what only ADK-Rust's event has.
const RUST_ONLY: &str = "__adk_internal_adk_rust";
/// The key of a content part that only ADK-Rust's model has a shape for.
const RUST_PART: &str = "adk_rust_part";
/// `event_metadata` key of ADK-Rust's event holding what only agentstate's event has.
pub const REFERENCE_ONLY: &str = "agentstate.reference";
/// ADK-Rust's `LlmAgent` copies the model's request (`llm_request`) into `event_metadata`
/// under this key too. The copy is stored once, as this list of the keys that held it (in the
/// kept fields beside `event`), and put back on reading.
const REQUEST_COPY: &str = "gcp.vertex.agent.llm_request";
/// Where the kept fields list the `event_metadata` keys that held `llm_request` itself.
const COPIES_OF_REQUEST: &str = "copies_of_llm_request";

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
    let copies = take_request_copies(&mut rust);
    rust.retain(|_, v| !v.is_null() && *v != Value::Object(Map::new()));
    rust_actions.retain(|_, v| !v.is_null());
    let mut only = Map::new();
    if !copies.is_empty() {
        only.insert(COPIES_OF_REQUEST.into(), Value::Array(copies));
    }
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
    from_agentstate_owned(event.clone())
}

/// agentstate's event as ADK-Rust's, taking it: what an ADK-Rust event kept (its model request,
/// most of all) moves into the result instead of being copied.
///
/// # Errors
/// As [`from_agentstate`].
pub fn from_agentstate_owned(event: Event) -> serde_json::Result<RustEvent> {
    // Written from an ADK-Rust event: it converts back exactly, nothing to keep.
    let from_rust = |meta: &Value| meta.get(RUST_ONLY).is_some();
    if event.extra.get("custom_metadata").is_some_and(from_rust) {
        return rust_fields(event);
    }
    let whole = serde_json::to_value(&event)?;
    let mut rust = rust_fields(event)?;
    // What this conversion cannot say, so that converting back gives `event` again.
    let back = to_agentstate(&rust)?;
    let stash = stash_between(&whole, &serde_json::to_value(&back)?);
    if !stash.is_empty() {
        rust.provider_metadata.insert(REFERENCE_ONLY.into(), Value::Object(stash).to_string());
    }
    Ok(rust)
}

/// The fields of ADK-Rust's event `event` has, and what an earlier conversion kept of ADK-Rust's.
fn rust_fields(mut event: Event) -> serde_json::Result<RustEvent> {
    let time = event.time();
    let kept = match event.extra.get_mut("custom_metadata") {
        Some(Value::Object(meta)) => meta.shift_remove(RUST_ONLY),
        _ => None,
    };
    // What this version of ADK-Rust keeps: its event built from the fields, no tree between.
    let kept = match kept {
        Some(Value::Object(kept)) if owned::reads(&kept) => return owned::rust_event(event, time, kept),
        kept => kept,
    };
    // Anything else through a tree of both: the fields agentstate does not model are moved
    // into it, not written out and read again (the map is what `to_value(&event)` gives).
    let extra = std::mem::take(&mut event.extra);
    let Value::Object(mut reference) = serde_json::to_value(&event)? else {
        return Err(serde::de::Error::custom("an event is not a JSON object"));
    };
    reference.extend(extra);
    let (mut out, mut actions_out) = match kept {
        Some(Value::Object(mut kept)) => {
            let mut out = object(kept.remove("event"));
            put_request_copies(&mut out, kept.remove(COPIES_OF_REQUEST));
            (out, object(kept.remove("actions")))
        }
        _ => (Map::new(), Map::new()),
    };
    for field in ["id", "invocation_id", "author", "error_code", "error_message"] {
        if let Some(value) = reference.remove(field) {
            out.insert(field.into(), value);
        }
    }
    out.insert("timestamp".into(), Value::String(rfc3339(time)));
    out.insert("branch".into(), reference.remove("branch").unwrap_or_else(|| Value::String(String::new())));
    if let Some(Value::Object(content)) = reference.remove("content") {
        out.insert("content".into(), content_to_rust(content));
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

/// Content in the reference's shape as ADK-Rust's content has it: its parts converted (see
/// [`part_to_rust`]), a role and a list of parts always there.
fn content_to_rust(mut content: Map<String, Value>) -> Value {
    if let Some(Value::Array(parts)) = content.get_mut("parts") {
        for part in parts.iter_mut() {
            *part = part_to_rust(std::mem::take(part));
        }
    }
    content.entry("role").or_insert_with(|| Value::String(String::new()));
    content.entry("parts").or_insert_with(|| Value::Array(Vec::new()));
    Value::Object(content)
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

/// Takes out of ADK-Rust's `event_metadata` the copies of `llm_request` (the same text), and
/// names their keys.
fn take_request_copies(rust: &mut Map<String, Value>) -> Vec<Value> {
    let Some(Value::String(request)) = rust.get("llm_request") else { return Vec::new() };
    let Some(Value::Object(meta)) = rust.get("event_metadata") else { return Vec::new() };
    if meta.get(REQUEST_COPY).and_then(Value::as_str) != Some(request.as_str()) {
        return Vec::new();
    }
    if let Some(Value::Object(meta)) = rust.get_mut("event_metadata") {
        meta.shift_remove(REQUEST_COPY);
    }
    vec![Value::String(REQUEST_COPY.into())]
}

/// Puts back into ADK-Rust's `event_metadata` the copies of `llm_request` that
/// [`take_request_copies`] took out.
fn put_request_copies(rust: &mut Map<String, Value>, copies: Option<Value>) {
    let Some(Value::Array(keys)) = copies else { return };
    let Some(request) = rust.get("llm_request").cloned() else { return };
    let meta = rust.entry("event_metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        for key in keys.iter().filter_map(Value::as_str) {
            meta.insert(key.into(), request.clone());
        }
    }
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
mod tests;
