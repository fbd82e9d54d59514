//! Artifact payloads in a directory next to the index: the conformance suite over SQLite,
//! PostgreSQL and the in-memory store as indexes, every payload in a file; and what lands on
//! disk.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentstate::artifact::{ArtifactScope, ArtifactService};
use agentstate::clock::ManualClock;
use agentstate::store::SessionStore;
use agentstate::{CreateSession, Part, SessionKey, SessionService};
use agentstate_backends::{ArtifactFiles, DEFAULT_INLINE_BELOW};

/// A fresh directory under the system temp dir.
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn files_over(url: &str, inline_below: usize) -> Arc<dyn SessionStore> {
    let index = agentstate_backends::open(url).await.unwrap();
    Arc::new(ArtifactFiles::open(index, scratch_dir().join("artifacts")).unwrap().inline_below(inline_below))
}

mod over_sqlite {
    async fn store(_clock: agentstate::clock::ManualClock) -> std::sync::Arc<dyn agentstate::store::SessionStore> {
        let url = format!("sqlite://{}/index.db", super::scratch_dir().display());
        super::files_over(&url, 0).await
    }
    agentstate_conformance::session_store_tests!(store, lacks: [], model_cases: 16);
}

mod over_postgres {
    async fn store(_clock: agentstate::clock::ManualClock) -> std::sync::Arc<dyn agentstate::store::SessionStore> {
        let url = agentstate_conformance::databases::fresh_postgres().await;
        super::files_over(&url, 0).await
    }
    agentstate_conformance::session_store_tests!(store, lacks: [], model_cases: 16);
}

mod over_memory {
    async fn store(_clock: agentstate::clock::ManualClock) -> std::sync::Arc<dyn agentstate::store::SessionStore> {
        let index: std::sync::Arc<dyn agentstate::store::SessionStore> =
            std::sync::Arc::new(agentstate::InMemoryStore::new());
        let root = super::scratch_dir().join("artifacts");
        std::sync::Arc::new(agentstate_backends::ArtifactFiles::open(index, root).unwrap().inline_below(0))
    }
    agentstate_conformance::session_store_tests!(store, lacks: [], model_cases: 16);
}

/// Every file under `dir`, recursively.
/// A files store over a SQLite index in a scratch directory: the payloads' root and the store.
async fn scratch_files() -> (PathBuf, ArtifactFiles) {
    let dir = scratch_dir();
    let index = agentstate_backends::open(&format!("sqlite://{}/index.db", dir.display())).await.unwrap();
    let root = dir.join("artifacts");
    let store = ArtifactFiles::open(index, &root).unwrap();
    (root, store)
}

/// [`scratch_files`] as a session service reading `clock`.
async fn clocked_files(clock: &ManualClock) -> (PathBuf, SessionService) {
    let (root, store) = scratch_files().await;
    (root, SessionService::builder(store).clock(clock.clone()).build().unwrap())
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn big(text: &str) -> Part {
    Part::text(text.repeat(DEFAULT_INLINE_BELOW / text.len() + 1))
}

#[tokio::test]
async fn payloads_land_in_files_and_go_with_their_artifacts_sessions_and_users() {
    let clock = ManualClock::new();
    let (root, sessions) = clocked_files(&clock).await;
    let artifacts = ArtifactService::new(sessions.clone());
    let scope = |user: &'static str, session: &'static str| ArtifactScope::new("app", user, Some(session));

    // Small payloads stay in the index; large ones are a file each, holding the bytes.
    artifacts.save(scope("ann", "s1"), "small", &Part::text("tiny"), None).await.unwrap();
    assert!(files(&root).is_empty());
    for (user, session, name) in [("ann", "s1", "a"), ("ann", "s1", "a"), ("ann", "s2", "b"), ("ann", "s2", "user:u")] {
        artifacts.save(scope(user, session), name, &big(name), None).await.unwrap();
    }
    artifacts.save(scope("bob", "s1"), "a", &big("bob"), None).await.unwrap();
    assert_eq!(files(&root).len(), 5);
    assert_eq!(artifacts.load(scope("ann", "s1"), "a", Some(0)).await.unwrap(), Some(big("a")));
    assert_eq!(artifacts.load(scope("ann", "s1"), "small", None).await.unwrap(), Some(Part::text("tiny")));
    let on_disk = std::fs::read(&files(&root)[0]).unwrap();
    assert!(on_disk.len() >= DEFAULT_INLINE_BELOW);

    // A part may not bring the reserved entry.
    let mut sneaky = Part::text("x");
    sneaky.extra.insert(agentstate_backends::FILE_ENTRY.into(), "../../etc/passwd".into());
    assert!(artifacts.save(scope("ann", "s1"), "sneaky", &sneaky, None).await.is_err());

    // Deleting an artifact, a session, a user's data: their files go.
    artifacts.delete(scope("ann", "s1"), "a").await.unwrap();
    assert_eq!(files(&root).len(), 3);
    sessions.delete_session(&SessionKey::new("app", "ann", "s2").unwrap()).await.unwrap();
    assert_eq!(files(&root).len(), 2, "the session's b went, the user's user:u stays");
    assert_eq!(sessions.erase_user("app", "ann").await.unwrap().artifacts, 2, "small and user:u");
    assert_eq!(files(&root).len(), 1, "bob's stays");

    // The expiry sweep takes an expired session's files with it.
    let now = agentstate::store::micros_to_secs(sessions.now_micros());
    sessions.create_session(CreateSession::new("app", "bob").id("old").expire_time(now + 5.0)).await.unwrap();
    artifacts.save(scope("bob", "old"), "a", &big("old"), None).await.unwrap();
    assert_eq!(files(&root).len(), 2);
    clock.advance(std::time::Duration::from_secs(10));
    while sessions.sweep_expired(100).await.unwrap() == 100 {}
    assert_eq!(files(&root).len(), 1);
    assert_eq!(artifacts.load(scope("bob", "s1"), "a", None).await.unwrap(), Some(big("bob")));

    // Retention removes the files of the versions it removes.
    let mut session = sessions.create_session(CreateSession::new("app", "cy").id("r")).await.unwrap();
    let stamped = |clock: &ManualClock| {
        clock.advance(std::time::Duration::from_secs(1));
        let mut event = agentstate::Event::new("inv").author("user");
        event.timestamp = agentstate::store::micros_to_secs(sessions.now_micros());
        event
    };
    sessions.append_event(&mut session, stamped(&clock)).await.unwrap();
    for text in ["r0", "r1"] {
        clock.advance(std::time::Duration::from_secs(1));
        artifacts.save(scope("cy", "r"), "a", &big(text), None).await.unwrap();
    }
    sessions.append_event(&mut session, stamped(&clock)).await.unwrap();
    assert_eq!(files(&root).len(), 3);
    let keep_last = agentstate::Retention { keep_last: Some(1), max_age: None };
    assert_eq!(sessions.apply_retention(session.key(), keep_last).await.unwrap(), 1);
    assert_eq!(files(&root).len(), 2, "r0's file went");
    assert_eq!(artifacts.load(scope("cy", "r"), "a", None).await.unwrap(), Some(big("r1")));
}

#[tokio::test]
async fn encrypted_payload_files_hold_no_plaintext() {
    use agentstate::crypt::{EncryptedStore, KeyRing};
    let (root, store) = scratch_files().await;
    let files_store: Arc<dyn SessionStore> = Arc::new(store.inline_below(0));
    let keys = KeyRing::parse(&KeyRing::generate("k1").unwrap()).unwrap();
    let store = EncryptedStore::open(files_store, keys).await.unwrap();
    let artifacts = ArtifactService::new(SessionService::new(store));
    let scope = ArtifactScope::new("app", "ann", Some("s"));
    artifacts.save(scope, "secret.txt", &Part::text("the launch code is 0000"), None).await.unwrap();
    let written = files(&root);
    assert_eq!(written.len(), 1);
    let bytes = std::fs::read(&written[0]).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("launch code"));
    assert_eq!(artifacts.load(scope, "secret.txt", None).await.unwrap(), Some(Part::text("the launch code is 0000")));
}

#[tokio::test]
async fn forks_link_payload_files_and_loads_stream_them() {
    use std::os::unix::fs::MetadataExt as _;
    let clock = ManualClock::new();
    let (root, sessions) = clocked_files(&clock).await;
    let artifacts = ArtifactService::new(sessions.clone());
    let session = sessions.create_session(CreateSession::new("app", "ann").id("s")).await.unwrap();
    clock.advance(std::time::Duration::from_secs(1));
    let scope = |id: &'static str| ArtifactScope::new("app", "ann", Some(id));
    artifacts.save(scope("s"), "a", &big("one"), None).await.unwrap();
    artifacts.save(scope("s"), "small", &Part::text("tiny"), None).await.unwrap();
    clock.advance(std::time::Duration::from_secs(1));
    let mut session = session;
    let mut event = agentstate::Event::new("inv").author("user");
    event.timestamp = agentstate::store::micros_to_secs(sessions.now_micros());
    let event = sessions.append_event(&mut session, event).await.unwrap();
    let fork = agentstate::history::ForkSession {
        source: session.key().clone(),
        at_event_id: event.id.clone(),
        session_id: Some("f".into()),
    };
    sessions.fork_session(fork).await.unwrap();

    // One file, two names: the fork's payload is the source's bytes, not a copy of them.
    let linked = files(&root);
    assert_eq!(linked.len(), 2, "{linked:?}");
    let (first, second) = (std::fs::metadata(&linked[0]).unwrap(), std::fs::metadata(&linked[1]).unwrap());
    assert_eq!((first.ino(), first.nlink(), second.nlink()), (second.ino(), 2, 2));
    assert_eq!(artifacts.load(scope("f"), "small", None).await.unwrap(), Some(Part::text("tiny")));

    // A load of a file's payload streams it; the source's removal leaves the fork's name.
    let opened = artifacts.open(scope("f"), "a", None).await.unwrap().unwrap();
    assert!(matches!(opened.payload, agentstate::store::Payload::Chunks { .. }), "{:?}", opened.payload);
    sessions.delete_session(session.key()).await.unwrap();
    let left = files(&root);
    assert_eq!((left.len(), std::fs::metadata(&left[0]).unwrap().nlink()), (1, 1));
    assert_eq!(artifacts.load(scope("f"), "a", None).await.unwrap(), Some(big("one")));
    let text = String::from_utf8(opened.payload.into_bytes().await.unwrap().to_vec()).unwrap();
    assert_eq!(Some(Part::text(text)), Some(big("one")), "an open file reads to its end after its name went");
}

#[tokio::test]
async fn streamed_saves_write_their_file_as_chunks_come_and_leave_none_when_refused() {
    use agentstate::store::{Bytes, PayloadStream};
    let (root, store) = scratch_files().await;
    let sessions = SessionService::new(store);
    let artifacts = ArtifactService::new(sessions).with_max_bytes(1 << 20);
    let scope = ArtifactScope::new("app", "ann", Some("s"));
    let chunks = |size: usize| -> PayloadStream {
        let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let chunks: Vec<agentstate::Result<Bytes>> =
            bytes.chunks(10_000).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
        Box::pin(futures_util::stream::iter(chunks))
    };
    // Under the inline size: kept in the index, no file.
    artifacts.save_chunks(scope, "small", None, chunks(1000), None).await.unwrap();
    assert!(files(&root).is_empty());
    let saved = artifacts.save_chunks(scope, "big", Some("x/y"), chunks(500_000), None).await.unwrap();
    assert_eq!(saved.size, 500_000);
    let written = files(&root);
    assert_eq!(written.len(), 1);
    assert_eq!(std::fs::read(&written[0]).unwrap(), (0..500_000).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    // Past the limit the file being written goes, and no version is indexed.
    assert!(artifacts.save_chunks(scope, "big", None, chunks(2 << 20), None).await.is_err());
    assert_eq!(files(&root).len(), 1);
    assert_eq!(artifacts.list_versions(scope, "big").await.unwrap(), [0]);
}
