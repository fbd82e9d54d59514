//! Data lifecycle: what encryption at rest costs, and what an expiry sweep costs the requests
//! served while it runs. Every figure next to its baseline, measured in the same run.
//!
//! - Encryption: append, get the 20 most recent and get all of a 1,000-event session, through
//!   `EncryptedStore` and without it, on the in-memory store and on SQLite
//!   (`synchronous=normal`); medians, interleaved.
//! - Sweep: 100,000 expired sessions (and 1,000 live ones) on SQLite, removed by
//!   the server's paced sweep (`agentstate_server::sweep`) while one writer appends to a live session; the writer's
//!   latency during the sweep next to its latency just before it.
//!
//! Run: `cargo bench -p agentstate-bench --bench lifecycle` (`-- --sessions N` for another sweep size).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentstate::crypt::{EncryptedStore, KeyRing};
use agentstate::{CreateSession, GetSessionConfig, InMemoryStore, SessionService};
use agentstate_bench::{make_event, median};
use agentstate_sql::SqlStore;

const EVENTS: usize = 1_000;
const READS: usize = 100;

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 * p) as usize).min(samples.len().saturating_sub(1));
    samples.get(i).copied().unwrap_or_default()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Appends, then reads, on `plain` and `encrypted` interleaved; prints a row per operation.
async fn encryption(name: &str, plain: SessionService, encrypted: SessionService) {
    let mut a = plain.create_session(CreateSession::new("bench", "u")).await.unwrap();
    let mut b = encrypted.create_session(CreateSession::new("bench", "u")).await.unwrap();
    let (mut append_plain, mut append_enc) = (Vec::new(), Vec::new());
    for i in 0..EVENTS {
        let t = Instant::now();
        plain.append_event(&mut a, make_event(i)).await.unwrap();
        append_plain.push(t.elapsed());
        let t = Instant::now();
        encrypted.append_event(&mut b, make_event(i)).await.unwrap();
        append_enc.push(t.elapsed());
    }
    let mut rows = vec![("append (session growing to 1,000 events)", median(append_plain), median(append_enc))];
    for (label, config) in [
        ("get 20 most recent of 1,000", GetSessionConfig::recent(20)),
        ("get all 1,000 events", GetSessionConfig::default()),
    ] {
        let (mut p, mut e) = (Vec::new(), Vec::new());
        for _ in 0..READS {
            let t = Instant::now();
            plain.get_session(a.key(), config).await.unwrap().unwrap();
            p.push(t.elapsed());
            let t = Instant::now();
            encrypted.get_session(b.key(), config).await.unwrap().unwrap();
            e.push(t.elapsed());
        }
        rows.push((label, median(p), median(e)));
    }
    for (label, p, e) in rows {
        println!("| {name} | {label} | {:.1} µs | {:.1} µs | {:.2}× |", us(p), us(e), us(e) / us(p));
    }
}

/// One writer appending to a live session until `stop`; its latencies.
async fn writer(service: SessionService, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let mut session = service.create_session(CreateSession::new("bench", "writer")).await.unwrap();
    let mut latencies = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        service.append_event(&mut session, make_event(i)).await.unwrap();
        latencies.push(t.elapsed());
        i += 1;
    }
    latencies
}

async fn sweep(sessions: usize, batch: usize) {
    let dir = std::env::temp_dir().join(format!("agentstate-bench-lifecycle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}/sweep.db?synchronous=normal", dir.display());
    let service: SessionService = SessionService::new(SqlStore::connect(&url).await.unwrap());
    let expired_at = agentstate::store::now_secs() - 60.0;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for part in 0..4 {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            for i in (part..sessions).step_by(4) {
                let request = CreateSession::new("bench", format!("user{}", i % 1000))
                    .id(format!("old{i}"))
                    .expire_time(expired_at);
                service.create_session(request).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for i in 0..1000 {
        service.create_session(CreateSession::new("bench", format!("user{i}")).id(format!("live{i}"))).await.unwrap();
    }
    eprintln!("created {sessions} expired and 1,000 live sessions in {:.1} s", start.elapsed().as_secs_f64());

    // The writer alone, then the writer with the sweep.
    let stop = Arc::new(AtomicBool::new(false));
    let alone = tokio::spawn(writer(service.clone(), Arc::clone(&stop)));
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let before = alone.await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let during = tokio::spawn(writer(service.clone(), Arc::clone(&stop)));
    let t = Instant::now();
    let metrics = agentstate_server::Metrics::default();
    let removed = agentstate_server::sweep(&service, batch, &metrics).await.unwrap();
    let took = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    let during = during.await.unwrap();
    assert_eq!(removed, sessions, "every expired session, and only those");
    let live = service.list_sessions(agentstate::ListSessions::app("bench")).await.unwrap().sessions.len();
    assert_eq!(live, 1000 + 2, "the live sessions and the two writers' stay");

    println!("\n| sweep of {sessions} expired sessions (SQLite, synchronous=normal, batches of {batch}, paced) | |");
    println!("|---|---|");
    println!("| time | {:.2} s ({:.0} sessions/s) |", took.as_secs_f64(), sessions as f64 / took.as_secs_f64());
    println!(
        "| a concurrent writer's append, median / p99, before the sweep | {:.0} µs / {:.0} µs ({} appends) |",
        us(median(before.clone())),
        us(percentile(before.clone(), 0.99)),
        before.len()
    );
    println!(
        "| the same during the sweep | {:.0} µs / {:.0} µs ({} appends; {:.2}× / {:.2}×) |",
        us(median(during.clone())),
        us(percentile(during.clone(), 0.99)),
        during.len(),
        us(median(during.clone())) / us(median(before.clone())),
        us(percentile(during.clone(), 0.99)) / us(percentile(before, 0.99))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sessions = args
        .iter()
        .position(|a| a == "--sessions")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let keys = || KeyRing::parse(&KeyRing::generate("k1").unwrap()).unwrap();
        println!("| store | operation | plain | encrypted | ratio |");
        println!("|---|---|---|---|---|");
        let plain = SessionService::in_memory();
        let encrypted = SessionService::new(EncryptedStore::open(InMemoryStore::new(), keys()).await.unwrap());
        encryption("in-memory", plain, encrypted).await;

        let dir = std::env::temp_dir().join(format!("agentstate-bench-enc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = |name: &str| format!("sqlite://{}/{name}.db?synchronous=normal", dir.display());
        let plain = SessionService::new(SqlStore::connect(&url("plain")).await.unwrap());
        let inner = SqlStore::connect(&url("encrypted")).await.unwrap();
        let encrypted = SessionService::new(EncryptedStore::open(inner, keys()).await.unwrap());
        encryption("SQLite", plain, encrypted).await;
        let _ = std::fs::remove_dir_all(&dir);

        let batch = args
            .iter()
            .position(|a| a == "--batch")
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(agentstate_server::SWEEP_BATCH);
        sweep(sessions, batch).await;
    });
}
