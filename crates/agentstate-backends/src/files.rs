//! Artifacts whose payloads live in a directory, next to the index the store keeps: the
//! [`ArtifactFiles`] store. Every version's number, metadata and part stay in the store's own
//! artifact table (numbered there atomically, listed, counted and removed with the sessions);
//! a payload of [`ArtifactFiles::inline_below`] bytes or more goes to a file of its own and the
//! index holds the file's name in its place. Small payloads stay in the index, where a read is
//! one query.
//!
//! The directory mirrors whose the artifacts are, so removals are directory removals:
//! `ROOT/<app>/<user>/<session, or _user>/<name>/<uuid>.blob`, each level a hash of its id (ids
//! and names may hold any printable character). A payload is written and flushed to disk before
//! its index row exists, and a directory is removed before its rows: a crash in between leaves a
//! file no row names (removed with its directory later), never a row without its file.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! let index = agentstate_backends::open("sqlite://agentstate.db").await?;
//! let store = agentstate_backends::ArtifactFiles::open(index, "/var/lib/agentstate/artifacts")?;
//! let sessions = agentstate::SessionService::new(store);
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentstate::store::{
    ArtifactKey, ArtifactMeta, ArtifactStore, AttributesUpdate, Bytes, Capabilities, CommitOutcome, EventCommit,
    EventQuery, LifecycleStore, ListQuery, LoadedSession, NewArtifactVersion, NewSession, Payload, PayloadStream,
    SessionRead, SessionStore, StoredArtifact, UserDataCounts, next_chunk, too_large,
};
use agentstate::{Error, Event, Result, Session, SessionKey, Value};
use async_trait::async_trait;
use bytes::BytesMut;
use sha2::{Digest, Sha256};

/// Where the index says a version's payload is: the part's entry under this name holds the
/// file's name. Reserved: a part that brings it is refused.
pub const FILE_ENTRY: &str = "agentstate_file";

/// Payloads of this many bytes or more go to files by default.
pub const DEFAULT_INLINE_BELOW: usize = 64 * 1024;

/// A store whose artifact payloads live in a directory: every other operation, and the
/// artifacts' index, are the inner store's.
pub struct ArtifactFiles {
    inner: Arc<dyn SessionStore>,
    root: PathBuf,
    inline_below: usize,
}

impl std::fmt::Debug for ArtifactFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactFiles").field("root", &self.root).field("inline_below", &self.inline_below).finish()
    }
}

impl ArtifactFiles {
    /// Payloads under `root` (created if missing), the index in `inner`, which must keep
    /// artifacts.
    pub fn open(inner: Arc<dyn SessionStore>, root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        if inner.capabilities().artifacts.is_none() {
            return Err(Error::Unsupported { operation: "keep artifact files", capability: "artifacts" });
        }
        std::fs::create_dir_all(&root).map_err(|e| io("creating", &root, e))?;
        Ok(Self { inner, root, inline_below: DEFAULT_INLINE_BELOW })
    }

    /// Payloads of `bytes` or more go to files (0: every one).
    #[must_use]
    pub fn inline_below(mut self, bytes: usize) -> Self {
        self.inline_below = bytes;
        self
    }

    /// The directory payloads are kept in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn index(&self) -> Result<&dyn ArtifactStore> {
        self.inner
            .capabilities()
            .artifacts
            .ok_or(Error::Unsupported { operation: "artifacts", capability: "artifacts" })
    }

    fn user_dir(&self, app: &str, user: &str) -> PathBuf {
        self.root.join(hashed(app)).join(hashed(user))
    }

    fn session_dir(&self, app: &str, user: &str, session: Option<&str>) -> PathBuf {
        self.user_dir(app, user).join(session.map_or_else(|| "_user".to_owned(), hashed))
    }

    fn artifact_dir(&self, key: &ArtifactKey) -> PathBuf {
        self.session_dir(&key.app, &key.user, key.session.as_deref()).join(hashed(&key.name))
    }

    /// Indexes `version` (its payload, `data` empty, in the file `name` at `path`): the row that
    /// names the file. A file nothing indexed is removed.
    async fn index_file(
        &self,
        key: &ArtifactKey,
        mut version: NewArtifactVersion,
        name: String,
        path: &Path,
    ) -> Result<i64> {
        version.part.insert(FILE_ENTRY.to_owned(), Value::String(name));
        let indexed = match self.index() {
            Ok(index) => index.put_artifact(key, &version).await,
            Err(e) => Err(e),
        };
        if indexed.is_err() {
            let _ = tokio::fs::remove_file(path).await;
        }
        indexed
    }
}

/// Refuses a version whose part has the field this store names its file in.
fn unreserved(version: &NewArtifactVersion) -> Result<()> {
    if version.part.contains_key(FILE_ENTRY) {
        return Err(Error::invalid("artifact", format!("{FILE_ENTRY} is a reserved part field")));
    }
    Ok(())
}

/// A directory name for an id: 32 hex digits of its SHA-256.
fn hashed(id: &str) -> String {
    Sha256::digest(id.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn io(what: &str, path: &Path, error: std::io::Error) -> Error {
    let message = format!("{what} artifact file {}: {error}", path.display());
    Error::backend(message, false, error)
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::backend("artifact file work stopped", false, e))?
}

/// A removal's outcome: what is not there is removed already.
fn removed(outcome: std::io::Result<()>, path: &Path) -> Result<()> {
    match outcome {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("removing", path, e)),
        _ => Ok(()),
    }
}

/// Removes a directory and all in it.
async fn remove_dir(dir: PathBuf) -> Result<()> {
    blocking(move || removed(std::fs::remove_dir_all(&dir), &dir)).await
}

/// The payload file an index entry names, checked to be one this store makes (no path read from
/// the database is ever opened).
fn file_name<'a>(key: &ArtifactKey, entry: &'a Value) -> Result<&'a str> {
    entry.as_str().filter(|name| is_file_name(name)).ok_or_else(|| {
        let message = format!("artifact {:?} names no payload file this store made: {entry}", key.name);
        Error::backend(message, false, std::io::Error::from(std::io::ErrorKind::InvalidData))
    })
}

/// How much of a payload file one chunk reads.
const CHUNK_BYTES: usize = 256 * 1024;

/// A file read a chunk at a time, to its end.
fn chunks(file: tokio::fs::File, path: PathBuf) -> PayloadStream {
    Box::pin(futures_util::stream::try_unfold((file, path), |(mut file, path)| async move {
        let mut chunk = BytesMut::with_capacity(CHUNK_BYTES);
        while chunk.len() < CHUNK_BYTES {
            let read =
                tokio::io::AsyncReadExt::read_buf(&mut file, &mut chunk).await.map_err(|e| io("reading", &path, e))?;
            if read == 0 {
                break;
            }
        }
        Ok((!chunk.is_empty()).then(|| (chunk.freeze(), (file, path))))
    }))
}

/// Writes `head` and then `chunks` to a new file at `path` (in `dir`, created if missing) and
/// flushes it to disk; answers how many bytes, refusing past `max`.
async fn write_chunks(dir: &Path, path: &Path, head: Bytes, mut chunks: PayloadStream, max: u64) -> Result<u64> {
    use tokio::io::AsyncWriteExt as _;
    let failed = |e| io("writing", path, e);
    tokio::fs::create_dir_all(dir).await.map_err(|e| io("creating", dir, e))?;
    let file = tokio::fs::File::options().write(true).create_new(true).open(path).await.map_err(failed)?;
    // Small frames (a request body's) written a chunk's worth at a time.
    let mut file = tokio::io::BufWriter::with_capacity(CHUNK_BYTES, file);
    file.write_all(&head).await.map_err(failed)?;
    let mut size = head.len() as u64;
    while let Some(chunk) = next_chunk(&mut chunks).await {
        let chunk = chunk?;
        size += chunk.len() as u64;
        if size > max {
            return Err(too_large("larger", max));
        }
        file.write_all(&chunk).await.map_err(failed)?;
    }
    file.flush().await.map_err(failed)?;
    file.get_ref().sync_all().await.map_err(failed)?;
    Ok(size)
}

/// Whether `name` is a payload file's name as this store makes them (never a path).
fn is_file_name(name: &str) -> bool {
    name.strip_suffix(".blob").is_some_and(|id| uuid::Uuid::try_parse(id).is_ok())
}

#[async_trait]
impl ArtifactStore for ArtifactFiles {
    async fn put_artifact(&self, key: &ArtifactKey, version: &NewArtifactVersion) -> Result<i64> {
        unreserved(version)?;
        if version.data.len() < self.inline_below {
            return self.index()?.put_artifact(key, version).await;
        }
        let name = format!("{}.blob", uuid::Uuid::new_v4());
        let (dir, file) = (self.artifact_dir(key), name.clone());
        let data = version.data.clone(); // shared, not copied
        let path = blocking(move || {
            std::fs::create_dir_all(&dir).map_err(|e| io("creating", &dir, e))?;
            let path = dir.join(file);
            let written = std::fs::File::create_new(&path).and_then(|mut f| {
                std::io::Write::write_all(&mut f, &data)?;
                f.sync_all()
            });
            written.map_err(|e| io("writing", &path, e))?;
            Ok(path)
        })
        .await?;
        let indexed = NewArtifactVersion {
            meta: version.meta.clone(),
            part: version.part.clone(),
            kind: version.kind,
            data: Bytes::new(),
        };
        self.index_file(key, indexed, name, &path).await
    }

    /// Chunks written to the payload's file as they come (the first `inline_below` bytes gathered
    /// to see whether it stays in the index), flushed before the index row.
    async fn put_artifact_chunks(
        &self,
        key: &ArtifactKey,
        mut version: NewArtifactVersion,
        mut chunks: PayloadStream,
        max: u64,
    ) -> Result<(i64, u64)> {
        unreserved(&version)?;
        let mut head = BytesMut::new();
        let mut ended = false;
        while head.len() < self.inline_below {
            let Some(chunk) = next_chunk(&mut chunks).await else {
                ended = true;
                break;
            };
            let chunk = chunk?;
            if (head.len() + chunk.len()) as u64 > max {
                return Err(too_large("larger", max));
            }
            head.extend_from_slice(&chunk);
        }
        if ended {
            version.meta.size = head.len() as u64;
            version.data = head.freeze();
            return Ok((self.index()?.put_artifact(key, &version).await?, version.meta.size));
        }
        let name = format!("{}.blob", uuid::Uuid::new_v4());
        let dir = self.artifact_dir(key);
        let path = dir.join(&name);
        let written = write_chunks(&dir, &path, head.freeze(), chunks, max).await;
        let size = match written {
            Ok(size) => size,
            Err(e) => {
                // Not indexed: nothing names the file.
                let _ = tokio::fs::remove_file(&path).await;
                return Err(e);
            }
        };
        version.meta.size = size;
        version.data = Bytes::new();
        Ok((self.index_file(key, version, name, &path).await?, size))
    }

    async fn get_artifact(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<StoredArtifact>> {
        let Some((mut stored, payload)) = self.open_artifact(key, version).await? else { return Ok(None) };
        stored.data = payload.into_bytes().await?;
        Ok(Some(stored))
    }

    /// A payload in a file is read as it is consumed, a chunk at a time.
    async fn open_artifact(
        &self,
        key: &ArtifactKey,
        version: Option<i64>,
    ) -> Result<Option<(StoredArtifact, Payload)>> {
        let Some(mut stored) = self.index()?.get_artifact(key, version).await? else { return Ok(None) };
        let Some(entry) = stored.part.remove(FILE_ENTRY) else {
            let data = std::mem::take(&mut stored.data);
            return Ok(Some((stored, Payload::Whole(data))));
        };
        let path = self.artifact_dir(key).join(file_name(key, &entry)?);
        let file = tokio::fs::File::open(&path).await.map_err(|e| io("reading", &path, e))?;
        let size = file.metadata().await.map_err(|e| io("reading", &path, e))?.len();
        Ok(Some((stored, Payload::Chunks { stream: chunks(file, path), size })))
    }

    /// Files are linked, not copied (both names share the bytes; removing one leaves the other),
    /// before the index copies its rows: a crash in between leaves links no row names.
    async fn copy_artifact(&self, from: &ArtifactKey, to_session: &str, last: i64) -> Result<usize> {
        let index = self.index()?;
        let (source, target) = (self.artifact_dir(from), self.artifact_dir(&from.with_session(to_session)));
        let mut names = Vec::new();
        // The file names are in the rows' parts, which no metadata read answers: each version's row
        // is read whole, which for a file-backed version is its part alone (an inline payload is
        // under `inline_below`, 64 KiB by default). A parts-only read would be a store method on
        // every backend for this one caller.
        for meta in index.artifact_versions(from).await?.iter().filter(|m| m.version <= last) {
            let Some(stored) = index.get_artifact(from, Some(meta.version)).await? else { continue };
            if let Some(entry) = stored.part.get(FILE_ENTRY) {
                names.push(file_name(from, entry)?.to_owned());
            }
        }
        blocking(move || {
            if !names.is_empty() {
                std::fs::create_dir_all(&target).map_err(|e| io("creating", &target, e))?;
            }
            for name in names {
                let (from, to) = (source.join(&name), target.join(&name));
                // A link where the file system has them, else a copy.
                std::fs::hard_link(&from, &to)
                    .or_else(|_| std::fs::copy(&from, &to).map(drop))
                    .map_err(|e| io("linking", &to, e))?;
            }
            Ok(())
        })
        .await?;
        index.copy_artifact(from, to_session, last).await
    }

    async fn artifact_versions(&self, key: &ArtifactKey) -> Result<Vec<ArtifactMeta>> {
        self.index()?.artifact_versions(key).await
    }

    async fn artifact_version(&self, key: &ArtifactKey, version: Option<i64>) -> Result<Option<ArtifactMeta>> {
        self.index()?.artifact_version(key, version).await
    }

    async fn artifact_names(&self, app: &str, user: &str, session: Option<&str>) -> Result<Vec<String>> {
        self.index()?.artifact_names(app, user, session).await
    }

    async fn delete_artifact(&self, key: &ArtifactKey) -> Result<usize> {
        remove_dir(self.artifact_dir(key)).await?;
        self.index()?.delete_artifact(key).await
    }

    async fn delete_session_artifacts(&self, app: &str, user: &str, session: &str) -> Result<usize> {
        remove_dir(self.session_dir(app, user, Some(session))).await?;
        self.index()?.delete_session_artifacts(app, user, session).await
    }

    async fn erase_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        remove_dir(self.user_dir(app, user)).await?;
        self.index()?.erase_artifacts(app, user).await
    }

    async fn count_artifacts(&self, app: &str, user: &str) -> Result<usize> {
        self.index()?.count_artifacts(app, user).await
    }

    /// The rows go first, then their files: a crash in between leaves files no row names.
    async fn prune_artifact(&self, key: &ArtifactKey, below: i64) -> Result<usize> {
        let index = self.index()?;
        let mut doomed = Vec::new();
        for meta in index.artifact_versions(key).await?.iter().filter(|m| m.version < below) {
            let Some(stored) = index.get_artifact(key, Some(meta.version)).await? else { continue };
            if let Some(name) = stored.part.get(FILE_ENTRY).and_then(Value::as_str).filter(|n| is_file_name(n)) {
                doomed.push(self.artifact_dir(key).join(name));
            }
        }
        let pruned = index.prune_artifact(key, below).await?;
        blocking(move || doomed.iter().try_for_each(|path| removed(std::fs::remove_file(path), path))).await?;
        Ok(pruned)
    }
}

/// The inner store's lifecycle, with the payload files of expired sessions removed after them.
#[async_trait]
impl LifecycleStore for ArtifactFiles {
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>> {
        let swept = self.lifecycle("sweep expired sessions")?.delete_expired(before_micros, limit).await?;
        for key in &swept {
            remove_dir(self.session_dir(key.app_name(), key.user_id(), Some(key.session_id()))).await?;
        }
        Ok(swept)
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>, now_micros: i64) -> Result<bool> {
        self.lifecycle("change an expire time")?.set_expire_time(key, expire_micros, now_micros).await
    }

    async fn set_attributes(&self, key: &SessionKey, update: &AttributesUpdate, now_micros: i64) -> Result<bool> {
        self.lifecycle("change a display name or labels")?.set_attributes(key, update, now_micros).await
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        self.lifecycle("erase a user's data")?.erase_user(app, user).await
    }

    async fn count_user_data(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        self.lifecycle("count a user's data")?.count_user_data(app, user).await
    }
}

impl ArtifactFiles {
    fn lifecycle(&self, operation: &'static str) -> Result<&dyn LifecycleStore> {
        self.inner.capabilities().lifecycle.ok_or(Error::Unsupported { operation, capability: "lifecycle" })
    }
}

#[async_trait]
impl SessionStore for ArtifactFiles {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.inner.create(new).await
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        self.inner.get(key, read).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        self.inner.list(query).await
    }

    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        self.inner.count_sessions(query).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        self.inner.delete(key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.inner.commit(commit).await
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        self.inner.events(query).await
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        self.inner.count_events(key, now_micros).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        self.inner.users_with_session(app, session_id, now_micros).await
    }

    /// The inner store's, with this store's artifacts and lifecycle (which removes the expired
    /// sessions' payload files).
    fn system(&self) -> &'static str {
        self.inner.system()
    }

    fn capabilities(&self) -> Capabilities<'_> {
        let mut capabilities = self.inner.capabilities();
        if capabilities.lifecycle.is_some() {
            capabilities = capabilities.with_lifecycle(self);
        }
        capabilities.with_artifacts(self)
    }
}
