//! What the view needs to know of each event ([`Facts`]): read from a decoded event, from its
//! stored text without building it, or from the compact form a store keeps beside it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{COMPACTION_KEY, FACTS_KEY, Range, SEALED_KEY};
use crate::event::Event;
use crate::history::RewindFacts;
use crate::store::StoredEvent;
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
    /// Its parts are sealed and it carries no facts ([`FACTS_KEY`]: encrypted before facts were
    /// carried), so what it holds is unknown: the view of a history with such an event is the
    /// whole history.
    pub opaque: bool,
}

impl Facts {
    /// The facts of a decoded event (of a sealed one, those it carries).
    pub fn of(event: &Event) -> Self {
        if event.extra.contains_key(SEALED_KEY) {
            let carried = event.extra.get(FACTS_KEY).and_then(Value::as_str);
            let (id, invocation_id, micros) = (event.id.clone(), event.invocation_id.clone(), event.time().micros());
            return carried.and_then(|text| Self::from_text(id, invocation_id, micros, text)).unwrap_or_else(|| Self {
                opaque: true,
                ..Self::of(&Event { extra: serde_json::Map::new(), ..event.clone() })
            });
        }
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
            opaque: false,
        }
    }

    /// These facts with every call id (calls, responses, long-running calls) replaced by
    /// `digest` of it: what an encrypted store carries in the clear ([`FACTS_KEY`]).
    pub fn with_call_ids(mut self, digest: impl Fn(&str) -> String) -> Self {
        for ids in [&mut self.calls, &mut self.responses, &mut self.long_running] {
            for id in ids.iter_mut() {
                *id = digest(id);
            }
        }
        self
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
        if light.sealed.is_some() {
            let (id, invocation_id, micros) =
                (stored.id.clone(), stored.invocation_id.clone(), stored.timestamp_micros);
            let carried = light.facts.as_deref().and_then(|text| Self::from_text(id, invocation_id, micros, text));
            return carried.unwrap_or_else(|| Self {
                opaque: true,
                ..Self::of_stored(&StoredEvent { data: None, ..stored.clone() })
            });
        }
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
            opaque: false,
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
            opaque: self.opaque,
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
            opaque: kept.opaque,
        })
    }

    pub(super) fn is_compaction(&self) -> bool {
        self.compaction.is_some() || self.rolling_end_ms.is_some()
    }

    /// Its time as ADK for TypeScript reads it: the stored microsecond, in milliseconds.
    #[allow(clippy::cast_precision_loss)] // exact below 2^53 µs (year 2255)
    pub(super) fn millis(&self) -> f64 {
        self.micros as f64 / 1000.0
    }

    pub(super) fn range(&self) -> Option<Range> {
        self.compaction.flatten()
    }
}

/// The end of ADK for TypeScript's summary: `isCompacted: true` and a numeric `endTime`.
fn rolling_end(is_compacted: Option<&Value>, end_time: Option<&Value>) -> Option<f64> {
    (is_compacted == Some(&Value::Bool(true))).then(|| end_time.and_then(Value::as_f64)).flatten()
}

/// The range of a compaction ADK uses: numbers for both ends and a content.
pub(super) fn range_of(compaction: &Value) -> Option<Range> {
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
    #[serde(rename = "o", default, skip_serializing_if = "is_false")]
    opaque: bool,
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
    /// [`SEALED_KEY`]: an encrypted store's event.
    #[serde(rename = "agentstate_sealed")]
    sealed: Option<serde::de::IgnoredAny>,
    /// [`FACTS_KEY`]: the facts a sealed event carries.
    #[serde(rename = "agentstate_facts")]
    facts: Option<String>,
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
