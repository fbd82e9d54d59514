//! PostgreSQL: the reference's v1 schema (JSONB state, naive-UTC timestamps); every operation is
//! one statement, so one round trip and one atomic transaction. Many agentstate processes can
//! share one database: the stale check and the merges happen in the database.

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/postgres/", $name, ".sql"))
    };
}

mod ops;
mod schema;

crate::shared::pool_store! {
    /// The PostgreSQL session store. Processes starting at once on an empty database create the
    /// schema once: an advisory lock serialises them.
    pub struct PostgresStore;
}
