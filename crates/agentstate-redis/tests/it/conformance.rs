//! The conformance suite and the model test on every wrapper stack, and the two-instance runs,
//! on the local Redis.

use std::sync::Arc;

use agentstate::clock::ManualClock;
use agentstate::store::SessionStore;
use agentstate_redis::RedisStore;

use crate::servers::{redis_url, run_prefix, url_with_prefix};

pub(crate) async fn open() -> RedisStore {
    RedisStore::connect(&url_with_prefix(&redis_url(), &run_prefix().await)).await.unwrap()
}

async fn store(_clock: ManualClock) -> Arc<dyn SessionStore> {
    Arc::new(open().await)
}

agentstate_conformance::session_store_tests!(store, lacks: [], model_cases: 32);

/// Two stores (two connections, as two processes would have) used alternately.
async fn two_instances(_clock: ManualClock) -> Arc<dyn SessionStore> {
    let a: Arc<dyn SessionStore> = Arc::new(open().await);
    let b: Arc<dyn SessionStore> = Arc::new(open().await);
    Arc::new(agentstate_conformance::Alternating::new(vec![a, b]))
}

mod two_instances {
    agentstate_conformance::session_store_tests!(super::two_instances, lacks: [], model_cases: 24);
}

/// Redis answers the compacted view itself, plain and encrypted, from each event's facts (see
/// `agentstate_conformance::check_store_answers_views`).
#[test]
fn redis_answers_compacted_views() {
    for stack in [agentstate_conformance::Stack::Plain, agentstate_conformance::Stack::Encrypted] {
        agentstate_conformance::run(store, stack, agentstate_conformance::check_store_answers_views);
    }
}

/// The view reads each event's kept facts, and the text of an event without them (written before
/// facts were kept): the same view either way; the facts go with their events (retention, delete).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_views_read_events_without_facts_from_their_text() {
    use agentstate::{CreateSession, Event, Retention, SessionService};
    use agentstate_conformance::views::{compacted_ids, summarised_session};

    let prefix = crate::servers::fresh_prefix();
    let svc = SessionService::new(RedisStore::connect(&url_with_prefix(&redis_url(), &prefix)).await.unwrap());
    let mut connection = redis::Client::open(redis_url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let facts = format!("{prefix}{{app}}:f:u:s");
    let mut s = summarised_session(&svc, CreateSession::new("app", "u").id("s")).await;
    let with_facts = compacted_ids(&svc, s.key()).await;
    let count = |connection: &mut redis::aio::MultiplexedConnection| {
        let mut connection = connection.clone();
        let facts = facts.clone();
        async move { redis::cmd("HLEN").arg(facts).query_async::<i64>(&mut connection).await.unwrap() }
    };
    assert_eq!(count(&mut connection).await, 13, "every append keeps its facts");
    let whole = svc.get_session(s.key(), agentstate::GetSessionConfig::default()).await.unwrap().unwrap();
    let some: Vec<&str> = whole.events().iter().skip(2).take(4).map(|e| e.id.as_str()).collect();
    let _: i64 = redis::cmd("HDEL").arg(&facts).arg(&some).query_async(&mut connection).await.unwrap();
    assert_eq!(compacted_ids(&svc, s.key()).await, with_facts, "some facts");
    let _: i64 = redis::cmd("DEL").arg(&facts).query_async(&mut connection).await.unwrap();
    assert_eq!(compacted_ids(&svc, s.key()).await, with_facts, "no facts");

    svc.append_event(&mut s, Event::new("inv-last").author("user")).await.unwrap();
    assert_eq!(count(&mut connection).await, 1);
    svc.append_event(&mut s, Event::new("inv-next").author("user")).await.unwrap();
    assert_eq!(count(&mut connection).await, 2);
    svc.apply_retention(s.key(), Retention { keep_last: Some(1), max_age: None }).await.unwrap();
    assert_eq!(count(&mut connection).await, 1, "retention drops the facts of what it drops");
    svc.delete_session(s.key()).await.unwrap();
    assert_eq!(count(&mut connection).await, 0, "the facts go with their session");
}
