//! What connecting to a database server takes: pool options from the URL, the URL shown without
//! its password, and the mapping of sqlx errors the PostgreSQL and MySQL stores share.

use std::fmt;
use std::time::Duration;

use agentstate::{Error, SessionKey};
use sqlx::query::Query;

/// Connection pool settings of a server database, from the URL's query (`max_connections`,
/// `acquire_timeout_ms`); every other query parameter goes to the driver. `Debug` shows the URL
/// without its password.
#[derive(Clone, PartialEq, Eq)]
pub struct PoolOptions {
    url: String,
    /// Most connections open at once.
    pub max_connections: u32,
    /// How long a call waits for a free connection before failing (retryably).
    pub acquire_timeout: Duration,
}

impl fmt::Debug for PoolOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolOptions")
            .field("url", &self.redacted())
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout", &self.acquire_timeout)
            .finish()
    }
}

impl PoolOptions {
    /// The URL the driver connects to (agentstate's parameters taken out).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// That URL with any password replaced by `***`.
    pub fn redacted(&self) -> String {
        redact(&self.url)
    }

    /// Splits agentstate's pool parameters out of `url` (`postgres://…` or `mysql://…`).
    pub fn from_url(url: &str) -> agentstate::Result<Self> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut options = Self { url: base.to_owned(), max_connections: 16, acquire_timeout: Duration::from_secs(10) };
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let bad = |what: &str| Error::invalid("database_url", format!("{what} must be a whole number"));
            match pair.split_once('=') {
                Some(("max_connections", v)) => {
                    options.max_connections = v.parse().map_err(|_| bad("max_connections"))?;
                }
                Some(("acquire_timeout_ms", v)) => {
                    options.acquire_timeout = Duration::from_millis(v.parse().map_err(|_| bad("acquire_timeout_ms"))?);
                }
                _ => rest.push(pair),
            }
        }
        if !rest.is_empty() {
            options.url = format!("{base}?{}", rest.join("&"));
        }
        Ok(options)
    }
}

/// `url` with the password of its user part and any `password=` query parameter replaced by
/// `***`. The user part runs from `://` to the *last* `@`: a password may hold `?`, `/` or `#`
/// unescaped, and hiding too much is better than showing any of it.
pub(crate) fn redact(url: &str) -> String {
    let (mut out, rest) = match url.split_once("://").and_then(|(scheme, rest)| {
        let (userinfo, after) = rest.rsplit_once('@')?;
        let user =
            userinfo.split_once(':').map(|(user, _)| format!("{user}:***")).unwrap_or_else(|| userinfo.to_owned());
        Some((format!("{scheme}://{user}@"), after))
    }) {
        Some(split) => split,
        None => (String::new(), url),
    };
    let (base, query) = rest.split_once('?').map_or((rest, None), |(b, q)| (b, Some(q)));
    out.push_str(base);
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// Ends a pool's background work when dropped (the work's receiver sees the channel close).
#[derive(Debug)]
pub(crate) struct StopOnDrop {
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl StopOnDrop {
    /// A guard and the receiver the work watches.
    pub(crate) fn new() -> (Self, tokio::sync::oneshot::Receiver<()>) {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        (Self { _stop: stop }, stopped)
    }
}

/// How long a connection rests in the pool before it is pinged when taken again.
pub(crate) const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// Whether a pooled connection that rested `idle_for` is fit to take (an error: it is dropped and
/// another taken). sqlx's own check pings before every call, a round trip more on each (two
/// against one for a PostgreSQL append); a connection used within [`PING_AFTER_IDLE`] is taken
/// as it is. One that broke since fails its call retryably (503) and sqlx drops it when it comes
/// back (its release pings every connection); one that rested longer, as through an outage, is
/// pinged first, as before.
pub(crate) async fn fit_to_take<C: sqlx::Connection>(conn: &mut C, idle_for: Duration) -> Result<bool, sqlx::Error> {
    if idle_for >= PING_AFTER_IDLE {
        conn.ping().await?;
    }
    Ok(true)
}

/// A pool of `options`' size, connected to its URL.
pub(crate) async fn connect<DB: sqlx::Database>(options: &PoolOptions) -> agentstate::Result<sqlx::Pool<DB>> {
    sqlx::pool::PoolOptions::<DB>::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| Box::pin(fit_to_take(conn, meta.idle_for)))
        .connect(options.url())
        .await
        .map_err(|e| sqlx_error(&format!("connecting to {}", options.redacted()), e))
}

/// `sql` with the session's app, user and id bound as its first three parameters.
pub(crate) fn keyed<'q, DB>(sql: &'static str, key: &'q SessionKey) -> Query<'q, DB, DB::Arguments>
where
    DB: sqlx::Database,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    sqlx::query(sql).bind(key.app_name()).bind(key.user_id()).bind(key.session_id())
}

/// Maps a driver error: connection trouble, timeouts, serialization failures and deadlocks are
/// retryable; the rest is not.
pub(crate) fn sqlx_error(context: &str, e: sqlx::Error) -> Error {
    let retryable = match &e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            // PostgreSQL: serialization failure, deadlock, too many connections, shutting down,
            // starting up or recovering, read-only (a standby, or a primary being demoted).
            // MySQL: deadlock, lock wait timeout.
            matches!(
                db.code().as_deref(),
                Some("40001" | "40P01" | "53300" | "57P01" | "57P02" | "57P03" | "25006" | "40000" | "HY000")
            ) || matches!(db.code().as_deref(), Some(c) if c.starts_with("08"))
        }
        _ => false,
    };
    Error::backend(format!("{context} failed: {e}"), retryable, e)
}

/// Whether `e` says the statement lost a race for a lock and was rolled back: MySQL's deadlock
/// (1213) or lock wait timeout (1205), PostgreSQL's serialization failure or deadlock (40001,
/// 40P01). On a Galera cluster a conflict with a write certified on another node is reported as a
/// deadlock.
pub(crate) fn is_lock_failure(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else { return false };
    match db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        Some(mysql) => matches!(mysql.number(), 1213 | 1205),
        None => matches!(db.code().as_deref(), Some("40001" | "40P01")),
    }
}

/// Attempts of a statement that lost a race for a lock.
pub(crate) const LOCK_ATTEMPTS: u32 = 8;

/// Runs `write`, a statement in a transaction of its own, again (after a pause that doubles each
/// time) while it loses a race for a lock ([`is_lock_failure`]): it was rolled back, so it can.
pub(crate) async fn retry_on_lock<T, F, Fut>(mut write: F) -> Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        match write().await {
            Err(e) if is_lock_failure(&e) && attempt < LOCK_ATTEMPTS => {
                tokio::time::sleep(Duration::from_millis(1 << attempt)).await;
            }
            done => return done,
        }
    }
}

/// Whether `e` is a unique-key violation.
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.kind() == sqlx::error::ErrorKind::UniqueViolation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_parameters_are_split_out() {
        let o =
            PoolOptions::from_url("postgres://h/db?max_connections=4&sslmode=disable&acquire_timeout_ms=50").unwrap();
        assert_eq!(o.url(), "postgres://h/db?sslmode=disable");
        assert_eq!((o.max_connections, o.acquire_timeout), (4, Duration::from_millis(50)));
        assert!(PoolOptions::from_url("postgres://h/db?max_connections=many").is_err());
        let shown = format!("{:?}", PoolOptions::from_url("postgres://u:secret@h/db").unwrap());
        assert!(!shown.contains("secret"), "{shown}");
    }
}
