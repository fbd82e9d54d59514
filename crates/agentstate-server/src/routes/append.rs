//! Appending through the API: the routes that append on a client's behalf (PATCH, the managed
//! service's `:appendEvent`) load the session's current marker and append, here, once.

use agentstate::{ConflictKind, Error, Event, GetSessionConfig, Map, Session, SessionKey};

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

/// Appends `event` to the session `key`.
///
/// With `expected`, the storage marker the caller's view of the session was loaded at, the
/// append is made through a handle at that marker, so the store decides, atomically and in its
/// order: a missing session, then the same event stored already (a retry: answered as stored),
/// then a session changed since (the stale-handle conflict).
///
/// Without it, a blind write on the session as it is in storage now: when another writer
/// appended between the load and the append, it reloads and tries again, so no update is lost.
pub(crate) async fn append(
    state: &AppState,
    key: &SessionKey,
    event: Event,
    expected: Option<i64>,
) -> Result<Appended, Error> {
    let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
    let partial = event.is_partial();
    for attempt in 1.. {
        let mut handle = match expected {
            Some(marker) => Session::from_storage(key.clone(), Map::new(), Vec::<Event>::new(), marker),
            // Only the state and the marker: the window in which another writer can intervene
            // stays as short as one read.
            None => state.service().get_session(key, GetSessionConfig::recent(0)).await?.ok_or_else(not_found)?,
        };
        match state.service().append_event(&mut handle, event.clone()).await {
            Ok(stored) => {
                // The handle records only what this append committed; a partial event is
                // answered, never stored.
                let duplicate = !partial && handle.events().is_empty();
                if !duplicate && !partial {
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
