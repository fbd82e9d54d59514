//! [`ArtifactService`]: ADK's artifact service over any store with the
//! [`ArtifactStore`](crate::store::ArtifactStore) capability.

use serde_json::{Map, Value};

use super::model::{self, ArtifactRef, MAX_REFERENCE_DEPTH, refused};
use crate::content::Part;
use crate::error::{Error, Result};
use crate::service::SessionService;
use crate::store::{
    ArtifactKey, ArtifactMeta, ArtifactStore, Bytes, NewArtifactVersion, Payload, PayloadKind, PayloadStream,
    StoredArtifact, too_large,
};

/// The largest artifact a save takes by default: its payload and its metadata's JSON, in bytes.
pub const DEFAULT_MAX_ARTIFACT_BYTES: usize = 64 * 1024 * 1024;

pub use crate::store::TOO_LARGE_FIELD;

/// A version's metadata, as ADK's `ArtifactVersion` carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactVersion {
    /// From 0.
    pub version: i64,
    /// Its `artifact://` URI (a part with this `file_data.file_uri` refers to it).
    pub canonical_uri: String,
    /// What the caller attached.
    pub custom_metadata: Map<String, Value>,
    /// When it was saved, Unix seconds.
    pub create_time: f64,
    /// Its MIME type; `None` for a reference.
    pub mime_type: Option<String>,
    /// Bytes of its payload (inline data, text).
    pub size: u64,
}

impl ArtifactVersion {
    fn of(key: &ArtifactKey, meta: ArtifactMeta) -> Self {
        Self {
            version: meta.version,
            canonical_uri: model::uri_of(key, meta.version),
            custom_metadata: meta.custom_metadata,
            create_time: crate::time::micros_to_secs(meta.create_micros),
            mime_type: meta.mime_type,
            size: meta.size,
        }
    }

    /// ADK's JSON (camelCase, `mimeType` left out when `None`), as `adk api_server` answers it.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("version".into(), self.version.into());
        out.insert("canonicalUri".into(), self.canonical_uri.clone().into());
        out.insert("customMetadata".into(), Value::Object(self.custom_metadata.clone()));
        out.insert(
            "createTime".into(),
            serde_json::Number::from_f64(self.create_time).map_or(Value::Null, Value::Number),
        );
        if let Some(mime) = &self.mime_type {
            out.insert("mimeType".into(), mime.clone().into());
        }
        Value::Object(out)
    }
}

/// A loaded version with its payload apart ([`ArtifactService::open`]).
#[derive(Debug)]
pub struct OpenedArtifact {
    /// The part with its payload left empty (inline data's `data`, or `text`).
    pub part: Part,
    /// Where the payload goes back.
    pub kind: PayloadKind,
    /// The payload.
    pub payload: Payload,
}

/// Whose artifacts: an app's user, and the session a call is made in (`None`: user-scoped
/// names alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactScope<'a> {
    /// The app.
    pub app: &'a str,
    /// The user.
    pub user: &'a str,
    /// The session, if any.
    pub session: Option<&'a str>,
}

impl<'a> ArtifactScope<'a> {
    /// The scope of a session (or, with `None`, of the user alone).
    pub fn new(app: &'a str, user: &'a str, session: Option<&'a str>) -> Self {
        Self { app, user, session }
    }

    fn key(&self, name: &str) -> Result<ArtifactKey> {
        model::key_of(self.app, self.user, self.session, name)
    }
}

/// Versioned artifacts (ADK's `BaseArtifactService`): files an agent saves, each save a new
/// version from 0; names starting with `user:` belong to the user in every session. Works for
/// sessions the store does not hold, as ADK's services do. Cheap to clone.
///
/// ```
/// use agentstate::artifact::{ArtifactScope, ArtifactService};
/// use agentstate::{Part, SessionService};
///
/// # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
/// async fn run() -> agentstate::Result<()> {
///     let artifacts = ArtifactService::new(SessionService::in_memory());
///     let scope = ArtifactScope::new("app", "alice", Some("s1"));
///     let first = artifacts.save(scope, "notes.txt", &Part::text("draft"), None).await?;
///     let second = artifacts.save(scope, "notes.txt", &Part::text("final"), None).await?;
///     assert_eq!((first.version, second.version), (0, 1));
///     let latest = artifacts.load(scope, "notes.txt", None).await?.unwrap();
///     assert_eq!(latest.text.as_deref(), Some("final"));
///     Ok(())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ArtifactService {
    sessions: SessionService,
    max_bytes: usize,
}

impl ArtifactService {
    /// Artifacts on the store of `sessions`, at most [`DEFAULT_MAX_ARTIFACT_BYTES`] each.
    pub fn new(sessions: SessionService) -> Self {
        Self { sessions, max_bytes: DEFAULT_MAX_ARTIFACT_BYTES }
    }

    /// With another size limit (payload and metadata, in bytes).
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The size limit.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Whether the store keeps artifacts.
    pub fn is_supported(&self) -> bool {
        self.sessions.capabilities().artifacts.is_some()
    }

    fn store(&self, operation: &'static str) -> Result<&dyn ArtifactStore> {
        self.sessions.capabilities().artifacts.ok_or(Error::Unsupported { operation, capability: "artifacts" })
    }

    /// ADK's `save_artifact`: `part` as the next version of `name` (0 for a new name), with
    /// `custom_metadata`. Refuses (as ADK's `InputValidationError`) a non-`user:` name without a
    /// session, ids that could change where it goes, a part with neither inline data, text nor a
    /// file, and an `artifact://` reference outside the caller's scope; a part over the size limit
    /// is refused with [`TOO_LARGE_FIELD`].
    pub async fn save(
        &self,
        scope: ArtifactScope<'_>,
        name: &str,
        part: &Part,
        custom_metadata: Option<Map<String, Value>>,
    ) -> Result<ArtifactVersion> {
        let key = scope.key(name)?;
        self.save_split(scope, key, model::split(part)?, custom_metadata).await
    }

    /// [`save`](Self::save) of an inline-data `part` whose bytes were decoded already
    /// (`payload`; the part's own `data` is ignored): the payload is stored as it is, never
    /// copied on the way (a server decodes a request's base64 where it lies and saves that).
    pub async fn save_inline(
        &self,
        scope: ArtifactScope<'_>,
        name: &str,
        part: &Part,
        payload: Bytes,
        custom_metadata: Option<Map<String, Value>>,
    ) -> Result<ArtifactVersion> {
        let key = scope.key(name)?;
        self.save_split(scope, key, model::split_inline(part, payload)?, custom_metadata).await
    }

    /// [`save`](Self::save) of bytes that arrive in `chunks` (a request body, a file being read):
    /// an inline-data part of `mime_type` (`application/octet-stream` when `None`). A store that
    /// keeps payloads in files writes them as they come, so the artifact is never whole in
    /// memory; past the size limit nothing is stored.
    pub async fn save_chunks(
        &self,
        scope: ArtifactScope<'_>,
        name: &str,
        mime_type: Option<&str>,
        chunks: PayloadStream,
        custom_metadata: Option<Map<String, Value>>,
    ) -> Result<ArtifactVersion> {
        let key = scope.key(name)?;
        let mime_type = mime_type.unwrap_or("application/octet-stream").to_owned();
        let blob = crate::content::Blob { mime_type: Some(mime_type), data: None, extra: Map::new() };
        let split = model::split_inline(&Part { inline_data: Some(blob), ..Part::default() }, Bytes::new())?;
        let (meta, metadata_bytes) = self.new_meta(split.mime_type, custom_metadata, 0);
        let Some(room) = self.max_bytes.checked_sub(metadata_bytes) else {
            return Err(too_large(format_args!("{metadata_bytes} bytes of metadata"), self.max_bytes as u64));
        };
        let version = NewArtifactVersion { meta, part: split.rest, kind: split.kind, data: Bytes::new() };
        let meta = version.meta.clone();
        let (number, size) =
            self.store("save_artifact")?.put_artifact_chunks(&key, version, chunks, room as u64).await?;
        Ok(ArtifactVersion::of(&key, ArtifactMeta { version: number, size, ..meta }))
    }

    /// A new version's metadata (its number is the store's to give), and how many bytes of the
    /// size limit its custom metadata takes.
    fn new_meta(
        &self,
        mime_type: Option<String>,
        custom_metadata: Option<Map<String, Value>>,
        size: u64,
    ) -> (ArtifactMeta, usize) {
        let custom_metadata = custom_metadata.unwrap_or_default();
        let metadata_bytes = serde_json::to_string(&custom_metadata).map_or(0, |s| s.len());
        let meta =
            ArtifactMeta { version: 0, mime_type, custom_metadata, create_micros: self.sessions.now_micros(), size };
        (meta, metadata_bytes)
    }

    async fn save_split(
        &self,
        scope: ArtifactScope<'_>,
        key: ArtifactKey,
        split: model::SplitPart,
        custom_metadata: Option<Map<String, Value>>,
    ) -> Result<ArtifactVersion> {
        if let Some(uri) = &split.reference {
            let target =
                model::parse_uri(uri).ok_or_else(|| refused(format!("Invalid artifact reference URI: {uri}")))?;
            model::check_scope(&target, scope.app, scope.user, key.session.as_deref())?;
        }
        let (meta, metadata_bytes) = self.new_meta(split.mime_type, custom_metadata, split.data.len() as u64);
        let total = split.data.len() + metadata_bytes;
        if total > self.max_bytes {
            return Err(too_large(format_args!("{total} bytes with its metadata"), self.max_bytes as u64));
        }
        let version = NewArtifactVersion { meta, part: split.rest, kind: split.kind, data: split.data };
        let number = self.store("save_artifact")?.put_artifact(&key, &version).await?;
        Ok(ArtifactVersion::of(&key, ArtifactMeta { version: number, ..version.meta }))
    }

    /// ADK's `load_artifact`: the part of a version (`None`: the latest), following
    /// `artifact://` references (at most [`MAX_REFERENCE_DEPTH`], each within the caller's app
    /// and user, and session for a session's artifact); `None` when there is no such version or
    /// it is a rewind's tombstone.
    pub async fn load(&self, scope: ArtifactScope<'_>, name: &str, version: Option<i64>) -> Result<Option<Part>> {
        let Some((mut stored, payload)) = self.find(scope, name, version).await? else { return Ok(None) };
        stored.data = payload.into_bytes().await?;
        model::join(stored).map(Some)
    }

    /// [`load`](Self::load) with the payload apart: the part with its payload left empty (inline
    /// data's `data`, or `text`), where the payload goes back, and the payload, streamed by a
    /// store that keeps payloads outside memory. `None` as `load` answers it.
    pub async fn open(
        &self,
        scope: ArtifactScope<'_>,
        name: &str,
        version: Option<i64>,
    ) -> Result<Option<OpenedArtifact>> {
        let Some((stored, payload)) = self.find(scope, name, version).await? else { return Ok(None) };
        let kind = stored.kind;
        Ok(Some(OpenedArtifact { part: model::join(stored)?, kind, payload }))
    }

    /// The version a load reads, opened: `name`'s, its references followed (at most
    /// [`MAX_REFERENCE_DEPTH`] deep, each in scope); `None` for no such version or a tombstone.
    async fn find(
        &self,
        scope: ArtifactScope<'_>,
        name: &str,
        version: Option<i64>,
    ) -> Result<Option<(StoredArtifact, Payload)>> {
        let store = self.store("load_artifact")?;
        let mut key = scope.key(name)?;
        let mut version = version;
        let mut depth = MAX_REFERENCE_DEPTH;
        loop {
            if version.is_some_and(|v| v < 0) {
                return Ok(None);
            }
            let Some((stored, payload)) = store.open_artifact(&key, version).await? else { return Ok(None) };
            let Some(uri) = model::reference_of(&stored) else {
                return Ok((!model::is_tombstone(&stored)).then_some((stored, payload)));
            };
            if depth == 0 {
                return Err(refused(format!("Exceeded maximum recursion depth resolving artifact reference: {uri}")));
            }
            let target: ArtifactRef =
                model::parse_uri(uri).ok_or_else(|| refused(format!("Invalid artifact reference URI: {uri}")))?;
            model::check_scope(&target, &key.app, &key.user, key.session.as_deref())?;
            depth -= 1;
            (key, version) = (target.key, Some(target.version));
        }
    }

    /// ADK's `list_artifact_keys`: the session's names and the user's `user:` names, sorted.
    pub async fn list_keys(&self, scope: ArtifactScope<'_>) -> Result<Vec<String>> {
        model::validate_segment(scope.app, "app_name")?;
        model::validate_segment(scope.user, "user_id")?;
        if let Some(session) = scope.session {
            model::validate_segment(session, "session_id")?;
        }
        self.store("list_artifact_keys")?.artifact_names(scope.app, scope.user, scope.session).await
    }

    /// ADK's `delete_artifact`: every version of `name`; nothing to delete is fine. Returns how
    /// many versions it removed.
    pub async fn delete(&self, scope: ArtifactScope<'_>, name: &str) -> Result<usize> {
        let key = scope.key(name)?;
        self.store("delete_artifact")?.delete_artifact(&key).await
    }

    /// ADK's `list_versions`: the version numbers, oldest first.
    pub async fn list_versions(&self, scope: ArtifactScope<'_>, name: &str) -> Result<Vec<i64>> {
        Ok(self.list_artifact_versions(scope, name).await?.into_iter().map(|v| v.version).collect())
    }

    /// ADK's `list_artifact_versions`: every version's metadata, oldest first.
    pub async fn list_artifact_versions(&self, scope: ArtifactScope<'_>, name: &str) -> Result<Vec<ArtifactVersion>> {
        let key = scope.key(name)?;
        let metas = self.store("list_artifact_versions")?.artifact_versions(&key).await?;
        Ok(metas.into_iter().map(|meta| ArtifactVersion::of(&key, meta)).collect())
    }

    /// ADK's `get_artifact_version`: one version's metadata (`None`: the latest's).
    pub async fn get_artifact_version(
        &self,
        scope: ArtifactScope<'_>,
        name: &str,
        version: Option<i64>,
    ) -> Result<Option<ArtifactVersion>> {
        let key = scope.key(name)?;
        let found = self.store("get_artifact_version")?.artifact_version(&key, version).await?;
        Ok(found.map(|meta| ArtifactVersion::of(&key, meta)))
    }
}
