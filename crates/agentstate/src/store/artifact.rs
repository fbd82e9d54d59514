//! Artifacts kept by the store: the [`ArtifactStore`] capability. The rules (names, scopes,
//! references, what a part may be, limits) are the service's, in [`crate::artifact`]; a store
//! keeps numbered versions of each artifact, each a payload of bytes with the rest of its part
//! and its metadata, and hands out the next number atomically.

use async_trait::async_trait;
pub use bytes::Bytes;
use serde_json::{Map, Value};

use crate::error::Result;
use crate::key::SessionKey;

/// Which artifact: an app's user's file, in one session or (`session: None`, names starting
/// with `user:`) in every session of the user.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArtifactKey {
    /// The app.
    pub app: String,
    /// The user.
    pub user: String,
    /// The session; `None` for a user-scoped artifact.
    pub session: Option<String>,
    /// The file name (may hold `/`).
    pub name: String,
}

impl ArtifactKey {
    /// The artifact `name` of `session` (for a session-scoped name).
    pub fn in_session(session: &SessionKey, name: impl Into<String>) -> Self {
        Self {
            app: session.app_name().to_owned(),
            user: session.user_id().to_owned(),
            session: Some(session.session_id().to_owned()),
            name: name.into(),
        }
    }

    /// The session as stored: `""` for a user-scoped artifact (no session id is empty).
    pub fn session_column(&self) -> &str {
        self.session.as_deref().unwrap_or("")
    }

    /// The artifact of the same name, app and user in `session`.
    pub fn with_session(&self, session: &str) -> Self {
        Self { session: Some(session.to_owned()), ..self.clone() }
    }
}

/// Where a version's bytes go back in its part when it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// `inline_data.data`.
    Inline,
    /// `text` (UTF-8).
    Text,
    /// Nowhere: the part has no bytes of its own (a `file_data` URI, a reference).
    None,
}

impl PayloadKind {
    /// Its name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Text => "text",
            Self::None => "none",
        }
    }

    /// The kind a stored name names (an unknown one reads as [`PayloadKind::None`]).
    pub fn parse(name: &str) -> Self {
        match name {
            "inline" => Self::Inline,
            "text" => Self::Text,
            _ => Self::None,
        }
    }
}

/// A version's metadata, as listings answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactMeta {
    /// From 0.
    pub version: i64,
    /// The part's MIME type (`None` for a reference, whose type is its target's).
    pub mime_type: Option<String>,
    /// What the caller attached.
    pub custom_metadata: Map<String, Value>,
    /// When it was saved (epoch µs).
    pub create_micros: i64,
    /// Bytes of its payload.
    pub size: u64,
}

/// A version to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewArtifactVersion {
    /// The metadata; its `version` is ignored (the store numbers it).
    pub meta: ArtifactMeta,
    /// The part without its payload (snake_case JSON).
    pub part: Map<String, Value>,
    /// Where the payload goes back.
    pub kind: PayloadKind,
    /// The payload (shared: cloning it copies no bytes).
    pub data: Bytes,
}

/// A stored version, whole.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredArtifact {
    /// Its metadata.
    pub meta: ArtifactMeta,
    /// The part without its payload.
    pub part: Map<String, Value>,
    /// Where the payload goes back.
    pub kind: PayloadKind,
    /// The payload (shared: cloning it copies no bytes).
    pub data: Bytes,
}

/// A stored version saved again, as it is (the store numbers it anew).
impl From<StoredArtifact> for NewArtifactVersion {
    fn from(stored: StoredArtifact) -> Self {
        Self { meta: stored.meta, part: stored.part, kind: stored.kind, data: stored.data }
    }
}

/// The field of the [`Error::InvalidArgument`](crate::Error::InvalidArgument) a save past the size
/// limit answers (the server answers it 413).
pub const TOO_LARGE_FIELD: &str = "artifact_size";

/// A save refused for its size: over `max` bytes.
pub fn too_large(what: impl std::fmt::Display, max: u64) -> crate::Error {
    crate::Error::InvalidArgument {
        field: TOO_LARGE_FIELD,
        message: format!("the artifact is {what}, over the limit of {max} bytes"),
    }
}

/// The next chunk of a stream.
pub async fn next_chunk(chunks: &mut PayloadStream) -> Option<Result<Bytes>> {
    std::future::poll_fn(|cx| chunks.as_mut().poll_next(cx)).await
}

/// Chunks gathered in one buffer; refused past `max` bytes.
pub async fn gather(chunks: PayloadStream, max: u64) -> Result<Bytes> {
    gather_sized(chunks, 0, max).await
}

/// [`gather`] into a buffer sized for `expected` bytes.
async fn gather_sized(mut chunks: PayloadStream, expected: u64, max: u64) -> Result<Bytes> {
    let mut whole = bytes::BytesMut::with_capacity(usize::try_from(expected.min(max)).unwrap_or_default());
    while let Some(chunk) = next_chunk(&mut chunks).await {
        let chunk = chunk?;
        if (whole.len() + chunk.len()) as u64 > max {
            return Err(too_large("larger", max));
        }
        whole.extend_from_slice(&chunk);
    }
    Ok(whole.freeze())
}

/// A payload read in chunks, as a store whose payloads live outside it (a file) hands it out.
pub type PayloadStream = std::pin::Pin<Box<dyn futures_core::Stream<Item = Result<Bytes>> + Send>>;

/// A version's payload as [`ArtifactStore::open_artifact`] answers it.
pub enum Payload {
    /// In memory, whole.
    Whole(Bytes),
    /// Read as it is consumed: at most a chunk at a time in memory.
    Chunks {
        /// The chunks.
        stream: PayloadStream,
        /// How many bytes they make.
        size: u64,
    },
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Whole(bytes) => f.debug_tuple("Whole").field(&bytes.len()).finish(),
            Self::Chunks { size, .. } => f.debug_struct("Chunks").field("size", size).finish_non_exhaustive(),
        }
    }
}

impl Payload {
    /// How many bytes it holds.
    pub fn size(&self) -> u64 {
        match self {
            Self::Whole(bytes) => bytes.len() as u64,
            Self::Chunks { size, .. } => *size,
        }
    }

    /// The payload whole (a stream read to its end).
    pub async fn into_bytes(self) -> Result<Bytes> {
        match self {
            Self::Whole(bytes) => Ok(bytes),
            Self::Chunks { stream, size } => gather_sized(stream, size, u64::MAX).await,
        }
    }
}

/// Versioned artifacts kept beside sessions.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// Stores `version` as the artifact's next version (0 when it has none) and returns its
    /// number. Atomic: two saves of one artifact at once get two numbers, neither overwritten.
    async fn put_artifact(&self, key: &ArtifactKey, version: &NewArtifactVersion) -> Result<i64>;

    /// Stores the payload `chunks` as the artifact's next version, as
    /// [`put_artifact`](Self::put_artifact) does (`version.data` is ignored and its `meta.size`
    /// set to what the chunks make); past `max` bytes it refuses with [`TOO_LARGE_FIELD`] and
    /// stores nothing. Answers the number and the size. By default the chunks are gathered in
    /// memory first; a store that keeps payloads outside memory (a file) writes them as they come.
    async fn put_artifact_chunks(
        &self,
        key: &ArtifactKey,
        mut version: NewArtifactVersion,
        chunks: PayloadStream,
        max: u64,
    ) -> Result<(i64, u64)> {
        version.data = gather(chunks, max).await?;
        version.meta.size = version.data.len() as u64;
        Ok((self.put_artifact(key, &version).await?, version.meta.size))
    }

    /// One version (`None`: the latest), whole; `None` if there is no such version.
    async fn get_artifact(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<StoredArtifact>>;

    /// One version as [`get_artifact`](Self::get_artifact) finds it, its payload apart (the
    /// stored version's `data` left empty): a store that keeps payloads outside memory hands out
    /// a stream, so a large one is never whole in memory. By default the payload is whole.
    async fn open_artifact(
        &self,
        key: &ArtifactKey,
        version: Option<i64>,
    ) -> Result<Option<(StoredArtifact, Payload)>> {
        let Some(mut stored) = self.get_artifact(key, version).await? else { return Ok(None) };
        let data = std::mem::take(&mut stored.data);
        Ok(Some((stored, Payload::Whole(data))))
    }

    /// Gives the artifact of `from`'s name in session `to_session` of the same user (a fork,
    /// which holds no versions of it) the versions of `from` numbered up to `last`. A store that
    /// can shares the payloads (a file linked twice, a buffer counted twice) or copies them where
    /// they are, without passing them through the process. By default each version is read and
    /// saved again (numbered from 0 in order); returns how many.
    async fn copy_artifact(&self, from: &ArtifactKey, to_session: &str, last: i64) -> Result<usize> {
        copy_through(self, from, &from.with_session(to_session), last).await
    }

    /// Every version's metadata, oldest first; empty for no such artifact.
    async fn artifact_versions(&self, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>>;

    /// One version's metadata (`None`: the latest), without its payload; `None` if there is no
    /// such version. By default picked from [`artifact_versions`](Self::artifact_versions); a
    /// store that can look one version up does.
    async fn artifact_version(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<ArtifactMeta>> {
        let mut metas = self.artifact_versions(key).await?;
        Ok(match version {
            None => metas.pop(),
            Some(v) => metas.into_iter().find(|m| m.version == v),
        })
    }

    /// The names of the artifacts of the session `session` of `user` in `app`, with the user's
    /// user-scoped ones (`None`: those alone), sorted.
    async fn artifact_names(&self, app: &str, user: &str, session: Option<&str>) -> Result<Vec<String>>;

    /// Removes every version of the artifact; returns how many.
    async fn delete_artifact(&self, key: &ArtifactKey) -> Result<usize>;

    /// Removes every version of every artifact of the session; returns how many.
    async fn delete_session_artifacts(&self, app: &str, user: &str, session: &str) -> Result<usize>;

    /// Removes every version of every artifact of the user in `app`, of every session and
    /// user-scoped; returns how many.
    async fn erase_artifacts(&self, app: &str, user: &str) -> Result<usize>;

    /// How many versions [`erase_artifacts`](Self::erase_artifacts) would remove now.
    async fn count_artifacts(&self, app: &str, user: &str) -> Result<usize>;

    /// Removes the artifact's versions numbered below `below`, keeping the others' numbers and
    /// the next one; returns how many went. For retention, which never passes a number past the
    /// latest version's.
    async fn prune_artifact(&self, key: &ArtifactKey, below: i64) -> Result<usize>;
}

/// [`ArtifactStore::copy_artifact`] done through the store's own calls: each version read and
/// saved again (numbered from 0 in order). For stores that cannot copy in place.
pub async fn copy_through<S: ArtifactStore + ?Sized>(
    store: &S,
    from: &ArtifactKey,
    to: &ArtifactKey,
    last: i64,
) -> Result<usize> {
    let mut copied = 0;
    for meta in store.artifact_versions(from).await?.into_iter().filter(|m| m.version <= last) {
        let Some(stored) = store.get_artifact(from, Some(meta.version)).await? else { continue };
        store.put_artifact(to, &stored.into()).await?;
        copied += 1;
    }
    Ok(copied)
}
