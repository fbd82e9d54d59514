//! Sequential and parallel agents, and the checks made when agents are built. Each scenario runs on the in-memory service and on SQLite.

use std::sync::Arc;

use agentstate::Value;
use agentstate_runtime::agent::Agent;
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent, ParallelAgent, Runner, SequentialAgent};
use serde_json::json;

use crate::support::{authors, instruction, run_ok, schema, services_with, stored};

#[tokio::test]
async fn a_sequential_pipeline_passes_temp_results_along() {
    for (name, service) in services_with("s").await {
        let writer_model = ScriptedModel::new("w").reply(LlmResponse::text("DRAFT-1")).reply(LlmResponse::text("D2"));
        let reader_model = ScriptedModel::new("r").reply(LlmResponse::text("fine")).reply(LlmResponse::text("ok"));
        let writer = LlmAgent::builder("writer", writer_model)
            .instruction("Write a draft.")
            .output_key("temp:draft")
            .build()
            .unwrap();
        let reader = LlmAgent::builder("reader", reader_model.clone())
            .instruction("Review this draft: {temp:draft}")
            .output_key("review")
            .build()
            .unwrap();
        let pipeline = SequentialAgent::new("pipeline", vec![Arc::new(writer), Arc::new(reader)]).unwrap();
        let runner = Runner::new("app", pipeline, service.clone());
        let events = run_ok(&runner, "s", "write").await;
        assert_eq!(authors(&events), ["writer", "reader"], "{name}");
        assert_eq!(instruction(&reader_model.requests()[0]), "Review this draft: DRAFT-1");
        // The reader saw the writer's answer as context from another agent.
        let contents = &reader_model.requests()[0].contents;
        let retold = contents.last().unwrap().joined_text();
        assert!(retold.starts_with("For context: below is a transcript of what another agent did"), "{retold}");
        assert!(
            retold
                .ends_with("[writer] said:\n<<<BEGIN_QUOTED_AGENT_CONTENT>>>\nDRAFT-1\n<<<END_QUOTED_AGENT_CONTENT>>>"),
            "{retold}"
        );

        let session = stored(&service, "s").await;
        assert_eq!(session.state().get("review"), Some(&json!("fine")), "{name}");
        assert!(!session.state().contains("temp:draft"), "{name}");
        // The writer's event kept no temp: key in storage either.
        assert!(session.events().iter().all(|e| !e.actions.state_delta.contains_key("temp:draft")), "{name}");
        // As in the reference, the yielded event is the stored one: temp: keys trimmed.
        assert!(!events[0].actions.state_delta.contains_key("temp:draft"));
    }
}

#[tokio::test]
async fn parallel_agents_keep_every_write_and_do_not_see_each_other() {
    for (name, service) in services_with("s").await {
        let mut children: Vec<Arc<dyn Agent>> = Vec::new();
        let mut models = Vec::new();
        for i in 0..4 {
            let model = ScriptedModel::new("m")
                .reply(LlmResponse::call(format!("tool{i}"), json!({})))
                .reply(LlmResponse::text(format!("answer {i}")));
            let agent = LlmAgent::builder(format!("child{i}"), model.clone())
                .tool(FunctionTool::new(format!("tool{i}"), "writes", schema(), move |_, ctx| {
                    ctx.state_mut().set(format!("user:k{i}"), json!(i));
                    ctx.state_mut().set(format!("app:k{i}"), json!(i));
                    Ok(json!("ok"))
                }))
                .output_key(format!("out{i}"))
                .build()
                .unwrap();
            children.push(Arc::new(agent));
            models.push(model);
        }
        let fan_out = ParallelAgent::new("fan_out", children).unwrap();
        let runner = Runner::new("app", fan_out, service.clone());
        let events = run_ok(&runner, "s", "go").await;
        assert_eq!(events.len(), 4 * 3, "{name}");
        let session = stored(&service, "s").await;
        for (i, model) in models.iter().enumerate() {
            for key in [format!("user:k{i}"), format!("app:k{i}"), format!("out{i}")] {
                assert!(session.state().contains(&key), "{name}: {key} lost");
            }
            let branch = format!("fan_out.child{i}");
            assert!(
                events.iter().filter(|e| e.author == format!("child{i}")).all(|e| e.branch.as_deref() == Some(&branch))
            );
            // Each child's second model call saw only its own tool exchange, not its siblings'.
            let contents = &model.requests()[1].contents;
            assert_eq!(contents.len(), 3, "{name}: child{i} saw {contents:?}");
        }
    }
}

#[tokio::test]
async fn bad_agent_definitions_are_refused() {
    let model = ScriptedModel::new("m");
    assert!(LlmAgent::builder("my agent", model.clone()).build().is_err());
    assert!(LlmAgent::builder("user", model.clone()).build().is_err());
    let dup = LlmAgent::builder("a", model.clone())
        .tool(FunctionTool::new("t", "", schema(), |_, _| Ok(Value::Null)))
        .tool(FunctionTool::new("t", "", schema(), |_, _| Ok(Value::Null)))
        .build();
    assert_eq!(dup.unwrap_err().to_string(), "agent 'a' has two tools named 't'");
    let child: Arc<dyn Agent> = Arc::new(LlmAgent::builder("c", model).build().unwrap());
    let err = SequentialAgent::new("s", vec![Arc::clone(&child), child]).unwrap_err();
    assert_eq!(err.to_string(), "agent 's' has two sub-agents named 'c'");
}
