//! Tools called in one model turn run concurrently, each writing state through its own
//! `ToolContext`; every write is kept, and the function-response event carries them all.
//!
//! `cargo run -p agentstate-runtime --example parallel_tools`

mod common;

use agentstate::{Content, CreateSession, GetSessionConfig, SessionService};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::{FunctionTool, LlmAgent, Runner};
use futures_util::TryStreamExt;
use serde_json::json;

fn tool(name: &'static str, key: &'static str, value: serde_json::Value) -> FunctionTool {
    FunctionTool::new_async(
        name,
        format!("Looks up {key}."),
        json!({"type": "object", "properties": {}}),
        move |_, ctx| {
            let value = value.clone();
            Box::pin(async move {
                // Pretend to call a slow API; the three calls overlap.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                ctx.state_mut().set(key, value.clone());
                Ok(json!({ key: value }))
            })
        },
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let model = common::model(vec![
        LlmResponse::calls([
            ("get_weather".to_owned(), json!({})),
            ("get_news".to_owned(), json!({})),
            ("get_profile".to_owned(), json!({})),
        ]),
        LlmResponse::text("Sunny, two headlines, and your profile is loaded."),
    ])?;
    let agent = LlmAgent::builder("briefing", model)
        .instruction("Brief the user: call every tool you need at once.")
        .tool(tool("get_weather", "weather", json!("sunny")))
        .tool(tool("get_news", "news", json!(["rates hold", "rust 1.95 ships"])))
        .tool(tool("get_profile", "user:profile", json!({"name": "Ann"})))
        .build()?;

    // On the embedded default, SQLite, in a throwaway database.
    let service = SessionService::new(agentstate_sql::SqlStore::connect("sqlite::memory:").await?);
    let runner = Runner::new("briefings", agent, service.clone());
    let session = service.create_session(CreateSession::new("briefings", "u").id("s")).await?;
    let started = std::time::Instant::now();
    let events: Vec<_> = runner.run("u", "s", Content::text("user", "Morning briefing")).try_collect().await?;
    println!("{} events in {:?} (three 50 ms tools ran side by side)", events.len(), started.elapsed());
    let stored = service.get_session(session.key(), GetSessionConfig::recent(0)).await?;
    let stored = stored.ok_or_else(|| anyhow::anyhow!("the session disappeared"))?;
    println!("stored state: {}", serde_json::to_string(stored.state())?);
    Ok(())
}
