//! Runs: streaming, missing sessions, the history loaded, the model-call limit, concurrent runs (double_texting.rs). Each scenario runs on the in-memory service and on SQLite.

use std::sync::Arc;

use agentstate::Content;
use agentstate_runtime::agent::{Agent, History};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent, RunRequest, Runner};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{answering, create, run, run_ok, schema, services, services_with, stored};

#[tokio::test]
async fn streamed_partials_are_yielded_but_never_stored() {
    for (name, service) in services_with("s").await {
        let model = ScriptedModel::new("m").streamed_text(&["Once ", "upon ", "a time."]);
        let agent = LlmAgent::builder("teller", model).output_key("story").build().unwrap();
        let runner = Runner::new("app", agent, service.clone());
        let request = RunRequest::new("u", "s", Content::text("user", "tell")).streaming(true);
        let events: Vec<_> = runner.run_request(request).map(Result::unwrap).collect().await;
        let partial: Vec<bool> = events.iter().map(|e| e.is_partial()).collect();
        assert_eq!(partial, [true, true, true, false], "{name}");
        assert!(events[0..3].iter().all(|e| e.actions.state_delta.is_empty()));
        assert!(
            !events[0].id.is_empty() && events.iter().all(|e| e.id == events[0].id),
            "{name}: one id per model call"
        );
        let session = stored(&service, "s").await;
        assert_eq!(session.events().len(), 2, "{name}");
        assert_eq!(session.events().last().unwrap().text(), "Once upon a time.");
        assert_eq!(session.state().get("story"), Some(&json!("Once upon a time.")), "{name}");
    }
}

#[tokio::test]
async fn missing_sessions_fail_unless_auto_created() {
    for (name, service) in services().await {
        let model = answering(&["hi"]);
        let agent: Arc<dyn Agent> = Arc::new(LlmAgent::builder("a", model).build().unwrap());
        let runner = Runner::new("app", Arc::clone(&agent), service.clone());
        let (events, error) = run(&runner, "nope", "hi").await;
        assert!(events.is_empty());
        assert_eq!(error.unwrap().to_string(), "Session not found: nope", "{name}");

        let runner = runner.auto_create_session(true);
        let events = run_ok(&runner, "new", "hi").await;
        assert_eq!(events.len(), 1);
        assert_eq!(stored(&service, "new").await.events().len(), 2, "{name}");
    }
}

#[tokio::test]
async fn only_the_history_the_agent_reads_is_loaded() {
    for (name, service) in services_with("s").await {
        let script = || (0..4).fold(ScriptedModel::new("m"), |m, i| m.reply(LlmResponse::text(format!("answer {i}"))));
        let full = script();
        let agent = LlmAgent::builder("a", full.clone()).build().unwrap();
        let runner = Runner::new("app", agent, service.clone());
        for i in 0..3 {
            run_ok(&runner, "s", &format!("q{i}")).await;
        }
        assert_eq!(full.requests()[2].contents.len(), 5, "{name}: q0 a0 q1 a1 q2");

        let limited = script();
        let agent = LlmAgent::builder("a", limited.clone()).history_limit(3).build().unwrap();
        assert_eq!(agent.history(), History::Recent(3));
        run_ok(&Runner::new("app", agent, service.clone()), "s", "q3").await;
        let texts: Vec<_> = limited.requests()[0].contents.iter().map(|c| c.joined_text()).collect();
        assert_eq!(texts, ["q2", "answer 2", "q3"], "{name}");

        let none = script();
        let agent = LlmAgent::builder("a", none.clone()).include_contents(false).build().unwrap();
        assert_eq!(agent.history(), History::Recent(0));
        run_ok(&Runner::new("app", agent, service.clone()), "s", "q4").await;
        let texts: Vec<_> = none.requests()[0].contents.iter().map(|c| c.joined_text()).collect();
        assert_eq!(texts, ["q4"], "{name}");
    }
}

#[tokio::test]
async fn a_looping_model_hits_the_call_limit() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let model = (0..10).fold(ScriptedModel::new("m"), |m, _| m.reply(LlmResponse::call("again", json!({}))));
    let agent = LlmAgent::builder("a", model.clone())
        .tool(FunctionTool::new("again", "loops", schema(), |_, _| Ok(json!("ok"))))
        .build()
        .unwrap();
    let runner = Runner::new("app", agent, service.clone()).max_llm_calls(3);
    let (events, error) = run(&runner, "s", "loop").await;
    assert_eq!(error.unwrap().to_string(), "Max number of llm calls limit of 3 exceeded");
    assert_eq!(model.requests().len(), 3);
    assert_eq!(events.len(), 3 * 2);
}
