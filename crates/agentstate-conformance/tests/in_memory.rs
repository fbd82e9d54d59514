//! The conformance suite and the model-based property test against the in-memory service.

use std::sync::Arc;

use agentstate::{InMemorySessionService, SessionService};

async fn in_memory() -> Arc<dyn SessionService> {
    Arc::new(InMemorySessionService::new())
}

agentstate_conformance::session_service_tests!(in_memory);

#[test]
fn in_memory_agrees_with_the_model() {
    agentstate_conformance::check_against_model(in_memory, 256);
}
