//! Database URLs: `sqlite://path.db`, `sqlite:///abs/path.db`, `sqlite::memory:`,
//! `postgres://…` / `postgresql://…`, `mysql://…` / `mariadb://…`. A `+driver` suffix as
//! SQLAlchemy writes it (`sqlite+aiosqlite://`, `postgresql+asyncpg://`) is accepted and ignored.

use std::path::PathBuf;
use std::time::Duration;

use agentstate::{Error, Result};

use crate::sqlite::{SqliteOptions, Synchronous};

/// Which database a URL names.
#[derive(Debug, Clone, PartialEq)]
pub enum DatabaseUrl {
    /// A SQLite file or in-memory database.
    Sqlite(SqliteOptions),
    /// A PostgreSQL server; the URL as sqlx takes it.
    Postgres(String),
    /// A MySQL or MariaDB server; the URL as sqlx takes it.
    MySql(String),
}

fn bad(url: &str, why: impl std::fmt::Display) -> Error {
    Error::invalid("database_url", format!("{:?}: {why}", redact(url)))
}

/// The URL with any password replaced by `***`, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((userinfo, host)) = rest.split_once('@') else { return url.to_owned() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

impl DatabaseUrl {
    /// Parses a database URL.
    ///
    /// ```
    /// use agentstate_sql::DatabaseUrl;
    /// assert!(matches!(DatabaseUrl::parse("sqlite://agentstate.db")?, DatabaseUrl::Sqlite(_)));
    /// assert!(matches!(DatabaseUrl::parse("postgresql+asyncpg://u@h/db")?, DatabaseUrl::Postgres(_)));
    /// assert!(DatabaseUrl::parse("oracle://x").is_err());
    /// # Ok::<(), agentstate::Error>(())
    /// ```
    pub fn parse(url: &str) -> Result<Self> {
        let (scheme, rest) = url
            .split_once(':')
            .ok_or_else(|| bad(url, "expected a URL such as sqlite://agentstate.db or postgres://host/db"))?;
        let base = scheme.split('+').next().unwrap_or(scheme).to_ascii_lowercase();
        let normalized = |proper: &str| format!("{proper}:{rest}");
        match base.as_str() {
            "sqlite" => parse_sqlite(url, rest).map(Self::Sqlite),
            "postgres" | "postgresql" => Ok(Self::Postgres(normalized("postgres"))),
            "mysql" | "mariadb" => Ok(Self::MySql(normalized("mysql"))),
            other => Err(bad(url, format!("unsupported scheme {other:?}; use sqlite, postgres or mysql"))),
        }
    }
}

fn parse_sqlite(url: &str, rest: &str) -> Result<SqliteOptions> {
    let mut options = SqliteOptions::default();
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let path = location.strip_prefix("//").unwrap_or(location);
    options.path = match path {
        ":memory:" | "" => None,
        p => Some(PathBuf::from(p)),
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| bad(url, format!("query part {pair:?} is not key=value")))?;
        match k {
            "synchronous" => {
                options.synchronous = match v.to_ascii_lowercase().as_str() {
                    "full" => Synchronous::Full,
                    "normal" => Synchronous::Normal,
                    _ => return Err(bad(url, "synchronous must be full or normal")),
                }
            }
            "busy_timeout_ms" => {
                let ms = v.parse().map_err(|_| bad(url, "busy_timeout_ms must be a whole number"))?;
                options.busy_timeout = Duration::from_millis(ms);
            }
            "readers" => {
                options.readers = v.parse().map_err(|_| bad(url, "readers must be a whole number"))?;
            }
            other => {
                return Err(bad(
                    url,
                    format!("unknown option {other:?}; known: synchronous, busy_timeout_ms, readers"),
                ));
            }
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(url: &str) -> SqliteOptions {
        match DatabaseUrl::parse(url).unwrap() {
            DatabaseUrl::Sqlite(o) => o,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sqlite_forms() {
        assert_eq!(sqlite("sqlite://agentstate.db").path, Some(PathBuf::from("agentstate.db")));
        assert_eq!(sqlite("sqlite:///tmp/a.db").path, Some(PathBuf::from("/tmp/a.db")));
        assert_eq!(sqlite("sqlite+aiosqlite:///tmp/a.db").path, Some(PathBuf::from("/tmp/a.db")));
        assert_eq!(sqlite("sqlite::memory:").path, None);
        let o = sqlite("sqlite://x.db?synchronous=normal&busy_timeout_ms=100&readers=2");
        assert_eq!((o.synchronous, o.busy_timeout, o.readers), (Synchronous::Normal, Duration::from_millis(100), 2));
        assert!(DatabaseUrl::parse("sqlite://x.db?fast=yes").is_err());
    }

    #[test]
    fn server_forms_and_redaction() {
        assert_eq!(
            DatabaseUrl::parse("postgresql+asyncpg://u:pw@h/db").unwrap(),
            DatabaseUrl::Postgres("postgres://u:pw@h/db".into())
        );
        assert_eq!(DatabaseUrl::parse("mariadb://root@h/db").unwrap(), DatabaseUrl::MySql("mysql://root@h/db".into()));
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        let err = DatabaseUrl::parse("oracle://u:secret@h").unwrap_err().to_string();
        assert!(!err.contains("secret"), "{err}");
    }
}
