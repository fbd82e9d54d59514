//! The ADK state guide's `output_key` example: the agent's answer lands in `state['last_greeting']`.
//!
//! `cargo run -p agentstate-runtime --example greeting`

mod common;

use agentstate::{Content, CreateSession, GetSessionConfig, SessionService};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::{LlmAgent, Runner};
use futures_util::TryStreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let model = common::model(vec![LlmResponse::text("Hello there! How can I help you today?")])?;
    let greeting_agent = LlmAgent::builder("Greeter", model)
        .instruction("Generate a short, friendly greeting.")
        .output_key("last_greeting") // Save the response to state['last_greeting']
        .build()?;

    let (app_name, user_id, session_id) = ("state_app", "user1", "session1");
    let session_service = SessionService::in_memory();
    let runner = Runner::new(app_name, greeting_agent, session_service.clone());
    let session = session_service.create_session(CreateSession::new(app_name, user_id).id(session_id)).await?;
    println!("Initial state: {}", serde_json::to_string(session.state())?);

    // The runner appends every event; the output_key becomes the answer's state_delta.
    let events: Vec<_> = runner.run(user_id, session_id, Content::text("user", "Hello")).try_collect().await?;
    if let Some(answer) = events.last() {
        println!("Agent responded: {}", answer.text());
    }

    let updated = session_service.get_session(session.key(), GetSessionConfig::default()).await?;
    let updated = updated.ok_or_else(|| anyhow::anyhow!("the session disappeared"))?;
    println!("State after agent run: {}", serde_json::to_string(updated.state())?);
    Ok(())
}
