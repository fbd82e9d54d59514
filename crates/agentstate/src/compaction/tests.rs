//! The compacted view's rules, one by one, on small histories.

use super::*;
use super::{FACTS_KEY, SEALED_KEY};
use crate::content::{Content, FunctionCall, FunctionResponse, Part};
use crate::store::StoredEvent;
use serde_json::json;

fn at(invocation: &str, time: f64) -> Event {
    Event { id: format!("e{time}"), timestamp: time, ..Event::new(invocation).author("helper") }
}

fn summary(invocation: &str, time: f64, start: f64, end: f64) -> Event {
    let mut e = at(invocation, time);
    e.actions.extra.insert(
        COMPACTION_KEY.into(),
        json!({"start_timestamp": start, "end_timestamp": end, "compacted_content": {"parts": [{"text": "s"}]}}),
    );
    e
}

fn call(invocation: &str, time: f64, id: &str, long_running: bool) -> Event {
    let call = FunctionCall { id: Some(id.into()), name: Some("t".into()), ..FunctionCall::default() };
    let part = Part { function_call: Some(call), ..Part::default() };
    let mut e = at(invocation, time).content(Content { parts: Some(vec![part]), ..Content::default() });
    if long_running {
        e.long_running_tool_ids = Some(vec![id.into()]);
    }
    e
}

fn response(invocation: &str, time: f64, id: &str, author: &str) -> Event {
    let response = FunctionResponse { id: Some(id.into()), name: Some("t".into()), ..FunctionResponse::default() };
    let part = Part { function_response: Some(response), ..Part::default() };
    at(invocation, time).author(author).content(Content { parts: Some(vec![part]), ..Content::default() })
}

fn viewed(events: &[Event], overlap: usize) -> Vec<f64> {
    let facts: Vec<Facts> = events.iter().map(Facts::of).collect();
    view(&facts, overlap).into_iter().map(|i| events[i].timestamp).collect()
}

/// Two events per invocation `i1`… at times 10·n and 10·n + 1.
fn turns(n: usize) -> Vec<Event> {
    (1..=n)
        .flat_map(|k| {
            let t = 10.0 * k as f64;
            [at(&format!("i{k}"), t).author("user"), at(&format!("i{k}"), t + 1.0)]
        })
        .collect()
}

#[test]
fn without_compaction_the_view_is_the_whole_history() {
    let events = turns(4);
    assert_eq!(viewed(&events, 1), events.iter().map(|e| e.timestamp).collect::<Vec<_>>());
}

#[test]
fn covered_events_are_left_out_but_the_next_window_starts_overlap_invocations_back() {
    let mut events = turns(4);
    // Invocations 1-2 summarised after invocation 2, 2-4 after invocation 4.
    events.insert(4, summary("i2", 21.5, 10.0, 21.0));
    events.push(summary("i4", 41.5, 20.0, 41.0));
    events.extend([at("i5", 50.0).author("user"), at("i5", 51.0)]);
    // Both summaries stay (neither contains the other); together they cover 10-41.
    // Invocation 5 is new: the next window starts one invocation earlier, at 4.
    assert_eq!(viewed(&events, 1), [21.5, 40.0, 41.0, 41.5, 50.0, 51.0]);
    assert_eq!(viewed(&events, 2), [21.5, 30.0, 31.0, 40.0, 41.0, 41.5, 50.0, 51.0]);
    // With no new invocation yet, the window starts `overlap` before the next one.
    events.truncate(events.len() - 2);
    assert_eq!(viewed(&events, 1), [21.5, 40.0, 41.0, 41.5]);
    assert_eq!(viewed(&events, 0), [21.5, 41.5]);
}

#[test]
fn a_subsumed_summary_is_left_out_unless_it_is_the_last() {
    let mut events = turns(3);
    events.push(summary("i3", 31.5, 20.0, 21.0));
    events.push(summary("i3", 31.6, 10.0, 31.0));
    events.push(summary("i3", 31.7, 11.0, 30.0));
    // 10-31 contains the others; the last (31.7) stays too, and the newest invocation
    // starts the next window.
    assert_eq!(viewed(&events, 0), [30.0, 31.0, 31.6, 31.7]);
}

#[test]
fn partly_overlapping_summaries_both_stay_and_cover_their_union() {
    let mut events = turns(4);
    events.push(summary("i4", 41.5, 10.0, 21.0));
    events.push(summary("i4", 41.6, 20.0, 31.0));
    assert_eq!(viewed(&events, 0), [40.0, 41.0, 41.5, 41.6]);
}

#[test]
fn a_pending_long_running_call_stays_until_the_user_answers_it() {
    let mut events = turns(1);
    events.push(call("i2", 20.0, "lr", true));
    events.push(response("i2", 20.5, "lr", "helper"));
    events.extend(turns(4).split_off(4));
    events.push(summary("i4", 41.5, 10.0, 41.0));
    assert_eq!(viewed(&events, 0), [20.0, 41.5]);
    events.push(response("i2", 50.0, "lr", "user"));
    // Answered: the call is shown again for the response (with its placeholder response),
    // and the resumed invocation is new, so the next window starts at it.
    assert_eq!(viewed(&events, 0), [20.0, 20.5, 30.0, 31.0, 40.0, 41.0, 41.5, 50.0]);
}

#[test]
fn a_covered_call_whose_response_is_shown_comes_back_with_its_siblings() {
    let mut double = call("i1", 10.0, "a", false);
    let second = FunctionCall { id: Some("b".into()), ..FunctionCall::default() };
    double
        .content
        .as_mut()
        .unwrap()
        .parts
        .as_mut()
        .unwrap()
        .push(Part { function_call: Some(second), ..Part::default() });
    let events = vec![
        double,
        response("i1", 11.0, "b", "helper"),
        at("i2", 20.0).author("user"),
        summary("i2", 20.5, 10.0, 20.0),
        response("i3", 30.0, "a", "user"),
    ];
    assert_eq!(viewed(&events, 0), [10.0, 11.0, 20.5, 30.0]);
}

#[test]
fn rewinds_keep_their_target_and_coverage_counts_live_events_only() {
    let mut events = turns(3);
    let mut rewind = at("i4", 35.0);
    rewind.actions.rewind_before_invocation_id = Some("i3".into());
    events.push(rewind);
    events.push(summary("i5", 36.0, 10.0, 21.0));
    events.extend([at("i5", 50.0).author("user"), at("i5", 51.0)]);
    // Invocation 3 is rewound: its first event and the rewind are kept, the rest not.
    assert_eq!(viewed(&events, 0), [30.0, 35.0, 36.0, 50.0, 51.0]);
}

#[test]
fn stored_text_gives_the_same_facts() {
    let mut events = turns(1);
    events.push(call("i2", 20.0, "lr", true));
    events.push(response("i2", 20.5, "lr", "user"));
    events.push(summary("i2", 21.0, 10.0, 20.5));
    let mut rewind = at("i3", 30.0);
    rewind.actions.rewind_before_invocation_id = Some("i2".into());
    rewind.extra.insert("isolation_scope".into(), json!("task"));
    events.push(rewind);
    let mut rolling = at("", 40.0);
    rolling.extra.insert("is_compacted".into(), json!(true));
    rolling.extra.insert("end_time".into(), json!(30_000.0));
    events.push(rolling);
    for event in &events {
        let stored = StoredEvent {
            id: event.id.clone(),
            invocation_id: event.invocation_id.clone(),
            timestamp_micros: event.time().micros(),
            data: Some(serde_json::to_string(event).unwrap()),
        };
        assert_eq!(Facts::of_stored(&stored), Facts::of(event));
    }
}

#[test]
fn the_newest_typescript_summary_stands_for_everything_before_its_end() {
    let rolling = |invocation: &str, time: f64, end_ms: f64| {
        let mut e = at(invocation, time);
        // As stored: the API's camelCase in snake_case.
        e.extra.insert("is_compacted".into(), json!(true));
        e.extra.insert("start_time".into(), json!(10_000.0));
        e.extra.insert("end_time".into(), json!(end_ms));
        e.extra.insert("compacted_content".into(), json!("summary"));
        e
    };
    let mut events = turns(3);
    events.insert(4, rolling("", 21.5, 11_000.0));
    events.push(rolling("", 31.5, 21_000.0));
    // The newest covers everything to 21 s: invocation 3 is left (and the window from the
    // app's overlap, which ADK for TypeScript reads past); the older summary is the last but one.
    assert_eq!(viewed(&events, 0), [30.0, 31.0, 31.5]);
}

#[test]
fn summaries_name_what_they_cover() {
    let mut events = turns(3);
    events.insert(4, summary("i2", 21.5, 10.0, 21.0));
    events.push(summary("i3", 31.5, 15.0, 20.5));
    let facts: Vec<Facts> = events.iter().map(Facts::of).collect();
    let found = summaries(&facts);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].position, found[0].kept, found[0].covers), (4, true, Some((0, 3))));
    assert_eq!((found[1].position, found[1].kept, found[1].covers), (7, false, Some((2, 2))));
}

#[test]
fn bad_ranges_are_refused() {
    let with = |compaction: Value| {
        let mut e = at("i", 1.0);
        e.actions.extra.insert(COMPACTION_KEY.into(), compaction);
        validate(&e)
    };
    let content = json!({"parts": []});
    assert!(with(json!({"start_timestamp": 1.0, "end_timestamp": 2.0, "compacted_content": content})).is_ok());
    assert!(with(json!({"startTimestamp": 1, "endTimestamp": 1, "compactedContent": content})).is_ok());
    assert!(with(Value::Null).is_ok());
    for bad in [
        json!({"start_timestamp": 2.0, "end_timestamp": 1.0, "compacted_content": content}),
        json!({"start_timestamp": "1", "end_timestamp": 2.0, "compacted_content": content}),
        json!({"end_timestamp": 2.0, "compacted_content": content}),
        json!({"start_timestamp": 1.0, "end_timestamp": 2.0}),
        json!("compacted"),
    ] {
        let error = with(bad.clone()).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument { .. }), "{bad}: {error}");
    }
}

#[test]
fn kept_facts_read_back_as_the_events_give_them() {
    let mut events = vec![at("i1", 1.0), call("i1", 2.0, "c1", true), response("i1", 3.0, "c1", "user")];
    events.push(summary("i2", 4.0, 1.0, 3.0));
    let mut rewind = at("i3", 5.0);
    rewind.actions.rewind_before_invocation_id = Some("i1".into());
    events.push(rewind);
    let facts: Vec<Facts> = events.iter().map(Facts::of).collect();
    // Kept in another order, as a store reads them: sorted back by stored microsecond.
    let kept: Vec<KeptFacts> =
        facts.iter().rev().map(|f| (f.id.clone(), f.invocation_id.clone(), f.micros, f.to_text())).collect();
    assert_eq!(from_kept(kept.clone(), facts.len()), Some(facts.clone()));
    // One missing, one unreadable, or none kept: the store reads the text instead.
    assert_eq!(from_kept(kept[1..].to_vec(), facts.len()), None);
    let mut broken = kept;
    broken[0].3 = String::new();
    assert_eq!(from_kept(broken, facts.len()), None);
    assert_eq!(from_kept(Vec::new(), 0), None);
    // Small: a plain event's facts are its time alone.
    assert!(facts[0].to_text().len() < 30, "{}", facts[0].to_text());
}

#[test]
fn events_that_saved_artifacts_stay_for_rewinds() {
    let mut events = turns(4);
    events[1].actions.artifact_delta.insert("notes.txt".into(), json!(0));
    events.insert(4, summary("s1", 21.5, 10.0, 21.0));
    events.push(summary("s2", 41.5, 20.0, 41.0));
    // The answer of invocation 1 saved an artifact: kept (with its invocation's first event),
    // though a summary covers it.
    assert_eq!(viewed(&events, 1), vec![10.0, 11.0, 21.5, 40.0, 41.0, 41.5]);
    let facts = Facts::of(&events[1]);
    let text = facts.to_text();
    assert_eq!(Facts::from_text(facts.id.clone(), facts.invocation_id.clone(), facts.micros, &text), Some(facts));
}

/// A sealed event (an encrypted store's) is known by the facts it carries, from its decoded form
/// and its stored text alike; one that carries none is opaque, and a history with one is viewed
/// whole.
#[test]
fn sealed_events_are_known_by_the_facts_they_carry() {
    let mut events = turns(3);
    events.insert(4, summary("s1", 21.5, 10.0, 21.0));
    let sealed = |event: &Event, carried: bool| {
        let mut stored = Event { timestamp: event.timestamp, ..Event::new(&event.invocation_id).author(&event.author) };
        stored.id = event.id.clone();
        stored.extra.insert(SEALED_KEY.into(), json!("$as1$k$sealed"));
        if carried {
            stored.extra.insert(FACTS_KEY.into(), json!(Facts::of(event).to_text()));
        }
        stored
    };
    let carrying: Vec<Event> = events.iter().map(|e| sealed(e, true)).collect();
    let plain: Vec<Facts> = events.iter().map(Facts::of).collect();
    let decoded: Vec<Facts> = carrying.iter().map(Facts::of).collect();
    assert_eq!(decoded, plain);
    let stored: Vec<Facts> = carrying
        .iter()
        .map(|e| {
            let text = serde_json::to_string(e).unwrap();
            Facts::of_stored(&StoredEvent {
                id: e.id.clone(),
                invocation_id: e.invocation_id.clone(),
                timestamp_micros: e.time().micros(),
                data: Some(text),
            })
        })
        .collect();
    assert_eq!(stored, plain);
    assert!(view(&plain, 0).len() < events.len());

    let mut opaque = carrying;
    opaque[1] = sealed(&events[1], false);
    let facts: Vec<Facts> = opaque.iter().map(Facts::of).collect();
    assert!(facts[1].opaque && !facts[0].opaque);
    let kept =
        Facts::from_text(facts[1].id.clone(), facts[1].invocation_id.clone(), facts[1].micros, &facts[1].to_text());
    assert!(kept.is_some_and(|k| k.opaque), "kept as opaque");
    assert_eq!(view(&facts, 0), (0..events.len()).collect::<Vec<_>>(), "the whole history");
}
