//! Which events a summary replaces and what a request shows of a compacted history, as ADK for
//! Python 2.13 decides them (`apps/compaction.py`, `flows/llm_flows/context/_compaction.py`).
//! Pure functions over a session's events, oldest first.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agentstate::compaction::{COMPACTION_KEY, Coverage, Range, surviving};
use agentstate::{Content, Event, Value};

/// The synthetic calls ADK makes to its client (credentials, confirmations, input): a
/// long-running one of an older invocation is not waited for.
const CLIENT_CALLS: [&str; 3] = ["adk_request_credential", "adk_request_confirmation", "adk_request_input"];
/// The call whose events carry a user's credential (never summarised).
const CREDENTIAL_CALL: &str = "adk_request_credential";

/// Whether `event` is a compaction (any `actions.compaction`).
pub(crate) fn is_compaction(event: &Event) -> bool {
    event.actions.extra.get(COMPACTION_KEY).is_some_and(|v| !v.is_null())
}

/// The summary a compaction carries (`compacted_content`), if it is one ADK uses.
pub(crate) fn summary_of(event: &Event) -> Option<Content> {
    Range::of(event)?;
    let compaction = event.actions.extra.get(COMPACTION_KEY)?;
    let content = compaction.get("compacted_content").or_else(|| compaction.get("compactedContent"))?;
    serde_json::from_value(content.clone()).ok()
}

/// The event's `isolation_scope` (a task agent's), if any.
pub(crate) fn scope_of(event: &Event) -> Option<&str> {
    event.extra.get("isolation_scope").or_else(|| event.extra.get("isolationScope")).and_then(Value::as_str)
}

fn parts(event: &Event) -> &[agentstate::Part] {
    event.content.as_ref().map(Content::parts).unwrap_or_default()
}

fn call_ids(event: &Event) -> impl Iterator<Item = &str> {
    parts(event).iter().filter_map(|p| p.function_call.as_ref()?.id.as_deref()).filter(|id| !id.is_empty())
}

fn response_ids(event: &Event) -> impl Iterator<Item = &str> {
    parts(event).iter().filter_map(|p| p.function_response.as_ref()?.id.as_deref()).filter(|id| !id.is_empty())
}

/// The call ids an event asks the client about (tool confirmations, credentials).
fn requested_ids(event: &Event) -> Vec<&str> {
    let extra = &event.actions.extra;
    let asked = [
        ("requested_tool_confirmations", "requestedToolConfirmations"),
        ("requested_auth_configs", "requestedAuthConfigs"),
    ];
    asked
        .into_iter()
        .filter_map(|(snake, camel)| extra.get(snake).or_else(|| extra.get(camel)).and_then(Value::as_object))
        .flat_map(|asked| asked.keys().map(String::as_str))
        .collect()
}

/// Whether the event carries a user's credential (a call or response of `adk_request_credential`).
pub(crate) fn is_credential_event(event: &Event) -> bool {
    parts(event).iter().any(|p| {
        p.function_call.as_ref().and_then(|c| c.name.as_deref()) == Some(CREDENTIAL_CALL)
            || p.function_response.as_ref().and_then(|r| r.name.as_deref()) == Some(CREDENTIAL_CALL)
    })
}

/// The summaries ADK uses, with their positions, in event order (no other contains them).
fn surviving_ranges(events: &[Arc<Event>]) -> Vec<(usize, Range)> {
    surviving(events.iter().enumerate().filter_map(|(i, e)| Range::of(e).map(|r| (i, r))).collect())
}

/// The newest summary ADK uses, by event order.
fn latest_summary(events: &[Arc<Event>]) -> Option<(usize, Range)> {
    surviving_ranges(events).pop()
}

/// The events a request is built from: the summaries ADK uses, each standing at its end time as
/// an event of `agent` (or `model`) carrying its summary, and every event no such summary
/// covers, in time order (`_process_compaction_events`).
pub(crate) fn apply_summaries(events: &[Arc<Event>], agent: &str) -> Vec<Arc<Event>> {
    let ranges = surviving_ranges(events);
    let coverage = Coverage::of(ranges.iter().map(|&(_, r)| r));
    let mut items: Vec<(f64, usize, Arc<Event>)> = Vec::new();
    for &(i, range) in &ranges {
        let source = &events[i];
        let Some(content) = summary_of(source) else { continue };
        let mut summary =
            Event::new(source.invocation_id.clone()).author(if agent.is_empty() { "model" } else { agent });
        summary.timestamp = range.end;
        summary.content = Some(content);
        summary.branch.clone_from(&source.branch);
        summary.actions = source.actions.clone();
        if let Some(scope) = source.extra.get("isolation_scope") {
            summary.extra.insert("isolation_scope".into(), scope.clone());
        }
        items.push((range.end, i, Arc::new(summary)));
    }
    for (i, event) in events.iter().enumerate() {
        if !is_compaction(event) && !coverage.covers(event.timestamp) {
            items.push((event.timestamp, i, Arc::clone(event)));
        }
    }
    items.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    items.into_iter().map(|(_, _, event)| event).collect()
}

/// `shown` with the call events a summary took away put back before the first shown response
/// that answers them, each with its other responses the summary took too
/// (`_recover_compacted_function_calls`). A response belongs to the latest call with its id
/// before it, in `source` (the events before summaries were applied; `shown` holds the same
/// events, matched by identity).
pub(crate) fn recover_calls(shown: Vec<Arc<Event>>, source: &[Arc<Event>]) -> Vec<Arc<Event>> {
    if !shown.iter().any(|e| response_ids(e).next().is_some()) {
        return shown;
    }
    let key = |e: &Arc<Event>| Arc::as_ptr(e) as usize;
    let present: HashSet<usize> = shown.iter().map(key).collect();
    let mut latest_call: HashMap<&str, &Arc<Event>> = HashMap::new();
    let mut call_of: HashMap<(usize, &str), &Arc<Event>> = HashMap::new();
    let mut response_of: HashMap<(usize, &str), &Arc<Event>> = HashMap::new();
    let mut surviving_responses: HashSet<(usize, &str)> = HashSet::new();
    for event in source {
        for id in call_ids(event) {
            latest_call.insert(id, event);
        }
        for id in response_ids(event) {
            let Some(&call) = latest_call.get(id) else { continue };
            call_of.insert((key(event), id), call);
            let call_key = (key(call), id);
            if present.contains(&key(event)) {
                surviving_responses.insert(call_key);
            }
            if response_of.get(&call_key).is_none_or(|existing| event.timestamp >= existing.timestamp) {
                response_of.insert(call_key, event);
            }
        }
    }
    let mut out = Vec::with_capacity(shown.len());
    let (mut calls_back, mut responses_back) = (HashSet::new(), HashSet::new());
    for event in &shown {
        for id in response_ids(event) {
            let Some(&call) = call_of.get(&(key(event), id)) else { continue };
            if present.contains(&key(call)) || !calls_back.insert(key(call)) {
                continue;
            }
            out.push(Arc::clone(call));
            for sibling in call_ids(call) {
                let sibling_key = (key(call), sibling);
                if surviving_responses.contains(&sibling_key) {
                    continue;
                }
                if let Some(&response) = response_of.get(&sibling_key)
                    && responses_back.insert(key(response))
                {
                    out.push(Arc::clone(response));
                }
            }
        }
        out.push(Arc::clone(event));
    }
    if calls_back.is_empty() { shown } else { out }
}

/// The length of the longest prefix of `window` that leaves no call, confirmation or credential
/// request open (`_longest_self_contained_prefix`); with `all` (the session), calls no response
/// can ever answer do not hold it back.
pub(crate) fn self_contained_prefix(window: &[Arc<Event>], all: &[Arc<Event>]) -> usize {
    let pass = |dead: &HashSet<&str>| {
        let mut open: HashSet<&str> = HashSet::new();
        let mut safe = 0;
        for (i, event) in window.iter().enumerate() {
            for id in response_ids(event) {
                open.remove(id);
            }
            open.extend(call_ids(event).filter(|id| !dead.contains(id)));
            open.extend(requested_ids(event).into_iter().filter(|id| !dead.contains(id)));
            if open.is_empty() {
                safe = i + 1;
            }
        }
        safe
    };
    let safe = pass(&HashSet::new());
    if safe == window.len() || (safe > 0 && window[safe - 1].invocation_id != window[safe].invocation_id) {
        return safe;
    }
    let newest = all.iter().rev().find(|e| !e.invocation_id.is_empty() && !is_compaction(e)).map(|e| &e.invocation_id);
    let dead = dead_calls(window, all, newest.map(String::as_str));
    if dead.is_empty() { safe } else { safe.max(pass(&dead)) }
}

/// Calls opened in `window` that nothing can answer any more (`_provably_dead_call_ids`): not
/// a long-running call still awaited, not a request of the newest invocation, answered nowhere
/// in the session, and not of the newest invocation.
fn dead_calls<'a>(window: &'a [Arc<Event>], all: &[Arc<Event>], newest: Option<&str>) -> HashSet<&'a str> {
    let mut protected: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for event in all {
        let current = event.invocation_id.is_empty() || Some(event.invocation_id.as_str()) == newest;
        if let Some(long_running) = &event.long_running_tool_ids {
            let synthetic: HashSet<&str> = parts(event)
                .iter()
                .filter_map(|p| p.function_call.as_ref())
                .filter(|c| c.name.as_deref().is_some_and(|name| CLIENT_CALLS.contains(&name)))
                .filter_map(|c| c.id.as_deref())
                .collect();
            protected.extend(long_running.iter().map(String::as_str).filter(|id| current || !synthetic.contains(id)));
        }
        let requested = requested_ids(event);
        if current {
            protected.extend(requested.iter().copied());
        }
        answered.extend(response_ids(event).filter(|id| !requested.contains(id)));
    }
    window
        .iter()
        .filter(|e| newest.is_none_or(|newest| e.invocation_id != newest))
        .flat_map(|e| call_ids(e))
        .filter(|id| !protected.contains(id) && !answered.contains(id))
        .collect()
}

/// The events the sliding window summarises now, if its interval is reached
/// (`_run_compaction_for_sliding_window`): `events` are the session's live, unscoped events.
pub(crate) fn sliding_window(events: &[Arc<Event>], interval: usize, overlap: usize) -> Vec<Arc<Event>> {
    let last_end = events.iter().rev().find_map(|e| compaction_end(e).filter(|&end| end != 0.0)).unwrap_or(0.0);
    let mut order: Vec<&str> = Vec::new();
    let mut latest: HashMap<&str, f64> = HashMap::new();
    for event in events.iter().filter(|e| !e.invocation_id.is_empty() && !is_compaction(e)) {
        let time = latest.entry(&event.invocation_id).or_insert_with(|| {
            order.push(&event.invocation_id);
            0.0
        });
        *time = time.max(event.timestamp);
    }
    let new: Vec<&str> = order.iter().copied().filter(|id| latest[id] > last_end).collect();
    let (Some(&first_new), Some(&end)) = (new.first(), new.last()) else { return Vec::new() };
    if new.len() < interval {
        return Vec::new();
    }
    let first_index = order.iter().position(|&id| id == first_new).unwrap_or(0);
    let start = order[first_index.saturating_sub(overlap)];
    let (Some(from), Some(to)) =
        (events.iter().position(|e| e.invocation_id == start), events.iter().rposition(|e| e.invocation_id == end))
    else {
        return Vec::new();
    };
    let window: Vec<Arc<Event>> = events[from..=to].iter().filter(|e| !is_compaction(e)).cloned().collect();
    let keep = self_contained_prefix(&window, events);
    window[..keep].to_vec()
}

/// A compaction's end time, summary or not (the sliding window reads it off any compaction).
fn compaction_end(event: &Event) -> Option<f64> {
    let compaction = event.actions.extra.get(COMPACTION_KEY)?;
    compaction.get("end_timestamp").or_else(|| compaction.get("endTimestamp"))?.as_f64()
}

/// The events the token trigger summarises, once the prompt reached its threshold
/// (`_events_to_compact_for_token_threshold`): what came after the newest summary, but the
/// `retention` newest (moved earlier so no kept response loses its call), cut to its longest
/// self-contained prefix; headed by the newest summary as a model event at its start, so the new
/// summary takes its place.
pub(crate) fn token_window(events: &[Arc<Event>], retention: usize) -> Vec<Arc<Event>> {
    let latest = latest_summary(events);
    let last_end = latest.map_or(0.0, |(_, r)| r.end);
    let candidates: Vec<Arc<Event>> =
        events.iter().filter(|e| !is_compaction(e) && e.timestamp > last_end).cloned().collect();
    if candidates.len() <= retention {
        return Vec::new();
    }
    let split = if retention == 0 { candidates.len() } else { retention_split(&candidates, retention) };
    let window = &candidates[..split];
    let keep = self_contained_prefix(window, events);
    if keep == 0 {
        return Vec::new();
    }
    let mut out: Vec<Arc<Event>> = Vec::with_capacity(keep + 1);
    if let Some((i, range)) = latest
        && let Some(content) = summary_of(&events[i])
    {
        let mut seed = Event::new(Event::new_id()).author("model");
        seed.timestamp = range.start;
        seed.content = Some(content);
        seed.branch.clone_from(&events[i].branch);
        out.push(Arc::new(seed));
    }
    out.extend(window[..keep].iter().cloned());
    out
}

/// Where to split `candidates` so that the newest `retention` (or more) stay, and no response
/// among them loses its call to the summary (`_safe_token_compaction_split_index`).
fn retention_split(candidates: &[Arc<Event>], retention: usize) -> usize {
    let initial = candidates.len().saturating_sub(retention);
    if initial == 0 {
        return 0;
    }
    let mut unmatched: HashSet<&str> = HashSet::new();
    for i in (0..candidates.len()).rev() {
        unmatched.extend(response_ids(&candidates[i]));
        for id in call_ids(&candidates[i]) {
            unmatched.remove(id);
        }
        if unmatched.is_empty() && i <= initial {
            return i;
        }
    }
    0
}

/// The prompt's size in tokens as last seen (`_latest_prompt_token_count`): the newest model
/// answer's `usage_metadata.prompt_token_count` since the last compaction (of `agent`'s, when
/// named), else `estimate()`.
pub(crate) fn latest_prompt_tokens(
    events: &[Arc<Event>],
    agent: &str,
    estimate: impl FnOnce() -> Option<u64>,
) -> Option<u64> {
    for event in events.iter().rev().filter(|e| scope_of(e).is_none()) {
        if is_compaction(event) {
            break;
        }
        let usage = event.extra.get("usage_metadata").or_else(|| event.extra.get("usageMetadata"));
        let count = usage.and_then(|u| u.get("prompt_token_count").or_else(|| u.get("promptTokenCount")));
        if let Some(count) = count.and_then(Value::as_u64)
            && (agent.is_empty() || event.author == agent)
        {
            return Some(count);
        }
    }
    estimate()
}

/// Whether summarising `window` can shrink the request more than the last summary weighs
/// (`_is_range_worth_compacting`): the size of the request's contents without the window, less
/// an empty summary, against the newest summary's size. Sizes are the contents' compact JSON,
/// in characters.
pub(crate) fn worth_compacting(events: &[Arc<Event>], window: &[Arc<Event>]) -> bool {
    let times = window.iter().map(|e| e.timestamp);
    let (Some(start), Some(end)) = (times.clone().reduce(f64::min), times.reduce(f64::max)) else { return false };
    let mut empty = Event::new(Event::new_id()).author("model");
    empty.actions.extra.insert(
        COMPACTION_KEY.into(),
        serde_json::json!({"start_timestamp": start, "end_timestamp": end, "compacted_content": {"parts": [], "role": "model"}}),
    );
    let mut with_empty = events.to_vec();
    with_empty.push(Arc::new(empty));
    let removable =
        request_size(&apply_summaries(events, "")) as i64 - request_size(&apply_summaries(&with_empty, "")) as i64;
    let previous = latest_summary(events).map_or(0, |(i, _)| request_size(std::slice::from_ref(&events[i])));
    removable > previous as i64
}

/// The size of what `events` put in a request: each one's content (a compaction's summary), as
/// compact JSON, in characters (`_serialized_size`).
fn request_size(events: &[Arc<Event>]) -> usize {
    events
        .iter()
        .filter_map(|e| summary_of(e).or_else(|| e.content.clone()))
        .map(|c| serde_json::to_string(&c).map_or(0, |text| text.chars().count()))
        .sum()
}

#[cfg(test)]
mod tests;
