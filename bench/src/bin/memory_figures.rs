//! Memory figures: ingest and search on agentstate's memory backends, and the same data written
//! as JSON lines for ADK for Python's memory services (`bench/memory_reference.py`), so that both
//! sides search one corpus.
//!
//! `cargo run --release -p agentstate-bench --bin memory_figures -- --memories 10000,100000
//! --backend sqlite --backend postgres --export /tmp/memories` ingests, for each size, that many
//! memories of one user (sessions of 20 events, 12 words each from a 5,000-word vocabulary),
//! then, for "across a large app", the same number spread over 1,000 other users of the app, and
//! times 200 two-word searches of the one user (p50, p99), each figure next to the in-memory
//! store's on the same data (the floor: a scan of the user's memories, as ADK's in-memory
//! service does).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentstate::memory::{MemoryOptions, MemoryOwner, MemoryService};
use agentstate::{Content, Event, SessionService};
use agentstate_bench::databases::Backend;
use agentstate_bench::words::Words;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Memory counts of the one user, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    memories: Vec<usize>,
    /// Backends to measure (the in-memory store always runs, as the floor).
    #[arg(long, value_enum)]
    backend: Vec<Backend>,
    /// Searches timed per figure.
    #[arg(long, default_value_t = 200)]
    searches: usize,
    /// Write each corpus as JSON lines here (`memories-N.jsonl`, `queries.jsonl`).
    #[arg(long)]
    export: Option<PathBuf>,
    /// Measure "across a large app" only up to this many memories of the user.
    #[arg(long, default_value_t = usize::MAX)]
    spread_up_to: usize,
    /// Keep the databases (their URLs on stderr), to look at the data afterwards.
    #[arg(long)]
    keep: bool,
}

/// The events of a corpus: sessions of 20 events.
fn corpus(count: usize, seed: u64) -> Vec<(String, Vec<Event>)> {
    let mut words = Words::new(seed);
    let mut sessions = Vec::new();
    for s in 0..count.div_ceil(20) {
        let events = (0..20.min(count - s * 20))
            .map(|i| {
                let author = if i % 2 == 0 { "user" } else { "agent" };
                let mut event = Event::new("inv").author(author).content(Content::text("user", words.sentence(12)));
                event.id = format!("s{s}-e{i}");
                event
            })
            .collect();
        sessions.push((format!("s{s}"), events));
    }
    sessions
}

fn export(dir: &std::path::Path, name: &str, user: &str, sessions: &[(String, Vec<Event>)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(name))?);
    for (session, events) in sessions {
        for event in events {
            let line = serde_json::json!({"user": user, "session": session, "id": event.id, "author": event.author,
                                          "timestamp": event.timestamp, "text": event.text()});
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

async fn ingest(
    memory: &MemoryService,
    owner: &MemoryOwner,
    sessions: &[(String, Vec<Event>)],
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    for (session, events) in sessions {
        memory.add_events(owner, Some(session), events, &MemoryOptions::default()).await?;
    }
    Ok(started.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn searches(
    memory: &MemoryService,
    owner: &MemoryOwner,
    queries: &[String],
) -> anyhow::Result<(Duration, Duration)> {
    let mut times = Vec::with_capacity(queries.len());
    for query in queries {
        let started = Instant::now();
        memory.search(owner, query, None).await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok((percentile(&times, 0.5), percentile(&times, 0.99)))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut query_words = Words::new(7);
    let queries: Vec<String> = (0..args.searches).map(|_| query_words.sentence(2)).collect();
    if let Some(dir) = &args.export {
        std::fs::create_dir_all(dir)?;
        let mut out = std::fs::File::create(dir.join("queries.jsonl"))?;
        for query in &queries {
            writeln!(out, "{}", serde_json::json!(query))?;
        }
    }
    let dir = std::env::temp_dir().join(format!("agentstate-memory-figures-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!(
        "| memories of the user | spread | backend | ingest | memories/s | search p50 | search p99 | p50 speed vs in-memory |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &count in &args.memories {
        let mine = corpus(count, 1);
        let others: Vec<(String, Vec<Event>)> = corpus(count, 2);
        if let Some(out) = &args.export {
            export(out, &format!("memories-{count}.jsonl"), "u0", &mine)?;
            export(out, &format!("others-{count}.jsonl"), "others", &others)?;
        }
        for spread in [false, true].into_iter().filter(|&spread| !spread || count <= args.spread_up_to) {
            let mut floor = None;
            for backend in std::iter::once(None).chain(args.backend.iter().copied().map(Some)) {
                let (store, database) = agentstate_bench::databases::store_of(backend, &dir).await?;
                let memory = MemoryService::new(SessionService::shared(store));
                let owner = MemoryOwner::new("bench", "u0")?;
                if spread {
                    // The app's other users: the same number of memories over 1,000 of them.
                    for (i, chunk) in others.chunks(others.len().div_ceil(1000).max(1)).enumerate() {
                        ingest(&memory, &MemoryOwner::new("bench", format!("other{i}"))?, chunk).await?;
                    }
                }
                let took = ingest(&memory, &owner, &mine).await?;
                let (p50, p99) = searches(&memory, &owner, &queries).await?;
                let name = backend.map_or("in-memory", Backend::name);
                let floor_p50 = *floor.get_or_insert(p50);
                println!(
                    "| {count} | {} | {name} | {:.1} s | {:.0} | {} | {} | {:.2}× |",
                    if spread { "+ as many over 1,000 other users" } else { "one user" },
                    took.as_secs_f64(),
                    count as f64 / took.as_secs_f64(),
                    ms(p50),
                    ms(p99),
                    floor_p50.as_secs_f64() / p50.as_secs_f64(),
                );
                match database {
                    Some(database) if args.keep => eprintln!("kept: {}", database.url),
                    Some(database) => database.remove().await?,
                    None => {}
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
