use std::sync::Arc;

use agentstate::{SessionService, SessionStore};
use agentstate_conformance::Alternating;
use agentstate_sql::SqlSessionService;

use crate::servers::postgres_url;

pub(crate) async fn postgres() -> Arc<dyn SessionService> {
    Arc::new(SqlSessionService::connect(&postgres_url().await).await.unwrap())
}

agentstate_conformance::session_service_tests!(postgres);

#[test]
fn postgres_agrees_with_the_model() {
    agentstate_conformance::check_against_model(postgres, 24);
}

/// Two independent service instances on one database, used alternately: as two processes would.
pub(crate) async fn postgres_two_instances() -> Arc<dyn SessionService> {
    let url = postgres_url().await;
    let a: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
    let b: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
    Arc::new(Alternating::new(vec![a, b]))
}

mod two_instances {
    agentstate_conformance::session_service_tests!(super::postgres_two_instances);
}

#[test]
fn postgres_two_instances_agree_with_the_model() {
    agentstate_conformance::check_against_model(postgres_two_instances, 24);
}
