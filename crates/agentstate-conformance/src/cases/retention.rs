//! Retention: old events go, the state stays as it is, and history answers stop at the oldest
//! kept event with an error that says so.

use std::time::Duration;

use agentstate::history::{ForkSession, HistoryAt};
use agentstate::{CreateSession, ErrorKind, Retention};
use serde_json::json;

use super::{Svc, event, ids, reload, state_of};
use crate::unique;

pub(crate) async fn retention_drops_old_events_and_history_stops_there(svc: Svc) {
    let app = unique("retention");
    let request = CreateSession::new(&app, "u").id("s").state("k", json!(-1)).state("gone", json!(true));
    let mut session = svc.create_session(request).await.unwrap();
    let mut stored = Vec::new();
    for i in 0..10 {
        let mut e = event(&format!("inv-{i}"), json!({"k": i, "user:n": i, format!("key{i}"): i}));
        if i == 2 {
            e = e.delete("gone");
        }
        stored.push(svc.append_event(&mut session, e).await.unwrap());
    }
    let before = reload(&svc, session.key()).await;

    // Nothing to drop: the policy keeps more than there is.
    let keep_all = Retention { keep_last: Some(50), max_age: Some(Duration::from_secs(3600)) };
    assert_eq!(svc.apply_retention(session.key(), keep_all).await.unwrap(), 0);
    let keep_4 = Retention { keep_last: Some(4), max_age: None };
    assert_eq!(svc.apply_retention(session.key(), keep_4).await.unwrap(), 6);
    assert_eq!(svc.apply_retention(session.key(), keep_4).await.unwrap(), 0, "idempotent");

    let after = reload(&svc, session.key()).await;
    assert_eq!(ids(&after), stored[6..].iter().map(|e| e.id.clone()).collect::<Vec<_>>());
    assert_eq!(state_of(&after), state_of(&before), "the state is never recomputed from events");

    // History from the oldest kept event on is exact; before it, a clear refusal.
    let at = svc.state_at(session.key(), HistoryAt::AfterEvent(stored[6].id.clone())).await.unwrap().unwrap();
    assert_eq!(at.state.get("k"), Some(&json!(6)));
    assert_eq!(at.state.get("key0"), Some(&json!(0)), "what the dropped events set is in the kept state");
    assert_eq!(at.state.get("gone"), None, "and what they deleted is not");
    let first_kept = svc.state_at(session.key(), HistoryAt::BeforeEvent(stored[6].id.clone())).await.unwrap().unwrap();
    assert_eq!(first_kept.state.get("k"), Some(&json!(5)));
    let diff = svc.event_diff(session.key(), &stored[6].id).await.unwrap().unwrap();
    let k = diff.changes.iter().find(|c| c.key == "k").expect("the diff names k");
    assert_eq!((k.before.clone(), k.after.clone()), (Some(json!(5)), Some(json!(6))), "diffs of kept events are exact");
    for question in
        [HistoryAt::AfterEvent(stored[2].id.clone()), HistoryAt::Creation, HistoryAt::Time(stored[1].timestamp)]
    {
        let error = svc.state_at(session.key(), question.clone()).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{question:?}");
        assert!(error.to_string().contains("retention"), "{question:?}: {error}");
    }
    let error = svc.event_diff(session.key(), &stored[0].id).await.unwrap_err();
    assert!(error.to_string().contains("retention"), "{error}");
    let fork = ForkSession { source: session.key().clone(), at_event_id: stored[1].id.clone(), session_id: None };
    assert!(svc.fork_session(fork).await.unwrap_err().to_string().contains("retention"));
    // A fork of what is kept keeps the boundary too.
    let fork =
        ForkSession { source: session.key().clone(), at_event_id: stored[7].id.clone(), session_id: Some("f".into()) };
    let forked = svc.fork_session(fork).await.unwrap();
    let forked_at = svc.state_at(forked.key(), HistoryAt::AfterEvent(stored[6].id.clone())).await.unwrap().unwrap();
    assert_eq!(forked_at.state.get("key0"), Some(&json!(0)));
    assert!(svc.state_at(forked.key(), HistoryAt::Creation).await.unwrap_err().to_string().contains("retention"));

    // Appending goes on; by age, everything older than now goes (the state stays again).
    svc.append_event(&mut session, event("inv-10", json!({"k": 10}))).await.unwrap();
    let keep_young = Retention { keep_last: None, max_age: Some(Duration::from_secs(60)) };
    svc.clock().advance(Duration::from_secs(3600));
    assert_eq!(svc.apply_retention(session.key(), keep_young).await.unwrap(), 5);
    let emptied = reload(&svc, session.key()).await;
    assert!(emptied.events().is_empty());
    assert_eq!(emptied.state().get("k"), Some(&json!(10)));
    let now = svc.state_at(session.key(), HistoryAt::Time(svc.now_secs())).await.unwrap().unwrap();
    assert_eq!(now.state.get("k"), Some(&json!(10)), "the boundary holds the latest history state");

    assert_eq!(svc.apply_retention(&super::key(&app, "u", "missing"), keep_4).await.unwrap(), 0);
    let none = Retention { keep_last: Some(0), max_age: None };
    assert_eq!(svc.apply_retention(session.key(), none).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
}
