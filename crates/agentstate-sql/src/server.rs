//! What the PostgreSQL and MySQL stores share: pool options and the mapping of sqlx errors.

use std::time::Duration;

use agentstate::Error;

/// Connection pool settings of a server database, from the URL's query (`max_connections`,
/// `acquire_timeout_ms`); every other query parameter goes to the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    /// The URL without agentstate's own parameters.
    pub url: String,
    /// Most connections open at once.
    pub max_connections: u32,
    /// How long a call waits for a free connection before failing (retryably).
    pub acquire_timeout: Duration,
}

impl PoolOptions {
    /// Splits agentstate's pool parameters out of `url`.
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

/// Maps a driver error: connection trouble, timeouts, serialization failures and deadlocks are
/// retryable; the rest is not.
pub(crate) fn sqlx_error(context: &str, e: sqlx::Error) -> Error {
    let retryable = match &e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            // PostgreSQL: serialization failure, deadlock, too many connections, shutting down.
            // MySQL: deadlock, lock wait timeout.
            matches!(db.code().as_deref(), Some("40001" | "40P01" | "53300" | "57P01" | "40000" | "HY000"))
                || matches!(db.code().as_deref(), Some(c) if c.starts_with("08"))
        }
        _ => false,
    };
    Error::backend(format!("{context} failed: {e}"), retryable, e)
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
        assert_eq!(o.url, "postgres://h/db?sslmode=disable");
        assert_eq!((o.max_connections, o.acquire_timeout), (4, Duration::from_millis(50)));
        assert!(PoolOptions::from_url("postgres://h/db?max_connections=many").is_err());
    }
}
