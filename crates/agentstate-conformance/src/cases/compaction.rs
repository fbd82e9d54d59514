use agentstate::compaction::COMPACTION_KEY;
use agentstate::{Content, Event, GetSessionConfig, Part, Session, Timestamp};
use serde_json::{Value, json};

use super::{Svc, create, event, ids, reload};
use crate::unique;

/// An event of `invocation` at `time`, with id `id`.
fn at(id: &str, invocation: &str, time: f64) -> Event {
    let mut e = event(invocation, json!({})).at(time);
    e.id = id.into();
    e
}

/// A summary of `[start, end]`, as ADK for Python writes it.
fn summary(id: &str, time: f64, start: f64, end: f64) -> Event {
    let mut e = at(id, &format!("summary-{id}"), time);
    let compaction = json!({"start_timestamp": start, "end_timestamp": end,
                            "compacted_content": {"role": "model", "parts": [{"text": id}]}});
    e.actions.extra.insert(COMPACTION_KEY.into(), compaction);
    e
}

fn with_part(mut e: Event, part: Value) -> Event {
    let part: Part = serde_json::from_value(part).unwrap();
    e.content = Some(Content { parts: Some(vec![part]), role: Some("model".into()), ..Content::default() });
    e
}

async fn view(svc: &Svc, s: &Session, config: GetSessionConfig) -> Vec<String> {
    let loaded = svc.get_session(s.key(), config).await.unwrap().unwrap();
    let whole = reload(svc, s.key()).await;
    assert_eq!(loaded.state(), whole.state(), "a view never changes the state");
    assert_eq!(loaded.last_update_micros(), whole.last_update_micros());
    let stored = svc.get_session_stored(s.key(), config).await.unwrap().unwrap();
    let stored_ids: Vec<String> = match &stored.stored_events {
        Some(events) => events.iter().map(|e| e.id.clone()).collect(),
        None => ids(&stored.session),
    };
    assert_eq!(stored_ids, ids(&loaded), "stored and decoded reads answer the same view");
    if config.num_recent_events.is_none() && config.after_timestamp.is_none() {
        assert_eq!(store_view(svc, s, config).await.unwrap_or_else(|| ids(&loaded)), ids(&loaded));
    }
    ids(&loaded)
}

/// The view as the store answers it, when it answers views itself (`None` when it answered every
/// event for the service to narrow).
async fn store_view(svc: &Svc, s: &Session, config: GetSessionConfig) -> Option<Vec<String>> {
    use agentstate::store::{EventWindow, SessionRead};

    let read = SessionRead { view: config.view, ..SessionRead::decoded(EventWindow::ALL, svc.now_micros()) };
    let loaded = svc.store().get(s.key(), &read).await.unwrap().unwrap();
    (loaded.view == config.view).then(|| ids(&loaded.session))
}

/// The compacted view answers what ADK for Python reads of a compacted history: the summaries
/// no other contains, what they do not cover, the next summary's window `overlap` invocations
/// back, a covered long-running call until the user answers it; ranges that nest, overlap and
/// touch; `num_recent_events` and `after_timestamp` applied to the view; the whole history
/// unchanged.
pub(super) async fn compacted_views_answer_what_adk_reads(svc: Svc) {
    let (mut s, t) = summarised(&svc).await;
    let whole: Vec<String> = ids(&reload(&svc, s.key()).await);
    assert_eq!(whole.len(), 11);

    // s1 and s3 cover t+1..t+6; s2 is inside s1, s3 is the last summary. Invocation 4 is new:
    // with overlap 1 the next window starts at invocation 3.
    let compacted = GetSessionConfig::compacted;
    assert_eq!(view(&svc, &s, compacted(0)).await, ["b1", "s1", "s3", "d1", "d2"]);
    assert_eq!(view(&svc, &s, compacted(1)).await, ["b1", "s1", "c1", "c2", "s3", "d1", "d2"]);
    let windowed = GetSessionConfig { num_recent_events: Some(3), ..compacted(0) };
    assert_eq!(view(&svc, &s, windowed).await, ["s3", "d1", "d2"]);
    let after = GetSessionConfig { after_timestamp: Timestamp::from_secs(t + 4.5), ..compacted(0) };
    assert_eq!(view(&svc, &s, after).await, ["s1", "s3", "d1", "d2"]);
    assert_eq!(view(&svc, &s, GetSessionConfig::default()).await, whole, "the whole history by default");

    // The user answers the long-running call: it is shown for its response, and its invocation,
    // new again, starts the next window.
    let answer = with_part(at("e1", "i2", t + 9.0), json!({"function_response": {"id": "lr", "name": "ticket"}}));
    svc.append_event(&mut s, answer.author("user")).await.unwrap();
    assert_eq!(
        view(&svc, &s, compacted(0)).await,
        ["b1", "b2", "s1", "c1", "c2", "s3", "d1", "d2", "e1"],
        "everything from the resumed invocation on"
    );
}

/// The store answers the compacted view itself (from what it keeps of each event, reading only
/// the events the view keeps), equal to the view of the whole history: for the stores that do,
/// so that a long conversation's view costs what it answers.
pub async fn check_store_answers_views(svc: Svc) {
    let (s, _) = summarised(&svc).await;
    for overlap in [0, 1, 2] {
        let config = GetSessionConfig::compacted(overlap);
        let answered = store_view(&svc, &s, config).await;
        assert!(answered.is_some(), "{}: the store read every event for the view", svc.store().system());
        assert_eq!(answered, Some(view(&svc, &s, config).await));
    }
}

/// A fork's view is the view of its history; a rewind's view keeps the rewind and the first
/// event of the invocation it rewinds, and counts only what survives it.
pub(super) async fn compacted_views_of_forks_and_rewinds(svc: Svc) {
    use agentstate::history::ForkSession;

    let (mut s, _) = summarised(&svc).await;
    let fork = ForkSession { source: s.key().clone(), at_event_id: "d1".into(), session_id: Some("fork".into()) };
    let fork = svc.fork_session(fork).await.unwrap();
    assert_eq!(view(&svc, &fork, GetSessionConfig::compacted(0)).await, ["b1", "s1", "s3", "d1"]);

    let rewind = svc.rewind(&mut s, "i4").await.unwrap();
    let r = rewind.id.as_str();
    assert_eq!(view(&svc, &s, GetSessionConfig::compacted(0)).await, ["b1", "s1", "s3", "d1", r]);
    assert_eq!(view(&svc, &s, GetSessionConfig::compacted(1)).await, ["b1", "s1", "c1", "c2", "s3", "d1", r]);
}

/// Retention that drops summarised events and the summary of them leaves a view of what is
/// kept; an expired session has no view.
pub(super) async fn compacted_views_meet_retention_and_expiry(svc: Svc) {
    use agentstate::{CreateSession, Retention};
    use std::time::Duration;

    let (s, _) = summarised(&svc).await;
    let keep_6 = Retention { keep_last: Some(6), max_age: None };
    assert_eq!(svc.apply_retention(s.key(), keep_6).await.unwrap(), 5, "a1, a2, b1, b2 and s1 go");
    // s2 (t+2..t+3) and s3 (t+4..t+6) cover c1 and c2; invocation 4 is new.
    assert_eq!(view(&svc, &s, GetSessionConfig::compacted(0)).await, ["s2", "s3", "d1", "d2"]);
    assert_eq!(view(&svc, &s, GetSessionConfig::compacted(1)).await, ["c1", "c2", "s2", "s3", "d1", "d2"]);

    let request = CreateSession::new(s.app_name(), "u").id("brief").ttl(Duration::from_secs(60));
    let mut brief = svc.create_session(request).await.unwrap();
    let t = brief.last_update_time();
    svc.append_event(&mut brief, at("x1", "i1", t + 0.5)).await.unwrap();
    svc.append_event(&mut brief, summary("x2", t + 0.6, t + 0.5, t + 0.5)).await.unwrap();
    assert_eq!(view(&svc, &brief, GetSessionConfig::compacted(0)).await, ["x2"]);
    // Past any time to live, the stacks' refresh policy included.
    svc.clock().advance(Duration::from_secs(10 * 365 * 86_400));
    assert!(svc.get_session(brief.key(), GetSessionConfig::compacted(0)).await.unwrap().is_none());
    assert!(svc.get_session_stored(brief.key(), GetSessionConfig::compacted(0)).await.unwrap().is_none());
}

/// A session of four invocations, two of them summarised twice over and a nested summary
/// between, and a long-running call in the second no user has answered; `t` is its time zero.
async fn summarised(svc: &Svc) -> (Session, f64) {
    let mut s = create(svc, &unique("app"), "u", "s", json!({})).await;
    let t = s.last_update_time().floor() + 10.0;
    let events = [
        at("a1", "i1", t + 1.0),
        at("a2", "i1", t + 2.0),
        with_part(at("b1", "i2", t + 3.0), json!({"function_call": {"id": "lr", "name": "ticket", "args": {}}})),
        with_part(
            at("b2", "i2", t + 4.0),
            json!({"function_response": {"id": "lr", "name": "ticket", "response": {}}}),
        ),
        summary("s1", t + 4.5, t + 1.0, t + 4.0),
        at("c1", "i3", t + 5.0),
        at("c2", "i3", t + 6.0),
        // Nested in s1: left out. Touching s1's end: their union is one range.
        summary("s2", t + 6.5, t + 2.0, t + 3.0),
        summary("s3", t + 6.6, t + 4.0, t + 6.0),
        at("d1", "i4", t + 7.0),
        at("d2", "i4", t + 8.0),
    ];
    for mut e in events {
        if e.id == "b1" {
            e.long_running_tool_ids = Some(vec!["lr".into()]);
        }
        svc.append_event(&mut s, e).await.unwrap();
    }
    (s, t)
}

/// A compaction whose range is inverted, not made of numbers or without its content is refused
/// and writes nothing.
pub(super) async fn bad_compactions_are_refused_and_write_nothing(svc: Svc) {
    let mut s = create(&svc, &unique("app"), "u", "s", json!({})).await;
    let before = reload(&svc, s.key()).await;
    for bad in [
        json!({"start_timestamp": 2.0, "end_timestamp": 1.0, "compacted_content": {"parts": []}}),
        json!({"start_timestamp": "yesterday", "end_timestamp": 1.0, "compacted_content": {"parts": []}}),
        json!({"start_timestamp": 1.0, "end_timestamp": 2.0}),
        json!([1.0, 2.0]),
    ] {
        let mut e = event("i", json!({"k": 1}));
        e.actions.extra.insert(COMPACTION_KEY.into(), bad.clone());
        let error = svc.append_event(&mut s, e).await.unwrap_err();
        assert_eq!(error.kind(), agentstate::ErrorKind::InvalidArgument, "{bad}: {error}");
    }
    let after = reload(&svc, s.key()).await;
    assert_eq!((after.events().len(), after.state()), (before.events().len(), before.state()));
}

/// A summary written by a client that reads times to the millisecond (its bounds rounded) is
/// matched against the times the events carry, as ADK matches it over them: bounds rounded
/// outwards cover what they meant; a start rounded past its first event's time leaves that
/// event uncovered, and shown, as ADK reading these times shows it.
pub(super) async fn compacted_views_of_ranges_with_rounded_bounds(svc: Svc) {
    let mut s = create(&svc, &unique("app"), "u", "s", json!({})).await;
    let t = s.last_update_time().floor() + 10.0;
    for e in [
        at("a1", "i1", t + 1.0004),
        at("a2", "i1", t + 1.5006),
        at("b1", "i2", t + 2.0006),
        at("b2", "i2", t + 2.5004),
        // a1..a2 in milliseconds, rounded outwards; b1..b2 with the start rounded to the
        // nearest, past b1's time: b1 falls out of it.
        summary("x", t + 2.6, t + 1.0, t + 1.501),
        summary("y", t + 2.7, t + 2.001, t + 2.501),
        at("c1", "i3", t + 3.0),
    ] {
        svc.append_event(&mut s, e).await.unwrap();
    }
    let shown = view(&svc, &s, GetSessionConfig::compacted(0)).await;
    assert_eq!(shown, ["b1", "x", "y", "c1"], "a1 and a2 covered by x; b1 is not covered by y, b2 is");
}
