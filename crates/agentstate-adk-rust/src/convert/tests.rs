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
        request in prop::option::of(text()),
        copy in prop::option::of(any::<bool>()),
        usage in prop::option::of((0..1000_i32, prop::option::of(0..100_i32))),
        response_metadata in prop::option::of(json_value()),
        interaction in prop::option::of(text()),
        route in prop::option::of(prop::collection::vec(text(), 0..2)),
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
        if let Some((tokens, thinking)) = usage {
            event["usage_metadata"] = json!({
                "prompt_token_count": tokens, "candidates_token_count": 1, "total_token_count": tokens + 1,
                "thinking_token_count": thinking,
            });
        }
        event["provider_metadata"] = json!(response_metadata);
        event["interaction_id"] = json!(interaction);
        event["actions"]["route"] = json!(route);
        // The model's request, and its copy in the metadata: the same text, or another.
        if let Some(request) = request {
            event["llm_request"] = json!(request);
            if let Some(same) = copy {
                event["event_metadata"][REQUEST_COPY] = json!(if same { request } else { format!("{request}!") });
            }
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
        (text(), json_value()).prop_map(|(n, a)| json!({"function_call": {"id": "c1", "name": n, "args": {"a": a}}})),
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
        let back = from_agentstate_owned(reread).unwrap();
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

/// An event whose kept fields include one this version of ADK-Rust does not have (a later
/// one wrote it) reads as well, through the general conversion.
#[test]
fn kept_fields_of_another_version_read_too() {
    let mut event = RustEvent::new("inv");
    event.llm_request = Some("{}".into());
    let mut stored = to_agentstate(&event).unwrap();
    let kept = &mut stored.extra["custom_metadata"][RUST_ONLY];
    kept["event"]["added_later"] = json!(1);
    kept["actions"] = json!({"added_later": 2});
    let back = from_agentstate_owned(stored).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&event).unwrap());
}

/// The copy of the model's request `LlmAgent` puts in the metadata is stored once.
#[test]
fn the_request_is_stored_once() {
    let request = json!({"contents": [{"role": "user", "parts": [{"text": "hi \"there\""}]}]}).to_string();
    let mut event = RustEvent::new("inv");
    event.llm_request = Some(request.clone());
    event.provider_metadata.insert(REQUEST_COPY.into(), request.clone());
    let stored = serde_json::to_string(&to_agentstate(&event).unwrap()).unwrap();
    assert_eq!(stored.matches("there").count(), 1, "{stored}");
    let (reread, _) = Event::from_stored_json(&stored).unwrap();
    let back = from_agentstate_owned(reread).unwrap();
    assert_eq!(back.provider_metadata.get(REQUEST_COPY), Some(&request));
    assert_eq!(back.llm_request, Some(request));
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
