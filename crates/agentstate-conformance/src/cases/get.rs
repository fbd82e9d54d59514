use agentstate::compaction::EventView;
use agentstate::{GetSessionConfig, Session, Timestamp};
use serde_json::json;

use super::{Svc, create, event, ids, key, reload, state_of};
use crate::unique;

/// A missing app, user or session → `Ok(None)`, never an error.
pub(super) async fn get_missing_is_none(svc: Svc) {
    let app = unique("app");
    create(&svc, &app, "u", "s", json!({})).await;
    for k in [key(&unique("app"), "u", "s"), key(&app, "nobody", "s"), key(&app, "u", "nothing")] {
        assert!(svc.get_session(&k, GetSessionConfig::default()).await.unwrap().is_none(), "{k}");
    }
}

async fn window(svc: &Svc, s: &Session, recent: Option<usize>, after: Option<f64>) -> Vec<String> {
    let after = after.map(|t| Timestamp::from_secs(t).unwrap());
    let config = GetSessionConfig { num_recent_events: recent, after_timestamp: after, ..GetSessionConfig::default() };
    let loaded = svc.get_session(s.key(), config).await.unwrap().unwrap();
    assert_eq!(loaded.state(), reload(svc, s.key()).await.state(), "a window never changes the state");
    ids(&loaded)
}

/// A new session with `count` events, ids `{prefix}0`…, a second apart from `t0` (answered), each
/// setting `step` to its index.
async fn a_second_apart(svc: &Svc, prefix: &str, count: u32) -> (agentstate::Session, f64) {
    let mut s = create(svc, &unique("app"), "u", "s", json!({})).await;
    let t0 = s.last_update_time().floor() + 10.0;
    for i in 0..count {
        let mut e = event("inv", json!({ "step": i })).at(t0 + f64::from(i));
        e.id = format!("{prefix}{i}");
        svc.append_event(&mut s, e).await.unwrap();
    }
    (s, t0)
}

/// `num_recent_events`: None = all, 0 = none, n = the n newest; `after_timestamp`: events at or
/// after it; both together: the newest n of those at or after it.
pub(super) async fn get_selects_event_windows(svc: Svc) {
    let (s, t0) = a_second_apart(&svc, "m", 5).await;
    let all: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
    assert_eq!(window(&svc, &s, None, None).await, all);
    assert_eq!(window(&svc, &s, Some(0), None).await, Vec::<String>::new());
    assert_eq!(window(&svc, &s, Some(2), None).await, ["m3", "m4"]);
    assert_eq!(window(&svc, &s, Some(10), None).await, all);
    assert_eq!(window(&svc, &s, None, Some(t0 + 3.0)).await, ["m3", "m4"], "after is inclusive");
    assert_eq!(window(&svc, &s, None, Some(t0 + 2.5)).await, ["m3", "m4"]);
    assert_eq!(window(&svc, &s, None, Some(0.0)).await, all);
    assert_eq!(window(&svc, &s, None, Some(t0 + 100.0)).await, Vec::<String>::new());
    assert_eq!(window(&svc, &s, Some(1), Some(t0 + 1.0)).await, ["m4"]);
    assert_eq!(window(&svc, &s, Some(10), Some(t0 + 1.0)).await, ["m1", "m2", "m3", "m4"]);
    assert_eq!(window(&svc, &s, Some(0), Some(t0)).await, Vec::<String>::new());

    let err = Timestamp::try_from_secs("after_timestamp", f64::NAN).unwrap_err();
    assert_eq!(err.kind(), agentstate::ErrorKind::InvalidArgument);
}

/// Handles are independent snapshots: appending through one changes neither another handle
/// loaded earlier nor a session returned by `create`.
pub(super) async fn handles_are_independent_copies(svc: Svc) {
    let app = unique("app");
    let created = create(&svc, &app, "u", "s", json!({"k": 1})).await;
    let mut a = reload(&svc, created.key()).await;
    let b = reload(&svc, created.key()).await;
    svc.append_event(&mut a, event("inv", json!({"k": 2, "user:x": 1}))).await.unwrap();
    assert_eq!(state_of(&created), json!({"k": 1}));
    assert_eq!(state_of(&b), json!({"k": 1}));
    assert!(b.events().is_empty());
    assert_eq!(state_of(&a), json!({"k": 2, "user:x": 1}));
    assert_eq!(a.events().len(), 1);
}

/// `list_events` walks the history a page at a time, oldest first: every event exactly once,
/// also while events are appended between pages; bad tokens and sizes are refused.
pub(super) async fn event_pages_walk_history_in_order(svc: Svc) {
    use agentstate::{ErrorKind, ListEvents, ListSessions};
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let mut append = async |n: usize| {
        let e = agentstate::Event { id: format!("e{n:02}"), ..event("inv", json!({ "n": n })) };
        svc.append_event(&mut s, e).await.unwrap();
    };
    for n in 0..25 {
        append(n).await;
    }
    let mut seen = Vec::new();
    let mut request = ListEvents { page_size: 10, ..ListEvents::default() };
    let mut sizes = Vec::new();
    loop {
        let page = svc.list_events(&key(&app, "u", "s"), request.clone()).await.unwrap().unwrap();
        sizes.push(page.events.len());
        seen.extend(page.events.iter().map(|e| e.id.clone()));
        if seen.len() == 10 {
            // Appends between pages are picked up, nothing is skipped or repeated.
            for n in 25..30 {
                append(n).await;
            }
        }
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => break,
        }
    }
    let expected: Vec<String> = (0..30).map(|n| format!("e{n:02}")).collect();
    assert_eq!(seen, expected);
    assert_eq!(sizes, [10, 10, 10], "no empty trailing page");

    assert!(svc.list_events(&key(&app, "u", "missing"), ListEvents::default()).await.unwrap().is_none());
    let empty = create(&svc, &app, "u", "empty", json!({})).await;
    let page = svc.list_events(empty.key(), ListEvents::default()).await.unwrap().unwrap();
    assert!(page.events.is_empty() && page.next_page_token.is_none());
    for bad in
        [ListEvents { page_size: 0, ..ListEvents::default() }, ListEvents { page_size: 1001, ..ListEvents::default() }]
    {
        let err = svc.list_events(empty.key(), bad).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
    let list_token = svc.list_sessions(ListSessions::app(&app).page_size(1)).await.unwrap().next_page_token.unwrap();
    for token in ["garbage".to_owned(), list_token] {
        let request = ListEvents { page_size: 5, page_token: Some(token), ..ListEvents::default() };
        let err = svc.list_events(empty.key(), request).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
}

/// `list_events` with `after_timestamp` starts at the first event at or after that time and
/// pages on from there, the bound kept on every page.
pub(super) async fn event_pages_start_at_a_time(svc: Svc) {
    use agentstate::ListEvents;
    let (s, t0) = a_second_apart(&svc, "t", 8).await;
    let mut request = ListEvents { page_size: 2, after_timestamp: secs(t0 + 3.0), ..ListEvents::default() };
    let mut seen = Vec::new();
    loop {
        let page = svc.list_events(s.key(), request.clone()).await.unwrap().unwrap();
        seen.extend(page.events.iter().map(|e| e.id.clone()));
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => break,
        }
    }
    assert_eq!(seen, ["t3", "t4", "t5", "t6", "t7"], "inclusive, in order, each once");
    let late = ListEvents { after_timestamp: secs(t0 + 100.0), ..ListEvents::default() };
    assert!(svc.list_events(s.key(), late).await.unwrap().unwrap().events.is_empty());
}

/// `list_events` newest first: each page the newest of what is older than the last page, the
/// lower time bound kept; an event appended meanwhile does not move the pages already begun.
pub(super) async fn event_pages_go_back_in_time(svc: Svc) {
    use agentstate::ListEvents;
    let (mut s, t0) = a_second_apart(&svc, "b", 8).await;
    let walk = |request: ListEvents| {
        let svc = &svc;
        let key = s.key().clone();
        async move {
            let (mut request, mut pages) = (request, Vec::new());
            loop {
                let page = svc.list_events(&key, request.clone()).await.unwrap().unwrap();
                pages.push(page.events.iter().map(|e| e.id.clone()).collect::<Vec<_>>());
                match page.next_page_token {
                    Some(token) => request.page_token = Some(token),
                    None => return pages,
                }
            }
        }
    };
    let backwards = ListEvents { page_size: 3, newest_first: true, ..ListEvents::default() };
    assert_eq!(walk(backwards.clone()).await, [vec!["b7", "b6", "b5"], vec!["b4", "b3", "b2"], vec!["b1", "b0"]]);
    let bounded = ListEvents { after_timestamp: secs(t0 + 3.0), ..backwards.clone() };
    assert_eq!(walk(bounded).await, [vec!["b7", "b6", "b5"], vec!["b4", "b3"]]);
    let exact = ListEvents { page_size: 4, ..backwards.clone() };
    assert_eq!(walk(exact).await, [vec!["b7", "b6", "b5", "b4"], vec!["b3", "b2", "b1", "b0"]]);

    let first = svc.list_events(s.key(), backwards.clone()).await.unwrap().unwrap();
    let mut late = event("inv", json!({})).at(t0 + 20.0);
    late.id = "b8".into();
    svc.append_event(&mut s, late).await.unwrap();
    let next = ListEvents { page_token: first.next_page_token, ..backwards };
    let second = svc.list_events(s.key(), next).await.unwrap().unwrap();
    assert_eq!(second.events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["b4", "b3", "b2"]);
}

/// `find_sessions` finds a session by app and id alone: the users that have one called so.
pub(super) async fn sessions_are_found_by_app_and_id(svc: Svc) {
    let (app, other_app) = (unique("app"), unique("app"));
    create(&svc, &app, "u1", "s1", json!({})).await;
    create(&svc, &app, "u2", "s2", json!({})).await;
    create(&svc, &other_app, "u3", "s3", json!({})).await;
    assert_eq!(svc.find_sessions(&app, "s1").await.unwrap(), [key(&app, "u1", "s1")]);
    assert_eq!(svc.find_sessions(&app, "s2").await.unwrap(), [key(&app, "u2", "s2")]);
    assert!(svc.find_sessions(&app, "s3").await.unwrap().is_empty(), "another app's session");
    assert!(svc.find_sessions(&app, "nothing").await.unwrap().is_empty());
    assert!(svc.find_sessions(&unique("app"), "s1").await.unwrap().is_empty());
    svc.delete_session(&key(&app, "u1", "s1")).await.unwrap();
    assert!(svc.find_sessions(&app, "s1").await.unwrap().is_empty(), "deleted");
    assert_eq!(svc.find_sessions(&app, " bad").await.unwrap_err().kind(), agentstate::ErrorKind::InvalidArgument);
}

/// A read of stored events (`get_session_stored`) writes the same JSON as the decoded read, for
/// every window, and a read of written events (`get_session_written`, what an API GET answers
/// from) the same bytes as the stored read; missing sessions are none every way.
pub(super) async fn stored_reads_show_what_decoded_reads_do(svc: Svc) {
    use agentstate::wire::{StoredWireSession, WireSession};
    use agentstate::{Content, Event};

    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({"k": 1, "app:a": "A", "user:u": [1]})).await;
    let call: agentstate::Part = serde_json::from_value(
        json!({"function_call": {"id": "c1", "name": "lookup", "args": {"city_name": "Paris", "n": 2.5}}}),
    )
    .unwrap();
    let events = [
        event("inv-1", json!({"k": 2, "user:u": {"nested": null}, "app:a": "B"}))
            .content(Content::text("user", "héllo \"quoted\"\n")),
        Event {
            content: Some(Content { parts: Some(vec![call]), role: Some("model".into()), ..Content::default() }),
            ..event("inv-1", json!({}))
        },
        event("inv-2", json!({"k": null})).delete("k"),
    ];
    for mut e in events {
        e.extra.insert("custom_metadata".into(), json!({"__adk_internal_x": 1, "shown": {"a_b": 1}}));
        svc.append_event(&mut s, e).await.unwrap();
    }
    let second = svc.get_session(s.key(), GetSessionConfig::default()).await.unwrap().unwrap().events()[1].time();
    // A bound inside the second event's microsecond (finer than storage selects by) and on it.
    let inside = Timestamp::from_nanos(second.nanos() - 1);
    let windows = [(None, None), (Some(0), None), (Some(2), None), (Some(9), None), (None, Some(second))];
    let windows = windows.into_iter().chain([(None, Some(inside)), (Some(1), Some(second))]);
    for (recent, after) in windows {
        for view in [EventView::Whole, EventView::Compacted { overlap: 1 }] {
            let config = GetSessionConfig { num_recent_events: recent, after_timestamp: after, view };
            let decoded = svc.get_session(s.key(), config).await.unwrap().unwrap();
            let stored = svc.get_session_stored(s.key(), config).await.unwrap().unwrap();
            let written = svc.get_session_written(s.key(), config).await.unwrap().unwrap();
            let at = format!("window {recent:?} {after:?} {view:?}");
            assert_eq!(stored.event_count(), decoded.events().len(), "{at}");
            assert_eq!(written.event_count(), decoded.events().len(), "{at}");
            let stored_bytes = StoredWireSession(&stored).to_vec().unwrap();
            assert_eq!(
                serde_json::from_slice::<serde_json::Value>(&stored_bytes).unwrap(),
                serde_json::to_value(WireSession(&decoded)).unwrap(),
                "{at}"
            );
            assert_eq!(
                String::from_utf8(StoredWireSession(&written).to_vec().unwrap()).unwrap(),
                String::from_utf8(stored_bytes).unwrap(),
                "{at}"
            );
        }
    }
    let missing = key(&app, "u", "missing");
    assert!(svc.get_session_stored(&missing, GetSessionConfig::default()).await.unwrap().is_none());
    assert!(svc.get_session_written(&missing, GetSessionConfig::default()).await.unwrap().is_none());
}

/// Epoch seconds as a bound.
fn secs(t: f64) -> Option<Timestamp> {
    Timestamp::from_secs(t)
}
