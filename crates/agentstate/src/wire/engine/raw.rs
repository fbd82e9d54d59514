//! `rawEvent`, and the typed fields of an event resource that repeat it, written straight from
//! the event: no JSON tree of the event is built. What `rawEvent` changes in an event as stored
//! (see [`super::raw_event`]) is applied as its fields pass: the time its client wrote, agentstate's
//! own metadata keys left out, and a summary's bounds rounded as its client reads them back.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::json;

use super::super::stream::{Mode, Wire, write_raw};
use crate::event::{EXACT_TIME_KEY, GIVEN_TIME_KEY};
use crate::{Event, Map, Value};

/// Where an event keeps the time its client wrote into `rawEvent` when it differs from the
/// event's own (ADK for TypeScript writes milliseconds): ADK's internal metadata, stored and
/// never shown on the ADK routes, and taken out again when the API echoes `rawEvent`.
pub(super) const RAW_TIME_KEY: &str = "__adk_internal_raw_event_timestamp";

/// The keys of a summary's range, as ADK writes them in `actions.compaction` (camelCase here)
/// and in the `_compaction` metadata of its Agent Engine client (snake_case).
const BOUNDS: [&str; 4] = ["startTimestamp", "endTimestamp", "start_timestamp", "end_timestamp"];

/// A field the event keeps among those it does not model, under its stored (snake_case) or its
/// API (camelCase) name.
fn unmodelled<'a>(fields: &'a Map<String, Value>, snake: &str, camel: &str) -> Option<&'a Value> {
    fields.get(snake).or_else(|| fields.get(camel))
}

/// An event as `rawEvent` shows it, and the parts of it an event resource repeats.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Raw<'a> {
    event: &'a Event,
    /// For a client: the time it gave and a summary's bounds rounded. For agentstate's own
    /// client: as stored (it reads the given time from the metadata).
    answer_given_time: bool,
    /// The event's custom metadata.
    meta: Option<&'a Value>,
}

impl<'a> Raw<'a> {
    pub(super) fn new(event: &'a Event, answer_given_time: bool) -> Self {
        let meta = unmodelled(&event.extra, "custom_metadata", "customMetadata");
        Self { event, answer_given_time, meta }
    }

    /// The event.
    pub(super) fn event(&self) -> &'a Event {
        self.event
    }

    fn hidden(&self, key: &str) -> bool {
        key == RAW_TIME_KEY || key == EXACT_TIME_KEY || (self.answer_given_time && key == GIVEN_TIME_KEY)
    }

    /// The `timestamp` of the raw event when it is not the event's own: the client's, or (for a
    /// client) the time the event was given.
    fn timestamp(&self) -> Option<Value> {
        let meta = self.meta?.as_object()?;
        if let Some(sent) = meta.get(RAW_TIME_KEY) {
            return Some(sent.clone());
        }
        (self.answer_given_time && meta.contains_key(GIVEN_TIME_KEY)).then(|| json!(self.event.given_time().secs()))
    }

    /// The custom metadata as shown: `None` when there is none, or when nothing but hidden keys.
    pub(super) fn custom_metadata(&self) -> Option<Metadata<'a>> {
        let meta = self.meta?;
        let Some(fields) = meta.as_object() else { return Some(Metadata::AsIs(meta)) };
        let hides = fields.keys().any(|k| self.hidden(k));
        if hides && fields.keys().all(|k| self.hidden(k)) {
            return None;
        }
        let rounds = self.answer_given_time && fields.get("_compaction").is_some_and(Value::is_object);
        Some(if hides || rounds { Metadata::Edited(*self, fields) } else { Metadata::AsIs(meta) })
    }

    /// `content`, as shown.
    pub(super) fn content(&self) -> Option<impl Serialize + use<'a>> {
        self.event.content.as_ref().map(|content| Wire(content, Mode::Model))
    }

    /// `actions.requestedAuthConfigs`, as shown.
    pub(super) fn requested_auth_configs(&self) -> Option<impl Serialize + use<'a>> {
        unmodelled(&self.event.actions.extra, "requested_auth_configs", "requestedAuthConfigs")
            .map(|configs| Wire(configs, Mode::MapOfModels))
    }

    /// Field `snake` of the event that it does not model, as shown.
    pub(super) fn unmodelled(&self, snake: &str, camel: &str) -> Option<impl Serialize + use<'a>> {
        unmodelled(&self.event.extra, snake, camel).map(|value| Wire(value, Mode::Model))
    }

    /// Writes the entry of the event's field `stored` (`written` as shown) if `rawEvent` edits
    /// it, and says whether it did; the writer writes the others as stored.
    pub(in crate::wire) fn write_entry<M: SerializeMap>(
        &self,
        map: &mut M,
        stored: &str,
        written: &str,
    ) -> Result<bool, M::Error> {
        match written {
            "timestamp" => match self.timestamp() {
                Some(time) => map.serialize_entry(written, &time).map(|()| true),
                None => Ok(false),
            },
            "customMetadata" => {
                if let Some(meta) = self.custom_metadata() {
                    map.serialize_entry(written, &meta)?;
                }
                Ok(true)
            }
            "actions" if self.answer_given_time && stored == "actions" => {
                let actions = &self.event.actions;
                if !unmodelled(&actions.extra, "compaction", "compaction").is_some_and(Value::is_object) {
                    return Ok(false);
                }
                // A summary: rare, so written through a tree.
                let mut shown = serde_json::to_value(Wire(actions, Mode::Model)).map_err(serde::ser::Error::custom)?;
                if let Some(Value::Object(range)) = shown.get_mut("compaction") {
                    round_bounds(range);
                }
                map.serialize_entry(written, &shown).map(|()| true)
            }
            _ => Ok(false),
        }
    }
}

/// The event as `rawEvent` shows it.
#[derive(Debug, Clone, Copy)]
pub(super) struct RawEvent<'a>(pub(super) Raw<'a>);

impl Serialize for RawEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        write_raw(self.0.event, &self.0, serializer)
    }
}

/// An event's custom metadata as `rawEvent` shows it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Metadata<'a> {
    /// Nothing to leave out or round.
    AsIs(&'a Value),
    /// Without the hidden keys, a summary's `_compaction` bounds rounded.
    Edited(Raw<'a>, &'a Map<String, Value>),
}

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Range<'a>(&'a Map<String, Value>);
        impl Serialize for Range<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut range = self.0.clone();
                round_bounds(&mut range);
                range.serialize(serializer)
            }
        }
        match *self {
            Self::AsIs(meta) => meta.serialize(serializer),
            Self::Edited(raw, fields) => {
                let mut map = serializer.serialize_map(None)?;
                for (key, value) in fields.iter().filter(|(k, _)| !raw.hidden(k)) {
                    match value {
                        Value::Object(range) if raw.answer_given_time && key == "_compaction" => {
                            map.serialize_entry(key, &Range(range))?;
                        }
                        value => map.serialize_entry(key, value)?,
                    }
                }
                map.end()
            }
        }
    }
}

/// A summary's range (ADK for Python's `actions.compaction`, or the `_compaction` its Agent Engine
/// client also writes into the metadata) with each bound as that client reads back the event at
/// the bound. ADK sets the bounds to the times of the first and last events a summary covers, as
/// they were in memory, finer than a microsecond; the client appends each event at its time
/// rounded to the microsecond (Python's `datetime.fromtimestamp`: the nearest, ties to even) and
/// reads times back to the microsecond. Rounded the same way, a bound is again the time of its
/// event, so the summary covers on reload exactly the events it covered when it was written;
/// left as sent, a first event rounded down would fall out of its range. Only an event of the
/// same rounded microsecond as a bound's could come in with it; the store keeps a session's
/// events in distinct microseconds ([`crate::SessionService::append_event`]).
fn round_bounds(range: &mut Map<String, Value>) {
    for key in BOUNDS {
        let Some(secs) = range.get(key).and_then(Value::as_f64) else { continue };
        let rounded = to_the_microsecond(secs);
        if rounded != secs {
            range.insert(key.into(), json!(rounded));
        }
    }
}

/// `secs` rounded to the microsecond as Python's `datetime.fromtimestamp` rounds it (the
/// fraction times a million, to the nearest, ties to even), as the float Python's
/// `datetime.timestamp()` answers for the result.
pub(super) fn to_the_microsecond(secs: f64) -> f64 {
    if !secs.is_finite() || secs.abs() >= 1e15 {
        return secs;
    }
    let whole = secs.trunc();
    let micros = ((secs - whole) * 1e6).round_ties_even();
    // Below 2^53 microseconds both are exact as integers, and the quotient is correctly rounded.
    #[allow(clippy::cast_possible_truncation)]
    let total = whole as i64 * 1_000_000 + micros as i64;
    #[allow(clippy::cast_precision_loss)]
    let rounded = total as f64 / 1e6;
    rounded
}

#[cfg(test)]
mod tests {
    use super::super::{EventResource, raw_event, stored_raw_event};
    use super::*;
    use crate::wire::event_to_camel;

    /// `rawEvent` as it was built before it was written without a tree: the event in camelCase
    /// as a tree, then edited. The writer must answer the same JSON, field for field, in order.
    fn raw_by_tree(event: &Event, answer_given_time: bool) -> Value {
        let mut raw = event_to_camel(event);
        if answer_given_time {
            for range in ["/actions/compaction", "/customMetadata/_compaction"] {
                if let Some(Value::Object(range)) = raw.pointer_mut(range) {
                    round_bounds(range);
                }
            }
        }
        let Some(Value::Object(meta)) = raw.get_mut("customMetadata") else { return raw };
        let sent = meta.shift_remove(RAW_TIME_KEY);
        let exact = meta.shift_remove(EXACT_TIME_KEY);
        let given = if answer_given_time { meta.shift_remove(GIVEN_TIME_KEY) } else { None };
        let emptied = meta.is_empty() && (sent.is_some() || exact.is_some() || given.is_some());
        if let Value::Object(fields) = &mut raw {
            if emptied {
                fields.shift_remove("customMetadata");
            }
            if let Some(sent) = sent {
                fields.insert("timestamp".into(), sent);
            } else if given.is_some() {
                fields.insert("timestamp".into(), json!(event.given_time().secs()));
            }
        }
        raw
    }

    /// The resource as it was built from that tree.
    fn resource_by_tree(event: &Event) -> Value {
        let raw = raw_by_tree(event, true);
        let mut actions = Map::new();
        actions.insert("stateDelta".into(), json!(event.actions.state_delta));
        actions.insert("artifactDelta".into(), json!(event.actions.artifact_delta));
        if let Some(target) = &event.actions.transfer_to_agent {
            actions.insert("transferAgent".into(), json!(target));
        }
        if let Some(escalate) = event.actions.escalate {
            actions.insert("escalate".into(), json!(escalate));
        }
        if let Some(skip) = event.actions.skip_summarization {
            actions.insert("skipSummarization".into(), json!(skip));
        }
        if let Some(auth) = raw.pointer("/actions/requestedAuthConfigs") {
            actions.insert("requestedAuthConfigs".into(), auth.clone());
        }
        let mut out = Map::new();
        out.insert("author".into(), json!(event.author));
        out.insert("invocationId".into(), json!(event.invocation_id));
        out.insert("timestamp".into(), json!(event.given_time().rfc3339()));
        if let Some(content) = raw.get("content") {
            out.insert("content".into(), content.clone());
        }
        out.insert("actions".into(), Value::Object(actions));
        if let Some(code) = &event.error_code {
            out.insert("errorCode".into(), json!(code));
        }
        if let Some(message) = &event.error_message {
            out.insert("errorMessage".into(), json!(message));
        }
        let metadata: Map<String, Value> = [
            "partial",
            "turnComplete",
            "interrupted",
            "branch",
            "customMetadata",
            "longRunningToolIds",
            "groundingMetadata",
            "inputTranscription",
            "outputTranscription",
        ]
        .into_iter()
        .filter_map(|field| Some((field.to_owned(), raw.get(field)?.clone())))
        .collect();
        out.insert("eventMetadata".into(), Value::Object(metadata));
        out.insert("rawEvent".into(), raw);
        Value::Object(out)
    }

    /// Every combination of the fields `rawEvent` edits or the resource repeats.
    fn events() -> impl Iterator<Item = Event> {
        let pieces: [(&'static str, Value); 13] = [
            (
                "content",
                json!({"role": "model", "parts": [{"function_call": {"id": "c1", "name": "f", "args": {"snake_key": 1}}}]}),
            ),
            ("partial", json!(false)),
            ("turn_complete", json!(true)),
            ("interrupted", json!(true)),
            ("branch", json!("a.b")),
            ("long_running_tool_ids", json!(["c1"])),
            ("grounding_metadata", json!({"web_search_queries": ["q"]})),
            ("output_transcription", json!({"text": "t", "finished": true})),
            ("error_code", json!("E")),
            (
                "compaction",
                json!({"start_timestamp": 1_795_701_059.873_456_5, "end_timestamp": 1_795_701_059.999_999_5,
                                   "compacted_content": {"role": "model", "parts": [{"text": "s"}]}}),
            ),
            (
                "requested_auth_configs",
                json!({"c1": {"auth_scheme": {"type": "oauth2"}, "exchanged_auth_credential": null}}),
            ),
            ("meta", json!({"k_1": 1, "_compaction": {"start_timestamp": 1.000_001_5, "end_timestamp": 2}})),
            ("hidden", json!(null)),
        ];
        // Every combination of the pieces `rawEvent` edits (compaction, metadata, hidden keys);
        // the others (which it copies) all, none or one at a time.
        const EDITED: u32 = 1 << 9 | 1 << 11 | 1 << 12;
        let copied = |mask: u32| mask & !EDITED;
        let all = (1u32 << pieces.len()) - 1;
        let masks = (0..=all).filter(move |&m| copied(m).count_ones() <= 1 || copied(m) == copied(all));
        masks.flat_map(move |mask| {
            let mut event = json!({"id": "e1", "author": "agent", "invocation_id": "inv", "timestamp": 1_800_000_000.123_456,
                                   "actions": {"state_delta": {"k": 1}, "transfer_to_agent": "b"}});
            let mut meta = Map::new();
            for (i, (field, value)) in pieces.iter().enumerate() {
                if mask & (1 << i) == 0 {
                    continue;
                }
                match *field {
                    "compaction" | "requested_auth_configs" => event["actions"][field] = value.clone(),
                    "meta" => meta.extend(value.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone()))),
                    "hidden" => {
                        meta.insert(RAW_TIME_KEY.into(), json!(1_800_000_000_123_u64));
                        meta.insert(EXACT_TIME_KEY.into(), json!(1_800_000_000_123_456_789_u64));
                        meta.insert(GIVEN_TIME_KEY.into(), json!("2027-01-15T08:00:00.1Z"));
                    }
                    field => event[field] = value.clone(),
                }
            }
            // The hidden keys one at a time too, and metadata that is not a map.
            let mut variants = vec![meta.clone()];
            if mask & (1 << 12) != 0 {
                for key in [RAW_TIME_KEY, EXACT_TIME_KEY, GIVEN_TIME_KEY] {
                    let mut one = meta.clone();
                    one.retain(|k, _| k == key || !k.starts_with("__adk_internal_"));
                    variants.push(one);
                }
            }
            let mut out: Vec<Event> = variants
                .into_iter()
                .map(|meta| {
                    let mut event = event.clone();
                    if !meta.is_empty() {
                        event["custom_metadata"] = Value::Object(meta);
                    }
                    serde_json::from_value(event).unwrap()
                })
                .collect();
            if mask == 0 {
                let mut odd = event.clone();
                odd["custom_metadata"] = json!("not a map");
                out.push(serde_json::from_value(odd.clone()).unwrap());
                odd["custom_metadata"] = json!({});
                out.push(serde_json::from_value(odd).unwrap());
            }
            out
        })
    }

    #[test]
    fn the_writer_answers_what_the_tree_answered() {
        let mut checked = 0;
        for event in events() {
            for answer_given_time in [true, false] {
                let tree = raw_by_tree(&event, answer_given_time);
                let written = serde_json::to_string(&RawEvent(Raw::new(&event, answer_given_time))).unwrap();
                assert_eq!(written, tree.to_string(), "{event:?}");
            }
            assert_eq!(raw_event(&event), raw_by_tree(&event, true));
            assert_eq!(stored_raw_event(&event), raw_by_tree(&event, false));
            let resource = EventResource { name: None, event: &event, state_delta: &event.actions.state_delta };
            assert_eq!(serde_json::to_string(&resource).unwrap(), resource_by_tree(&event).to_string(), "{event:?}");
            checked += 1;
        }
        assert!(checked > 100, "{checked}");
    }
}
