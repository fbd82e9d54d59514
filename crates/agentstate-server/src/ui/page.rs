//! The inspector's HTML: the page layout and the pieces the pages and their live updates share.
//! Everything shown is user or model data, and maud escapes every value it interpolates.

use agentstate::compaction::{Facts, Range, Summary};
use agentstate::history::{EventDiff, StateAt};
use agentstate::{Event, Map, Part, Value};
use maud::{DOCTYPE, Markup, html};

use crate::expiry::rfc3339;

/// A page: head, the top bar with where we are, the body.
pub(crate) fn layout(title: &str, crumbs: &[(String, Option<String>)], csrf: &str, body: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="csrf" content=(csrf);
                title { (title) " · agentstate" }
                link rel="stylesheet" href="/ui/assets/inspector.css";
                script src="/ui/assets/inspector.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/ui" { "agentstate" }
                    nav.crumbs {
                        @for (label, link) in crumbs {
                            span.sep { "/" }
                            @match link {
                                Some(href) => a href=(href) { (label) },
                                None => span.here { (label) },
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A path segment, percent-encoded.
pub(crate) fn seg(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A short preview of a state: its first keys and values, truncated.
pub(crate) fn preview(state: &Map<String, Value>) -> String {
    let mut text = String::new();
    for (k, v) in state.iter().take(4) {
        if !text.is_empty() {
            text.push_str(", ");
        }
        text.push_str(&format!("{k}: {v}"));
    }
    if state.len() > 4 {
        text.push_str(&format!(", … (+{})", state.len() - 4));
    }
    truncate(&text, 160)
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A stable colour for an invocation id: one of eight well-apart hues, picked by a hash (FNV-1a,
/// mixed, so ids that differ in one character rarely share one).
fn hue(invocation: &str) -> u32 {
    const HUES: [u32; 8] = [210, 25, 140, 280, 350, 95, 185, 50];
    let mut h = invocation.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 12;
    HUES[(h % 8) as usize]
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn part(part: &Part) -> Markup {
    html! {
        @if let Some(text) = &part.text {
            @if part.thought == Some(true) { div.thought { (text) } } @else { div.text { (text) } }
        }
        @if let Some(call) = &part.function_call {
            details.call {
                summary { "call " code { (call.name.as_deref().unwrap_or("?")) } }
                pre { (pretty(&call.args)) }
            }
        }
        @if let Some(response) = &part.function_response {
            details.response {
                summary { "response of " code { (response.name.as_deref().unwrap_or("?")) } }
                pre { (pretty(&response.response)) }
            }
        }
        @if let Some(blob) = &part.inline_data {
            div.blob { "inline data " (blob.mime_type.as_deref().unwrap_or("")) }
        }
    }
}

/// One event of the timeline; `index` is its position in the session (from 0).
/// What the timeline says of summaries (`actions.compaction`): each summary's covered events,
/// and each covered event's summary, by position (from 0) in the session's history.
#[derive(Default)]
pub(crate) struct Coverage {
    summaries: Vec<Summary>,
}

impl Coverage {
    /// The coverage of a history whose every event's facts are `facts`, in storage order.
    pub(crate) fn of(facts: &[Facts]) -> Self {
        Self { summaries: agentstate::compaction::summaries(facts) }
    }

    fn summary_at(&self, index: usize) -> Option<&Summary> {
        self.summaries.iter().find(|s| s.position == index)
    }

    /// The kept summary covering the event at `index`, the newest first.
    fn covering(&self, index: usize) -> Option<&Summary> {
        self.summaries.iter().rev().find(|s| s.kept && s.covers.is_some_and(|(a, b)| a <= index && index <= b))
    }
}

/// A summary's range: the times, and the events it covers when known.
fn summary_badge(event: &Event, summary: Option<&Summary>) -> Markup {
    let time = |secs: f64| {
        // Whole microseconds of a time ADK wrote as float seconds.
        #[allow(clippy::cast_possible_truncation)]
        let micros = (secs * 1e6).round() as i64;
        rfc3339(micros).get(11..23).unwrap_or_default().to_owned()
    };
    let range = summary.map(|s| s.range).or_else(|| Range::of(event));
    html! {
        span.badge.summary title="a summary (actions.compaction) of the events in its range" {
            "summary"
            @if let Some(range) = range { " of " (time(range.start)) "–" (time(range.end)) }
            @if let Some((a, b)) = summary.and_then(|s| s.covers) { ": #" (a + 1) "–#" (b + 1) }
            @if summary.is_some_and(|s| !s.kept) { " (inside another)" }
        }
    }
}

/// The summary text of a compaction event.
fn compacted_text(event: &Event) -> Option<String> {
    let c = event.actions.extra.get(agentstate::compaction::COMPACTION_KEY)?;
    let content = c.get("compacted_content").or_else(|| c.get("compactedContent"))?;
    let parts = content.get("parts")?.as_array()?;
    Some(parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join(""))
}

pub(crate) fn event_row(event: &Event, index: usize, selected: bool, base: &str, coverage: &Coverage) -> Markup {
    let micros = event.time().micros();
    let is_summary = event.actions.extra.get(agentstate::compaction::COMPACTION_KEY).is_some_and(|c| !c.is_null());
    let covered_by = coverage.covering(index);
    html! {
        li.event.selected[selected].covered[covered_by.is_some()] id={ "e-" (event.id) } data-id=(event.id) data-cursor={ (micros) ":" (event.id) }
            style={ "--inv: " (hue(&event.invocation_id)) }
        {
            a.select href={ (base) "?at=" (seg(&event.id)) } {
                span.n { "#" (index + 1) }
                span.author { (event.author) }
                time datetime=(rfc3339(micros)) { (rfc3339(micros).get(11..23).unwrap_or_default()) }
                span.inv title={ "invocation " (event.invocation_id) } { (truncate(&event.invocation_id, 12)) }
                @if event.partial == Some(true) { span.badge { "partial" } }
                @if event.long_running_tool_ids.as_ref().is_some_and(|ids| !ids.is_empty()) { span.badge { "long-running" } }
                @if let Some(agent) = &event.actions.transfer_to_agent { span.badge.transfer { "→ " (agent) } }
                @if event.actions.escalate == Some(true) { span.badge.escalate { "escalate" } }
                @if let Some(after) = &event.rewind_after_event_id { span.badge.rewind { "rewind to " (truncate(after, 12)) } }
                @else if let Some(before) = &event.actions.rewind_before_invocation_id { span.badge.rewind { "rewind before " (before) } }
                @if !event.actions.state_delta.is_empty() { span.badge.delta { (event.actions.state_delta.len()) " keys" } }
                @if is_summary { (summary_badge(event, coverage.summary_at(index))) }
                @if let Some(summary) = covered_by {
                    span.badge.covered title="a summary stands for this event in the model's request" { "covered by #" (summary.position + 1) }
                }
            }
            div.body {
                @if let Some(text) = compacted_text(event) { div.text.summary-text { (text) } }
                @if let Some(parts) = event.content.as_ref().and_then(|c| c.parts.as_ref()) {
                    @for p in parts { (part(p)) }
                }
                @if let Some(message) = &event.error_message { div.error { (event.error_code.as_deref().unwrap_or("error")) ": " (message) } }
            }
        }
    }
}

/// The state panel: the state as of an event, its changes highlighted, shared keys marked.
pub(crate) fn state_panel(at: &StateAt, diff: Option<&EventDiff>, actions: &Markup) -> Markup {
    let changed = |key: &str| diff.and_then(|d| d.changes.iter().find(|c| c.key == key));
    let deleted: Vec<_> = diff.map(|d| d.changes.iter().filter(|c| c.after.is_none()).collect()).unwrap_or_default();
    html! {
        section.state id="state" data-at=(at.event_id.as_deref().unwrap_or("")) {
            h2 {
                "State "
                @match &at.event_id {
                    Some(id) => { "after " code { (truncate(id, 16)) } },
                    None => "at creation",
                }
            }
            @if at.state.is_empty() && deleted.is_empty() { p.empty { "(empty)" } }
            table {
                @for (key, value) in &at.state {
                    @let change = changed(key);
                    tr.key.set[change.is_some_and(|c| c.before.is_none())].changed[change.is_some_and(|c| c.before.is_some())] {
                        th {
                            (key)
                            @if key.starts_with("user:") || key.starts_with("app:") { span.shared title="shared with other sessions" { "shared" } }
                        }
                        td {
                            pre { (pretty(value)) }
                            @if let Some(before) = change.and_then(|c| c.before.as_ref()) { div.was { "was " code { (truncate(&before.to_string(), 200)) } } }
                        }
                    }
                }
                @for change in &deleted {
                    tr.key.deleted {
                        th { (change.key) }
                        td { "deleted; was " code { (truncate(&change.before.as_ref().map(Value::to_string).unwrap_or_default(), 200)) } }
                    }
                }
            }
            (actions)
        }
    }
}

/// An error box.
pub(crate) fn problem(message: &str) -> Markup {
    html! { p.problem { (message) } }
}

/// The stylesheet and the script, served by the binary (no assets from elsewhere).
pub(crate) const CSS: &str = include_str!("inspector.css");
pub(crate) const JS: &str = include_str!("inspector.js");
