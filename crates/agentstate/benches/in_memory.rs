//! In-memory service: create, append (an event with a text part and a 3-key delta, one of them
//! `user:`) and get (full and 20 most recent) at 10, 100, 1k and 10k events.
//!
//! The baseline ("floor") is the bare data-structure work of the same operations measured in the
//! same run: a map of vectors behind a mutex, pushing `Arc<Event>`s and merging the delta, with
//! no validation, scoping, copies for the caller or stale checks. The summary printed at the end
//! gives every figure as a ratio to its floor.
//!
//! Run: `cargo bench -p agentstate --bench in_memory`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentstate::{
    Content, CreateSession, Event, GetSessionConfig, InMemorySessionService, Map, Session, SessionService, Value,
};
use criterion::{BenchmarkId, Criterion};
use serde_json::json;

const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

fn make_event(i: usize) -> Event {
    Event::new(format!("inv-{}", i / 10))
        .author(if i.is_multiple_of(2) { "user" } else { "bench_agent" })
        .content(Content::text(
            if i.is_multiple_of(2) { "user" } else { "model" },
            format!("message number {i} of the bench"),
        ))
        .delta("step", json!(i))
        .delta("last_text", json!(format!("text {i}")))
        .delta("user:turns", json!(i))
}

async fn grown(service: &InMemorySessionService, n: usize) -> Session {
    let mut session = service.create_session(CreateSession::new("bench_app", "bench_user")).await.unwrap();
    for i in 0..n {
        service.append_event(&mut session, make_event(i)).await.unwrap();
    }
    session
}

/// The floor: what an append and a get must do at the least.
type FloorSession = (Map<String, Value>, Vec<Arc<Event>>);

#[derive(Default)]
struct Floor {
    sessions: Mutex<HashMap<String, FloorSession>>,
    users: Mutex<HashMap<String, Map<String, Value>>>,
}

impl Floor {
    fn append(&self, id: &str, event: Event) {
        let event = Arc::new(event);
        let mut sessions = self.sessions.lock().unwrap();
        let (state, events) = sessions.entry(id.to_owned()).or_default();
        let mut users = self.users.lock().unwrap();
        let user = users.entry("u".to_owned()).or_default();
        for (k, v) in &event.actions.state_delta {
            match k.strip_prefix("user:") {
                Some(rest) => user.insert(rest.to_owned(), v.clone()),
                None => state.insert(k.clone(), v.clone()),
            };
        }
        events.push(event);
    }

    fn get(&self, id: &str, recent: Option<usize>) -> FloorSession {
        let sessions = self.sessions.lock().unwrap();
        let (state, events) = &sessions[id];
        let start = recent.map_or(0, |n| events.len().saturating_sub(n));
        (state.clone(), events[start..].to_vec())
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();

    let mut group = c.benchmark_group("create");
    let service = InMemorySessionService::new();
    group.bench_function("service", |b| {
        b.to_async(&rt).iter(|| async { service.create_session(CreateSession::new("bench_app", "u")).await.unwrap() });
    });
    let floor = Floor::default();
    group.bench_function("floor", |b| {
        b.iter(|| floor.append(&agentstate::Event::new_id(), Event::new("")));
    });
    group.finish();

    let mut group = c.benchmark_group("append");
    for n in SIZES {
        // Each timed batch appends n/2 events (at least 10) to a session grown to n beforehand,
        // so the figure is the cost of an append to a session of n to 1.5n events.
        let batch = (n / 2).max(10);
        group.bench_with_input(BenchmarkId::new("service", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    let mut done = 0;
                    while done < iters {
                        let service = InMemorySessionService::new();
                        let mut session = grown(&service, n).await;
                        // Build exactly the events that will be timed: dropping unused ones
                        // inside the timed region would be charged to the appends.
                        let count = batch.min((iters - done) as usize);
                        let events: Vec<Event> = (n..n + count).map(make_event).collect();
                        let start = Instant::now();
                        for e in events {
                            black_box(service.append_event(&mut session, e).await.unwrap());
                        }
                        total += start.elapsed();
                        done += count as u64;
                    }
                    total
                })
            });
        });
        group.bench_with_input(BenchmarkId::new("floor", n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let floor = Floor::default();
                    (0..n).for_each(|i| floor.append("s", make_event(i)));
                    let count = batch.min((iters - done) as usize);
                    let events: Vec<Event> = (n..n + count).map(make_event).collect();
                    let start = Instant::now();
                    for e in events {
                        floor.append("s", e);
                    }
                    total += start.elapsed();
                    done += count as u64;
                }
                total
            });
        });
    }
    group.finish();

    for (name, recent) in [("get_full", None), ("get_recent20", Some(20))] {
        let mut group = c.benchmark_group(name);
        for n in SIZES {
            let service = InMemorySessionService::new();
            let session = rt.block_on(grown(&service, n));
            let config = GetSessionConfig { num_recent_events: recent, after_timestamp: None };
            group.bench_with_input(BenchmarkId::new("service", n), &n, |b, _| {
                b.to_async(&rt).iter(|| async { service.get_session(session.key(), config).await.unwrap() });
            });
            let floor = Floor::default();
            (0..n).for_each(|i| floor.append("s", make_event(i)));
            group.bench_with_input(BenchmarkId::new("floor", n), &n, |b, _| b.iter(|| floor.get("s", recent)));
        }
        group.finish();
    }
}

/// Reads criterion's median estimate (ns) for one benchmark.
fn median_ns(group: &str, id: &str) -> Option<f64> {
    let dir = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").into());
    let path = format!("{dir}/criterion/{group}/{id}/new/estimates.json");
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    raw["median"]["point_estimate"].as_f64()
}

fn summary() {
    println!("\n{:<14} {:>7} {:>14} {:>14} {:>8}", "operation", "events", "service", "floor", "ratio");
    let mut rows = vec![("create".to_owned(), "service".to_owned(), "floor".to_owned(), "-".to_owned())];
    for group in ["append", "get_full", "get_recent20"] {
        for n in SIZES {
            rows.push((group.to_owned(), format!("service/{n}"), format!("floor/{n}"), n.to_string()));
        }
    }
    for (group, service, floor, n) in rows {
        if let (Some(s), Some(f)) = (median_ns(&group, &service), median_ns(&group, &floor)) {
            println!("{group:<14} {n:>7} {:>11.2} µs {:>11.2} µs {:>7.2}×", s / 1e3, f / 1e3, s / f);
        }
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    summary();
}
