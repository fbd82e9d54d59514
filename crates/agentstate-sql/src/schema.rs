//! Opening a database: what each dialect finds in it, and the one decision made from that,
//! whatever the dialect: refuse schemas agentstate must not write to, use the reference's v1
//! schema where it is, create it where there is none.

use agentstate::{Error, Result};

/// The schema version this release reads and writes (the reference's v1).
pub const SCHEMA_VERSION: &str = "1";

/// The schema a store runs on, as it found or made it when it opened the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// The version in `adk_internal_metadata` (`"1"`).
    pub version: String,
    /// Whether the tables were created when the store opened (the database had none).
    pub created: bool,
}

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
    /// An `events` table of typed columns with `actions` and no `event_data`: ADK for Python's
    /// legacy pickle schema (v0) from before it recorded a version, or ADK for Go's database
    /// service, which keeps that layout with its actions as Go's JSON. Both name their tables as
    /// the v1 schema does, so they cannot share a database with it.
    #[error(
        "{location} has the typed events table of an older layout (an `actions` column, no `event_data`), which \
         agentstate never reads: ADK for Python's legacy pickle schema (v0), or ADK for Go's database service \
         (session/database). Migrate a Python one with ADK for Python first: `adk migrate session \
         --source_db_url=<this database> --dest_db_url=<new database>`. For ADK for Go, point its Agent Engine \
         client (session/vertexai) at `agentstate serve` on a new database, and copy the sessions with ADK for \
         Go's own two services (the README shows how)."
    )]
    TypedEvents {
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

impl From<SchemaError> for Error {
    fn from(e: SchemaError) -> Self {
        Error::Backend { message: e.to_string(), retryable: false, source: Some(Box::new(e)) }
    }
}

/// The tables and indexes a database needs, the reference's and agentstate's own.
const TABLES: [&str; 13] = [
    "adk_internal_metadata",
    "sessions",
    "app_states",
    "user_states",
    "events",
    "agentstate_session_attributes",
    "agentstate_state_snapshots",
    "agentstate_memories",
    "agentstate_memory_deletions",
    "agentstate_memory_sources",
    "agentstate_run_leases",
    "agentstate_state_writes",
    "agentstate_artifacts",
];
const INDEXES: [&str; 8] = [
    "idx_events_app_user_session_ts_id",
    "idx_sessions_app_id",
    "idx_agentstate_attributes_expire",
    "idx_sessions_app_update",
    "idx_sessions_app_user_update",
    "idx_sessions_app_create",
    "idx_sessions_app_user_create",
    "idx_agentstate_memories_app_id",
];

/// The catalogue queries of a server dialect, each answering a column `name` (and `type` for
/// the columns): the tables, the reference's schema version, the columns of `events`, the
/// indexes.
pub(crate) struct Catalogue {
    pub(crate) tables: &'static str,
    pub(crate) version: &'static str,
    pub(crate) event_columns: &'static str,
    pub(crate) indexes: &'static str,
}

/// What a dialect found in a database before touching it.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The tables of the schema agentstate uses.
    pub(crate) tables: Vec<String>,
    /// The names of the indexes on them.
    pub(crate) indexes: Vec<String>,
    /// The `schema_version` row of `adk_internal_metadata`, when that table exists.
    pub(crate) version: Option<String>,
    /// The columns of `events` (name, declared type), when it exists.
    pub(crate) event_columns: Vec<(String, String)>,
    /// The columns of `sessions` (name, declared type), when it exists.
    pub(crate) session_columns: Vec<(String, String)>,
}

impl Found {
    pub(crate) fn has_table(&self, name: &str) -> bool {
        self.tables.iter().any(|t| t == name)
    }

    /// Whether every table and index is there, so the schema script need not run (its DDL takes
    /// locks that would wait for, and hold up, other processes' writes).
    pub(crate) fn is_complete(&self) -> bool {
        TABLES.iter().all(|t| self.has_table(t)) && INDEXES.iter().all(|i| self.indexes.iter().any(|x| x == i))
    }
}

/// Decides whether agentstate may use the database `found` describes: `Ok` with the schema it
/// will run on once the dialect's `schema.sql` ran, or the reason to refuse it.
pub(crate) fn check(found: &Found, location: &str) -> Result<Schema> {
    let location = location.to_owned();
    if found.has_table("adk_internal_metadata") {
        return match found.version.as_deref() {
            Some(SCHEMA_VERSION) => Ok(Schema { version: SCHEMA_VERSION.into(), created: false }),
            Some("0") => Err(SchemaError::Legacy { location }.into()),
            Some(other) => Err(SchemaError::Unknown { location, version: other.to_owned() }.into()),
            None => Err(SchemaError::NoVersion { location }.into()),
        };
    }
    let column = |columns: &[(String, String)], name: &str| columns.iter().find(|(c, _)| c == name).cloned();
    if found.has_table("events") {
        // The older layout has `actions` and no `event_data`.
        if column(&found.event_columns, "actions").is_some() && column(&found.event_columns, "event_data").is_none() {
            return Err(SchemaError::TypedEvents { location }.into());
        }
        // `SqliteSessionService` stores times as REAL epoch seconds.
        if column(&found.session_columns, "update_time").is_some_and(|(_, t)| t.eq_ignore_ascii_case("REAL")) {
            return Err(SchemaError::AdkSqlite { location }.into());
        }
    }
    Ok(Schema { version: SCHEMA_VERSION.into(), created: !found.has_table("sessions") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(tables: &[&str]) -> Found {
        Found { tables: tables.iter().map(|t| (*t).to_owned()).collect(), ..Found::default() }
    }

    fn columns(names: &[(&str, &str)]) -> Vec<(String, String)> {
        names.iter().map(|(n, t)| ((*n).to_owned(), (*t).to_owned())).collect()
    }

    #[test]
    fn decisions() {
        assert_eq!(check(&found(&[]), "db").unwrap(), Schema { version: "1".into(), created: true });
        let v1 = Found { version: Some("1".into()), ..found(&["adk_internal_metadata", "sessions", "events"]) };
        assert_eq!(check(&v1, "db").unwrap(), Schema { version: "1".into(), created: false });
        let v0 = Found { version: Some("0".into()), ..found(&["adk_internal_metadata"]) };
        assert!(check(&v0, "db").unwrap_err().to_string().contains("legacy pickle schema"));
        let v9 = Found { version: Some("9".into()), ..found(&["adk_internal_metadata"]) };
        assert!(check(&v9, "db").unwrap_err().to_string().contains("schema version \"9\""));
        assert!(
            check(&found(&["adk_internal_metadata"]), "db")
                .unwrap_err()
                .to_string()
                .contains("without a schema_version")
        );
        let typed = Found { event_columns: columns(&[("id", "TEXT"), ("actions", "BLOB")]), ..found(&["events"]) };
        let refused = check(&typed, "db").unwrap_err().to_string();
        assert!(
            refused.contains("legacy pickle schema") && refused.contains("ADK for Go's database service"),
            "{refused}"
        );
        let adk_web = Found {
            event_columns: columns(&[("event_data", "TEXT")]),
            session_columns: columns(&[("update_time", "REAL")]),
            ..found(&["events", "sessions"])
        };
        assert!(check(&adk_web, "db").unwrap_err().to_string().contains("import-adk"));
    }
}
