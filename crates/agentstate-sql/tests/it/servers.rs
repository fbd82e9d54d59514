//! Throwaway databases on the local PostgreSQL and MariaDB servers: one per test run, created on
//! first use. Their URLs come from `AGENTSTATE_TEST_POSTGRES` / `AGENTSTATE_TEST_MYSQL` (an
//! administrative connection), defaulting to the servers every agentstate machine runs.

use agentstate_conformance::databases::{fresh_mysql, fresh_postgres};
use tokio::sync::OnceCell;

static POSTGRES: OnceCell<String> = OnceCell::const_new();
static MYSQL: OnceCell<String> = OnceCell::const_new();

/// The URL of this run's PostgreSQL test database.
pub(crate) async fn postgres_url() -> String {
    POSTGRES.get_or_init(fresh_postgres).await.clone()
}

/// A new, empty PostgreSQL database.
pub(crate) async fn fresh_postgres_url() -> String {
    fresh_postgres().await
}

/// A new, empty MariaDB/MySQL database.
pub(crate) async fn fresh_mysql_url() -> String {
    fresh_mysql().await
}

/// The URL of this run's MariaDB/MySQL test database.
pub(crate) async fn mysql_url() -> String {
    MYSQL.get_or_init(fresh_mysql).await.clone()
}
