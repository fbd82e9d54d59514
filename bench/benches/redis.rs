//! Redis: appends and loads of agentstate's Redis service next to the floor, the bare Redis
//! commands the same layout needs, pipelined through the same client (no script, no checks, no
//! atomicity), measured in the same run on the same Redis; then ADK for Python's
//! `RedisSessionService` (google-adk 2.13.0) on the same Redis, when `.venv-adk` has it.
//!
//! Workload (as the SQL benchmark): an event with one text part and a 3-key delta, one key
//! `user:`; one session grown from 0 to 10,000 events; loads of the 20 most recent and of all
//! events at 10, 100, 1,000 and 10,000 events; then 8 writers on 8 sessions of 8 users at once.
//!
//! Floors: an append is one pipeline (`ZADD` + `HSET` of the event, `HSET` of the session's and
//! the user's keys, the marker, the two list entries); a load of all events is one pipeline
//! (`HGETALL` of the metadata and the three states, `HVALS` of the events); a load of the 20 most
//! recent takes two (the same, then `HMGET` of the ids `ZRANGE` gave). Floor reads parse each
//! event into `serde_json::Value`; the service builds typed events and the merged state.
//!
//! Run: `cargo bench -p agentstate-bench --bench redis` (Redis from `AGENTSTATE_BENCH_REDIS`,
//! default `redis://127.0.0.1:6379/0`; keys under a throwaway prefix, removed at the end).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstate::{CreateSession, Event, GetSessionConfig, SessionService, Value};
use agentstate_bench::{make_event, median};
use agentstate_redis::RedisSessionService;
use redis::aio::ConnectionManager;

const N: usize = 10_000;
const CHECKPOINTS: [usize; 4] = [10, 100, 1_000, 10_000];
const WRITERS: usize = 8;
const PER_WRITER: usize = 500;

#[derive(Default)]
struct Growth {
    rate: f64,
    /// Median append latency over the appends just before each checkpoint.
    append: Vec<Duration>,
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
            let window = (i + 1).div_ceil(10).max(10).min(i + 1);
            g.append.push(median(lat[i + 1 - window..].to_vec()));
            let mut r = Vec::new();
            for _ in 0..100 {
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
    g
}

// ---------------------------------------------------------------- agentstate

struct Ours {
    svc: Arc<RedisSessionService>,
    session: agentstate::Session,
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

async fn concurrent_ours(svc: Arc<RedisSessionService>) -> f64 {
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

// ---------------------------------------------------------------- floor

/// The floor's keys for one session (the service's layout, written without its script).
struct Floor {
    connection: ConnectionManager,
    keys: [String; 8], // meta, state, app, user, times, data, sessions, user sessions
    sid: String,
}

impl Floor {
    async fn new(url: &str, prefix: &str, user: &str) -> Self {
        let connection = ConnectionManager::new(redis::Client::open(url).unwrap()).await.unwrap();
        let base = format!("{prefix}{{floor}}:");
        let keys = [
            format!("{base}m:{user}:s"),
            format!("{base}s:{user}:s"),
            format!("{base}app"),
            format!("{base}u:{user}"),
            format!("{base}e:{user}:s"),
            format!("{base}d:{user}:s"),
            format!("{base}sessions"),
            format!("{base}us:{user}"),
        ];
        Self { connection, keys, sid: "s".to_owned() }
    }

    async fn read(&mut self, recent: Option<isize>) {
        let [meta, state, app, user, times, data, ..] = &self.keys;
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(meta).cmd("HGETALL").arg(state).cmd("HGETALL").arg(app).cmd("HGETALL").arg(user);
        match recent {
            Some(n) => pipe.cmd("ZRANGE").arg(times).arg(-n).arg(-1),
            None => pipe.cmd("HVALS").arg(data),
        };
        let mut replies: Vec<Vec<Vec<u8>>> = pipe.query_async(&mut self.connection).await.unwrap();
        let tail = replies.pop().unwrap();
        std::hint::black_box(replies);
        let events = match recent {
            Some(_) => redis::cmd("HMGET").arg(data).arg(tail).query_async(&mut self.connection).await.unwrap(),
            None => tail,
        };
        for event in events {
            std::hint::black_box(serde_json::from_slice::<Value>(&event).unwrap());
        }
    }
}

impl Subject for Floor {
    async fn append(&mut self, i: usize, event: Event) {
        let [meta, state, _, user, times, data, sessions, user_sessions] = &self.keys;
        let ts = 1_795_000_000_000_000_i64 + i as i64;
        let mut event = event;
        if event.id.is_empty() {
            event.id = format!("ev-{i}");
        }
        let mut pipe = redis::pipe();
        pipe.cmd("ZADD").arg(times).arg(ts).arg(&event.id).ignore();
        pipe.cmd("HSET").arg(data).arg(&event.id).arg(serde_json::to_string(&event).unwrap()).ignore();
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
        pipe.cmd("ZADD").arg(sessions).arg(ts).arg(format!("u\0{}", self.sid)).ignore();
        pipe.cmd("ZADD").arg(user_sessions).arg(ts).arg(&self.sid).ignore();
        let () = pipe.query_async(&mut self.connection).await.unwrap();
    }
    async fn recent20(&mut self) {
        self.read(Some(20)).await;
    }
    async fn full(&mut self) {
        self.read(None).await;
    }
}

async fn concurrent_floor(url: &str, prefix: &str) -> f64 {
    let start = Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (url, prefix) = (url.to_owned(), prefix.to_owned());
            tokio::spawn(async move {
                let mut floor = Floor::new(&url, &format!("{prefix}c:"), &format!("writer{w}")).await;
                for i in 0..PER_WRITER {
                    floor.append(i, make_event(i)).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    (WRITERS * PER_WRITER) as f64 / start.elapsed().as_secs_f64()
}

// ---------------------------------------------------------------- report

fn report(ours: &Growth, floor: &Growth) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("\n## Redis");
    println!("| measure | agentstate | floor | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| appends/s, 0→10k events, one writer | {:.0} | {:.0} | {:.2}× slower |",
        ours.rate,
        floor.rate,
        floor.rate / ours.rate
    );
    for (k, n) in CHECKPOINTS.iter().enumerate() {
        println!(
            "| append, median µs, just before {n} events | {:.1} | {:.1} | {:.2}× |",
            us(ours.append[k]),
            us(floor.append[k]),
            us(ours.append[k]) / us(floor.append[k])
        );
    }
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

/// ADK for Python's RedisSessionService on the same Redis, if `.venv-adk` is there.
fn reference(url: &str, prefix: &str) {
    let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv-adk/bin/python");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/redis_reference.py");
    if !std::path::Path::new(python).exists() {
        println!("\n(ADK for Python's RedisSessionService not measured: run `bash .ci/setup-adk` first)");
        return;
    }
    println!("\n## ADK for Python 2.13.0, RedisSessionService, same Redis, same workload");
    let status = Command::new(python).arg(script).arg(url).arg(format!("{prefix}adk:")).status().unwrap();
    assert!(status.success(), "the reference's benchmark failed");
}

async fn remove(url: &str, prefix: &str) {
    let mut connection = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut connection)
            .await
            .unwrap();
        if !keys.is_empty() {
            let () = redis::cmd("UNLINK").arg(keys).query_async(&mut connection).await.unwrap();
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let url = std::env::var("AGENTSTATE_BENCH_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
    let prefix = format!("agentstate-bench-{}:", std::process::id());
    rt.block_on(async {
        let floor = grow(&mut Floor::new(&url, &prefix, "u").await).await;
        let svc = Arc::new(RedisSessionService::connect(&format!("{url}?prefix={prefix}")).await.unwrap());
        let session = svc.create_session(CreateSession::new("bench_app", "bench_user")).await.unwrap();
        let ours = grow(&mut Ours { svc: Arc::clone(&svc), session }).await;
        report(&ours, &floor);
        let concurrent = concurrent_ours(svc).await;
        let concurrent_floor = concurrent_floor(&url, &prefix).await;
        println!(
            "| {WRITERS} writers, {WRITERS} users, appends/s | {concurrent:.0} | {concurrent_floor:.0} | {:.2}× slower |",
            concurrent_floor / concurrent
        );
        reference(&url, &prefix);
        remove(&url, &prefix).await;
    });
}
