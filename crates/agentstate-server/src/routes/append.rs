//! Appending through the API: the routes that append on a client's behalf (PATCH, the managed
//! service's `:appendEvent`) hold no session handle, only what the client said.

use agentstate::{Appended, ConflictKind, Error, Event, GetSessionConfig, SessionKey};

use crate::state::AppState;

/// How often a blind append reloads and retries when another writer appended meanwhile.
const ATTEMPTS: u32 = 20;

/// A short, jittered, growing pause, so retrying writers do not collide in lockstep.
fn backoff(attempt: u32) -> std::time::Duration {
    let jitter =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos() % 1000);
    std::time::Duration::from_micros(u64::from(attempt.min(10)) * 500 + u64::from(jitter))
}

/// Appends `event` to the session `key`.
///
/// With `expected`, the storage marker the caller's view of the session was loaded at, the
/// service appends at that marker ([`SessionService::append_at`](agentstate::SessionService::append_at)):
/// the store decides, atomically and in its order, a missing session, then the same event stored
/// already (a retry: answered as stored), then a session changed since (the stale-handle
/// conflict).
///
/// Without it, a blind write on the session as it is in storage now: when another writer
/// appended between the read of its marker and the append, it reads again and retries, so no
/// update is lost. Uncontended, two storage round trips: the marker, the append.
pub(crate) async fn append(
    state: &AppState,
    key: &SessionKey,
    event: Event,
    expected: Option<i64>,
) -> Result<Appended, Error> {
    let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
    let partial = event.is_partial();
    for attempt in 1.. {
        let marker = match expected {
            Some(marker) => marker,
            // Only the marker: the window in which another writer can intervene stays one read.
            None => state
                .service()
                .get_session(key, GetSessionConfig::recent(0))
                .await?
                .ok_or_else(not_found)?
                .last_update_micros(),
        };
        match state.service().append_at(key, marker, event.clone()).await {
            Ok(appended) => {
                if !appended.duplicate && !partial {
                    state.metrics().appended(1);
                }
                return Ok(appended);
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
