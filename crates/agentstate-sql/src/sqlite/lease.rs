//! The SQLite store's run leases: rows of `agentstate_run_leases`, each call one transaction of
//! the writer (so two servers over one file take a free lease once: SQLite's write lock orders
//! them).

use agentstate::store::{LeaseRequest, LeaseState, LeaseStore};
use agentstate::{Error, Result, SessionKey};
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, sqlite_error};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!("../../sql/sqlite/", $name, ".sql"))
    };
}

#[async_trait]
impl LeaseStore for SqliteStore {
    async fn acquire_lease(&self, request: &LeaseRequest) -> Result<LeaseState> {
        let request = request.clone();
        self.writer
            .write(move |conn| {
                let key = &request.key;
                let (app, user, session) = (key.app_name(), key.user_id(), key.session_id());
                let found = conn
                    .prepare_cached(sql!("lease_acquire"))
                    .and_then(|mut stmt| {
                        stmt.execute(params![
                            app,
                            user,
                            session,
                            request.holder,
                            request.until_micros,
                            request.now_micros
                        ])
                    })
                    .and_then(|_| {
                        conn.prepare_cached(sql!("lease_get"))?
                            .query_row(params![app, user, session], |row| {
                                Ok((row.get("holder")?, row.get("until_micros")?, row.get("interrupts")?))
                            })
                            .optional()
                    })
                    .map_err(|e| sqlite_error("take a run lease", &e))?;
                // One transaction of the writer: the row read is the one just written or kept.
                crate::leases::lease_state(&request.holder, found).ok_or_else(|| Error::Backend {
                    message: "SQLite take a run lease failed: the lease row is missing".into(),
                    retryable: true,
                    source: None,
                })
            })
            .await
    }

    async fn release_lease(&self, key: &SessionKey, holder: &str) -> Result<bool> {
        let (key, holder) = (key.clone(), holder.to_owned());
        self.writer
            .write(move |conn| {
                conn.prepare_cached(sql!("lease_release"))
                    .and_then(|mut stmt| stmt.execute(params![key.app_name(), key.user_id(), key.session_id(), holder]))
                    .map(|n| n > 0)
                    .map_err(|e| sqlite_error("give a run lease back", &e))
            })
            .await
    }

    async fn interrupt_lease(&self, key: &SessionKey, now_micros: i64) -> Result<bool> {
        let key = key.clone();
        self.writer
            .write(move |conn| {
                conn.prepare_cached(sql!("lease_interrupt"))
                    .and_then(|mut stmt| {
                        stmt.execute(params![key.app_name(), key.user_id(), key.session_id(), now_micros])
                    })
                    .map(|n| n > 0)
                    .map_err(|e| sqlite_error("interrupt a run", &e))
            })
            .await
    }
}
