//! The cost of a run lease: what taking and giving back a session's lease costs on each backend,
//! next to a whole run of an agent (a scripted model: no network) on the same backend, measured in
//! the same process, one after the other.
//!
//! `cargo run --release -p agentstate-bench --bin lease_figures -- --backend sqlite --backend
//! postgres --backend mysql --backend redis` times `--runs` runs (each on a session of its own,
//! created beforehand: a user message and one answer, as `/run` stores them) and as many lease
//! round trips (acquire, then release), and prints their medians and p99s and the lease's share
//! of a run. The in-memory store always runs first.

use std::time::{Duration, Instant};

use agentstate::store::LeaseRequest;
use agentstate::{Content, CreateSession, SessionKey, SessionService};
use agentstate_bench::databases::Backend;
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{LlmAgent, Runner};
use clap::Parser;
use futures_util::TryStreamExt;

#[derive(Parser)]
struct Args {
    /// Backends to measure (the in-memory store always runs).
    #[arg(long, value_enum)]
    backend: Vec<Backend>,
    /// Runs (and lease round trips) timed per backend.
    #[arg(long, default_value_t = 500)]
    runs: usize,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn measure(service: SessionService, runs: usize) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let model = (0..runs + 10).fold(ScriptedModel::new("m"), |model, _| model.reply(LlmResponse::text("ok")));
    let agent = LlmAgent::builder("bench", model).instruction("Answer.").output_key("answer").build()?;
    let runner = Runner::new("bench", agent, service.clone());
    for i in 0..runs + 10 {
        service.create_session(CreateSession::new("bench", "u").id(format!("s{i}"))).await?;
    }
    let mut run_times = Vec::with_capacity(runs);
    for i in 0..runs + 10 {
        let started = Instant::now();
        let events: Vec<_> = runner.run("u", &format!("s{i}"), Content::text("user", "hi")).try_collect().await?;
        let took = started.elapsed();
        anyhow::ensure!(events.len() == 1, "a run answered {} events", events.len());
        if i >= 10 {
            run_times.push(took);
        }
    }
    let mut lease_times = Vec::with_capacity(runs);
    for i in 0..runs + 10 {
        let key = SessionKey::new("bench", "u", format!("s{i}"))?;
        let now_micros = service.now_micros();
        let request = LeaseRequest {
            key: key.clone(),
            holder: format!("h{i}"),
            now_micros,
            until_micros: now_micros + 30_000_000,
        };
        let started = Instant::now();
        service.leases().acquire_lease(&request).await?;
        service.leases().release_lease(&key, &request.holder).await?;
        let took = started.elapsed();
        if i >= 10 {
            lease_times.push(took);
        }
    }
    run_times.sort_unstable();
    lease_times.sort_unstable();
    Ok((run_times, lease_times))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    let dir = std::env::temp_dir().join(format!("agentstate-lease-figures-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!("| backend | run p50 | run p99 | lease p50 (take + give back) | lease p99 | lease / run (p50) |");
    println!("|---|---|---|---|---|---|");
    for backend in std::iter::once(None).chain(args.backend.iter().copied().map(Some)) {
        let (store, database) = agentstate_bench::databases::store_of(backend, &dir).await?;
        let (runs, leases) = measure(SessionService::shared(store), args.runs).await?;
        let (run_p50, lease_p50) = (percentile(&runs, 0.5), percentile(&leases, 0.5));
        println!(
            "| {} | {} | {} | {} | {} | {:.0} % |",
            backend.map_or("in-memory", Backend::name),
            ms(run_p50),
            ms(percentile(&runs, 0.99)),
            ms(lease_p50),
            ms(percentile(&leases, 0.99)),
            100.0 * lease_p50.as_secs_f64() / run_p50.as_secs_f64(),
        );
        if let Some(database) = database {
            database.remove().await?;
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
