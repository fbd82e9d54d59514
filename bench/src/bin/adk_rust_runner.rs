//! ADK-Rust's own `Runner` (a scripted `LlmAgent`: a tool call and an answer a turn, four
//! appends) on agentstate through `agentstate-adk-rust`, next to ADK-Rust's
//! `InMemorySessionService` (the floor) in the same run: the median turn of `--turns`, and 16
//! runners at once on 16 sessions of one user, each writing its own `user:` key; then the same
//! storing events without `llm_request`, as ADK-Rust's SQL services store them. One JSON line
//! per service. ADK-Rust's own SQL services cannot be linked into this build (their sqlx 0.8
//! links a second SQLite): `bench/adk-rust-own` measures them the same way, and
//! `bench/adk-rust-figures` runs both.

use std::sync::Arc;

use adk_session::{InMemorySessionService, SessionService};
use agentstate_adk_rust::AdkSessionService;
use agentstate_adk_rust_clients::scripted;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// The agentstate backend (as `agentstate serve --db`); a SQLite file in a temporary
    /// directory when not given.
    #[arg(long)]
    db: Option<String>,
    /// Turns to take the median of.
    #[arg(long, default_value_t = 200)]
    turns: usize,
    /// Only this service (to profile one): the floor, ours keeping every field, or ours
    /// without requests.
    #[arg(long, value_enum)]
    only: Option<Only>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Only {
    Floor,
    Keep,
    Without,
}

/// Prints one JSON line: the median turn on `for_turns`, the 16 writers on `for_writers`.
async fn measure(
    name: &str,
    for_turns: Arc<dyn SessionService>,
    for_writers: Arc<dyn SessionService>,
    turns: usize,
) -> anyhow::Result<()> {
    let median = scripted::median_turn(for_turns, "turns", turns).await?;
    let (kept, failed) = scripted::sixteen_writers(for_writers, "writers").await?;
    let line = serde_json::json!({
        "service": name, "median_turn_ms": median.as_secs_f64() * 1e3, "turns": turns,
        "kept_of_16": kept, "failed_of_16": failed,
    });
    println!("{line}");
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("agentstate-adk-rust-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    let url = |n: usize| {
        args.db.clone().unwrap_or_else(|| format!("sqlite://{}", dir.join(format!("agentstate-{n}.db")).display()))
    };
    let floor = || Arc::new(InMemorySessionService::new()) as Arc<dyn SessionService>;
    let runs = |service| args.only.is_none_or(|only| only == service);
    if runs(Only::Floor) {
        measure("InMemorySessionService (floor)", floor(), floor(), args.turns).await?;
    }
    let ours = |n: usize, keep: bool| async move {
        let service = AdkSessionService::open(&url(n)).await?;
        let service = if keep { service } else { service.without_llm_requests() };
        Ok::<_, anyhow::Error>(Arc::new(service) as Arc<dyn SessionService>)
    };
    let backend = if args.db.is_some() { "--db" } else { "SQLite file" };
    if runs(Only::Keep) {
        let name = format!("AdkSessionService ({backend})");
        measure(&name, ours(1, true).await?, ours(2, true).await?, args.turns).await?;
    }
    if runs(Only::Without) {
        let name = format!("AdkSessionService ({backend}) without llm_request");
        measure(&name, ours(3, false).await?, ours(4, false).await?, args.turns).await?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
