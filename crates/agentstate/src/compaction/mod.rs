//! Compaction, as ADK for Python 2.13 writes it, and the compacted view of a session.
//!
//! An app with `App(events_compaction_config=EventsCompactionConfig(...))` appends, now and then,
//! an event whose `actions.compaction = {start_timestamp, end_timestamp, compacted_content}`
//! summarises every event whose time lies in that range (epoch seconds, both ends included). ADK
//! keeps loading the whole history and drops what a summary covers when it builds the model's
//! request. The **compacted view** ([`view`]) answers only the events ADK reads from a loaded
//! session, so a long conversation loads in time that grows with what the model is shown:
//!
//! - the summaries ADK keeps (those no other range contains) and the last compaction event;
//! - every event no kept summary covers;
//! - everything from the start of the next summary's window: the invocations with an event
//!   after the last summary's end, from `overlap` invocations earlier (the app's
//!   `overlap_size`), and every event after the newest summary's end;
//! - covered events that started a long-running call no user has answered yet (a resumed call
//!   is looked up in the loaded session), and covered calls whose responses are shown, with
//!   their sibling responses (ADK re-injects them);
//! - the rewind events that take effect and the first event of each invocation they rewind,
//!   the summaries' coverage computed over the events that survive rewinds;
//! - every event that saved artifacts (a rewind replays their versions);
//! - the first event of every invocation the view shows, so invocations keep their order.
//!
//! Measured with ADK for Python 2.13's `Runner` on a scripted model, both triggers (an interval
//! with an overlap, a token threshold): the model is sent the same requests over the view as over
//! the whole history.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::history::{RewindFacts, Rewound, rewound};
use crate::store::StoredEvent;

/// Where a compaction lives: `actions.compaction`.
pub const COMPACTION_KEY: &str = "compaction";

/// The overlap ADK's interval trigger is most often configured with, and the view's default.
pub const DEFAULT_OVERLAP: usize = 1;

/// Which of a session's events a read answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventView {
    /// Every event.
    #[default]
    Whole,
    /// Only what ADK reads from a loaded session of an app that compacts its history with this
    /// overlap (see the [module docs](self)).
    Compacted {
        /// The app's `overlap_size`: how many invocations before the first new one the next
        /// summary starts at.
        overlap: usize,
    },
}

/// The time range a compaction event summarises, epoch seconds, both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The first covered time.
    pub start: f64,
    /// The last covered time.
    pub end: f64,
}

impl Range {
    /// The range `event` summarises, when it is a compaction ADK uses (numbers for both ends,
    /// and a content).
    pub fn of(event: &Event) -> Option<Range> {
        event.actions.extra.get(COMPACTION_KEY).filter(|v| !v.is_null()).and_then(range_of)
    }

    /// Whether `time` lies in the range.
    pub fn covers(&self, time: f64) -> bool {
        self.start <= time && time <= self.end
    }
}

/// Checks an event's `actions.compaction`, if it has one: an object whose `start_timestamp` and
/// `end_timestamp` are numbers, the start not after the end, with a `compacted_content` object,
/// as ADK for Python's `EventCompaction` requires (camelCase names accepted).
pub fn validate(event: &Event) -> Result<()> {
    let Some(compaction) = event.actions.extra.get(COMPACTION_KEY).filter(|v| !v.is_null()) else { return Ok(()) };
    let field = "event.actions.compaction";
    let Value::Object(fields) = compaction else { return Err(Error::invalid(field, "must be an object")) };
    let get = |snake: &str, camel: &str| fields.get(snake).or_else(|| fields.get(camel)).filter(|v| !v.is_null());
    let time = |snake: &str, camel: &str| match get(snake, camel) {
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| Error::invalid(field, format!("{snake} is not a number"))),
        Some(other) => Err(Error::invalid(field, format!("{snake} must be a number of epoch seconds, not {other}"))),
        None => Err(Error::invalid(field, format!("{snake} is missing"))),
    };
    let (start, end) = (time("start_timestamp", "startTimestamp")?, time("end_timestamp", "endTimestamp")?);
    if start > end {
        return Err(Error::invalid(
            field,
            format!("its range is inverted: start_timestamp {start} is after end_timestamp {end}"),
        ));
    }
    match get("compacted_content", "compactedContent") {
        Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(Error::invalid(field, "compacted_content must be a content object")),
        None => Err(Error::invalid(field, "compacted_content is missing")),
    }
}

/// What the view needs to know of one event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The event id.
    pub id: String,
    /// Its invocation.
    pub invocation_id: String,
    /// Its time as ADK reads it, epoch seconds.
    pub timestamp: f64,
    /// Whether the user wrote it.
    pub by_user: bool,
    /// Whether it belongs to an isolated task's scope (`isolation_scope`).
    pub scoped: bool,
    /// The microsecond it is stored at.
    pub micros: i64,
    /// `None`: not a compaction; `Some(None)`: a compaction ADK does not use (no range or no
    /// content); `Some(Some(range))`: a summary of `range`.
    pub compaction: Option<Option<Range>>,
    /// ADK for TypeScript's summary (`isCompacted: true`, stored `is_compacted`): the `endTime`
    /// (epoch milliseconds) up to which the newest one stands for every event.
    pub rolling_end_ms: Option<f64>,
    /// `actions.rewind_before_invocation_id`.
    pub rewind_before_invocation: Option<String>,
    /// `rewind_after_event_id`.
    pub rewind_after_event: Option<String>,
    /// Ids of the function calls it makes.
    pub calls: Vec<String>,
    /// Ids of the function responses it carries.
    pub responses: Vec<String>,
    /// Ids of the long-running calls it started.
    pub long_running: Vec<String>,
    /// Whether it saved artifacts (`actions.artifact_delta`).
    pub artifacts: bool,
}

impl Facts {
    /// The facts of a decoded event.
    pub fn of(event: &Event) -> Self {
        let parts = event.content.as_ref().map(|c| c.parts()).unwrap_or_default();
        let ids = |id: Option<&Option<String>>| id.and_then(|id| id.clone()).filter(|id| !id.is_empty());
        Self {
            id: event.id.clone(),
            invocation_id: event.invocation_id.clone(),
            timestamp: event.timestamp,
            micros: event.time().micros(),
            by_user: event.author == "user",
            scoped: event.extra.get("isolation_scope").is_some_and(|v| !v.is_null()),
            compaction: event.actions.extra.get(COMPACTION_KEY).filter(|v| !v.is_null()).map(range_of),
            rolling_end_ms: rolling_end(
                event.extra.get("is_compacted").or_else(|| event.extra.get("isCompacted")),
                event.extra.get("end_time").or_else(|| event.extra.get("endTime")),
            ),
            rewind_before_invocation: event.actions.rewind_before_invocation_id.clone().filter(|x| !x.is_empty()),
            rewind_after_event: event.rewind_after_event_id.clone(),
            calls: parts.iter().filter_map(|p| ids(p.function_call.as_ref().map(|c| &c.id))).collect(),
            responses: parts.iter().filter_map(|p| ids(p.function_response.as_ref().map(|r| &r.id))).collect(),
            long_running: event.long_running_tool_ids.clone().unwrap_or_default(),
            artifacts: !event.actions.artifact_delta.is_empty(),
        }
    }

    /// The facts of a stored event: those a store kept beside it ([`to_text`](Self::to_text)),
    /// or, where it kept none (or none it can read), read from its text (`data`).
    pub fn kept_or_stored(
        id: String,
        invocation_id: String,
        micros: i64,
        kept: Option<&str>,
        data: Option<String>,
    ) -> Self {
        match kept.and_then(|kept| Self::from_text(id.clone(), invocation_id.clone(), micros, kept)) {
            Some(facts) => facts,
            None => Self::of_stored(&StoredEvent { id, invocation_id, timestamp_micros: micros, data }),
        }
    }

    /// The facts of a stored event, read from its text without building the event.
    pub fn of_stored(stored: &StoredEvent) -> Self {
        let light =
            stored.data.as_deref().and_then(|text| serde_json::from_str::<Light>(text).ok()).unwrap_or_default();
        let mut calls = Vec::new();
        let mut responses = Vec::new();
        for part in light.content.map(|c| c.parts).unwrap_or_default() {
            calls.extend(part.function_call.and_then(|c| c.id).filter(|id| !id.is_empty()));
            responses.extend(part.function_response.and_then(|r| r.id).filter(|id| !id.is_empty()));
        }
        Self {
            id: stored.id.clone(),
            invocation_id: stored.invocation_id.clone(),
            // Lossy above 2^53 µs (year 2255), as every float timestamp is.
            #[allow(clippy::cast_precision_loss)]
            timestamp: light.timestamp.unwrap_or(stored.timestamp_micros as f64 / 1e6),
            micros: stored.timestamp_micros,
            by_user: light.author.as_deref() == Some("user"),
            scoped: light.isolation_scope.is_some_and(|v| !v.is_null()),
            compaction: light.actions.compaction.filter(|v| !v.is_null()).map(|v| range_of(&v)),
            rolling_end_ms: rolling_end(light.is_compacted.as_ref(), light.end_time.as_ref()),
            rewind_before_invocation: light.actions.rewind_before_invocation_id.filter(|x| !x.is_empty()),
            rewind_after_event: light.rewind_after_event_id,
            calls,
            responses,
            long_running: light.long_running_tool_ids.unwrap_or_default(),
            artifacts: light.actions.artifact_delta.is_some_and(|delta| !delta.is_empty()),
        }
    }

    /// The facts a store keeps beside an event's text, so the view reads no text: compact JSON
    /// of all but the id, invocation and stored microsecond (which the store keeps anyway).
    pub fn to_text(&self) -> String {
        let kept = Kept {
            timestamp: self.timestamp,
            by_user: self.by_user,
            scoped: self.scoped,
            compaction: self.compaction.map(|range| range.map(|r| vec![r.start, r.end]).unwrap_or_default()),
            rolling_end_ms: self.rolling_end_ms,
            rewind_before_invocation: self.rewind_before_invocation.clone(),
            rewind_after_event: self.rewind_after_event.clone(),
            calls: self.calls.clone(),
            responses: self.responses.clone(),
            long_running: self.long_running.clone(),
            artifacts: self.artifacts,
        };
        serde_json::to_string(&kept).unwrap_or_default()
    }

    /// The facts of an event from what a store kept ([`to_text`](Self::to_text)) and its
    /// columns; `None` for text that is not such facts.
    pub fn from_text(id: String, invocation_id: String, micros: i64, text: &str) -> Option<Self> {
        let kept: Kept = serde_json::from_str(text).ok()?;
        let range = |bounds: Vec<f64>| match bounds[..] {
            [start, end] => Some(Range { start, end }),
            _ => None,
        };
        Some(Self {
            id,
            invocation_id,
            timestamp: kept.timestamp,
            by_user: kept.by_user,
            scoped: kept.scoped,
            micros,
            compaction: kept.compaction.map(range),
            rolling_end_ms: kept.rolling_end_ms,
            rewind_before_invocation: kept.rewind_before_invocation,
            rewind_after_event: kept.rewind_after_event,
            calls: kept.calls,
            responses: kept.responses,
            long_running: kept.long_running,
            artifacts: kept.artifacts,
        })
    }

    fn is_compaction(&self) -> bool {
        self.compaction.is_some() || self.rolling_end_ms.is_some()
    }

    /// Its time as ADK for TypeScript reads it: the stored microsecond, in milliseconds.
    #[allow(clippy::cast_precision_loss)] // exact below 2^53 µs (year 2255)
    fn millis(&self) -> f64 {
        self.micros as f64 / 1000.0
    }

    fn range(&self) -> Option<Range> {
        self.compaction.flatten()
    }
}

/// The end of ADK for TypeScript's summary: `isCompacted: true` and a numeric `endTime`.
fn rolling_end(is_compacted: Option<&Value>, end_time: Option<&Value>) -> Option<f64> {
    (is_compacted == Some(&Value::Bool(true))).then(|| end_time.and_then(Value::as_f64)).flatten()
}

/// The range of a compaction ADK uses: numbers for both ends and a content.
fn range_of(compaction: &Value) -> Option<Range> {
    let get =
        |snake: &str, camel: &str| compaction.get(snake).or_else(|| compaction.get(camel)).filter(|v| !v.is_null());
    get("compacted_content", "compactedContent")?;
    let start = get("start_timestamp", "startTimestamp")?.as_f64()?;
    let end = get("end_timestamp", "endTimestamp")?.as_f64()?;
    Some(Range { start, end })
}

/// An event's facts as a store keeps them: its id, invocation, stored microsecond and the rest as
/// [`Facts::to_text`] wrote it.
pub type KeptFacts = (String, String, i64, String);

/// The facts of a session's events, oldest first (by stored microsecond, then id, as events are
/// read), from what a store kept of them, if it kept them for every one of its `events` events;
/// `None` when some are missing or unreadable, or none were kept (the store then reads the text
/// of the events without them).
pub fn from_kept(kept: Vec<KeptFacts>, events: usize) -> Option<Vec<Facts>> {
    if kept.is_empty() || kept.len() != events {
        return None;
    }
    let mut facts: Vec<Facts> = kept
        .into_iter()
        .map(|(id, invocation_id, micros, text)| Facts::from_text(id, invocation_id, micros, &text))
        .collect::<Option<_>>()?;
    facts.sort_by(|a, b| a.micros.cmp(&b.micros).then_with(|| a.id.cmp(&b.id)));
    Some(facts)
}

/// [`Facts`] as a store keeps them, short names, empty fields left out (`c`: a compaction's
/// bounds, empty for one ADK does not use).
#[derive(Serialize, Deserialize)]
struct Kept {
    #[serde(rename = "t")]
    timestamp: f64,
    #[serde(rename = "u", default, skip_serializing_if = "is_false")]
    by_user: bool,
    #[serde(rename = "s", default, skip_serializing_if = "is_false")]
    scoped: bool,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    compaction: Option<Vec<f64>>,
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    rolling_end_ms: Option<f64>,
    #[serde(rename = "rb", default, skip_serializing_if = "Option::is_none")]
    rewind_before_invocation: Option<String>,
    #[serde(rename = "ra", default, skip_serializing_if = "Option::is_none")]
    rewind_after_event: Option<String>,
    #[serde(rename = "fc", default, skip_serializing_if = "Vec::is_empty")]
    calls: Vec<String>,
    #[serde(rename = "fr", default, skip_serializing_if = "Vec::is_empty")]
    responses: Vec<String>,
    #[serde(rename = "lr", default, skip_serializing_if = "Vec::is_empty")]
    long_running: Vec<String>,
    #[serde(rename = "a", default, skip_serializing_if = "is_false")]
    artifacts: bool,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(value: &bool) -> bool {
    !*value
}

/// An event's text as far as the view reads it; every other field is skipped unparsed.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Light {
    author: Option<String>,
    timestamp: Option<f64>,
    #[serde(alias = "isolationScope")]
    isolation_scope: Option<Value>,
    #[serde(alias = "rewindAfterEventId")]
    rewind_after_event_id: Option<String>,
    #[serde(alias = "longRunningToolIds")]
    long_running_tool_ids: Option<Vec<String>>,
    actions: LightActions,
    content: Option<LightContent>,
    #[serde(alias = "isCompacted")]
    is_compacted: Option<Value>,
    #[serde(alias = "endTime")]
    end_time: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct LightActions {
    compaction: Option<Value>,
    #[serde(alias = "artifactDelta")]
    artifact_delta: Option<serde_json::Map<String, Value>>,
    #[serde(alias = "rewindBeforeInvocationId")]
    rewind_before_invocation_id: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct LightContent {
    parts: Vec<LightPart>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct LightPart {
    #[serde(alias = "functionCall")]
    function_call: Option<LightId>,
    #[serde(alias = "functionResponse")]
    function_response: Option<LightId>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct LightId {
    id: Option<String>,
}

impl RewindFacts for Facts {
    fn id(&self) -> &str {
        &self.id
    }
    fn invocation_id(&self) -> &str {
        &self.invocation_id
    }
    fn rewind_after_event(&self) -> Option<&str> {
        self.rewind_after_event.as_deref()
    }
    fn rewind_before_invocation(&self) -> Option<&str> {
        self.rewind_before_invocation.as_deref()
    }
}

/// The summaries ADK keeps, of the `live` positions, in storage order (see [`surviving`]).
fn kept_summaries(events: &[Facts], live: &[usize]) -> Vec<(usize, Range)> {
    surviving(live.iter().filter_map(|&i| events[i].range().map(|r| (i, r))).collect())
}

/// Of the summaries `ranges` (each with its position), those ADK keeps, in position order:
/// sorted by start, then the widest and newest first, a range is kept when it reaches past every
/// range before it (ADK's `_get_compaction_ranges`).
pub fn surviving(mut ranges: Vec<(usize, Range)>) -> Vec<(usize, Range)> {
    ranges.sort_by(|(i, a), (j, b)| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)).then(j.cmp(i)));
    let mut kept: Vec<(usize, Range)> = Vec::new();
    for (i, range) in ranges {
        if kept.last().is_none_or(|(_, widest)| range.end > widest.end) {
            kept.push((i, range));
        }
    }
    kept.sort_by_key(|&(i, _)| i);
    kept
}

/// The times some of a set of ranges cover: their union, as sorted disjoint ranges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage(Vec<Range>);

impl Coverage {
    /// The union of `ranges` (inverted ones cover nothing).
    pub fn of(ranges: impl IntoIterator<Item = Range>) -> Self {
        let mut by_start: Vec<Range> = ranges.into_iter().filter(|r| r.start <= r.end).collect();
        by_start.sort_by(|a, b| a.start.total_cmp(&b.start));
        let mut union: Vec<Range> = Vec::new();
        for range in by_start {
            match union.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => union.push(range),
            }
        }
        Self(union)
    }

    /// Whether some range covers `time`.
    pub fn covers(&self, time: f64) -> bool {
        let after = self.0.partition_point(|r| r.start <= time);
        after > 0 && self.0[after - 1].covers(time)
    }
}

/// A summary in a session's history: where it is, what it covers, whether ADK shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Its position in storage order.
    pub position: usize,
    /// The times it summarises.
    pub range: Range,
    /// Whether ADK shows it (no other summary contains it, and no rewind took it back).
    pub kept: bool,
    /// The first and last positions of the events it covers (storage order is time order, so
    /// they are every event between, summaries aside); `None` when it covers none.
    pub covers: Option<(usize, usize)>,
}

/// Every summary of a session (`events` its facts, in storage order), in storage order.
pub fn summaries(events: &[Facts]) -> Vec<Summary> {
    let live = rewound::<Facts, _>(events).live;
    let kept: HashSet<usize> = kept_summaries(events, &live).into_iter().map(|(i, _)| i).collect();
    let plain: Vec<usize> = live.iter().copied().filter(|&i| !events[i].is_compaction()).collect();
    let mut out = Vec::new();
    for &i in &live {
        let Some(range) = events[i].range() else { continue };
        let from = plain.partition_point(|&p| events[p].timestamp < range.start);
        let to = plain.partition_point(|&p| events[p].timestamp <= range.end);
        let covers = (from < to).then(|| (plain[from], plain[to - 1]));
        out.push(Summary { position: i, range, kept: kept.contains(&i), covers });
    }
    out
}

/// The positions (storage order) of `events` the compacted view with this `overlap` keeps,
/// ascending (see the [module docs](self)).
pub fn view(events: &[Facts], overlap: usize) -> Vec<usize> {
    let Rewound { live, anchors } = rewound::<Facts, _>(events);
    let mut keep = vec![false; events.len()];
    for &i in &anchors {
        keep[i] = true;
    }

    let kept_ranges = kept_summaries(events, &live);
    let coverage = Coverage::of(kept_ranges.iter().map(|&(_, r)| r));
    // ADK for TypeScript's form: the newest such summary stands for everything up to its end.
    let rolling_cut = live.iter().rev().find_map(|&i| events[i].rolling_end_ms);
    let covered = |e: &Facts| coverage.covers(e.timestamp) || rolling_cut.is_some_and(|cut| e.millis() <= cut);
    for &(i, _) in &kept_ranges {
        keep[i] = true;
    }
    // The newest summary by storage order (the token trigger starts after its end).
    let newest_kept_end = kept_ranges.last().map(|(_, r)| r.end);

    // The last compaction event (the interval trigger takes the last end from it, the token
    // trigger stops its search for a count there), and the last unscoped one with an end.
    let compactions = || live.iter().rev().copied().filter(|&i| events[i].is_compaction());
    if let Some(last) = compactions().next() {
        keep[last] = true;
    }
    // (A TypeScript summary's end, in seconds, stands in: the window then starts after it.)
    let end_of = |e: &Facts| e.range().map(|r| r.end).or(e.rolling_end_ms.map(|ms| ms / 1000.0)).filter(|&t| t != 0.0);
    let last_end = compactions().find(|&i| !events[i].scoped && end_of(&events[i]).is_some());
    let last_end = last_end.map_or(0.0, |i| {
        keep[i] = true;
        end_of(&events[i]).unwrap_or(0.0)
    });

    // Every event no kept summary covers, and every event after the newest summary's end.
    for &i in &live {
        let e = &events[i];
        if !e.is_compaction() && (!covered(e) || newest_kept_end.is_some_and(|end| e.timestamp > end)) {
            keep[i] = true;
        }
    }

    // The next window: invocations in order of their first (unscoped, not compaction) event,
    // those with an event after the last end are new; it starts `overlap` invocations before
    // the first new one (or before the next invocation, when none is new yet).
    let mut first_of: HashMap<&str, usize> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut latest: HashMap<&str, f64> = HashMap::new();
    for &i in &live {
        let e = &events[i];
        if e.scoped || e.is_compaction() || e.invocation_id.is_empty() {
            continue;
        }
        first_of.entry(&e.invocation_id).or_insert_with(|| {
            order.push(&e.invocation_id);
            i
        });
        let time = latest.entry(&e.invocation_id).or_insert(e.timestamp);
        *time = time.max(e.timestamp);
    }
    let first_new = order.iter().position(|id| latest[id] > last_end).unwrap_or(order.len());
    if let Some(start) = order.get(first_new.saturating_sub(overlap)) {
        let from = first_of[start];
        for &i in live.iter().filter(|&&i| i >= from && !events[i].is_compaction()) {
            keep[i] = true;
        }
    }

    // Long-running calls no user has answered: a resume looks its call up in the session.
    let answered: HashSet<&str> =
        events.iter().filter(|e| e.by_user).flat_map(|e| e.responses.iter().map(String::as_str)).collect();
    for &i in &live {
        if events[i].long_running.iter().any(|id| !answered.contains(id.as_str())) {
            keep[i] = true;
        }
    }

    // Calls whose responses are shown, with their sibling responses: ADK re-injects them from
    // the loaded session (`_recover_compacted_function_calls`). A response belongs to the latest
    // call with its id before it; a call's response is its latest.
    let mut latest_call: HashMap<&str, usize> = HashMap::new();
    let mut call_of: Vec<(usize, usize)> = Vec::new();
    let mut response_to: HashMap<(usize, &str), usize> = HashMap::new();
    for &i in &live {
        for id in &events[i].calls {
            latest_call.insert(id, i);
        }
        for id in &events[i].responses {
            if let Some(&call) = latest_call.get(id.as_str()) {
                call_of.push((i, call));
                response_to.insert((call, id), i);
            }
        }
    }
    let shown: Vec<bool> = keep.clone();
    for (response, call) in call_of {
        let uncovered = !events[response].is_compaction() && !covered(&events[response]);
        if shown[response] && uncovered && !keep[call] {
            keep[call] = true;
            for id in &events[call].calls {
                if let Some(&sibling) = response_to.get(&(call, id.as_str())) {
                    keep[sibling] = true;
                }
            }
        }
    }

    // Events that saved artifacts: a rewind replays every artifact delta before its target in
    // the loaded session to find the versions to restore (ADK's
    // `compute_artifact_delta_for_rewind`, over rewound events too); the request leaves covered
    // ones out.
    for (i, e) in events.iter().enumerate() {
        if e.artifacts {
            keep[i] = true;
        }
    }

    // The first event of every invocation shown, so the invocations keep their order.
    let firsts: Vec<usize> = (0..events.len())
        .filter(|&i| keep[i] && !events[i].is_compaction())
        .filter_map(|i| first_of.get(events[i].invocation_id.as_str()).copied())
        .collect();
    for i in firsts {
        keep[i] = true;
    }
    (0..events.len()).filter(|&i| keep[i]).collect()
}

#[cfg(test)]
mod tests;
