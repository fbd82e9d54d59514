//! MySQL and MariaDB: the reference's v1 schema (LONGTEXT JSON, DATETIME(6)). Neither has
//! data-modifying CTEs, so an append is one transaction that locks the session row, then the user
//! row, then the app row (always in that order) and merges state key by key under those locks.
//! Deadlocks and lock-wait timeouts roll the whole transaction back, so it is retried.

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/mysql/", $name, ".sql"))
    };
}

mod ops;
mod schema;

/// A pool on `options`' URL; it has no background work.
async fn connect(
    options: &crate::pool::PoolOptions,
) -> agentstate::Result<(sqlx::MySqlPool, Option<crate::pool::StopOnDrop>)> {
    Ok((crate::pool::connect(options).await?, None))
}

crate::shared::pool_store! {
    /// The MySQL/MariaDB session store. Processes starting at once on an empty database create the
    /// schema once: a named lock serialises them.
    pub struct MySqlStore;
}
