use agentstate::{ListSessions, Map, Session, StateWrite};
use serde_json::{Value, json};

use super::{Svc, create, event, key, obj, reload, state_of};
use crate::unique;

fn scope_rank(k: &str) -> u8 {
    if k.starts_with("app:") {
        1
    } else if k.starts_with("user:") {
        2
    } else {
        0
    }
}

fn assert_grouped(s: &Session) {
    let ranks: Vec<u8> = s.state().iter().map(|(k, _)| scope_rank(k)).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "keys not grouped session, app, user: {:?}", s.state().all());
}

/// The merged view lists session keys, then `app:` keys, then `user:` keys (key order within a
/// scope is the backend's: PostgreSQL's JSONB sorts keys).
pub(super) async fn merged_state_groups_session_then_app_then_user(svc: Svc) {
    let app = unique("app");
    let s =
        create(&svc, &app, "u", "s", json!({"user:b": 1, "z": 2, "app:c": 3, "a": 4, "user:a": 5, "app:a": 6})).await;
    assert_grouped(&s);
    let loaded = reload(&svc, s.key()).await;
    assert_grouped(&loaded);
    let listed = svc.list_sessions(ListSessions::user(&app, "u")).await.unwrap();
    assert_grouped(&listed.sessions[0]);
}

/// Another session of the same user sees `app:` and `user:` keys; another user sees `app:` only;
/// another app sees neither.
pub(super) async fn shared_scopes_are_visible_in_other_sessions(svc: Svc) {
    let (app, other_app) = (unique("app"), unique("app"));
    create(&svc, &app, "u1", "s1", json!({"k": 1, "app:a": "A", "user:u": "U1"})).await;
    let same_user = create(&svc, &app, "u1", "s2", json!({})).await;
    let other_user = create(&svc, &app, "u2", "s3", json!({})).await;
    let elsewhere = create(&svc, &other_app, "u1", "s4", json!({})).await;
    assert_eq!(state_of(&same_user), json!({"app:a": "A", "user:u": "U1"}));
    assert_eq!(state_of(&other_user), json!({"app:a": "A"}));
    assert_eq!(state_of(&elsewhere), json!({}));
}

/// A `user:`/`app:` change appended through one session is visible in every other session of
/// that scope on its next read, and in lists.
pub(super) async fn shared_scope_changes_are_visible_on_next_read(svc: Svc) {
    let app = unique("app");
    let mut a = create(&svc, &app, "u1", "a", json!({"user:lang": "en", "app:theme": "dark"})).await;
    let b = create(&svc, &app, "u1", "b", json!({})).await;
    let c = create(&svc, &app, "u2", "c", json!({})).await;
    svc.append_event(&mut a, event("inv", json!({"user:lang": "fr", "app:theme": "light", "user:new": 1})))
        .await
        .unwrap();
    assert_eq!(state_of(&reload(&svc, b.key()).await), json!({"app:theme": "light", "user:lang": "fr", "user:new": 1}));
    assert_eq!(state_of(&reload(&svc, c.key()).await), json!({"app:theme": "light"}));
    let listed = svc.list_sessions(ListSessions::user(&app, "u1")).await.unwrap();
    for s in &listed.sessions {
        assert_eq!(s.state().get("user:lang"), Some(&json!("fr")), "listed session {}", s.id());
    }
}

/// `user:` keys never leak to another user, `app:` keys never to another app.
pub(super) async fn scopes_are_isolated_between_users_and_apps(svc: Svc) {
    let (app1, app2) = (unique("app"), unique("app"));
    let mut s1 = create(&svc, &app1, "u1", "s", json!({})).await;
    let mut s2 = create(&svc, &app2, "u1", "s", json!({})).await;
    svc.append_event(&mut s1, event("i", json!({"user:x": "app1-u1", "app:y": "app1"}))).await.unwrap();
    svc.append_event(&mut s2, event("i", json!({"user:x": "app2-u1", "app:y": "app2"}))).await.unwrap();
    let u2 = create(&svc, &app1, "u2", "s-u2", json!({})).await;
    assert_eq!(state_of(&u2), json!({"app:y": "app1"}));
    assert_eq!(state_of(&reload(&svc, &key(&app1, "u1", "s")).await), json!({"user:x": "app1-u1", "app:y": "app1"}));
    assert_eq!(state_of(&reload(&svc, &key(&app2, "u1", "s")).await), json!({"user:x": "app2-u1", "app:y": "app2"}));
}

/// A user's and an app's state read without a session: prefixes dropped, each user's own, still
/// there when every session is gone; nothing for a user or app without state; bad ids refused.
pub(crate) async fn user_and_app_state_are_read_without_a_session(svc: Svc) {
    let app = unique("shared");
    assert!(svc.user_state(&app, "ann").await.unwrap().is_empty(), "no state yet");
    assert!(svc.app_state(&app).await.unwrap().is_empty());
    let mut ann = create(&svc, &app, "ann", "s1", json!({"user:lang": "fr", "app:theme": "dark", "own": 1})).await;
    svc.append_event(&mut ann, event("inv", json!({"user:visits": 2, "user:lang": "de"}))).await.unwrap();
    create(&svc, &app, "bob", "s1", json!({"user:lang": "en"})).await;
    assert_eq!(Value::Object(svc.user_state(&app, "ann").await.unwrap()), json!({"lang": "de", "visits": 2}));
    assert_eq!(Value::Object(svc.user_state(&app, "bob").await.unwrap()), json!({"lang": "en"}));
    assert_eq!(Value::Object(svc.app_state(&app).await.unwrap()), json!({"theme": "dark"}));
    svc.delete_session(ann.key()).await.unwrap();
    assert_eq!(
        Value::Object(svc.user_state(&app, "ann").await.unwrap()),
        json!({"lang": "de", "visits": 2}),
        "outlives its sessions"
    );
    assert!(svc.user_state(&app, "nobody").await.unwrap().is_empty());
    assert!(svc.user_state(&unique("other"), "ann").await.unwrap().is_empty(), "per app");
    let bad = svc.user_state(&app, "").await.unwrap_err();
    assert_eq!(bad.kind(), agentstate::ErrorKind::InvalidArgument);
}

/// `user:` and `app:` state written without a session: merged key by key, seen by every session
/// of the user (or app), a user without sessions included; deletions; refusals write nothing;
/// concurrent writers of other keys (and appends) lose nothing.
pub(crate) async fn user_and_app_state_are_written_without_a_session(svc: Svc) {
    let app = unique("shared");
    let ann = create(&svc, &app, "ann", "s1", json!({"user:lang": "fr", "app:theme": "dark", "own": 1})).await;
    create(&svc, &app, "bob", "s1", json!({"user:lang": "en"})).await;
    let delta = obj(json!({"lang": "de", "plan": {"tier": 2, "big": 9007199254740993_u64}, "none": null}));
    svc.update_user_state(&app, "ann", write(delta, &[])).await.unwrap();
    tick(&svc);
    let expected = json!({"lang": "de", "plan": {"tier": 2, "big": 9007199254740993_u64}, "none": null});
    assert_eq!(Value::Object(svc.user_state(&app, "ann").await.unwrap()), expected);
    let seen = reload(&svc, ann.key()).await;
    assert_eq!(seen.state().get("user:lang"), Some(&json!("de")), "the user's sessions see it");
    assert_eq!(seen.state().get("user:plan"), Some(&json!({"tier": 2, "big": 9007199254740993_u64})));
    assert_eq!(seen.state().get("own"), Some(&json!(1)), "session keys untouched");
    assert_eq!(Value::Object(svc.user_state(&app, "bob").await.unwrap()), json!({"lang": "en"}), "per user");

    svc.update_user_state(&app, "ann", write(obj(json!({"extra": true})), &["lang"])).await.unwrap();
    tick(&svc);
    let state = svc.user_state(&app, "ann").await.unwrap();
    assert!(!state.contains_key("lang") && state.get("extra") == Some(&json!(true)), "{state:?}");
    assert!(!reload(&svc, ann.key()).await.state().contains("user:lang"), "deleted for its sessions");

    // A user with no session yet: their first session starts with it.
    svc.update_user_state(&app, "carl", write(obj(json!({"x": 1})), &[])).await.unwrap();
    let carl = create(&svc, &app, "carl", "s1", json!({})).await;
    assert_eq!(carl.state().get("user:x"), Some(&json!(1)));

    svc.update_app_state(&app, write(obj(json!({"theme": "light"})), &[])).await.unwrap();
    tick(&svc);
    assert_eq!(Value::Object(svc.app_state(&app).await.unwrap()), json!({"theme": "light"}));
    assert_eq!(reload(&svc, ann.key()).await.state().get("app:theme"), Some(&json!("light")), "every session");
    svc.update_app_state(&app, write(Map::new(), &["theme"])).await.unwrap();
    assert!(svc.app_state(&app).await.unwrap().is_empty());

    for (delta, deleted) in [
        (obj(json!({"user:lang": "xx"})), vec![]),
        (obj(json!({"temp:x": 1})), vec![]),
        (obj(json!({"": 1})), vec![]),
        (obj(json!({"ok": 1})), vec!["app:theme"]),
    ] {
        let refused = svc.update_user_state(&app, "ann", write(delta.clone(), &deleted)).await.unwrap_err();
        assert_eq!(refused.kind(), agentstate::ErrorKind::InvalidArgument, "{delta:?} {deleted:?}");
    }
    assert!(!svc.user_state(&app, "ann").await.unwrap().contains_key("ok"), "a refusal writes nothing");
    let refused = svc.update_user_state(&app, "", write(obj(json!({"a": 1})), &[])).await.unwrap_err();
    assert_eq!(refused.kind(), agentstate::ErrorKind::InvalidArgument);

    // 16 writers of distinct keys at once, and an append of another: every key kept.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (svc, app) = (svc.clone(), app.clone());
        tasks.push(tokio::spawn(async move {
            svc.update_user_state(&app, "ann", write(obj(json!({ format!("k{i}"): i })), &[])).await.unwrap();
        }));
    }
    let mut handle = reload(&svc, ann.key()).await;
    svc.append_event(&mut handle, event("inv", json!({"user:appended": true}))).await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let state = svc.user_state(&app, "ann").await.unwrap();
    for i in 0..16 {
        assert_eq!(state.get(&format!("k{i}")), Some(&json!(i)), "k{i} lost: {state:?}");
    }
    assert_eq!(state.get("appended"), Some(&json!(true)));
    assert_eq!(state.get("extra"), Some(&json!(true)));

    // The log of those writes, newest first: keys and origin, no values; paged; per owner.
    let writes = svc.user_state_writes(&app, "ann", None, 100).await.unwrap();
    assert_eq!(writes.len(), 18, "two writes, then 16 concurrent ones (the refused and the append are not in it)");
    assert!(writes.windows(2).all(|w| w[0].position() > w[1].position()), "newest first");
    let first = writes.last().unwrap();
    assert_eq!(
        (first.set.clone(), first.deleted.clone()),
        (vec!["lang".to_owned(), "none".into(), "plan".into()], vec![])
    );
    assert_eq!(first.origin, "conformance case");
    assert_eq!(
        (writes[writes.len() - 2].set.clone(), writes[writes.len() - 2].deleted.clone()),
        (vec!["extra".to_owned()], vec!["lang".to_owned()])
    );
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = svc.user_state_writes(&app, "ann", before, 5).await.unwrap();
        before = page.last().map(agentstate::store::SharedStateWrite::position);
        let done = page.len() < 5;
        paged.extend(page);
        if done {
            break;
        }
    }
    assert_eq!(paged, writes, "pages cover the log once");
    let app_writes = svc.app_state_writes(&app, None, 10).await.unwrap();
    let app_keys: Vec<_> = app_writes.iter().map(|w| (w.set.clone(), w.deleted.clone())).collect();
    assert_eq!(app_keys, [(vec![], vec!["theme".to_owned()]), (vec!["theme".to_owned()], vec![])]);
    assert_eq!(svc.user_state_writes(&app, "carl", None, 10).await.unwrap().len(), 1);
    assert!(svc.user_state_writes(&app, "bob", None, 10).await.unwrap().is_empty());
    assert!(svc.user_state_writes(&app, "ann", None, 0).await.is_err(), "a page holds at least one");
    // Erasing the user erases their log.
    if let Some(lifecycle) = svc.capabilities().lifecycle {
        lifecycle.erase_user(&app, "ann").await.unwrap();
        assert!(svc.user_state_writes(&app, "ann", None, 10).await.unwrap().is_empty(), "erased");
    }
}

/// Shared rows under writers that race: a user's first sessions created at once, some bringing
/// `user:` and `app:` keys and some none, keep every key (a row created empty must not overwrite
/// one created meanwhile); writes that only delete keys, racing writes that set others, lose none
/// of them.
pub(crate) async fn racing_shared_writes_lose_nothing(svc: Svc) {
    let app = unique("race");
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (svc, app) = (svc.clone(), app.clone());
        tasks.push(tokio::spawn(async move {
            let state = if i % 2 == 0 { json!({ format!("user:c{i}"): i, format!("app:c{i}"): i }) } else { json!({}) };
            create(&svc, &app, "new", &format!("s{i}"), state).await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let (user, shared) = (svc.user_state(&app, "new").await.unwrap(), svc.app_state(&app).await.unwrap());
    for i in (0..16).step_by(2) {
        let key = format!("c{i}");
        assert_eq!(user.get(&key), Some(&json!(i)), "user:{key} lost: {user:?}");
        assert_eq!(shared.get(&key), Some(&json!(i)), "app:{key} lost: {shared:?}");
    }

    let mut tasks = Vec::new();
    for i in 0..16 {
        let (svc, app) = (svc.clone(), app.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..4 {
                let write = if i % 2 == 0 {
                    write(obj(json!({ format!("k{i}_{round}"): round })), &[])
                } else {
                    write(Map::new(), &[&format!("never{i}")])
                };
                svc.update_user_state(&app, "new", write).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let user = svc.user_state(&app, "new").await.unwrap();
    for i in (0..16).step_by(2) {
        for round in 0..4 {
            assert_eq!(user.get(&format!("k{i}_{round}")), Some(&json!(round)), "k{i}_{round} lost: {user:?}");
        }
    }
}

/// The log orders writes by time: sequential writes a millisecond apart on the case's clock.
fn tick(svc: &Svc) {
    svc.clock().advance(std::time::Duration::from_millis(1));
}

fn write(delta: Map<String, Value>, deleted: &[&str]) -> StateWrite {
    StateWrite { delta, deleted: deleted.iter().map(|k| (*k).to_owned()).collect(), origin: "conformance case".into() }
}
