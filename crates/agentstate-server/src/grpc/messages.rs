//! Replies built from agentstate's own types, not read back from the REST answer: a session
//! (`GetSession`, `CreateSession`'s operation) and `ListEvents`' page. Each message field by
//! field, the free-form ones (`rawEvent`, a state, a delta, metadata) written as `Struct`s at
//! once, and only the typed model pieces (content, grounding, transcriptions) read from their
//! JSON. The same messages the REST answers read back as (the tests hold the two to each other),
//! without the answers' JSON trees and their reading.

use agentstate::wire::engine::EventResource;
use agentstate::{Event, Map, Session, Timestamp, Value};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;

use super::convert::{Nulls, from_json};
use super::proto::google::cloud::aiplatform::v1beta1 as api;
use super::structs;
use crate::routes::vertex::{Engine, EventsPage};

/// A session as the API's message: its name, user, merged state, times and attributes.
pub(super) fn session(engine: &Engine, session: &Session) -> Result<api::Session, Status> {
    let attributes = session.attributes();
    let time = |micros: i64| timestamp(Timestamp::from_micros(micros));
    Ok(api::Session {
        name: engine.session_name(session.id()),
        user_id: session.user_id().to_owned(),
        session_state: Some(free_form(session.state().all())?),
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
pub(super) fn page_reply(page: &EventsPage) -> Result<api::ListEventsResponse, Status> {
    events_reply(&page.session, &page.events, page.next_page_token.as_deref())
}

/// `ListEvents`' reply: `events` of the session named `session` (`…/sessions/S`), and the token
/// of the next page if there is one. Public for the benchmarks.
///
/// # Errors
/// `INTERNAL` for an event the message cannot hold (an `artifactDelta` version that is not an
/// `int32`, content whose fields are not the API's), as the REST answer read back would be.
pub fn events_reply(
    session: &str,
    events: &[Event],
    next_page_token: Option<&str>,
) -> Result<api::ListEventsResponse, Status> {
    let session_events = events
        .iter()
        .map(|event| session_event(&format!("{session}/events/{}", event.id), event))
        .collect::<Result<_, _>>()?;
    Ok(api::ListEventsResponse { session_events, next_page_token: next_page_token.unwrap_or_default().to_owned() })
}

/// An event named `name` as the API's message.
pub(super) fn session_event(name: &str, event: &Event) -> Result<api::SessionEvent, Status> {
    let resource = EventResource { name: Some(name), event, state_delta: &event.actions.state_delta };
    let actions = &event.actions;
    Ok(api::SessionEvent {
        name: name.to_owned(),
        author: event.author.clone(),
        content: resource.content().map(|content| typed(&content)).transpose()?,
        invocation_id: event.invocation_id.clone(),
        actions: Some(api::EventActions {
            skip_summarization: actions.skip_summarization.unwrap_or_default(),
            state_delta: Some(free_form(resource.state_delta)?),
            artifact_delta: artifact_delta(&actions.artifact_delta)?,
            escalate: actions.escalate.unwrap_or_default(),
            requested_auth_configs: resource.requested_auth_configs().map(|c| free_form(&c)).transpose()?,
            transfer_agent: actions.transfer_to_agent.clone().unwrap_or_default(),
        }),
        timestamp: Some(timestamp(event.given_time())),
        error_code: event.error_code.clone().unwrap_or_default(),
        error_message: event.error_message.clone().unwrap_or_default(),
        event_metadata: Some(api::EventMetadata {
            grounding_metadata: resource
                .unmodelled("grounding_metadata", "groundingMetadata")
                .map(|g| typed(&g))
                .transpose()?,
            partial: event.partial.unwrap_or_default(),
            turn_complete: event.turn_complete.unwrap_or_default(),
            interrupted: event.extra.get("interrupted").and_then(Value::as_bool).unwrap_or_default(),
            long_running_tool_ids: event.long_running_tool_ids.clone().unwrap_or_default(),
            branch: event.branch.clone().unwrap_or_default(),
            custom_metadata: resource.custom_metadata().map(|m| free_form(&m)).transpose()?,
            input_transcription: resource
                .unmodelled("input_transcription", "inputTranscription")
                .map(|t| typed(&t))
                .transpose()?,
            output_transcription: resource
                .unmodelled("output_transcription", "outputTranscription")
                .map(|t| typed(&t))
                .transpose()?,
        }),
        raw_event: Some(free_form(&resource.raw_event())?),
    })
}

/// A free-form field (a `Struct`).
fn free_form(value: &impl Serialize) -> Result<pbjson_types::Struct, Status> {
    structs::to_struct(value).map_err(unfit)
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
        let built = events_reply(session, &events, Some("next")).unwrap();
        assert_eq!(built.session_events.len(), events.len());
        assert_eq!(built.next_page_token, "next");
        assert_eq!(built.session_events[1].name, format!("{session}/events/{}", events[1].id));
        assert!(events_reply(session, &[], None).unwrap().next_page_token.is_empty());
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
