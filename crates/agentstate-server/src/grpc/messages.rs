//! Replies built from agentstate's own types, not read back from the REST answer: a session
//! (`GetSession`, `CreateSession`'s operation) and `ListEvents`' page. Each message field by
//! field, the free-form ones (`rawEvent`, a state, a delta, metadata) written as `Struct`s at
//! once, and only the typed model pieces (content, grounding, transcriptions) read from their
//! JSON. `ListEvents`' page is written in wire format as it goes ([`EventsReply`]): no message,
//! no `Struct` hash maps, no lengths worked out again at every level. The same messages the REST
//! answers read back as (the tests hold the two to each other), without the answers' JSON trees
//! and their reading.

use agentstate::wire::engine::EventResource;
use agentstate::{Event, Map, Session, Timestamp, Value};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;

use super::convert::{Nulls, from_json};
use super::proto::google::cloud::aiplatform::v1beta1 as api;
use super::{protowire, structs};
use crate::routes::vertex::{Engine, EventsPage};

/// A session as the API's message: its name, user, merged state, times and attributes.
pub(super) fn session(engine: &Engine, session: &Session) -> Result<api::Session, Status> {
    let attributes = session.attributes();
    let time = |micros: i64| timestamp(Timestamp::from_micros(micros));
    Ok(api::Session {
        name: engine.session_name(session.id()),
        user_id: session.user_id().to_owned(),
        session_state: Some(free_form_struct(session.state().all())?),
        create_time: Some(time(session.create_time_micros())),
        update_time: Some(time(session.last_update_micros())),
        expiration: attributes.expire_time_micros.map(|t| api::session::Expiration::ExpireTime(time(t))),
        display_name: attributes.display_name.clone().unwrap_or_default(),
        labels: attributes.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    })
}

/// An instant as protobuf's `Timestamp`.
fn timestamp(time: Timestamp) -> pbjson_types::Timestamp {
    let time = time.date_time();
    pbjson_types::Timestamp {
        seconds: time.timestamp(),
        nanos: i32::try_from(time.timestamp_subsec_nanos()).unwrap_or_default(),
    }
}

/// A page of events as the reply.
pub(super) fn page_reply(page: &EventsPage) -> Result<EventsReply, Status> {
    events_reply(&page.session, &page.events, page.next_page_token.as_deref())
}

/// `ListEvents`' reply, encoded: `ListEventsResponse`'s bytes, written from the events without
/// building the message first (what tonic sends as they are).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EventsReply(Vec<u8>);

impl std::fmt::Debug for EventsReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EventsReply({} bytes)", self.0.len())
    }
}

impl EventsReply {
    /// The reply's bytes: a `ListEventsResponse`.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The reply as the message it encodes.
    ///
    /// # Errors
    /// None for a reply [`events_reply`] wrote; `INTERNAL` if the bytes were not a message.
    pub fn message(&self) -> Result<api::ListEventsResponse, Status> {
        prost::Message::decode(self.0.as_slice()).map_err(unfit)
    }
}

/// Sent as it is: its bytes are the message. Never read: a server only writes replies.
impl prost::Message for EventsReply {
    fn encode_raw(&self, buf: &mut impl prost::bytes::BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl prost::bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// `ListEvents`' reply: `events` of the session named `session` (`…/sessions/S`), and the token
/// of the next page if there is one, encoded. Public for the benchmarks.
///
/// # Errors
/// `INTERNAL` for an event the message cannot hold (an `artifactDelta` version that is not an
/// `int32`, content whose fields are not the API's), as the REST answer read back would be.
pub fn events_reply(session: &str, events: &[Event], next_page_token: Option<&str>) -> Result<EventsReply, Status> {
    let mut out = Vec::with_capacity(events.len() * 512);
    let mut name = String::new();
    for event in events {
        name.clear();
        name.push_str(session);
        name.push_str("/events/");
        name.push_str(&event.id);
        protowire::nested(&mut out, 1, |out| write_session_event(out, &name, event))?;
    }
    protowire::string(&mut out, 2, next_page_token.unwrap_or_default());
    Ok(EventsReply(out))
}

/// An event named `name` as the API's `SessionEvent`, its fields written in turn: the typed
/// model pieces (content, grounding, transcriptions) read from their JSON into their messages,
/// the free-form ones written as `Struct`s at once.
fn write_session_event(out: &mut Vec<u8>, name: &str, event: &Event) -> Result<(), Status> {
    use protowire::{boolean, bytes, message, nested, string};
    let resource = EventResource { name: Some(name), event, state_delta: &event.actions.state_delta };
    let actions = &event.actions;
    string(out, 1, name);
    string(out, 3, &event.author);
    if let Some(content) = resource.content() {
        message(out, 4, &typed::<api::Content>(&content)?);
    }
    string(out, 5, &event.invocation_id);
    nested(out, 6, |out| {
        boolean(out, 1, actions.skip_summarization.unwrap_or_default());
        free_form(out, 2, resource.state_delta)?;
        let artifacts = artifact_delta(&actions.artifact_delta)?;
        prost::encoding::hash_map::encode(
            prost::encoding::string::encode,
            prost::encoding::string::encoded_len,
            prost::encoding::int32::encode,
            prost::encoding::int32::encoded_len,
            3,
            &artifacts,
            out,
        );
        boolean(out, 6, actions.escalate.unwrap_or_default());
        if let Some(configs) = resource.requested_auth_configs() {
            free_form(out, 7, &configs)?;
        }
        string(out, 8, actions.transfer_to_agent.as_deref().unwrap_or_default());
        Ok::<_, Status>(())
    })?;
    message(out, 8, &timestamp(event.given_time()));
    string(out, 9, event.error_code.as_deref().unwrap_or_default());
    string(out, 10, event.error_message.as_deref().unwrap_or_default());
    nested(out, 11, |out| {
        if let Some(grounding) = resource.unmodelled("grounding_metadata", "groundingMetadata") {
            message(out, 1, &typed::<api::GroundingMetadata>(&grounding)?);
        }
        boolean(out, 2, event.partial.unwrap_or_default());
        boolean(out, 3, event.turn_complete.unwrap_or_default());
        boolean(out, 4, event.extra.get("interrupted").and_then(Value::as_bool).unwrap_or_default());
        for id in event.long_running_tool_ids.iter().flatten() {
            bytes(out, 5, id.as_bytes());
        }
        string(out, 6, event.branch.as_deref().unwrap_or_default());
        if let Some(metadata) = resource.custom_metadata() {
            free_form(out, 7, &metadata)?;
        }
        for (field, key, json_key) in
            [(10, "input_transcription", "inputTranscription"), (11, "output_transcription", "outputTranscription")]
        {
            if let Some(transcription) = resource.unmodelled(key, json_key) {
                message(out, field, &typed::<api::Transcription>(&transcription)?);
            }
        }
        Ok::<_, Status>(())
    })?;
    free_form(out, 12, &resource.raw_event())
}

/// A free-form field (a `Struct`) of a message being built.
fn free_form_struct(value: &impl Serialize) -> Result<pbjson_types::Struct, Status> {
    structs::to_struct(value).map_err(unfit)
}

/// A free-form field (a `Struct`), field `field` of the message being written.
fn free_form(out: &mut Vec<u8>, field: u32, value: &impl Serialize) -> Result<(), Status> {
    structs::write_struct(out, field, value).map_err(unfit)
}

/// A typed field, read from its JSON as the API's JSON reads (proto3's mapping).
fn typed<T: DeserializeOwned + Nulls>(value: &impl Serialize) -> Result<T, Status> {
    from_json(serde_json::to_value(value).map_err(unfit)?)
}

/// `artifactDelta`: each artifact's version, an `int32` (a number, or a string of one, as
/// proto3's JSON reads it).
fn artifact_delta(delta: &Map<String, Value>) -> Result<std::collections::HashMap<String, i32>, Status> {
    delta
        .iter()
        .map(|(name, version)| {
            let version = match version {
                Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
                Value::String(s) => s.parse().ok(),
                _ => None,
            };
            version.map(|v| (name.clone(), v)).ok_or_else(|| unfit(format!("artifactDelta.{name} is not an int32")))
        })
        .collect()
}

fn unfit(e: impl std::fmt::Display) -> Status {
    tracing::error!(error = %e, "a reply does not fit its gRPC message");
    Status::internal("Internal error")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::convert::from_answer;
    use super::*;

    const NAME: &str = "projects/p/locations/l/reasoningEngines/1/sessions/s/events/e1";

    /// The event's message, read back from the bytes written for it.
    fn session_event(name: &str, event: &Event) -> Result<api::SessionEvent, Status> {
        let mut out = Vec::new();
        write_session_event(&mut out, name, event)?;
        Ok(prost::Message::decode(out.as_slice()).unwrap())
    }

    /// Events with every field the message has, and the values its JSON reading treats apart:
    /// nulls (at the top of a struct and deep), integers beyond 2^53, whole and fractional
    /// doubles, agentstate's hidden metadata, a summary's bounds, a time given to the nanosecond.
    fn events() -> Vec<Event> {
        let big = json!(9_007_199_254_740_993_u64);
        let full = json!({
            "id": "e1", "author": "agent", "invocation_id": "inv", "timestamp": 1_800_000_000.123_456,
            "content": {"role": "model", "parts": [
                {"text": "hi", "thought": true, "thought_signature": "c2ln"},
                {"function_call": {"id": "c1", "name": "f", "args": {"n": null, "deep": {"x": [null, 1, 2.5]}, "big": big}}},
                {"function_response": {"id": "c1", "name": "f", "response": {"result": null, "whole": 2.0, "neg": -9_007_199_254_740_993_i64}}},
                {"inline_data": {"mime_type": "image/png", "data": "aGVsbG8="}},
                {"file_data": {"mime_type": "text/plain", "file_uri": "gs://b/f"}},
                {"executable_code": {"language": "PYTHON", "code": "print(1)"}},
                {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "1"}},
                {"text": "clip", "video_metadata": {"start_offset": "1.5s", "end_offset": "3s"}},
            ]},
            "actions": {
                "state_delta": {"k": 1, "user:u": {"deep": null}, "app:big": big, "f": 0.1, "gone": null},
                "artifact_delta": {"report.pdf": 2, "text": "3"},
                "transfer_to_agent": "b", "escalate": true, "skip_summarization": false,
                "requested_auth_configs": {"c1": {"auth_scheme": {"type": "oauth2"}, "exchanged_auth_credential": null}},
            },
            "partial": false, "turn_complete": true, "interrupted": true, "branch": "a.b",
            "long_running_tool_ids": ["c1"], "error_code": "E", "error_message": "broke",
            "grounding_metadata": {"web_search_queries": ["q"], "search_entry_point": {"rendered_content": "<p>"}},
            "input_transcription": {"text": "in", "finished": false},
            "output_transcription": {"text": "out", "finished": true},
            "custom_metadata": {"k_1": null, "n": big, "_compaction": {"start_timestamp": 1.000_001_5, "end_timestamp": 2}},
        });
        let summary = json!({"author": "agent", "timestamp": 9.0, "actions": {"compaction": {
            "start_timestamp": 1_795_701_059.873_456_5, "end_timestamp": 1_795_701_059.999_999_5,
            "compacted_content": {"role": "model", "parts": [{"text": "s"}]}}}});
        let bare = json!({"id": "e2", "author": "user", "timestamp": 1.5});
        let hidden_only = json!({"id": "e3", "author": "user", "timestamp": 2.5,
            "custom_metadata": {"__adk_internal_raw_event_timestamp": 2500}});
        let mut out: Vec<Event> =
            [full, summary, bare, hidden_only].into_iter().map(|e| serde_json::from_value(e).unwrap()).collect();
        let mut nanos = out[2].clone();
        nanos.set_time(Timestamp::parse_rfc3339("2026-11-25T02:58:13.327913461Z").unwrap());
        let mut given = out[0].clone();
        given.set_time(Timestamp::parse_rfc3339("2026-11-25T02:58:13.5Z").unwrap());
        given.keep_given_time();
        given.set_time(Timestamp::parse_rfc3339("2026-11-25T02:58:14Z").unwrap());
        out.extend([nanos, given]);
        out
    }

    #[test]
    fn an_event_is_the_message_its_rest_answer_reads_back_as() {
        for event in events() {
            let resource = EventResource { name: Some(NAME), event: &event, state_delta: &event.actions.state_delta };
            let read_back: api::SessionEvent = from_answer(&resource).unwrap();
            let built = session_event(NAME, &event).unwrap();
            assert_eq!(built, read_back, "{event:?}");
        }
    }

    #[test]
    fn a_page_is_the_message_its_rest_answer_reads_back_as() {
        let events = events();
        let session = "projects/p/locations/l/reasoningEngines/1/sessions/s";
        let built = events_reply(session, &events, Some("next")).unwrap().message().unwrap();
        assert_eq!(built.session_events.len(), events.len());
        assert_eq!(built.next_page_token, "next");
        assert_eq!(built.session_events[1].name, format!("{session}/events/{}", events[1].id));
        for (event, message) in events.iter().zip(&built.session_events) {
            assert_eq!(*message, session_event(&format!("{session}/events/{}", event.id), event).unwrap());
        }
        assert!(events_reply(session, &[], None).unwrap().bytes().is_empty());
    }

    #[test]
    fn a_session_is_the_message_its_rest_answer_reads_back_as() {
        use agentstate::{CreateSession, SessionService};
        let engine =
            super::super::convert::Name::engine("projects/p/locations/l/reasoningEngines/1", "parent").unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let service = SessionService::in_memory();
        let state: Map<String, Value> = serde_json::from_value(json!({
            "k": null, "deep": {"n": null, "big": 9_007_199_254_740_993_u64, "list": [1, 2.5, "s"]},
            "user:u": 1, "app:a": true,
        }))
        .unwrap();
        let plain = runtime.block_on(service.create_session(CreateSession::new("1", "alice").id("s1"))).unwrap();
        let full = runtime
            .block_on(
                service.create_session(
                    CreateSession::new("1", "bob")
                        .id("s2")
                        .with_state(state)
                        .display_name("chat")
                        .label("team", "a")
                        .expire_time(1_900_000_000.123_456),
                ),
            )
            .unwrap();
        for stored in [plain, full] {
            let read_back: api::Session = from_json(engine.session(&stored)).unwrap();
            assert_eq!(session(&engine, &stored).unwrap(), read_back);
        }
    }

    #[test]
    fn an_event_the_message_cannot_hold_is_an_internal_error() {
        let event: Event =
            serde_json::from_value(json!({"author": "a", "actions": {"artifact_delta": {"f": 1.5}}})).unwrap();
        assert_eq!(session_event(NAME, &event).unwrap_err().code(), tonic::Code::Internal);
        let event: Event =
            serde_json::from_value(json!({"author": "a", "content": {"parts": [{"file_data": {"file_uri": 5}}]}}))
                .unwrap();
        assert_eq!(session_event(NAME, &event).unwrap_err().code(), tonic::Code::Internal);
    }
}
