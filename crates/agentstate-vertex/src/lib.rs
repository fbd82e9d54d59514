//! agentstate sessions kept by the **Vertex AI Agent Engine Sessions API** (`v1beta1`): Google's
//! managed service, or an agentstate server, which speaks the same API.
//!
//! [`VertexAiStore`] is a store like every other: a [`SessionService`](agentstate::SessionService)
//! over it has the same calls, the same errors, the same conformance suite (run against an
//! agentstate server). Each app name is the id of the Agent Engine that keeps its sessions,
//! unless [`Builder::engine`] names one engine for all. With agentstate's extensions (an
//! agentstate server) it answers history itself ([`RemoteHistory`](agentstate::store::RemoteHistory));
//! expiry, erasure and listings of apps are the server's, so it has no other capability.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use agentstate::{CreateSession, SessionService};
//! use agentstate_vertex::{Credentials, VertexAiStore};
//!
//! // An agentstate server (`agentstate serve`), with an access token if it has any.
//! let store = VertexAiStore::builder()
//!     .endpoint("http://127.0.0.1:8000")
//!     .credentials(Credentials::bearer(std::env::var("AGENTSTATE_TOKEN")?))
//!     .build()?;
//! let sessions = SessionService::new(store);
//! // Or Google's service, in express mode: `.credentials(Credentials::api_key(key))` alone;
//! // with a project: `.project(p).location(l)` and OAuth credentials.
//! let session = sessions.create_session(CreateSession::new("4242", "alice").display_name("Trip")).await?;
//! # Ok(()) }
//! ```
//!
//! ## Against an agentstate server, and against Google
//!
//! An agentstate server offers two extensions the client uses when it has an endpoint: the
//! session's user and the handle's storage marker go with each call (headers
//! [`USER_HEADER`] and [`LAST_UPDATE_HEADER`]), so an append through a stale handle is refused
//! and a retried append is stored once; and a session is read with its events in one request,
//! one snapshot. Every guarantee of the contract then holds.
//!
//! Google's service knows neither. There the client does what ADK for Python's client does:
//! appends are blind writes (a stale handle is not detected), a session and its events are two
//! concurrent reads (an append between them can show in one and not the other), the user of a
//! session is checked on the client, and lists are read whole and sorted here. Session ids are
//! unique per engine on both, not per user.

mod auth;
mod config;
mod http;
mod resource;
mod store;

use std::sync::Arc;

pub use auth::{Credentials, TokenProvider};
pub use config::{Builder, ConfigError};
pub use store::{LAST_UPDATE_HEADER, USER_HEADER};

/// Sessions kept by the Agent Engine Sessions API. Cheap to clone: clones share one connection
/// pool.
#[derive(Debug, Clone)]
pub struct VertexAiStore {
    client: Arc<http::Client>,
    /// The one engine of every app, if configured.
    engine: Option<String>,
}

impl VertexAiStore {
    /// Configures a service.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A service from an `agentengine://` URL (see [`Builder::from_url`]) with `credentials`.
    ///
    /// # Errors
    /// When the URL does not parse or names contradicting options.
    pub fn from_url(url: &str, credentials: Credentials) -> Result<Self, ConfigError> {
        Builder::from_url(url)?.credentials(credentials).build()
    }
}
