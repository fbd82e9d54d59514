//! The schema on MySQL and MariaDB: found, checked, or created. DDL commits implicitly in MySQL,
//! so a named lock (not a transaction) serialises concurrent starters on one server, and every
//! step is idempotent (`IF NOT EXISTS`, `INSERT IGNORE`, an index made by another starter is
//! taken as made) for starters on two nodes of a Galera cluster, where that lock is node-local.

use agentstate::Result;
use sqlx::mysql::{MySqlConnection, MySqlPool};

use crate::pool::sqlx_error;
use crate::schema::{self, Catalogue, Schema};

const CATALOGUE: Catalogue = Catalogue {
    tables: "SELECT CAST(table_name AS CHAR) AS name FROM information_schema.tables WHERE table_schema = DATABASE()",
    version: "SELECT value FROM adk_internal_metadata WHERE `key` = 'schema_version'",
    event_columns: "SELECT CAST(column_name AS CHAR) AS name, CAST(data_type AS CHAR) AS type \
                    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'events'",
    indexes: "SELECT DISTINCT CAST(index_name AS CHAR) AS name FROM information_schema.statistics \
              WHERE table_schema = DATABASE()",
};

pub(super) async fn prepare(pool: &MySqlPool, location: &str) -> Result<Schema> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let mut conn = pool.acquire().await.map_err(fail)?;
    // A named lock spares concurrent starters on one server each other's work. It holds on one
    // server only (a Galera node's locks are its own), so what follows is also idempotent:
    // starters on two nodes may both run it, and both succeed.
    let locked: Option<i64> =
        sqlx::query_scalar("SELECT GET_LOCK('agentstate_schema', 60)").fetch_one(&mut *conn).await.map_err(fail)?;
    let result = inspect_and_create(&mut conn, location).await;
    if locked == Some(1) {
        sqlx::query("SELECT RELEASE_LOCK('agentstate_schema')").execute(&mut *conn).await.map_err(fail)?;
    }
    result
}

/// Whether `e` says an index of that name exists (another starter made it first).
fn is_duplicate_index(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().is_some_and(|m| m.number() == 1061))
}

async fn inspect_and_create(conn: &mut MySqlConnection, location: &str) -> Result<Schema> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let mut found = super::ops::find_schema(conn, &CATALOGUE).await.map_err(fail)?;
    // A starter on another Galera node (which our lock does not reach) may be halfway through
    // the script: the version row comes after the tables. Wait for it before calling it damaged.
    for _ in 0..50 {
        if !found.has_table("adk_internal_metadata") || found.version.is_some() || found.is_complete() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        found = super::ops::find_schema(conn, &CATALOGUE).await.map_err(fail)?;
    }
    let schema = schema::check(&found, location)?;
    if !found.is_complete() {
        sqlx::raw_sql(sql!("schema")).execute(&mut *conn).await.map_err(fail)?;
        // MySQL has no CREATE INDEX IF NOT EXISTS.
        for (name, statement) in [
            ("idx_sessions_app_id", "CREATE INDEX idx_sessions_app_id ON sessions (app_name, id)"),
            // Session lists in each order, from an index.
            (
                "idx_sessions_app_update",
                "CREATE INDEX idx_sessions_app_update ON sessions (app_name, update_time, user_id, id)",
            ),
            (
                "idx_sessions_app_user_update",
                "CREATE INDEX idx_sessions_app_user_update ON sessions (app_name, user_id, update_time, id)",
            ),
            (
                "idx_sessions_app_create",
                "CREATE INDEX idx_sessions_app_create ON sessions (app_name, create_time, user_id, id)",
            ),
            (
                "idx_sessions_app_user_create",
                "CREATE INDEX idx_sessions_app_user_create ON sessions (app_name, user_id, create_time, id)",
            ),
            (
                "idx_agentstate_attributes_expire",
                "CREATE INDEX idx_agentstate_attributes_expire ON agentstate_session_attributes (expire_time)",
            ),
            (
                "idx_agentstate_memories_app_id",
                "CREATE INDEX idx_agentstate_memories_app_id ON agentstate_memories (app_name, memory_id)",
            ),
        ] {
            if !found.indexes.iter().any(|i| i == name) {
                match sqlx::query(statement).execute(&mut *conn).await {
                    Err(e) if !is_duplicate_index(&e) => return Err(fail(e)),
                    _ => {}
                }
            }
        }
    }
    Ok(schema)
}
