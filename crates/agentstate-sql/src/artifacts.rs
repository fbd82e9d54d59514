//! Artifacts as every dialect stores them (`agentstate_artifacts`): the columns a version is
//! written as and read back from, and the PostgreSQL and MySQL operations, written once as a macro
//! each dialect's `ops` module expands next to its own `sql!` (as [`crate::leases`] is).

use agentstate::store::{ArtifactMeta, PayloadKind, StoredArtifact};
use agentstate::{Error, Map, Result, Value};

/// How many times a save reads the next number again after a concurrent save took it.
pub(crate) const SAVE_ATTEMPTS: u32 = 64;

/// JSON text of a map, as the `custom_metadata` and `part` columns keep it.
pub(crate) fn json_text(map: &Map<String, Value>) -> String {
    Value::Object(map.clone()).to_string()
}

/// A map read back from a JSON column.
pub(crate) fn json_map(text: &str, column: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Error::Backend {
            message: format!("an artifact's stored {column} is not a JSON object"),
            retryable: false,
            source: None,
        }),
    }
}

/// A version's metadata from its columns.
pub(crate) fn meta(
    version: i64,
    create_micros: i64,
    mime_type: Option<String>,
    custom_metadata: &str,
    size: i64,
) -> Result<ArtifactMeta> {
    Ok(ArtifactMeta {
        version,
        mime_type,
        custom_metadata: json_map(custom_metadata, "custom metadata")?,
        create_micros,
        size: u64::try_from(size).unwrap_or_default(),
    })
}

/// A whole version from its metadata and the rest of its columns.
pub(crate) fn stored(meta: ArtifactMeta, part: &str, kind: &str, data: Vec<u8>) -> Result<StoredArtifact> {
    Ok(StoredArtifact { meta, part: json_map(part, "part")?, kind: PayloadKind::parse(kind), data: data.into() })
}

/// Names sorted by code point (as ADK sorts them), whatever the database's collation.
pub(crate) fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort_unstable();
    names.dedup();
    names
}

/// Expands to a module `artifacts` with the artifact operations, as functions of a `Pool` of `$db`.
macro_rules! artifact_operations {
    ($db:ty) => {
        /// Artifacts (see [`crate::artifacts`]).
        pub(crate) mod artifacts {
            use agentstate::Result;
            use agentstate::store::{ArtifactKey, ArtifactMeta, NewArtifactVersion, StoredArtifact};
            use sqlx::Row as _;

            use $crate::artifacts::{SAVE_ATTEMPTS, json_text, meta, sorted, stored};
            use $crate::pool::sqlx_error;

            type Pool = sqlx::Pool<$db>;

            /// Every artifact of a session (binds app, user, session).
            pub(crate) const SESSION_DELETE: &str = sql!("artifact_session_delete");
            /// Every artifact of a user (binds app, user).
            pub(crate) const ERASE: &str = sql!("artifact_erase");

            fn keyed<'q>(
                statement: &'static str,
                key: &'q ArtifactKey,
            ) -> sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments> {
                sqlx::query(statement).bind(&key.app).bind(&key.user).bind(key.session_column()).bind(&key.name)
            }

            /// Reads the next number and inserts under it; a concurrent save that took the number
            /// first makes the insert fail on the key, and the number is read again.
            pub(crate) async fn put(pool: &Pool, key: &ArtifactKey, version: &NewArtifactVersion) -> Result<i64> {
                let failed = |e| sqlx_error("saving an artifact", e);
                let size = i64::try_from(version.meta.size).unwrap_or(i64::MAX);
                let (metadata, part) = (json_text(&version.meta.custom_metadata), json_text(&version.part));
                let mut attempt = 0;
                loop {
                    let next: i64 = keyed(sql!("artifact_next"), key)
                        .fetch_one(pool)
                        .await
                        .and_then(|r| r.try_get("next"))
                        .map_err(failed)?;
                    let inserted = keyed(sql!("artifact_insert"), key)
                        .bind(next)
                        .bind(version.meta.create_micros)
                        .bind(&version.meta.mime_type)
                        .bind(&metadata)
                        .bind(&part)
                        .bind(version.kind.as_str())
                        .bind(size)
                        .bind(version.data.as_ref())
                        .execute(pool)
                        .await;
                    match inserted {
                        Ok(_) => return Ok(next),
                        Err(e) if attempt < SAVE_ATTEMPTS && taken(&e) => {
                            attempt += 1;
                            tokio::time::sleep(std::time::Duration::from_micros(u64::from(attempt.min(10)) * 300))
                                .await;
                        }
                        Err(e) => return Err(failed(e)),
                    }
                }
            }

            /// Whether an insert failed because the number was taken (or, on MySQL, a deadlock
            /// between two inserts of neighbouring numbers).
            fn taken(e: &sqlx::Error) -> bool {
                e.as_database_error().is_some_and(|d| {
                    d.is_unique_violation() || matches!(d.code().as_deref(), Some("40001" | "40P01" | "1213" | "1205"))
                })
            }

            pub(crate) async fn get(
                pool: &Pool,
                key: &ArtifactKey,
                version: Option<i64>,
            ) -> Result<Option<StoredArtifact>> {
                let query = match version {
                    Some(v) => keyed(sql!("artifact_get"), key).bind(v),
                    None => keyed(sql!("artifact_latest"), key),
                };
                let row = query.fetch_optional(pool).await.map_err(|e| sqlx_error("loading an artifact", e))?;
                let Some(row) = row else { return Ok(None) };
                let read = || -> std::result::Result<_, sqlx::Error> {
                    Ok((
                        row.try_get::<String, _>("part")?,
                        row.try_get::<String, _>("kind")?,
                        row.try_get::<Vec<u8>, _>("data")?,
                    ))
                };
                let (part, kind, data) = read().map_err(|e| sqlx_error("reading an artifact", e))?;
                stored(meta_of(&row)?, &part, &kind, data).map(Some)
            }

            /// A version's metadata from the columns every artifact read answers.
            fn meta_of(row: &<$db as sqlx::Database>::Row) -> Result<ArtifactMeta> {
                let read = || -> std::result::Result<_, sqlx::Error> {
                    Ok((
                        row.try_get::<i64, _>("version")?,
                        row.try_get::<i64, _>("create_micros")?,
                        row.try_get::<Option<String>, _>("mime_type")?,
                        row.try_get::<String, _>("custom_metadata")?,
                        row.try_get::<i64, _>("size")?,
                    ))
                };
                let (v, create, mime, custom, size) = read().map_err(|e| sqlx_error("reading an artifact", e))?;
                meta(v, create, mime, &custom, size)
            }

            pub(crate) async fn versions(pool: &Pool, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>> {
                let rows = keyed(sql!("artifact_versions"), key)
                    .fetch_all(pool)
                    .await
                    .map_err(|e| sqlx_error("listing an artifact's versions", e))?;
                rows.iter().map(meta_of).collect()
            }

            pub(crate) async fn version(
                pool: &Pool,
                key: &ArtifactKey,
                version: Option<i64>,
            ) -> Result<Option<ArtifactMeta>> {
                let row = keyed(sql!("artifact_meta"), key)
                    .bind(version)
                    .fetch_optional(pool)
                    .await
                    .map_err(|e| sqlx_error("loading an artifact's metadata", e))?;
                row.as_ref().map(meta_of).transpose()
            }

            pub(crate) async fn names(
                pool: &Pool,
                app: &str,
                user: &str,
                session: Option<&str>,
            ) -> Result<Vec<String>> {
                let rows = sqlx::query(sql!("artifact_names"))
                    .bind(app)
                    .bind(user)
                    .bind(session.unwrap_or(""))
                    .fetch_all(pool)
                    .await
                    .map_err(|e| sqlx_error("listing artifacts", e))?;
                let names = rows
                    .iter()
                    .map(|row| row.try_get::<String, _>("name"))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| sqlx_error("listing artifacts", e))?;
                Ok(sorted(names))
            }

            pub(crate) async fn delete(pool: &Pool, key: &ArtifactKey) -> Result<usize> {
                let done = keyed(sql!("artifact_delete"), key)
                    .execute(pool)
                    .await
                    .map_err(|e| sqlx_error("deleting an artifact", e))?;
                Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
            }

            pub(crate) async fn prune(pool: &Pool, key: &ArtifactKey, below: i64) -> Result<usize> {
                let done = keyed(sql!("artifact_prune"), key)
                    .bind(below)
                    .execute(pool)
                    .await
                    .map_err(|e| sqlx_error("removing an artifact's old versions", e))?;
                Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
            }

            /// A fork's copy in the database (the same app and user; numbers kept).
            pub(crate) async fn copy(pool: &Pool, from: &ArtifactKey, to_session: &str, last: i64) -> Result<usize> {
                let done = keyed(sql!("artifact_copy"), from)
                    .bind(to_session)
                    .bind(last)
                    .execute(pool)
                    .await
                    .map_err(|e| sqlx_error("copying an artifact", e))?;
                Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
            }

            pub(crate) async fn count(pool: &Pool, app: &str, user: &str) -> Result<usize> {
                let row = sqlx::query(sql!("artifact_count"))
                    .bind(app)
                    .bind(user)
                    .fetch_one(pool)
                    .await
                    .and_then(|r| r.try_get::<i64, _>("versions"))
                    .map_err(|e| sqlx_error("counting artifacts", e))?;
                Ok(usize::try_from(row).unwrap_or_default())
            }

            pub(crate) async fn delete_where(pool: &Pool, statement: &'static str, binds: &[&str]) -> Result<usize> {
                let mut query = sqlx::query(statement);
                for value in binds {
                    query = query.bind(value.to_string());
                }
                let done = query.execute(pool).await.map_err(|e| sqlx_error("deleting artifacts", e))?;
                Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
            }
        }
    };
}

pub(crate) use artifact_operations;

/// Expands to the [`ArtifactStore`](agentstate::store::ArtifactStore) of a pooled store `$store`
/// (PostgreSQL's, MySQL's) over its `ops::artifacts`.
macro_rules! artifact_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl agentstate::store::ArtifactStore for $store {
            async fn put_artifact(
                &self,
                key: &agentstate::store::ArtifactKey,
                version: &agentstate::store::NewArtifactVersion,
            ) -> agentstate::Result<i64> {
                ops::artifacts::put(&self.pool, key, version).await
            }

            async fn get_artifact(
                &self,
                key: &agentstate::store::ArtifactKey,
                version: Option<i64>,
            ) -> agentstate::Result<Option<agentstate::store::StoredArtifact>> {
                ops::artifacts::get(&self.pool, key, version).await
            }

            async fn artifact_versions(
                &self,
                key: &agentstate::store::ArtifactKey,
            ) -> agentstate::Result<Vec<agentstate::store::ArtifactMeta>> {
                ops::artifacts::versions(&self.pool, key).await
            }

            async fn artifact_version(
                &self,
                key: &agentstate::store::ArtifactKey,
                version: Option<i64>,
            ) -> agentstate::Result<Option<agentstate::store::ArtifactMeta>> {
                ops::artifacts::version(&self.pool, key, version).await
            }

            async fn artifact_names(
                &self,
                app: &str,
                user: &str,
                session: Option<&str>,
            ) -> agentstate::Result<Vec<String>> {
                ops::artifacts::names(&self.pool, app, user, session).await
            }

            async fn delete_artifact(&self, key: &agentstate::store::ArtifactKey) -> agentstate::Result<usize> {
                ops::artifacts::delete(&self.pool, key).await
            }

            async fn delete_session_artifacts(
                &self,
                app: &str,
                user: &str,
                session: &str,
            ) -> agentstate::Result<usize> {
                ops::artifacts::delete_where(&self.pool, ops::artifacts::SESSION_DELETE, &[app, user, session]).await
            }

            async fn erase_artifacts(&self, app: &str, user: &str) -> agentstate::Result<usize> {
                ops::artifacts::delete_where(&self.pool, ops::artifacts::ERASE, &[app, user]).await
            }

            async fn count_artifacts(&self, app: &str, user: &str) -> agentstate::Result<usize> {
                ops::artifacts::count(&self.pool, app, user).await
            }

            async fn prune_artifact(
                &self,
                key: &agentstate::store::ArtifactKey,
                below: i64,
            ) -> agentstate::Result<usize> {
                ops::artifacts::prune(&self.pool, key, below).await
            }

            /// In the database, numbers kept.
            async fn copy_artifact(
                &self,
                from: &agentstate::store::ArtifactKey,
                to_session: &str,
                last: i64,
            ) -> agentstate::Result<usize> {
                ops::artifacts::copy(&self.pool, from, to_session, last).await
            }
        }
    };
}

pub(crate) use artifact_store;
