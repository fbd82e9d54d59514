//! Artifacts through encryption at rest.
//!
//! A version's payload is sealed alone (bound to its artifact: app, user, session, name, as a
//! payload); its part, MIME type and custom metadata are sealed together in one envelope kept as
//! its metadata, bound the same way as metadata. What stays plaintext is what the store numbers,
//! lists and removes by: the app, user, session and name, the version, the create time and the
//! payload's size.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{EncryptedStore, KeyRing, SEALED, seal::undecryptable};
use crate::error::{Error, Result};
use crate::store::{
    ArtifactKey, ArtifactMeta, ArtifactStore, NewArtifactVersion, PayloadKind, SessionStore, StoredArtifact,
};

/// A part without its payload, and where the payload goes back: what the metadata envelope
/// holds beside the metadata.
type SealedPart = (Map<String, Value>, PayloadKind);

fn aad(key: &ArtifactKey, what: &str) -> Vec<u8> {
    format!("a\0{what}\0{}\0{}\0{}\0{}", key.app, key.user, key.session_column(), key.name).into_bytes()
}

fn what(key: &ArtifactKey) -> String {
    format!("artifact {:?} of app {}, user {}", key.name, key.app, key.user)
}

impl KeyRing {
    fn seal_artifact(&self, key: &ArtifactKey, version: &NewArtifactVersion) -> NewArtifactVersion {
        let inside = json!({
            "part": version.part,
            "mime_type": version.meta.mime_type,
            "custom_metadata": version.meta.custom_metadata,
            "kind": version.kind.as_str(),
        });
        let mut sealed = Map::new();
        sealed.insert(SEALED.into(), Value::String(self.seal(&aad(key, "meta"), inside.to_string().as_bytes())));
        NewArtifactVersion {
            meta: ArtifactMeta { mime_type: None, custom_metadata: sealed, ..version.meta.clone() },
            part: Map::new(),
            kind: PayloadKind::Inline,
            data: self.seal(&aad(key, "data"), &version.data).into_bytes().into(),
        }
    }

    /// The metadata of `meta` opened, with the part and payload kind sealed beside it; as it is
    /// when it was stored before encryption.
    fn open_meta(&self, key: &ArtifactKey, meta: ArtifactMeta) -> Result<(ArtifactMeta, Option<SealedPart>)> {
        let Some(Value::String(sealed)) = meta.custom_metadata.get(SEALED).filter(|_| meta.custom_metadata.len() == 1)
        else {
            return Ok((meta, None));
        };
        let mut inside = self.open_sealed_object(&aad(key, "meta"), sealed, &|| what(key))?;
        let part = match inside.remove("part") {
            Some(Value::Object(part)) => part,
            _ => Map::new(),
        };
        let kind = PayloadKind::parse(inside.get("kind").and_then(Value::as_str).unwrap_or_default());
        let mime_type = inside.get("mime_type").and_then(Value::as_str).map(str::to_owned);
        let custom_metadata = match inside.remove("custom_metadata") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        Ok((ArtifactMeta { mime_type, custom_metadata, ..meta }, Some((part, kind))))
    }

    fn open_artifact(&self, key: &ArtifactKey, stored: StoredArtifact) -> Result<StoredArtifact> {
        let (meta, sealed) = self.open_meta(key, stored.meta)?;
        let Some((part, kind)) = sealed else { return Ok(StoredArtifact { meta, ..stored }) };
        let text = std::str::from_utf8(&stored.data)
            .map_err(|_| undecryptable(&what(key), "its payload is not a ciphertext"))?;
        let data = match self.open(&aad(key, "data"), text) {
            Some(Ok(plain)) => plain,
            _ => return Err(undecryptable(&what(key), "its payload does not open with the configured keys")),
        };
        Ok(StoredArtifact { meta, part, kind, data: data.into() })
    }
}

impl<S: SessionStore> EncryptedStore<S> {
    fn inner_artifacts(&self) -> Result<&dyn ArtifactStore> {
        self.inner()
            .capabilities()
            .artifacts
            .ok_or(Error::Unsupported { operation: "artifacts", capability: "artifacts" })
    }
}

/// Artifacts sealed on the way in and opened on the way out (see the module).
#[async_trait]
impl<S: SessionStore> ArtifactStore for EncryptedStore<S> {
    async fn put_artifact(&self, key: &ArtifactKey, version: &NewArtifactVersion) -> Result<i64> {
        self.inner_artifacts()?.put_artifact(key, &self.keys().seal_artifact(key, version)).await
    }

    async fn get_artifact(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<StoredArtifact>> {
        let found = self.inner_artifacts()?.get_artifact(key, version).await?;
        found.map(|stored| self.keys().open_artifact(key, stored)).transpose()
    }

    async fn artifact_versions(&self, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>> {
        let metas = self.inner_artifacts()?.artifact_versions(key).await?;
        metas.into_iter().map(|meta| Ok(self.keys().open_meta(key, meta)?.0)).collect()
    }

    async fn artifact_version(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<ArtifactMeta>> {
        let meta = self.inner_artifacts()?.artifact_version(key, version).await?;
        meta.map(|meta| Ok(self.keys().open_meta(key, meta)?.0)).transpose()
    }

    async fn artifact_names(&self, app: &str, user: &str, session: Option<&str>) -> Result<Vec<String>> {
        self.inner_artifacts()?.artifact_names(app, user, session).await
    }

    async fn delete_artifact(&self, key: &ArtifactKey) -> Result<usize> {
        self.inner_artifacts()?.delete_artifact(key).await
    }

    async fn delete_session_artifacts(&self, app: &str, user: &str, session: &str) -> Result<usize> {
        self.inner_artifacts()?.delete_session_artifacts(app, user, session).await
    }

    async fn erase_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        self.inner_artifacts()?.erase_artifacts(app, user).await
    }

    async fn count_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        self.inner_artifacts()?.count_artifacts(app, user).await
    }

    async fn prune_artifact(&self, key: &ArtifactKey, below: i64) -> Result<usize> {
        self.inner_artifacts()?.prune_artifact(key, below).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InMemoryStore;
    use crate::crypt::KeyRing;

    #[tokio::test]
    async fn artifacts_are_sealed_in_the_store_and_open_through_it() {
        let ring = KeyRing::parse(&KeyRing::generate("k1").unwrap()).unwrap();
        let store = EncryptedStore::open(InMemoryStore::new(), ring).await.unwrap();
        let key = ArtifactKey { app: "a".into(), user: "u".into(), session: Some("s".into()), name: "n".into() };
        let mut custom_metadata = Map::new();
        custom_metadata.insert("secret".into(), "metadata".into());
        let version = NewArtifactVersion {
            meta: ArtifactMeta {
                version: 0,
                mime_type: Some("text/plain".into()),
                custom_metadata,
                create_micros: 5,
                size: 6,
            },
            part: Map::new(),
            kind: PayloadKind::Text,
            data: b"secret".to_vec().into(),
        };
        assert_eq!(store.put_artifact(&key, &version).await.unwrap(), 0);
        let raw = store.inner().capabilities().artifacts.unwrap().get_artifact(&key, None).await.unwrap().unwrap();
        let seen = format!("{raw:?}{}", String::from_utf8_lossy(&raw.data));
        assert!(!seen.contains("secret") && !seen.contains("text/plain"), "{seen}");
        let back = store.get_artifact(&key, None).await.unwrap().unwrap();
        assert_eq!(
            (back.meta, back.kind, back.data),
            (ArtifactMeta { version: 0, ..version.meta.clone() }, PayloadKind::Text, b"secret".to_vec().into())
        );
        let moved = ArtifactKey { name: "other".into(), ..key.clone() };
        let inner = store.inner().capabilities().artifacts.unwrap();
        inner
            .put_artifact(
                &moved,
                &NewArtifactVersion {
                    meta: raw.meta.clone(),
                    part: raw.part.clone(),
                    kind: raw.kind,
                    data: raw.data.clone(),
                },
            )
            .await
            .unwrap();
        assert!(
            store.get_artifact(&moved, None).await.is_err(),
            "a ciphertext moved to another artifact does not open"
        );
    }
}
