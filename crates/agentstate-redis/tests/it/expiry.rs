//! Expiry is native on Redis: an expiring session's own keys carry its expire time, so Redis
//! removes them by itself at that time; the sweep then only unlists it.

use std::time::Duration;

use agentstate::{CreateSession, Event, SessionService};
use agentstate_redis::RedisStore;
use serde_json::json;

use crate::servers::{fresh_prefix, redis_url, url_with_prefix};

async fn keys(connection: &mut redis::aio::MultiplexedConnection, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS").arg(pattern).query_async(connection).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_sessions_keys_expire_with_it() {
    let prefix = fresh_prefix();
    let svc = SessionService::new(RedisStore::connect(&url_with_prefix(&redis_url(), &prefix)).await.unwrap());
    let request = CreateSession::new("app", "u").id("s").state("k", json!(1)).ttl(Duration::from_millis(800));
    let mut session = svc.create_session(request).await.unwrap();
    let mut event = Event::new("inv").author("agent").delta("k", json!(2)).delta("user:kept", json!(true));
    event.id = "e1".to_owned();
    svc.append_event(&mut session, event).await.unwrap();
    svc.state_at(session.key(), agentstate::history::HistoryAt::AfterEvent("e1".into())).await.unwrap();

    let mut connection = redis::Client::open(redis_url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let own = keys(&mut connection, &format!("{prefix}{{app}}:*:u:s")).await;
    assert!(own.len() >= 5, "meta, state, events, event data, invocations: {own:?}");
    for key in &own {
        let ttl: i64 = redis::cmd("PTTL").arg(key).query_async(&mut connection).await.unwrap();
        assert!((1..=800).contains(&ttl), "{key} expires with the session: {ttl} ms");
    }
    let user: i64 = redis::cmd("PTTL").arg(format!("{prefix}{{app}}:u:u")).query_async(&mut connection).await.unwrap();
    assert_eq!(user, -1, "shared state never expires");

    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(keys(&mut connection, &format!("{prefix}{{app}}:*:u:s")).await.is_empty(), "Redis removed them");
    assert!(svc.get_session(session.key(), agentstate::GetSessionConfig::default()).await.unwrap().is_none());
    let listed: i64 =
        redis::cmd("ZCARD").arg(format!("{prefix}{{app}}:sessions")).query_async(&mut connection).await.unwrap();
    assert_eq!(listed, 1, "still listed until swept");
    assert!(svc.sweep_expired(100).await.unwrap() >= 1);
    let listed: i64 =
        redis::cmd("ZCARD").arg(format!("{prefix}{{app}}:sessions")).query_async(&mut connection).await.unwrap();
    assert_eq!(listed, 0, "unlisted by the sweep");
}
