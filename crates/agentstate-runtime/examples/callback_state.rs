//! The ADK state guide's callback example: a callback counts the user's actions (`user_action_count`) and
//! records `temp:last_operation_status`, which the instruction reads during the invocation and
//! which is never stored.
//!
//! `cargo run -p agentstate-runtime --example callback_state`

mod common;

use agentstate::{Content, CreateSession, GetSessionConfig, SessionService};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{CallbackContext, LlmAgent, Runner};
use futures_util::TryStreamExt;
use serde_json::json;

/// The guide's `my_callback_or_tool_function`.
fn count_action(context: &mut CallbackContext) -> Option<Content> {
    // Update existing state
    let count = context.get("user_action_count").and_then(|v| v.as_i64()).unwrap_or(0);
    context.state_mut().set("user_action_count", json!(count + 1));
    // Add new state
    context.state_mut().set("temp:last_operation_status", json!("success"));
    // State changes are automatically part of the event's state_delta
    None
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let script =
        ScriptedModel::new("scripted").reply(LlmResponse::text("Noted.")).reply(LlmResponse::text("Noted again."));
    let model = common::scripted_or_real(script.clone())?;
    let agent = LlmAgent::builder("assistant", model)
        .instruction("Last operation: {temp:last_operation_status?}. Actions so far: {user_action_count}.")
        .before_agent_callback(count_action)
        .build()?;
    let service = SessionService::in_memory();
    let runner = Runner::new("app", agent, service.clone());
    let session = service.create_session(CreateSession::new("app", "u").id("s")).await?;

    for turn in ["Book a table", "Make it for four"] {
        let events: Vec<_> = runner.run("u", "s", Content::text("user", turn)).try_collect().await?;
        for event in &events {
            if !event.actions.state_delta.is_empty() {
                println!("{} wrote {}", event.author, serde_json::to_string(&event.actions.state_delta)?);
            }
        }
        let stored = service.get_session(session.key(), GetSessionConfig::recent(0)).await?;
        let stored = stored.ok_or_else(|| anyhow::anyhow!("the session disappeared"))?;
        println!("after {turn:?}: stored state {}", serde_json::to_string(stored.state())?);
    }
    // During each invocation the instruction saw temp:last_operation_status.
    for request in script.requests() {
        println!("instruction sent: {}", request.system_instruction.unwrap_or_default());
    }
    Ok(())
}
