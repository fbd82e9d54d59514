//! Artifacts, the third store an agent keeps beside sessions and memory: files an agent saves
//! and loads by name, each save a new version, as ADK's artifact services keep them.
//! [`ArtifactService`] holds ADK's rules; a store keeps the versions with the
//! [`ArtifactStore`](crate::store::ArtifactStore) capability; [`model`] is what a name, a
//! reference and a stored part are.

pub(crate) mod fork;
pub mod model;
pub(crate) mod rewind;
mod service;

pub use model::{ArtifactRef, MAX_REFERENCE_DEPTH, is_user_scoped, parse_uri, tombstone, uri_of};
pub use service::{ArtifactScope, ArtifactService, ArtifactVersion, DEFAULT_MAX_ARTIFACT_BYTES, TOO_LARGE_FIELD};
