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
//! median of the last half of the appends before the size, at least 10); at each size the median
//! of loads of the 20 most recent events and of all of them; then 8 writers appending to 8
//! sessions of 8 users at once. Floors: SQLite (rusqlite: insert and two `json_patch` updates in
//! one transaction), PostgreSQL (one CTE statement), MariaDB (insert and two `JSON_MERGE_PATCH`
//! updates in one transaction), Redis (one pipeline of the service's layout, no script); their
//! loads read the rows (or hashes) and parse each event into `serde_json::Value`.

mod floors;
mod http_floor;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};
use agentstate_bench::databases::{Backend, Database};
use agentstate_bench::{make_event, median};
use anyhow::Context;
use clap::Parser;
use serde_json::json;

use floors::{MySqlFloor, PgFloor, RedisFloor, SqliteFloor};

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
    /// The floor of the HTTP GET of a session: reads its rows from a SQLite file and answers
    /// with bytes given in advance (agentstate's answer to the same GET).
    FloorServer(http_floor::Args),
}

#[derive(clap::Args)]
struct ServicesArgs {
    /// The session sizes to measure at, in events.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
    sizes: Vec<usize>,
    /// Stores: memory, sqlite, sqlite-normal (`synchronous=NORMAL`), postgres, mysql, redis.
    #[arg(long, value_delimiter = ',', default_value = "memory,sqlite,sqlite-normal,postgres,mysql,redis")]
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
pub(crate) trait Subject {
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
        let window = (size / 2).max(10).min(appends.len());
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
    svc: SessionService,
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

async fn concurrent(svc: &SessionService, per_writer: usize) -> anyhow::Result<f64> {
    let start = Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let svc = svc.clone();
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

async fn open(backend: Option<Backend>, db: Option<&Database>) -> anyhow::Result<SessionService> {
    Ok(match (backend, db) {
        (Some(Backend::Redis), Some(db)) => SessionService::new(agentstate_redis::RedisStore::connect(&db.url).await?),
        (Some(_), Some(db)) => SessionService::new(agentstate_sql::SqlStore::connect(&db.url).await?),
        _ => SessionService::in_memory(),
    })
}

// ---------------------------------------------------------------- the run

fn backend(store: &str) -> anyhow::Result<Option<Backend>> {
    Ok(match store {
        "memory" => None,
        "sqlite" | "sqlite-normal" => Some(Backend::Sqlite),
        "postgres" => Some(Backend::Postgres),
        "mysql" => Some(Backend::Mysql),
        "redis" => Some(Backend::Redis),
        other => {
            anyhow::bail!(
                "unknown store {other:?}; the stores are memory, sqlite, sqlite-normal, postgres, mysql, redis"
            )
        }
    })
}

async fn store(store: &str, args: &ServicesArgs, dir: &Path) -> anyhow::Result<Vec<Measured>> {
    let backend = backend(store)?;
    let normal = store == "sqlite-normal";
    let mut results = Vec::new();
    // The floor first, on a database of its own.
    if let Some(backend) = backend {
        let floor_dir = dir.join(format!("floor-{store}"));
        std::fs::create_dir_all(&floor_dir)?;
        let db = Database::create(backend, &floor_dir).await?;
        eprintln!("floor, {store}");
        let floor = match backend {
            Backend::Sqlite => {
                measure("floor", store, &mut SqliteFloor::new(Path::new(&db.name), normal)?, &args.sizes).await
            }
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
            let mut db = Database::create(backend, &dir.join(store)).await?;
            if normal {
                db.url.push_str("?synchronous=normal");
            }
            Some(db)
        }
        None => None,
    };
    let outcome = async {
        let svc = open(backend, db.as_ref()).await?;
        let mut measured =
            measure("agentstate", store, &mut Service { svc: svc.clone(), session: None }, &args.sizes).await?;
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
    let svc: SessionService = if url.starts_with("redis") {
        SessionService::new(agentstate_redis::RedisStore::connect(url).await?)
    } else {
        SessionService::new(agentstate_sql::SqlStore::connect(url).await?)
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
            Command::FloorServer(args) => http_floor::serve(args).await,
        }
    })
}
