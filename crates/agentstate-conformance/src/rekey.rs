//! Re-encryption on a backend.

use std::future::Future;

use agentstate::crypt::{EncryptedStore, KeyRing};
use agentstate::history::HistoryAt;
use agentstate::memory::{MemoryOptions, MemoryOwner, MemoryService, NewMemory};
use agentstate::store::SessionStore;
use agentstate::{Content, CreateSession, Event, GetSessionConfig, SessionService};
use serde_json::json;

use crate::unique;

async fn encrypted<S: SessionStore>(store: S, keys: &str) -> SessionService {
    SessionService::new(EncryptedStore::open(store, KeyRing::parse(keys).unwrap()).await.unwrap())
}

fn no_options() -> MemoryOptions {
    MemoryOptions::default()
}

/// Re-encryption on a backend: data written with one key (and some before encryption was on) is
/// re-encrypted by [`agentstate::crypt::EncryptedStore::rekey`], after which the new key alone
/// reads every session, state value, event, history answer and memory. `open` makes a new handle to the
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
    let owner = MemoryOwner::new(&app, "u").unwrap();
    let memories = MemoryService::new(plain.clone()).is_supported();
    if memories {
        let legacy_memory = NewMemory { content: Content::text("user", "legacy kiwi"), ..NewMemory::default() };
        MemoryService::new(plain.clone()).add_memories(&owner, vec![legacy_memory], &no_options()).await.unwrap();
    }
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
    if memories {
        let memory = MemoryService::new(first.clone());
        let said = Event::new("inv").author("user").content(Content::text("user", "secret mango"));
        memory.add_events(&owner, Some("s"), &[said], &no_options()).await.unwrap();
        let direct = NewMemory { content: Content::text("user", "sealed papaya"), ..NewMemory::default() };
        memory.add_memories(&owner, vec![direct], &no_options()).await.unwrap();
    }

    // Rotate: the new key writes, both read; rekey.
    let rotating = EncryptedStore::open(open().await, KeyRing::parse(&format!("{new},{old}")).unwrap()).await.unwrap();
    let mut seen = 0;
    let done = rotating.rekey(|p| seen = p.sessions).await.unwrap();
    assert!(done.sessions >= 2 && seen == done.sessions, "{done:?}");
    assert!(done.values >= 5, "session, app and user values, the plaintext ones too: {done:?}");
    assert!(done.events >= 71, "{done:?}");
    assert!(done.snapshots >= 2, "the creation snapshot and a replay's: {done:?}");
    if memories {
        assert_eq!(done.memories, 3, "the plaintext memory and the two the old key sealed: {done:?}");
    }
    let again = rotating.rekey(|_| {}).await.unwrap();
    assert_eq!((again.values, again.events, again.snapshots, again.memories), (0, 0, 0, 0), "nothing left: {again:?}");

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
    if memories {
        // The new key alone finds every memory by its words; storage holds them sealed.
        let memory = MemoryService::new(only_new.clone());
        for (query, text) in [("kiwi", "legacy kiwi"), ("mango", "secret mango"), ("papaya", "sealed papaya")] {
            let found = memory.search(&owner, query, None).await.unwrap();
            assert_eq!(found.iter().map(|m| m.text()).collect::<Vec<_>>(), [text], "{query}");
        }
        let raw = MemoryService::new(SessionService::new(open().await)).list(&owner, None, 10).await.unwrap();
        assert_eq!(raw.memories.len(), 3);
        for stored in &raw.memories {
            let sealed = stored.custom_metadata.get("agentstate_sealed").and_then(|v| v.as_str()).unwrap_or_default();
            assert!(sealed.starts_with("$as1$new$") && stored.text().is_empty(), "{stored:?}");
        }
    }
}
