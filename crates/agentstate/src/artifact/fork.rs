//! A fork's artifacts: the source session's artifacts as they were at the fork point, with the
//! same version numbers, so the events the fork copies name versions it holds. For each
//! session-scoped artifact, the versions up to the one the copied events last record; for one no
//! event records (saved straight through the service), the versions saved by the fork point's
//! time. `user:` artifacts are the user's already and are not copied. Payloads are shared or
//! copied where they lie, as the store can ([`ArtifactStore::copy_artifact`]).

use super::rewind::Recorded;
use crate::error::Result;
use crate::key::SessionKey;
use crate::store::ArtifactStore;

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
    store.delete_session_artifacts(fork.app_name(), fork.user_id(), fork.session_id()).await?;
    let mut copied = 0;
    for from in super::session_scoped(store, source).await? {
        let last = match recorded.then(&from.name) {
            Some(version) => Some(version),
            None => {
                let versions = store.artifact_versions(&from).await?;
                versions.iter().filter(|v| v.create_micros <= until_micros).map(|v| v.version).max()
            }
        };
        let Some(last) = last else { continue };
        copied += store.copy_artifact(&from, fork.session_id(), last).await?;
    }
    Ok(copied)
}
