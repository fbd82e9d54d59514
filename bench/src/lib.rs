//! What agentstate's benchmarks share: the workload's event, medians, criterion's results, the
//! table of figures with their ratio to the floor measured in the same run, and throwaway
//! databases ([`databases`]).
//!
//! The side-by-side harness, `bench/side-by-side [quick|full]`, runs agentstate's SQL, Redis and
//! in-memory services, their floors and ADK for Python 2.13.0 on one workload, and both HTTP
//! servers under load (`src/bin/side_by_side/` is agentstate's half; `side_by_side/` the rest).
//! The benchmarks: `cargo bench -p agentstate-bench --bench in_memory` (the in-memory service),
//! `--bench runner` (the agent runtime), `--bench vertex` (the managed-service API over HTTP),
//! `--bench history` (history questions on a long session), `--bench lifecycle` (encryption at
//! rest on and off; an expiry sweep under load), `--bench wire` (the body of a session GET: the
//! streaming writer, the tree conversion it replaced, and the floor), `--bench grpc` (`ListEvents`'
//! reply built from events, the transcoding it replaced, and the REST answer as the floor). `src/bin/soak.rs` is the
//! soak run.

pub mod databases;
pub mod words;

use std::path::PathBuf;
use std::time::Duration;

use agentstate::{Content, CreateSession, Event, GetSessionConfig, Session, SessionService, Value};
use criterion::Criterion;
use serde_json::json;

/// Runs the criterion benchmarks `bench` (with the command line's options), then prints
/// `summary`, which reads their results.
pub fn run_criterion(bench: fn(&mut Criterion), summary: fn()) {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    summary();
}

/// A session of the in-memory service with the workload's first `n` events, read back whole.
///
/// # Panics
/// If the in-memory service fails, which it does not.
#[allow(clippy::unwrap_used)]
pub fn grown_session(n: usize) -> Session {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let service = SessionService::in_memory();
        let mut session = service.create_session(CreateSession::new("bench_app", "bench_user")).await.unwrap();
        for i in 0..n {
            service.append_event(&mut session, make_event(i)).await.unwrap();
        }
        service.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap()
    })
}

/// The workload's `i`-th event: one text part, alternately the user's and the agent's, and a
/// 3-key delta of which one key is `user:`.
pub fn make_event(i: usize) -> Event {
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

/// The median of `samples` (the upper one of an even count); zero for none.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// criterion's median estimate, in nanoseconds, of the benchmark `id` of `group` in this run.
pub fn criterion_median_ns(group: &str, id: &str) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")), PathBuf::from);
    let path = target.join("criterion").join(group).join(id).join("new").join("estimates.json");
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    raw["median"]["point_estimate"].as_f64()
}

/// One row of a report: its labels, the measured figure and the floor's, in nanoseconds.
#[derive(Debug, Clone)]
pub struct Row {
    /// The row's label columns.
    pub labels: Vec<String>,
    /// What agentstate took.
    pub measured_ns: f64,
    /// What the floor took.
    pub floor_ns: f64,
}

/// Prints `rows` as a table: the label columns (headed by `labels`), then the measured figure,
/// the floor and their ratio, in microseconds.
pub fn print_ratios(labels: &[&str], measured: &str, rows: &[Row]) {
    let mut header: Vec<String> = labels.iter().map(|l| format!("{l:<14}")).collect();
    header.push(format!("{measured:>14} {:>14} {:>8}", "floor", "ratio"));
    println!("\n{}", header.join(" "));
    for row in rows {
        let mut line: Vec<String> = row.labels.iter().map(|l| format!("{l:<14}")).collect();
        line.push(format!(
            "{:>11.2} µs {:>11.2} µs {:>7.2}×",
            row.measured_ns / 1e3,
            row.floor_ns / 1e3,
            row.measured_ns / row.floor_ns
        ));
        println!("{}", line.join(" "));
    }
}

/// The rows of the criterion benchmarks `(labels, group, measured id, floor id)` that ran.
pub fn criterion_rows(specs: impl IntoIterator<Item = (Vec<String>, String, String, String)>) -> Vec<Row> {
    specs
        .into_iter()
        .filter_map(|(labels, group, measured, floor)| {
            Some(Row {
                labels,
                measured_ns: criterion_median_ns(&group, &measured)?,
                floor_ns: criterion_median_ns(&group, &floor)?,
            })
        })
        .collect()
}
