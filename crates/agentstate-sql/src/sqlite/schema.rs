//! What a SQLite database holds before it is opened, for the shared schema check; then the
//! reference's v1 schema where it is missing.

use agentstate::Result;
use rusqlite::{Connection, OptionalExtension};

use super::sqlite_error;
use crate::schema::{self, Found, Schema};

/// Column name → declared type.
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>("name")?, r.get::<_, String>("type")?)))?;
    rows.collect()
}

fn inspect(conn: &Connection) -> rusqlite::Result<Found> {
    let names = |kind: &str| -> rusqlite::Result<Vec<String>> {
        let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = ?1")?;
        stmt.query_map([kind], |r| r.get::<_, String>("name"))?.collect()
    };
    let mut found = Found { tables: names("table")?, indexes: names("index")?, ..Found::default() };
    if found.has_table("adk_internal_metadata") {
        found.version = conn
            .query_row("SELECT value FROM adk_internal_metadata WHERE \"key\" = 'schema_version'", [], |r| {
                r.get("value")
            })
            .optional()?;
    }
    if found.has_table("events") {
        found.event_columns = columns(conn, "events")?;
    }
    if found.has_table("sessions") {
        found.session_columns = columns(conn, "sessions")?;
    }
    Ok(found)
}

/// Checks the schema found in `conn` and creates what is missing.
pub(super) fn prepare(conn: &Connection, location: &str) -> Result<Schema> {
    let found = inspect(conn).map_err(|e| sqlite_error("inspect schema", &e))?;
    let schema = schema::check(&found, location)?;
    if !found.is_complete() {
        conn.execute_batch(include_str!("../../sql/sqlite/schema.sql"))
            .map_err(|e| sqlite_error("create schema", &e))?;
    }
    Ok(schema)
}
