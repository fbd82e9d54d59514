//! The JSON of the Agent Engine Sessions API (Google's `v1beta1` REST resources): sessions and
//! events as the API writes them, and read back into agentstate's types. One module for both
//! sides: agentstate's server answers in it, agentstate's client (`agentstate-vertex`) writes
//! requests in it and reads the answers.
//!
//! ```
//! use agentstate::wire::engine;
//! use agentstate::{Event, SessionService};
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let service = SessionService::in_memory();
//! let session = service.create_session(agentstate::CreateSession::new("42", "alice").id("s1")).await?;
//! let resource = engine::session_resource(&session, "reasoningEngines/42/sessions/s1");
//! let back = engine::session_from_resource(&resource, "42", Vec::<Event>::new())?;
//! assert_eq!((back.id(), back.user_id()), ("s1", "alice"));
//! # Ok(()) }
//! ```

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::event_from_wire;
use crate::event::Event;
use crate::key::SessionKey;
use crate::session::{Session, SessionAttributes};
use crate::time::Timestamp;

mod raw;

pub(crate) use raw::Raw;
use raw::{RAW_TIME_KEY, RawEvent};

/// Keeps `sent`, the `timestamp` a client wrote into an event's `rawEvent`, when it is a number
/// other than the event's time in seconds, so that the API answers `rawEvent` with it as sent.
pub fn keep_raw_timestamp(event: &mut Event, sent: Option<Value>) {
    let Some(Value::Number(sent)) = sent else { return };
    if sent.as_f64() == Some(event.timestamp) {
        return;
    }
    let meta = event.extra.entry("custom_metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(RAW_TIME_KEY.into(), Value::Number(sent));
    }
}

/// The event as its client wrote it into `rawEvent`: camelCase, its own time (see
/// [`keep_raw_timestamp`], and [`Event::given_time`] for an event storing placed later) in
/// place of agentstate's, without agentstate's exact time (the resource's `timestamp` says it),
/// and a summary's bounds as its client reads them back. As a tree; [`EventResource`] writes it
/// out without one.
pub fn raw_event(event: &Event) -> Value {
    serde_json::to_value(RawEvent(Raw::new(event, true))).unwrap_or(Value::Null)
}

/// [`raw_event`] for agentstate's client (the `agentstateEvents` extension), which reads events
/// back as stored: the time an event was given stays beside it, and the resource's `timestamp`
/// is where the history placed it.
pub fn stored_raw_event(event: &Event) -> Value {
    serde_json::to_value(RawEvent(Raw::new(event, false))).unwrap_or(Value::Null)
}

/// Epoch microseconds as RFC 3339, UTC, to the microsecond.
pub fn rfc3339(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// An RFC 3339 time (`Z` or an offset; any fraction, cut to the microsecond) as epoch
/// microseconds; the error names `field`.
pub fn parse_rfc3339(text: &str, field: &str) -> Result<i64, String> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_micros())
        .map_err(|e| format!("{field}: {text:?} is not an RFC 3339 time ({e})"))
}

/// The last segment of a resource name.
pub fn id_of(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// A session as the API shows it, named `name`: merged state, times, attributes, no events.
pub fn session_resource(session: &Session, name: &str) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    out.insert("userId".into(), json!(session.user_id()));
    out.insert("sessionState".into(), Value::Object(session.state().all().clone()));
    out.insert("createTime".into(), json!(rfc3339(session.create_time_micros())));
    out.insert("updateTime".into(), json!(rfc3339(session.last_update_micros())));
    let attributes = session.attributes();
    if let Some(expire) = attributes.expire_time_micros {
        out.insert("expireTime".into(), json!(rfc3339(expire)));
    }
    if let Some(display) = &attributes.display_name {
        out.insert("displayName".into(), json!(display));
    }
    if !attributes.labels.is_empty() {
        out.insert("labels".into(), json!(attributes.labels));
    }
    Value::Object(out)
}

/// A session resource as a handle of `app` with `events`; its update time is the storage
/// marker. The error says what is missing or malformed.
pub fn session_from_resource(resource: &Value, app: &str, events: Vec<Event>) -> Result<Session, String> {
    let name = resource.get("name").and_then(Value::as_str).ok_or("no name")?;
    let user = resource.get("userId").and_then(Value::as_str).ok_or("no userId")?;
    let key = SessionKey::from_storage(app, user, id_of(name));
    let state = match resource.get("sessionState") {
        Some(Value::Object(state)) => state.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(other) => return Err(format!("sessionState {other} is not an object")),
    };
    let mut attributes = SessionAttributes {
        display_name: resource.get("displayName").and_then(Value::as_str).map(str::to_owned),
        ..SessionAttributes::default()
    };
    if let Some(Value::Object(labels)) = resource.get("labels") {
        for (k, v) in labels {
            attributes.labels.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
        }
    }
    let time = |field: &str| -> Result<Option<i64>, String> {
        resource.get(field).map(|v| parse_rfc3339(v.as_str().unwrap_or_default(), field)).transpose()
    };
    attributes.expire_time_micros = time("expireTime")?;
    let update = time("updateTime")?.ok_or("no updateTime")?;
    let create = time("createTime")?.unwrap_or(update);
    Ok(Session::from_storage(key, state, events, update).created_at(create).with_attributes(Some(Arc::new(attributes))))
}

/// The body of a create: the user, the initial state and the attributes.
pub fn create_body(user: &str, state: Map<String, Value>, attributes: &SessionAttributes) -> Value {
    let mut body = json!({ "userId": user });
    body["sessionState"] = Value::Object(state);
    if let Some(name) = &attributes.display_name {
        body["displayName"] = json!(name);
    }
    if !attributes.labels.is_empty() {
        body["labels"] = json!(attributes.labels);
    }
    if let Some(expire) = attributes.expire_time_micros {
        body["expireTime"] = json!(rfc3339(expire));
    }
    body
}

/// An event as the API writes it: the typed fields (camelCase) and the whole ADK event as
/// `rawEvent`, at the time it was appended with, to the nanosecond ([`Event::given_time`]). `state_delta` is the typed
/// `actions.stateDelta`: what the service merges (the event's own, but for an import, which
/// records deltas without applying them again). As a tree; to write it out, serialize
/// [`EventResource`]: the same JSON.
pub fn event_resource(event: &Event, state_delta: &Map<String, Value>) -> Map<String, Value> {
    match serde_json::to_value(EventResource { name: None, event, state_delta }) {
        Ok(Value::Object(resource)) => resource,
        _ => Map::new(),
    }
}

/// An event as the API writes it ([`event_resource`]), with its resource `name` first when there
/// is one, written without building the resource as a tree: the raw event is built once and the
/// typed fields that repeat it are written from it.
#[derive(Debug, Clone, Copy)]
pub struct EventResource<'a> {
    /// The resource name (`…/sessions/S/events/E`), if the answer carries it.
    pub name: Option<&'a str>,
    /// The event.
    pub event: &'a Event,
    /// Its typed `actions.stateDelta` (see [`event_resource`]).
    pub state_delta: &'a Map<String, Value>,
}

/// The parts of an event resource that are not the event's own fields, as the resource shows
/// them: for a writer of the API's messages (gRPC) that builds each field itself.
impl<'a> EventResource<'a> {
    fn raw(&self) -> Raw<'a> {
        Raw::new(self.event, true)
    }

    /// `rawEvent`.
    pub fn raw_event(&self) -> impl serde::Serialize + use<'a> {
        RawEvent(self.raw())
    }

    /// `content`, when the event has one.
    pub fn content(&self) -> Option<impl serde::Serialize + use<'a>> {
        self.raw().content()
    }

    /// `actions.requestedAuthConfigs`, when the event has them.
    pub fn requested_auth_configs(&self) -> Option<impl serde::Serialize + use<'a>> {
        self.raw().requested_auth_configs()
    }

    /// `eventMetadata.customMetadata`, when there is metadata to show.
    pub fn custom_metadata(&self) -> Option<impl serde::Serialize + use<'a>> {
        self.raw().custom_metadata()
    }

    /// The field of `eventMetadata` that the event does not model (`interrupted`,
    /// `groundingMetadata`, `inputTranscription`, `outputTranscription`), by its stored
    /// (`snake`) or API (`camel`) name, when the event has it.
    pub fn unmodelled(&self, snake: &str, camel: &str) -> Option<impl serde::Serialize + use<'a>> {
        self.raw().unmodelled(snake, camel)
    }
}

impl serde::Serialize for EventResource<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;

        /// The typed `actions`, borrowed.
        struct Typed<'a>(&'a Event, &'a Map<String, Value>, Raw<'a>);
        impl serde::Serialize for Typed<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let Typed(event, state_delta, raw) = *self;
                let actions = &event.actions;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("stateDelta", state_delta)?;
                map.serialize_entry("artifactDelta", &actions.artifact_delta)?;
                if let Some(target) = &actions.transfer_to_agent {
                    map.serialize_entry("transferAgent", target)?;
                }
                if let Some(escalate) = actions.escalate {
                    map.serialize_entry("escalate", &escalate)?;
                }
                if let Some(skip) = actions.skip_summarization {
                    map.serialize_entry("skipSummarization", &skip)?;
                }
                if let Some(auth) = raw.requested_auth_configs() {
                    map.serialize_entry("requestedAuthConfigs", &auth)?;
                }
                map.end()
            }
        }

        /// The fields of the raw event the API keeps in `eventMetadata` (in its order), borrowed.
        struct Metadata<'a>(Raw<'a>);
        impl serde::Serialize for Metadata<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let Metadata(raw) = *self;
                let event = raw.event();
                let mut map = serializer.serialize_map(None)?;
                if let Some(partial) = event.partial {
                    map.serialize_entry("partial", &partial)?;
                }
                if let Some(complete) = event.turn_complete {
                    map.serialize_entry("turnComplete", &complete)?;
                }
                if let Some(interrupted) = raw.unmodelled("interrupted", "interrupted") {
                    map.serialize_entry("interrupted", &interrupted)?;
                }
                if let Some(branch) = &event.branch {
                    map.serialize_entry("branch", branch)?;
                }
                if let Some(meta) = raw.custom_metadata() {
                    map.serialize_entry("customMetadata", &meta)?;
                }
                if let Some(ids) = &event.long_running_tool_ids {
                    map.serialize_entry("longRunningToolIds", ids)?;
                }
                for (snake, camel) in [
                    ("grounding_metadata", "groundingMetadata"),
                    ("input_transcription", "inputTranscription"),
                    ("output_transcription", "outputTranscription"),
                ] {
                    if let Some(value) = raw.unmodelled(snake, camel) {
                        map.serialize_entry(camel, &value)?;
                    }
                }
                map.end()
            }
        }

        let event = self.event;
        let raw = Raw::new(event, true);
        let mut map = serializer.serialize_map(None)?;
        if let Some(name) = self.name {
            map.serialize_entry("name", name)?;
        }
        map.serialize_entry("author", &event.author)?;
        map.serialize_entry("invocationId", &event.invocation_id)?;
        map.serialize_entry("timestamp", &event.given_time().rfc3339())?;
        if let Some(content) = raw.content() {
            map.serialize_entry("content", &content)?;
        }
        map.serialize_entry("actions", &Typed(event, self.state_delta, raw))?;
        if let Some(code) = &event.error_code {
            map.serialize_entry("errorCode", code)?;
        }
        if let Some(message) = &event.error_message {
            map.serialize_entry("errorMessage", message)?;
        }
        map.serialize_entry("eventMetadata", &Metadata(raw))?;
        map.serialize_entry("rawEvent", &RawEvent(raw))?;
        map.end()
    }
}

/// The ADK event (camelCase) a client that sends no `rawEvent` means by a resource's typed
/// fields: its author, invocation, content, errors, actions and metadata.
pub fn event_from_typed_fields(resource: &Map<String, Value>) -> Map<String, Value> {
    let mut event = Map::new();
    for field in ["author", "invocationId", "content", "errorCode", "errorMessage"] {
        if let Some(value) = resource.get(field).filter(|v| !v.is_null()) {
            event.insert(field.into(), value.clone());
        }
    }
    if let Some(Value::Array(parts)) = event.get_mut("content").and_then(|c| c.get_mut("parts")) {
        parts.iter_mut().for_each(enum_names);
    }
    if let Some(Value::Object(metadata)) = resource.get("eventMetadata") {
        event.extend(metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(Value::Object(typed)) = resource.get("actions") {
        let mut actions = typed.clone();
        if let Some(target) = actions.remove("transferAgent") {
            actions.insert("transferToAgent".into(), target);
        }
        event.insert("actions".into(), Value::Object(actions));
    }
    event
}

/// The enums of a part, by number: Google's REST clients send them as numbers
/// (`$alt=json;enum-encoding=int`); ADK's events name them.
const PART_ENUMS: [(&str, &str, &[&str]); 2] = [
    ("executableCode", "language", &["LANGUAGE_UNSPECIFIED", "PYTHON"]),
    (
        "codeExecutionResult",
        "outcome",
        &["OUTCOME_UNSPECIFIED", "OUTCOME_OK", "OUTCOME_FAILED", "OUTCOME_DEADLINE_EXCEEDED"],
    ),
];

/// A part's enums sent as numbers, named.
fn enum_names(part: &mut Value) {
    for (kind, field, names) in PART_ENUMS {
        if let Some(value) = part.get_mut(kind).and_then(|k| k.get_mut(field))
            && let Some(name) = value.as_u64().and_then(|n| names.get(usize::try_from(n).ok()?))
        {
            *value = json!(name);
        }
    }
}

/// An event resource as an event: the ADK event in `rawEvent` when there is one, else rebuilt
/// from the typed fields; the id from the name when the event has none, the time the
/// resource's. The error says what cannot be read.
pub fn event_from_resource(mut resource: Map<String, Value>) -> Result<Event, String> {
    let raw = match resource.remove("rawEvent") {
        Some(Value::Object(raw)) if !raw.is_empty() => raw,
        _ => event_from_typed_fields(&resource),
    };
    let mut event = event_from_wire(Value::Object(raw)).map_err(|e| e.to_string())?;
    if event.id.is_empty()
        && let Some(name) = resource.get("name").and_then(Value::as_str)
    {
        event.id = id_of(name).to_owned();
    }
    if let Some(time) = resource.get("timestamp") {
        let time =
            Timestamp::parse_rfc3339(time.as_str().unwrap_or_default()).map_err(|e| format!("timestamp: {e}"))?;
        event.set_time(time);
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_survives_the_round_trip_through_a_resource() {
        let mut sent: Event = serde_json::from_value(json!({
            "id": "e1", "author": "agent", "invocation_id": "inv", "timestamp": 1_800_000_000.123_456,
            "content": {"role": "model", "parts": [{"function_call": {"name": "f", "args": {"snake_key": 1}}}]},
            "actions": {"state_delta": {"k": 1, "user:u": 2}, "transfer_to_agent": "b", "escalate": true},
            "branch": "a.b", "turn_complete": true, "custom_metadata": {"x_y": 1}, "error_code": "E",
        }))
        .unwrap();
        sent.set_time(Timestamp::from_micros(1_800_000_000_123_456));
        let mut resource = event_resource(&sent, &sent.actions.state_delta);
        assert_eq!(resource["timestamp"], "2027-01-15T08:00:00.123456Z");
        assert_eq!(resource["actions"]["transferAgent"], "b");
        assert_eq!(resource["eventMetadata"]["branch"], "a.b");
        resource.insert("name".into(), json!("reasoningEngines/1/sessions/s/events/e1"));
        let back = event_from_resource(resource.clone()).unwrap();
        assert_eq!((back.id.as_str(), back.timestamp), ("e1", sent.timestamp));
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&sent).unwrap());
        // From the typed fields alone (a client that sends no rawEvent).
        resource.remove("rawEvent");
        let typed = event_from_resource(resource).unwrap();
        assert_eq!((typed.id.as_str(), typed.author.as_str(), typed.branch.as_deref()), ("e1", "agent", Some("a.b")));
        assert_eq!(typed.actions.transfer_to_agent.as_deref(), Some("b"));
        assert_eq!(typed.actions.state_delta, sent.actions.state_delta);
        assert_eq!(typed.content, sent.content);
    }

    #[test]
    fn an_event_keeps_its_nanoseconds_through_a_resource() {
        let time = Timestamp::parse_rfc3339("2026-11-25T02:58:13.327913461Z").unwrap();
        let mut sent = Event::new("inv").author("agent");
        sent.set_time(time);
        let resource = event_resource(&sent, &Map::new());
        assert_eq!(resource["timestamp"], "2026-11-25T02:58:13.327913461Z");
        assert!(resource["rawEvent"].get("customMetadata").is_none(), "{resource:?}");
        assert!(resource["eventMetadata"].get("customMetadata").is_none(), "{resource:?}");
        let back = event_from_resource(resource).unwrap();
        assert_eq!((back.time(), back.timestamp), (time, sent.timestamp));
        let shown = crate::wire::event_to_wire(&back);
        assert!(shown.get("customMetadata").is_none(), "the exact time is not shown as metadata: {shown}");
    }

    #[test]
    fn raw_event_answers_the_time_its_client_wrote() {
        let mut event: Event =
            serde_json::from_value(json!({"id": "e1", "author": "a", "timestamp": 1_795_701_059.873})).unwrap();
        keep_raw_timestamp(&mut event, Some(json!(1_795_701_059_873_u64)));
        assert_eq!(raw_event(&event)["timestamp"], json!(1_795_701_059_873_u64));
        assert!(raw_event(&event).get("customMetadata").is_none(), "the kept time is not shown as metadata");
        let shown = crate::wire::event_to_wire(&event);
        assert_eq!((shown["timestamp"].as_f64(), shown.get("customMetadata")), (Some(1_795_701_059.873), None));
        // The client's own metadata stays; a time equal to the event's is not kept.
        let mut own: Event = serde_json::from_value(json!({"timestamp": 2.5, "custom_metadata": {"k": 1}})).unwrap();
        keep_raw_timestamp(&mut own, Some(json!(2.5)));
        assert_eq!(raw_event(&own)["customMetadata"], json!({"k": 1}));
        keep_raw_timestamp(&mut own, Some(json!(2500)));
        assert_eq!(
            (raw_event(&own)["timestamp"].clone(), raw_event(&own)["customMetadata"].clone()),
            (json!(2500), json!({"k": 1}))
        );
    }

    #[test]
    fn sessions_are_read_with_their_times_and_attributes() {
        let resource = json!({
            "name": "projects/p/locations/l/reasoningEngines/1/sessions/s9",
            "userId": "u", "sessionState": {"k": 1},
            "createTime": "2026-01-01T00:00:00.000001Z", "updateTime": "2026-01-01T00:00:01.5Z",
            "displayName": "chat", "labels": {"team": "a"}, "expireTime": "2026-02-01T00:00:00Z",
        });
        let s = session_from_resource(&resource, "app", Vec::new()).unwrap();
        assert_eq!((s.app_name(), s.user_id(), s.id()), ("app", "u", "s9"));
        assert_eq!(s.last_update_micros() - s.create_time_micros(), 1_499_999);
        assert_eq!(s.attributes().display_name.as_deref(), Some("chat"));
        assert_eq!(s.attributes().labels["team"], "a");
        assert!(s.attributes().expire_time_micros.is_some());
        let written = session_resource(&s, "projects/p/locations/l/reasoningEngines/1/sessions/s9");
        assert_eq!(session_from_resource(&written, "app", Vec::new()).unwrap(), s);
        let broken = json!({"name": "x/sessions/s", "userId": "u", "updateTime": "soon"});
        assert!(session_from_resource(&broken, "app", Vec::new()).unwrap_err().contains("updateTime"));
    }

    #[test]
    fn times_round_trip_to_the_microsecond() {
        assert_eq!(rfc3339(1_795_318_375_281_155), "2026-11-22T03:32:55.281155Z");
        assert_eq!(parse_rfc3339("2026-11-22T03:32:55.281155Z", "t").unwrap(), 1_795_318_375_281_155);
        assert_eq!(parse_rfc3339("2026-11-22T04:32:55.281155+01:00", "t").unwrap(), 1_795_318_375_281_155);
        assert_eq!(parse_rfc3339("2026-11-22T03:32:55.281155999Z", "t").unwrap(), 1_795_318_375_281_155);
        assert_eq!(parse_rfc3339("2026-11-22T03:32:55Z", "t").unwrap(), 1_795_318_375_000_000);
        assert!(parse_rfc3339("yesterday", "t").is_err());
    }

    #[test]
    fn bounds_are_rounded_as_python_rounds_event_times() {
        // Python: datetime.fromtimestamp(t, tz=timezone.utc).timestamp()
        for (t, python) in [
            (1_795_701_059.873_456_5, 1_795_701_059.873_456),
            (1_795_701_059.000_000_5, 1_795_701_059.0),
            (1_795_701_059.999_999_5, 1_795_701_060.0),
            (1_795_701_059.123_456, 1_795_701_059.123_456),
            (1.000_001_5, 1.000_001),
            (1_795_701_059.000_002_4, 1_795_701_059.000_002),
        ] {
            assert_eq!(raw::to_the_microsecond(t).to_bits(), f64::to_bits(python), "{t}");
        }
        let mut event: Event =
            serde_json::from_value(json!({"author": "u", "timestamp": 9.0, "actions": {"compaction": {
            "startTimestamp": 1_795_701_059.873_456_5, "endTimestamp": 1_795_701_059.999_999_5,
            "compactedContent": {"parts": [{"text": "s"}]}}}}))
            .unwrap();
        event.extra.insert("custom_metadata".into(), json!({"_compaction": {"start_timestamp": 1.000_001_5}}));
        let shown = raw_event(&event);
        assert_eq!(shown["actions"]["compaction"]["startTimestamp"], json!(1_795_701_059.873_456));
        assert_eq!(shown["actions"]["compaction"]["endTimestamp"], json!(1_795_701_060.0));
        assert_eq!(shown["customMetadata"]["_compaction"]["start_timestamp"], json!(1.000_001));
        // Agentstate's own client reads events back as stored.
        assert_eq!(stored_raw_event(&event)["actions"]["compaction"]["startTimestamp"], json!(1_795_701_059.873_456_5));
    }
}
