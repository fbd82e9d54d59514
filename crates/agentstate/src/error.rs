//! One error type for every backend, with a kind callers can branch on.

use std::fmt;

/// The result type of every fallible agentstate call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A boxed error from a storage driver, kept as the `source()` of [`Error::Backend`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Message of a stale-handle conflict, word for word the reference's, so that clients written for
/// ADK for Python recognise it.
pub const STALE_SESSION_MESSAGE: &str = "The session has been modified in storage since it was loaded. \
Please reload the session before appending more events.";

/// Why an append was refused although the session exists.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConflictKind {
    /// The session changed in storage after the caller's handle was loaded.
    StaleSession,
    /// The session already holds a *different* event with this id.
    DuplicateEventId {
        /// The event id that is taken.
        event_id: String,
    },
}

/// Everything that can go wrong in a [`SessionService`](crate::SessionService) call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The session does not exist (appending to a deleted session, for instance).
    #[error("Session {session_id} not found.")]
    NotFound {
        /// The id that was looked up.
        session_id: String,
    },
    /// A session with this id already exists for this app and user.
    #[error("Session with id {session_id} already exists.")]
    AlreadyExists {
        /// The id that is taken.
        session_id: String,
    },
    /// The append would lose or duplicate data; nothing was written.
    #[error("{}", conflict_message(.kind))]
    Conflict {
        /// What conflicted.
        kind: ConflictKind,
    },
    /// An argument is malformed; `field` names it and `message` says what is allowed.
    #[error("invalid {field}: {message}")]
    InvalidArgument {
        /// The offending field, e.g. `session_id`.
        field: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The backend cannot do this: its store lacks the capability the operation needs (see
    /// [`store::capability`](crate::store::capability)). Nothing was done.
    #[error("this backend cannot {operation} (its store has no {capability} capability)")]
    Unsupported {
        /// What was asked, e.g. `erase a user's data`.
        operation: &'static str,
        /// The capability it needs: `history`, `lifecycle` or `admin`.
        capability: &'static str,
    },
    /// The storage backend failed. `retryable` is true when the same call may succeed if repeated
    /// (a dropped connection, a busy database), false when it will not (corrupt data, bad schema).
    #[error("storage backend error: {message}")]
    Backend {
        /// What failed, for humans.
        message: String,
        /// Whether repeating the call may succeed.
        retryable: bool,
        /// The driver's error, if any.
        #[source]
        source: Option<BoxError>,
    },
}

fn conflict_message(kind: &ConflictKind) -> String {
    match kind {
        ConflictKind::StaleSession => STALE_SESSION_MESSAGE.to_owned(),
        ConflictKind::DuplicateEventId { event_id } => format!(
            "The session already holds a different event with id {event_id}. \
             Give the new event a fresh id (or leave it empty to have one generated)."
        ),
    }
}

impl Error {
    /// A stale-handle conflict.
    pub fn stale() -> Self {
        Self::Conflict { kind: ConflictKind::StaleSession }
    }

    /// An invalid-argument error for `field`.
    pub fn invalid(field: &'static str, message: impl fmt::Display) -> Self {
        Self::InvalidArgument { field, message: message.to_string() }
    }

    /// A backend error wrapping a driver error.
    pub fn backend(message: impl fmt::Display, retryable: bool, source: impl Into<BoxError>) -> Self {
        Self::Backend { message: message.to_string(), retryable, source: Some(source.into()) }
    }

    /// The portable kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            Self::Conflict { .. } => ErrorKind::Conflict,
            Self::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
            Self::Backend { .. } => ErrorKind::Backend,
        }
    }

    /// Whether repeating the same call may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Backend { retryable: true, .. })
    }
}

/// The kind of an [`Error`], without its details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::NotFound`].
    NotFound,
    /// See [`Error::AlreadyExists`].
    AlreadyExists,
    /// See [`Error::Conflict`].
    Conflict,
    /// See [`Error::InvalidArgument`].
    InvalidArgument,
    /// See [`Error::Unsupported`].
    Unsupported,
    /// See [`Error::Backend`].
    Backend,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_reference() {
        assert_eq!(Error::AlreadyExists { session_id: "s1".into() }.to_string(), "Session with id s1 already exists.");
        assert_eq!(Error::NotFound { session_id: "del".into() }.to_string(), "Session del not found.");
        assert_eq!(Error::stale().to_string(), STALE_SESSION_MESSAGE);
        assert_eq!(Error::stale().kind(), ErrorKind::Conflict);
    }

    #[test]
    fn only_retryable_backend_errors_are_retryable() {
        assert!(Error::backend("busy", true, "locked").is_retryable());
        assert!(!Error::backend("corrupt", false, "bad json").is_retryable());
        assert!(!Error::stale().is_retryable());
    }
}
