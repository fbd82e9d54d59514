//! Artifacts: ADK for Python 2.13's in-memory artifact service is the oracle (versions from 0,
//! `user:` names shared by the user's sessions, references, the rewind tombstone, its refusals).

use std::sync::Arc;

use agentstate::artifact::{ArtifactScope, ArtifactService, tombstone};
use agentstate::store::ArtifactKey;
use agentstate::{ErrorKind, Map, Part, Value};
use serde_json::json;

use super::Svc;
use crate::unique;

fn service(svc: &Svc) -> ArtifactService {
    let artifacts = ArtifactService::new(svc.service().clone());
    assert!(artifacts.is_supported(), "the case runs where the store keeps artifacts");
    artifacts
}

fn part(raw: Value) -> Part {
    serde_json::from_value(raw).unwrap()
}

/// An inline part of `bytes`, base64 as ADK's clients send it.
fn bytes_part(mime: &str, bytes: &[u8]) -> Part {
    part(json!({"inline_data": {"mime_type": mime, "data": agentstate::artifact::model::encode_base64(bytes)}}))
}

fn meta(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

pub(super) async fn artifacts_are_versioned_as_adk_versions_them(svc: Svc) {
    let artifacts = service(&svc);
    let app = unique("art");
    let s1 = ArtifactScope::new(&app, "ann", Some("s1"));
    let s2 = ArtifactScope::new(&app, "ann", Some("s2"));
    let created = svc.now_secs();
    let first =
        artifacts.save(s1, "report.txt", &Part::text("draft"), Some(meta(&[("by", json!("tool"))]))).await.unwrap();
    svc.clock().advance(std::time::Duration::from_secs(3));
    // Every byte value survives, and a payload of a megabyte.
    let binary: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
    let second = artifacts.save(s1, "report.txt", &bytes_part("application/pdf", &binary), None).await.unwrap();
    assert_eq!((first.version, second.version), (0, 1));
    assert_eq!(first.mime_type.as_deref(), Some("text/plain"));
    assert_eq!(first.custom_metadata, meta(&[("by", json!("tool"))]));
    assert_eq!(first.size, 5);
    assert!((first.create_time - created).abs() < 1e-3, "{} vs {created}", first.create_time);
    assert_eq!(
        first.canonical_uri,
        format!("artifact://apps/{app}/users/ann/sessions/s1/artifacts/report.txt/versions/0")
    );
    assert_eq!(second.mime_type.as_deref(), Some("application/pdf"));

    let latest = artifacts.load(s1, "report.txt", None).await.unwrap().unwrap();
    assert_eq!(latest, bytes_part("application/pdf", &binary), "the latest, every byte");
    assert_eq!(artifacts.load(s1, "report.txt", Some(0)).await.unwrap(), Some(Part::text("draft")));
    for missing in [Some(2), Some(-1)] {
        assert_eq!(artifacts.load(s1, "report.txt", missing).await.unwrap(), None, "{missing:?}");
        assert_eq!(artifacts.get_artifact_version(s1, "report.txt", missing).await.unwrap(), None);
    }
    assert_eq!(artifacts.list_versions(s1, "report.txt").await.unwrap(), [0, 1]);
    let versions = artifacts.list_artifact_versions(s1, "report.txt").await.unwrap();
    assert_eq!(versions, [first.clone(), second.clone()], "listed as saved");
    assert_eq!(artifacts.get_artifact_version(s1, "report.txt", None).await.unwrap(), Some(second));
    assert_eq!(artifacts.get_artifact_version(s1, "report.txt", Some(0)).await.unwrap(), Some(first));

    // Another session sees none of s1's artifacts; user: names are the user's in every session.
    assert_eq!(artifacts.load(s2, "report.txt", None).await.unwrap(), None);
    let shared = artifacts.save(s2, "user:profile.json", &Part::text("{}"), None).await.unwrap();
    assert_eq!(shared.canonical_uri, format!("artifact://apps/{app}/users/ann/artifacts/user:profile.json/versions/0"));
    assert_eq!(artifacts.save(s1, "user:profile.json", &Part::text("{\"a\":1}"), None).await.unwrap().version, 1);
    let alone = ArtifactScope::new(&app, "ann", None);
    assert_eq!(artifacts.load(alone, "user:profile.json", None).await.unwrap(), Some(Part::text("{\"a\":1}")));
    artifacts.save(s1, "dir/sub/a.png", &bytes_part("image/png", b"png"), None).await.unwrap();
    assert_eq!(artifacts.list_keys(s1).await.unwrap(), ["dir/sub/a.png", "report.txt", "user:profile.json"]);
    assert_eq!(artifacts.list_keys(s2).await.unwrap(), ["user:profile.json"]);
    assert_eq!(artifacts.list_keys(alone).await.unwrap(), ["user:profile.json"]);
    // Other users and apps have artifacts of their own.
    for other in [ArtifactScope::new(&app, "bob", Some("s1")), ArtifactScope::new("another-app", "ann", Some("s1"))] {
        assert!(artifacts.list_keys(other).await.unwrap().iter().all(|n| n != "report.txt"));
        assert_eq!(artifacts.load(other, "report.txt", None).await.unwrap(), None);
    }

    // Deleting removes every version; the next save starts at 0 again; a missing one is fine.
    assert_eq!(artifacts.delete(s1, "report.txt").await.unwrap(), 2);
    assert_eq!(artifacts.delete(s1, "report.txt").await.unwrap(), 0);
    assert_eq!(artifacts.load(s1, "report.txt", None).await.unwrap(), None);
    assert!(artifacts.list_versions(s1, "report.txt").await.unwrap().is_empty());
    assert_eq!(artifacts.save(s1, "report.txt", &Part::text("again"), None).await.unwrap().version, 0);
}

pub(super) async fn artifact_references_and_tombstones_load_as_adk_loads_them(svc: Svc) {
    let artifacts = service(&svc);
    let app = unique("art");
    let s1 = ArtifactScope::new(&app, "ann", Some("s1"));
    let target = artifacts.save(s1, "data.csv", &Part::text("a,b"), None).await.unwrap();
    artifacts.save(s1, "data.csv", &Part::text("c,d"), None).await.unwrap();
    let reference = |uri: &str| part(json!({"file_data": {"file_uri": uri}}));
    // A reference loads its target's version; its own metadata has no MIME type.
    let saved = artifacts.save(s1, "link", &reference(&target.canonical_uri), None).await.unwrap();
    assert_eq!(saved.mime_type, None);
    assert_eq!(artifacts.load(s1, "link", None).await.unwrap(), Some(Part::text("a,b")));
    // A chain of references is followed five deep, not six.
    let mut uri = target.canonical_uri.clone();
    for hop in 1..=6 {
        let name = format!("hop{hop}");
        uri = artifacts.save(s1, &name, &reference(&uri), None).await.unwrap().canonical_uri;
        let loaded = artifacts.load(s1, &name, None).await;
        if hop <= 5 {
            assert_eq!(loaded.unwrap(), Some(Part::text("a,b")), "{hop} deep");
        } else {
            let error = loaded.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidArgument);
            assert!(error.to_string().contains("Exceeded maximum recursion depth"), "{error}");
        }
    }
    // References out of the caller's app, user or session are refused.
    for outside in [
        format!("artifact://apps/{app}/users/bob/sessions/s1/artifacts/data.csv/versions/0"),
        "artifact://apps/other/users/ann/artifacts/user:x/versions/0".to_owned(),
        format!("artifact://apps/{app}/users/ann/sessions/s2/artifacts/data.csv/versions/0"),
        "artifact://nonsense".to_owned(),
    ] {
        let error = artifacts.save(s1, "bad-link", &reference(&outside), None).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{outside}");
    }
    assert!(artifacts.list_versions(s1, "bad-link").await.unwrap().is_empty(), "refused: nothing written");
    // A file elsewhere is kept as given, with its type.
    let file = part(json!({"file_data": {"file_uri": "gs://bucket/x.mp4", "mime_type": "video/mp4"}}));
    assert_eq!(artifacts.save(s1, "video", &file, None).await.unwrap().mime_type.as_deref(), Some("video/mp4"));
    assert_eq!(artifacts.load(s1, "video", None).await.unwrap(), Some(file));
    // A rewind's tombstone is a version that loads as none.
    artifacts.save(s1, "data.csv", &tombstone(), None).await.unwrap();
    assert_eq!(artifacts.load(s1, "data.csv", None).await.unwrap(), None);
    assert_eq!(artifacts.list_versions(s1, "data.csv").await.unwrap(), [0, 1, 2]);
    assert_eq!(artifacts.load(s1, "data.csv", Some(1)).await.unwrap(), Some(Part::text("c,d")));
    // Fields of the part that are not its payload come back as saved.
    let named = part(json!({"inline_data": {"mime_type": "image/png", "data": "AAEC", "display_name": "pic"}}));
    artifacts.save(s1, "pic", &named, None).await.unwrap();
    let back = serde_json::to_value(artifacts.load(s1, "pic", None).await.unwrap().unwrap()).unwrap();
    assert_eq!(back["inline_data"]["display_name"], "pic");
    assert_eq!(back["inline_data"]["data"], "AAEC");
}

pub(super) async fn bad_artifacts_are_refused_and_write_nothing(svc: Svc) {
    let artifacts = service(&svc);
    let app = unique("art");
    let text = Part::text("x");
    let refusals: Vec<(ArtifactScope<'_>, &str, Part, &str)> = vec![
        (ArtifactScope::new(&app, "ann", None), "notes", text.clone(), "Session ID must be provided"),
        (ArtifactScope::new(&app, "ann", Some("user")), "notes", text.clone(), "reserved value 'user'"),
        (ArtifactScope::new(&app, "ann", Some("../s")), "notes", text.clone(), "traversal"),
        (ArtifactScope::new(&app, "../ann", Some("s")), "notes", text.clone(), "traversal"),
        (ArtifactScope::new(&app, "ann", Some("s")), "../notes", text.clone(), "parent traversal"),
        (ArtifactScope::new(&app, "ann", Some("s")), "/etc/passwd", text.clone(), "Rooted"),
        (ArtifactScope::new(&app, "ann", Some("s")), "", text.clone(), "must not be empty"),
        (ArtifactScope::new(&app, "ann", Some("s")), "notes", Part::default(), "Not supported artifact type."),
        (ArtifactScope::new(&app, "ann", Some("s")), "notes", part(json!({"inline_data": {"data": "%%%"}})), "base64"),
    ];
    for (scope, name, given, says) in refusals {
        let error = artifacts.save(scope, name, &given, None).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{name}: {error}");
        assert!(error.to_string().contains(says), "{name}: {error}");
    }
    assert!(artifacts.list_keys(ArtifactScope::new(&app, "ann", Some("s"))).await.unwrap().is_empty());
    // Past the size limit: refused, with the numbers.
    let small = ArtifactService::new(svc.service().clone()).with_max_bytes(1000);
    let error = small
        .save(ArtifactScope::new(&app, "ann", Some("s")), "big", &bytes_part("x/y", &[7; 1001]), None)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("over the limit of 1000 bytes"), "{error}");
    assert!(artifacts.list_keys(ArtifactScope::new(&app, "ann", Some("s"))).await.unwrap().is_empty());
}

pub(super) async fn concurrent_saves_of_one_artifact_get_distinct_versions(svc: Svc) {
    let artifacts = service(&svc);
    let app: Arc<str> = unique("art").into();
    let saves = (0..8).map(|i| {
        let (artifacts, app) = (artifacts.clone(), Arc::clone(&app));
        tokio::spawn(async move {
            let scope = ArtifactScope::new(&app, "ann", Some("s"));
            let saved = artifacts.save(scope, "shared.txt", &Part::text(format!("writer {i}")), None).await.unwrap();
            (saved.version, i)
        })
    });
    let mut versions = Vec::new();
    for save in saves {
        versions.push(save.await.unwrap());
    }
    let scope = ArtifactScope::new(&app, "ann", Some("s"));
    let mut numbers: Vec<i64> = versions.iter().map(|(v, _)| *v).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..8).collect::<Vec<_>>(), "eight saves, eight versions");
    for (version, writer) in versions {
        let loaded = artifacts.load(scope, "shared.txt", Some(version)).await.unwrap();
        assert_eq!(loaded, Some(Part::text(format!("writer {writer}"))), "version {version} is its writer's");
    }
}

pub(super) async fn a_sessions_and_a_users_artifacts_are_removed_together(svc: Svc) {
    let artifacts = service(&svc);
    let store = svc.service().capabilities().artifacts.unwrap();
    let app = unique("art");
    for (user, session) in [("ann", "s1"), ("ann", "s2"), ("bob", "s1")] {
        let scope = ArtifactScope::new(&app, user, Some(session));
        artifacts.save(scope, "a", &Part::text("1"), None).await.unwrap();
        artifacts.save(scope, "a", &Part::text("2"), None).await.unwrap();
        artifacts.save(scope, "user:u", &Part::text("3"), None).await.unwrap();
    }
    // Deleting a session (held by the store or not) removes its own, not the user's user: ones
    // nor another session's.
    svc.service().delete_session(&agentstate::SessionKey::new(&app, "ann", "s1").unwrap()).await.unwrap();
    assert_eq!(store.delete_session_artifacts(&app, "ann", "s1").await.unwrap(), 0, "none left");
    assert_eq!(artifacts.list_keys(ArtifactScope::new(&app, "ann", Some("s1"))).await.unwrap(), ["user:u"]);
    assert_eq!(artifacts.list_keys(ArtifactScope::new(&app, "ann", Some("s2"))).await.unwrap(), ["a", "user:u"]);
    // A user's: every one, user: ones too; another user's stay. Erasing the user counts them.
    assert_eq!(store.count_artifacts(&app, "ann").await.unwrap(), 4, "s2's two and user:u's two");
    if svc.service().capabilities().lifecycle.is_some() {
        assert_eq!(svc.service().count_user_data(&app, "ann").await.unwrap().artifacts, 4);
        assert_eq!(svc.service().erase_user(&app, "ann").await.unwrap().artifacts, 4);
    } else {
        assert_eq!(store.erase_artifacts(&app, "ann").await.unwrap(), 4);
    }
    assert_eq!(store.count_artifacts(&app, "ann").await.unwrap(), 0);
    assert!(artifacts.list_keys(ArtifactScope::new(&app, "ann", Some("s2"))).await.unwrap().is_empty());
    assert_eq!(artifacts.list_keys(ArtifactScope::new(&app, "bob", Some("s1"))).await.unwrap(), ["a", "user:u"]);
    let key = ArtifactKey { app: app.clone(), user: "bob".into(), session: Some("s1".into()), name: "a".into() };
    assert_eq!(store.artifact_versions(&key).await.unwrap().len(), 2);
}

/// One invocation: the user's event, the saves (a second apart), and the agent's event recording
/// them in its `artifact_delta`, as ADK's tool contexts do; the agent's event id.
async fn turn(
    svc: &Svc,
    artifacts: &ArtifactService,
    session: &mut agentstate::Session,
    invocation: &str,
    saves: &[(&str, &str)],
) -> String {
    let tick = || svc.clock().advance(std::time::Duration::from_secs(1));
    let (app, user, id) = (session.app_name().to_owned(), session.user_id().to_owned(), session.id().to_owned());
    // Stamped by the service's clock, as the saves are.
    let event = |author: &str| {
        let mut event = agentstate::Event::new(invocation).author(author);
        event.timestamp = svc.now_secs();
        event
    };
    tick();
    svc.service().append_event(session, event("user")).await.unwrap();
    let mut delta = Map::new();
    for (name, text) in saves {
        tick();
        let scope = ArtifactScope::new(&app, &user, Some(&id));
        let saved = artifacts.save(scope, name, &Part::text(*text), None).await.unwrap();
        delta.insert((*name).to_owned(), json!(saved.version));
    }
    tick();
    let mut answer = event("agent");
    answer.actions.artifact_delta = delta;
    svc.service().append_event(session, answer).await.unwrap().id
}

pub(super) async fn rewinds_restore_artifact_versions_as_adk_does(svc: Svc) {
    use agentstate::CreateSession;
    let artifacts = service(&svc);
    let app = unique("art");
    let mut session = svc.service().create_session(CreateSession::new(&app, "ann").id("s")).await.unwrap();
    let scope = ArtifactScope::new(&app, "ann", Some("s"));
    let tick = || svc.clock().advance(std::time::Duration::from_secs(1));
    // Invocation 1 saves a; invocation 2 saves a again, b, and a user: artifact.
    turn(&svc, &artifacts, &mut session, "inv-1", &[("a", "one")]).await;
    let last = turn(&svc, &artifacts, &mut session, "inv-2", &[("a", "two"), ("b", "new"), ("user:u", "mine")]).await;
    tick();
    let rewound = svc.service().rewind(&mut session, "inv-2").await;
    let Some(rewound) = svc.history(rewound) else { return };
    // a back to what it held before inv-2 (a new version), b gone (a tombstone), user:u kept.
    assert_eq!(rewound.actions.artifact_delta, json!({"a": 2, "b": 1}).as_object().unwrap().clone());
    assert_eq!(artifacts.load(scope, "a", None).await.unwrap(), Some(Part::text("one")));
    assert_eq!(artifacts.load(scope, "b", None).await.unwrap(), None, "the tombstone loads as none");
    assert_eq!(artifacts.list_versions(scope, "b").await.unwrap(), [0, 1], "history stays");
    assert_eq!(artifacts.load(scope, "user:u", None).await.unwrap(), Some(Part::text("mine")));
    // Rewinding to after inv-2's last event brings its versions back; nothing else changes.
    tick();
    let forward = svc.service().rewind_to_event(&mut session, &last).await.unwrap();
    assert_eq!(forward.actions.artifact_delta, json!({"a": 3, "b": 2}).as_object().unwrap().clone());
    assert_eq!(artifacts.load(scope, "a", None).await.unwrap(), Some(Part::text("two")));
    assert_eq!(artifacts.load(scope, "b", None).await.unwrap(), Some(Part::text("new")));
    // Versions are told by the events' deltas, as in ADK: the rewinds recorded versions after
    // `last`, so rewinding to it again saves a and b again, with what they held then.
    tick();
    let again = svc.service().rewind_to_event(&mut session, &last).await.unwrap();
    assert_eq!(again.actions.artifact_delta, json!({"a": 4, "b": 3}).as_object().unwrap().clone());
    assert_eq!(artifacts.load(scope, "a", None).await.unwrap(), Some(Part::text("two")));
    assert_eq!(artifacts.load(scope, "b", None).await.unwrap(), Some(Part::text("new")));
}

pub(super) async fn forks_carry_the_artifacts_of_their_fork_point(svc: Svc) {
    use agentstate::CreateSession;
    use agentstate::history::ForkSession;
    let artifacts = service(&svc);
    let app = unique("art");
    let mut session = svc.service().create_session(CreateSession::new(&app, "ann").id("s")).await.unwrap();
    let scope = |id: &'static str| ArtifactScope::new(&app, "ann", Some(id));
    // Saved straight through the service before the first turn: no event records it.
    svc.clock().advance(std::time::Duration::from_secs(1));
    artifacts.save(scope("s"), "early", &Part::text("before"), None).await.unwrap();
    let first = turn(&svc, &artifacts, &mut session, "inv-1", &[("a", "one")]).await;
    let last = turn(&svc, &artifacts, &mut session, "inv-2", &[("a", "two"), ("b", "new"), ("user:u", "mine")]).await;
    svc.clock().advance(std::time::Duration::from_secs(1));
    artifacts.save(scope("s"), "late", &Part::text("after"), None).await.unwrap();
    let fork = |at: &str, id: &str| ForkSession {
        source: session.key().clone(),
        at_event_id: at.to_owned(),
        session_id: Some(id.to_owned()),
    };
    let Some(early) = svc.history(svc.service().fork_session(fork(&first, "f1")).await) else { return };
    // As at the end of inv-1: a's first version, the early one; user: ones are the user's anyway.
    assert_eq!(early.id(), "f1");
    assert_eq!(artifacts.list_keys(scope("f1")).await.unwrap(), ["a", "early", "user:u"]);
    assert_eq!(artifacts.list_versions(scope("f1"), "a").await.unwrap(), [0]);
    assert_eq!(artifacts.load(scope("f1"), "a", None).await.unwrap(), Some(Part::text("one")));
    assert_eq!(artifacts.load(scope("f1"), "early", None).await.unwrap(), Some(Part::text("before")));
    // At the end of inv-2: the versions its events name, numbered as in the source.
    svc.service().fork_session(fork(&last, "f2")).await.unwrap();
    assert_eq!(artifacts.list_keys(scope("f2")).await.unwrap(), ["a", "b", "early", "user:u"]);
    assert_eq!(artifacts.list_versions(scope("f2"), "a").await.unwrap(), [0, 1]);
    assert_eq!(artifacts.load(scope("f2"), "a", Some(0)).await.unwrap(), Some(Part::text("one")));
    assert_eq!(artifacts.load(scope("f2"), "b", None).await.unwrap(), Some(Part::text("new")));
    // Copies: a save in the fork is the fork's; the source is untouched.
    artifacts.save(scope("f2"), "a", &Part::text("forked"), None).await.unwrap();
    assert_eq!(artifacts.load(scope("s"), "a", None).await.unwrap(), Some(Part::text("two")));
    assert_eq!(artifacts.list_keys(scope("s")).await.unwrap(), ["a", "b", "early", "late", "user:u"]);
    // Deleting the source leaves the forks' artifacts.
    svc.service().delete_session(session.key()).await.unwrap();
    assert_eq!(artifacts.load(scope("f1"), "a", None).await.unwrap(), Some(Part::text("one")));
}

pub(super) async fn opened_streamed_and_in_place_artifacts_hold_what_loads_answer(svc: Svc) {
    use agentstate::store::Bytes;
    let artifacts = service(&svc);
    let app = unique("art");
    let scope = ArtifactScope::new(&app, "ann", Some("s"));
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 256) as u8).collect();
    // A payload decoded before the save: the part's own data is ignored.
    let bare = part(json!({"inline_data": {"mime_type": "application/x-big", "data": "ignored"}}));
    let saved = artifacts.save_inline(scope, "big", &bare, Bytes::from(bytes.clone()), None).await.unwrap();
    assert_eq!((saved.version, saved.size, saved.mime_type.as_deref()), (0, 300_000, Some("application/x-big")));
    assert_eq!(artifacts.load(scope, "big", None).await.unwrap(), Some(bytes_part("application/x-big", &bytes)));
    let opened = artifacts.open(scope, "big", None).await.unwrap().unwrap();
    assert_eq!(opened.kind, agentstate::store::PayloadKind::Inline);
    assert_eq!(opened.payload.size(), 300_000);
    assert_eq!(opened.payload.into_bytes().await.unwrap(), bytes);
    assert_eq!(opened.part, bytes_part("application/x-big", &[]), "the part with its payload left out");
    // Text, references followed, tombstones and missing versions, as loads answer them.
    artifacts.save(scope, "t", &Part::text("hello"), None).await.unwrap();
    let link = part(
        json!({"file_data": {"file_uri": format!("artifact://apps/{app}/users/ann/sessions/s/artifacts/big/versions/0")}}),
    );
    artifacts.save(scope, "link", &link, None).await.unwrap();
    let text = artifacts.open(scope, "t", None).await.unwrap().unwrap();
    assert_eq!(text.payload.into_bytes().await.unwrap(), "hello".as_bytes());
    let followed = artifacts.open(scope, "link", None).await.unwrap().unwrap();
    assert_eq!(followed.payload.into_bytes().await.unwrap(), bytes);
    artifacts.save(scope, "t", &tombstone(), None).await.unwrap();
    assert!(artifacts.open(scope, "t", None).await.unwrap().is_none());
    assert!(artifacts.open(scope, "t", Some(7)).await.unwrap().is_none());
    assert!(artifacts.save_inline(scope, "x", &Part::text("no inline data"), Bytes::new(), None).await.is_err());
    // Bytes that arrive in chunks (cut anywhere) are one version; past the limit, none.
    let chunks = |bytes: &[u8], cut: usize| -> agentstate::store::PayloadStream {
        let chunks: Vec<agentstate::Result<Bytes>> = bytes.chunks(cut).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
        Box::pin(futures_util::stream::iter(chunks))
    };
    let streamed = artifacts.save_chunks(scope, "big", Some("image/x"), chunks(&bytes, 70_001), None).await.unwrap();
    assert_eq!((streamed.version, streamed.size, streamed.mime_type.as_deref()), (1, 300_000, Some("image/x")));
    assert_eq!(artifacts.load(scope, "big", None).await.unwrap(), Some(bytes_part("image/x", &bytes)));
    let tiny = artifacts.save_chunks(scope, "tiny", None, chunks(b"ab", 1), Some(meta(&[("k", json!(1))]))).await;
    let tiny = tiny.unwrap();
    assert_eq!((tiny.size, tiny.mime_type.as_deref()), (2, Some("application/octet-stream")));
    assert_eq!(artifacts.list_artifact_versions(scope, "tiny").await.unwrap()[0].custom_metadata["k"], json!(1));
    let limited = artifacts.clone().with_max_bytes(100_000);
    let refused = limited.save_chunks(scope, "big", None, chunks(&bytes, 30_000), None).await.unwrap_err();
    assert!(refused.to_string().contains("over the limit of"), "{refused}");
    assert_eq!(artifacts.list_versions(scope, "big").await.unwrap(), [0, 1], "nothing stored past the limit");
    assert_eq!(artifacts.list_keys(scope).await.unwrap(), ["big", "link", "t", "tiny"]);
}

pub(super) async fn retention_removes_artifact_versions_replaced_before_its_cut(svc: Svc) {
    use agentstate::{CreateSession, Retention};
    let artifacts = service(&svc);
    let app = unique("art");
    let mut session = svc.service().create_session(CreateSession::new(&app, "ann").id("s")).await.unwrap();
    let scope = ArtifactScope::new(&app, "ann", Some("s"));
    turn(&svc, &artifacts, &mut session, "inv-1", &[("a", "a0"), ("b", "b0"), ("user:u", "u0")]).await;
    turn(&svc, &artifacts, &mut session, "inv-2", &[("a", "a1"), ("user:u", "u1")]).await;
    turn(&svc, &artifacts, &mut session, "inv-3", &[("a", "a2"), ("c", "c0")]).await;
    let keep_2 = Retention { keep_last: Some(2), max_age: None };
    if svc.service().capabilities().history.is_none() {
        return;
    }
    // inv-3's two events stay; a1 was in effect when they began, so a0 alone goes.
    assert_eq!(svc.service().apply_retention(session.key(), keep_2).await.unwrap(), 4);
    assert_eq!(artifacts.list_versions(scope, "a").await.unwrap(), [1, 2]);
    assert_eq!(artifacts.load(scope, "a", Some(0)).await.unwrap(), None);
    assert_eq!(artifacts.load(scope, "a", Some(1)).await.unwrap(), Some(Part::text("a1")));
    assert_eq!(artifacts.load(scope, "a", None).await.unwrap(), Some(Part::text("a2")));
    assert_eq!(artifacts.list_versions(scope, "b").await.unwrap(), [0], "b0 is still in effect");
    assert_eq!(artifacts.list_versions(scope, "c").await.unwrap(), [0]);
    assert_eq!(artifacts.list_versions(scope, "user:u").await.unwrap(), [0, 1], "the user's are not the session's");
    let store = svc.service().capabilities().artifacts.unwrap();
    assert_eq!(store.count_artifacts(&app, "ann").await.unwrap(), 6);
    // Numbers go on from the newest; a second pass removes nothing more.
    assert_eq!(artifacts.save(scope, "a", &Part::text("a3"), None).await.unwrap().version, 3);
    svc.service().apply_retention(session.key(), keep_2).await.unwrap();
    assert_eq!(artifacts.list_versions(scope, "a").await.unwrap(), [1, 2, 3]);
}
