//! The schema on PostgreSQL: found, checked, or created (serialised across processes by an
//! advisory lock).

use agentstate::Result;
use sqlx::postgres::PgPool;
use sqlx::{Connection, Row};

use crate::pool::sqlx_error;
use crate::schema::{self, Found, Schema};

pub(super) async fn prepare(pool: &PgPool, location: &str) -> Result<Schema> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let mut conn = pool.acquire().await.map_err(fail)?;
    let mut tx = conn.begin().await.map_err(fail)?;
    // Any constant: serialises schema creation of concurrent starters.
    sqlx::query("SELECT pg_advisory_xact_lock(7370656)").execute(&mut *tx).await.map_err(fail)?;
    let tables = sqlx::query_scalar(
        "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(fail)?;
    let mut found = Found { tables, ..Found::default() };
    if found.has_table("adk_internal_metadata") {
        found.version = sqlx::query_scalar("SELECT value FROM adk_internal_metadata WHERE key = 'schema_version'")
            .fetch_optional(&mut *tx)
            .await
            .map_err(fail)?;
    }
    if found.has_table("events") {
        let rows = sqlx::query(
            "SELECT column_name::text AS name, data_type::text AS type FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'events'",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(fail)?;
        found.event_columns = rows
            .iter()
            .map(|r| Ok((r.try_get("name")?, r.try_get("type")?)))
            .collect::<std::result::Result<_, sqlx::Error>>()
            .map_err(fail)?;
    }
    found.indexes =
        sqlx::query_scalar("SELECT indexname::text AS name FROM pg_indexes WHERE schemaname = current_schema()")
            .fetch_all(&mut *tx)
            .await
            .map_err(fail)?;
    let schema = schema::check(&found, location)?;
    if !found.is_complete() {
        sqlx::raw_sql(sql!("schema")).execute(&mut *tx).await.map_err(fail)?;
    }
    tx.commit().await.map_err(fail)?;
    Ok(schema)
}
