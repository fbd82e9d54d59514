//! Throwaway databases for the soak run and the side-by-side harness: a SQLite file in a given
//! directory, a new PostgreSQL or MariaDB database on the test servers, or a Redis key prefix;
//! each removed by [`Database::remove`]. The servers come from the environment as the
//! conformance suite's do (`AGENTSTATE_TEST_POSTGRES`, `AGENTSTATE_TEST_MYSQL`,
//! `AGENTSTATE_TEST_REDIS`), defaulting to the local ones.

use std::path::Path;

/// A database server kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// An embedded SQLite file.
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// MariaDB or MySQL.
    Mysql,
    /// Redis.
    Redis,
}

impl Backend {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
            Self::Mysql => "mysql",
            Self::Redis => "redis",
        }
    }
}

/// A store to measure: the in-memory store for `None` (the floor), else a new database of the
/// backend (a SQLite file goes in `dir`), returned to remove once measured.
pub async fn store_of(
    backend: Option<Backend>,
    dir: &Path,
) -> anyhow::Result<(std::sync::Arc<dyn agentstate::store::SessionStore>, Option<Database>)> {
    match backend {
        None => Ok((std::sync::Arc::new(agentstate::InMemoryStore::new()), None)),
        Some(backend) => {
            let database = Database::create(backend, dir).await?;
            Ok((agentstate_backends::open(&database.url).await?, Some(database)))
        }
    }
}

/// A backend's throwaway database.
pub struct Database {
    /// Its kind.
    pub backend: Backend,
    /// Its URL, as `agentstate serve --db` takes it.
    pub url: String,
    /// The SQLite file, the SQL database's name, or the Redis prefix.
    pub name: String,
}

impl Database {
    /// A new, empty database of `backend` (a SQLite file goes in `dir`).
    pub async fn create(backend: Backend, dir: &Path) -> anyhow::Result<Self> {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        Ok(match backend {
            Backend::Sqlite => {
                let file = dir.join("agentstate.db");
                Self { backend, url: format!("sqlite://{}", file.display()), name: file.display().to_string() }
            }
            Backend::Postgres => {
                let url = agentstate_conformance::databases::fresh_postgres().await;
                let name = url.rsplit('/').next().unwrap_or_default().to_owned();
                Self { backend, url, name }
            }
            Backend::Mysql => {
                let url = agentstate_conformance::databases::fresh_mysql().await;
                let name = url.rsplit('/').next().unwrap_or_default().to_owned();
                Self { backend, url, name }
            }
            Backend::Redis => {
                let prefix = format!("agentstate-soak-{tag}:");
                Self { backend, url: format!("{}?prefix={prefix}", redis_url()), name: prefix }
            }
        })
    }

    /// The server's connections to its database: SQLite files it holds open, PostgreSQL and
    /// MariaDB sessions on its database, or (Redis cannot tell clients apart) every Redis client
    /// but this program's.
    pub async fn connections(&self, pid: u32) -> anyhow::Result<u64> {
        match self.backend {
            Backend::Sqlite => Ok(open_files(pid)?.iter().filter(|f| f.starts_with(&self.name)).count() as u64),
            Backend::Postgres => {
                let admin = agentstate_conformance::databases::postgres_admin_url();
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await?;
                let n: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = $1")
                    .bind(&self.name)
                    .fetch_one(&mut conn)
                    .await?;
                Ok(u64::try_from(n)?)
            }
            Backend::Mysql => {
                let admin = agentstate_conformance::databases::mysql_admin_url();
                let mut conn = <sqlx::MySqlConnection as sqlx::Connection>::connect(&admin).await?;
                let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ?")
                    .bind(&self.name)
                    .fetch_one(&mut conn)
                    .await?;
                Ok(u64::try_from(n)?)
            }
            Backend::Redis => {
                let client = redis::Client::open(redis_url())?;
                let mut conn = client.get_multiplexed_async_connection().await?;
                let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut conn).await?;
                Ok(list.lines().count().saturating_sub(1) as u64)
            }
        }
    }

    /// Drops the database, removes the prefix's keys (a SQLite file goes with its directory).
    pub async fn remove(&self) -> anyhow::Result<()> {
        match self.backend {
            Backend::Sqlite => Ok(()),
            Backend::Postgres => {
                let admin = agentstate_conformance::databases::postgres_admin_url();
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await?;
                let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
                sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(&mut conn).await?;
                Ok(())
            }
            Backend::Mysql => {
                let admin = agentstate_conformance::databases::mysql_admin_url();
                let mut conn = <sqlx::MySqlConnection as sqlx::Connection>::connect(&admin).await?;
                let drop = format!("DROP DATABASE IF EXISTS {}", self.name);
                sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(&mut conn).await?;
                Ok(())
            }
            Backend::Redis => {
                let client = redis::Client::open(redis_url())?;
                let mut conn = client.get_multiplexed_async_connection().await?;
                // SCAN, not KEYS: the Redis may be shared, and KEYS blocks it.
                let mut cursor: u64 = 0;
                loop {
                    let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(format!("{}*", self.name))
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut conn)
                        .await?;
                    if !keys.is_empty() {
                        let _: u64 = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await?;
                    }
                    if next == 0 {
                        return Ok(());
                    }
                    cursor = next;
                }
            }
        }
    }
}

/// The Redis server.
pub fn redis_url() -> String {
    std::env::var("AGENTSTATE_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into())
}

/// The paths process `pid` holds open.
pub fn open_files(pid: u32) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        if let Ok(target) = std::fs::read_link(entry?.path()) {
            files.push(target.display().to_string());
        }
    }
    Ok(files)
}
