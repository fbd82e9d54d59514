//! A pooled connection is taken again without a ping while it was used within the last second,
//! and pinged first when it rested longer: one the server ended while it rested (an outage, a
//! restart, an idle timeout) is replaced, and the call succeeds, on PostgreSQL and MariaDB.

use std::time::Duration;

use agentstate::{CreateSession, GetSessionConfig, SessionService};
use agentstate_sql::SqlStore;

/// Ends every connection to `url`'s database but the one asking (an administrator's kill).
async fn end_connections(url: &str) -> u64 {
    let database = url.rsplit('/').next().unwrap_or_default().split('?').next().unwrap_or_default().to_owned();
    if url.starts_with("postgres") {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        let ended: Vec<bool> = sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(&database)
        .fetch_all(&mut conn)
        .await
        .unwrap();
        ended.len() as u64
    } else {
        use sqlx::Connection;
        let mut conn = sqlx::MySqlConnection::connect(url).await.unwrap();
        let ids: Vec<u64> = sqlx::query_scalar(
            "SELECT CAST(ID AS UNSIGNED) FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
        )
        .bind(&database)
        .fetch_all(&mut conn)
        .await
        .unwrap();
        for id in &ids {
            sqlx::query(sqlx::AssertSqlSafe(format!("KILL CONNECTION {id}"))).execute(&mut conn).await.unwrap();
        }
        ids.len() as u64
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_ended_while_it_rested_is_replaced() {
    for url in [crate::servers::fresh_postgres_url().await, crate::servers::fresh_mysql_url().await] {
        let svc = SessionService::new(SqlStore::connect(&format!("{url}?max_connections=2")).await.unwrap());
        let session = svc.create_session(CreateSession::new("resting", "u")).await.unwrap();
        assert!(end_connections(&url).await > 0, "{url}: the pool's connections were found");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let read = svc.get_session(session.key(), GetSessionConfig::default()).await;
        assert!(read.as_ref().is_ok_and(Option::is_some), "{url}: the read after the rest: {read:?}");
    }
}
