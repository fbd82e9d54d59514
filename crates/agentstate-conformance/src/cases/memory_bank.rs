//! Memory Bank on the memory store: memories named by engine and id alone, found in their scope
//! (the store's `find_memories`), kept apart by scope, updated with their revisions kept and
//! rolled back, expired, deleted and erased.

use std::collections::BTreeMap;
use std::time::Duration;

use agentstate::ErrorKind;
use agentstate::memory::{BankMemory, MemoryOptions, MemoryOwner, RevisionOptions, Scope};

use super::Svc;
use super::memory::{memory_of, said};
use crate::unique;

fn scope(pairs: &[(&str, &str)]) -> Scope {
    Scope::new(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>()).unwrap()
}

pub(crate) async fn memory_bank_names_find_their_scope(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let (engine, other) = (unique("bank"), unique("bank-other"));
    let alice = scope(&[("app_name", &engine), ("user_id", "alice")]);
    let bob_alone = scope(&[("user_id", "bob")]);

    let mut first = BankMemory::new("m1", alice.clone(), "alice likes green tea");
    first.metadata.insert("source".into(), serde_json::json!("chat"));
    let none = RevisionOptions::default();
    let labelled = RevisionOptions { labels: [("author".to_owned(), "user".to_owned())].into(), ..Default::default() };
    let stored = memory.bank_create(&engine, first, &labelled).await.unwrap();
    assert!(stored.create_micros > 0 && stored.update_micros == stored.create_micros);
    memory
        .bank_create(&engine, BankMemory::new("m2", bob_alone.clone(), "bob likes black coffee"), &none)
        .await
        .unwrap();

    let got = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    assert_eq!((got.scope, got.fact.as_str()), (alice.clone(), "alice likes green tea"));
    assert_eq!(got.metadata.get("source"), Some(&serde_json::json!("chat")));
    assert_eq!(memory.bank_get(&engine, "m2").await.unwrap().unwrap().scope, bob_alone);
    assert!(memory.bank_get(&other, "m1").await.unwrap().is_none(), "another engine's names are its own");
    assert!(memory.bank_get(&engine, "m3").await.unwrap().is_none());
    let taken = memory.bank_create(&engine, BankMemory::new("m1", bob_alone.clone(), "another fact"), &none).await;
    assert_eq!(taken.unwrap_err().kind(), ErrorKind::AlreadyExists, "ids are distinct per engine");
    let empty = memory.bank_create(&engine, BankMemory::new("m9", alice.clone(), "  "), &none).await;
    assert_eq!(empty.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(memory.bank_get(&engine, "m9").await.unwrap().is_none(), "nothing written");

    // The ADK-form scope is the app's user: ADK's memory services read the same memories.
    let owner = MemoryOwner::new(&engine, "alice").unwrap();
    let found = memory.search(&owner, "green tea", None).await.unwrap();
    assert_eq!(found.iter().map(|m| m.text()).collect::<Vec<_>>(), ["alice likes green tea"]);
    assert_eq!(found[0].custom_metadata.len(), 1, "agentstate's own fields stay hidden: {found:?}");
    // And a memory ADK's services wrote there is a Memory Bank memory of that scope.
    memory
        .add_events(&owner, Some("s1"), &[said("user", "alice flies to lisbon")], &MemoryOptions::default())
        .await
        .unwrap();
    let searched = memory.bank_search(&engine, &alice, "lisbon", 3).await.unwrap();
    assert_eq!(searched.iter().map(|m| m.fact.as_str()).collect::<Vec<_>>(), ["alice flies to lisbon"]);
    // It is updated in place, in its session.
    let mut moved = searched[0].clone();
    moved.fact = "alice flies to porto".into();
    assert!(
        memory.bank_update(&engine, &searched[0], moved, &none).await.unwrap().is_some(),
        "a memory of a session is updated"
    );
    let listed = memory.list(&owner, None, 10).await.unwrap().memories;
    let texts: Vec<(String, Option<String>)> = listed.iter().map(|m| (m.text(), m.session_id.clone())).collect();
    assert!(texts.contains(&("alice flies to porto".to_owned(), Some("s1".to_owned()))), "{texts:?}");
    assert_eq!(listed.len(), 2, "rewritten, not added: {texts:?}");
    assert!(memory.bank_search(&engine, &scope(&[("user_id", "alice")]), "tea", 3).await.unwrap().is_empty());
    let coffee = memory.bank_search(&engine, &bob_alone, "coffee", 3).await.unwrap();
    assert_eq!(coffee.iter().map(|m| (m.id.as_str(), &m.scope)).collect::<Vec<_>>(), [("m2", &bob_alone)]);

    // Updates keep the create time and move the update time with the fact; every write keeps
    // a revision, in the memory's own record.
    svc.clock().advance(Duration::from_secs(5));
    let before = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    let revisions: Vec<_> = before.revisions().iter().map(|r| (r.id.as_str(), r.fact.as_str())).collect();
    assert_eq!(revisions, [("1", "alice likes green tea")]);
    assert_eq!(before.revisions()[0].labels.get("author").map(String::as_str), Some("user"));
    let mut changed = before.clone();
    changed.fact = "alice likes oolong tea".into();
    let extracted = RevisionOptions { extracted: vec!["alice now drinks oolong".into()], ..Default::default() };
    let updated = memory.bank_update(&engine, &before, changed, &extracted).await.unwrap().unwrap();
    assert_eq!(updated.create_micros, stored.create_micros);
    assert_eq!(updated.update_micros, stored.create_micros + 5_000_000);
    let got = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    assert_eq!(got.fact, "alice likes oolong tea");
    assert!(memory.search(&owner, "green", None).await.unwrap().is_empty(), "re-indexed");
    let revisions: Vec<_> = got.revisions().iter().map(|r| (r.id.as_str(), r.fact.as_str())).collect();
    assert_eq!(revisions, [("1", "alice likes green tea"), ("2", "alice likes oolong tea")]);
    assert_eq!(got.revisions()[1].extracted, ["alice now drinks oolong"]);
    assert_eq!(got.revisions()[1].create_micros, updated.update_micros);
    // A rollback sets the fact back and is a revision of its own; the revisions are not
    // found by search.
    let rolled = memory.bank_rollback(&engine, &got, "1").await.unwrap().unwrap();
    assert_eq!(rolled.fact, "alice likes green tea");
    let got = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    let ids: Vec<_> = got.revisions().iter().map(|r| r.id.as_str()).collect();
    assert_eq!((got.fact.as_str(), ids), ("alice likes green tea", vec!["1", "2", "3"]));
    assert!(memory.search(&owner, "oolong", None).await.unwrap().is_empty(), "revisions are not searched");
    let unknown = memory.bank_rollback(&engine, &got, "9").await;
    assert_eq!(unknown.unwrap_err().kind(), ErrorKind::InvalidArgument);
    // A write may keep no revision, and a revision may expire before its memory.
    let mut quiet = got.clone();
    quiet.fact = "alice likes oolong tea".into();
    let off = RevisionOptions { disabled: true, ..Default::default() };
    memory.bank_update(&engine, &got, quiet, &off).await.unwrap().unwrap();
    let got = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    assert_eq!((got.fact.as_str(), got.revisions().len()), ("alice likes oolong tea", 3));
    let brief_revision =
        RevisionOptions { expire_micros: Some(svc.service().now_micros() + 1_000_000), ..Default::default() };
    let mut again = got.clone();
    again.description = Some("tea".into());
    memory.bank_update(&engine, &got, again, &brief_revision).await.unwrap().unwrap();
    svc.clock().advance(Duration::from_secs(2));
    let got = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    let mut later = got.clone();
    later.description = Some("oolong".into());
    memory.bank_update(&engine, &got, later, &none).await.unwrap().unwrap();
    let got = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    let ids: Vec<_> = got.revisions().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "5"], "the expired revision is dropped, its id not taken again");

    // Every memory of the engine, a page at a time, each once.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = memory.bank_list_engine(&engine, after, 1).await.unwrap();
        seen.extend(page.memories.into_iter().map(|m| m.fact));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["alice flies to porto", "alice likes oolong tea", "bob likes black coffee"]);

    // Expiry and deletion.
    let mut brief = BankMemory::new("m4", alice.clone(), "alice is in porto today");
    brief.expire_micros = Some(svc.service().now_micros() + 60_000_000);
    memory.bank_create(&engine, brief, &none).await.unwrap();
    assert!(memory.bank_get(&engine, "m4").await.unwrap().is_some());
    svc.clock().advance(Duration::from_secs(61));
    assert!(memory.bank_get(&engine, "m4").await.unwrap().is_none(), "expired");
    let m1 = memory.bank_get(&engine, "m1").await.unwrap().unwrap();
    assert!(memory.bank_delete(&engine, &m1).await.unwrap());
    assert!(!memory.bank_delete(&engine, &m1).await.unwrap());
    assert!(memory.bank_get(&engine, "m1").await.unwrap().is_none());
    let again = memory.bank_create(&engine, BankMemory::new("m1", alice.clone(), "alice likes mint tea"), &none).await;
    assert_eq!(again.unwrap_err().kind(), ErrorKind::InvalidArgument, "a deleted id is not taken again");

    // Erasing a user removes every scope naming the user too, and only those.
    if svc.capabilities().lifecycle.is_some() {
        let bob_topic = scope(&[("user_id", "bob"), ("topic", "coffee")]);
        memory.bank_create(&engine, BankMemory::new("m5", bob_topic, "bob grinds his own beans"), &none).await.unwrap();
        let carol = scope(&[("user_id", "carol"), ("topic", "coffee")]);
        memory.bank_create(&engine, BankMemory::new("m6", carol, "carol likes tea"), &none).await.unwrap();
        assert_eq!(svc.count_user_data(&engine, "bob").await.unwrap().memories, 2);
        assert_eq!(svc.erase_user(&engine, "bob").await.unwrap().memories, 2);
        assert!(memory.bank_get(&engine, "m2").await.unwrap().is_none(), "{{user_id: bob}} erased with bob");
        assert!(memory.bank_get(&engine, "m5").await.unwrap().is_none(), "{{user_id: bob, topic}} erased with bob");
        assert!(memory.bank_get(&engine, "m6").await.unwrap().is_some(), "carol's kept");
        memory.bank_create(&engine, BankMemory::new("m2", bob_alone, "bob starts again"), &none).await.unwrap();
    }
}
