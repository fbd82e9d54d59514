//! PostgreSQL: the reference's v1 schema (JSONB state, naive-UTC timestamps); every operation is
//! one statement, so one round trip and one atomic transaction. Many agentstate processes can
//! share one database: the stale check and the merges happen in the database.

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/postgres/", $name, ".sql"))
    };
}

mod hosts;
mod ops;
mod schema;

/// A pool on `options`' URL: sqlx's own for one host; for a host list, kept on the host that fits
/// by a watcher that ends with the guard.
async fn connect(
    options: &crate::pool::PoolOptions,
) -> agentstate::Result<(sqlx::PgPool, Option<crate::pool::StopOnDrop>)> {
    match hosts::parse(options.url())? {
        None => Ok((crate::pool::connect(options).await?, None)),
        Some(hosts) => {
            let (guard, stopped) = crate::pool::StopOnDrop::new();
            Ok((hosts.connect(options, stopped).await?, Some(guard)))
        }
    }
}

crate::shared::pool_store! {
    /// The PostgreSQL session store. Processes starting at once on an empty database create the
    /// schema once: an advisory lock serialises them.
    pub struct PostgresStore;
}
