//! Instructions: templates over state and instruction providers. Each scenario runs on the in-memory service and on SQLite.

use agentstate::Content;
use agentstate_runtime::{LlmAgent, RunRequest, Runner, RuntimeError, inject_session_state};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{answering, create, instruction, run, run_ok, runner_of, services, services_with, stored};

#[tokio::test]
async fn story_instruction_reads_topic_and_optional_user_name() {
    for (name, service) in services_with("s").await {
        let model = answering(&["A story.", "B story."]);
        let runner = runner_of(
            &service,
            LlmAgent::builder("story_agent", model.clone())
                .instruction("Write a short story about {topic} for {user:name?}. Keep {{braces}}."),
        );

        // {topic} is required: the run fails with the reference's message, the user's turn kept.
        let (events, error) = run(&runner, "s", "story please").await;
        assert!(events.is_empty());
        let error = error.unwrap();
        assert!(matches!(error, RuntimeError::Template(_)));
        assert_eq!(error.to_string(), "Context variable not found: `topic` in agent 'story_agent'.");
        assert_eq!(stored(&service, "s").await.events().len(), 1, "{name}");

        let request = RunRequest::new("u", "s", Content::text("user", "again")).state("topic", json!("friendship"));
        let events: Vec<_> = runner.run_request(request).collect().await;
        assert!(events.iter().all(Result::is_ok), "{name}");
        let request = RunRequest::new("u", "s", Content::text("user", "and for me")).state("user:name", json!("Ann"));
        let events: Vec<_> = runner.run_request(request).collect().await;
        assert!(events.iter().all(Result::is_ok), "{name}");
        let requests = model.requests();
        let instructions: Vec<_> = requests.iter().map(instruction).collect();
        assert_eq!(
            instructions,
            [
                "Write a short story about friendship for . Keep {braces}.",
                "Write a short story about friendship for Ann. Keep {braces}.",
            ]
        );
    }
}

#[tokio::test]
async fn an_instruction_provider_bypasses_injection() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let model = answering(&["ok"]);
    let agent = LlmAgent::builder("a", model.clone())
        .instruction_provider(|ctx| {
            let injected = inject_session_state("topic={topic?}", ctx)?;
            Ok(format!("Literal {{topic}} stays; {injected}; agent={}", ctx.agent_name))
        })
        .build()
        .unwrap();
    let request = RunRequest::new("u", "s", Content::text("user", "x")).state("topic", json!("cats"));
    let runner = Runner::new("app", agent, service.clone());
    let events: Vec<_> = runner.run_request(request).collect().await;
    assert!(events.iter().all(Result::is_ok));
    assert_eq!(instruction(&model.requests()[0]), "Literal {topic} stays; topic=cats; agent=a");
    // Without the identity line, the instruction is exactly the provider's.
    create(&service, "s2").await;
    let model = answering(&["ok"]);
    let agent = LlmAgent::builder("b", model.clone()).instruction("Only this.").identity(false).build().unwrap();
    run_ok(&Runner::new("app", agent, service.clone()), "s2", "x").await;
    assert_eq!(model.requests()[0].system_instruction.as_deref(), Some("Only this."));
}
