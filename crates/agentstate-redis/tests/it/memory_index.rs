//! The memory index: a term's members in a zset by create time, so a search reads a common
//! word's newest hits without reading all of them; and the sets an earlier version kept per term,
//! which the first script to use a term moves over.

use agentstate::memory::{MemoryOptions, MemoryOwner, MemoryService, NewMemory};
use agentstate::{Content, SessionService};
use agentstate_redis::RedisStore;

use crate::servers::{fresh_prefix, redis_url, url_with_prefix};

async fn keys(connection: &mut redis::aio::MultiplexedConnection, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS").arg(pattern).query_async(connection).await.unwrap()
}

fn said(id: &str, text: &str) -> NewMemory {
    NewMemory { id: Some(id.into()), content: Content::text("user", text), ..NewMemory::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_common_word_finds_its_newest_memories_and_earlier_indexes_are_moved_over() {
    let prefix = fresh_prefix();
    let store = RedisStore::connect(&url_with_prefix(&redis_url(), &prefix)).await.unwrap();
    let memory = MemoryService::new(SessionService::new(store));
    let owner = MemoryOwner::new("app", "u").unwrap();
    let options = MemoryOptions::default();
    for i in 0..300 {
        let text = if i % 100 == 7 { format!("tea and a rare biscuit {i}") } else { format!("tea number {i}") };
        memory.add_memories(&owner, vec![said(&format!("m{i:03}"), &text)], &options).await.unwrap();
    }

    let newest = memory.search(&owner, "tea", Some(3)).await.unwrap();
    let ids: Vec<&str> = newest.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m299", "m298", "m297"], "a common word: its newest memories");
    let both = memory.search(&owner, "tea biscuit", Some(10)).await.unwrap();
    let ids: Vec<&str> = both.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids[..3], ["m207", "m107", "m007"], "both words first, newest first: {ids:?}");
    assert_eq!(memory.search(&owner, "tea", Some(100)).await.unwrap().len(), 100);

    // Turn the index back into the sets an earlier version wrote ('mi:', no order).
    let mut connection = redis::Client::open(redis_url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let indexes = keys(&mut connection, &format!("{prefix}{{app}}:mz:*")).await;
    assert!(indexes.len() > 300, "a zset per term: {}", indexes.len());
    for key in &indexes {
        let members: Vec<String> =
            redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).query_async(&mut connection).await.unwrap();
        let legacy = key.replacen(":mz:", ":mi:", 1);
        let _: () = redis::cmd("SADD").arg(&legacy).arg(&members).query_async(&mut connection).await.unwrap();
        let _: () = redis::cmd("DEL").arg(key).query_async(&mut connection).await.unwrap();
    }

    let again = memory.search(&owner, "biscuit tea", Some(10)).await.unwrap();
    assert_eq!(again, both, "the moved index answers as before");
    assert_eq!(memory.delete(&owner, "m207").await.unwrap(), 1);
    let ids: Vec<String> =
        memory.search(&owner, "biscuit", Some(10)).await.unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["m107", "m007"]);
    memory.add_memories(&owner, vec![said("m300", "a rare biscuit again")], &options).await.unwrap();
    let ids: Vec<String> =
        memory.search(&owner, "biscuit", Some(10)).await.unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["m300", "m107", "m007"]);
    let left = keys(&mut connection, &format!("{prefix}{{app}}:mi:*")).await;
    assert!(left.len() < indexes.len(), "the terms used were moved over");

    // Erasure removes moved and unmoved terms alike.
    memory.erase(&owner).await.unwrap();
    assert!(keys(&mut connection, &format!("{prefix}{{app}}:m*")).await.is_empty(), "nothing of the owner is left");
}
