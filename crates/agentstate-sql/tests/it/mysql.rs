//! MariaDB/MySQL: this run's throwaway database on the local server.

sql_backend_tests!(url: crate::servers::mysql_url().await, model_cases: 24, two_instances: 24);
