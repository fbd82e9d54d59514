//! Database URLs: `sqlite://path.db`, `sqlite:///abs/path.db`, `sqlite::memory:`,
//! `postgres://…` / `postgresql://…`, `mysql://…` / `mariadb://…`. A `+driver` suffix as
//! SQLAlchemy writes it (`sqlite+aiosqlite://`, `postgresql+asyncpg://`) is accepted and ignored.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use agentstate::{Error, Result};

use crate::pool::{PoolOptions, redact};
use crate::sqlite::{SqliteOptions, Synchronous};

/// A parsed database URL. It shows itself (`Display`, `Debug`) with any password replaced by
/// `***`, so it can go into messages and logs.
///
/// ```
/// use agentstate_sql::{Database, DatabaseUrl};
/// let url = DatabaseUrl::parse("postgresql+asyncpg://app:s3cret@db-host/sessions")?;
/// assert!(matches!(url.database(), Database::Postgres(_)));
/// assert_eq!(url.to_string(), "postgresql+asyncpg://app:***@db-host/sessions");
/// assert!(!format!("{url:?}").contains("s3cret"));
/// assert!(DatabaseUrl::parse("oracle://x").is_err());
/// # Ok::<(), agentstate::Error>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct DatabaseUrl {
    database: Database,
    redacted: String,
}

/// Which database a URL names, with its options.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Database {
    /// A SQLite file or in-memory database.
    Sqlite(SqliteOptions),
    /// A PostgreSQL server.
    Postgres(PoolOptions),
    /// A MySQL or MariaDB server.
    MySql(PoolOptions),
}

fn bad(url: &str, why: impl fmt::Display) -> Error {
    Error::invalid("database_url", format!("{:?}: {why}", redact(url)))
}

impl DatabaseUrl {
    /// Parses a database URL.
    pub fn parse(url: &str) -> Result<Self> {
        let (scheme, rest) = url
            .split_once(':')
            .ok_or_else(|| bad(url, "expected a URL such as sqlite://agentstate.db or postgres://host/db"))?;
        let base = scheme.split('+').next().unwrap_or(scheme).to_ascii_lowercase();
        let normalized = |proper: &str| format!("{proper}:{rest}");
        let database = match base.as_str() {
            "sqlite" => Database::Sqlite(parse_sqlite(url, rest)?),
            "postgres" | "postgresql" => Database::Postgres(PoolOptions::from_url(&normalized("postgres"))?),
            "mysql" | "mariadb" => Database::MySql(PoolOptions::from_url(&normalized("mysql"))?),
            other => return Err(bad(url, format!("unsupported scheme {other:?}; use sqlite, postgres or mysql"))),
        };
        Ok(Self { database, redacted: redact(url) })
    }

    /// The database and its options.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The URL as given, with any password replaced by `***`.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseUrl").field("url", &self.redacted).field("database", &self.database).finish()
    }
}

/// A query part for an error message: itself if it reads as an option name, else nothing of it
/// (the URL may be mistyped, and what follows `?` may hold a password).
fn name(part: &str) -> String {
    if !part.is_empty() && part.len() <= 40 && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        format!("{part:?}")
    } else {
        "(not an option name)".to_owned()
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
        let (k, v) =
            pair.split_once('=').ok_or_else(|| bad(url, format!("query part {} is not key=value", name(pair))))?;
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
                    format!("unknown option {}; known: synchronous, busy_timeout_ms, readers", name(other)),
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
        match DatabaseUrl::parse(url).unwrap().database {
            Database::Sqlite(o) => o,
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
        let pg = DatabaseUrl::parse("postgresql+asyncpg://u:pw@h/db").unwrap();
        assert_eq!(pg.database, Database::Postgres(PoolOptions::from_url("postgres://u:pw@h/db").unwrap()));
        let my = DatabaseUrl::parse("mariadb://root@h/db").unwrap();
        assert_eq!(my.database, Database::MySql(PoolOptions::from_url("mysql://root@h/db").unwrap()));
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u:p@ss@h/db?sslmode=require"), "postgres://u:***@h/db?sslmode=require");
        assert_eq!(redact("postgres://u@h/db?password=secret&x=1"), "postgres://u@h/db?password=***&x=1");
        assert_eq!(redact("mysql://root@h/db"), "mysql://root@h/db");
        let err = DatabaseUrl::parse("oracle://u:secret@h").unwrap_err().to_string();
        assert!(!err.contains("secret"), "{err}");
        let err = DatabaseUrl::parse("postgres://u:secret@h/db?max_connections=x").unwrap_err().to_string();
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn no_password_is_shown() {
        for url in ["postgres://u:secret@h/db", "mysql://u:secret@h/db?password=secret"] {
            let parsed = DatabaseUrl::parse(url).unwrap();
            let shown = format!("{parsed} {parsed:?} {:?}", parsed.database());
            assert!(!shown.contains("secret"), "{shown}");
        }
        // Unescaped `?`, `/` or `#` in a password (found by fuzzing: the part after `?` was
        // taken for the query and shown), and a mistyped scheme, whose error echoes the URL.
        for url in [
            "postgres://u:sec?ret@h/db",
            "mysql://u:se/cr#et@h/db",
            "postgre://u:sec?ret@h/db",
            "sqlite:?x://u:sec?ret@h",
            "sqlite:db?a://u:sec?ret@h=1",
        ] {
            let shown = match DatabaseUrl::parse(url) {
                Ok(parsed) => format!("{parsed} {parsed:?} {:?}", parsed.database()),
                Err(e) => e.to_string(),
            };
            assert!(!shown.contains("ret@") && !shown.contains("cr#"), "{shown}");
        }
    }
}
