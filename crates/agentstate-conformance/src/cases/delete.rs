use agentstate::{ErrorKind, GetSessionConfig};
use serde_json::json;

use super::{Svc, create, event, key, state_of};
use crate::unique;

/// Delete removes the session and its events; deleting again (or a session that never existed)
/// succeeds; the id can be reused for a fresh session; app and user state stay.
pub(super) async fn delete_removes_session_and_keeps_shared_state(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "s1", json!({"k": 1, "user:u": "U", "app:a": "A"})).await;
    svc.append_event(&mut s, event("inv", json!({"k": 2}))).await.unwrap();
    svc.delete_session(s.key()).await.unwrap();
    assert!(svc.get_session(s.key(), GetSessionConfig::default()).await.unwrap().is_none());
    svc.delete_session(s.key()).await.unwrap();
    svc.delete_session(&key(&unique("app"), "nobody", "never")).await.unwrap();

    let again = create(&svc, &app, "u", "s1", json!({})).await;
    assert!(again.events().is_empty(), "a re-created session starts empty");
    assert_eq!(state_of(&again), json!({"app:a": "A", "user:u": "U"}));
}

/// Appending through a handle of a deleted session → `NotFound` with the reference's message; the
/// handle is unchanged.
pub(super) async fn append_to_missing_session_is_not_found(svc: Svc) {
    let app = unique("app");
    let mut s = create(&svc, &app, "u", "del", json!({"k": 1})).await;
    svc.delete_session(s.key()).await.unwrap();
    let before = s.clone();
    let err = svc.append_event(&mut s, event("inv", json!({"k": 2, "temp:t": 1}))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(err.to_string(), "Session del not found.");
    assert_eq!(s, before);
}
