//! Persistent agentstate session stores on SQL databases: SQLite (the embedded default),
//! PostgreSQL and MySQL/MariaDB, on the schema of ADK for Python's `DatabaseSessionService` (v1),
//! so a database written by either can be served by the other. Every store has every capability
//! (history, lifecycle, administration).
//!
//! ```no_run
//! use agentstate::SessionService;
//! use agentstate_sql::SqlStore;
//!
//! # async fn f() -> agentstate::Result<()> {
//! let service = SessionService::new(SqlStore::connect("sqlite://agentstate.db").await?);
//! # Ok(()) }
//! ```
//!
//! [`SqlStore`] picks the store by URL ([`DatabaseUrl`]); each store can also be opened on its own
//! ([`SqliteStore`], [`PostgresStore`], [`MySqlStore`]). The statements are plain SQL, one folder
//! per dialect (`sql/<dialect>/*.sql`). [`adk_web`] copies the local store of `adk web` (another
//! schema) into any agentstate store.

/// A struct of a row's columns, each field read from the column of its name by `$row.$get(…)?`
/// (sqlx's `try_get`, rusqlite's `get`): a row's column list is written once for every driver.
macro_rules! columns {
    ($ty:ident { $($field:ident),* $(,)? } from $row:ident.$get:ident) => {
        $ty { $($field: $row.$get(stringify!($field))?),* }
    };
}
pub(crate) use columns;

pub mod adk_web;
mod artifacts;
mod codec;
mod leases;
mod list;
mod memories;
mod mysql;
mod pool;
mod postgres;
mod schema;
mod shared;
mod sqlite;
mod state_log;
mod url;

use agentstate::Result;
use agentstate::store::{DelegatingStore, SessionStore};

pub use mysql::MySqlStore;
pub use pool::PoolOptions;
pub use postgres::PostgresStore;
pub use schema::{SCHEMA_VERSION, Schema, SchemaError};
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous};
pub use url::{Database, DatabaseUrl};

/// A session store on any supported SQL database, chosen by URL.
#[derive(Debug, Clone)]
pub enum SqlStore {
    /// SQLite.
    Sqlite(SqliteStore),
    /// PostgreSQL.
    Postgres(PostgresStore),
    /// MySQL or MariaDB.
    MySql(MySqlStore),
}

impl SqlStore {
    /// Connects to the database named by `url` (see [`DatabaseUrl`]), creating the schema if the
    /// database has none.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::open(&DatabaseUrl::parse(url)?).await
    }

    /// Connects to a parsed database URL, creating the schema if the database has none.
    pub async fn open(url: &DatabaseUrl) -> Result<Self> {
        Ok(match url.database() {
            Database::Sqlite(options) => Self::Sqlite(SqliteStore::open(options.clone()).await?),
            Database::Postgres(options) => Self::Postgres(PostgresStore::connect(options).await?),
            Database::MySql(options) => Self::MySql(MySqlStore::connect(options).await?),
        })
    }

    /// The schema the database was found with, or created with.
    pub fn schema(&self) -> &Schema {
        match self {
            Self::Sqlite(s) => s.schema(),
            Self::Postgres(s) => s.schema(),
            Self::MySql(s) => s.schema(),
        }
    }
}

impl DelegatingStore for SqlStore {
    fn delegate(&self) -> &dyn SessionStore {
        match self {
            Self::Sqlite(s) => s,
            Self::Postgres(s) => s,
            Self::MySql(s) => s,
        }
    }
}
