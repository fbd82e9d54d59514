//! After `erase_user`, no key under the service's prefix holds anything of that user: a marker
//! written in the user's state, events and memories is in no key name, field or value.

use agentstate::{CreateSession, Event, SessionService};
use agentstate_redis::RedisStore;
use serde_json::json;

use crate::servers::{fresh_prefix, redis_url, url_with_prefix};

/// Every key name, field and value under `prefix`, as one text.
async fn everything(connection: &mut redis::aio::MultiplexedConnection, prefix: &str) -> String {
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query_async(connection).await.unwrap();
    let mut all = String::new();
    for key in keys {
        all.push_str(&key);
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(connection).await.unwrap();
        let parts: Vec<Vec<u8>> = match kind.as_str() {
            "hash" => redis::cmd("HGETALL").arg(&key).query_async(connection).await.unwrap(),
            "zset" => redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).query_async(connection).await.unwrap(),
            "set" => redis::cmd("SMEMBERS").arg(&key).query_async(connection).await.unwrap(),
            "string" => vec![redis::cmd("GET").arg(&key).query_async(connection).await.unwrap()],
            other => panic!("{key} is a {other}"),
        };
        for part in parts {
            all.push_str(&String::from_utf8_lossy(&part));
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_holds_anything_of_an_erased_user() {
    let prefix = fresh_prefix();
    let svc = SessionService::new(RedisStore::connect(&url_with_prefix(&redis_url(), &prefix)).await.unwrap());
    let (gone, kept) = (format!("GONE-{}", Event::new_id()), format!("KEPT-{}", Event::new_id()));
    for (user, mark) in [(gone.as_str(), gone.as_str()), (kept.as_str(), kept.as_str())] {
        for id in ["s1", "s2"] {
            let request = CreateSession::new("app", user)
                .id(id)
                .state("user:email", json!(mark))
                .ttl(std::time::Duration::from_secs(600));
            let mut session = svc.create_session(request).await.unwrap();
            for i in 0..70 {
                let event = Event::new(format!("{mark}-inv"))
                    .author("user")
                    .content(agentstate::Content::text("user", format!("{mark} says {i}")))
                    .delta("note", json!(format!("{mark} {i}")));
                svc.append_event(&mut session, event).await.unwrap();
            }
            // Its memories: the session's events, some expiring, one deleted.
            let memory = agentstate::memory::MemoryService::new(svc.clone());
            memory.add_session(&session).await.unwrap();
            let owner = agentstate::memory::MemoryOwner::new("app", user).unwrap();
            let expiring = agentstate::memory::MemoryOptions {
                ttl: Some(std::time::Duration::from_secs(600)),
                ..Default::default()
            };
            memory
                .add_events(&owner, None, &session.events().iter().take(3).cloned().collect::<Vec<_>>(), &expiring)
                .await
                .unwrap();
            memory.delete(&owner, &session.events()[5].id).await.unwrap();
            svc.state_at(session.key(), agentstate::history::HistoryAt::Time(agentstate::store::now_secs()))
                .await
                .unwrap();
        }
    }
    let erased = svc.erase_user("app", &gone).await.unwrap();
    assert_eq!((erased.sessions, erased.events, erased.user_state_keys, erased.memories), (2, 140, 1, 144));
    let mut connection = redis::Client::open(redis_url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let all = everything(&mut connection, &prefix).await;
    assert!(!all.contains(&gone), "the erased user is in no key, field or value");
    assert!(all.contains(&kept), "the other user's data is there (the search works)");
}

/// Re-encryption on Redis (see `agentstate_conformance::check_rekey`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rekey_reencrypts_everything() {
    let url = url_with_prefix(&redis_url(), &fresh_prefix());
    agentstate_conformance::check_rekey(|| {
        let url = url.clone();
        async move { RedisStore::connect(&url).await.unwrap() }
    })
    .await;
}
