//! SQLite and PostgreSQL: appends and loads of agentstate's SQL service next to the floor, the
//! minimum SQL one append needs, measured in the same run on the same machine (rusqlite with the
//! insert and two `json_patch` updates in one transaction; on PostgreSQL one CTE statement
//! through sqlx). Every figure is printed with its ratio to the floor.
//!
//! Workload (as the core benchmark): an event with one text part and a 3-key delta, one key
//! `user:`; one session grown from 0 to 10,000 events; loads of the 20 most recent and of all
//! events at 10, 100, 1,000 and 10,000 events; then 8 writers on 8 sessions of 8 users at once.
//!
//! Run: `cargo bench -p agentstate-bench --bench sql` (PostgreSQL from `AGENTSTATE_BENCH_POSTGRES`,
//! default the local server; a throwaway database is created and dropped).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstate::{CreateSession, Event, GetSessionConfig, Map, SessionService, Value};
use agentstate_bench::{make_event, median};
use agentstate_sql::SqlSessionService;

const N: usize = 10_000;
const CHECKPOINTS: [usize; 4] = [10, 100, 1_000, 10_000];
const WRITERS: usize = 8;
const PER_WRITER: usize = 500;

#[derive(Default)]
struct Growth {
    rate: f64,
    last_1000_median: Duration,
    recent20: Vec<Duration>,
    full: Vec<Duration>,
}

trait Subject {
    async fn append(&mut self, i: usize, event: Event);
    async fn recent20(&mut self);
    async fn full(&mut self);
}

async fn grow(subject: &mut impl Subject) -> Growth {
    let events: Vec<Event> = (0..N).map(make_event).collect();
    let mut lat = Vec::with_capacity(N);
    let mut g = Growth::default();
    let start = Instant::now();
    let mut paused = Duration::ZERO;
    for (i, e) in events.into_iter().enumerate() {
        let t = Instant::now();
        subject.append(i, e).await;
        lat.push(t.elapsed());
        if CHECKPOINTS.contains(&(i + 1)) {
            let pause = Instant::now();
            let mut r = Vec::new();
            for _ in 0..50 {
                let t = Instant::now();
                subject.recent20().await;
                r.push(t.elapsed());
            }
            let mut f = Vec::new();
            for _ in 0..if i + 1 >= 10_000 { 10 } else { 30 } {
                let t = Instant::now();
                subject.full().await;
                f.push(t.elapsed());
            }
            g.recent20.push(median(r));
            g.full.push(median(f));
            paused += pause.elapsed();
        }
    }
    g.rate = N as f64 / (start.elapsed() - paused).as_secs_f64();
    g.last_1000_median = median(lat[N - 1000..].to_vec());
    g
}

// ---------------------------------------------------------------- agentstate

struct Ours {
    svc: Arc<SqlSessionService>,
    session: agentstate::Session,
}

impl Ours {
    async fn new(url: &str) -> Self {
        let svc = Arc::new(SqlSessionService::connect(url).await.unwrap());
        let session = svc.create_session(CreateSession::new("bench_app", "bench_user")).await.unwrap();
        Self { svc, session }
    }
}

impl Subject for Ours {
    async fn append(&mut self, _: usize, event: Event) {
        self.svc.append_event(&mut self.session, event).await.unwrap();
    }
    async fn recent20(&mut self) {
        self.svc.get_session(self.session.key(), GetSessionConfig::recent(20)).await.unwrap().unwrap();
    }
    async fn full(&mut self) {
        self.svc.get_session(self.session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    }
}

async fn concurrent_ours(url: &str) -> f64 {
    let svc = Arc::new(SqlSessionService::connect(url).await.unwrap());
    let start = Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let svc = Arc::clone(&svc);
            tokio::spawn(async move {
                let mut s = svc.create_session(CreateSession::new("bench_app", format!("writer{w}"))).await.unwrap();
                for i in 0..PER_WRITER {
                    svc.append_event(&mut s, make_event(i)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    (WRITERS * PER_WRITER) as f64 / start.elapsed().as_secs_f64()
}

// ---------------------------------------------------------------- floors

fn split(event: &Event) -> (String, String, String) {
    let mut session = Map::new();
    let mut user = Map::new();
    for (k, v) in &event.actions.state_delta {
        match k.strip_prefix("user:") {
            Some(rest) => user.insert(rest.to_owned(), v.clone()),
            None => session.insert(k.clone(), v.clone()),
        };
    }
    (serde_json::to_string(event).unwrap(), Value::Object(session).to_string(), Value::Object(user).to_string())
}

fn stamp(i: usize) -> String {
    chrono::DateTime::from_timestamp_micros(1_795_000_000_000_000 + i as i64)
        .unwrap()
        .naive_utc()
        .format("%Y-%m-%d %H:%M:%S%.6f")
        .to_string()
}

struct SqliteFloor {
    conn: rusqlite::Connection,
}

impl SqliteFloor {
    fn new(path: &std::path::Path, sync: &str) -> Self {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(&format!("PRAGMA journal_mode=WAL; PRAGMA synchronous={sync}; PRAGMA foreign_keys=ON;"))
            .unwrap();
        conn.execute_batch(include_str!("../../crates/agentstate-sql/sql/sqlite/schema.sql")).unwrap();
        let t = stamp(0);
        conn.execute("INSERT INTO sessions VALUES ('a','u','s','{}',?1,?1)", [&t]).unwrap();
        conn.execute("INSERT INTO user_states VALUES ('a','u','{}',?1)", [&t]).unwrap();
        Self { conn }
    }
}

impl Subject for SqliteFloor {
    async fn append(&mut self, i: usize, event: Event) {
        let (data, session, user) = split(&event);
        let id = format!("ev-{i}");
        let t = stamp(i + 1);
        let c = &self.conn;
        c.execute_batch("BEGIN").unwrap();
        c.prepare_cached("INSERT INTO events VALUES (?1,'a','u','s',?2,?3,?4)")
            .unwrap()
            .execute(rusqlite::params![id, event.invocation_id, t, data])
            .unwrap();
        let n = c.prepare_cached("UPDATE sessions SET state = json_patch(state, ?1), update_time = ?2 WHERE app_name='a' AND user_id='u' AND id='s'").unwrap().execute(rusqlite::params![session, t]).unwrap();
        let m = c.prepare_cached("UPDATE user_states SET state = json_patch(state, ?1), update_time = ?2 WHERE app_name='a' AND user_id='u'").unwrap().execute(rusqlite::params![user, t]).unwrap();
        assert_eq!(n + m, 2);
        c.execute_batch("COMMIT").unwrap();
    }
    async fn recent20(&mut self) {
        self.read(Some(20));
    }
    async fn full(&mut self) {
        self.read(None);
    }
}

impl SqliteFloor {
    fn read(&self, limit: Option<i64>) {
        let mut stmt = self.conn.prepare_cached("SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT ?1").unwrap();
        let rows = stmt
            .query_map([limit.unwrap_or(-1)], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
            })
            .unwrap();
        for row in rows {
            let (_, _, _, data) = row.unwrap();
            std::hint::black_box(serde_json::from_str::<Value>(&data).unwrap());
        }
    }
}

struct PgFloor {
    conn: sqlx::PgConnection,
}

impl PgFloor {
    async fn new(url: &str) -> Self {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::raw_sql("DROP TABLE IF EXISTS events, sessions, user_states, app_states, adk_internal_metadata CASCADE")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::raw_sql(include_str!("../../crates/agentstate-sql/sql/postgres/schema.sql"))
            .execute(&mut conn)
            .await
            .unwrap();
        let t = chrono::DateTime::from_timestamp_micros(1_795_000_000_000_000).unwrap().naive_utc();
        sqlx::query("INSERT INTO sessions VALUES ('a','u','s','{}',$1,$1)").bind(t).execute(&mut conn).await.unwrap();
        sqlx::query("INSERT INTO user_states VALUES ('a','u','{}',$1)").bind(t).execute(&mut conn).await.unwrap();
        Self { conn }
    }
}

impl Subject for PgFloor {
    async fn append(&mut self, i: usize, event: Event) {
        let (data, session, user) = split(&event);
        let t = chrono::DateTime::from_timestamp_micros(1_795_000_000_000_001 + i as i64).unwrap().naive_utc();
        let n: i64 = sqlx::query_scalar(
            "WITH e AS (INSERT INTO events VALUES ($1,'a','u','s',$2,$3,$4::jsonb)), \
             s AS (UPDATE sessions SET state = state || $5::jsonb, update_time = $3 WHERE app_name='a' AND user_id='u' AND id='s' RETURNING 1), \
             u AS (UPDATE user_states SET state = state || $6::jsonb, update_time = $3 WHERE app_name='a' AND user_id='u' RETURNING 1) \
             SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM u)",
        )
        .bind(format!("ev-{i}")).bind(&event.invocation_id).bind(t).bind(data).bind(session).bind(user)
        .fetch_one(&mut self.conn).await.unwrap();
        assert_eq!(n, 2);
    }
    async fn recent20(&mut self) {
        self.read(Some(20)).await;
    }
    async fn full(&mut self) {
        self.read(None).await;
    }
}

impl PgFloor {
    async fn read(&mut self, limit: Option<i64>) {
        use sqlx::Row;
        let rows = sqlx::query("SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name='a' AND user_id='u' AND session_id='s' ORDER BY timestamp DESC, id DESC LIMIT $1")
            .bind(limit).fetch_all(&mut self.conn).await.unwrap();
        for r in rows {
            std::hint::black_box(r.get::<sqlx::types::Json<Value>, _>(3).0);
        }
    }
}

// ---------------------------------------------------------------- report

fn report(name: &str, ours: &Growth, floor: &Growth) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("\n## {name}");
    println!("| measure | agentstate | floor | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| appends/s, 0→10k events, one writer | {:.0} | {:.0} | {:.2}× slower |",
        ours.rate,
        floor.rate,
        floor.rate / ours.rate
    );
    println!(
        "| median µs per append, last 1,000 | {:.1} | {:.1} | {:.2}× |",
        us(ours.last_1000_median),
        us(floor.last_1000_median),
        us(ours.last_1000_median) / us(floor.last_1000_median)
    );
    for (k, n) in CHECKPOINTS.iter().enumerate() {
        println!(
            "| get, 20 most recent, at {n} events (µs) | {:.0} | {:.0} | {:.2}× |",
            us(ours.recent20[k]),
            us(floor.recent20[k]),
            us(ours.recent20[k]) / us(floor.recent20[k])
        );
    }
    for (k, n) in CHECKPOINTS.iter().enumerate() {
        println!(
            "| get, all events, at {n} events (ms) | {:.2} | {:.2} | {:.2}× |",
            us(ours.full[k]) / 1e3,
            us(floor.full[k]) / 1e3,
            us(ours.full[k]) / us(floor.full[k])
        );
    }
}

fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("agentstate-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for sync in ["normal", "full"] {
            let name = format!("sqlite-{sync}");
            if !wants(&name) {
                continue;
            }
            let floor = grow(&mut SqliteFloor::new(&dir.join(format!("floor-{sync}.db")), sync)).await;
            let url = |tag: &str| format!("sqlite://{}/{tag}-{sync}.db?synchronous={sync}", dir.display());
            let ours = grow(&mut Ours::new(&url("ours")).await).await;
            report(&format!("SQLite, WAL, synchronous={}", sync.to_uppercase()), &ours, &floor);
            let concurrent = concurrent_ours(&url("concurrent")).await;
            println!("| {WRITERS} writers, {WRITERS} users, appends/s (group commit) | {concurrent:.0} | {:.0} (one writer) | {:.2}× the floor |", floor.rate, concurrent / floor.rate);
        }
        if wants("postgres") {
            use sqlx::Connection;
            let admin = std::env::var("AGENTSTATE_BENCH_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
            let db = format!("agentstate_bench_{}", std::process::id());
            let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}"))).execute(&mut conn).await.unwrap();
            let url = format!("{}/{db}", admin.rsplit_once('/').unwrap().0);
            let floor = grow(&mut PgFloor::new(&url).await).await;
            sqlx::raw_sql("DROP TABLE IF EXISTS events, sessions, user_states, app_states, adk_internal_metadata CASCADE").execute(&mut sqlx::PgConnection::connect(&url).await.unwrap()).await.unwrap();
            let ours = grow(&mut Ours::new(&url).await).await;
            report("PostgreSQL", &ours, &floor);
            let concurrent = concurrent_ours(&url).await;
            println!("| {WRITERS} writers, {WRITERS} users, appends/s | {concurrent:.0} | {:.0} (one writer) | {:.2}× the floor |", floor.rate, concurrent / floor.rate);
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE {db} WITH (FORCE)"))).execute(&mut conn).await.unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
