use agentstate::{ListSessions, Session};
use serde_json::{Value, json};

use super::{Svc, create, event, key, reload, state_of};
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
