//! PostgreSQL: this run's throwaway database on the local server.

sql_backend_tests!(url: crate::servers::postgres_url().await, model_cases: 24, two_instances: 24);
