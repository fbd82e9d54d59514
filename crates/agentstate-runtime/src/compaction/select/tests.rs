use std::sync::Arc;

use agentstate::{Content, Event, FunctionCall, FunctionResponse, Part};
use serde_json::json;

use super::*;

fn at(invocation: &str, author: &str, time: f64, text: &str) -> Arc<Event> {
    let mut event = Event::new(invocation)
        .author(author)
        .content(Content::text(if author == "user" { "user" } else { "model" }, text));
    event.timestamp = time;
    Arc::new(event)
}

fn summary(start: f64, end: f64, time: f64, text: &str) -> Arc<Event> {
    let mut event = Event::new(Event::new_id()).author("user");
    event.timestamp = time;
    event.actions.extra.insert(
        "compaction".into(),
        json!({"start_timestamp": start, "end_timestamp": end, "compacted_content": {"parts": [{"text": text}], "role": "model"}}),
    );
    Arc::new(event)
}

fn call(invocation: &str, time: f64, id: &str) -> Arc<Event> {
    let mut event = Event::new(invocation).author("agent");
    event.timestamp = time;
    let call = FunctionCall { id: Some(id.into()), name: Some("lookup".into()), ..FunctionCall::default() };
    event.content = Some(Content {
        parts: Some(vec![Part { function_call: Some(call), ..Part::default() }]),
        role: Some("model".into()),
        ..Content::default()
    });
    Arc::new(event)
}

fn response(invocation: &str, time: f64, id: &str) -> Arc<Event> {
    let mut event = Event::new(invocation).author("agent");
    event.timestamp = time;
    let response = FunctionResponse { id: Some(id.into()), name: Some("lookup".into()), ..FunctionResponse::default() };
    event.content = Some(Content {
        parts: Some(vec![Part { function_response: Some(response), ..Part::default() }]),
        role: Some("user".into()),
        ..Content::default()
    });
    Arc::new(event)
}

fn texts(events: &[Arc<Event>]) -> Vec<String> {
    events.iter().map(|e| e.text()).collect()
}

/// Two invocations of two events each, per number given.
fn turns(numbers: std::ops::RangeInclusive<u32>) -> Vec<Arc<Event>> {
    numbers
        .flat_map(|n| {
            let t = f64::from(n) * 10.0;
            [
                at(&format!("i{n}"), "user", t, &format!("q{n}")),
                at(&format!("i{n}"), "agent", t + 1.0, &format!("a{n}")),
            ]
        })
        .collect()
}

#[test]
fn a_summary_stands_at_its_end_for_what_it_covers() {
    let mut events = turns(1..=3);
    events.push(summary(10.0, 21.0, 22.0, "s12"));
    let shown = apply_summaries(&events, "agent");
    assert_eq!(texts(&shown), ["s12", "q3", "a3"]);
    assert_eq!(shown[0].author, "agent");
    assert!((shown[0].timestamp - 21.0).abs() < f64::EPSILON);
    // A wider summary subsumes the narrower; without an agent the summary is the model's.
    events.push(summary(10.0, 31.0, 32.0, "s123"));
    let shown = apply_summaries(&events, "");
    assert_eq!(texts(&shown), ["s123"]);
    assert_eq!(shown[0].author, "model");
}

#[test]
fn the_sliding_window_waits_for_its_interval_and_overlaps() {
    // interval 2, overlap 1: invocations 1 and 2, then nothing at 3, then 2 to 4.
    let events = turns(1..=1);
    assert!(sliding_window(&events, 2, 1).is_empty());
    let mut events = turns(1..=2);
    assert_eq!(texts(&sliding_window(&events, 2, 1)), ["q1", "a1", "q2", "a2"]);
    events.push(summary(10.0, 21.0, 22.0, "s12"));
    events.extend(turns(3..=3));
    assert!(sliding_window(&events, 2, 1).is_empty());
    events.extend(turns(4..=4));
    assert_eq!(texts(&sliding_window(&events, 2, 1)), ["q2", "a2", "q3", "a3", "q4", "a4"]);
}

#[test]
fn a_window_ends_before_an_open_call_unless_nothing_can_answer_it() {
    let events =
        vec![at("i1", "user", 1.0, "q1"), call("i1", 2.0, "c1"), response("i1", 3.0, "c1"), call("i2", 4.0, "c2")];
    // c2 is open: the window stops before it.
    assert_eq!(self_contained_prefix(&events, &events), 3);
    // A call nothing answers anywhere, of an older invocation, holds nothing back.
    let events = vec![at("i1", "user", 1.0, "q1"), call("i1", 2.0, "c9"), at("i1", "agent", 3.0, "a1")];
    assert_eq!(self_contained_prefix(&events, &events), 1);
    let mut all = events.clone();
    all.push(at("i2", "user", 5.0, "q2"));
    assert_eq!(self_contained_prefix(&events, &all), 3);
    // A long-running call is awaited.
    let mut waiting = Event::clone(&events[1]);
    waiting.long_running_tool_ids = Some(vec!["c9".into()]);
    all[1] = Arc::new(waiting);
    assert_eq!(self_contained_prefix(&all[..3], &all), 1);
}

#[test]
fn the_token_window_keeps_the_newest_and_starts_from_the_last_summary() {
    let mut events = turns(1..=3);
    assert_eq!(texts(&token_window(&events, 2)), ["q1", "a1", "q2", "a2"]);
    assert!(token_window(&events, 6).is_empty());
    events.push(summary(10.0, 21.0, 22.0, "s12"));
    events.extend(turns(4..=4));
    // The summary heads the window as a model event at its start.
    let window = token_window(&events, 1);
    assert_eq!(texts(&window), ["s12", "q3", "a3", "q4"]);
    assert_eq!(window[0].author, "model");
    assert!((window[0].timestamp - 10.0).abs() < f64::EPSILON);
    // A kept response keeps its call: the split moves before the call.
    let events = vec![at("i1", "user", 1.0, "q1"), call("i1", 2.0, "c1"), response("i1", 3.0, "c1")];
    assert_eq!(texts(&token_window(&events, 1)), ["q1"]);
}

#[test]
fn calls_of_shown_responses_come_back_with_their_siblings() {
    let events = vec![
        at("i1", "user", 1.0, "q1"),
        call("i1", 2.0, "c1"),
        at("i1", "agent", 3.0, "pending"),
        summary(1.0, 3.0, 4.0, "s"),
        response("i2", 5.0, "c1"),
    ];
    let shown = apply_summaries(&events, "agent");
    let recovered = recover_calls(shown, &events);
    assert_eq!(recovered.len(), 3);
    assert!(Arc::ptr_eq(&recovered[1], &events[1]));
    assert!(Arc::ptr_eq(&recovered[2], &events[4]));
}

#[test]
fn a_window_is_worth_a_summary_when_it_outweighs_the_last_one() {
    let events = turns(1..=2);
    assert!(worth_compacting(&events, &events));
    let mut events = turns(1..=2);
    let long = "x".repeat(500);
    events.push(summary(10.0, 21.0, 22.0, &long));
    events.extend(turns(3..=4));
    let window = sliding_window(&events, 2, 1);
    assert!(!worth_compacting(&events, &window));
}

#[test]
fn the_prompt_size_is_the_newest_answers_own_count() {
    let mut answer = Event::clone(&at("i1", "agent", 2.0, "a"));
    answer.extra.insert("usage_metadata".into(), json!({"prompt_token_count": 120}));
    let mut events = vec![at("i1", "user", 1.0, "q"), Arc::new(answer)];
    assert_eq!(latest_prompt_tokens(&events, "", || None), Some(120));
    assert_eq!(latest_prompt_tokens(&events, "other", || Some(7)), Some(7));
    events.push(summary(1.0, 2.0, 3.0, "s"));
    assert_eq!(latest_prompt_tokens(&events, "", || None), None);
}
