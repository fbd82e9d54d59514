//! Event decoding, in both forms: the storage form (the reference's snake_case JSON) and the HTTP
//! form (camelCase, unknown fields kept). Whatever decodes, encodes, and decodes again to the
//! same event and the same bytes. (The HTTP form shows the reference's default fields, such as
//! `nodeInfo`, which then come back as fields of the event: so it is stable from the first
//! encoding on.) And the stored text written straight to the HTTP form (what a GET does on the
//! SQL stores): refused when it is not JSON, and otherwise only when no event can be read from it;
//! always JSON when written; and, where the text decodes as an event, the JSON of that event (up to
//! a stored `null` for a field the model leaves out, which the writer keeps).
#![no_main]

use agentstate::store::StoredEvent;
use agentstate::wire::{event_from_wire, event_to_wire, to_camel, write_stored_event};
use agentstate::{Event, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Storage form.
    if let Ok(event) = serde_json::from_slice::<Event>(data) {
        let once = serde_json::to_vec(&event).expect("an event encodes");
        let again: Event = serde_json::from_slice(&once).expect("an encoded event decodes");
        assert_eq!(again, event, "storage form: decode → encode → decode changed the event");
        assert_eq!(serde_json::to_vec(&again).expect("an event encodes"), once, "storage form: unstable bytes");
    }
    // Stored text written straight to the HTTP form.
    if let Ok(text) = std::str::from_utf8(data) {
        let stored = StoredEvent {
            id: "row".into(),
            invocation_id: "inv".into(),
            timestamp_micros: 1_700_000_000_000_000,
            data: Some(text.to_owned()),
        };
        let mut out = Vec::new();
        let written = write_stored_event(&stored, &mut out);
        match serde_json::from_str::<Value>(text) {
            // serde_json refuses numbers it cannot hold; copied as text, they are still JSON.
            Err(e) if e.to_string().contains("out of range") => {}
            Err(_) => assert!(written.is_err(), "not JSON, yet written"),
            // A JSON object is written unless no event could be read from it either (a
            // timestamp that is not a number).
            Ok(Value::Object(_)) if written.is_err() => {
                assert!(Event::from_stored_json(text).is_err(), "an event's text refused: {written:?}");
            }
            Ok(parsed @ Value::Object(_)) => {
                let shown: Value = serde_json::from_slice(&out).expect("what is written is JSON");
                // Two stored names that one API name stands for (`a_b` and `aB`) leave the answer
                // with that name twice, as the stored text has it; which one a reader keeps is
                // not the writer's to choose, so such texts are only held to being JSON.
                if let Ok((mut event, own_time)) = Event::from_stored_json(text)
                    && !names_collide(&parsed)
                {
                    event.id = stored.id.clone();
                    event.invocation_id = stored.invocation_id.clone();
                    if !own_time {
                        event.timestamp = 1_700_000_000.0;
                    }
                    // The same value; a stored `null` may stand where the model leaves a field out.
                    assert_eq!(
                        without_nulls(shown),
                        without_nulls(event_to_wire(&event)),
                        "the stored text shows another event"
                    );
                }
            }
            Ok(_) => assert!(written.is_err(), "not an object, yet written"),
        }
    }
    // HTTP form.
    if let Ok(value) = serde_json::from_slice::<Value>(data)
        && let Ok(event) = event_from_wire(value)
    {
        let once = event_to_wire(&event);
        let again = event_from_wire(once.clone()).expect("an encoded event decodes");
        assert_eq!(again.id, event.id, "HTTP form: the id changed");
        assert_eq!(again.actions.state_delta, event.actions.state_delta, "HTTP form: the delta changed");
        assert_eq!(again.content, event.content, "HTTP form: the content changed");
        let twice = event_to_wire(&again);
        assert_eq!(twice, once, "HTTP form: unstable encoding");
        let third = event_from_wire(twice).expect("an encoded event decodes");
        assert_eq!(third, again, "HTTP form: decode → encode → decode changed the event");
    }
});

/// `value` without the object entries whose value is `null`, at every depth.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, without_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// Whether two names of one object in `value`, at any depth, are written as one (`a_b`, `aB`).
fn names_collide(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut written: Vec<String> = map.keys().map(|k| to_camel(k)).collect();
            written.sort_unstable();
            written.windows(2).any(|pair| pair[0] == pair[1]) || map.values().any(names_collide)
        }
        Value::Array(items) => items.iter().any(names_collide),
        _ => false,
    }
}
