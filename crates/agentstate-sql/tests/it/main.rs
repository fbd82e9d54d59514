//! agentstate-sql's integration tests: the conformance suite and the model-based property test
//! on every dialect, against real databases (throwaway files, and throwaway databases on the
//! local PostgreSQL and MariaDB servers).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

/// The runs every dialect gets, from how to get the URL of a database to run on (`$url`, an
/// expression evaluated in an async context, once per store): the conformance suite and the
/// model test on every wrapper stack, and, with `two_instances`, again through two independent
/// stores on one database used alternately, as two processes would.
macro_rules! sql_backend_tests {
    (url: $url:expr, model_cases: $cases:expr $(, two_instances: $two_cases:expr)? $(,)?) => {
        use std::sync::Arc;

        use agentstate::clock::ManualClock;
        use agentstate::store::SessionStore;
        use agentstate_sql::SqlStore;

        pub(crate) async fn url() -> String {
            String::from($url)
        }

        pub(crate) async fn store(_clock: ManualClock) -> Arc<dyn SessionStore> {
            Arc::new(SqlStore::connect(&url().await).await.unwrap())
        }

        agentstate_conformance::session_store_tests!(store, lacks: [], model_cases: $cases);

        $(
            pub(crate) async fn two_instances(_clock: ManualClock) -> Arc<dyn SessionStore> {
                let url = url().await;
                let a: Arc<dyn SessionStore> = Arc::new(SqlStore::connect(&url).await.unwrap());
                let b: Arc<dyn SessionStore> = Arc::new(SqlStore::connect(&url).await.unwrap());
                Arc::new(agentstate_conformance::Alternating::new(vec![a, b]))
            }

            mod two_instances {
                agentstate_conformance::session_store_tests!(super::two_instances, lacks: [], model_cases: $two_cases);
            }
        )?
    };
}

mod durability;
mod erasure;
mod full_disk;
mod interop;
mod memory_search;
mod mysql;
mod postgres;
mod resting;
mod schema;
mod servers;
mod shared_rows;
mod sqlite;
