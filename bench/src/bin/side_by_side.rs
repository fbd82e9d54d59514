//! agentstate's half of the side-by-side benchmark (`bench/side-by-side` runs it, with ADK for
//! Python's half and the HTTP load test): the service-level workload against agentstate's
//! services and against the floors, the least SQL or Redis commands the same work needs through
//! the raw driver. Prints progress on stderr and writes one JSON document of results.
//!
//! ```sh
//! cargo run --release -p agentstate-bench --bin side_by_side -- services --sizes 10,100,1000 --out a.json
//! cargo run --release -p agentstate-bench --bin side_by_side -- seed --db sqlite:///tmp/x.db
//! ```
//!
//! The workload, per store: 50 creates; one session grown append by append to each of the sizes
//! (an event with one text part and a 3-key delta, one key `user:`; the append figure is the
//! median of the last tenth of the appends before the size, at least 10); at each size the median
//! of loads of the 20 most recent events and of all of them; then 8 writers appending to 8
//! sessions of 8 users at once. Floors: SQLite (rusqlite: insert and two `json_patch` updates in
//! one transaction), PostgreSQL (one CTE statement), MariaDB (insert and two `JSON_MERGE_PATCH`
//! updates in one transaction), Redis (one pipeline of the service's layout, no script); their
//! loads read the rows (or hashes) and parse each event into `serde_json::Value`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstate::{CreateSession, Event, GetSessionConfig, InMemorySessionService, Map, SessionService, Value};
use agentstate_bench::databases::{Backend, Database};
use agentstate_bench::{make_event, median};
use anyhow::Context;
use clap::Parser;
use serde_json::json;

#[derive(Parser)]
enum Command {
    /// The service-level workload on agentstate's services and the floors.
    Services(ServicesArgs),
    /// Fills a database for the HTTP load test: app `bench`, user `u`, sessions `s0`…`s99`
    /// (empty), `e100` (100 events) and `e2000` (2,000 events).
    Seed {
        /// The database's URL, as `agentstate serve --db` takes it.
        #[arg(long)]
        db: String,
    },
}

#[derive(clap::Args)]
struct ServicesArgs {
    /// The session sizes to measure at, in events.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
    sizes: Vec<usize>,
    /// Stores: memory, sqlite, postgres, mysql, redis.
    #[arg(long, value_delimiter = ',', default_value = "memory,sqlite,postgres,mysql,redis")]
    stores: Vec<String>,
    /// Appends per writer in the 8-writer run.
    #[arg(long, default_value_t = 200)]
    per_writer: usize,
    /// Where to write the results (JSON).
    #[arg(long)]
    out: PathBuf,
}

const WRITERS: usize = 8;
const CREATES: usize = 50;

/// What one implementation measured.
#[derive(serde::Serialize)]
struct Measured {
    implementation: &'static str,
    store: String,
    create_us: f64,
    sizes: Vec<AtSize>,
    concurrent_appends_per_s: Option<f64>,
}

#[derive(serde::Serialize)]
struct AtSize {
    events: usize,
    append_us: f64,
    recent20_us: f64,
    full_us: f64,
}

/// One store's operations, timed by [`measure`].
trait Subject {
    async fn create(&mut self, i: usize) -> anyhow::Result<()>;
    async fn append(&mut self, i: usize, event: Event) -> anyhow::Result<()>;
    async fn recent20(&mut self) -> anyhow::Result<()>;
    async fn full(&mut self) -> anyhow::Result<()>;
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

async fn measure(
    implementation: &'static str,
    store: &str,
    subject: &mut impl Subject,
    sizes: &[usize],
) -> anyhow::Result<Measured> {
    let mut creates = Vec::with_capacity(CREATES);
    for i in 0..CREATES {
        let t = Instant::now();
        subject.create(i).await?;
        creates.push(t.elapsed());
    }
    let mut grown = 0;
    let mut rows = Vec::new();
    for &size in sizes {
        let mut appends = Vec::with_capacity(size - grown);
        while grown < size {
            let t = Instant::now();
            subject.append(grown, make_event(grown)).await?;
            appends.push(t.elapsed());
            grown += 1;
        }
        let window = (size / 10).max(10).min(appends.len());
        let append = median(appends[appends.len() - window..].to_vec());
        let samples = if size >= 10_000 { 5 } else { 20 };
        let mut recent = Vec::new();
        let mut full = Vec::new();
        for _ in 0..samples {
            let t = Instant::now();
            subject.recent20().await?;
            recent.push(t.elapsed());
            let t = Instant::now();
            subject.full().await?;
            full.push(t.elapsed());
        }
        let row =
            AtSize { events: size, append_us: us(append), recent20_us: us(median(recent)), full_us: us(median(full)) };
        eprintln!(
            "  {implementation} {store} at {size:>6} events: append {:>9.1} µs, recent 20 {:>9.1} µs, all {:>11.1} µs",
            row.append_us, row.recent20_us, row.full_us
        );
        rows.push(row);
    }
    Ok(Measured {
        implementation,
        store: store.to_owned(),
        create_us: us(median(creates)),
        sizes: rows,
        concurrent_appends_per_s: None,
    })
}

// ---------------------------------------------------------------- agentstate

struct Service {
    svc: Arc<dyn SessionService>,
    session: Option<agentstate::Session>,
}

impl Subject for Service {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        self.svc.create_session(CreateSession::new("bench_app", format!("creator{}", i % 5))).await?;
        Ok(())
    }
    async fn append(&mut self, _: usize, event: Event) -> anyhow::Result<()> {
        let session = match &mut self.session {
            Some(session) => session,
            None => self.session.insert(self.svc.create_session(CreateSession::new("bench_app", "bench_user")).await?),
        };
        self.svc.append_event(session, event).await?;
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        let key = self.session.as_ref().context("no session yet")?.key();
        self.svc.get_session(key, GetSessionConfig::recent(20)).await?.context("the session is gone")?;
        Ok(())
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        let key = self.session.as_ref().context("no session yet")?.key();
        self.svc.get_session(key, GetSessionConfig::default()).await?.context("the session is gone")?;
        Ok(())
    }
}

async fn concurrent(svc: &Arc<dyn SessionService>, per_writer: usize) -> anyhow::Result<f64> {
    let start = Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let svc = Arc::clone(svc);
            tokio::spawn(async move {
                let mut s = svc.create_session(CreateSession::new("bench_app", format!("writer{w}"))).await?;
                for i in 0..per_writer {
                    svc.append_event(&mut s, make_event(i)).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok((WRITERS * per_writer) as f64 / start.elapsed().as_secs_f64())
}

async fn open(backend: Option<Backend>, db: Option<&Database>) -> anyhow::Result<Arc<dyn SessionService>> {
    Ok(match (backend, db) {
        (Some(Backend::Redis), Some(db)) => Arc::new(agentstate_redis::RedisSessionService::connect(&db.url).await?),
        (Some(_), Some(db)) => Arc::new(agentstate_sql::SqlSessionService::connect(&db.url).await?),
        _ => Arc::new(InMemorySessionService::new()),
    })
}

// ---------------------------------------------------------------- floors

/// The event's stored JSON, and its session and `user:` deltas as JSON objects.
fn split(event: &Event) -> anyhow::Result<(String, String, String)> {
    let mut session = Map::new();
    let mut user = Map::new();
    for (k, v) in &event.actions.state_delta {
        match k.strip_prefix("user:") {
            Some(rest) => user.insert(rest.to_owned(), v.clone()),
            None => session.insert(k.clone(), v.clone()),
        };
    }
    Ok((serde_json::to_string(event)?, Value::Object(session).to_string(), Value::Object(user).to_string()))
}

fn stamp(i: usize) -> chrono::NaiveDateTime {
    chrono::DateTime::from_timestamp_micros(1_795_000_000_000_000 + i as i64).unwrap_or_default().naive_utc()
}

fn stamp_text(i: usize) -> String {
    stamp(i).format("%Y-%m-%d %H:%M:%S%.6f").to_string()
}

struct SqliteFloor {
    conn: rusqlite::Connection,
}

impl SqliteFloor {
    fn new(path: &Path) -> anyhow::Result<Self> {
        let conn = rusqlite::Connection::open(path)?;
        // agentstate's default: WAL, synchronous=FULL.
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
        conn.execute_batch(include_str!("../../../crates/agentstate-sql/sql/sqlite/schema.sql"))?;
        let t = stamp_text(0);
        conn.execute("INSERT INTO sessions VALUES ('a','u','s','{}',?1,?1)", [&t])?;
        conn.execute("INSERT INTO user_states VALUES ('a','u','{}',?1)", [&t])?;
        Ok(Self { conn })
    }

    fn read(&self, limit: i64) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' \
             AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT ?1",
        )?;
        let mut rows = stmt.query([limit])?;
        while let Some(row) = rows.next()? {
            let data: String = row.get(3)?;
            std::hint::black_box((row.get::<_, String>(0)?, row.get::<_, String>(2)?));
            std::hint::black_box(serde_json::from_str::<Value>(&data)?);
        }
        Ok(())
    }
}

impl Subject for SqliteFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        let t = stamp_text(i);
        self.conn
            .prepare_cached("INSERT INTO sessions VALUES ('a','c',?1,'{}',?2,?2)")?
            .execute([format!("c{i}"), t])?;
        Ok(())
    }
    async fn append(&mut self, i: usize, event: Event) -> anyhow::Result<()> {
        let (data, session, user) = split(&event)?;
        let t = stamp_text(i + 1);
        let tx = self.conn.transaction()?;
        tx.prepare_cached("INSERT INTO events VALUES (?1,'a','u','s',?2,?3,?4)")?.execute(rusqlite::params![
            format!("ev-{i}"),
            event.invocation_id,
            t,
            data
        ])?;
        tx.prepare_cached(
            "UPDATE sessions SET state = json_patch(state, ?1), update_time = ?2 \
             WHERE app_name='a' AND user_id='u' AND id='s'",
        )?
        .execute(rusqlite::params![session, t])?;
        tx.prepare_cached(
            "UPDATE user_states SET state = json_patch(state, ?1), update_time = ?2 WHERE app_name='a' AND user_id='u'",
        )?
        .execute(rusqlite::params![user, t])?;
        tx.commit()?;
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(20)
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(-1)
    }
}

struct PgFloor {
    conn: sqlx::PgConnection,
}

impl PgFloor {
    async fn new(url: &str) -> anyhow::Result<Self> {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(url).await?;
        sqlx::raw_sql(include_str!("../../../crates/agentstate-sql/sql/postgres/schema.sql"))
            .execute(&mut conn)
            .await?;
        sqlx::query("INSERT INTO sessions VALUES ('a','u','s','{}',$1,$1)").bind(stamp(0)).execute(&mut conn).await?;
        sqlx::query("INSERT INTO user_states VALUES ('a','u','{}',$1)").bind(stamp(0)).execute(&mut conn).await?;
        Ok(Self { conn })
    }

    async fn read(&mut self, limit: Option<i64>) -> anyhow::Result<()> {
        use sqlx::Row;
        let rows = sqlx::query(
            "SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' \
             AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&mut self.conn)
        .await?;
        for r in rows {
            std::hint::black_box(r.try_get::<sqlx::types::Json<Value>, _>(3)?.0);
        }
        Ok(())
    }
}

impl Subject for PgFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO sessions VALUES ('a','c',$1,'{}',$2,$2)")
            .bind(format!("c{i}"))
            .bind(stamp(i))
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }
    async fn append(&mut self, i: usize, event: Event) -> anyhow::Result<()> {
        let (data, session, user) = split(&event)?;
        let n: i64 = sqlx::query_scalar(
            "WITH e AS (INSERT INTO events VALUES ($1,'a','u','s',$2,$3,$4::jsonb)), \
             s AS (UPDATE sessions SET state = state || $5::jsonb, update_time = $3 \
                   WHERE app_name='a' AND user_id='u' AND id='s' RETURNING 1), \
             u AS (UPDATE user_states SET state = state || $6::jsonb, update_time = $3 \
                   WHERE app_name='a' AND user_id='u' RETURNING 1) \
             SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM u)",
        )
        .bind(format!("ev-{i}"))
        .bind(&event.invocation_id)
        .bind(stamp(i + 1))
        .bind(data)
        .bind(session)
        .bind(user)
        .fetch_one(&mut self.conn)
        .await?;
        anyhow::ensure!(n == 2, "the floor's append updated {n} state rows, not 2");
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(Some(20)).await
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(None).await
    }
}

struct MySqlFloor {
    conn: sqlx::MySqlConnection,
}

impl MySqlFloor {
    async fn new(url: &str) -> anyhow::Result<Self> {
        use sqlx::Connection;
        let mut conn = sqlx::MySqlConnection::connect(url).await?;
        sqlx::raw_sql(include_str!("../../../crates/agentstate-sql/sql/mysql/schema.sql")).execute(&mut conn).await?;
        sqlx::query("INSERT INTO sessions VALUES ('a','u','s','{}',?,?)")
            .bind(stamp(0))
            .bind(stamp(0))
            .execute(&mut conn)
            .await?;
        sqlx::query("INSERT INTO user_states VALUES ('a','u','{}',?)").bind(stamp(0)).execute(&mut conn).await?;
        Ok(Self { conn })
    }

    async fn read(&mut self, limit: u64) -> anyhow::Result<()> {
        use sqlx::Row;
        let rows = sqlx::query(
            "SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' \
             AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT ?",
        )
        .bind(limit)
        .fetch_all(&mut self.conn)
        .await?;
        for r in rows {
            std::hint::black_box(serde_json::from_str::<Value>(r.try_get::<&str, _>(3)?)?);
        }
        Ok(())
    }
}

impl Subject for MySqlFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        sqlx::query("INSERT INTO sessions VALUES ('a','c',?,'{}',?,?)")
            .bind(format!("c{i}"))
            .bind(stamp(i))
            .bind(stamp(i))
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }
    async fn append(&mut self, i: usize, event: Event) -> anyhow::Result<()> {
        use sqlx::Connection;
        let (data, session, user) = split(&event)?;
        let t = stamp(i + 1);
        let mut tx = self.conn.begin().await?;
        sqlx::query("INSERT INTO events VALUES (?,'a','u','s',?,?,?)")
            .bind(format!("ev-{i}"))
            .bind(&event.invocation_id)
            .bind(t)
            .bind(data)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE sessions SET state = JSON_MERGE_PATCH(state, ?), update_time = ? \
             WHERE app_name='a' AND user_id='u' AND id='s'",
        )
        .bind(session)
        .bind(t)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE user_states SET state = JSON_MERGE_PATCH(state, ?), update_time = ? WHERE app_name='a' AND user_id='u'",
        )
        .bind(user)
        .bind(t)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(20).await
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(u64::MAX).await
    }
}

/// The Redis floor: the service's key layout for one session, written without its script.
struct RedisFloor {
    connection: redis::aio::ConnectionManager,
    keys: [String; 8], // meta, state, app, user, times, data, sessions, user sessions
    base: String,
}

impl RedisFloor {
    async fn new(url: &str, prefix: &str) -> anyhow::Result<Self> {
        let connection = redis::aio::ConnectionManager::new(redis::Client::open(url)?).await?;
        let base = format!("{prefix}{{floor}}:");
        let keys = ["m:u:s", "s:u:s", "app", "u:u", "e:u:s", "d:u:s", "sessions", "us:u"].map(|k| format!("{base}{k}"));
        Ok(Self { connection, keys, base })
    }

    async fn read(&mut self, recent: Option<isize>) -> anyhow::Result<()> {
        let [meta, state, app, user, times, data, ..] = &self.keys;
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(meta).cmd("HGETALL").arg(state).cmd("HGETALL").arg(app).cmd("HGETALL").arg(user);
        match recent {
            Some(n) => pipe.cmd("ZRANGE").arg(times).arg(-n).arg(-1),
            None => pipe.cmd("HVALS").arg(data),
        };
        let mut replies: Vec<Vec<Vec<u8>>> = pipe.query_async(&mut self.connection).await?;
        let tail = replies.pop().unwrap_or_default();
        std::hint::black_box(replies);
        let events: Vec<Vec<u8>> = match recent {
            Some(_) => redis::cmd("HMGET").arg(data).arg(tail).query_async(&mut self.connection).await?,
            None => tail,
        };
        for event in events {
            std::hint::black_box(serde_json::from_slice::<Value>(&event)?);
        }
        Ok(())
    }
}

impl Subject for RedisFloor {
    async fn create(&mut self, i: usize) -> anyhow::Result<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("HSET").arg(format!("{}m:c:c{i}", self.base)).arg("update").arg(i).ignore();
        pipe.cmd("ZADD").arg(&self.keys[6]).arg(i).arg(format!("c\0c{i}")).ignore();
        let () = pipe.query_async(&mut self.connection).await?;
        Ok(())
    }
    async fn append(&mut self, i: usize, mut event: Event) -> anyhow::Result<()> {
        let [meta, state, _, user, times, data, sessions, user_sessions] = &self.keys;
        let ts = 1_795_000_000_000_000_i64 + i as i64;
        event.id = format!("ev-{i}");
        let mut pipe = redis::pipe();
        pipe.cmd("ZADD").arg(times).arg(ts).arg(&event.id).ignore();
        pipe.cmd("HSET").arg(data).arg(&event.id).arg(serde_json::to_string(&event)?).ignore();
        let (mut own, mut shared) = (Vec::new(), Vec::new());
        for (k, v) in &event.actions.state_delta {
            match k.strip_prefix("user:") {
                Some(rest) => shared.push((rest.to_owned(), v.to_string())),
                None => own.push((k.clone(), v.to_string())),
            }
        }
        pipe.cmd("HSET").arg(state).arg(own).ignore();
        pipe.cmd("HSET").arg(user).arg(shared).ignore();
        pipe.cmd("HSET").arg(meta).arg("update").arg(ts).ignore();
        pipe.cmd("ZADD").arg(sessions).arg(ts).arg("u\0s").ignore();
        pipe.cmd("ZADD").arg(user_sessions).arg(ts).arg("s").ignore();
        let () = pipe.query_async(&mut self.connection).await?;
        Ok(())
    }
    async fn recent20(&mut self) -> anyhow::Result<()> {
        self.read(Some(20)).await
    }
    async fn full(&mut self) -> anyhow::Result<()> {
        self.read(None).await
    }
}

// ---------------------------------------------------------------- the run

fn backend(store: &str) -> anyhow::Result<Option<Backend>> {
    Ok(match store {
        "memory" => None,
        "sqlite" => Some(Backend::Sqlite),
        "postgres" => Some(Backend::Postgres),
        "mysql" => Some(Backend::Mysql),
        "redis" => Some(Backend::Redis),
        other => anyhow::bail!("unknown store {other:?}; the stores are memory, sqlite, postgres, mysql, redis"),
    })
}

async fn store(store: &str, args: &ServicesArgs, dir: &Path) -> anyhow::Result<Vec<Measured>> {
    let backend = backend(store)?;
    let mut results = Vec::new();
    // The floor first, on a database of its own.
    if let Some(backend) = backend {
        let floor_dir = dir.join(format!("floor-{store}"));
        std::fs::create_dir_all(&floor_dir)?;
        let db = Database::create(backend, &floor_dir).await?;
        eprintln!("floor, {store}");
        let floor = match backend {
            Backend::Sqlite => measure("floor", store, &mut SqliteFloor::new(Path::new(&db.name))?, &args.sizes).await,
            Backend::Postgres => measure("floor", store, &mut PgFloor::new(&db.url).await?, &args.sizes).await,
            Backend::Mysql => measure("floor", store, &mut MySqlFloor::new(&db.url).await?, &args.sizes).await,
            Backend::Redis => {
                measure(
                    "floor",
                    store,
                    &mut RedisFloor::new(&agentstate_bench::databases::redis_url(), &db.name).await?,
                    &args.sizes,
                )
                .await
            }
        };
        db.remove().await?;
        results.push(floor?);
    }
    eprintln!("agentstate, {store}");
    let db = match backend {
        Some(backend) => {
            std::fs::create_dir_all(dir.join(store))?;
            Some(Database::create(backend, &dir.join(store)).await?)
        }
        None => None,
    };
    let outcome = async {
        let svc = open(backend, db.as_ref()).await?;
        let mut measured =
            measure("agentstate", store, &mut Service { svc: Arc::clone(&svc), session: None }, &args.sizes).await?;
        let rate = concurrent(&svc, args.per_writer).await?;
        eprintln!("  agentstate {store}: {WRITERS} writers on {WRITERS} users, {rate:.0} appends/s");
        measured.concurrent_appends_per_s = Some(rate);
        anyhow::Ok(measured)
    }
    .await;
    if let Some(db) = db {
        db.remove().await?;
    }
    results.push(outcome?);
    Ok(results)
}

async fn services(args: ServicesArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("agentstate-side-by-side-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut results = Vec::new();
    for name in &args.stores {
        let measured = store(name, &args, &dir).await.with_context(|| format!("measuring {name}"));
        match measured {
            Ok(m) => results.extend(m),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::write(&args.out, serde_json::to_vec_pretty(&json!({ "results": results }))?)
        .with_context(|| format!("writing {}", args.out.display()))?;
    Ok(())
}

/// The HTTP load test's data: 100 empty sessions to PATCH, and sessions of 100 and 2,000 events.
async fn seed(url: &str) -> anyhow::Result<()> {
    let svc: Arc<dyn SessionService> = if url.starts_with("redis") {
        Arc::new(agentstate_redis::RedisSessionService::connect(url).await?)
    } else {
        Arc::new(agentstate_sql::SqlSessionService::connect(url).await?)
    };
    for i in 0..100 {
        svc.create_session(CreateSession::new("bench", "u").id(format!("s{i}"))).await?;
    }
    for size in [100, 2_000] {
        let mut session = svc.create_session(CreateSession::new("bench", "u").id(format!("e{size}"))).await?;
        for i in 0..size {
            svc.append_event(&mut session, make_event(i)).await?;
        }
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let command = Command::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        match command {
            Command::Services(args) => services(args).await,
            Command::Seed { db } => seed(&db).await,
        }
    })
}
