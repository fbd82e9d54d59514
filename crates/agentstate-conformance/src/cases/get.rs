use agentstate::{GetSessionConfig, Session};
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
    let config = GetSessionConfig { num_recent_events: recent, after_timestamp: after };
    let loaded = svc.get_session(s.key(), config).await.unwrap().unwrap();
    assert_eq!(loaded.state(), reload(svc, s.key()).await.state(), "a window never changes the state");
    ids(&loaded)
}

/// `num_recent_events`: None = all, 0 = none, n = the n newest; `after_timestamp`: events at or
/// after it; both together: the newest n of those at or after it.
pub(super) async fn get_selects_event_windows(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let t0 = s.last_update_time().floor() + 10.0;
    for i in 0..5 {
        let mut e = event("inv", json!({ "step": i })).at(t0 + f64::from(i));
        e.id = format!("m{i}");
        svc.append_event(&mut s, e).await.unwrap();
    }
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

    let err = svc
        .get_session(s.key(), GetSessionConfig { num_recent_events: None, after_timestamp: Some(f64::NAN) })
        .await
        .unwrap_err();
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
    let mut request = ListEvents { page_size: 10, page_token: None };
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
    for bad in [ListEvents { page_size: 0, page_token: None }, ListEvents { page_size: 1001, page_token: None }] {
        let err = svc.list_events(empty.key(), bad).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
    let list_token = svc.list_sessions(ListSessions::app(&app).page_size(1)).await.unwrap().next_page_token.unwrap();
    for token in ["garbage".to_owned(), list_token] {
        let err = svc.list_events(empty.key(), ListEvents { page_size: 5, page_token: Some(token) }).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
}
