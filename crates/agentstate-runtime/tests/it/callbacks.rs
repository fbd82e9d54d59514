//! Agent, model and tool callbacks: what they can answer, replace and write. Each scenario runs on the in-memory service and on SQLite.

use agentstate::{Content, Value};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent, Runner};
use serde_json::json;

use crate::support::{answering, authors, create, instruction, run_ok, schema, services, services_with, stored};

#[tokio::test]
async fn callbacks_count_actions_and_temp_status_lasts_one_invocation() {
    for (name, service) in services_with("s").await {
        let model = answering(&["one", "two"]);
        let agent = LlmAgent::builder("assistant", model.clone())
            .instruction("Status: {temp:last_operation_status}. Count: {user_action_count}.")
            .before_agent_callback(|ctx| {
                let count = ctx.get("user_action_count").and_then(|v| v.as_i64()).unwrap_or(0);
                ctx.state_mut().set("user_action_count", json!(count + 1));
                ctx.state_mut().set("temp:last_operation_status", json!("success"));
                None
            })
            .build()
            .unwrap();
        let runner = Runner::new("app", agent, service.clone());
        for round in 1..=2 {
            let events = run_ok(&runner, "s", "go").await;
            // The callback's writes travel on an event of their own, before the answer.
            assert_eq!(authors(&events), ["assistant", "assistant"], "{name}");
            assert!(events[0].content.is_none());
            assert_eq!(events[0].actions.state_delta["user_action_count"], json!(round));
            let session = stored(&service, "s").await;
            assert_eq!(session.state().get("user_action_count"), Some(&json!(round)), "{name}");
            assert!(!session.state().contains("temp:last_operation_status"), "{name}: temp: is never stored");
        }
        // Within the invocation the instruction saw the temp: key and the new count.
        let requests = model.requests();
        assert_eq!(instruction(&requests[1]), "Status: success. Count: 2.", "{name}");
    }
}

#[tokio::test]
async fn model_and_tool_callbacks_can_answer_replace_and_write_state() {
    for (name, service) in services_with("s").await {
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::call("lookup", json!({"q": "x"})))
            .reply(LlmResponse::text("raw answer"));
        let agent = LlmAgent::builder("a", model.clone())
            .tool(FunctionTool::new("lookup", "looks up", schema(), |args, _| Ok(json!({"found": args["q"]}))))
            .before_model_callback(|ctx, request| {
                let calls = ctx.get("calls").and_then(|v| v.as_i64()).unwrap_or(0);
                ctx.state_mut().set("calls", json!(calls + 1));
                request.append_instruction("Be brief.");
                None
            })
            .after_model_callback(|ctx, response| {
                let text = response.content.as_ref()?.joined_text();
                (!text.is_empty()).then(|| {
                    ctx.state_mut().set("censored", json!(true));
                    LlmResponse::text(text.to_uppercase())
                })
            })
            .before_tool_callback(|tool, args, ctx| {
                ctx.state_mut().set("temp:tool_seen", json!(tool));
                args.insert("q".into(), json!("rewritten"));
                None
            })
            .after_tool_callback(|_, _, ctx, result| {
                ctx.state_mut().set("tool_result", result.clone());
                Some(json!({"wrapped": result}))
            })
            .output_key("answer")
            .build()
            .unwrap();
        let runner = Runner::new("app", agent, service.clone());
        let events = run_ok(&runner, "s", "go").await;
        assert_eq!(events.last().unwrap().text(), "RAW ANSWER", "{name}");
        let requests = model.requests();
        let identity = "You are an agent. Your internal name is \"a\".";
        assert_eq!(requests[0].system_instruction.as_deref(), Some(format!("{identity}\n\nBe brief.").as_str()));
        let answer = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
        assert_eq!(Value::Object(answer.response.unwrap()), json!({"wrapped": {"found": "rewritten"}}));
        let state = stored(&service, "s").await.state().all().clone();
        assert_eq!(state["calls"], json!(2), "{name}: one per model call, on the model's event");
        assert_eq!(state["censored"], json!(true));
        assert_eq!(state["tool_result"], json!({"found": "rewritten"}));
        assert_eq!(state["answer"], json!("RAW ANSWER"));
        assert!(!state.contains_key("temp:tool_seen"));
        assert_eq!(events[1].actions.state_delta.get("temp:tool_seen"), None, "temp: is trimmed from the stored event");

        // A before-model callback can answer instead of the model.
        let silent = ScriptedModel::new("never");
        let agent = LlmAgent::builder("b", silent.clone())
            .before_model_callback(|_, _| Some(LlmResponse::text("cached")))
            .output_key("cached")
            .build()
            .unwrap();
        create(&service, "s2").await;
        let events = run_ok(&Runner::new("app", agent, service.clone()), "s2", "q").await;
        assert_eq!(events.last().unwrap().text(), "cached");
        assert!(silent.requests().is_empty());
        assert_eq!(stored(&service, "s2").await.state().get("cached"), Some(&json!("cached")), "{name}");
    }
}

#[tokio::test]
async fn a_before_agent_callback_can_answer_instead_of_the_agent() {
    let (_, service) = services().await.remove(1);
    create(&service, "s").await;
    let model = ScriptedModel::new("never");
    let agent = LlmAgent::builder("gate", model.clone())
        .before_agent_callback(|ctx| {
            ctx.state_mut().set("blocked", json!(true));
            Some(Content::text("model", "Closed today."))
        })
        .output_key("reply")
        .build()
        .unwrap();
    let events = run_ok(&Runner::new("app", agent, service.clone()), "s", "hi").await;
    assert_eq!(authors(&events), ["gate"]);
    assert!(model.requests().is_empty());
    let state = stored(&service, "s").await.state().all().clone();
    assert_eq!((state["blocked"].clone(), state["reply"].clone()), (json!(true), json!("Closed today.")));
}
