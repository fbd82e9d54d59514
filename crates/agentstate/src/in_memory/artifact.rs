//! The in-memory store's artifacts: each artifact's versions in a vector, numbered by position
//! (ADK for Python's in-memory service keeps them the same way); a version removed by retention
//! leaves its slot empty, so the numbers stay.

use std::collections::BTreeMap;
use std::sync::{PoisonError, RwLock};

use async_trait::async_trait;

use crate::error::Result;
use crate::store::{ArtifactKey, ArtifactMeta, ArtifactStore, NewArtifactVersion, StoredArtifact};

/// Every artifact's versions (`None`: removed by retention), in key order.
#[derive(Debug, Default)]
pub(super) struct Artifacts(RwLock<BTreeMap<ArtifactKey, Vec<Option<StoredArtifact>>>>);

fn kept(versions: &[Option<StoredArtifact>]) -> usize {
    versions.iter().flatten().count()
}

impl Artifacts {
    /// Removes every artifact `doomed` names; returns how many versions went.
    pub(super) fn remove_where(&self, doomed: impl Fn(&ArtifactKey) -> bool) -> usize {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let mut removed = 0;
        all.retain(|key, versions| {
            let keep = !doomed(key);
            if !keep {
                removed += kept(versions);
            }
            keep
        });
        removed
    }
}

#[async_trait]
impl ArtifactStore for Artifacts {
    async fn put_artifact(&self, key: &ArtifactKey, version: &NewArtifactVersion) -> Result<i64> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let versions = all.entry(key.clone()).or_default();
        let number = i64::try_from(versions.len()).unwrap_or(i64::MAX);
        versions.push(Some(StoredArtifact {
            meta: ArtifactMeta { version: number, ..version.meta.clone() },
            part: version.part.clone(),
            kind: version.kind,
            data: version.data.clone(),
        }));
        Ok(number)
    }

    /// The versions' slots cloned, numbers kept; their payloads shared, not copied.
    async fn copy_artifact(&self, from: &ArtifactKey, to_session: &str, last: i64) -> Result<usize> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let Some(versions) = all.get(from) else { return Ok(0) };
        let upto = usize::try_from(last.saturating_add(1)).unwrap_or(0).min(versions.len());
        let copied = versions[..upto].to_vec();
        let count = kept(&copied);
        if count > 0 {
            all.insert(from.with_session(to_session), copied);
        }
        Ok(count)
    }

    async fn get_artifact(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<StoredArtifact>> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        let Some(versions) = all.get(key) else { return Ok(None) };
        let found = match version {
            None => versions.last(),
            Some(v) => usize::try_from(v).ok().and_then(|v| versions.get(v)),
        };
        Ok(found.cloned().flatten())
    }

    async fn artifact_versions(&self, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        Ok(all.get(key).map(|versions| versions.iter().flatten().map(|v| v.meta.clone()).collect()).unwrap_or_default())
    }

    async fn artifact_names(&self, app: &str, user: &str, session: Option<&str>) -> Result<Vec<String>> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        let mut names: Vec<String> = all
            .keys()
            .filter(|k| k.app == app && k.user == user && (k.session.is_none() || k.session.as_deref() == session))
            .map(|k| k.name.clone())
            .collect();
        names.sort_unstable();
        Ok(names)
    }

    async fn delete_artifact(&self, key: &ArtifactKey) -> Result<usize> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        Ok(all.remove(key).map_or(0, |versions| kept(&versions)))
    }

    async fn delete_session_artifacts(&self, app: &str, user: &str, session: &str) -> Result<usize> {
        Ok(self.remove_where(|k| k.app == app && k.user == user && k.session.as_deref() == Some(session)))
    }

    async fn erase_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        Ok(self.remove_where(|k| k.app == app && k.user == user))
    }

    async fn count_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        let all = self.0.read().unwrap_or_else(PoisonError::into_inner);
        Ok(all.iter().filter(|(k, _)| k.app == app && k.user == user).map(|(_, versions)| kept(versions)).sum())
    }

    async fn prune_artifact(&self, key: &ArtifactKey, below: i64) -> Result<usize> {
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let Some(versions) = all.get_mut(key) else { return Ok(0) };
        let below = usize::try_from(below).unwrap_or_default().min(versions.len().saturating_sub(1));
        Ok(versions.iter_mut().take(below).filter_map(Option::take).count())
    }
}
