use std::sync::Arc;

use agentstate::SessionService;
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
