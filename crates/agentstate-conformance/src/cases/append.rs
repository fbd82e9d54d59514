use agentstate::{ConflictKind, Error, ErrorKind, Event, STALE_SESSION_MESSAGE};
use serde_json::{Value, json};

use super::{Svc, create, event, ids, load, obj, state_of};
use crate::unique;

fn json_of(e: &Event) -> Value {
    serde_json::to_value(e).unwrap()
}

/// The reference's matrix row: the delta is applied by scope, `temp:` keys reach the caller only,
/// `null` is a value, and the stored event equals the returned one.
pub(super) async fn append_applies_delta_by_scope(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u1", "s1", json!({"k": 1, "app:a": "A", "user:u": "U1", "temp:t": "T"})).await;
    let delta = json!({"temp:x": 1, "k": 2, "user:u": "U1b", "app:a": "A2", "none": null});
    let returned = svc.append_event(&mut s, event("inv1", delta)).await.unwrap();

    assert_eq!(state_of(&s), json!({"k": 2, "app:a": "A2", "user:u": "U1b", "temp:x": 1, "none": null}));
    assert_eq!(
        Value::Object(returned.actions.state_delta.clone()),
        json!({"k": 2, "user:u": "U1b", "app:a": "A2", "none": null})
    );
    assert_eq!(s.last_update_time(), returned.timestamp);
    assert_eq!(json_of(s.events().last().unwrap()), json_of(&returned));

    let loaded = load(&svc, &s).await;
    assert_eq!(state_of(&loaded), json!({"k": 2, "none": null, "app:a": "A2", "user:u": "U1b"}));
    assert_eq!(loaded.events().len(), 1);
    assert_eq!(json_of(&loaded.events()[0]), json_of(&returned), "stored event = returned event");
    assert_eq!(loaded.last_update_micros(), s.last_update_micros());
}

/// An append at a marker (a server holding no handle) is an append through a handle loaded at
/// that marker: stored and applied at the marker it saw, a retry answered as the stored event,
/// a marker that moved refused as stale with nothing written, a missing session not found.
pub(super) async fn append_at_a_marker_is_an_append_without_a_handle(svc: Svc) {
    let app = unique("app");
    let s = create(&svc, &app, "u", "s", json!({"k": 1})).await;
    let marker = s.last_update_micros();
    let first = event("inv", json!({"k": 2, "user:u": 1, "temp:t": 1}));
    let appended = svc.append_at(s.key(), marker, first.clone()).await.unwrap();
    assert!(!appended.duplicate);
    assert!(!appended.event.actions.state_delta.contains_key("temp:t"), "temp: keys are not stored");
    let loaded = load(&svc, &s).await;
    assert_eq!(state_of(&loaded), json!({"k": 2, "user:u": 1}));
    assert_eq!(loaded.last_update_micros(), agentstate::store::secs_to_micros(appended.event.timestamp).unwrap());

    // The same event again at the same marker: a retry, answered as stored, nothing changed.
    let retry = Event { id: appended.event.id.clone(), ..first };
    let again = svc.append_at(s.key(), marker, retry).await.unwrap();
    assert!(again.duplicate);
    assert_eq!(again.event, appended.event);
    // Another event at the old marker: stale, nothing written.
    let stale = svc.append_at(s.key(), marker, event("inv", json!({"k": 3}))).await.unwrap_err();
    assert!(matches!(stale, Error::Conflict { kind: ConflictKind::StaleSession }), "{stale}");
    assert_eq!(state_of(&load(&svc, &s).await), json!({"k": 2, "user:u": 1}));
    // A partial event is answered, never stored.
    let partial = svc.append_at(s.key(), loaded.last_update_micros(), event("inv", json!({})).partial(true));
    assert!(!partial.await.unwrap().duplicate);
    assert_eq!(load(&svc, &s).await.events().len(), 1);
    let missing = super::key(&app, "u", "missing");
    let error = svc.append_at(&missing, marker, event("inv", json!({}))).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound);
}

/// A partial event is returned untouched; nothing is stored or applied.
pub(super) async fn partial_events_are_not_stored(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({"k": 1})).await;
    let before = s.clone();
    let partial = event("inv", json!({"k": 9, "temp:p": 1})).partial(true);
    let returned = svc.append_event(&mut s, partial.clone()).await.unwrap();
    assert_eq!(returned, partial);
    assert_eq!(s, before);
    let loaded = load(&svc, &s).await;
    assert!(loaded.events().is_empty());
    assert_eq!(state_of(&loaded), json!({"k": 1}));
    // `partial: false` is an ordinary event.
    svc.append_event(&mut s, event("inv", json!({"k": 2})).partial(false)).await.unwrap();
    assert_eq!(load(&svc, &s).await.events().len(), 1);
}

/// `temp:` keys are visible on the caller's handle for the rest of the invocation, and absent
/// from storage, from the stored event and from the returned event.
pub(super) async fn temp_keys_live_only_on_the_handle(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let returned =
        svc.append_event(&mut s, event("inv", json!({"temp:scratch": {"a": 1}, "kept": true}))).await.unwrap();
    assert_eq!(s.state().get("temp:scratch"), Some(&json!({"a": 1})));
    assert!(!returned.actions.state_delta.contains_key("temp:scratch"));
    assert!(!s.events()[0].actions.state_delta.contains_key("temp:scratch"));
    // The handle keeps working, and keeps its temp keys, for the rest of the invocation.
    svc.append_event(&mut s, event("inv", json!({"temp:other": 2}))).await.unwrap();
    assert_eq!(state_of(&s), json!({"temp:scratch": {"a": 1}, "kept": true, "temp:other": 2}));

    let loaded = load(&svc, &s).await;
    assert_eq!(state_of(&loaded), json!({"kept": true}));
    for e in loaded.events() {
        assert!(e.actions.state_delta.keys().all(|k| !k.starts_with("temp:")), "{:?}", e.actions.state_delta);
    }
}

/// Appending through a handle older than storage fails with the reference's stale message,
/// leaves the handle as it was (temp keys included) and stores nothing; a reloaded handle works.
pub(super) async fn stale_handle_is_rejected_and_left_unchanged(svc: Svc) {
    let app = unique("app");
    let created = create(&svc, &app, "u", "s", json!({"w": "start"})).await;
    let mut first = load(&svc, &created).await;
    let mut second = load(&svc, &created).await;
    svc.append_event(&mut first, event("a", json!({"w": "a"}))).await.unwrap();

    let before = second.clone();
    let err = svc.append_event(&mut second, event("b", json!({"w": "b", "user:x": 1, "temp:t": 1}))).await.unwrap_err();
    assert!(matches!(err, Error::Conflict { kind: ConflictKind::StaleSession }), "{err:?}");
    assert_eq!(err.to_string(), STALE_SESSION_MESSAGE);
    assert_eq!(second, before, "a failed append leaves the handle unchanged");

    let stored = load(&svc, &created).await;
    assert_eq!(state_of(&stored), json!({"w": "a"}));
    assert_eq!(stored.events().len(), 1);

    // So does the handle returned by create, which is also a stale handle now.
    let mut original = created.clone();
    assert_eq!(svc.append_event(&mut original, event("c", json!({}))).await.unwrap_err().kind(), ErrorKind::Conflict);

    let mut fresh = load(&svc, &created).await;
    svc.append_event(&mut fresh, event("b", json!({"w": "b"}))).await.unwrap();
    assert_eq!(state_of(&load(&svc, &created).await), json!({"w": "b"}));
}

/// Re-appending an event already stored (a retry) is idempotent and returns the stored event,
/// even through a handle that is stale since the first attempt; a *different* event with a used
/// id is a `Conflict`, never a driver error.
pub(super) async fn duplicate_event_ids(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let mut stale = load(&svc, &s).await;
    let mut original = event("inv", json!({"n": 1, "user:c": 1, "temp:t": 1}));
    original.id = "dup".into();
    let stored = svc.append_event(&mut s, original.clone()).await.unwrap();

    let again = svc.append_event(&mut s, original.clone()).await.unwrap();
    assert_eq!(json_of(&again), json_of(&stored));
    let retried = svc.append_event(&mut stale, original.clone()).await.unwrap();
    assert_eq!(json_of(&retried), json_of(&stored));

    let mut different = event("inv", json!({"n": 2}));
    different.id = "dup".into();
    let err = svc.append_event(&mut s, different).await.unwrap_err();
    assert!(
        matches!(&err, Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id } } if event_id == "dup"),
        "{err:?}"
    );

    let loaded = load(&svc, &s).await;
    assert_eq!(ids(&loaded), ["dup"]);
    assert_eq!(state_of(&loaded), json!({"n": 1, "user:c": 1}));
    assert_eq!(s.events().len(), 1, "the handle holds the event once");
}

/// An event without an id gets one (a UUIDv4); the id is the same on the handle and in storage.
pub(super) async fn event_ids_are_assigned(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let a = svc.append_event(&mut s, event("inv", json!({}))).await.unwrap();
    let b = svc.append_event(&mut s, event("inv", json!({}))).await.unwrap();
    assert_eq!(a.id.len(), 36);
    assert_ne!(a.id, b.id);
    assert_eq!(ids(&s), [a.id.clone(), b.id.clone()]);
    assert_eq!(ids(&load(&svc, &s).await), [a.id, b.id]);
}

/// Stored timestamps are whole microseconds and strictly increasing in append order: an event
/// not later than the session's last update is stored 1 µs after it.
pub(super) async fn timestamps_strictly_increase(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let t0 = s.last_update_micros();
    let offsets_s = [1.0, 3.0, 2.0, -100.0, 3.0, 5.000_000_1];
    let mut returned = Vec::new();
    for (i, offset) in offsets_s.iter().enumerate() {
        let mut e = event("inv", json!({ "i": i })).at((t0 as f64 / 1e6) + offset);
        e.id = format!("e{i}");
        returned.push(svc.append_event(&mut s, e).await.unwrap());
    }
    let micros: Vec<i64> = returned.iter().map(|e| (e.timestamp * 1e6).round() as i64 - t0).collect();
    assert_eq!(micros, [1_000_000, 3_000_000, 3_000_001, 3_000_002, 3_000_003, 5_000_000]);
    assert_eq!(s.last_update_micros(), t0 + 5_000_000);

    let loaded = load(&svc, &s).await;
    assert_eq!(ids(&loaded), ["e0", "e1", "e2", "e3", "e4", "e5"], "storage order = append order");
    let stored: Vec<f64> = loaded.events().iter().map(|e| e.timestamp).collect();
    let sent: Vec<f64> = returned.iter().map(|e| e.timestamp).collect();
    assert_eq!(stored, sent);
    assert_eq!(loaded.last_update_micros(), t0 + 5_000_000);
}

/// Fields the model does not know survive a store-and-load round trip, at every level.
pub(super) async fn unknown_event_fields_round_trip(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let raw = json!({
        "content": {"parts": [{"text": "hi", "thought_signature": "c2ln"},
                              {"function_call": {"id": "c1", "name": "f", "args": {"snake_key": [1, {"x": null}]}}},
                              {"executable_code": {"code": "print(1)", "language": "PYTHON"}}],
                    "role": "model", "content_extra": 1},
        "partial": false, "turn_complete": true, "error_code": "E", "error_message": "m",
        "custom_metadata": {"a": {"b": [1, 2]}}, "usage_metadata": {"prompt_token_count": 3},
        "invocation_id": "inv", "author": "agent",
        "actions": {"state_delta": {"k": 1}, "artifact_delta": {"f.txt": 2}, "transfer_to_agent": "b",
                    "escalate": true, "skip_summarization": true, "requested_auth_configs": {}},
        "long_running_tool_ids": ["c1"], "branch": "root.child", "node_info": {"path": "root"},
        "id": "e1", "timestamp": (s.last_update_micros() + 10) as f64 / 1e6
    });
    let e: Event = serde_json::from_value(raw.clone()).unwrap();
    let returned = svc.append_event(&mut s, e).await.unwrap();
    assert_eq!(json_of(&returned), raw);
    assert_eq!(json_of(&load(&svc, &s).await.events()[0]), raw);
}

/// Malformed events are refused with `InvalidArgument` before anything is stored.
pub(super) async fn invalid_events_are_rejected_without_changes(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({"k": 0})).await;
    let before = s.clone();
    let bad = [
        event("inv", json!({"k": 1, "temp:t": 1})).at(f64::NAN),
        event("inv", json!({"k": 1})).at(f64::INFINITY),
        event(&"i".repeat(257), json!({"k": 1})),
        Event { id: "a\u{0}b".into(), ..event("inv", json!({"k": 1})) },
        Event { id: "x".repeat(129), ..event("inv", json!({"k": 1})) },
    ];
    for e in bad {
        let err = svc.append_event(&mut s, e.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{e:?}");
    }
    assert_eq!(s, before);
    let loaded = load(&svc, &s).await;
    assert!(loaded.events().is_empty());
    assert_eq!(loaded.state().all(), &obj(json!({"k": 0})));
}
