//! The conformance suite and the model-based property test against the in-memory service.
#![allow(clippy::unwrap_used)]

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

mod encrypted {
    use std::sync::Arc;

    use agentstate::{InMemorySessionService, SessionService};

    /// As `agentstate_conformance::encrypted` (this crate's own tests cannot turn on its
    /// `encryption` feature): a rotation in progress, `k2` writing, `k1` still read.
    async fn service() -> Arc<dyn SessionService> {
        let keys = agentstate::crypt::KeyRing::parse(
            "k2:c2Vjb25kIHRlc3Qga2V5IGZvciBhZ2VudHN0YXRlISE=,k1:Zmlyc3QgdGVzdCBrZXkgZm9yIGFnZW50c3RhdGUhISE=",
        )
        .unwrap();
        Arc::new(agentstate::crypt::EncryptedStore::open(InMemorySessionService::new(), keys).await.unwrap())
    }

    agentstate_conformance::session_service_tests!(service);

    #[test]
    fn agrees_with_the_model() {
        agentstate_conformance::check_against_model(service, 64);
    }
}

/// One in-memory store reachable from several handles, for the re-encryption check.
#[derive(Clone, Default)]
struct Shared(Arc<InMemorySessionService>);

impl agentstate::store::DelegatingStore for Shared {
    fn delegate(&self) -> &dyn agentstate::store::SessionStore {
        &*self.0
    }
}

#[test]
fn rekey_reencrypts_everything() {
    let store = Shared::default();
    agentstate_conformance::run(
        || async { Arc::new(InMemorySessionService::new()) as Arc<dyn SessionService> },
        |_| async move {
            agentstate_conformance::check_rekey(|| {
                let store = store.clone();
                async move { store }
            })
            .await;
        },
    );
}
