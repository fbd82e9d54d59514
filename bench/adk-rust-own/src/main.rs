//! ADK-Rust's own `SqliteSessionService` and `PostgresSessionService` under the scripted Runner
//! of `crates/agentstate-adk-rust-clients/src/scripted.rs` (the same file, included): the median
//! turn of `TURNS` on SQLite, and 16 runners at once on each. One JSON line per service.
//! Usage: `adk-rust-own SQLITE_DIR POSTGRES_URL_FOR_TURNS POSTGRES_URL_FOR_WRITERS [TURNS]`
//! (the databases empty; `bench/adk-rust-figures` makes them).

use std::sync::Arc;

use adk_session::{PostgresSessionService, SessionService, SqliteSessionService};

#[path = "../../../crates/agentstate-adk-rust-clients/src/scripted.rs"]
mod scripted;

async fn sqlite(path: String) -> anyhow::Result<Arc<dyn SessionService>> {
    let service = SqliteSessionService::new(&format!("sqlite://{path}?mode=rwc")).await?;
    service.migrate().await?;
    Ok(Arc::new(service))
}

async fn postgres(url: &str) -> anyhow::Result<Arc<dyn SessionService>> {
    let service = PostgresSessionService::new(url).await?;
    service.migrate().await?;
    Ok(Arc::new(service))
}

fn line(service: &str, median: Option<std::time::Duration>, turns: usize, writers: (usize, usize)) {
    let median = median.map(|m| m.as_secs_f64() * 1e3);
    let line = serde_json::json!({
        "service": service, "median_turn_ms": median, "turns": turns,
        "kept_of_16": writers.0, "failed_of_16": writers.1,
    });
    println!("{line}");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, pg_turns, pg_writers, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: adk-rust-own SQLITE_DIR POSTGRES_URL_FOR_TURNS POSTGRES_URL_FOR_WRITERS [TURNS]");
    };
    let turns = rest.first().map_or(Ok(200), |t| t.parse())?;
    let median = scripted::median_turn(sqlite(format!("{dir}/turns.db")).await?, "turns", turns).await?;
    let writers = scripted::sixteen_writers(sqlite(format!("{dir}/writers.db")).await?, "writers").await?;
    line("ADK-Rust SqliteSessionService", Some(median), turns, writers);
    let median = scripted::median_turn(postgres(pg_turns).await?, "turns", turns).await?;
    let writers = scripted::sixteen_writers(postgres(pg_writers).await?, "writers").await?;
    line("ADK-Rust PostgresSessionService", Some(median), turns, writers);
    Ok(())
}
