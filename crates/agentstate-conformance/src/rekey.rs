//! Re-encryption on a backend.

use std::future::Future;

use agentstate::crypt::{EncryptedStore, KeyRing};
use agentstate::history::HistoryAt;
use agentstate::store::SessionStore;
use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};
use serde_json::json;

use crate::unique;

async fn encrypted<S: SessionStore>(store: S, keys: &str) -> SessionService {
    SessionService::new(EncryptedStore::open(store, KeyRing::parse(keys).unwrap()).await.unwrap())
}

/// Re-encryption on a backend: data written with one key (and some before encryption was on) is
/// re-encrypted by [`agentstate::crypt::EncryptedStore::rekey`], after which the new key alone
/// reads every session, state value, event and history answer. `open` makes a new handle to the
/// same storage each time it is called (each with the same key prefix or database).
pub async fn check_rekey<S, F, Fut>(open: F)
where
    S: agentstate::store::SessionStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let app = unique("rekey");
    let old = KeyRing::generate("old").unwrap();
    let new = KeyRing::generate("new").unwrap();
    // Before encryption: plaintext.
    let plain = SessionService::new(open().await);
    let mut legacy =
        plain.create_session(CreateSession::new(&app, "u").id("legacy").state("k", json!("plain"))).await.unwrap();
    plain.append_event(&mut legacy, Event::new("inv").author("user").delta("user:plain", json!(1))).await.unwrap();
    // Then with the old key.
    let first = encrypted(open().await, &old).await;
    let request =
        CreateSession::new(&app, "u").id("s").state("secret", json!({"n": 1})).state("app:shared", json!("a"));
    let mut session = first.create_session(request).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..70 {
        let event = Event::new("inv").author("agent").delta("secret", json!({"n": i})).delta("user:seen", json!(i));
        ids.push(first.append_event(&mut session, event).await.unwrap().id);
    }
    // History snapshots exist (a replay keeps them), written with the old key.
    first.state_at(session.key(), HistoryAt::AfterEvent(ids[68].clone())).await.unwrap();
    // A user with state and no session left.
    let mut orphan = first
        .create_session(CreateSession::new(&app, "orphan").id("o").state("user:mail", json!("o@x")))
        .await
        .unwrap();
    first.append_event(&mut orphan, Event::new("inv")).await.unwrap();
    first.delete_session(orphan.key()).await.unwrap();

    // Rotate: the new key writes, both read; rekey.
    let rotating = EncryptedStore::open(open().await, KeyRing::parse(&format!("{new},{old}")).unwrap()).await.unwrap();
    let mut seen = 0;
    let done = rotating.rekey(|p| seen = p.sessions).await.unwrap();
    assert!(done.sessions >= 2 && seen == done.sessions, "{done:?}");
    assert!(done.values >= 5, "session, app and user values, the plaintext ones too: {done:?}");
    assert!(done.events >= 71, "{done:?}");
    assert!(done.snapshots >= 2, "the creation snapshot and a replay's: {done:?}");
    let again = rotating.rekey(|_| {}).await.unwrap();
    assert_eq!((again.values, again.events, again.snapshots), (0, 0, 0), "nothing left: {again:?}");

    // The new key alone reads everything.
    let only_new = encrypted(open().await, &new).await;
    let read = only_new.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(read.state().get("secret"), Some(&json!({"n": 69})));
    assert_eq!(read.state().get("app:shared"), Some(&json!("a")));
    assert_eq!(read.events().len(), 70);
    let at = only_new.state_at(session.key(), HistoryAt::AfterEvent(ids[10].clone())).await.unwrap().unwrap();
    assert_eq!(at.state.get("secret"), Some(&json!({"n": 10})));
    let creation = only_new.state_at(session.key(), HistoryAt::Creation).await.unwrap().unwrap();
    assert_eq!(creation.state.get("secret"), Some(&json!({"n": 1})));
    let legacy = only_new.get_session(legacy.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!((legacy.state().get("k"), legacy.events().len()), (Some(&json!("plain")), 1));
    let back = only_new.create_session(CreateSession::new(&app, "orphan")).await.unwrap();
    assert_eq!(back.state().get("user:mail"), Some(&json!("o@x")), "a user's state without sessions too");
    // And what is stored is sealed with it.
    let raw = SessionService::new(open().await)
        .get_session(session.key(), GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert!(raw.state().get("secret").unwrap().as_str().unwrap().starts_with("$as1$new$"));
    let raw_legacy = SessionService::new(open().await)
        .get_session(legacy.key(), GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert!(raw_legacy.state().get("k").unwrap().as_str().unwrap().starts_with("$as1$new$"), "plaintext got encrypted");
}
