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
