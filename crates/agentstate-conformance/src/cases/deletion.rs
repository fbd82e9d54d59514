//! Deleting keys: an event's `deleted_keys` remove keys of every scope, persistently.

use std::sync::Arc;

use agentstate::{Event, ListSessions};
use serde_json::json;
use tokio::sync::Barrier;

use super::{Svc, create, load, reload, state_of};
use crate::unique;

/// A deletion removes a session key, a `user:` key and an `app:` key from storage (other
/// sessions of the user and app see them gone), a `temp:` key from the caller's handle only; the
/// stored event records each deleted key once, as `null` in the delta too, as the handle shows.
pub(super) async fn deleted_keys_are_gone_in_every_scope(svc: Svc) {
    let app = unique("app");
    let initial = json!({"k": 1, "keep": 2, "user:u": 3, "app:a": 4, "user:stay": 5});
    let mut s = create(&svc, &app, "u", "s1", initial).await;
    let other = create(&svc, &app, "u", "s2", json!({})).await;
    assert_eq!(reload(&svc, other.key()).await.state().get("user:u"), Some(&json!(3)));

    let set_temp = Event::new("inv").author("agent").delta("temp:t", json!(1));
    svc.append_event(&mut s, set_temp).await.unwrap();
    let deletion =
        Event::new("inv").author("agent").delete("k").delete("user:u").delete("app:a").delete("temp:t").delete("k");
    let returned = svc.append_event(&mut s, deletion).await.unwrap();
    assert_eq!(returned.deleted_keys, ["k", "user:u", "app:a"], "temp: keys are not stored, each key once");
    assert_eq!(
        serde_json::Value::Object(returned.actions.state_delta.clone()),
        json!({"k": null, "user:u": null, "app:a": null})
    );
    assert_eq!(state_of(&s), json!({"keep": 2, "user:stay": 5}), "the handle, temp: key gone too");
    let stored = load(&svc, &s).await;
    assert_eq!(state_of(&stored), json!({"keep": 2, "user:stay": 5}));
    assert_eq!(stored.events().last().map(|e| e.deleted_keys.clone()), Some(returned.deleted_keys.clone()));
    assert_eq!(state_of(&reload(&svc, other.key()).await), json!({"user:stay": 5}), "shared keys gone everywhere");
    let listed = svc.list_sessions(ListSessions::app(&app)).await.unwrap().sessions;
    assert!(listed.iter().all(|l| !l.state().contains("user:u") && !l.state().contains("app:a")));

    // Deleting a key that is not there changes nothing else; setting it again brings it back.
    let mut s = stored;
    svc.append_event(&mut s, Event::new("inv2").author("agent").delete("never")).await.unwrap();
    svc.append_event(&mut s, Event::new("inv2").author("agent").delta("k", json!("again"))).await.unwrap();
    assert_eq!(state_of(&load(&svc, &s).await), json!({"keep": 2, "k": "again", "user:stay": 5}));
    // A key both set and deleted by one event: the deletion wins.
    let mut both = Event::new("inv3").author("agent").delta("k", json!(9));
    both.deleted_keys.push("k".into());
    svc.append_event(&mut s, both).await.unwrap();
    assert!(!load(&svc, &s).await.state().contains("k"));
}

/// Sessions of one user delete and set one `user:` key at the same moment, and each writes a
/// key of its own: the key ends as the last committed change left it (absent or set), and no
/// other key is lost.
pub(super) async fn concurrent_deletion_and_setting_of_a_user_key(svc: Svc) {
    const WRITERS: usize = 8;
    let app = unique("app");
    let mut sessions = Vec::new();
    for i in 0..WRITERS {
        sessions.push(create(&svc, &app, "u", &format!("s{i}"), json!({"user:shared": "start"})).await);
    }
    let barrier = Arc::new(Barrier::new(WRITERS));
    let mut tasks = Vec::new();
    for (i, mut session) in sessions.drain(..).enumerate() {
        let (svc, barrier) = (svc.clone(), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            let mut event = Event::new("inv").author("agent").delta(format!("user:own{i}"), json!(i));
            event = if i % 2 == 0 { event.delete("user:shared") } else { event.delta("user:shared", json!(i)) };
            barrier.wait().await;
            let stored = svc.append_event(&mut session, event).await.unwrap();
            (session, stored.timestamp)
        }));
    }
    let mut done = Vec::new();
    for task in tasks {
        done.push(task.await.unwrap());
    }
    let state = reload(&svc, done[0].0.key()).await;
    for i in 0..WRITERS {
        assert_eq!(state.state().get(&format!("user:own{i}")), Some(&json!(i)), "user key {i} lost");
    }
    // Whatever happened last in storage decided `user:shared`: absent (a deleter) or a setter's
    // value; never "start", which every writer replaced.
    match state.state().get("user:shared") {
        None => {}
        Some(value) => {
            let i = value.as_u64().unwrap_or_else(|| panic!("user:shared is {value}, which no writer set"));
            assert!(i % 2 == 1, "user:shared is {i}, which a deleter should have removed or a setter set");
        }
    }
    for (session, _) in &done {
        assert_eq!(reload(&svc, session.key()).await.state().get("user:shared"), state.state().get("user:shared"));
    }
}
