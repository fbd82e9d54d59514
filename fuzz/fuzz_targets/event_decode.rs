//! Event decoding, in both forms: the storage form (the reference's snake_case JSON) and the HTTP
//! form (camelCase, unknown fields kept). Whatever decodes, encodes, and decodes again to the
//! same event and the same bytes. (The HTTP form shows the reference's default fields, such as
//! `nodeInfo`, which then come back as fields of the event: so it is stable from the first
//! encoding on.)
#![no_main]

use agentstate::wire::{event_from_wire, event_to_wire};
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
