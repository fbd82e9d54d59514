//! Appending through the API: the routes that append on a client's behalf (PATCH, the managed
//! service's `:appendEvent`) load the session's current marker and append, here, once.

use agentstate::{ConflictKind, Error, Event, GetSessionConfig, SessionKey};

use crate::state::AppState;

/// How often a blind append reloads and retries when another writer appended meanwhile.
const ATTEMPTS: u32 = 20;

/// A short, jittered, growing pause, so retrying writers do not collide in lockstep.
fn backoff(attempt: u32) -> std::time::Duration {
    let jitter =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos() % 1000);
    std::time::Duration::from_micros(u64::from(attempt.min(10)) * 500 + u64::from(jitter))
}

/// What an append stored.
pub(crate) struct Appended {
    /// The event as stored.
    pub(crate) event: Event,
    /// The same event was stored already (a retry); nothing changed.
    pub(crate) duplicate: bool,
}

/// Appends `event` to the session `key` as it is in storage now.
///
/// Without `expected`, a blind write: when another writer appended between the load and the
/// append, it reloads and tries again, so no update is lost. With `expected`, the storage
/// marker the caller's view of the session was loaded at, a session changed since is refused
/// with the stale-handle conflict, as an append through that handle would be.
pub(crate) async fn append(
    state: &AppState,
    key: &SessionKey,
    event: Event,
    expected: Option<i64>,
) -> Result<Appended, Error> {
    let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
    for attempt in 1.. {
        // Only the state and the marker: the window in which another writer can intervene stays
        // as short as one read.
        let mut handle = state.service().get_session(key, GetSessionConfig::recent(0)).await?.ok_or_else(not_found)?;
        if expected.is_some_and(|marker| marker != handle.last_update_micros()) {
            state.metrics().conflict();
            return Err(Error::stale());
        }
        match state.service().append_event(&mut handle, event.clone()).await {
            Ok(stored) => {
                // The handle records only what this append committed.
                let duplicate = handle.events().is_empty();
                if !duplicate {
                    state.metrics().appended(1);
                }
                return Ok(Appended { event: stored, duplicate });
            }
            Err(Error::Conflict { kind: ConflictKind::StaleSession }) if expected.is_none() && attempt < ATTEMPTS => {
                state.metrics().conflict();
                tracing::debug!(attempt, "session changed during an append; reloading");
                tokio::time::sleep(backoff(attempt)).await;
            }
            Err(e) => {
                if matches!(e, Error::Conflict { kind: ConflictKind::StaleSession }) {
                    state.metrics().conflict();
                }
                return Err(e);
            }
        }
    }
    Err(Error::stale())
}
