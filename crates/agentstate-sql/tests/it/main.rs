//! agentstate-sql's integration tests: the conformance suite and the model-based property test
//! on every dialect, against real databases (throwaway files, and throwaway databases on the
//! local PostgreSQL and MariaDB servers).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

/// The runs every dialect gets, from how to get the URL of a database to run on (`$url`, an
/// expression evaluated in an async context, once per service): the conformance suite and the
/// model test on one service, and, with `two_instances`, again through two independent services
/// on one database used alternately, as two processes would.
macro_rules! sql_backend_tests {
    (url: $url:expr, model_cases: $cases:expr $(, two_instances: $two_cases:expr)? $(,)?) => {
        use std::sync::Arc;

        use agentstate::SessionService;
        use agentstate_sql::SqlSessionService;

        pub(crate) async fn url() -> String {
            String::from($url)
        }

        pub(crate) async fn service() -> Arc<dyn SessionService> {
            Arc::new(SqlSessionService::connect(&url().await).await.unwrap())
        }

        agentstate_conformance::session_service_tests!(service);

        #[test]
        fn agrees_with_the_model() {
            agentstate_conformance::check_against_model(service, $cases);
        }

        /// The suite again through encryption at rest.
        mod encrypted {
            use super::*;

            async fn service() -> Arc<dyn SessionService> {
                agentstate_conformance::encrypted(SqlSessionService::connect(&url().await).await.unwrap()).await
            }

            agentstate_conformance::session_service_tests!(service);

            #[test]
            fn agrees_with_the_model() {
                agentstate_conformance::check_against_model(service, 16);
            }
        }

        $(
            pub(crate) async fn two_instances() -> Arc<dyn SessionService> {
                use agentstate::store::SessionStore;
                let url = url().await;
                let a: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
                let b: Arc<dyn SessionStore> = Arc::new(SqlSessionService::connect(&url).await.unwrap());
                Arc::new(agentstate_conformance::Alternating::new(vec![a, b]))
            }

            mod two_instances {
                agentstate_conformance::session_service_tests!(super::two_instances);
            }

            #[test]
            fn two_instances_agree_with_the_model() {
                agentstate_conformance::check_against_model(two_instances, $two_cases);
            }
        )?
    };
}

mod durability;
mod erasure;
mod full_disk;
mod interop;
mod mysql;
mod postgres;
mod schema;
mod servers;
mod sqlite;
