//! A fork's artifacts: the source session's artifacts as they were at the fork point, with the
//! same version numbers, so the events the fork copies name versions it holds. For each
//! session-scoped artifact, the versions up to the one the copied events last record; for one no
//! event records (saved straight through the service), the versions saved by the fork point's
//! time. `user:` artifacts are the user's already and are not copied.

use super::model;
use super::rewind::Recorded;
use crate::error::Result;
use crate::key::SessionKey;
use crate::store::{ArtifactKey, ArtifactStore, NewArtifactVersion};

/// Copies into `fork` the artifacts of `source` at the fork point (`recorded` folded over the
/// events up to it, `until_micros` its time); returns how many versions. Whatever the store holds
/// under the fork's id (artifacts may belong to sessions it does not hold) is replaced.
pub(crate) async fn carry(
    store: &dyn ArtifactStore,
    source: &SessionKey,
    fork: &SessionKey,
    recorded: &Recorded,
    until_micros: i64,
) -> Result<usize> {
    let (app, user) = (source.app_name(), source.user_id());
    store.delete_session_artifacts(app, user, fork.session_id()).await?;
    let key = |session: &SessionKey, name: &str| ArtifactKey {
        app: app.to_owned(),
        user: user.to_owned(),
        session: Some(session.session_id().to_owned()),
        name: name.to_owned(),
    };
    let mut copied = 0;
    for name in store.artifact_names(app, user, Some(source.session_id())).await? {
        if model::is_user_scoped(&name) {
            continue;
        }
        let (from, to) = (key(source, &name), key(fork, &name));
        let versions = store.artifact_versions(&from).await?;
        let last = match recorded.then(&name) {
            Some(version) => Some(version),
            None => versions.iter().filter(|v| v.create_micros <= until_micros).map(|v| v.version).max(),
        };
        let Some(last) = last else { continue };
        for meta in versions.iter().filter(|v| v.version <= last) {
            let Some(stored) = store.get_artifact(&from, Some(meta.version)).await? else { continue };
            let version =
                NewArtifactVersion { meta: stored.meta, part: stored.part, kind: stored.kind, data: stored.data };
            store.put_artifact(&to, &version).await?;
            copied += 1;
        }
    }
    Ok(copied)
}
