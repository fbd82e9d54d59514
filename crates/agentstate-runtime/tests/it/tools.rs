//! Tools: parallel calls lose no write, failures and bad arguments go back to the model, agents as tools. Each scenario runs on the in-memory service and on SQLite.

use std::sync::Arc;

use agentstate::{Content, Value};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent, RunRequest, Runner};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{authors, create, run_ok, runner_of, schema, services, services_with, stored};

/// Writes its own key, the shared `last_tool`, and adds itself to a shared list and counter
/// (read-modify-write), after an await so the calls overlap.
fn writer_tool(tool: &'static str, key: &'static str, delay_ms: u64) -> FunctionTool {
    FunctionTool::new_async(tool, format!("Writes {key}."), schema(), move |args, ctx| {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            ctx.state_mut().set(key, json!(tool));
            ctx.state_mut().set("last_tool", json!(tool));
            let mut seen = ctx.get("seen").and_then(|v| v.as_array().cloned()).unwrap_or_default();
            seen.push(json!(tool));
            ctx.state_mut().set("seen", Value::Array(seen));
            let calls = ctx.get("user:calls").and_then(|v| v.as_i64()).unwrap_or(0);
            ctx.state_mut().set("user:calls", json!(calls + 1));
            Ok(json!({"wrote": key, "args": Value::Object(args)}))
        })
    })
}

#[tokio::test]
async fn parallel_tools_lose_no_write() {
    for (name, service) in services_with("s").await {
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::calls([
                ("weather".to_owned(), json!({"city": "Paris"})),
                ("news".to_owned(), json!({})),
                ("user_pref".to_owned(), json!({})),
            ]))
            .reply(LlmResponse::text("Done."));
        let runner = runner_of(
            &service,
            LlmAgent::builder("assistant", model.clone())
                .tool(writer_tool("weather", "weather", 30))
                .tool(writer_tool("news", "news", 10))
                .tool(writer_tool("user_pref", "user:pref", 20)),
        );
        let events = run_ok(&runner, "s", "everything").await;
        assert_eq!(authors(&events), ["assistant", "assistant", "assistant"], "{name}");

        // One function-response event answering every call in order, with every write.
        let answers = &events[1];
        let responses: Vec<_> =
            answers.content.as_ref().unwrap().parts().iter().map(|p| p.function_response.clone().unwrap()).collect();
        let calls: Vec<_> =
            events[0].content.as_ref().unwrap().parts().iter().map(|p| p.function_call.clone().unwrap()).collect();
        assert_eq!(responses.len(), 3);
        for (call, response) in calls.iter().zip(&responses) {
            assert!(call.id.as_deref().unwrap().starts_with("adk-"));
            assert_eq!((&call.id, &call.name), (&response.id, &response.name), "answers pair with calls");
        }
        assert_eq!(responses[0].response.as_ref().unwrap()["args"], json!({"city": "Paris"}));
        let session = stored(&service, "s").await;
        for (key, value) in [("weather", "weather"), ("news", "news"), ("user:pref", "user_pref")] {
            assert_eq!(session.state().get(key), Some(&json!(value)), "{name}: {key}");
        }
        // A key all three wrote: the latest write (the slowest tool's). Read-modify-write adds up.
        assert_eq!(session.state().get("last_tool"), Some(&json!("weather")), "{name}");
        assert_eq!(session.state().get("seen"), Some(&json!(["news", "user_pref", "weather"])), "{name}");
        assert_eq!(session.state().get("user:calls"), Some(&json!(3)), "{name}");
        // The model's second call saw the calls and their answers.
        let second = &model.requests()[1];
        let roles: Vec<_> = second.contents.iter().map(|c| c.role.clone().unwrap()).collect();
        assert_eq!(roles, ["user", "model", "user"], "{name}");
        assert_eq!(second.tools.len(), 3);
    }
}

#[tokio::test]
async fn tool_failures_go_back_to_the_model() {
    for (name, service) in services_with("s").await {
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::calls([("fails".to_owned(), json!({})), ("missing".to_owned(), json!({}))]))
            .reply(LlmResponse::text("Sorry."));
        let runner = runner_of(
            &service,
            LlmAgent::builder("a", model.clone())
                .tool(FunctionTool::new("fails", "fails", schema(), |_, _| Err("the database is down".into()))),
        );
        let events = run_ok(&runner, "s", "try").await;
        let parts = events[1].content.as_ref().unwrap().parts().to_vec();
        let errors: Vec<_> = parts
            .iter()
            .map(|p| p.function_response.as_ref().unwrap().response.as_ref().unwrap()["error"].clone())
            .collect();
        assert_eq!(errors[0], json!("the database is down"), "{name}");
        assert_eq!(errors[1], json!("Tool 'missing' not found. Available tools: fails"), "{name}");
        assert_eq!(events.last().unwrap().text(), "Sorry.");
    }
}

#[tokio::test]
async fn arguments_that_do_not_fit_the_schema_never_reach_the_tool() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let model = ScriptedModel::new("m")
        .reply(LlmResponse::call("get_weather", json!({"city": 42})))
        .reply(LlmResponse::call("get_weather", json!({"city": "Oslo"})))
        .reply(LlmResponse::text("Sunny in Oslo."));
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let tool = FunctionTool::new(
        "get_weather",
        "Weather.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |_, _| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(json!({"forecast": "sunny"}))
        },
    );
    let agent = LlmAgent::builder("a", model.clone()).tool(tool).build().unwrap();
    let events = run_ok(&Runner::new("app", agent, service.clone()), "s", "weather?").await;
    let first_answer = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
    assert_eq!(
        first_answer.response.unwrap()["error"],
        json!("Invalid arguments for tool 'get_weather': argument 'city' must be string, not number")
    );
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1, "only the well-formed call ran");
    assert_eq!(events.last().unwrap().text(), "Sunny in Oslo.");
}

#[tokio::test]
async fn agent_tools_called_together_keep_every_output_key() {
    for (name, service) in services_with("s").await {
        let weather = LlmAgent::builder("weather", ScriptedModel::new("w").reply(LlmResponse::text("sunny")))
            .description("Weather.")
            .output_key("weather_out")
            .build()
            .unwrap();
        let news = LlmAgent::builder("news", ScriptedModel::new("n").reply(LlmResponse::text("calm")))
            .description("News.")
            .instruction("Topic: {topic}")
            .output_key("news_out")
            .build()
            .unwrap();
        let root_model = ScriptedModel::new("r")
            .reply(LlmResponse::calls([
                ("weather".to_owned(), json!({"request": "today?"})),
                ("news".to_owned(), json!({"request": "headlines?"})),
            ]))
            .reply(LlmResponse::text("Sunny and calm."));
        let root = LlmAgent::builder("root", root_model)
            .tool(agentstate_runtime::AgentTool::new(weather))
            .tool(agentstate_runtime::AgentTool::new(news))
            .build()
            .unwrap();
        let request = RunRequest::new("u", "s", Content::text("user", "briefing")).state("topic", json!("markets"));
        let runner = Runner::new("app", root, service.clone());
        let events: Vec<_> = runner.run_request(request).map(Result::unwrap).collect().await;
        let answers: Vec<Value> = events[1]
            .content
            .as_ref()
            .unwrap()
            .parts()
            .iter()
            .map(|p| Value::Object(p.function_response.clone().unwrap().response.unwrap()))
            .collect();
        assert_eq!(answers, [json!({"result": "sunny"}), json!({"result": "calm"})], "{name}");
        let session = stored(&service, "s").await;
        assert_eq!(session.state().get("weather_out"), Some(&json!("sunny")), "{name}");
        assert_eq!(session.state().get("news_out"), Some(&json!("calm")), "{name}");
        // The agent tools' own conversations stay out of the caller's session.
        assert!(session.events().iter().all(|e| e.author == "user" || e.author == "root"), "{name}");
    }
}
