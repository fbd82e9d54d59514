//! Long-term memory over time: deletion that lasts, owners kept apart, time to live, pages,
//! concurrent ingestion and erasure.

use std::collections::BTreeSet;
use std::time::Duration;

use agentstate::memory::{MemoryOptions, MemoryOwner, MemoryTtls};
use agentstate::store::MemoryCursor;
use serde_json::json;

use super::Svc;
use super::memory::{conversation, memory_of, said};
use crate::unique;

pub(crate) async fn deleted_memories_stay_deleted(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-delete");
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let session = conversation(&svc, &app, "alice", &["my password hint is turtle", "ok", "bye turtle"]).await;
    memory.add_session(&session).await.unwrap();
    let hint = session.events()[0].id.clone();
    // The same event also came in without a session.
    memory.add_events(&owner, None, &[session.events()[0].clone()], &MemoryOptions::default()).await.unwrap();

    assert_eq!(memory.delete(&owner, &hint).await.unwrap(), 2, "every copy of the id");
    assert_eq!(memory.delete(&owner, &hint).await.unwrap(), 0, "nothing left to delete");
    assert_eq!(memory.delete(&owner, "no-such-id").await.unwrap(), 0);
    let left: Vec<String> = memory.search(&owner, "turtle", None).await.unwrap().iter().map(|m| m.text()).collect();
    assert_eq!(left, ["bye turtle"]);
    // Adding the session again, or the event, does not bring it back.
    assert_eq!(memory.add_session(&session).await.unwrap(), 2);
    memory.add_events(&owner, Some("other"), &[session.events()[0].clone()], &MemoryOptions::default()).await.unwrap();
    assert_eq!(memory.search(&owner, "password", None).await.unwrap().len(), 0);
    assert!(memory.delete(&owner, "").await.is_err(), "ids are checked");
}

pub(crate) async fn memories_never_leave_their_owner(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let (app, other_app) = (unique("memory-owner"), unique("memory-owner-other"));
    let owners = [(app.as_str(), "alice"), (app.as_str(), "bob"), (other_app.as_str(), "alice")];
    let mut ids = Vec::new();
    for (i, (app, user)) in owners.iter().enumerate() {
        let mut event = said("user", &format!("secret number {i} shared word"));
        event.id = "same-id".into();
        let owner = MemoryOwner::new(*app, *user).unwrap();
        memory.add_events(&owner, Some("s1"), &[event], &MemoryOptions::default()).await.unwrap();
        ids.push(owner);
    }
    for (i, owner) in ids.iter().enumerate() {
        let found = memory.search(owner, "secret shared", Some(100)).await.unwrap();
        assert_eq!(found.iter().map(|m| m.text()).collect::<Vec<_>>(), [format!("secret number {i} shared word")]);
        assert_eq!(memory.list(owner, None, 100).await.unwrap().memories.len(), 1);
    }
    assert_eq!(memory.delete(&ids[0], "same-id").await.unwrap(), 1);
    assert_eq!(memory.count(&ids[0]).await.unwrap(), 0);
    assert_eq!(memory.count(&ids[1]).await.unwrap(), 1, "another user's memory with that id stays");
    assert_eq!(memory.count(&ids[2]).await.unwrap(), 1, "the same user's in another app stays");
    assert_eq!(memory.erase(&ids[1]).await.unwrap(), 1);
    assert_eq!(memory.count(&ids[2]).await.unwrap(), 1);
}

pub(crate) async fn memories_expire_by_their_time_to_live(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-ttl");
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let short = MemoryOptions { ttl: Some(Duration::from_secs(60)), ..MemoryOptions::default() };
    let by_metadata = MemoryOptions { custom_metadata: super::obj(json!({"ttl": "120s"})), ..MemoryOptions::default() };
    memory.add_events(&owner, Some("s1"), &[said("user", "short lived fact")], &short).await.unwrap();
    memory.add_events(&owner, Some("s2"), &[said("user", "longer lived fact")], &by_metadata).await.unwrap();
    memory.add_events(&owner, Some("s3"), &[said("user", "lasting fact")], &MemoryOptions::default()).await.unwrap();
    let found = memory.search(&owner, "fact", None).await.unwrap();
    assert_eq!(found.len(), 3);
    assert!(found.iter().filter(|m| m.expire_micros.is_some()).count() == 2);

    svc.clock().advance(Duration::from_secs(61));
    let texts = |found: Vec<agentstate::memory::Memory>| found.iter().map(|m| m.text()).collect::<BTreeSet<_>>();
    let live = texts(memory.search(&owner, "fact", None).await.unwrap());
    assert_eq!(live, BTreeSet::from(["longer lived fact".to_owned(), "lasting fact".to_owned()]));
    assert_eq!(memory.count(&owner).await.unwrap(), 2);
    assert_eq!(memory.list(&owner, None, 10).await.unwrap().memories.len(), 2);
    svc.clock().advance(Duration::from_secs(60));
    assert_eq!(
        texts(memory.list(&owner, None, 10).await.unwrap().memories),
        BTreeSet::from(["lasting fact".to_owned()])
    );
    // The sweep removes the expired ones from storage, in batches.
    let mut swept = 0;
    loop {
        let removed = memory.delete_expired(1).await.unwrap();
        if removed == 0 {
            break;
        }
        swept += removed;
    }
    assert!(swept >= 2, "both expired memories swept (other runs' may be swept too): {swept}");
    assert_eq!(memory.count(&owner).await.unwrap(), 1);

    // An app's default time to live applies to memories written without one of their own.
    let defaults = MemoryTtls::new().every_app(Duration::from_secs(3600)).app(&app, Duration::from_secs(30));
    let memory = memory.with_ttls(defaults);
    memory
        .add_events(&owner, Some("s4"), &[said("user", "default lived fact")], &MemoryOptions::default())
        .await
        .unwrap();
    memory.add_events(&owner, Some("s5"), &[said("user", "own lived fact")], &by_metadata).await.unwrap();
    let found = memory.search(&owner, "lived", None).await.unwrap();
    let lifetime = |text: &str| {
        let kept = found.iter().find(|m| m.text() == text).unwrap();
        kept.expire_micros.map(|expire| expire - kept.create_micros)
    };
    assert_eq!(lifetime("default lived fact"), Some(30_000_000), "the app's, over every app's");
    assert_eq!(lifetime("own lived fact"), Some(120_000_000), "a memory's own wins");
    svc.clock().advance(Duration::from_secs(31));
    let live = texts(memory.search(&owner, "lived", None).await.unwrap());
    assert_eq!(live, BTreeSet::from(["own lived fact".to_owned()]));
}

pub(crate) async fn memory_pages_cover_every_memory_once(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-pages");
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let texts: Vec<String> = (0..25).map(|i| format!("note number {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let session = conversation(&svc, &app, "alice", &texts).await;
    memory.add_session(&session).await.unwrap();
    let (mut seen, mut after): (Vec<String>, Option<MemoryCursor>) = (Vec::new(), None);
    loop {
        let page = memory.list(&owner, after, 10).await.unwrap();
        assert!(page.memories.len() <= 10);
        seen.extend(page.memories.iter().map(|m| m.text()));
        // Adding the session again between pages moves nothing.
        memory.add_session(&session).await.unwrap();
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, texts, "every memory once, in the order they were said");
    assert!(memory.list(&owner, None, 0).await.is_err());
}

pub(crate) async fn concurrent_ingestion_stores_each_event_once(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-race");
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let texts: Vec<String> = (0..12).map(|i| format!("remember item {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let session = conversation(&svc, &app, "alice", &texts).await;
    let mut tasks = Vec::new();
    for writer in 0..4 {
        let (memory, session, owner) = (memory.clone(), session.clone(), owner.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..5 {
                if (writer + round) % 2 == 0 {
                    memory.add_session(&session).await.unwrap();
                } else {
                    let events: Vec<_> = session.events().iter().cloned().collect();
                    let id = Some(session.id());
                    memory.add_events(&owner, id, &events, &MemoryOptions::default()).await.unwrap();
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let listed = memory.list(&owner, None, 100).await.unwrap().memories;
    let ids: BTreeSet<&str> = listed.iter().map(|m| m.id.as_str()).collect();
    assert_eq!((listed.len(), ids.len()), (12, 12), "each event once");
}

pub(crate) async fn erasing_a_user_removes_their_memories(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-erase");
    let (gone, kept) = (MemoryOwner::new(&app, "gone").unwrap(), MemoryOwner::new(&app, "kept").unwrap());
    let session = conversation(&svc, &app, "gone", &["marker-gone lives here", "and here marker-gone"]).await;
    memory.add_session(&session).await.unwrap();
    memory.delete(&gone, &session.events()[1].id).await.unwrap();
    let other = conversation(&svc, &app, "kept", &["marker-kept stays"]).await;
    memory.add_session(&other).await.unwrap();

    let erased = match svc.capabilities().lifecycle {
        Some(_) => {
            assert_eq!(svc.count_user_data(&app, "gone").await.unwrap().memories, 1);
            svc.erase_user(&app, "gone").await.unwrap().memories
        }
        None => memory.erase(&gone).await.unwrap(),
    };
    assert_eq!(erased, 1);
    assert_eq!(memory.count(&gone).await.unwrap(), 0);
    assert!(memory.search(&gone, "marker", None).await.unwrap().is_empty());
    assert_eq!(memory.count(&kept).await.unwrap(), 1, "other users keep theirs");
    // The deleted ids went too: the erased user starts again from nothing.
    memory.add_session(&session).await.unwrap();
    assert_eq!(memory.count(&gone).await.unwrap(), 2);
}
