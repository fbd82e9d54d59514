//! The state an agent reads and writes: `output_key`, `output_schema`, `temp:` keys. Each scenario runs on the in-memory service and on SQLite.

use agentstate_runtime::LlmAgent;
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use serde_json::json;

use crate::support::{
    answering, authors, create, instruction, run, run_ok, runner_of, services, services_with, stored,
};

#[tokio::test]
async fn output_key_saves_the_greeting() {
    for (name, service) in services_with("s1").await {
        let model = answering(&["Hello there!"]);
        let runner = runner_of(
            &service,
            LlmAgent::builder("Greeter", model.clone())
                .instruction("Generate a short, friendly greeting.")
                .output_key("last_greeting"),
        );
        let events = run_ok(&runner, "s1", "Hello").await;
        // The user's message is stored, not yielded (as the reference).
        assert_eq!(authors(&events), ["Greeter"], "{name}");
        assert_eq!(events[0].actions.state_delta["last_greeting"], json!("Hello there!"));

        let session = stored(&service, "s1").await;
        assert_eq!(session.state().get("last_greeting"), Some(&json!("Hello there!")), "{name}");
        // What was yielded is what was stored after the user's message, under one invocation id.
        let ids: Vec<&str> = session.events().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids[1..], events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), "{name}");
        assert_eq!(session.events()[0].author, "user");
        assert!(events[0].invocation_id.starts_with("e-"));
        assert_eq!(events[0].invocation_id, session.events()[0].invocation_id);
        // The model got the instruction and the user's message.
        let request = &model.requests()[0];
        assert_eq!(
            request.system_instruction.as_deref(),
            Some("Generate a short, friendly greeting.\n\nYou are an agent. Your internal name is \"Greeter\".")
        );
        assert_eq!(request.contents.len(), 1);
        assert_eq!(request.contents[0].joined_text(), "Hello");
    }
}

#[tokio::test]
async fn temp_keys_are_gone_in_the_next_invocation() {
    for (name, service) in services_with("s").await {
        let model = answering(&["x", "y"]);
        let runner = runner_of(
            &service,
            LlmAgent::builder("a", model.clone()).instruction("Last: [{temp:out?}]").output_key("temp:out"),
        );
        run_ok(&runner, "s", "1").await;
        run_ok(&runner, "s", "2").await;
        let requests = model.requests();
        let instructions: Vec<_> = requests.iter().map(instruction).collect();
        assert_eq!(instructions, ["Last: []", "Last: []"], "{name}");
    }
}

#[tokio::test]
async fn an_output_schema_saves_the_answer_as_json() {
    let (_, service) = services().await.remove(1);
    let schema = json!({"type": "object", "required": ["answer"], "properties": {
        "answer": {"type": "string"}, "score": {"type": ["number", "null"]}}});
    let model = ScriptedModel::new("m")
        .reply(LlmResponse::text("```json\n{\"answer\": \"ok\", \"score\": 0.9}\n```"))
        .reply(LlmResponse::text("{\"score\": \"high\"}"))
        .reply(LlmResponse::text("Sure! Here it is."));
    let runner = runner_of(
        &service,
        LlmAgent::builder("structured", model.clone()).output_schema(schema.clone()).output_key("result"),
    );
    create(&service, "s").await;
    run_ok(&runner, "s", "rate it").await;
    assert_eq!(stored(&service, "s").await.state().get("result"), Some(&json!({"answer": "ok", "score": 0.9})));
    assert_eq!(model.requests()[0].response_schema, Some(schema));

    for (session, expected) in [
        (
            "s2",
            "agent 'structured' answered with output that does not fit its output_schema: missing required field 'answer'",
        ),
        ("s3", "agent 'structured' answered with output that does not fit its output_schema: not JSON"),
    ] {
        create(&service, session).await;
        let (_, error) = run(&runner, session, "rate it").await;
        let error = error.unwrap().to_string();
        assert!(error.starts_with(expected), "{error}");
        assert!(!stored(&service, session).await.state().contains("result"));
    }
}
