//! The ADK state guide's templating example: the instruction reads `{topic}` (required) and
//! `{user:name?}` (optional, from the user's scope), and keeps `{{literal braces}}`.
//!
//! `cargo run -p agentstate-runtime --example story`

mod common;

use agentstate::{Content, CreateSession, SessionService};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{LlmAgent, RunRequest, Runner};
use futures_util::TryStreamExt;
use serde_json::json;

const INSTRUCTION: &str = "Write a short story about a cat, focusing on the theme: {topic}. Dedicate it to {user:name?}. Title it {{like this}}.";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    // The scripted model records what it was sent, to show the rendered instruction.
    let script = ScriptedModel::new("scripted")
        .reply(LlmResponse::text("{Whiskers} Whiskers made a friend."))
        .reply(LlmResponse::text("{For Ann} Whiskers and Ann."));
    let model = common::scripted_or_real(script.clone())?;
    let story_agent = LlmAgent::builder("StoryGenerator", model).instruction(INSTRUCTION).build()?;
    let placeholders: Vec<_> = story_agent.instruction_template().into_iter().flat_map(|t| t.placeholders()).collect();
    println!("placeholders: {:?}", placeholders.iter().map(|p| (&p.name, p.optional)).collect::<Vec<_>>());

    let service = SessionService::in_memory();
    let runner = Runner::new("stories", story_agent, service.clone());
    service.create_session(CreateSession::new("stories", "u").id("s").state("topic", json!("friendship"))).await?;

    // First without a name, then with user:name set on the user's message.
    let first = RunRequest::new("u", "s", Content::text("user", "A story, please."));
    let second = RunRequest::new("u", "s", Content::text("user", "Another, for me.")).state("user:name", json!("Ann"));
    for request in [first, second] {
        let events: Vec<_> = runner.run_request(request).try_collect().await?;
        println!("story: {}", events.last().map(|e| e.text()).unwrap_or_default());
    }
    for request in script.requests() {
        println!("instruction sent: {}", request.system_instruction.unwrap_or_default());
    }
    Ok(())
}
