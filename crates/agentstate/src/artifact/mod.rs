//! Artifacts, the third store an agent keeps beside sessions and memory: files an agent saves
//! and loads by name, each save a new version, as ADK's artifact services keep them.
//! [`ArtifactService`] holds ADK's rules; a store keeps the versions with the
//! [`ArtifactStore`](crate::store::ArtifactStore) capability; [`model`] is what a name, a
//! reference and a stored part are.

pub(crate) mod fork;
pub mod model;
pub(crate) mod rewind;
mod service;

/// The session-scoped artifacts of `session` (its `user:` ones left out).
pub(crate) async fn session_scoped(
    store: &dyn crate::store::ArtifactStore,
    session: &crate::SessionKey,
) -> crate::Result<Vec<crate::store::ArtifactKey>> {
    let names = store.artifact_names(session.app_name(), session.user_id(), Some(session.session_id())).await?;
    Ok(names
        .into_iter()
        .filter(|name| !is_user_scoped(name))
        .map(|name| crate::store::ArtifactKey::in_session(session, name))
        .collect())
}

pub use model::{ArtifactRef, MAX_REFERENCE_DEPTH, is_user_scoped, parse_uri, tombstone, uri_of};
pub use service::{
    ArtifactScope, ArtifactService, ArtifactVersion, DEFAULT_MAX_ARTIFACT_BYTES, OpenedArtifact, TOO_LARGE_FIELD,
};
