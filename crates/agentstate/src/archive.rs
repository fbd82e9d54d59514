//! Sessions as JSON Lines, one session per line: its events and its merged state, in storage JSON
//! (snake_case events). [`export`] reads them from any [`SessionService`]; [`import`] stores them
//! into any [`SessionStore`].
//!
//! An import stores each session's events as history without applying their deltas again, and
//! the state as exported, so shared `user:`/`app:` keys keep the values they had when exported,
//! whatever order sessions are imported in.
//!
//! ```
//! use agentstate::archive::{self, ImportOptions};
//! use agentstate::{CreateSession, Event, InMemoryStore, SessionService};
//! use serde_json::json;
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! async fn run() -> Result<(), archive::ArchiveError> {
//!     let source = SessionService::new(InMemoryStore::new());
//!     let mut session = source.create_session(CreateSession::new("app", "alice").id("s1")).await?;
//!     source.append_event(&mut session, Event::new("inv").delta("user:name", json!("Alice"))).await?;
//!
//!     let mut lines = Vec::new();
//!     let exported = archive::export(&source, "app", None, &mut lines, |_| {}).await?;
//!     assert_eq!((exported.sessions, exported.events), (1, 1));
//!
//!     let target = InMemoryStore::new();
//!     let records = archive::read_lines(lines.as_slice());
//!     let imported = archive::import(&target, records, ImportOptions::default(), |_| {}).await?;
//!     assert_eq!(imported, exported);
//!     Ok(())
//! }
//! ```

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::event::Event;
use crate::key::SessionKey;
use crate::service::{GetSessionConfig, ListSessions, SessionService};
use crate::session::SessionAttributes;
use crate::store::{
    ArtifactKey, ArtifactMeta, EventCommit, NewArtifactVersion, NewSession, ScopedState, SessionStore, micros_to_secs,
    secs_to_micros,
};

/// One exported session: a line of the archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The app.
    pub app_name: String,
    /// The user.
    pub user_id: String,
    /// The session id.
    pub id: String,
    /// Last update, epoch seconds.
    pub last_update_time: f64,
    /// The merged state: session keys, `app:` keys, `user:` keys.
    pub state: Map<String, Value>,
    /// Every event, oldest first.
    pub events: Vec<Event>,
    /// When it was created, epoch seconds (absent in archives of older releases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_time: Option<f64>,
    /// A name to show people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Its labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// When it expires, epoch seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_time: Option<f64>,
    /// Its artifacts (session-scoped; a user's `user:` artifacts are the user's, not a
    /// session's, and stay out), each with every version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArchivedArtifact>,
}

/// An artifact of an exported session: every version, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchivedArtifact {
    /// Its name.
    pub name: String,
    /// Its versions, numbered from 0 without gaps.
    pub versions: Vec<ArchivedVersion>,
}

/// One version of an [`ArchivedArtifact`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchivedVersion {
    /// When it was saved, epoch microseconds.
    pub create_micros: i64,
    /// What the caller attached.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub custom_metadata: Map<String, Value>,
    /// The part as saved (bytes base64).
    pub part: crate::content::Part,
}

/// How far an export or import got: passed to the progress callback after each session, and
/// returned at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Sessions written (export) or created (import).
    pub sessions: usize,
    /// Their events.
    pub events: usize,
    /// Sessions that already existed and were left alone (import with `skip_existing`).
    pub skipped: usize,
}

/// Options of [`import`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Leave sessions that already exist alone instead of stopping at the first one.
    pub skip_existing: bool,
}

/// Why an export or import stopped. Sessions handled before the failure stay where they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// Reading the archive failed.
    #[error("reading the archive failed: {0}")]
    Read(#[source] std::io::Error),
    /// Writing the archive failed.
    #[error("writing the archive failed: {0}")]
    Write(#[source] std::io::Error),
    /// A line is not an exported session.
    #[error("line {line}: not an exported session: {source}")]
    Line {
        /// Its number, from 1.
        line: usize,
        /// Why it cannot be read.
        #[source]
        source: serde_json::Error,
    },
    /// The service refused or failed an operation on one session.
    #[error("session {key}: {source}")]
    Session {
        /// `app/user/id`.
        key: String,
        /// What failed.
        #[source]
        source: Error,
    },
    /// The service failed outside any one session (listing them).
    #[error(transparent)]
    Service(#[from] Error),
}

/// Sessions listed per page while exporting.
const EXPORT_PAGE: usize = 500;

/// Writes every session of `app_name` (or of one user) to `out`, one JSON line each, calling
/// `progress` after each. Returns what was written.
pub async fn export(
    service: &SessionService,
    app_name: &str,
    user_id: Option<&str>,
    out: &mut impl Write,
    mut progress: impl FnMut(&Progress),
) -> Result<Progress, ArchiveError> {
    let mut request = ListSessions {
        app_name: app_name.to_owned(),
        user_id: user_id.map(str::to_owned),
        page_size: Some(EXPORT_PAGE),
        ..ListSessions::default()
    };
    let mut done = Progress::default();
    loop {
        let page = service.list_sessions(request.clone()).await?;
        for listed in &page.sessions {
            let failed = |source| ArchiveError::Session { key: listed.key().to_string(), source };
            // Deleted since it was listed: nothing to export.
            let Some(session) = service.get_session(listed.key(), GetSessionConfig::default()).await.map_err(failed)?
            else {
                continue;
            };
            let attributes = session.attributes();
            let record = Record {
                app_name: session.app_name().to_owned(),
                user_id: session.user_id().to_owned(),
                id: session.id().to_owned(),
                last_update_time: session.last_update_time(),
                state: session.state().all().clone(),
                events: session.events().iter().cloned().collect(),
                create_time: Some(session.create_time()),
                display_name: attributes.display_name.clone(),
                labels: attributes.labels.clone(),
                expire_time: attributes.expire_time_micros.map(micros_to_secs),
                artifacts: export_artifacts(service, session.key()).await.map_err(failed)?,
            };
            serde_json::to_writer(&mut *out, &record).map_err(|e| ArchiveError::Write(e.into()))?;
            out.write_all(b"\n").map_err(ArchiveError::Write)?;
            done.sessions += 1;
            done.events += record.events.len();
            progress(&done);
        }
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => return Ok(done),
        }
    }
}

/// The session-scoped artifacts of `key`, every version (none when the store keeps none).
async fn export_artifacts(service: &SessionService, key: &SessionKey) -> Result<Vec<ArchivedArtifact>, Error> {
    let Some(store) = service.capabilities().artifacts else { return Ok(Vec::new()) };
    let (app, user, id) = (key.app_name(), key.user_id(), key.session_id());
    let mut out = Vec::new();
    for name in store.artifact_names(app, user, Some(id)).await? {
        if crate::artifact::is_user_scoped(&name) {
            continue;
        }
        let artifact = ArtifactKey { app: app.to_owned(), user: user.to_owned(), session: Some(id.to_owned()), name };
        let mut versions = Vec::new();
        for meta in store.artifact_versions(&artifact).await? {
            let Some(stored) = store.get_artifact(&artifact, Some(meta.version)).await? else { continue };
            let custom_metadata = stored.meta.custom_metadata.clone();
            let create_micros = stored.meta.create_micros;
            versions.push(ArchivedVersion {
                create_micros,
                custom_metadata,
                part: crate::artifact::model::join(stored)?,
            });
        }
        out.push(ArchivedArtifact { name: artifact.name, versions });
    }
    Ok(out)
}

/// The records of an archive, line by line (blank lines skipped), for [`import`].
pub fn read_lines(input: impl BufRead) -> impl Iterator<Item = Result<Record, ArchiveError>> {
    input.lines().enumerate().filter_map(|(n, line)| match line {
        Ok(line) if line.trim().is_empty() => None,
        Ok(line) => Some(serde_json::from_str(&line).map_err(|source| ArchiveError::Line { line: n + 1, source })),
        Err(e) => Some(Err(ArchiveError::Read(e))),
    })
}

/// Stores each record's session, events and state in `store`, calling `progress` after each.
/// An existing session stops the import, or is skipped with
/// [`skip_existing`](ImportOptions::skip_existing); so does a record that cannot be read.
pub async fn import(
    store: &dyn SessionStore,
    records: impl IntoIterator<Item = Result<Record, ArchiveError>>,
    options: ImportOptions,
    mut progress: impl FnMut(&Progress),
) -> Result<Progress, ArchiveError> {
    let mut done = Progress::default();
    for record in records {
        let record = record?;
        let key = format!("{}/{}/{}", record.app_name, record.user_id, record.id);
        match import_one(store, record).await {
            Ok(events) => {
                done.sessions += 1;
                done.events += events;
            }
            Err(Error::AlreadyExists { .. }) if options.skip_existing => done.skipped += 1,
            Err(source) => return Err(ArchiveError::Session { key, source }),
        }
        progress(&done);
    }
    Ok(done)
}

/// Creates the session at its creation time (or just before its first event, for archives that
/// lack it) and commits its events in order, each at its stored time (moved forward where needed
/// to keep the order strict), without their deltas.
async fn import_one(store: &dyn SessionStore, record: Record) -> Result<usize, Error> {
    // Keys from an archive may be ids agentstate itself would refuse (written by another
    // program); they are stored as they were, like keys read back from storage.
    let key = SessionKey::from_storage(record.app_name, record.user_id, record.id);
    let first = record.events.first().map(|e| e.time().micros());
    let last_update = secs_to_micros(record.last_update_time).unwrap_or_default();
    let earliest = first.map_or(last_update, |t| t.min(last_update) - 1);
    let created = record.create_time.and_then(secs_to_micros).map_or(earliest, |t| t.min(earliest));
    let attributes = SessionAttributes {
        display_name: record.display_name,
        labels: record.labels,
        expire_time_micros: record.expire_time.and_then(secs_to_micros),
    };
    attributes.validate()?;
    let new = NewSession {
        key: key.clone(),
        state: ScopedState::split(record.state),
        create_time_micros: created,
        attributes,
        // The archive holds the state at export, not at creation: the history starts empty.
        history_start: None,
    };
    let mut marker = store.create(new).await?.last_update_micros();
    if !record.artifacts.is_empty() {
        import_artifacts(store, &key, &record.artifacts).await?;
    }
    let count = record.events.len();
    for event in record.events {
        // Stored as archived, expired or not (a sweep removes what expired).
        let commit = EventCommit::history_only(key.clone(), marker, event);
        marker = commit.timestamp_micros;
        store.commit(commit).await?;
    }
    Ok(count)
}

/// Stores the versions of a session's artifacts under their own numbers: refused when the target
/// keeps no artifacts or already holds versions of one of them (the events' `artifact_delta`
/// would then name other versions).
async fn import_artifacts(
    store: &dyn SessionStore,
    key: &SessionKey,
    artifacts: &[ArchivedArtifact],
) -> Result<(), Error> {
    let Some(artifacts_store) = store.capabilities().artifacts else {
        return Err(Error::Unsupported { operation: "import a session's artifacts", capability: "artifacts" });
    };
    for artifact in artifacts {
        let target = ArtifactKey {
            app: key.app_name().to_owned(),
            user: key.user_id().to_owned(),
            session: Some(key.session_id().to_owned()),
            name: artifact.name.clone(),
        };
        if !artifacts_store.artifact_versions(&target).await?.is_empty() {
            return Err(Error::invalid(
                "artifacts",
                format!("artifact {:?} of this session already has versions in the target", artifact.name),
            ));
        }
        for version in &artifact.versions {
            let split = crate::artifact::model::split(&version.part)?;
            let new = NewArtifactVersion {
                meta: ArtifactMeta {
                    version: 0,
                    mime_type: split.mime_type,
                    custom_metadata: version.custom_metadata.clone(),
                    create_micros: version.create_micros,
                    size: split.data.len() as u64,
                },
                part: split.rest,
                kind: split.kind,
                data: split.data,
            };
            artifacts_store.put_artifact(&target, &new).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::{ArtifactScope, ArtifactService};
    use crate::{CreateSession, InMemoryStore, Part};

    #[tokio::test]
    async fn a_sessions_artifacts_travel_with_it() {
        let source = SessionService::new(InMemoryStore::new());
        source.create_session(CreateSession::new("app", "ann").id("s1")).await.unwrap();
        let artifacts = ArtifactService::new(source.clone());
        let scope = ArtifactScope::new("app", "ann", Some("s1"));
        let mut meta = Map::new();
        meta.insert("by".into(), "tool".into());
        artifacts.save(scope, "report.txt", &Part::text("one"), Some(meta.clone())).await.unwrap();
        let bytes: Part =
            serde_json::from_value(serde_json::json!({"inline_data": {"mime_type": "image/png", "data": "AAEC"}}))
                .unwrap();
        artifacts.save(scope, "report.txt", &bytes, None).await.unwrap();
        artifacts.save(scope, "user:card", &Part::text("the user's"), None).await.unwrap();
        let mut lines = Vec::new();
        export(&source, "app", None, &mut lines, |_| {}).await.unwrap();

        let target = SessionService::new(InMemoryStore::new());
        import(target.store().as_ref(), read_lines(lines.as_slice()), ImportOptions::default(), |_| {}).await.unwrap();
        let moved = ArtifactService::new(target.clone());
        let versions = moved.list_artifact_versions(scope, "report.txt").await.unwrap();
        assert_eq!(
            versions,
            artifacts.list_artifact_versions(scope, "report.txt").await.unwrap(),
            "numbers, times, metadata"
        );
        assert_eq!(moved.load(scope, "report.txt", Some(0)).await.unwrap(), Some(Part::text("one")));
        assert_eq!(moved.load(scope, "report.txt", None).await.unwrap(), Some(bytes));
        assert_eq!(
            moved.list_keys(scope).await.unwrap(),
            ["report.txt"],
            "user: artifacts are the user's, not the session's"
        );
        // Again, over what is there: the session is skipped, its artifacts untouched.
        let again = import(
            target.store().as_ref(),
            read_lines(lines.as_slice()),
            ImportOptions { skip_existing: true },
            |_| {},
        )
        .await
        .unwrap();
        assert_eq!(again.skipped, 1);
        assert_eq!(moved.list_versions(scope, "report.txt").await.unwrap(), [0, 1]);
    }
}
