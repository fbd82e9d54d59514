//! History: the state at any event or time, per-event diffs, rewind and fork.

use agentstate::history::{ChangeKind, ForkSession, HistoryAt, live_events};
use agentstate::{ConflictKind, Error, ErrorKind, Event, Map, Session, Value};
use serde_json::json;

use super::{Svc, create, key, load, obj, reload, state_of};
use crate::unique;

/// How many events the history cases write: past two snapshot intervals.
const EVENTS: usize = 150;

/// Writes the history the cases read: the creation state, then [`EVENTS`] events that change
/// session, `user:` and `app:` keys, delete some and write `temp:` ones. Returns the session and
/// the expected history state after each event (index 0: at creation).
async fn written_history(svc: &Svc, app: &str) -> (Session, Vec<Value>, Vec<Event>) {
    let mut session =
        create(svc, app, "u", "h", json!({"k": 0, "keep": "x", "user:u": 0, "app:a": 0, "temp:t": 1})).await;
    let mut expected = vec![json!({"k": 0, "keep": "x", "user:u": 0, "app:a": 0})];
    let mut events = Vec::new();
    for i in 1..=EVENTS {
        let mut event =
            Event::new(format!("inv{}", i / 3)).author("agent").delta("k", json!(i)).delta("temp:t", json!(i));
        if i % 10 == 0 {
            event = event.delta("user:u", json!(i));
        }
        if i % 25 == 0 {
            event = event.delete("keep");
        }
        if i % 25 == 5 {
            event = event.delta("keep", json!(format!("x{i}")));
        }
        if i == 70 {
            event = event.delete("app:a");
        }
        if i % 7 == 0 {
            // A time to the nanosecond, as ADK-Rust gives them: history and forks keep it.
            let next = agentstate::Timestamp::from_micros(session.last_update_micros() + 1_000);
            event.set_time(agentstate::Timestamp::from_nanos(next.nanos() + 123));
        }
        let stored = svc.append_event(&mut session, event).await.unwrap();
        let mut state = obj(expected.last().cloned().unwrap_or_default());
        agentstate::history::apply(&mut state, &stored);
        expected.push(Value::Object(state));
        events.push(stored);
    }
    (session, expected, events)
}

fn state(value: Option<agentstate::history::StateAt>) -> Value {
    Value::Object(value.expect("the session exists").state)
}

/// The history state after any event, before any event and at any time equals the fold of the
/// creation state and the events up to there; asked again (with the snapshots earlier reads
/// kept), the same. Another session's write to a shared key is not in this history. An unknown
/// event or a time before creation is refused; a missing session is `None`.
pub(super) async fn state_at_any_event_or_time(svc: Svc) {
    let app = unique("app");
    let (session, expected, events) = written_history(&svc, &app).await;
    let mut other = create(&svc, &app, "u", "other", json!({})).await;
    svc.append_event(&mut other, Event::new("o").author("agent").delta("user:u", json!("other"))).await.unwrap();
    let key = session.key();
    for round in 0..2 {
        for i in [1, 2, 63, 64, 65, 70, 100, 128, 129, EVENTS] {
            let at = HistoryAt::AfterEvent(events[i - 1].id.clone());
            let got = svc.state_at(key, at).await.unwrap();
            assert_eq!(got.as_ref().and_then(|s| s.event_id.clone()), Some(events[i - 1].id.clone()));
            assert_eq!(state(got), expected[i], "after event {i}, round {round}");
            let before = svc.state_at(key, HistoryAt::BeforeEvent(events[i - 1].id.clone())).await.unwrap();
            assert_eq!(state(before), expected[i - 1], "before event {i}, round {round}");
        }
        let creation = svc.state_at(key, HistoryAt::Creation).await.unwrap();
        assert_eq!(creation.as_ref().map(|s| s.event_id.clone()), Some(None));
        assert_eq!(state(creation), expected[0]);
    }
    // By time: an event's own time includes it; a moment before, not.
    let at = events[99].timestamp;
    assert_eq!(state(svc.state_at(key, HistoryAt::Time(at)).await.unwrap()), expected[100]);
    assert_eq!(state(svc.state_at(key, HistoryAt::Time(at - 0.000_001)).await.unwrap()), expected[99]);
    let created = session.create_time();
    assert_eq!(state(svc.state_at(key, HistoryAt::Time(created)).await.unwrap()), expected[0]);
    assert_eq!(state(svc.state_at(key, HistoryAt::Time(f64::from(u32::MAX))).await.unwrap()), expected[EVENTS]);

    let unknown = svc.state_at(key, HistoryAt::AfterEvent("no-such-event".into())).await.unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidArgument, "{unknown}");
    let early = svc.state_at(key, HistoryAt::Time(created - 10.0)).await.unwrap_err();
    assert_eq!(early.kind(), ErrorKind::InvalidArgument, "{early}");
    assert!(svc.state_at(&super::key(&app, "u", "missing"), HistoryAt::Creation).await.unwrap().is_none());
}

/// Each event's diff lists the keys it set, changed (old and new value) or deleted, by key;
/// `temp:` keys and writes of an unchanged value are not changes.
pub(super) async fn event_diffs_name_each_change(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "d", json!({"k": 1, "same": 2, "gone": 3, "user:u": 4})).await;
    let event = Event::new("inv")
        .author("agent")
        .delta("k", json!(5))
        .delta("same", json!(2))
        .delta("new", json!({"a": 1}))
        .delta("user:u", json!(null))
        .delta("temp:t", json!(1))
        .delete("gone")
        .delete("never");
    let stored = svc.append_event(&mut s, event).await.unwrap();
    let diff = svc.event_diff(s.key(), &stored.id).await.unwrap().expect("the session exists");
    assert_eq!(
        (diff.event_id.as_str(), diff.invocation_id.as_str(), diff.author.as_str()),
        (stored.id.as_str(), "inv", "agent")
    );
    assert_eq!(diff.timestamp, stored.timestamp);
    let changes: Vec<(&str, ChangeKind, Option<Value>, Option<Value>)> =
        diff.changes.iter().map(|c| (c.key.as_str(), c.kind(), c.before.clone(), c.after.clone())).collect();
    assert_eq!(
        changes,
        [
            ("gone", ChangeKind::Deleted, Some(json!(3)), None),
            ("k", ChangeKind::Changed, Some(json!(1)), Some(json!(5))),
            ("new", ChangeKind::Set, None, Some(json!({"a": 1}))),
            ("user:u", ChangeKind::Changed, Some(json!(4)), Some(json!(null))),
        ]
    );
    let again = Event::new("inv2").author("agent").delta("gone", json!("back"));
    let back = svc.append_event(&mut s, again).await.unwrap();
    let diff = svc.event_diff(s.key(), &back.id).await.unwrap().unwrap();
    assert_eq!(diff.changes.iter().map(|c| c.kind()).collect::<Vec<_>>(), [ChangeKind::Set]);

    let unknown = svc.event_diff(s.key(), "no-such-event").await.unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidArgument);
    assert!(svc.event_diff(&super::key(&app, "u", "missing"), &back.id).await.unwrap().is_none());
}

/// A rewind appends one user event that restores the session's own keys to their values before
/// the invocation's first event (its creation state included) and deletes keys that did not
/// exist then; `user:` keys stay. The rewound events are no longer live. Unknown invocations,
/// stale handles and missing sessions are refused, writing nothing.
pub(super) async fn rewind_restores_session_keys(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "r", json!({"k": "init", "keep": 1})).await;
    let a1 = Event::new("A").author("agent").delta("k", json!("a")).delta("new1", json!(1));
    svc.append_event(&mut s, a1).await.unwrap();
    let b1 = Event::new("B").author("agent").delta("k", json!("b")).delta("user:u", json!(1)).delete("keep");
    svc.append_event(&mut s, b1).await.unwrap();
    svc.append_event(&mut s, Event::new("B").author("agent").delta("new2", json!(2))).await.unwrap();
    let stale = load(&svc, &s).await;

    let rewind = svc.rewind(&mut s, "B").await.unwrap();
    assert_eq!(rewind.author, "user");
    assert!(rewind.invocation_id.starts_with("e-"), "{}", rewind.invocation_id);
    assert_eq!(rewind.actions.rewind_before_invocation_id.as_deref(), Some("B"));
    assert_eq!(rewind.deleted_keys, ["new2"]);
    let expected = json!({"k": "a", "keep": 1, "new1": 1, "user:u": 1});
    assert_eq!(state_of(&s), expected, "the handle");
    let stored = load(&svc, &s).await;
    assert_eq!(state_of(&stored), expected, "storage");
    let live: Vec<&str> = stored.events().live().iter().map(|e| e.invocation_id.as_str()).collect();
    assert_eq!(live, ["A"]);

    // Before the first invocation: the creation state, new keys deleted.
    svc.rewind(&mut s, "A").await.unwrap();
    assert_eq!(state_of(&load(&svc, &s).await), json!({"k": "init", "keep": 1, "user:u": 1}));
    let stored = load(&svc, &s).await;
    assert!(live_events(stored.events().shared()).is_empty());

    let before = state_of(&load(&svc, &s).await);
    let unknown = svc.rewind(&mut s, "Z").await.unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidArgument);
    assert!(unknown.to_string().contains("Invocation ID not found: Z"), "{unknown}");
    let mut stale = stale;
    let conflict = svc.rewind(&mut stale, "A").await.unwrap_err();
    assert!(matches!(conflict, Error::Conflict { kind: ConflictKind::StaleSession }), "{conflict}");
    assert_eq!(state_of(&load(&svc, &s).await), before, "nothing written");
    svc.delete_session(s.key()).await.unwrap();
    let missing = svc.rewind(&mut s, "A").await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
}

/// A rewind to an event (ADK-Rust's rewind): the session's own keys as after that event, the
/// events after it no longer live (the history keeps them), said in ADK for Python's terms too
/// when the next event opens an invocation; rewinds of rewinds; unknown events refused.
pub(super) async fn rewind_to_an_event_keeps_what_came_before(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "r", json!({"k": "init"})).await;
    let mut ids = Vec::new();
    for (invocation, delta) in [("A", json!({"k": "a1"})), ("A", json!({"k": "a2", "x": 1})), ("B", json!({"k": "b"}))]
    {
        let mut e = Event::new(invocation).author("agent");
        e.actions.state_delta = obj(delta);
        ids.push(svc.append_event(&mut s, e).await.unwrap().id);
    }
    let live = |s: &Session| s.events().live().iter().map(|e| e.id.clone()).collect::<Vec<_>>();

    // Mid-invocation: only agentstate's marker can say it.
    let rewind = svc.rewind_to_event(&mut s, &ids[0]).await.unwrap();
    assert_eq!((rewind.author.as_str(), rewind.rewind_after_event_id.as_deref()), ("user", Some(ids[0].as_str())));
    assert_eq!(rewind.actions.rewind_before_invocation_id, None);
    assert_eq!(rewind.deleted_keys, ["x"]);
    let stored = load(&svc, &s).await;
    assert_eq!(state_of(&stored), json!({"k": "a1"}));
    assert_eq!(live(&stored), ids[..1]);
    assert_eq!(stored.events().len(), 4, "the history keeps what was rewound");

    // Rewinding the rewind: to the last event of A, which ADK for Python can say too.
    let again = svc.rewind_to_event(&mut s, &ids[1]).await.unwrap();
    assert_eq!(again.actions.rewind_before_invocation_id.as_deref(), Some("B"));
    let stored = load(&svc, &s).await;
    assert_eq!(state_of(&stored), json!({"k": "a2", "x": 1}));
    assert_eq!(live(&stored), ids[..2]);

    let before = state_of(&load(&svc, &s).await);
    let unknown = svc.rewind_to_event(&mut s, "no-such-event").await.unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidArgument, "{unknown}");
    assert_eq!(state_of(&load(&svc, &s).await), before, "nothing written");
}

/// A fork holds the source's events up to and including the chosen one (same ids, contents and
/// times), its own state as of that event, and reads the same history; the source is untouched
/// and `user:` state stays shared. Taken ids, unknown events and missing sources are refused.
pub(super) async fn fork_copies_history_up_to_an_event(svc: Svc) {
    let app = unique("app");
    let (source, expected, events) = written_history(&svc, &app).await;
    let before = load(&svc, &source).await;
    let at = &events[99];
    let request = |id: Option<&str>, event: &str| ForkSession {
        source: source.key().clone(),
        at_event_id: event.to_owned(),
        session_id: id.map(str::to_owned),
    };
    let fork = svc.fork_session(request(Some("h-fork"), &at.id)).await.unwrap();
    assert_eq!((fork.app_name(), fork.user_id(), fork.id()), (app.as_str(), "u", "h-fork"));
    let fork = reload(&svc, fork.key()).await;
    let json_of = |events: &[&Event]| events.iter().map(|e| serde_json::to_value(e).unwrap()).collect::<Vec<_>>();
    assert_eq!(
        json_of(&fork.events().iter().collect::<Vec<_>>()),
        json_of(&events[..100].iter().collect::<Vec<_>>()),
        "the same events, ids and times"
    );
    // Own keys as of the event; shared keys are the user's and app's now.
    let mut own: Map<String, Value> = obj(expected[100].clone());
    own.retain(|k, _| !k.contains(':'));
    let mut now = state_of(&fork).as_object().cloned().unwrap_or_default();
    now.retain(|k, _| !k.contains(':'));
    assert_eq!(Value::Object(now), Value::Object(own));
    assert_eq!(fork.state().get("user:u"), before.state().get("user:u"));
    assert_eq!(fork.last_update_micros(), agentstate::store::secs_to_micros(at.timestamp).unwrap());
    for i in [1, 64, 99, 100] {
        let got = svc.state_at(fork.key(), HistoryAt::AfterEvent(events[i - 1].id.clone())).await.unwrap();
        assert_eq!(state(got), expected[i], "the fork's history after event {i}");
    }
    assert_eq!(state(svc.state_at(fork.key(), HistoryAt::Creation).await.unwrap()), expected[0]);
    assert_eq!(load(&svc, &source).await, before, "the source is untouched");
    // The fork lives on its own.
    let mut fork = fork;
    svc.append_event(&mut fork, Event::new("f").author("agent").delta("k", json!("fork"))).await.unwrap();
    assert_eq!(load(&svc, &source).await.state().get("k"), before.state().get("k"));

    let generated = svc.fork_session(request(None, &events[0].id)).await.unwrap();
    assert!(!generated.id().is_empty() && generated.id() != source.id());
    assert_eq!(reload(&svc, generated.key()).await.events().len(), 1);
    let taken = svc.fork_session(request(Some("h-fork"), &at.id)).await.unwrap_err();
    assert_eq!(taken.kind(), ErrorKind::AlreadyExists);
    let unknown = svc.fork_session(request(Some("h-fork2"), "no-such-event")).await.unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::InvalidArgument);
    let missing = ForkSession { source: key(&app, "u", "missing"), at_event_id: at.id.clone(), session_id: None };
    assert_eq!(svc.fork_session(missing).await.unwrap_err().kind(), ErrorKind::NotFound);
    assert!(
        svc.get_session(&key(&app, "u", "h-fork2"), agentstate::GetSessionConfig::default()).await.unwrap().is_none()
    );
}
