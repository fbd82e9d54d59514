//! The conformance suite and the model-based property test against the in-memory store, on
//! every wrapper stack.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agentstate::InMemoryStore;
use agentstate::clock::ManualClock;
use agentstate::store::SessionStore;

async fn store(_clock: ManualClock) -> Arc<dyn SessionStore> {
    Arc::new(InMemoryStore::new())
}

agentstate_conformance::session_store_tests!(store, lacks: [], model_cases: 256);

#[test]
fn rekey_reencrypts_everything() {
    let shared: Arc<dyn SessionStore> = Arc::new(InMemoryStore::new());
    agentstate_conformance::run(store, agentstate_conformance::Stack::Plain, |_| async move {
        agentstate_conformance::check_rekey(|| {
            let shared = Arc::clone(&shared);
            async move { shared }
        })
        .await;
    });
}

#[test]
fn the_store_answers_compacted_views() {
    for stack in [agentstate_conformance::Stack::Plain, agentstate_conformance::Stack::Encrypted] {
        agentstate_conformance::run(store, stack, agentstate_conformance::check_store_answers_views);
    }
}
