//! The conformance suite, the model test and the two-instance runs on the local Redis.

use std::sync::Arc;

use agentstate::SessionService;
use agentstate::store::SessionStore;
use agentstate_redis::RedisSessionService;

use crate::servers::{redis_url, run_prefix, url_with_prefix};

async fn open() -> RedisSessionService {
    RedisSessionService::connect(&url_with_prefix(&redis_url(), &run_prefix().await)).await.unwrap()
}

pub(crate) async fn service() -> Arc<dyn SessionService> {
    Arc::new(open().await)
}

agentstate_conformance::session_service_tests!(service);

#[test]
fn agrees_with_the_model() {
    agentstate_conformance::check_against_model(service, 32);
}

/// Two services (two connections, as two processes would have) used alternately.
pub(crate) async fn two_instances() -> Arc<dyn SessionService> {
    let a: Arc<dyn SessionStore> = Arc::new(open().await);
    let b: Arc<dyn SessionStore> = Arc::new(open().await);
    Arc::new(agentstate_conformance::Alternating::new(vec![a, b]))
}

mod two_instances {
    agentstate_conformance::session_service_tests!(super::two_instances);
}

#[test]
fn two_instances_agree_with_the_model() {
    agentstate_conformance::check_against_model(two_instances, 24);
}

/// The suite again through encryption at rest.
mod encrypted {
    use super::*;

    async fn service() -> Arc<dyn SessionService> {
        agentstate_conformance::encrypted(open().await).await
    }

    agentstate_conformance::session_service_tests!(service);

    #[test]
    fn agrees_with_the_model() {
        agentstate_conformance::check_against_model(service, 16);
    }
}
