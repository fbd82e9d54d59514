//! Throwaway databases on the PostgreSQL and MariaDB/MySQL servers the tests run against: each
//! call creates a new, empty database with a unique name, so test runs never see each other's
//! data. The servers come from `AGENTSTATE_TEST_POSTGRES` / `AGENTSTATE_TEST_MYSQL` (an
//! administrative connection URL), defaulting to the local servers every agentstate machine runs
//! (`.ci/services` starts them and drops old `agentstate_test_*` databases).
//!
//! For tests: a server that cannot be reached panics with the command that starts it.

/// The administrative URL of the PostgreSQL test server.
pub fn postgres_admin_url() -> String {
    std::env::var("AGENTSTATE_TEST_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// The administrative URL of the MariaDB/MySQL test server.
pub fn mysql_admin_url() -> String {
    std::env::var("AGENTSTATE_TEST_MYSQL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
}

fn fresh_name() -> String {
    format!("agentstate_test_{}", agentstate::Event::new_id().replace('-', ""))
}

/// `url` with its database replaced by `db` (the query string kept).
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
    match query {
        Some(q) => format!("{server}/{db}?{q}"),
        None => format!("{server}/{db}"),
    }
}

/// A new, empty PostgreSQL database; its URL.
pub async fn fresh_postgres() -> String {
    fresh::<sqlx::PgConnection>(&postgres_admin_url(), "PostgreSQL").await
}

/// A new, empty MariaDB/MySQL database; its URL.
pub async fn fresh_mysql() -> String {
    fresh::<sqlx::MySqlConnection>(&mysql_admin_url(), "MariaDB/MySQL").await
}

/// Creates a database on the server `admin` connects to, through a connection of type `C`.
async fn fresh<C>(admin: &str, server: &str) -> String
where
    C: sqlx::Connection,
    for<'c> &'c mut C: sqlx::Executor<'c>,
{
    let name = fresh_name();
    let mut conn = C::connect(admin).await.unwrap_or_else(|e| {
        panic!("{server} at {admin} is required for these tests (start it with .ci/services): {e}")
    });
    let statement = format!("CREATE DATABASE {name}");
    if let Err(e) = sqlx::raw_sql(sqlx::AssertSqlSafe(statement)).execute(&mut conn).await {
        panic!("cannot create the test database {name}: {e}");
    }
    with_database(admin, &name)
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_part_is_replaced() {
        assert_eq!(with_database("postgres://u@h:5432/test", "x"), "postgres://u@h:5432/x");
        assert_eq!(with_database("mysql://root@h/test?ssl-mode=disabled", "x"), "mysql://root@h/x?ssl-mode=disabled");
    }
}
