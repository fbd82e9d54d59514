//! Opening a SQLite database: refuse schemas we must not write to, create the reference's v1
//! schema where there is none.

use agentstate::Result;
use rusqlite::{Connection, OptionalExtension};

use super::sqlite_error;
use crate::SchemaError;

fn table_exists(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |_| Ok(()))
        .optional()
        .map(|row| row.is_some())
}

/// Column name → declared type.
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
    rows.collect()
}

/// Checks the schema found in `conn` and creates what is missing. Returns the schema version.
pub(super) fn prepare(conn: &Connection, location: &str) -> Result<String> {
    let inspect = |e: rusqlite::Error| sqlite_error("inspect schema", &e);
    if table_exists(conn, "adk_internal_metadata").map_err(inspect)? {
        let version: Option<String> = conn
            .query_row("SELECT value FROM adk_internal_metadata WHERE \"key\" = 'schema_version'", [], |r| r.get(0))
            .optional()
            .map_err(inspect)?;
        SchemaError::check_version(version.as_deref(), location)?;
    } else if table_exists(conn, "events").map_err(inspect)? {
        let events: Vec<String> = columns(conn, "events").map_err(inspect)?.into_iter().map(|(c, _)| c).collect();
        SchemaError::check_event_columns(&events, location)?;
        let sessions = columns(conn, "sessions").map_err(inspect)?;
        if sessions.iter().any(|(c, t)| c == "update_time" && t.eq_ignore_ascii_case("REAL")) {
            return Err(SchemaError::AdkSqlite { location: location.into() }.into());
        }
    }
    conn.execute_batch(include_str!("../../sql/sqlite/schema.sql")).map_err(|e| sqlite_error("create schema", &e))?;
    Ok("1".into())
}
