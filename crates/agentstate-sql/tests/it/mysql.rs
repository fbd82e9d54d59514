use std::sync::Arc;

use agentstate::{SessionService, SessionStore};
use agentstate_conformance::Alternating;
use agentstate_sql::SqlSessionService;

use crate::servers::mysql_url;

pub(crate) async fn mysql() -> Arc<dyn SessionService> {
    Arc::new(SqlSessionService::connect(&mysql_url().await).await.unwrap())
}

agentstate_conformance::session_service_tests!(mysql);

#[test]
fn mysql_agrees_with_the_model() {
    agentstate_conformance::check_against_model(mysql, 24);
}

/// Two independent service instances on one database, used alternately: as two processes would.
pub(crate) async fn mysql_two_instances() -> Arc<dyn SessionService> {
    let url = mysql_url().await;
    let a: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
    let b: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
    Arc::new(Alternating::new(vec![a, b]))
}

mod two_instances {
    agentstate_conformance::session_service_tests!(super::mysql_two_instances);
}

#[test]
fn mysql_two_instances_agree_with_the_model() {
    agentstate_conformance::check_against_model(mysql_two_instances, 24);
}
