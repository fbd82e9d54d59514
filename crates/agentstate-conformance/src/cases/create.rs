use agentstate::{CreateSession, ErrorKind, GetSessionConfig, ListSessions, SessionKey};
use serde_json::json;

use super::{Svc, create, event, key, obj, reload, state_of};
use crate::unique;

/// Initial state is split by scope; `temp:` keys are dropped, even from the returned session.
pub(super) async fn create_splits_state_by_scope(svc: Svc) {
    let app = unique("app");
    let s = create(&svc, &app, "u1", "s1", json!({"k": 1, "app:a": "A", "user:u": "U1", "temp:t": "T"})).await;
    let expected = json!({"k": 1, "app:a": "A", "user:u": "U1"});
    assert_eq!(state_of(&s), expected, "returned state");
    assert!(s.events().is_empty());
    assert_eq!((s.app_name(), s.user_id(), s.id()), (app.as_str(), "u1", "s1"));
    let now = svc.now_secs();
    assert!((s.last_update_time() - now).abs() < 60.0, "last_update_time is the creation time");
    assert_eq!(state_of(&reload(&svc, s.key()).await), expected, "reloaded state");
}

/// A missing or empty session id gets a fresh UUIDv4.
pub(super) async fn create_generates_missing_ids(svc: Svc) {
    let app = unique("app");
    let a = svc.create_session(CreateSession::new(&app, "u")).await.unwrap();
    let b = svc.create_session(CreateSession::new(&app, "u").id("")).await.unwrap();
    for s in [&a, &b] {
        let id = s.id();
        assert_eq!(id.len(), 36, "{id} is not a UUID");
        assert_eq!(&id[14..15], "4", "{id} is not a version-4 UUID");
        assert!(reload(&svc, s.key()).await.events().is_empty());
    }
    assert_ne!(a.id(), b.id());
}

/// Creating an existing (app, user, id) fails with the reference's message and changes nothing,
/// not even the shared scopes.
pub(super) async fn create_existing_id_is_already_exists(svc: Svc) {
    let app = unique("app");
    create(&svc, &app, "u", "s1", json!({"k": 1, "user:u": "first"})).await;
    let err = svc
        .create_session(
            CreateSession::new(&app, "u").id("s1").with_state(obj(json!({"k": 2, "user:u": "second", "app:a": 1}))),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    assert_eq!(err.to_string(), "Session with id s1 already exists.");
    assert_eq!(state_of(&reload(&svc, &key(&app, "u", "s1")).await), json!({"k": 1, "user:u": "first"}));
}

/// Ids are scoped per (app, user): the same id elsewhere is another session.
pub(super) async fn same_id_for_another_user_or_app_is_another_session(svc: Svc) {
    let (app1, app2) = (unique("app"), unique("app"));
    create(&svc, &app1, "u1", "s1", json!({"who": "u1"})).await;
    create(&svc, &app1, "u2", "s1", json!({"who": "u2"})).await;
    create(&svc, &app2, "u1", "s1", json!({"who": "app2"})).await;
    for (app, user, who) in [(&app1, "u1", "u1"), (&app1, "u2", "u2"), (&app2, "u1", "app2")] {
        assert_eq!(state_of(&reload(&svc, &key(app, user, "s1")).await), json!({"who": who}));
    }
    let found = svc.find_sessions(&app1, "s1").await.unwrap();
    assert_eq!(found, [key(&app1, "u1", "s1"), key(&app1, "u2", "s1")], "one per user, by user id");
    svc.delete_session(&key(&app1, "u1", "s1")).await.unwrap();
    assert!(svc.get_session(&key(&app1, "u2", "s1"), GetSessionConfig::default()).await.unwrap().is_some());
}

/// `app:` is checked first: `app:user:x` is the app key `user:x`, visible to every user.
pub(super) async fn app_prefix_is_checked_before_user_prefix(svc: Svc) {
    let app = unique("app");
    create(&svc, &app, "u1", "s1", json!({"app:user:x": 1, "user:app:y": 2})).await;
    let other_user = create(&svc, &app, "u2", "s2", json!({})).await;
    assert_eq!(state_of(&other_user), json!({"app:user:x": 1}));
}

/// Malformed ids are refused with `InvalidArgument` naming the field, by every entry point.
pub(super) async fn invalid_ids_are_rejected(svc: Svc) {
    let app = unique("app");
    let long = "x".repeat(129);
    let bad_ids = ["", " lead", "trail ", "ctl\u{7}", "new\nline", long.as_str()];
    for bad in bad_ids.iter().filter(|b| !b.is_empty()) {
        let err = svc.create_session(CreateSession::new(&app, "u").id(*bad)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "session id {bad:?}");
        assert!(err.to_string().contains("session_id"), "{err}");
    }
    for bad in bad_ids {
        let err = svc.create_session(CreateSession::new(&app, bad)).await.unwrap_err();
        assert!(matches!(err, agentstate::Error::InvalidArgument { field: "user_id", .. }), "user id {bad:?}: {err}");
        let err = svc.create_session(CreateSession::new(bad, "u")).await.unwrap_err();
        assert!(matches!(err, agentstate::Error::InvalidArgument { field: "app_name", .. }), "app {bad:?}: {err}");
        let err = svc.list_sessions(ListSessions::user(&app, bad)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(SessionKey::new(&app, "u", bad).is_err());
    }
    // Nothing was created by the refused calls.
    assert!(svc.list_sessions(ListSessions::app(&app)).await.unwrap().sessions.is_empty());

    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let mut e = event("inv", json!({"k": 1}));
    e.id = " bad".into();
    let err = svc.append_event(&mut s, e).await.unwrap_err();
    assert!(matches!(err, agentstate::Error::InvalidArgument { field: "event.id", .. }), "{err}");
}

/// Ids compare exactly: `S1` and `s1`, `U` and `u`, `App` and `app` are different.
pub(super) async fn ids_are_case_sensitive(svc: Svc) {
    let app = unique("app");
    let upper_app = app.to_uppercase();
    create(&svc, &app, "u", "s1", json!({"v": "lower", "user:who": "u", "app:which": "lower"})).await;
    create(&svc, &app, "u", "S1", json!({"v": "upper"})).await;
    create(&svc, &app, "U", "t1", json!({"v": "other user"})).await;
    create(&svc, &upper_app, "u", "s1", json!({"v": "other app"})).await;
    assert_eq!(state_of(&reload(&svc, &key(&app, "u", "s1")).await)["v"], "lower");
    assert_eq!(state_of(&reload(&svc, &key(&app, "u", "S1")).await)["v"], "upper");
    assert!(svc.get_session(&key(&app, "U", "s1"), GetSessionConfig::default()).await.unwrap().is_none());
    assert!(svc.get_session(&key(&app, "u", "t1"), GetSessionConfig::default()).await.unwrap().is_none());
    let other_user = reload(&svc, &key(&app, "U", "t1")).await;
    assert_eq!(state_of(&other_user), json!({"v": "other user", "app:which": "lower"}));
    assert_eq!(state_of(&reload(&svc, &key(&upper_app, "u", "s1")).await), json!({"v": "other app"}));
}

/// A display name, labels and an expiry given at create are kept and returned by create, get
/// and list; a session without them has none; bad ones are refused; a new session under a
/// deleted one's id starts without them.
pub(super) async fn attributes_are_kept(svc: Svc) {
    use agentstate::SessionAttributes;
    let app = unique("app");
    let expire = 4_102_444_800.0; // 2100-01-01
    let request = CreateSession::new(&app, "u")
        .id("named")
        .display_name("Trip to Oslo")
        .label("team", "travel")
        .label("tier", "gold")
        .expire_time(expire);
    let created = svc.create_session(request).await.unwrap();
    let expected = SessionAttributes {
        display_name: Some("Trip to Oslo".into()),
        labels: [("team".to_owned(), "travel".to_owned()), ("tier".to_owned(), "gold".to_owned())].into(),
        expire_time_micros: Some(4_102_444_800_000_000),
    };
    assert_eq!(created.attributes(), &expected);
    let mut loaded = reload(&svc, created.key()).await;
    assert_eq!(loaded.attributes(), &expected);
    svc.append_event(&mut loaded, event("inv", json!({"k": 1}))).await.unwrap();
    assert_eq!(reload(&svc, created.key()).await.attributes(), &expected, "appends keep them");
    let plain = create(&svc, &app, "u", "plain", json!({})).await;
    let defaults = SessionAttributes { expire_time_micros: svc.default_expiry(), ..SessionAttributes::default() };
    assert_eq!(plain.attributes(), &defaults, "none, or the stack's default time to live");
    let listed = svc.list_sessions(ListSessions::user(&app, "u")).await.unwrap().sessions;
    let by_id = |id: &str| listed.iter().find(|s| s.id() == id).unwrap().attributes().clone();
    assert_eq!(by_id("named"), expected);
    assert_eq!(by_id("plain"), defaults);

    let too_long = CreateSession::new(&app, "u").display_name("x".repeat(agentstate::MAX_DISPLAY_NAME_CHARS + 1));
    assert_eq!(svc.create_session(too_long).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    let empty_key = CreateSession::new(&app, "u").label("", "v");
    assert_eq!(svc.create_session(empty_key).await.unwrap_err().kind(), ErrorKind::InvalidArgument);

    svc.delete_session(created.key()).await.unwrap();
    let again = create(&svc, &app, "u", "named", json!({})).await;
    assert_eq!(again.attributes(), &defaults);
    assert_eq!(reload(&svc, again.key()).await.attributes(), &defaults);
}

/// A session's creation time is set once: the handle's first marker, kept by every append.
pub(super) async fn create_time_is_kept(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s", json!({})).await;
    let created = s.create_time_micros();
    assert_eq!(created, s.last_update_micros());
    assert!((s.create_time() - svc.now_secs()).abs() < 60.0, "about now");
    svc.append_event(&mut s, event("inv", json!({}))).await.unwrap();
    assert!(s.last_update_micros() > created);
    let loaded = reload(&svc, s.key()).await;
    assert_eq!(loaded.create_time_micros(), created);
    let listed = svc.list_sessions(ListSessions::user(&app, "u")).await.unwrap().sessions;
    assert_eq!(listed[0].create_time_micros(), created);
}
