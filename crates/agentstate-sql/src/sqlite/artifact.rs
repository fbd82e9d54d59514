//! The SQLite store's artifacts: rows of `agentstate_artifacts`. A save is one transaction of the
//! writer, which reads the next number and inserts under it (SQLite's write lock orders saves of
//! every process over the file).

use agentstate::store::{ArtifactKey, ArtifactMeta, ArtifactStore, NewArtifactVersion, StoredArtifact};
use agentstate::{Error, Result};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{SqliteStore, sqlite_error};
use crate::artifacts::{json_text, meta, sorted, stored};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!("../../sql/sqlite/", $name, ".sql"))
    };
}

fn meta_of(row: &Row<'_>) -> rusqlite::Result<(i64, i64, Option<String>, String, i64)> {
    Ok((
        row.get("version")?,
        row.get("create_micros")?,
        row.get("mime_type")?,
        row.get("custom_metadata")?,
        row.get("size")?,
    ))
}

fn get(conn: &Connection, key: &ArtifactKey, version: Option<i64>) -> Result<Option<StoredArtifact>> {
    let k = params![key.app, key.user, key.session_column(), key.name];
    let read = |row: &Row<'_>| {
        Ok((
            meta_of(row)?,
            row.get::<_, String>("part")?,
            row.get::<_, String>("kind")?,
            row.get::<_, Vec<u8>>("data")?,
        ))
    };
    let found = match version {
        Some(v) => conn.prepare_cached(sql!("artifact_get")).and_then(|mut stmt| {
            stmt.query_row(params![key.app, key.user, key.session_column(), key.name, v], read).optional()
        }),
        None => conn.prepare_cached(sql!("artifact_latest")).and_then(|mut stmt| stmt.query_row(k, read).optional()),
    }
    .map_err(|e| sqlite_error("load an artifact", &e))?;
    let Some(((v, create, mime, custom, size), part, kind, data)) = found else { return Ok(None) };
    stored(meta(v, create, mime, &custom, size)?, &part, &kind, data).map(Some)
}

fn versions(conn: &Connection, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>> {
    let rows = conn
        .prepare_cached(sql!("artifact_versions"))
        .and_then(|mut stmt| {
            stmt.query_map(params![key.app, key.user, key.session_column(), key.name], meta_of)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| sqlite_error("list an artifact's versions", &e))?;
    rows.into_iter().map(|(v, create, mime, custom, size)| meta(v, create, mime, &custom, size)).collect()
}

fn version_meta(conn: &Connection, key: &ArtifactKey, version: Option<i64>) -> Result<Option<ArtifactMeta>> {
    let found = conn
        .prepare_cached(sql!("artifact_meta"))
        .and_then(|mut stmt| {
            stmt.query_row(params![key.app, key.user, key.session_column(), key.name, version], meta_of).optional()
        })
        .map_err(|e| sqlite_error("load an artifact's metadata", &e))?;
    found.map(|(v, create, mime, custom, size)| meta(v, create, mime, &custom, size)).transpose()
}

fn names(conn: &Connection, app: &str, user: &str, session: &str) -> Result<Vec<String>> {
    conn.prepare_cached(sql!("artifact_names"))
        .and_then(|mut stmt| stmt.query_map(params![app, user, session], |row| row.get(0))?.collect())
        .map(sorted)
        .map_err(|e| sqlite_error("list artifacts", &e))
}

fn delete(conn: &Connection, statement: &str, binds: &[&str]) -> Result<usize> {
    conn.prepare_cached(statement)
        .and_then(|mut stmt| stmt.execute(rusqlite::params_from_iter(binds)))
        .map_err(|e| sqlite_error("delete artifacts", &e))
}

#[async_trait]
impl ArtifactStore for SqliteStore {
    async fn put_artifact(&self, key: &ArtifactKey, version: &NewArtifactVersion) -> Result<i64> {
        let (key, version) = (key.clone(), version.clone());
        self.writer
            .write(move |conn| {
                let k = params![key.app, key.user, key.session_column(), key.name];
                let next: i64 = conn
                    .prepare_cached(sql!("artifact_next"))
                    .and_then(|mut stmt| stmt.query_row(k, |row| row.get(0)))
                    .map_err(|e| sqlite_error("save an artifact", &e))?;
                let size = i64::try_from(version.meta.size).map_err(|e| Error::backend("artifact size", false, e))?;
                conn.prepare_cached(sql!("artifact_insert"))
                    .and_then(|mut stmt| {
                        stmt.execute(params![
                            key.app,
                            key.user,
                            key.session_column(),
                            key.name,
                            next,
                            version.meta.create_micros,
                            version.meta.mime_type,
                            json_text(&version.meta.custom_metadata),
                            json_text(&version.part),
                            version.kind.as_str(),
                            size,
                            version.data.as_ref(),
                        ])
                    })
                    .map_err(|e| sqlite_error("save an artifact", &e))?;
                Ok(next)
            })
            .await
    }

    async fn get_artifact(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<StoredArtifact>> {
        let key = key.clone();
        self.read(move |conn| get(conn, &key, version)).await
    }

    async fn artifact_versions(&self, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>> {
        let key = key.clone();
        self.read(move |conn| versions(conn, &key)).await
    }

    async fn artifact_version(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<ArtifactMeta>> {
        let key = key.clone();
        self.read(move |conn| version_meta(conn, &key, version)).await
    }

    async fn artifact_names(&self, app: &str, user: &str, session: Option<&str>) -> Result<Vec<String>> {
        let (app, user, session) = (app.to_owned(), user.to_owned(), session.unwrap_or("").to_owned());
        self.read(move |conn| names(conn, &app, &user, &session)).await
    }

    async fn delete_artifact(&self, key: &ArtifactKey) -> Result<usize> {
        let key = key.clone();
        self.writer
            .write(move |conn| {
                delete(conn, sql!("artifact_delete"), &[&key.app, &key.user, key.session_column(), &key.name])
            })
            .await
    }

    async fn prune_artifact(&self, key: &ArtifactKey, below: i64) -> Result<usize> {
        let key = key.clone();
        self.writer
            .write(move |conn| {
                conn.prepare_cached(sql!("artifact_prune"))
                    .and_then(|mut stmt| {
                        stmt.execute(params![key.app, key.user, key.session_column(), key.name, below])
                    })
                    .map_err(|e| sqlite_error("remove an artifact's old versions", &e))
            })
            .await
    }

    /// In the database, numbers kept.
    async fn copy_artifact(&self, from: &ArtifactKey, to_session: &str, last: i64) -> Result<usize> {
        let (from, to_session) = (from.clone(), to_session.to_owned());
        self.writer
            .write(move |conn| {
                conn.prepare_cached(sql!("artifact_copy"))
                    .and_then(|mut stmt| {
                        let (session, name) = (from.session_column(), &from.name);
                        stmt.execute(params![from.app, from.user, session, name, to_session, last])
                    })
                    .map_err(|e| sqlite_error("copy an artifact", &e))
            })
            .await
    }

    async fn delete_session_artifacts(&self, app: &str, user: &str, session: &str) -> Result<usize> {
        let binds = [app.to_owned(), user.to_owned(), session.to_owned()];
        self.writer
            .write(move |conn| delete(conn, sql!("artifact_session_delete"), &[&binds[0], &binds[1], &binds[2]]))
            .await
    }

    async fn erase_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        let binds = [app.to_owned(), user.to_owned()];
        let erased =
            self.writer.write(move |conn| delete(conn, sql!("artifact_erase"), &[&binds[0], &binds[1]])).await?;
        // As for a user's sessions: nothing of the erased rows may stay in the write-ahead log.
        self.checkpoint().await?;
        Ok(erased)
    }

    async fn count_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        let (app, user) = (app.to_owned(), user.to_owned());
        self.read(move |conn| {
            conn.prepare_cached(sql!("artifact_count"))
                .and_then(|mut stmt| stmt.query_row(params![app, user], |row| row.get::<_, i64>(0)))
                .map(|n| usize::try_from(n).unwrap_or_default())
                .map_err(|e| sqlite_error("count artifacts", &e))
        })
        .await
    }
}
