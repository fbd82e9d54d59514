//! The schema on PostgreSQL: found, checked, or created (serialised across processes by an
//! advisory lock).

use agentstate::Result;
use sqlx::Connection;
use sqlx::postgres::PgPool;

use crate::pool::sqlx_error;
use crate::schema::{self, Catalogue, Schema};

const CATALOGUE: Catalogue = Catalogue {
    tables: "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = current_schema()",
    version: "SELECT value FROM adk_internal_metadata WHERE key = 'schema_version'",
    event_columns: "SELECT column_name::text AS name, data_type::text AS type FROM information_schema.columns \
                    WHERE table_schema = current_schema() AND table_name = 'events'",
    indexes: "SELECT indexname::text AS name FROM pg_indexes WHERE schemaname = current_schema()",
};

pub(super) async fn prepare(pool: &PgPool, location: &str) -> Result<Schema> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let mut conn = pool.acquire().await.map_err(fail)?;
    let mut tx = conn.begin().await.map_err(fail)?;
    // Any constant: serialises schema creation of concurrent starters.
    sqlx::query("SELECT pg_advisory_xact_lock(7370656)").execute(&mut *tx).await.map_err(fail)?;
    let found = super::ops::find_schema(&mut tx, &CATALOGUE).await.map_err(fail)?;
    let schema = schema::check(&found, location)?;
    if !found.is_complete() {
        sqlx::raw_sql(sql!("schema")).execute(&mut *tx).await.map_err(fail)?;
    }
    sqlx::raw_sql(sql!("memory_index_tune")).execute(&mut *tx).await.map_err(fail)?;
    tx.commit().await.map_err(fail)?;
    Ok(schema)
}
