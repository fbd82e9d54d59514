//! Erasure of a user's data: every session, event and `user:` key of that user in that app, and
//! nothing else (not `app:` state, not other users, not the same user in other apps).

use agentstate::{CreateSession, GetSessionConfig, ListSessions, UserDataCounts};
use serde_json::json;

use super::{Svc, event, key};
use crate::unique;

pub(crate) async fn erasing_a_user_removes_everything_of_theirs(svc: Svc) {
    let (app, other_app) = (unique("erase"), unique("erase-other"));
    let nothing = UserDataCounts::default();
    assert_eq!(svc.count_user_data(&app, "gone").await.unwrap(), nothing, "a user with nothing");
    assert_eq!(svc.erase_user(&app, "gone").await.unwrap(), nothing, "erasing nothing is not an error");

    let mut events = 0;
    for id in ["s1", "s2"] {
        let request = CreateSession::new(&app, "gone").id(id).state("user:email", json!("gone@example.com"));
        let mut session = svc.create_session(request).await.unwrap();
        for i in 0..3 {
            let delta = json!({"note": format!("secret {i}"), "user:seen": i, "app:visits": i});
            svc.append_event(&mut session, event("inv", delta)).await.unwrap();
            events += 1;
        }
    }
    let mut kept = svc
        .create_session(CreateSession::new(&app, "kept").id("s1").state("user:email", json!("kept@x")))
        .await
        .unwrap();
    svc.append_event(&mut kept, event("inv", json!({"k": 1}))).await.unwrap();
    let elsewhere = CreateSession::new(&other_app, "gone").id("s1").state("user:email", json!("gone@example.com"));
    svc.create_session(elsewhere).await.unwrap();

    let expected = UserDataCounts { sessions: 2, events, user_state_keys: 2, memories: 0, artifacts: 0 };
    assert_eq!(svc.count_user_data(&app, "gone").await.unwrap(), expected, "counted before erasing");
    assert_eq!(svc.erase_user(&app, "gone").await.unwrap(), expected, "what it removed");

    for id in ["s1", "s2"] {
        assert!(svc.get_session(&key(&app, "gone", id), GetSessionConfig::default()).await.unwrap().is_none());
    }
    assert!(svc.list_sessions(ListSessions::user(&app, "gone")).await.unwrap().sessions.is_empty());
    assert!(svc.find_sessions(&app, "s2").await.unwrap().is_empty());
    assert_eq!(svc.count_user_data(&app, "gone").await.unwrap(), nothing, "nothing left");
    // A new session of that user starts with no user: state; app: state is the app's and stays.
    let fresh = svc.create_session(CreateSession::new(&app, "gone").id("s1")).await.unwrap();
    assert_eq!(fresh.state().get("user:email"), None);
    assert_eq!(fresh.state().get("user:seen"), None);
    assert_eq!(fresh.state().get("app:visits"), Some(&json!(2)));
    assert!(fresh.events().is_empty());
    // Other users, and the same user in another app, are untouched.
    let kept = svc.get_session(kept.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!((kept.events().len(), kept.state().get("user:email")), (1, Some(&json!("kept@x"))));
    let elsewhere = svc.get_session(&key(&other_app, "gone", "s1"), GetSessionConfig::default()).await.unwrap();
    assert_eq!(elsewhere.unwrap().state().get("user:email"), Some(&json!("gone@example.com")));
    assert!(svc.erase_user(&app, " bad").await.is_err(), "ids are checked");
}
