//! In-memory service: create, append (an event with a text part and a 3-key delta, one of them
//! `user:`) and get (full and 20 most recent) at 10, 100, 1k and 10k events.
//!
//! The baseline ("floor") is the bare data-structure work of the same operations measured in the
//! same run: a map of vectors behind a mutex, pushing `Arc<Event>`s and merging the delta, with
//! no validation, scoping, copies for the caller or stale checks. The summary printed at the end
//! gives every figure as a ratio to its floor.
//!
//! Run: `cargo bench -p agentstate-bench --bench in_memory`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentstate::{CreateSession, Event, GetSessionConfig, Map, Session, SessionService, Value};
use agentstate_bench::{criterion_rows, make_event, print_ratios};
use criterion::{BenchmarkId, Criterion};

const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

async fn grown(service: &SessionService, n: usize) -> Session {
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
    let service = SessionService::in_memory();
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
                        let service = SessionService::in_memory();
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
            let service = SessionService::in_memory();
            let session = rt.block_on(grown(&service, n));
            let config =
                GetSessionConfig { num_recent_events: recent, after_timestamp: None, ..GetSessionConfig::default() };
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

fn summary() {
    let mut specs =
        vec![(vec!["create".to_owned(), "-".to_owned()], "create".to_owned(), "service".into(), "floor".into())];
    for group in ["append", "get_full", "get_recent20"] {
        for n in SIZES {
            let labels = vec![group.to_owned(), n.to_string()];
            specs.push((labels, group.to_owned(), format!("service/{n}"), format!("floor/{n}")));
        }
    }
    print_ratios(&["operation", "events"], "service", &criterion_rows(specs));
}

fn main() {
    agentstate_bench::run_criterion(bench, summary);
}
