//! Persistent agentstate session services on SQL databases: SQLite (the embedded default),
//! PostgreSQL and MySQL/MariaDB, on the schema of ADK for Python's `DatabaseSessionService` (v1),
//! so a database written by either can be served by the other.
//!
//! ```no_run
//! use agentstate::SessionService;
//! use agentstate_sql::SqlSessionService;
//!
//! # async fn f() -> agentstate::Result<()> {
//! let service = SqlSessionService::connect("sqlite://agentstate.db").await?;
//! # Ok(()) }
//! ```

mod codec;
pub mod mysql;
pub mod postgres;
mod server;
pub mod sqlite;
mod url;

use agentstate::{DelegatingStore, Error, Result, SessionStore};

pub use mysql::MySqlStore;
pub use postgres::PostgresStore;
pub use server::PoolOptions;
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous};
pub use url::{DatabaseUrl, redact};

/// Why a database's schema cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// ADK for Python's legacy pickle schema (v0).
    #[error(
        "{location} uses ADK for Python's legacy pickle schema (v0), which agentstate never reads. \
         Migrate it with ADK for Python first: `adk migrate session --source_db_url=<this database> \
         --dest_db_url=<new database>`, then point agentstate at the new database."
    )]
    Legacy {
        /// The database.
        location: String,
    },
    /// The local store of `adk web` / `adk api_server` (`SqliteSessionService`), another schema.
    #[error(
        "{location} is the local store of `adk web`/`adk api_server` (SqliteSessionService schema), not the \
         DatabaseSessionService schema agentstate uses. Copy it into an agentstate database with \
         `agentstate import-adk --from {location}`."
    )]
    AdkSqlite {
        /// The database.
        location: String,
    },
    /// `adk_internal_metadata` exists without a schema version.
    #[error("{location} has an adk_internal_metadata table without a schema_version row; the database may be damaged")]
    NoVersion {
        /// The database.
        location: String,
    },
    /// A schema version this release does not know.
    #[error(
        "{location} has schema version {version:?}; this agentstate release knows version \"1\". Upgrade agentstate."
    )]
    Unknown {
        /// The database.
        location: String,
        /// The version found.
        version: String,
    },
}

impl SchemaError {
    /// Checks the `schema_version` found in `adk_internal_metadata`.
    pub(crate) fn check_version(version: Option<&str>, location: &str) -> Result<()> {
        let location = location.to_owned();
        match version {
            Some("1") => Ok(()),
            Some("0") => Err(Self::Legacy { location }.into()),
            Some(other) => Err(Self::Unknown { location, version: other.to_owned() }.into()),
            None => Err(Self::NoVersion { location }.into()),
        }
    }

    /// Checks the columns of an `events` table found without `adk_internal_metadata`: the
    /// legacy schema has `actions` and no `event_data`.
    pub(crate) fn check_event_columns(columns: &[String], location: &str) -> Result<()> {
        let has = |name: &str| columns.iter().any(|c| c == name);
        if has("actions") && !has("event_data") {
            return Err(Self::Legacy { location: location.to_owned() }.into());
        }
        Ok(())
    }
}

impl From<SchemaError> for Error {
    fn from(e: SchemaError) -> Self {
        Error::Backend { message: e.to_string(), retryable: false, source: Some(Box::new(e)) }
    }
}

/// A session service on any supported SQL database, chosen by URL.
#[derive(Debug, Clone)]
pub enum SqlSessionService {
    /// SQLite.
    Sqlite(SqliteStore),
    /// PostgreSQL.
    Postgres(PostgresStore),
    /// MySQL or MariaDB.
    MySql(MySqlStore),
}

impl SqlSessionService {
    /// Connects to the database named by `url` (see [`DatabaseUrl`]), creating the schema if the
    /// database has none.
    pub async fn connect(url: &str) -> Result<Self> {
        match DatabaseUrl::parse(url)? {
            DatabaseUrl::Sqlite(options) => Ok(Self::Sqlite(SqliteStore::open(options).await?)),
            DatabaseUrl::Postgres(url) => {
                Ok(Self::Postgres(PostgresStore::connect(&PoolOptions::from_url(&url)?).await?))
            }
            DatabaseUrl::MySql(url) => Ok(Self::MySql(MySqlStore::connect(&PoolOptions::from_url(&url)?).await?)),
        }
    }
}

impl DelegatingStore for SqlSessionService {
    fn delegate(&self) -> &dyn SessionStore {
        match self {
            Self::Sqlite(s) => s,
            Self::Postgres(s) => s,
            Self::MySql(s) => s,
        }
    }
}
