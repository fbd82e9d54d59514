//! The local store of `adk web` / `adk api_server` (ADK for Python's `SqliteSessionService`,
//! `<agents_dir>/<app>/.adk/session.db`): another schema than the one agentstate serves, so it
//! is copied rather than opened. [`read`] turns it into archive records; [`import`] stores them
//! into any agentstate store, as `agentstate sessions import` does with an archive.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agentstate::archive::{self, ArchiveError, ImportOptions, Progress, Record};
use agentstate::store::SessionStore;
use agentstate::{Event, Map, Value};
use rusqlite::{Connection, OpenFlags, Row};

/// Why an `adk web` store could not be copied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdkWebError {
    /// The file could not be opened or read as SQLite.
    #[error("reading {path}: {source}")]
    Sqlite {
        /// The store.
        path: PathBuf,
        /// The driver's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file is not an `adk web` store of the schema this release reads.
    #[error("{path} {problem}")]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// What is missing.
        problem: &'static str,
    },
    /// A row holds JSON that cannot be read.
    #[error("{path}: {what} is not readable: {problem}")]
    Corrupt {
        /// The store.
        path: PathBuf,
        /// The row.
        what: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Storing the sessions failed.
    #[error(transparent)]
    Import(#[from] ArchiveError),
}

struct Reader<'a> {
    path: &'a Path,
    conn: Connection,
}

impl Reader<'_> {
    fn sqlite(&self, source: rusqlite::Error) -> AdkWebError {
        AdkWebError::Sqlite { path: self.path.to_owned(), source }
    }

    fn corrupt(&self, what: String, problem: impl std::fmt::Display) -> AdkWebError {
        AdkWebError::Corrupt { path: self.path.to_owned(), what, problem: problem.to_string() }
    }

    fn state(&self, text: &str, what: impl Fn() -> String) -> Result<Map<String, Value>, AdkWebError> {
        match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(self.corrupt(what(), "not a JSON object")),
            Err(e) => Err(self.corrupt(what(), e)),
        }
    }

    /// Every row of `sql`, mapped by `row`.
    fn rows<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, AdkWebError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sqlite(e))?;
        let rows = stmt.query_map(params, row).map_err(|e| self.sqlite(e))?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| self.sqlite(e))
    }

    fn check_schema(&self) -> Result<(), AdkWebError> {
        let columns = self.rows("SELECT name FROM pragma_table_info('events')", [], |r| r.get::<_, String>("name"))?;
        let not_a_store = |problem| AdkWebError::NotAStore { path: self.path.to_owned(), problem };
        if columns.is_empty() {
            return Err(not_a_store("is not an ADK session store (no events table)"));
        }
        if !columns.iter().any(|c| c == "event_data") {
            return Err(not_a_store(
                "uses ADK's old schema (no event_data column); migrate it with ADK for Python first",
            ));
        }
        Ok(())
    }

    fn records(&self) -> Result<Vec<Record>, AdkWebError> {
        self.check_schema()?;
        let mut apps = HashMap::new();
        for (app, text) in self.rows("SELECT app_name, state FROM app_states", [], |r| {
            Ok((r.get::<_, String>("app_name")?, r.get::<_, String>("state")?))
        })? {
            let state = self.state(&text, || format!("the app state of {app}"))?;
            apps.insert(app, state);
        }
        let mut users = HashMap::new();
        for (app, user, text) in self.rows("SELECT app_name, user_id, state FROM user_states", [], |r| {
            Ok((r.get::<_, String>("app_name")?, r.get::<_, String>("user_id")?, r.get::<_, String>("state")?))
        })? {
            let state = self.state(&text, || format!("the user state of {app}/{user}"))?;
            users.insert((app, user), state);
        }
        let sessions = self.rows(
            "SELECT app_name, user_id, id, state, create_time, update_time FROM sessions ORDER BY update_time",
            [],
            |r| {
                Ok((
                    r.get::<_, String>("app_name")?,
                    r.get::<_, String>("user_id")?,
                    r.get::<_, String>("id")?,
                    r.get::<_, String>("state")?,
                    r.get::<_, f64>("create_time")?,
                    r.get::<_, f64>("update_time")?,
                ))
            },
        )?;
        let mut records = Vec::with_capacity(sessions.len());
        for (app, user, id, text, create_time, update_time) in sessions {
            let name = format!("{app}/{user}/{id}");
            let mut state = self.state(&text, || format!("the state of session {name}"))?;
            for (k, v) in apps.get(&app).into_iter().flatten() {
                state.insert(format!("{}{k}", agentstate::APP_PREFIX), v.clone());
            }
            for (k, v) in users.get(&(app.clone(), user.clone())).into_iter().flatten() {
                state.insert(format!("{}{k}", agentstate::USER_PREFIX), v.clone());
            }
            let events = self.events(&app, &user, &id, &name)?;
            records.push(Record {
                app_name: app,
                user_id: user,
                id,
                last_update_time: update_time,
                state,
                events,
                create_time: Some(create_time),
                display_name: None,
                labels: Default::default(),
                expire_time: None,
                artifacts: Vec::new(),
            });
        }
        Ok(records)
    }

    fn events(&self, app: &str, user: &str, id: &str, name: &str) -> Result<Vec<Event>, AdkWebError> {
        let rows = self.rows(
            "SELECT id, invocation_id, timestamp, event_data FROM events \
             WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 ORDER BY timestamp, rowid",
            [app, user, id],
            |r| {
                Ok((
                    r.get::<_, String>("id")?,
                    r.get::<_, String>("invocation_id")?,
                    r.get::<_, f64>("timestamp")?,
                    r.get::<_, String>("event_data")?,
                ))
            },
        )?;
        rows.into_iter()
            .map(|(event_id, invocation_id, timestamp, data)| {
                let event: Event =
                    serde_json::from_str(&data).map_err(|e| self.corrupt(format!("event {event_id} of {name}"), e))?;
                Ok(Event { id: event_id, invocation_id, timestamp, ..event })
            })
            .collect()
    }
}

/// Reads every session of the store at `path` (opened read-only), with its events and its merged
/// state.
pub fn read(path: &Path) -> Result<Vec<Record>, AdkWebError> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|source| AdkWebError::Sqlite { path: path.to_owned(), source })?;
    Reader { path, conn }.records()
}

/// Copies every session of the store at `path` into `store`, calling `progress` after each
/// session. The store is read whole first, off the async runtime's threads.
pub async fn import(
    store: &dyn SessionStore,
    path: &Path,
    options: ImportOptions,
    progress: impl FnMut(&Progress),
) -> Result<Progress, AdkWebError> {
    let owned = path.to_owned();
    let records = tokio::task::spawn_blocking(move || read(&owned)).await.map_err(|e| AdkWebError::Corrupt {
        path: path.to_owned(),
        what: "the store".into(),
        problem: format!("reading it panicked: {e}"),
    })??;
    Ok(archive::import(store, records.into_iter().map(Ok), options, progress).await?)
}
