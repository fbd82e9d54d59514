//! Session expiry and retention as the server applies them: the `ttl` / `expireTime` a create
//! request gives (else the service's default for the app); `expireTime` on the sessions it
//! answers; and the background sweep that removes expired sessions and, by the service's
//! per-app retention policies, old events, in bounded, paced batches.

use std::sync::Arc;
use std::time::Duration;

use agentstate::store::LoadedSession;
use agentstate::{ListSessions, Retention, Session, SessionService, Value};

use crate::metrics::Metrics;
use crate::pieces::Pieces;

/// Sessions a sweep removes per batch by default: small enough that a request queued behind a
/// batch waits a few milliseconds at most (see `cargo bench -p agentstate-bench --bench lifecycle`).
pub const SWEEP_BATCH: usize = 10;

/// The background sweep: how often it runs and how much each batch removes. What expires and
/// what is retained are the service's [`Policies`](agentstate::Policies).
///
/// ```
/// use std::time::Duration;
/// use agentstate_server::Sweep;
/// let sweep = Sweep { every: Some(Duration::from_secs(30)), ..Sweep::default() };
/// assert_eq!(sweep.batch, agentstate_server::SWEEP_BATCH);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// How often the sweep runs; `None` for never.
    pub every: Option<Duration>,
    /// Sessions removed per batch (each batch one bounded store call).
    pub batch: usize,
}

impl Default for Sweep {
    fn default() -> Self {
        Self { every: Some(Duration::from_secs(60)), batch: SWEEP_BATCH }
    }
}

/// A protobuf JSON duration, as the managed service takes `ttl`: seconds with an `s`, a fraction
/// allowed (`"7200s"`, `"1.5s"`); positive.
pub(crate) fn parse_duration(text: &str, field: &str) -> Result<Duration, String> {
    let bad = || format!("{field}: {text:?} is not a duration such as \"7200s\"");
    let seconds: f64 = text.strip_suffix('s').ok_or_else(bad)?.parse().map_err(|_| bad())?;
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("{field} must be positive"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

pub(crate) use agentstate::wire::engine::{parse_rfc3339, rfc3339};

/// A create request's `ttl` or `expireTime` (one of them, at most) on `request`: the time to live
/// is counted by the service's clock when it creates the session.
pub(crate) fn request_expiry(
    request: &mut agentstate::CreateSession,
    ttl: Option<&Value>,
    expire_time: Option<&Value>,
) -> Result<(), String> {
    let text =
        |v: &Value, field: &str| v.as_str().map(str::to_owned).ok_or_else(|| format!("{field} must be a string"));
    match (ttl, expire_time) {
        (Some(_), Some(_)) => return Err("give ttl or expireTime, not both".to_owned()),
        (Some(ttl), None) => request.ttl = Some(parse_duration(&text(ttl, "ttl")?, "ttl")?),
        (None, Some(time)) => {
            request.attributes.expire_time_micros = Some(parse_rfc3339(&text(time, "expireTime")?, "expireTime")?);
        }
        (None, None) => {}
    }
    Ok(())
}

/// The ADK JSON of a session, with `expireTime` (agentstate's extension) when it expires:
/// written straight from the session (no JSON tree), for a response body.
pub(crate) struct SessionBody<'a>(&'a Session);

impl serde::Serialize for SessionBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        agentstate::wire::WireSession(self.0).write_fields(&mut map)?;
        if let Some(at) = self.0.attributes().expire_time_micros {
            map.serialize_entry("expireTime", &rfc3339(at))?;
        }
        map.end()
    }
}

/// The bytes of [`SessionBody`] for a session read with its events as stored (written from
/// their text) or already written: those go out as the store wrote them, between the fields
/// before and after them, each its own piece.
pub(crate) fn stored_session_body(mut session: LoadedSession) -> Result<Pieces, serde_json::Error> {
    let written = session.written_events.take();
    let wire = agentstate::wire::StoredWireSession(&session);
    let mut head = Vec::with_capacity(wire.size_hint());
    head.push(b'{');
    let (events, mut tail) = match written {
        Some(events) => {
            wire.write_head(&mut head)?;
            let mut tail = Vec::with_capacity(128);
            wire.write_tail(&mut tail)?;
            (events.json, tail)
        }
        None => {
            wire.write_fields(&mut head)?;
            (Vec::new(), Vec::new())
        }
    };
    if let Some(at) = session.session.attributes().expire_time_micros {
        tail.extend_from_slice(b",\"expireTime\":");
        serde_json::to_writer(&mut tail, &rfc3339(at))?;
    }
    tail.push(b'}');
    Ok(Pieces::from([head, events, tail]))
}

/// The body of `session`.
pub(crate) fn session_body(session: &Session) -> SessionBody<'_> {
    SessionBody(session)
}

/// The body of `session` as a JSON tree, for a route that changes it before answering.
pub(crate) fn session_value(session: &Session) -> Value {
    serde_json::to_value(SessionBody(session)).unwrap_or(Value::Null)
}

/// Removes every expired session now, a batch at a time; returns how many. Between batches it
/// pauses as long as the batch took, so it never holds the database more than half the time and
/// requests queued behind a batch run before the next one. Then the same for expired memories,
/// where the store keeps memories.
pub async fn sweep(service: &SessionService, batch: usize, metrics: &Metrics) -> agentstate::Result<usize> {
    let batch = batch.max(1);
    let mut removed = 0;
    loop {
        let started = std::time::Instant::now();
        let n = service.sweep_expired(batch).await?;
        removed += n;
        metrics.expired(n as u64);
        if n < batch {
            break;
        }
        tokio::time::sleep(started.elapsed()).await;
    }
    let memory = agentstate::memory::MemoryService::new(service.clone());
    if memory.is_supported() {
        let mut memories = 0;
        loop {
            let started = std::time::Instant::now();
            let n = memory.delete_expired(batch).await?;
            memories += n;
            if n < batch {
                break;
            }
            tokio::time::sleep(started.elapsed()).await;
        }
        if memories > 0 {
            tracing::info!(memories, "swept expired memories");
        }
    }
    Ok(removed)
}

/// Applies `policy` to every session of `app`, a page at a time, pausing between pages as long
/// as each took; returns how many events it dropped.
pub async fn retain(
    service: &SessionService,
    app: &str,
    policy: Retention,
    metrics: &Metrics,
) -> agentstate::Result<usize> {
    let mut request = ListSessions::app(app).page_size(100);
    let mut dropped = 0;
    loop {
        let started = std::time::Instant::now();
        let page = service.list_sessions(request.clone()).await?;
        for session in &page.sessions {
            let n = service.apply_retention(session.key(), policy).await?;
            dropped += n;
            metrics.dropped(n as u64);
        }
        match page.next_page_token {
            Some(token) => request = request.page_token(token),
            None => return Ok(dropped),
        }
        tokio::time::sleep(started.elapsed()).await;
    }
}

/// Parses a retention policy: `N` (keep the newest N events), an age (`30d`, `12h`, `90m`,
/// `3600s`: keep younger events), or both as `N:AGE`.
pub fn parse_retention(text: &str) -> Result<Retention, String> {
    let mut policy = Retention::default();
    for part in text.split(':') {
        let part = part.trim();
        if let Ok(n) = part.parse::<usize>() {
            if n == 0 || policy.keep_last.is_some() {
                return Err(format!("{text:?}: give one number of events, at least 1"));
            }
            policy.keep_last = Some(n);
            continue;
        }
        let (number, unit) = part.split_at(part.find(|c: char| !c.is_ascii_digit()).unwrap_or(part.len()));
        let seconds = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3_600,
            "d" => 86_400,
            _ => return Err(format!("{text:?}: expected N (events), an age like 30d, 12h, 90m or 3600s, or N:AGE")),
        };
        let amount: u64 = number.parse().map_err(|_| format!("{text:?}: {part:?} is not a whole number"))?;
        if amount == 0 || policy.max_age.is_some() {
            return Err(format!("{text:?}: give one age, more than 0"));
        }
        policy.max_age = Some(Duration::from_secs(amount.saturating_mul(seconds)));
    }
    Ok(policy)
}

/// Runs [`sweep`] every `sweep.every`, and each app's retention policy, until the task is
/// dropped; failures are logged and retried at the next tick.
pub(crate) async fn sweeper(service: SessionService, sweep_every: Sweep, metrics: Arc<Metrics>) {
    let Some(every) = sweep_every.every else { return };
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match sweep(&service, sweep_every.batch, &metrics).await {
            Ok(0) => {}
            Ok(removed) => tracing::info!(removed, "removed expired sessions"),
            Err(e) => tracing::warn!(error = %e, "sweeping expired sessions failed; retrying at the next tick"),
        }
        for (app, policy) in &service.policies().retention {
            match retain(&service, app, *policy, &metrics).await {
                Ok(0) => {}
                Ok(dropped) => tracing::info!(app = %app, dropped, "dropped events by the app's retention policy"),
                Err(e) => {
                    tracing::warn!(app = %app, error = %e, "applying retention failed; retrying at the next tick");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_requests_name_their_expiry() {
        let expiry = |ttl: Option<&str>, at: Option<&str>| {
            let mut request = agentstate::CreateSession::new("app", "u");
            let (ttl, at) = (ttl.map(Value::from), at.map(Value::from));
            request_expiry(&mut request, ttl.as_ref(), at.as_ref()).map(|()| (request.ttl, request.attributes))
        };
        assert_eq!(expiry(Some("60s"), None).unwrap().0, Some(Duration::from_secs(60)));
        let at = expiry(None, Some("2030-01-01T00:00:00Z")).unwrap().1;
        assert_eq!(at.expire_time_micros, Some(1_893_456_000_000_000));
        assert!(expiry(Some("60"), None).unwrap_err().contains("duration"));
        assert!(expiry(Some("-1s"), None).unwrap_err().contains("positive"));
        assert!(expiry(Some("1s"), Some("x")).unwrap_err().contains("not both"));
        assert_eq!(rfc3339(1_893_456_000_000_000), "2030-01-01T00:00:00.000000Z");
    }

    #[test]
    fn retention_policies_read_as_written() {
        let policy = |keep_last, secs: Option<u64>| Retention { keep_last, max_age: secs.map(Duration::from_secs) };
        assert_eq!(parse_retention("1000").unwrap(), policy(Some(1000), None));
        assert_eq!(parse_retention("30d").unwrap(), policy(None, Some(2_592_000)));
        assert_eq!(parse_retention("500:12h").unwrap(), policy(Some(500), Some(43_200)));
        for bad in ["0", "1:2", "30x", "d", "0s", "1h:2h", ""] {
            assert!(parse_retention(bad).is_err(), "{bad:?}");
        }
    }
}
