use super::*;
use crate::store::StoredEvent;
use serde_json::json;

/// `key` in camelCase, the same `String` back when nothing changes (the oracle's renaming).
fn camel_owned(key: String) -> String {
    if key.bytes().skip(1).any(|b| b == b'_') { to_camel(&key) } else { key }
}

/// The tree conversion the streaming writer replaced: the oracle it is checked against.
fn event_to_wire_tree(event: &Event) -> Value {
    let mut value = serde_json::to_value(event).unwrap();
    if let Value::Object(map) = &mut value {
        if let Some(Value::Object(meta)) = map.get_mut("custom_metadata") {
            meta.retain(|k, _| !k.starts_with(INTERNAL_METADATA_PREFIX));
            if meta.is_empty() {
                map.shift_remove("custom_metadata");
            }
        }
        if let Some(Value::Object(actions)) = map.get_mut("actions") {
            for default in ["requested_auth_configs", "requested_tool_confirmations"] {
                actions.entry(default).or_insert_with(|| json!({}));
            }
        }
        map.entry("node_info").or_insert_with(|| json!({"path": ""}));
    }
    convert(value, camel_owned)
}

/// Events with every kind of field: models, free-form maps (whose keys stay), maps of
/// models, unknown fields, internal metadata alone and mixed.
fn varied_events() -> Vec<Event> {
    let raw = [
        json!({"invocation_id": "i", "author": "a", "id": "e1", "timestamp": 1.5}),
        json!({"content": {"role": "model", "parts": [
                    {"function_call": {"id": "c1", "name": "f", "args": {"city_name": "Paris", "nested_key": {"inner_key": 1}}}},
                    {"function_response": {"name": "f", "response": {"result_value": [1, {"deep_key": 2}]}}},
                    {"inline_data": {"mime_type": "image/png", "data": "AAE="}, "thought_signature": "x", "extra_part_field": {"snake_case": true}},
                    {"text": "hi", "thought": true}]},
               "invocation_id": "inv", "author": "a", "turn_complete": true, "id": "e2", "timestamp": 2.0,
               "long_running_tool_ids": ["t1"], "branch": "a.b",
               "actions": {"state_delta": {"user_name": 1, "app:some_key": {"x_y": 2}}, "artifact_delta": {"file_name": 1},
                           "requested_auth_configs": {"call_1": {"auth_scheme": "x", "raw_auth": {"client_id": 1}}},
                           "requested_tool_confirmations": [1, {"a_b": 2}],
                           "transfer_to_agent": "b", "escalate": false, "skip_summarization": true, "agent_state": {"k_v": 1},
                           "end_of_agent": true, "rewind_before_invocation_id": "x"},
               "custom_metadata": {"__adk_internal_x": 1, "user_meta": {"a_b": 1}},
               "grounding_metadata": {"web_search_queries": ["q"], "grounding_chunks": [{"web": {"uri": "u", "title_text": "t"}}]},
               "usage_metadata": {"prompt_token_count": 3}, "node_info": {"path": "a/b", "run_id": "r"},
               "deleted_keys": ["gone_key"], "output": {"free_form": {"x_y": 1}}}),
        json!({"author": "a", "custom_metadata": {"__adk_internal_only": true}, "id": "e3", "timestamp": 3.0,
               "error_code": "E", "error_message": "m", "partial": false, "interrupted": true}),
        json!({"author": "a", "id": "e4", "timestamp": 4.0, "actions": {"state_delta": {}},
               "x": null, "_leading": 1, "trailing_": [{"in_array_key": {"deeper_key": 1}}]}),
    ];
    raw.into_iter().map(|v| serde_json::from_value(v).unwrap()).collect()
}

#[test]
fn the_streaming_writer_writes_what_the_tree_conversion_did() {
    for event in varied_events() {
        assert_eq!(event_to_wire(&event), event_to_wire_tree(&event), "{event:?}");
        let text = serde_json::to_string(&WireEvent(&event)).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), event_to_wire_tree(&event));
        // As stored: renamed, nothing added or dropped.
        assert_eq!(event_to_camel(&event), convert(serde_json::to_value(&event).unwrap(), camel_owned));
    }
}

/// What a store's typed read gives for a row: the text decoded, the row's ids winning, the
/// row's time when the text has none. The oracle of the stored-text writer.
fn decoded(stored: &StoredEvent) -> Event {
    let (mut event, own_time) = match &stored.data {
        Some(text) => Event::from_stored_json(text).unwrap(),
        None => (Event::default(), false),
    };
    event.id = stored.id.clone();
    event.invocation_id = stored.invocation_id.clone();
    if !own_time {
        event.timestamp = crate::time::micros_to_secs(stored.timestamp_micros);
    }
    event
}

fn row(data: Option<String>) -> StoredEvent {
    StoredEvent { id: "row-id".into(), invocation_id: "row-inv".into(), timestamp_micros: 1_700_000_000_123_456, data }
}

#[test]
fn stored_text_is_written_as_the_decoded_event_would_be() {
    let mut texts: Vec<String> = varied_events().iter().map(|e| serde_json::to_string(e).unwrap()).collect();
    texts.extend(
        [
            // As ADK for Python stores it.
            json!({"content": {"parts": [{"text": "hello"}], "role": "user"}, "invocation_id": "inv1", "author": "user",
                   "actions": {"state_delta": {"k": 2, "none": null}, "artifact_delta": {}, "requested_auth_configs": {},
                               "requested_tool_confirmations": {}},
                   "node_info": {"path": ""}, "id": "57616c03", "timestamp": 1795318375.2811546}),
            // Fields an event always has, missing; no time of its own; an integer time.
            json!({}),
            json!({"content": {"role": "model"}}),
            json!({"author": "a", "actions": {"escalate": true}, "timestamp": 1795318375}),
            // camelCase as stored by another writer; escapes in keys and values.
            json!({"invocationId": "text-inv", "turnComplete": true, "actions": {"stateDelta": {"k\"q": "\u{e9}\n"}},
                   "longRunningToolIds": ["t"], "custom_metadata": {"__adk_internal_x": 1}}),
        ]
        .iter()
        .map(Value::to_string),
    );
    texts
        .push(r#"{"author":"caf\u00e9","actions":{"state_delta":{"x":1.0,"y":1e300,"z":-0.0}},"id":"text-id"}"#.into());
    // Found by fuzzing: empty lists of deleted keys, which the model leaves out.
    texts.push("{\"author\":\"a\",\"deleted_keys\":[\r\r]}".into());
    texts.push("{\"author\":\"a\",\"deletedKeys\":[ ]}".into());
    // Escaped names in models: renamed, and escaped again where they must be.
    texts.push(
        r#"{"we\"ird_key":1,"caf\u00e9_x":{"inner_key":"v","tab\tkey":[{"deep_key":true}]},"author":"a"}"#.into(),
    );
    // Times as floats are copied: a trailing zero, 17 digits, more digits than a double holds.
    for time in ["1795318375.50", "1795318375.2811546", "1795318375.281154612345"] {
        texts.push(format!(r#"{{"author":"a","timestamp":{time}}}"#));
    }
    let mut rows: Vec<StoredEvent> = texts.into_iter().map(|t| row(Some(t))).collect();
    rows.push(row(None));
    // Ids in the row's columns that need escaping, and ids longer than eight bytes that do not.
    for (id, invocation_id) in [("q\"uote\\back\u{1}", "caf\u{e9}-\u{7f}-\t"), ("a-much-longer-id-0001", "inv-é")] {
        let mut stored = row(Some(r#"{"author":"a"}"#.into()));
        (stored.id, stored.invocation_id) = (id.into(), invocation_id.into());
        rows.push(stored);
    }
    for stored in rows {
        let mut out = Vec::new();
        write_stored_event(&stored, &mut out).unwrap();
        let written: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(written, event_to_wire(&decoded(&stored)), "{:?}", stored.data);
    }
}

/// Mutated texts: whatever is not JSON is refused, as serde_json refuses it; a JSON object only
/// when no event can be read from it either; whatever is written is JSON; and where the text
/// decodes as an event, the writing is its wire form.
#[test]
fn stored_text_is_checked_as_json_is() {
    let mut seeds: Vec<String> = varied_events().iter().map(|e| serde_json::to_string(e).unwrap()).collect();
    // Found by fuzzing: a JSON object whose timestamp is not a number.
    seeds.push(r#"{"author":"a","timestamp":{"x":1},"actions":{"stateDelta":{"x":null}}}"#.into());
    let alphabet = b"{}[]\":,.-+eE0123456789 tfnrua\\\x7f\x01x_";
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let (mut refused, mut as_events) = (0, 0);
    for round in 0..30_000 {
        let mut bytes = seeds[round % seeds.len()].clone().into_bytes();
        for _ in 0..1 + next(3) {
            let at = next(bytes.len() + 1);
            match next(3) {
                0 if at < bytes.len() => drop(bytes.remove(at)),
                1 if at < bytes.len() => bytes[at] = alphabet[next(alphabet.len())],
                _ => bytes.insert(at, alphabet[next(alphabet.len())]),
            }
        }
        let Ok(text) = String::from_utf8(bytes) else { continue };
        let stored = row(Some(text.clone()));
        let mut out = Vec::new();
        let written = write_stored_event(&stored, &mut out);
        match serde_json::from_str::<Value>(&text) {
            Err(e) if e.to_string().contains("out of range") => continue,
            Err(_) => {
                assert!(written.is_err(), "not JSON, yet written: {text}");
                refused += 1;
            }
            // Refused only where no event can be read either (a timestamp not a number).
            Ok(Value::Object(_)) if written.is_err() => {
                assert!(Event::from_stored_json(&text).is_err(), "an event's text refused: {text}: {written:?}");
            }
            Ok(Value::Object(_)) => {
                let value: Value =
                    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{text} → invalid JSON: {e}"));
                if Event::from_stored_json(&text).is_ok() {
                    assert_eq!(value, event_to_wire(&decoded(&stored)), "{text}");
                    as_events += 1;
                }
            }
            Ok(_) => assert!(written.is_err(), "not an object, yet written: {text}"),
        }
    }
    assert!(refused > 1_000 && as_events > 1_000, "{refused} refused, {as_events} decoded");
}

#[test]
fn unreadable_stored_text_is_an_error_naming_the_event() {
    for text in ["{", "[]", r#"{"timestamp": "noon"}"#, r#"{"a": 1} trailing"#] {
        let err = write_stored_event(&row(Some(text.into())), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("event row-id is unreadable"), "{text}: {err}");
    }
}

#[test]
fn snake_eq_is_comparing_the_snake_case_form() {
    for key in
        ["state_delta", "stateDelta", "state_Delta", "StateDelta", "state", "State", "stateDeltas", "", "é_x", "x_É"]
    {
        for snake in FREE_FORM.iter().chain(MAP_OF_MODELS) {
            assert_eq!(snake_eq(key, snake), to_snake(key) == *snake, "{key} vs {snake}");
        }
    }
    for key in ["requestedAuth_configs", "requested_authConfigs", "requestedAuthConfigs"] {
        assert!(snake_eq(key, "requested_auth_configs"), "{key}");
    }
    for key in ["a_b", "_a", "aB", "é_b", "abc"] {
        assert_eq!(camel_owned(key.to_owned()), to_camel(key));
        assert_eq!(snake_owned(key.to_owned()), to_snake(key));
    }
}

/// An unknown field that camelCases like a known one stays unknown through a round trip.
#[test]
fn a_round_trip_keeps_unknown_fields_unknown() {
    let sent = json!({"author": "a", "actions": {"state__delta": {"k": 0}}, "deleted_+eys": ["old"]});
    let event = event_from_wire(sent).unwrap();
    assert!(event.actions.state_delta.is_empty());
    let again = event_from_wire(event_to_wire(&event)).unwrap();
    assert_eq!(again.actions.state_delta, event.actions.state_delta);
    assert_eq!(event_to_wire(&again), event_to_wire(&event));
}

#[test]
fn known_names_are_camelcased_as_to_camel_does() {
    let names = [
        "invocation_id",
        "turn_complete",
        "error_code",
        "error_message",
        "long_running_tool_ids",
        "deleted_keys",
        "custom_metadata",
        "node_info",
        "usage_metadata",
        "grounding_metadata",
        "finish_reason",
        "model_version",
        "skip_summarization",
        "state_delta",
        "artifact_delta",
        "transfer_to_agent",
        "requested_auth_configs",
        "requested_tool_confirmations",
        "rewind_before_invocation_id",
        "end_of_agent",
        "agent_state",
        "function_call",
        "function_response",
        "inline_data",
        "file_data",
        "mime_type",
        "file_uri",
        "thought_signature",
        "prompt_token_count",
        "candidates_token_count",
        "total_token_count",
        "thoughts_token_count",
        "run_id",
        "unknown_field",
        "plain",
        "_x",
        "a__b",
    ];
    for name in names {
        assert_eq!(camel(name), to_camel(name), "{name}");
    }
    assert!(matches!(camel("state_delta"), Cow::Borrowed(_)));
}

#[test]
fn case_conversion() {
    assert_eq!(to_camel("long_running_tool_ids"), "longRunningToolIds");
    assert_eq!(to_camel("id"), "id");
    assert_eq!(to_snake("mimeType"), "mime_type");
    assert_eq!(to_snake(&to_camel("thought_signature")), "thought_signature");
    for key in ["state__delta", "a_1", "a_", "_leading", "a_é", "x__y_z", "__adk_internal_x"] {
        assert_eq!(to_snake(&to_camel(key)), key, "{key} → {}", to_camel(key));
    }
    assert_eq!(to_camel("state__delta"), "state_Delta");
}

#[test]
fn model_fields_are_renamed_and_user_data_is_not() {
    let event: Event = serde_json::from_value(json!({
        "content": {"parts": [{"function_call": {"name": "f", "args": {"city_name": "Paris"}}},
                              {"inline_data": {"mime_type": "image/png", "data": "AAE="}}], "role": "model"},
        "invocation_id": "inv", "author": "a", "turn_complete": true,
        "actions": {"state_delta": {"user_name": 1}, "requested_auth_configs": {"call_1": {"auth_scheme": "x"}}},
        "custom_metadata": {"some_key": 1, "__adk_internal_restored_event": true},
        "usage_metadata": {"prompt_token_count": 3},
        "id": "e", "timestamp": 1.5
    }))
    .unwrap();
    let wire = event_to_wire(&event);
    assert_eq!(wire["content"]["parts"][0]["functionCall"]["args"], json!({"city_name": "Paris"}));
    assert_eq!(wire["content"]["parts"][1]["inlineData"]["mimeType"], "image/png");
    assert_eq!(wire["actions"]["stateDelta"], json!({"user_name": 1}));
    assert_eq!(wire["actions"]["requestedAuthConfigs"], json!({"call_1": {"authScheme": "x"}}));
    assert_eq!(wire["actions"]["requestedToolConfirmations"], json!({}));
    assert_eq!(wire["customMetadata"], json!({"some_key": 1}));
    assert_eq!(wire["usageMetadata"], json!({"promptTokenCount": 3}));
    assert_eq!(wire["nodeInfo"], json!({"path": ""}));
    assert_eq!((wire["invocationId"].as_str(), wire["turnComplete"].as_bool()), (Some("inv"), Some(true)));
    // And back: storage form is snake_case again, user keys untouched.
    let back = event_from_wire(wire).unwrap();
    assert_eq!(back.extra["usage_metadata"], json!({"prompt_token_count": 3}));
    assert_eq!(back.actions.state_delta["user_name"], 1);
}

#[test]
fn a_default_is_written_alike_as_text_and_serialized() {
    use stream::DefaultValue;
    for value in [DefaultValue::EmptyText, DefaultValue::EmptyMap, DefaultValue::NodeInfo, DefaultValue::Actions] {
        assert_eq!(serde_json::to_string(&value).unwrap(), value.text(), "{value:?}");
    }
}

#[test]
fn a_known_field_means_what_the_rules_say() {
    use stream::Mode;
    for &name in KNOWN {
        let (written, kind) = known(name).unwrap();
        assert_eq!(written, to_camel(name), "{name}");
        let by_list = if FREE_FORM.contains(&name) {
            Kind::FreeForm
        } else if MAP_OF_MODELS.contains(&name) {
            Kind::MapOfModels
        } else {
            Kind::Model
        };
        assert_eq!(kind, by_list, "{name}");
        for mode in [Mode::Event, Mode::Actions, Mode::Model, Mode::MapOfModels, Mode::FreeForm] {
            assert_eq!(mode.field(name), mode.field_by_rules(name), "{name} in {mode:?}");
        }
    }
    // Every name the rules name is known.
    for name in FREE_FORM.iter().chain(MAP_OF_MODELS) {
        assert!(KNOWN.contains(name), "{name}");
    }
    for mode in [Mode::Event, Mode::Actions] {
        for (name, _, _) in mode.defaults() {
            assert!(KNOWN.contains(name), "{name}");
        }
    }
}
