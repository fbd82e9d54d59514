//! Appending through the API: the routes that append on a client's behalf (PATCH, the managed
//! service's `:appendEvent`) hold no session handle, only what the client said.

use agentstate::{Appended, ConflictKind, Error, Event, SessionKey};

use crate::state::AppState;

/// How often a blind append reloads and retries when another writer appended meanwhile.
const ATTEMPTS: u32 = 20;

/// A short, jittered, growing pause, so retrying writers do not collide in lockstep.
fn backoff(attempt: u32) -> std::time::Duration {
    let jitter =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos() % 1000);
    std::time::Duration::from_micros(u64::from(attempt.min(10)) * 500 + u64::from(jitter))
}

/// After a blind write's `lost`-th lost race (from 1): counted, and whether to read the session
/// again and retry, after a pause. The append and rewind routes' policy.
pub(crate) async fn lost_race(state: &AppState, lost: u32) -> bool {
    state.metrics().conflict();
    if lost >= ATTEMPTS {
        return false;
    }
    tracing::debug!(lost, "session changed during a blind write; reloading");
    tokio::time::sleep(backoff(lost)).await;
    true
}

/// Appends `event` to the session `key`.
///
/// With `expected`, the storage marker the caller's view of the session was loaded at, the
/// service appends at that marker ([`SessionService::append_at`](agentstate::SessionService::append_at)):
/// the store decides, atomically and in its order, a missing session, then the same event stored
/// already (a retry: answered as stored), then a session changed since (the stale-handle
/// conflict).
///
/// Without it, a blind write ([`SessionService::append_blind`](agentstate::SessionService::append_blind))
/// on the session as it is in storage now, with a growing pause after each lost race: when another writer
/// appended between the read of its marker and the append, it reads again and retries, so no
/// update is lost. Uncontended, two storage round trips: the marker, the append.
pub(crate) async fn append(
    state: &AppState,
    key: &SessionKey,
    event: Event,
    expected: Option<i64>,
) -> Result<Appended, Error> {
    let partial = event.is_partial();
    let appended = match expected {
        Some(marker) => state.service().append_at(key, marker, event).await,
        None => state.service().append_blind(key, event, |lost| lost_race(state, lost)).await,
    };
    match appended {
        Ok(appended) => {
            if !appended.duplicate && !partial {
                state.metrics().appended(1);
            }
            Ok(appended)
        }
        Err(e) => {
            if expected.is_some() && matches!(e, Error::Conflict { kind: ConflictKind::StaleSession }) {
                state.metrics().conflict();
            }
            Err(e)
        }
    }
}
