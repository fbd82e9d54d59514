//! libpq-style multi-host URLs: `postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`.
//!
//! sqlx connects to one host, so a pool of such a URL is given the host that fits now and is
//! re-pointed when another one does. A watcher keeps one connection to that host and asks it, every
//! [`CHECK_EVERY`], whether it still fits (`SHOW transaction_read_only` for `read-write`); when it
//! stops answering or turns read-only the pool drops every connection it holds, and the watcher
//! looks for the host that fits, in the URL's order, and sets the pool to connect there (until
//! then, calls fail retryably after the acquire timeout). A new
//! connection to a host that no longer fits is refused before any statement runs on it (so a write
//! never meets a standby through a fresh connection); a write on an older one that meets a standby
//! fails retryably (`25006`, answered 503) and wakes the watcher.

use std::str::FromStr as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentstate::{Error, Result};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions as _, Connection as _};
use tokio::sync::{Notify, oneshot};

use crate::pool::{PoolOptions, redact, sqlx_error};

/// How often the watcher asks the current host whether it still fits.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long the watcher waits between looks while no host fits.
const RETRY_EVERY: Duration = Duration::from_millis(200);
/// How long connecting to one host may take while looking for the one that fits.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The hosts of a URL and what a host must be to be used.
#[derive(Debug)]
pub(super) struct Hosts {
    /// One connect option per host, in the URL's order.
    options: Vec<PgConnectOptions>,
    /// `host:port` of each, for logs.
    shown: Vec<String>,
    /// `target_session_attrs=read-write` (or `primary`): only a host that accepts writes.
    read_write: bool,
}

/// Reads a `postgres://` URL. `None` for a URL with one host and no `target_session_attrs`,
/// which sqlx reads as it is.
pub(super) fn parse(url: &str) -> Result<Option<Hosts>> {
    let bad = |why: String| Error::invalid("database_url", format!("{:?}: {why}", redact(url)));
    let rest = url.strip_prefix("postgres://").ok_or_else(|| bad("expected postgres://".to_owned()))?;
    let (userinfo, after) = match rest.rsplit_once('@') {
        Some((userinfo, after)) => (Some(userinfo), after),
        None => (None, rest),
    };
    let end = after.find(['/', '?']).unwrap_or(after.len());
    let (host_list, tail) = after.split_at(end);
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let mut read_write = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("target_session_attrs", value)) => {
                read_write = Some(match value {
                    "read-write" | "primary" => true,
                    "any" => false,
                    other => {
                        return Err(bad(format!(
                            "target_session_attrs={other}: agentstate writes, so use read-write (or any)"
                        )));
                    }
                });
            }
            _ => kept.push(pair),
        }
    }
    let hosts: Vec<&str> = host_list.split(',').collect();
    if hosts.len() == 1 && read_write.is_none() {
        return Ok(None);
    }
    if hosts.iter().any(|h| h.is_empty()) {
        return Err(bad("an empty host in the host list".to_owned()));
    }
    let query = if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) };
    let user = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    let mut options = Vec::with_capacity(hosts.len());
    for host in &hosts {
        let one = format!("postgres://{user}{host}{path}{query}");
        options.push(PgConnectOptions::from_str(&one).map_err(|e| bad(format!("host {host}: {e}")))?);
    }
    let shown = hosts.iter().map(|h| (*h).to_owned()).collect();
    Ok(Some(Hosts { options, shown, read_write: read_write.unwrap_or(false) }))
}

/// What the pool's hooks and the watcher share.
#[derive(Debug)]
struct Shared {
    hosts: Hosts,
    /// The host the pool connects to.
    current: AtomicUsize,
    /// When the pool was last re-pointed: connections older than that are dropped.
    switched: Mutex<Instant>,
    /// Wakes the watcher early (a new connection met a host that no longer fits).
    wake: Notify,
}

impl Shared {
    fn since_switch(&self) -> Duration {
        self.switched.lock().unwrap_or_else(std::sync::PoisonError::into_inner).elapsed()
    }

    /// Makes every pooled connection made before now be dropped instead of handed out.
    fn forget_connections(&self) {
        *self.switched.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    /// Whether `conn`'s host is one this pool may use.
    async fn fits(&self, conn: &mut PgConnection) -> std::result::Result<bool, sqlx::Error> {
        if !self.hosts.read_write {
            return conn.ping().await.map(|()| true);
        }
        let read_only: String = sqlx::query_scalar("SHOW transaction_read_only").fetch_one(&mut *conn).await?;
        Ok(read_only == "off")
    }

    /// The first host, from the current one on in the URL's order, that answers and fits, with a
    /// connection to it.
    async fn find(&self) -> Option<(usize, PgConnection)> {
        let count = self.hosts.options.len();
        let start = self.current.load(Ordering::Acquire);
        for index in (0..count).map(|i| (start + i) % count) {
            let Ok(Ok(mut conn)) = tokio::time::timeout(PROBE_TIMEOUT, self.hosts.options[index].connect()).await
            else {
                continue;
            };
            if matches!(tokio::time::timeout(PROBE_TIMEOUT, self.fits(&mut conn)).await, Ok(Ok(true))) {
                return Some((index, conn));
            }
        }
        None
    }
}

impl Hosts {
    /// A pool on the host that fits now (an error if none does within the acquire timeout), kept
    /// on the one that fits until `stopped` closes.
    pub(super) async fn connect(self, options: &PoolOptions, stopped: oneshot::Receiver<()>) -> Result<PgPool> {
        let described = options.redacted();
        let shared = Arc::new(Shared {
            hosts: self,
            current: AtomicUsize::new(0),
            switched: Mutex::new(Instant::now()),
            wake: Notify::new(),
        });
        let deadline = Instant::now() + options.acquire_timeout;
        let (first, probe) = loop {
            if let Some(found) = shared.find().await {
                break found;
            }
            if Instant::now() >= deadline {
                let wanted = if shared.hosts.read_write { "accepts writes" } else { "answers" };
                let message =
                    format!("connecting to {described} failed: no host {wanted} ({})", shared.hosts.shown.join(", "));
                return Err(Error::Backend { message, retryable: true, source: None });
            }
            tokio::time::sleep(RETRY_EVERY).await;
        };
        shared.current.store(first, Ordering::Release);
        let checked = Arc::clone(&shared);
        let fresh = Arc::clone(&shared);
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .after_connect(move |conn, _| {
                let shared = Arc::clone(&checked);
                Box::pin(async move {
                    if shared.fits(conn).await? {
                        return Ok(());
                    }
                    shared.wake.notify_one();
                    Err(sqlx::Error::Configuration("the host no longer accepts writes".into()))
                })
            })
            .test_before_acquire(false)
            .before_acquire(move |conn, meta| {
                let kept = meta.age < fresh.since_switch();
                Box::pin(async move { Ok(kept && crate::pool::fit_to_take(conn, meta.idle_for).await?) })
            })
            .connect_with(shared.hosts.options[first].clone())
            .await
            .map_err(|e| sqlx_error(&format!("connecting to {described}"), e))?;
        tracing::info!(host = %shared.hosts.shown[first], "PostgreSQL: using this host");
        tokio::spawn(watch(shared, pool.clone(), probe, stopped));
        Ok(pool)
    }
}

/// Keeps `pool` on a host that fits until `stopped` closes (the store is gone) or the pool is
/// closed.
async fn watch(shared: Arc<Shared>, pool: PgPool, probe: PgConnection, mut stopped: oneshot::Receiver<()>) {
    let mut probe = Some(probe);
    loop {
        let pause = if probe.is_some() { CHECK_EVERY } else { RETRY_EVERY };
        tokio::select! {
            _ = &mut stopped => return,
            () = shared.wake.notified() => {}
            () = tokio::time::sleep(pause) => {}
        }
        if pool.is_closed() {
            return;
        }
        if let Some(conn) = probe.as_mut() {
            if matches!(tokio::time::timeout(PROBE_TIMEOUT, shared.fits(conn)).await, Ok(Ok(true))) {
                continue;
            }
            tracing::warn!(host = %shared.hosts.shown[shared.current.load(Ordering::Acquire)],
                "PostgreSQL: the host stopped answering or accepting writes; looking for the one that does");
            // Its pooled connections go now, so no call (a read included) is served by a host
            // that no longer fits while another is sought.
            shared.forget_connections();
            probe = None;
        }
        let Some((index, conn)) = shared.find().await else {
            continue;
        };
        probe = Some(conn);
        if shared.current.swap(index, Ordering::AcqRel) != index {
            pool.set_connect_options(shared.hosts.options[index].clone());
        }
        // Even on the same host: connections from before it went away are broken.
        shared.forget_connections();
        tracing::warn!(host = %shared.hosts.shown[index], "PostgreSQL: using this host");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_are_read() {
        assert!(parse("postgres://u:pw@h/db?sslmode=disable").unwrap().is_none());
        let hosts = parse("postgres://u:pw@h1:5432,h2:5433/db?target_session_attrs=read-write&sslmode=disable")
            .unwrap()
            .unwrap();
        assert!(hosts.read_write);
        assert_eq!(hosts.shown, ["h1:5432", "h2:5433"]);
        assert_eq!(hosts.options[1].get_port(), 5433);
        assert_eq!(hosts.options[1].get_host(), "h2");
        assert_eq!(hosts.options[0].get_database(), Some("db"));
        let one = parse("postgres://h?target_session_attrs=any").unwrap().unwrap();
        assert!(!one.read_write);
        for (url, says) in [
            ("postgres://a,,b/db", "empty host"),
            ("postgres://a,b/db?target_session_attrs=standby", "read-write"),
            ("postgres://u:secret@a,b:notaport/db", "host b:notaport"),
        ] {
            let error = parse(url).unwrap_err().to_string();
            assert!(error.contains(says), "{url}: {error}");
            assert!(!error.contains("secret"), "{error}");
        }
    }
}
