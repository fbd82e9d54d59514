//! The Redis store's artifacts: a hash per artifact (its version count, each version's metadata
//! and payload), each session's names in a sorted set and each user's sessions with artifacts
//! in a set (key names in `keys.rs`). Each call is one script, so a save takes the next number
//! atomically and two saves at once get two.

use agentstate::store::{ArtifactKey, ArtifactMeta, ArtifactStore, NewArtifactVersion, PayloadKind, StoredArtifact};
use agentstate::{Error, Map, Result, Value};
use async_trait::async_trait;
use serde_json::json;

use super::backend;
use crate::RedisStore;
use crate::keys::{AppKeys, escaped};
use crate::scripts;

/// A version's metadata as the hash keeps it (the number is its field's).
fn meta_json(version: &NewArtifactVersion) -> String {
    json!({
        "create_micros": version.meta.create_micros,
        "mime_type": version.meta.mime_type,
        "custom_metadata": version.meta.custom_metadata,
        "size": version.meta.size,
        "part": version.part,
        "kind": version.kind.as_str(),
    })
    .to_string()
}

fn damaged(what: &str) -> Error {
    Error::Backend { message: format!("an artifact's stored {what} is damaged"), retryable: false, source: None }
}

/// The metadata, part and payload kind of a version, from its JSON.
fn read_meta(version: i64, text: &str) -> Result<(ArtifactMeta, Map<String, Value>, PayloadKind)> {
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(text) else { return Err(damaged("metadata")) };
    let object = |value: Option<Value>| match value {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let meta = ArtifactMeta {
        version,
        mime_type: fields.get("mime_type").and_then(Value::as_str).map(str::to_owned),
        custom_metadata: object(fields.remove("custom_metadata")),
        create_micros: fields.get("create_micros").and_then(Value::as_i64).ok_or_else(|| damaged("metadata"))?,
        size: fields.get("size").and_then(Value::as_u64).unwrap_or_default(),
    };
    let kind = PayloadKind::parse(fields.get("kind").and_then(Value::as_str).unwrap_or_default());
    Ok((meta, object(fields.remove("part")), kind))
}

impl RedisStore {
    fn artifact_keys(&self, key: &ArtifactKey) -> (String, String, String) {
        let app = AppKeys::new(&self.prefix, &key.app);
        let session = key.session_column();
        (
            app.artifact(&key.user, session, &key.name),
            app.artifact_names(&key.user, session),
            app.artifact_sessions(&key.user),
        )
    }

    /// Counts, and with `remove` removes, the artifacts of one session of a user, or (`None`) of
    /// all the user's sessions and the user's own.
    pub(super) async fn clear_artifacts(
        &self,
        app: &str,
        user: &str,
        session: Option<&str>,
        remove: bool,
    ) -> Result<usize> {
        let keys = AppKeys::new(&self.prefix, app);
        let count: i64 = scripts::ARTIFACT_CLEAR
            .key(keys.artifact_sessions(user))
            .arg(keys.base())
            .arg(escaped(user))
            .arg(session.unwrap_or("\0"))
            .arg(if remove { "1" } else { "0" })
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend(if remove { "delete artifacts" } else { "count artifacts" }, e))?;
        if remove {
            self.replicated("delete artifacts").await?;
        }
        Ok(usize::try_from(count).unwrap_or_default())
    }
}

#[async_trait]
impl ArtifactStore for RedisStore {
    async fn put_artifact(&self, key: &ArtifactKey, version: &NewArtifactVersion) -> Result<i64> {
        let (artifact, names, sessions) = self.artifact_keys(key);
        let number: i64 = scripts::ARTIFACT_PUT
            .key(artifact)
            .key(names)
            .key(sessions)
            .arg(meta_json(version))
            .arg(version.data.as_ref())
            .arg(&key.name)
            .arg(key.session_column())
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("save an artifact", e))?;
        self.replicated("save an artifact").await?;
        Ok(number)
    }

    async fn get_artifact(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<StoredArtifact>> {
        let (artifact, ..) = self.artifact_keys(key);
        let found: Option<(i64, String, Vec<u8>)> = scripts::ARTIFACT_GET
            .key(artifact)
            .arg(version.map_or_else(String::new, |v| v.to_string()))
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("load an artifact", e))?;
        let Some((number, meta, data)) = found else { return Ok(None) };
        let (meta, part, kind) = read_meta(number, &meta)?;
        Ok(Some(StoredArtifact { meta, part, kind, data: data.into() }))
    }

    async fn artifact_versions(&self, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>> {
        let (artifact, ..) = self.artifact_keys(key);
        let answer: Vec<String> = scripts::ARTIFACT_VERSIONS
            .key(artifact)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("list an artifact's versions", e))?;
        let mut answer = answer.into_iter();
        let first: i64 = answer.next().and_then(|p| p.parse().ok()).unwrap_or_default();
        (first..).zip(answer).map(|(version, text)| read_meta(version, &text).map(|(meta, ..)| meta)).collect()
    }

    async fn artifact_names(&self, app: &str, user: &str, session: Option<&str>) -> Result<Vec<String>> {
        let keys = AppKeys::new(&self.prefix, app);
        let mut pipe = redis::pipe();
        pipe.cmd("ZRANGE").arg(keys.artifact_names(user, "")).arg(0).arg(-1);
        if let Some(session) = session {
            pipe.cmd("ZRANGE").arg(keys.artifact_names(user, session)).arg(0).arg(-1);
        }
        let lists: Vec<Vec<String>> =
            pipe.query_async(&mut self.connection()).await.map_err(|e| backend("list artifacts", e))?;
        let mut names: Vec<String> = lists.into_iter().flatten().collect();
        names.sort_unstable();
        names.dedup();
        Ok(names)
    }

    async fn delete_artifact(&self, key: &ArtifactKey) -> Result<usize> {
        let (artifact, names, sessions) = self.artifact_keys(key);
        let removed: i64 = scripts::ARTIFACT_DELETE
            .key(artifact)
            .key(names)
            .key(sessions)
            .arg(&key.name)
            .arg(key.session_column())
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("delete an artifact", e))?;
        self.replicated("delete an artifact").await?;
        Ok(usize::try_from(removed).unwrap_or_default())
    }

    async fn prune_artifact(&self, key: &ArtifactKey, below: i64) -> Result<usize> {
        let (artifact, ..) = self.artifact_keys(key);
        let removed: i64 = scripts::ARTIFACT_PRUNE
            .key(artifact)
            .arg(below)
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("remove an artifact's old versions", e))?;
        self.replicated("remove an artifact's old versions").await?;
        Ok(usize::try_from(removed).unwrap_or_default())
    }

    /// Inside Redis (one user's keys share a hash slot), numbers kept.
    async fn copy_artifact(&self, from: &ArtifactKey, to_session: &str, last: i64) -> Result<usize> {
        let to = from.with_session(to_session);
        let (source, ..) = self.artifact_keys(from);
        let (target, names, sessions) = self.artifact_keys(&to);
        let copied: i64 = scripts::ARTIFACT_COPY
            .key(source)
            .key(target)
            .key(names)
            .key(sessions)
            .arg(last)
            .arg(&to.name)
            .arg(to.session_column())
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| backend("copy an artifact", e))?;
        self.replicated("copy an artifact").await?;
        Ok(usize::try_from(copied).unwrap_or_default())
    }

    async fn delete_session_artifacts(&self, app: &str, user: &str, session: &str) -> Result<usize> {
        self.clear_artifacts(app, user, Some(session), true).await
    }

    async fn erase_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        self.clear_artifacts(app, user, None, true).await
    }

    async fn count_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        self.clear_artifacts(app, user, None, false).await
    }
}
