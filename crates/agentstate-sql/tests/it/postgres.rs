use std::sync::Arc;

use agentstate::SessionService;
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
