//! `agentstate import-adk`: copies the local store of `adk web` / `adk api_server` (ADK for
//! Python's `SqliteSessionService`, `<agents_dir>/<app>/.adk/session.db`) into an agentstate
//! database, through the same path as `sessions import`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agentstate::{Event, Map, SessionStore, Value};
use anyhow::Context;
use rusqlite::{Connection, OpenFlags};

use crate::transfer::{self, Imported, Record};

fn state(text: &str, what: &str) -> anyhow::Result<Map<String, Value>> {
    match serde_json::from_str(text).with_context(|| format!("{what} is not JSON"))? {
        Value::Object(map) => Ok(map),
        _ => anyhow::bail!("{what} is not a JSON object"),
    }
}

/// Reads every session of the store at `path` (opened read-only).
pub fn read(path: &Path) -> anyhow::Result<Vec<Record>> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", path.display()))?;
    let has_event_data: bool = conn
        .query_row("SELECT count(*) FROM pragma_table_info('events') WHERE name = 'event_data'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
        .with_context(|| format!("{} is not an ADK session store (no events table)", path.display()))?;
    anyhow::ensure!(
        has_event_data,
        "{} uses ADK's old schema (no event_data column); migrate it with ADK for Python first",
        path.display()
    );
    let mut apps = HashMap::new();
    for row in conn
        .prepare("SELECT app_name, state FROM app_states")?
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
    {
        let (app, text) = row?;
        let parsed = state(&text, &format!("app state of {app}"))?;
        apps.insert(app, parsed);
    }
    let mut users = HashMap::new();
    let mut user_rows = conn.prepare("SELECT app_name, user_id, state FROM user_states")?;
    let rows =
        user_rows.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
    for row in rows {
        let (app, user, text) = row?;
        let parsed = state(&text, &format!("user state of {app}/{user}"))?;
        users.insert((app, user), parsed);
    }
    let mut events_of = conn.prepare(
        "SELECT id, invocation_id, timestamp, event_data FROM events \
         WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 ORDER BY timestamp, rowid",
    )?;
    let mut records = Vec::new();
    let mut sessions =
        conn.prepare("SELECT app_name, user_id, id, state, update_time FROM sessions ORDER BY update_time")?;
    let rows = sessions.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, f64>(4)?,
        ))
    })?;
    for row in rows {
        let (app, user, id, text, update_time) = row?;
        let mut merged = state(&text, &format!("state of session {app}/{user}/{id}"))?;
        for (k, v) in apps.get(&app).into_iter().flatten() {
            merged.insert(format!("app:{k}"), v.clone());
        }
        for (k, v) in users.get(&(app.clone(), user.clone())).into_iter().flatten() {
            merged.insert(format!("user:{k}"), v.clone());
        }
        let mut events = Vec::new();
        let rows = events_of.query_map([&app, &user, &id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, f64>(2)?, r.get::<_, String>(3)?))
        })?;
        for event in rows {
            let (event_id, invocation_id, timestamp, data) = event?;
            let mut event: Event =
                serde_json::from_str(&data).with_context(|| format!("event {event_id} of {app}/{user}/{id}"))?;
            event.id = event_id;
            event.invocation_id = invocation_id;
            event.timestamp = timestamp;
            events.push(event);
        }
        records.push(Record { app_name: app, user_id: user, id, last_update_time: update_time, state: merged, events });
    }
    Ok(records)
}

/// Imports every session of the store at `path` into `store`.
pub async fn import(store: Arc<dyn SessionStore>, path: &Path, skip_existing: bool) -> anyhow::Result<Imported> {
    transfer::import_records(store, read(path)?.into_iter().map(Ok), skip_existing).await
}
