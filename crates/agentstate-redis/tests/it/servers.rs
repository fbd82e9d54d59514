//! The local Redis and a key prefix per test run (Redis servers of a test's own are
//! `agentstate_conformance::redis_servers`).

use std::time::{SystemTime, UNIX_EPOCH};

use agentstate_conformance::redis_servers::RUN_PREFIX;
pub(crate) use agentstate_conformance::redis_servers::{fresh_prefix, redis_url, url_with_prefix};
use tokio::sync::OnceCell;

static PREFIX: OnceCell<String> = OnceCell::const_new();

/// This test run's key prefix (the tests that share one). The first call also removes what runs
/// older than a day left behind.
pub(crate) async fn run_prefix() -> String {
    PREFIX
        .get_or_init(|| async {
            sweep_old_runs(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())).await;
            fresh_prefix()
        })
        .await
        .clone()
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
