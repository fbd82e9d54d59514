use std::sync::Arc;

use agentstate::{ConflictKind, Error, Event, Session};
use serde_json::json;
use tokio::sync::{Barrier, Mutex};

use super::{Svc, create, event, ids, load, reload, state_of};
use crate::unique;

/// 16 tasks append at once to 16 sessions of one user, each writing its own `user:k_i` and
/// `app:k_i`: every key survives (per-key atomic merges; the reference keeps 1 of 10 on SQLite).
pub(super) async fn concurrent_shared_scope_writers_lose_nothing(svc: Svc) {
    const WRITERS: usize = 16;
    let app = unique("app");
    let mut sessions = Vec::new();
    for i in 0..WRITERS {
        sessions.push(create(&svc, &app, "u", &format!("s{i}"), json!({})).await);
    }
    for round in 0..3 {
        let barrier = Arc::new(Barrier::new(WRITERS));
        let mut tasks = Vec::new();
        for (i, mut session) in sessions.drain(..).enumerate() {
            let (svc, barrier) = (svc.clone(), Arc::clone(&barrier));
            tasks.push(tokio::spawn(async move {
                let delta = json!({ format!("user:k{i}_r{round}"): i, format!("app:k{i}_r{round}"): i, "own": i });
                barrier.wait().await;
                svc.append_event(&mut session, event("inv", delta)).await.unwrap();
                session
            }));
        }
        for task in tasks {
            sessions.push(task.await.unwrap());
        }
        let state = reload(&svc, sessions[0].key()).await;
        for r in 0..=round {
            for i in 0..WRITERS {
                assert_eq!(
                    state.state().get(&format!("user:k{i}_r{r}")),
                    Some(&json!(i)),
                    "user key {i} of round {r} lost"
                );
                assert_eq!(
                    state.state().get(&format!("app:k{i}_r{r}")),
                    Some(&json!(i)),
                    "app key {i} of round {r} lost"
                );
            }
        }
    }
    for (i, s) in sessions.iter().enumerate() {
        assert_eq!(reload(&svc, s.key()).await.state().get("own"), Some(&json!(i)));
    }
}

/// Two handles of one session append at the same moment: exactly one succeeds, the other gets a
/// stale-session `Conflict`, and storage holds the winner's event and state only.
pub(super) async fn concurrent_handles_conflict_exactly_once(svc: Svc) {
    let app = unique("app");
    for trial in 0..20 {
        let created = create(&svc, &app, "u", &format!("s{trial}"), json!({})).await;
        let barrier = Arc::new(Barrier::new(2));
        let mut tasks = Vec::new();
        for who in ["a", "b"] {
            let mut handle = load(&svc, &created).await;
            let (svc, barrier) = (svc.clone(), Arc::clone(&barrier));
            tasks.push(tokio::spawn(async move {
                let e = Event {
                    id: format!("from-{who}"),
                    ..event(who, json!({ "winner": who, format!("from_{who}"): true }))
                };
                barrier.wait().await;
                let result = svc.append_event(&mut handle, e).await;
                (who, result)
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                (who, Ok(_)) => winners.push(who),
                (_, Err(Error::Conflict { kind: ConflictKind::StaleSession })) => {}
                (who, Err(other)) => panic!("trial {trial}: {who} failed with {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "trial {trial}: exactly one append must win, got {winners:?}");
        let w = winners[0];
        let stored = load(&svc, &created).await;
        assert_eq!(ids(&stored), [format!("from-{w}")], "trial {trial}");
        assert_eq!(state_of(&stored), json!({ "winner": w, format!("from_{w}"): true }), "trial {trial}");
    }
}

/// 1,000 tasks append through one handle, serialised by the caller's lock: 1,000 events, stored
/// in the order they were appended, timestamps strictly increasing.
pub(super) async fn serialised_appends_through_one_handle_keep_order(svc: Svc) {
    const N: usize = 1000;
    let app = unique("app");
    let session = Arc::new(Mutex::new(create(&svc, &app, "u", "s", json!({})).await));
    let mut tasks = Vec::new();
    for _ in 0..N {
        let (svc, session) = (svc.clone(), Arc::clone(&session));
        tasks.push(tokio::spawn(async move {
            let mut handle = session.lock().await;
            let n = handle.events().len();
            let e = Event { id: format!("e{n:04}"), ..event("inv", json!({ "n": n })) };
            svc.append_event(&mut handle, e).await.unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let handle: Session = session.lock().await.clone();
    let stored = load(&svc, &handle).await;
    let expected: Vec<String> = (0..N).map(|n| format!("e{n:04}")).collect();
    assert_eq!(ids(&stored), expected);
    assert_eq!(ids(&handle), expected);
    assert!(stored.events().iter().zip(stored.events().iter().skip(1)).all(|(a, b)| a.timestamp < b.timestamp));
    assert_eq!(stored.state().get("n"), Some(&json!(N - 1)));
}
