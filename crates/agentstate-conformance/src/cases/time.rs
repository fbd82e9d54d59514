use agentstate::wire::StoredWireSession;
use agentstate::{GetSessionConfig, ListEvents, Timestamp};
use serde_json::{Value, json};

use super::{Svc, create, event, ids, load};
use crate::unique;

/// Event times are kept as given, to the nanosecond (ADK-Rust's and protobuf's times), and ADK
/// for Python's float seconds come back bit for bit, through decoded reads, stored reads and
/// pages; bounds on times are exact at the boundary. A time is moved only when the microsecond
/// nearest it is not later than the session's last event's: then it goes 1 µs past that one.
pub(super) async fn event_times_are_kept_to_the_nanosecond(svc: Svc) {
    let mut s = create(&svc, &unique("app"), "u", "s", json!({})).await;
    let base = Timestamp::from_micros(s.last_update_micros() + 10_000_000).nanos();
    // Past the middle of its microsecond: stored at the next one.
    let fine = Timestamp::from_nanos(base + 327_913_861);
    // The float `time.time()` gave: 238 ns coarse, a whole microsecond it is not.
    let float = Timestamp::from_nanos(base + 2_000_000_000 + 281_155_500).secs();
    let next = Timestamp::from_nanos(base + 3_000_000_001);

    let mut e0 = event("inv", json!({"i": 0}));
    e0.set_time(fine);
    e0.id = "e0".into();
    let e1 = agentstate::Event { id: "e1".into(), ..event("inv", json!({"i": 1})).at(float) };
    let mut e2 = event("inv", json!({"i": 2}));
    e2.set_time(next);
    e2.id = "e2".into();
    let mut returned = Vec::new();
    for e in [e0, e1, e2] {
        returned.push(svc.append_event(&mut s, e).await.unwrap());
    }
    assert_eq!(returned[0].time(), fine, "the append answers the time as given");
    assert_eq!(returned[1].timestamp.to_bits(), float.to_bits());
    assert_eq!(s.last_update_micros(), next.micros(), "the marker is the microsecond of the last event");

    let times =
        |events: &mut dyn Iterator<Item = &agentstate::Event>| -> Vec<Timestamp> { events.map(|e| e.time()).collect() };
    let expected = vec![fine, returned[1].time(), next];
    let loaded = load(&svc, &s).await;
    assert_eq!(times(&mut loaded.events().iter()), expected);
    assert_eq!(loaded.events()[1].timestamp.to_bits(), float.to_bits(), "float seconds come back bit for bit");
    // What an API answers from the stored text: the float nearest each time, no metadata.
    let stored = svc.get_session_stored(s.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    let written: Value = serde_json::from_slice(&StoredWireSession(&stored).to_vec().unwrap()).unwrap();
    for (shown, time) in written["events"].as_array().unwrap().iter().zip(&expected) {
        assert_eq!(shown["timestamp"].as_f64().map(f64::to_bits), Some(time.secs().to_bits()), "{shown}");
        assert!(shown.get("customMetadata").is_none(), "the exact time is not shown: {shown}");
    }
    let page = svc.list_events(s.key(), ListEvents::default()).await.unwrap().unwrap();
    assert_eq!(times(&mut page.events.iter()), expected);

    // Bounds are exact: a nanosecond either side of an event's time decides.
    let after = |t: Timestamp| GetSessionConfig {
        num_recent_events: None,
        after_timestamp: Some(t),
        ..GetSessionConfig::default()
    };
    let just_after = Timestamp::from_nanos(fine.nanos() + 1);
    assert_eq!(ids(&svc.get_session(s.key(), after(fine)).await.unwrap().unwrap()), ["e0", "e1", "e2"]);
    assert_eq!(ids(&svc.get_session(s.key(), after(just_after)).await.unwrap().unwrap()), ["e1", "e2"]);
    let stored = svc.get_session_stored(s.key(), after(just_after)).await.unwrap().unwrap();
    assert_eq!(stored.event_count(), 2, "stored reads drop the event before the bound too");
    let page_ids = |page: agentstate::EventPage| page.events.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    let from = ListEvents { page_size: 1, after_timestamp: Some(just_after), ..ListEvents::default() };
    let first = svc.list_events(s.key(), from.clone()).await.unwrap().unwrap();
    assert_eq!(page_ids(first.clone()), ["e1"]);
    let rest = ListEvents { page_token: first.next_page_token, ..from };
    assert_eq!(page_ids(svc.list_events(s.key(), rest).await.unwrap().unwrap()), ["e2"]);
    let until = |t: Timestamp| ListEvents {
        page_size: 2,
        until_timestamp: Some(t),
        newest_first: true,
        ..ListEvents::default()
    };
    let before_next = Timestamp::from_nanos(next.nanos() - 1);
    assert_eq!(page_ids(svc.list_events(s.key(), until(next)).await.unwrap().unwrap()), ["e2", "e1"]);
    let backwards = svc.list_events(s.key(), until(before_next)).await.unwrap().unwrap();
    assert_eq!(page_ids(backwards.clone()), ["e1", "e0"]);
    assert!(backwards.next_page_token.is_none(), "nothing is older than e0");
    let one = ListEvents { page_size: 1, ..until(before_next) };
    let newest = svc.list_events(s.key(), one.clone()).await.unwrap().unwrap();
    assert_eq!(page_ids(newest.clone()), ["e1"]);
    let older = ListEvents { page_token: newest.next_page_token, ..one };
    assert_eq!(page_ids(svc.list_events(s.key(), older).await.unwrap().unwrap()), ["e0"]);
    let forwards = ListEvents { until_timestamp: Some(before_next), ..ListEvents::default() };
    assert_eq!(page_ids(svc.list_events(s.key(), forwards).await.unwrap().unwrap()), ["e0", "e1"]);

    // Stored at no later microsecond than the last event: moved 1 µs past it, as a whole
    // microsecond, and the answer says so.
    let mut same_micro = event("inv", json!({"i": 3}));
    same_micro.set_time(Timestamp::from_nanos(next.nanos() + 400));
    let moved = svc.append_event(&mut s, same_micro).await.unwrap();
    assert_eq!(moved.time(), Timestamp::from_micros(next.micros() + 1));
    assert_eq!(load(&svc, &s).await.events().last().unwrap().time(), moved.time());
}

/// An event that asks to keep its time ([`agentstate::Event::keep_given_time`], what Google's
/// API asks for every event, as the managed service keeps every event's time as sent) still takes
/// its place in the history, after the session's last event; its given time comes back through
/// every read, from the year 0001 (Go's zero time) on. An event whose time was not moved keeps
/// nothing beside it.
pub(super) async fn given_times_outlive_placement(svc: Svc) {
    let mut s = create(&svc, &unique("app"), "u", "s", json!({})).await;
    let created = s.last_update_micros();
    let zero = Timestamp::parse_rfc3339("0001-01-01T00:00:00Z").unwrap();
    let last_year = Timestamp::from_micros(created - 365 * 86_400 * 1_000_000 + 123_456).plus_nanos(789);
    let later = Timestamp::from_micros(created + 10_000_000);
    let mut sent = Vec::new();
    for (i, time) in [zero, last_year, later].into_iter().enumerate() {
        let mut e = event("inv", json!({"i": i}));
        e.set_time(time);
        e.keep_given_time();
        let stored = svc.append_event(&mut s, e).await.unwrap();
        assert_eq!(stored.given_time(), time, "the append answers the given time");
        sent.push(time);
    }
    let loaded = load(&svc, &s).await;
    let events = loaded.events();
    assert_eq!(events.iter().map(|e| e.given_time()).collect::<Vec<_>>(), sent, "given times come back");
    assert_eq!(events[0].time(), Timestamp::from_micros(created + 1), "placed after the session's creation");
    assert_eq!(events[1].time(), Timestamp::from_micros(created + 2));
    assert_eq!(events[2].time(), later, "a later time is kept where it is");
    assert!(events[2].extra.get("custom_metadata").is_none(), "nothing is kept beside a time not moved");
    let page = svc.list_events(s.key(), ListEvents::default()).await.unwrap().unwrap();
    assert_eq!(page.events.iter().map(|e| e.given_time()).collect::<Vec<_>>(), sent);
    // A retry of a moved event is the same event.
    let mut again = event("inv", json!({"i": 1}));
    again.set_time(last_year);
    assert!(events[1].same_as_retry(&agentstate::Event { id: events[1].id.clone(), ..again }));
}
