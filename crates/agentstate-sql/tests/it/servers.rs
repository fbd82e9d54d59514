//! Throwaway databases on the local PostgreSQL and MariaDB servers: one per test run, created on
//! first use. Their URLs come from `AGENTSTATE_TEST_POSTGRES` / `AGENTSTATE_TEST_MYSQL` (an
//! administrative connection), defaulting to the servers every agentstate machine runs.

use tokio::sync::OnceCell;

fn admin_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

fn fresh_name() -> String {
    format!("agentstate_test_{}", agentstate::Event::new_id().replace('-', ""))
}

/// Replaces the database part of `url` with `db`.
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let (server, _) = base.rsplit_once('/').expect("a database URL names a database");
    match query {
        Some(q) => format!("{server}/{db}?{q}"),
        None => format!("{server}/{db}"),
    }
}

static POSTGRES: OnceCell<String> = OnceCell::const_new();
static MYSQL: OnceCell<String> = OnceCell::const_new();

/// The URL of this run's PostgreSQL test database.
pub(crate) async fn postgres_url() -> String {
    POSTGRES.get_or_init(fresh_postgres_url).await.clone()
}

/// A new, empty PostgreSQL database.
pub(crate) async fn fresh_postgres_url() -> String {
    let admin = admin_url("AGENTSTATE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test");
    let name = fresh_name();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await.unwrap_or_else(|e| {
        panic!("PostgreSQL at {admin} is required for these tests (start it with .ci/services): {e}")
    });
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await.unwrap();
    with_database(&admin, &name)
}

/// The URL of this run's MariaDB/MySQL test database.
pub(crate) async fn mysql_url() -> String {
    MYSQL
        .get_or_init(|| async {
            let admin = admin_url("AGENTSTATE_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test");
            let name = fresh_name();
            let mut conn = <sqlx::MySqlConnection as sqlx::Connection>::connect(&admin).await.unwrap_or_else(|e| {
                panic!("MariaDB/MySQL at {admin} is required for these tests (start it with .ci/services): {e}")
            });
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await.unwrap();
            with_database(&admin, &name)
        })
        .await
        .clone()
}
