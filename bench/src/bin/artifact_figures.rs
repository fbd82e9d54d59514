//! Saving and loading artifacts: `ArtifactService::save` and `load` of payloads of each size on
//! each store, next to the floor of writing the same bytes to a file (and flushing them to disk,
//! as the filesystem store and the databases do) and reading them back, measured in the same run.
//!
//! `cargo run --release -p agentstate-bench --bin artifact_figures -- --backend sqlite --backend
//! postgres --backend files` prints, per store and size, the median save and load and how many
//! times the floor's each is. `files` is the filesystem store (payloads of 64 KiB and more in
//! files) over a SQLite index. The in-memory store always runs. Each size is saved `--rounds`
//! times (fewer for large ones: at most 256 MiB written per size and store, so the floor is not
//! timed behind gigabytes of its own dirty pages), after one unmeasured save and load.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstate::artifact::{ArtifactScope, ArtifactService};
use agentstate::store::SessionStore;
use agentstate::{Blob, Part, SessionService};
use agentstate_bench::databases::{Backend, Database};
use clap::Parser;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Store {
    Sqlite,
    Postgres,
    Mysql,
    Redis,
    /// Payloads in files beside a SQLite index.
    Files,
}

#[derive(Parser)]
struct Args {
    /// Stores to measure (the in-memory store always runs).
    #[arg(long = "backend", value_enum)]
    stores: Vec<Store>,
    /// Payload sizes in bytes.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000, 1_000_000, 50_000_000])]
    sizes: Vec<usize>,
    /// Saves and loads timed per size and store.
    #[arg(long, default_value_t = 30)]
    rounds: usize,
}

fn rounds_for(size: usize, rounds: usize) -> usize {
    rounds.min((256 << 20) / size.max(1)).max(3)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn shown(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 { format!("{ms:.3} ms") } else { format!("{ms:.0} ms") }
}

fn human(size: usize) -> String {
    match size {
        s if s >= 1_000_000 => format!("{} MB", s / 1_000_000),
        s if s >= 1_000 => format!("{} KB", s / 1_000),
        s => format!("{s} B"),
    }
}

/// Bytes that do not compress: a simple generator, so every run writes the same.
fn payload(size: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// The floor: the bytes written to a new file and flushed, then read back.
fn floor(dir: &std::path::Path, bytes: &[u8], rounds: usize) -> anyhow::Result<(Duration, Duration)> {
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    for i in 0..=rounds {
        let path = dir.join(format!("floor-{i}"));
        let started = Instant::now();
        let mut file = std::fs::File::create_new(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        let wrote = started.elapsed();
        let started = Instant::now();
        let back = std::fs::read(&path)?;
        let read = started.elapsed();
        anyhow::ensure!(back.len() == bytes.len(), "the floor read back {} bytes", back.len());
        if i > 0 {
            writes.push(wrote);
            reads.push(read);
        }
    }
    Ok((median(writes), median(reads)))
}

async fn measure(store: Arc<dyn SessionStore>, bytes: &[u8], rounds: usize) -> anyhow::Result<(Duration, Duration)> {
    let artifacts = ArtifactService::new(SessionService::shared(store)).with_max_bytes(usize::MAX);
    let blob = Blob {
        mime_type: Some("application/octet-stream".into()),
        data: Some(agentstate::artifact::model::encode_base64(bytes)),
        ..Blob::default()
    };
    let part = Part { inline_data: Some(blob), ..Part::default() };
    let (mut saves, mut loads) = (Vec::new(), Vec::new());
    for i in 0..=rounds {
        let session = format!("s{i}");
        let scope = ArtifactScope::new("bench", "u", Some(&session));
        let started = Instant::now();
        artifacts.save(scope, "blob.bin", &part, None).await?;
        let saved = started.elapsed();
        let started = Instant::now();
        let loaded = artifacts.load(scope, "blob.bin", None).await?;
        let load = started.elapsed();
        anyhow::ensure!(loaded.as_ref() == Some(&part), "artifact {i} did not load as saved");
        if i > 0 {
            saves.push(saved);
            loads.push(load);
        }
    }
    Ok((median(saves), median(loads)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    let dir = std::env::temp_dir().join(format!("agentstate-artifact-figures-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!("| store | size | save p50 | load p50 | save / floor | load / floor |");
    println!("|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let bytes = payload(size);
        let rounds = rounds_for(size, args.rounds);
        let floor_dir = dir.join(format!("floor-{size}"));
        std::fs::create_dir_all(&floor_dir)?;
        let (write, read) = floor(&floor_dir, &bytes, rounds)?;
        std::fs::remove_dir_all(&floor_dir)?;
        println!(
            "| floor: a file written, flushed, read | {} | {} | {} | 1 | 1 |",
            human(size),
            shown(write),
            shown(read)
        );
        for store in std::iter::once(None).chain(args.stores.iter().copied().map(Some)) {
            let here = dir.join(format!("{size}-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&here)?;
            let (opened, database, name): (Arc<dyn SessionStore>, Option<Database>, &str) = match store {
                None => (Arc::new(agentstate::InMemoryStore::new()), None, "in-memory"),
                Some(Store::Files) => {
                    let index = agentstate_backends::open(&format!("sqlite://{}/index.db", here.display())).await?;
                    (
                        Arc::new(agentstate_backends::ArtifactFiles::open(index, here.join("files"))?),
                        None,
                        "files (SQLite index)",
                    )
                }
                Some(store) => {
                    let (backend, name) = match store {
                        Store::Sqlite => (Backend::Sqlite, "SQLite"),
                        Store::Postgres => (Backend::Postgres, "PostgreSQL"),
                        Store::Mysql => (Backend::Mysql, "MariaDB"),
                        Store::Redis | Store::Files => (Backend::Redis, "Redis"),
                    };
                    let database = Database::create(backend, &here).await?;
                    (agentstate_backends::open(&database.url).await?, Some(database), name)
                }
            };
            let (save, load) = measure(opened, &bytes, rounds).await?;
            println!(
                "| {name} | {} | {} | {} | {:.1} | {:.1} |",
                human(size),
                shown(save),
                shown(load),
                save.as_secs_f64() / write.as_secs_f64(),
                load.as_secs_f64() / read.as_secs_f64(),
            );
            if let Some(database) = database {
                database.remove().await?;
            }
            std::fs::remove_dir_all(&here).ok();
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
