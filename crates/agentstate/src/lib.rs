//! # agentstate
//!
//! Sessions and scoped state for AI agents, with the behaviour of Google's Agent Development Kit
//! (ADK for Python is the reference) and its weak spots fixed.
//!
//! A [`Session`] is one conversation: an ordered history of [`Event`]s and a key-value
//! [`State`]. A [`SessionService`] creates, loads, lists and deletes sessions and appends events;
//! appending an event applies its `actions.state_delta`. A key's prefix sets its scope:
//!
//! | prefix | shared by | stored |
//! |---|---|---|
//! | none | this session | yes |
//! | `user:` | every session of the user in the app | yes |
//! | `app:` | every session of the app | yes |
//! | `temp:` | the current invocation | never |
//!
//! ```
//! use agentstate::{CreateSession, Event, GetSessionConfig, InMemoryStore, SessionService};
//! use serde_json::json;
//!
//! # fn main() { tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap() }
//! async fn run() -> agentstate::Result<()> {
//!     let service = SessionService::new(InMemoryStore::new());
//!     let mut session = service
//!         .create_session(CreateSession::new("my_app", "alice").state("user:name", json!("Alice")))
//!         .await?;
//!
//!     let event = Event::new("inv_1").author("agent").delta("topic", json!("cats")).delta("temp:scratch", json!(1));
//!     service.append_event(&mut session, event).await?;
//!     assert_eq!(session.state().get("temp:scratch"), Some(&json!(1))); // for this invocation only
//!
//!     let other = service.create_session(CreateSession::new("my_app", "alice")).await?;
//!     assert_eq!(other.state().get("user:name"), Some(&json!("Alice"))); // shared by the user
//!     assert!(other.state().get("topic").is_none()); // session state is separate
//!
//!     let reloaded = service.get_session(session.key(), GetSessionConfig::default()).await?.unwrap();
//!     assert!(!reloaded.state().contains("temp:scratch")); // never stored
//!     Ok(())
//! }
//! ```
//!
//! What an application uses is at the root: a [`SessionService`] owns a store (here the
//! [`InMemoryStore`]), its [`Policies`] and a [`clock`]. Two modules serve other needs:
//! - [`store`]: the backend interface, a small core ([`store::SessionStore`]) and the
//!   [capabilities](store::capability) a store may add. Persistent stores live in other crates
//!   and pass the same conformance suite (`agentstate-conformance`); the rules every backend
//!   shares are implemented once, in the service.
//! - [`archive`]: sessions as JSON Lines, to copy them between services.

pub mod archive;
pub mod artifact;
pub mod clock;
pub mod compaction;
mod content;
#[cfg(feature = "encryption")]
pub mod crypt;
mod error;
mod event;
pub mod filter;
pub mod history;
mod in_memory;
mod key;
pub mod memory;
mod page;
pub mod python;
mod scope;
mod service;
mod session;
mod state;
pub mod store;
mod time;
pub mod wire;

pub use content::{Blob, Content, FunctionCall, FunctionResponse, Part};
pub use error::{BoxError, ConflictKind, Error, ErrorKind, Result, STALE_SESSION_MESSAGE};
pub use event::{Event, EventActions};
pub use in_memory::InMemoryStore;
pub use key::{MAX_ID_CHARS, SessionKey, validate_id};
pub use scope::{APP_PREFIX, Scope, TEMP_PREFIX, USER_PREFIX};
pub use service::{
    Appended, BLIND_APPEND_ATTEMPTS, CreateSession, EventPage, GetSessionConfig, ListEvents, ListSessions,
    MAX_EVENT_PAGE, MAX_INVOCATION_ID_CHARS, MAX_ORIGIN_CHARS, MAX_WRITES_PAGE, Policies, Retention, SessionPage,
    SessionService, SessionServiceBuilder, StateWrite,
};
pub use session::{Events, MAX_DISPLAY_NAME_CHARS, MAX_LABEL_CHARS, MAX_LABELS, Session, SessionAttributes, live_at};
pub use state::State;
pub use store::UserDataCounts;
pub use time::Timestamp;

/// The same JSON map type the model uses (insertion-ordered).
pub use serde_json::{Map, Value};
