//! The local Redis and a key prefix per test run (Redis servers of a test's own are
//! `agentstate_conformance::redis_servers`).

use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::OnceCell;

/// The shared local Redis.
pub(crate) fn redis_url() -> String {
    std::env::var("AGENTSTATE_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned())
}

const RUN_PREFIX: &str = "agentstate-test-";

static PREFIX: OnceCell<String> = OnceCell::const_new();

/// This test run's key prefix, `agentstate-test-<epoch seconds>-<random>:`. The first call also
/// removes what runs older than a day left behind.
pub(crate) async fn run_prefix() -> String {
    PREFIX
        .get_or_init(|| async {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
            sweep_old_runs(now).await;
            format!("{RUN_PREFIX}{now}-{}:", agentstate::Event::new_id())
        })
        .await
        .clone()
}

/// A prefix no other test uses.
pub(crate) async fn fresh_prefix() -> String {
    format!("{}{}:", run_prefix().await, agentstate::Event::new_id())
}

/// The local Redis URL with a prefix.
pub(crate) fn url_with_prefix(url: &str, prefix: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}prefix={prefix}")
}

async fn sweep_old_runs(now: u64) {
    let Ok(client) = redis::Client::open(redis_url()) else { return };
    let Ok(mut connection) = client.get_multiplexed_async_connection().await else { return };
    let mut cursor = 0u64;
    loop {
        let reply: redis::RedisResult<(u64, Vec<String>)> = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{RUN_PREFIX}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut connection)
            .await;
        let Ok((next, keys)) = reply else { return };
        let old: Vec<&String> = keys
            .iter()
            .filter(|k| {
                k[RUN_PREFIX.len()..]
                    .split('-')
                    .next()
                    .and_then(|t| t.parse::<u64>().ok())
                    .is_some_and(|t| t + 86_400 < now)
            })
            .collect();
        if !old.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("UNLINK").arg(old).query_async(&mut connection).await;
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}
