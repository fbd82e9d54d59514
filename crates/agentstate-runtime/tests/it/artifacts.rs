//! Artifacts in runs: a tool saves, loads and lists artifacts through its context, the event of
//! its answer carries `artifact_delta` as ADK's does, and an instruction reads `{artifact.name}`;
//! on the in-memory service and on SQLite.

use agentstate::Part;
use agentstate::artifact::{ArtifactScope, ArtifactService};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent, Runner};
use serde_json::json;

use crate::support::{create, run_ok, schema, services};

#[tokio::test]
async fn tools_save_artifacts_that_instructions_then_read() {
    for (name, service) in services().await {
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::call("write", json!({"text": "first draft"})))
            .reply(LlmResponse::text("saved"))
            .reply(LlmResponse::text("read it"));
        let write = FunctionTool::new_async("write", "saves a report", schema(), |args, ctx| {
            Box::pin(async move {
                let text = args["text"].as_str().unwrap_or_default().to_owned();
                let version = ctx.save_artifact("report.txt", &Part::text(text)).await?;
                let shared = ctx.save_artifact("user:profile.json", &Part::text("{\"lang\": \"fr\"}")).await?;
                let back = ctx.load_artifact("report.txt", None).await?.and_then(|p| p.text);
                let names = ctx.list_artifacts().await?;
                Ok(json!({"version": version, "shared": shared, "back": back, "names": names}))
            })
        });
        let agent = LlmAgent::builder("writer", model.clone())
            .instruction("Report: {artifact.report.txt?}. Profile: {artifact.user:profile.json?}.")
            .tool(write)
            .build()
            .unwrap();
        let artifacts = ArtifactService::new(service.clone());
        let runner = Runner::new("app", agent, service.clone()).artifacts(artifacts.clone());
        create(&service, "s").await;
        let events = run_ok(&runner, "s", "write it").await;
        let answer = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
        assert_eq!(
            serde_json::Value::Object(answer.response.unwrap()),
            json!({"version": 0, "shared": 0, "back": "first draft", "names": ["report.txt", "user:profile.json"]}),
            "{name}"
        );
        assert_eq!(
            events[1].actions.artifact_delta,
            json!({"report.txt": 0, "user:profile.json": 0}).as_object().unwrap().clone(),
            "{name}"
        );
        run_ok(&runner, "s", "again").await;
        let requests = model.requests();
        let instruction = |i: usize| requests[i].system_instruction.clone().unwrap_or_default();
        assert!(instruction(0).starts_with("Report: . Profile: ."), "{name}: nothing saved yet: {}", instruction(0));
        assert!(
            instruction(1).starts_with("Report: first draft. Profile: {\"lang\": \"fr\"}."),
            "{name}: {}",
            instruction(1)
        );
        // The stored event carries the delta; the artifacts are in the service.
        let stored = service
            .get_session(&agentstate::SessionKey::new("app", "u", "s").unwrap(), Default::default())
            .await
            .unwrap()
            .unwrap();
        assert!(stored.events().iter().any(|e| e.actions.artifact_delta.contains_key("report.txt")), "{name}");
        let scope = ArtifactScope::new("app", "u", Some("other"));
        assert_eq!(
            artifacts.list_keys(scope).await.unwrap(),
            ["user:profile.json"],
            "{name}: the user's, in every session"
        );
    }
}

#[tokio::test]
async fn without_an_artifact_service_a_tool_is_told_and_a_required_artifact_fails_the_run() {
    for (name, service) in services().await {
        let model = ScriptedModel::new("m").reply(LlmResponse::call("write", json!({}))).reply(LlmResponse::text("ok"));
        let write = FunctionTool::new_async("write", "saves", schema(), |_, ctx| {
            Box::pin(async move { Ok(json!({"version": ctx.save_artifact("a", &Part::text("x")).await?})) })
        });
        let agent = LlmAgent::builder("writer", model).tool(write).build().unwrap();
        create(&service, "s").await;
        let events = run_ok(&Runner::new("app", agent, service.clone()), "s", "go").await;
        let response = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
        let error = response.response.unwrap()["error"].as_str().unwrap().to_owned();
        assert!(error.contains("no artifact service"), "{name}: {error}");

        let model = ScriptedModel::new("m").reply(LlmResponse::text("never"));
        let agent = LlmAgent::builder("reader", model).instruction("Use {artifact.missing.txt}").build().unwrap();
        let runner = Runner::new("app", agent, service.clone()).artifacts(ArtifactService::new(service.clone()));
        let (_, error) = crate::support::run(&runner, "s", "go").await;
        let failed = error.expect("the run fails").to_string();
        assert!(failed.contains("Artifact 'missing.txt' not found in agent 'reader'."), "{name}: {failed}");
    }
}
