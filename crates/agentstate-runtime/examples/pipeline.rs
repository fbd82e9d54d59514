//! A sequential pipeline: the first agent saves its draft under `temp:draft` (`output_key`), the
//! second reads it with `{temp:draft}`. Both run in one invocation, so they share `temp:`; the
//! draft is never stored and is gone in the next invocation.
//!
//! `cargo run -p agentstate-runtime --example pipeline`

mod common;

use std::sync::Arc;

use agentstate::{Content, CreateSession, GetSessionConfig, SessionService};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::{LlmAgent, Runner, SequentialAgent};
use futures_util::TryStreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let writer =
        LlmAgent::builder("writer", common::model(vec![LlmResponse::text("Roses are red, state is in Rust.")])?)
            .instruction("Write a two-line poem about the user's topic.")
            .output_key("temp:draft")
            .build()?;
    let editor =
        LlmAgent::builder("editor", common::model(vec![LlmResponse::text("Roses are red; our state lives in Rust.")])?)
            .instruction("Polish this draft, keep it two lines: {temp:draft}")
            .output_key("poem")
            .build()?;
    let pipeline = SequentialAgent::new("poem_pipeline", vec![Arc::new(writer), Arc::new(editor)])?;

    let service = SessionService::in_memory();
    let runner = Runner::new("poems", pipeline, service.clone());
    let session = service.create_session(CreateSession::new("poems", "u").id("s")).await?;
    let events: Vec<_> = runner.run("u", "s", Content::text("user", "state management")).try_collect().await?;
    for event in &events {
        println!("[{}] {}", event.author, event.text());
    }
    let stored = service.get_session(session.key(), GetSessionConfig::recent(0)).await?;
    let stored = stored.ok_or_else(|| anyhow::anyhow!("the session disappeared"))?;
    println!("stored state: {}", serde_json::to_string(stored.state())?);
    Ok(())
}
