//! Session expiry and retention as the server applies them: the `ttl` / `expireTime` a create
//! request gives, else a default per app or for the whole server; `expireTime` on the sessions it
//! answers; per-app retention policies; and the background sweep that removes expired sessions
//! and old events in bounded, paced batches.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentstate::store::RawSession;
use agentstate::{ListSessions, Retention, Session, SessionService, Value};
use chrono::{DateTime, SecondsFormat, Utc};

use crate::metrics::Metrics;

/// Sessions a sweep removes per batch by default: small enough that a request queued behind a
/// batch waits a few milliseconds at most (see `cargo bench -p agentstate-bench --bench lifecycle`).
pub const SWEEP_BATCH: usize = 10;

/// How sessions expire on this server.
///
/// ```
/// use std::time::Duration;
/// use agentstate_server::Expiry;
/// let expiry = Expiry { default_ttl: Some(Duration::from_secs(86_400)), ..Expiry::default() }
///     .app_ttl("support_bot", Duration::from_secs(3_600));
/// assert_eq!(expiry.ttl_for("support_bot"), Some(Duration::from_secs(3_600)));
/// assert_eq!(expiry.ttl_for("other"), Some(Duration::from_secs(86_400)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expiry {
    /// The time to live of a session created without one; `None` for sessions that never expire.
    pub default_ttl: Option<Duration>,
    /// Per-app defaults, over `default_ttl`.
    pub app_ttls: BTreeMap<String, Duration>,
    /// How often the sweep runs; `None` for never.
    pub sweep_every: Option<Duration>,
    /// Sessions removed per batch (each batch one bounded store call).
    pub sweep_batch: usize,
    /// Per-app retention policies, applied to every session of the app by the sweep.
    pub retention: BTreeMap<String, Retention>,
}

impl Default for Expiry {
    fn default() -> Self {
        Self {
            default_ttl: None,
            app_ttls: BTreeMap::new(),
            sweep_every: Some(Duration::from_secs(60)),
            sweep_batch: SWEEP_BATCH,
            retention: BTreeMap::new(),
        }
    }
}

impl Expiry {
    /// Sets `app`'s default time to live.
    #[must_use]
    pub fn app_ttl(mut self, app: impl Into<String>, ttl: Duration) -> Self {
        self.app_ttls.insert(app.into(), ttl);
        self
    }

    /// The default time to live of `app`'s sessions.
    pub fn ttl_for(&self, app: &str) -> Option<Duration> {
        self.app_ttls.get(app).copied().or(self.default_ttl)
    }

    /// The expire time (epoch µs) of a session of `app` created now without one.
    pub(crate) fn default_expire_micros(&self, app: &str) -> Option<i64> {
        let ttl = i64::try_from(self.ttl_for(app)?.as_micros()).unwrap_or(i64::MAX);
        Some(agentstate::store::now_micros().saturating_add(ttl))
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

/// An RFC 3339 time → epoch microseconds.
pub(crate) fn parse_rfc3339(text: &str, field: &str) -> Result<i64, String> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_micros())
        .map_err(|e| format!("{field}: {text:?} is not an RFC 3339 time ({e})"))
}

/// Epoch microseconds → RFC 3339 (UTC, microseconds, `Z`).
pub(crate) fn rfc3339(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The expire time of a create request's `ttl` or `expireTime` (one of them), epoch µs.
pub(crate) fn requested_expire(ttl: Option<&Value>, expire_time: Option<&Value>) -> Result<Option<i64>, String> {
    let text =
        |v: &Value, field: &str| v.as_str().map(str::to_owned).ok_or_else(|| format!("{field} must be a string"));
    match (ttl, expire_time) {
        (Some(_), Some(_)) => Err("give ttl or expireTime, not both".to_owned()),
        (Some(ttl), None) => {
            let ttl = parse_duration(&text(ttl, "ttl")?, "ttl")?;
            let ttl = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
            Ok(Some(agentstate::store::now_micros().saturating_add(ttl)))
        }
        (None, Some(time)) => parse_rfc3339(&text(time, "expireTime")?, "expireTime").map(Some),
        (None, None) => Ok(None),
    }
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

/// The bytes of [`SessionBody`] for a session read raw: its stored events written from their
/// text.
pub(crate) fn raw_session_body(session: &RawSession) -> Result<Vec<u8>, serde_json::Error> {
    let wire = agentstate::wire::RawWireSession(session);
    let mut out = Vec::with_capacity(wire.size_hint());
    out.push(b'{');
    wire.write_fields(&mut out)?;
    if let Some(at) = session.session.attributes().expire_time_micros {
        out.extend_from_slice(b",\"expireTime\":");
        serde_json::to_writer(&mut out, &rfc3339(at))?;
    }
    out.push(b'}');
    Ok(out)
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
/// requests queued behind a batch run before the next one.
pub async fn sweep(service: &dyn SessionService, batch: usize, metrics: &Metrics) -> agentstate::Result<usize> {
    let batch = batch.max(1);
    let mut removed = 0;
    loop {
        let started = std::time::Instant::now();
        let n = service.sweep_expired(batch).await?;
        removed += n;
        metrics.expired(n as u64);
        if n < batch {
            return Ok(removed);
        }
        tokio::time::sleep(started.elapsed()).await;
    }
}

/// Applies `policy` to every session of `app`, a page at a time, pausing between pages as long
/// as each took; returns how many events it dropped.
pub async fn retain(
    service: &dyn SessionService,
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

/// Runs [`sweep`] every `expiry.sweep_every` until the task is dropped; failures are logged and
/// retried at the next tick.
pub(crate) async fn sweeper(service: Arc<dyn SessionService>, expiry: Arc<Expiry>, metrics: Arc<Metrics>) {
    let Some(every) = expiry.sweep_every else { return };
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match sweep(service.as_ref(), expiry.sweep_batch, &metrics).await {
            Ok(0) => {}
            Ok(removed) => tracing::info!(removed, "removed expired sessions"),
            Err(e) => tracing::warn!(error = %e, "sweeping expired sessions failed; retrying at the next tick"),
        }
        for (app, policy) in &expiry.retention {
            match retain(service.as_ref(), app, *policy, &metrics).await {
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
        let now = agentstate::store::now_micros();
        let ttl = requested_expire(Some(&Value::from("60s")), None).unwrap().unwrap();
        assert!((now + 59_000_000..now + 61_000_000).contains(&ttl));
        let at = requested_expire(None, Some(&Value::from("2030-01-01T00:00:00Z"))).unwrap();
        assert_eq!(at, Some(1_893_456_000_000_000));
        assert!(requested_expire(Some(&Value::from("60")), None).unwrap_err().contains("duration"));
        assert!(requested_expire(Some(&Value::from("-1s")), None).unwrap_err().contains("positive"));
        assert!(requested_expire(Some(&Value::from("1s")), Some(&Value::from("x"))).unwrap_err().contains("not both"));
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
