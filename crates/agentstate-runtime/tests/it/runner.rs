//! The runtime end to end with scripted models: what is stored, what the model is sent, what the
//! caller sees. Each scenario runs on the in-memory service and on SQLite.

use std::sync::Arc;

use agentstate::{Content, Value};
use agentstate_runtime::{
    Agent, FunctionTool, History, LlmAgent, LlmResponse, ParallelAgent, RunRequest, Runner, RuntimeError,
    ScriptedModel, SequentialAgent, inject_session_state,
};
use futures_util::StreamExt;
use serde_json::json;

use crate::support::{authors, create, run, run_ok, services, stored};

/// The agent's own instruction: what comes before the identity line the runtime appends.
fn instruction(request: &agentstate_runtime::LlmRequest) -> &str {
    let text = request.system_instruction.as_deref().unwrap_or_default();
    text.split("\n\nYou are an agent. Your internal name is").next().unwrap_or_default()
}

fn schema() -> Value {
    json!({"type": "object", "properties": {}})
}

#[tokio::test]
async fn output_key_saves_the_greeting() {
    for (name, service) in services().await {
        create(&service, "s1").await;
        let model = ScriptedModel::new("m").reply(LlmResponse::text("Hello there!"));
        let agent = LlmAgent::builder("Greeter", model.clone())
            .instruction("Generate a short, friendly greeting.")
            .output_key("last_greeting")
            .build()
            .unwrap();
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
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
async fn callbacks_count_actions_and_temp_status_lasts_one_invocation() {
    for (name, service) in services().await {
        create(&service, "s").await;
        let model = ScriptedModel::new("m").reply(LlmResponse::text("one")).reply(LlmResponse::text("two"));
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
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
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
async fn story_instruction_reads_topic_and_optional_user_name() {
    for (name, service) in services().await {
        create(&service, "s").await;
        let model = ScriptedModel::new("m").reply(LlmResponse::text("A story.")).reply(LlmResponse::text("B story."));
        let agent = LlmAgent::builder("story_agent", model.clone())
            .instruction("Write a short story about {topic} for {user:name?}. Keep {{braces}}.")
            .build()
            .unwrap();
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));

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
async fn a_sequential_pipeline_passes_temp_results_along() {
    for (name, service) in services().await {
        create(&service, "s").await;
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
        let runner = Runner::new("app", Arc::new(pipeline), Arc::clone(&service));
        let events = run_ok(&runner, "s", "write").await;
        assert_eq!(authors(&events), ["writer", "reader"], "{name}");
        assert_eq!(instruction(&reader_model.requests()[0]), "Review this draft: DRAFT-1");
        // The reader saw the writer's answer as context from another agent.
        let contents = &reader_model.requests()[0].contents;
        assert_eq!(contents.last().unwrap().joined_text(), "For context:[writer] said: DRAFT-1");

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
async fn temp_keys_are_gone_in_the_next_invocation() {
    for (name, service) in services().await {
        create(&service, "s").await;
        let model = ScriptedModel::new("m").reply(LlmResponse::text("x")).reply(LlmResponse::text("y"));
        let agent = LlmAgent::builder("a", model.clone())
            .instruction("Last: [{temp:out?}]")
            .output_key("temp:out")
            .build()
            .unwrap();
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
        run_ok(&runner, "s", "1").await;
        run_ok(&runner, "s", "2").await;
        let requests = model.requests();
        let instructions: Vec<_> = requests.iter().map(instruction).collect();
        assert_eq!(instructions, ["Last: []", "Last: []"], "{name}");
    }
}

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
    for (name, service) in services().await {
        create(&service, "s").await;
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::calls([
                ("weather".to_owned(), json!({"city": "Paris"})),
                ("news".to_owned(), json!({})),
                ("user_pref".to_owned(), json!({})),
            ]))
            .reply(LlmResponse::text("Done."));
        let agent = LlmAgent::builder("assistant", model.clone())
            .tool(writer_tool("weather", "weather", 30))
            .tool(writer_tool("news", "news", 10))
            .tool(writer_tool("user_pref", "user:pref", 20))
            .build()
            .unwrap();
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
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
async fn parallel_agents_keep_every_write_and_do_not_see_each_other() {
    for (name, service) in services().await {
        create(&service, "s").await;
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
        let runner = Runner::new("app", Arc::new(fan_out), Arc::clone(&service));
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
async fn streamed_partials_are_yielded_but_never_stored() {
    for (name, service) in services().await {
        create(&service, "s").await;
        let model = ScriptedModel::new("m").streamed_text(&["Once ", "upon ", "a time."]);
        let agent = LlmAgent::builder("teller", model).output_key("story").build().unwrap();
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
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
        let model = ScriptedModel::new("m").reply(LlmResponse::text("hi"));
        let agent: Arc<dyn Agent> = Arc::new(LlmAgent::builder("a", model).build().unwrap());
        let runner = Runner::new("app", Arc::clone(&agent), Arc::clone(&service));
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
    for (name, service) in services().await {
        create(&service, "s").await;
        let script = || (0..4).fold(ScriptedModel::new("m"), |m, i| m.reply(LlmResponse::text(format!("answer {i}"))));
        let full = script();
        let agent = LlmAgent::builder("a", full.clone()).build().unwrap();
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
        for i in 0..3 {
            run_ok(&runner, "s", &format!("q{i}")).await;
        }
        assert_eq!(full.requests()[2].contents.len(), 5, "{name}: q0 a0 q1 a1 q2");

        let limited = script();
        let agent = LlmAgent::builder("a", limited.clone()).history_limit(3).build().unwrap();
        assert_eq!(agent.history(), History::Recent(3));
        run_ok(&Runner::new("app", Arc::new(agent), Arc::clone(&service)), "s", "q3").await;
        let texts: Vec<_> = limited.requests()[0].contents.iter().map(|c| c.joined_text()).collect();
        assert_eq!(texts, ["q2", "answer 2", "q3"], "{name}");

        let none = script();
        let agent = LlmAgent::builder("a", none.clone()).include_contents(false).build().unwrap();
        assert_eq!(agent.history(), History::Recent(0));
        run_ok(&Runner::new("app", Arc::new(agent), Arc::clone(&service)), "s", "q4").await;
        let texts: Vec<_> = none.requests()[0].contents.iter().map(|c| c.joined_text()).collect();
        assert_eq!(texts, ["q4"], "{name}");
    }
}

#[tokio::test]
async fn tool_failures_go_back_to_the_model() {
    for (name, service) in services().await {
        create(&service, "s").await;
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::calls([("fails".to_owned(), json!({})), ("missing".to_owned(), json!({}))]))
            .reply(LlmResponse::text("Sorry."));
        let agent = LlmAgent::builder("a", model.clone())
            .tool(FunctionTool::new("fails", "fails", schema(), |_, _| Err("the database is down".into())))
            .build()
            .unwrap();
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
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
async fn a_looping_model_hits_the_call_limit() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let model = (0..10).fold(ScriptedModel::new("m"), |m, _| m.reply(LlmResponse::call("again", json!({}))));
    let agent = LlmAgent::builder("a", model.clone())
        .tool(FunctionTool::new("again", "loops", schema(), |_, _| Ok(json!("ok"))))
        .build()
        .unwrap();
    let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service)).max_llm_calls(3);
    let (events, error) = run(&runner, "s", "loop").await;
    assert_eq!(error.unwrap().to_string(), "Max number of llm calls limit of 3 exceeded");
    assert_eq!(model.requests().len(), 3);
    assert_eq!(events.len(), 3 * 2);
}

#[tokio::test]
async fn model_and_tool_callbacks_can_answer_replace_and_write_state() {
    for (name, service) in services().await {
        create(&service, "s").await;
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
        let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
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
        let events = run_ok(&Runner::new("app", Arc::new(agent), Arc::clone(&service)), "s2", "q").await;
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
    let events = run_ok(&Runner::new("app", Arc::new(agent), Arc::clone(&service)), "s", "hi").await;
    assert_eq!(authors(&events), ["gate"]);
    assert!(model.requests().is_empty());
    let state = stored(&service, "s").await.state().all().clone();
    assert_eq!((state["blocked"].clone(), state["reply"].clone()), (json!(true), json!("Closed today.")));
}

#[tokio::test]
async fn the_model_can_transfer_to_a_sub_agent() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let billing_model = ScriptedModel::new("b").reply(LlmResponse::text("Your bill is 10."));
    let billing = LlmAgent::builder("billing", billing_model.clone()).description("Bills.").build().unwrap();
    let root_model =
        ScriptedModel::new("r").reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "billing"})));
    let root = LlmAgent::builder("front_desk", root_model.clone()).sub_agent(Arc::new(billing)).build().unwrap();
    let events = run_ok(&Runner::new("app", Arc::new(root), Arc::clone(&service)), "s", "my bill?").await;
    assert_eq!(authors(&events), ["front_desk", "front_desk", "billing"]);
    assert_eq!(events[1].actions.transfer_to_agent.as_deref(), Some("billing"));
    let tool = &root_model.requests()[0].tools[0];
    assert_eq!(tool.name, "transfer_to_agent");
    assert!(tool.description.contains("billing: Bills."));
    assert_eq!(tool.parameters["properties"]["agent_name"]["enum"], json!(["billing"]));

    // A target the model made up goes back to it as an error (the schema lists the agents)…
    create(&service, "s2").await;
    let lost = ScriptedModel::new("r")
        .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "nobody"})))
        .reply(LlmResponse::text("Let me help myself."));
    let helper = LlmAgent::builder("helper", ScriptedModel::new("h")).build().unwrap();
    let root = LlmAgent::builder("front_desk", lost).sub_agent(Arc::new(helper)).build().unwrap();
    let events = run_ok(&Runner::new("app", Arc::new(root), Arc::clone(&service)), "s2", "?").await;
    let answer = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
    assert_eq!(
        answer.response.unwrap()["error"],
        json!(
            r#"Invalid arguments for tool 'transfer_to_agent': argument 'agent_name' must be one of ["helper"], not "nobody""#
        )
    );
    // …and a tool that hands over to an agent that does not exist ends the run, naming it.
    create(&service, "s3").await;
    let ghost = FunctionTool::new("escalate", "", schema(), |_, ctx| {
        ctx.actions_mut().transfer_to_agent = Some("ghost".into());
        Ok(Value::Null)
    });
    let model = ScriptedModel::new("r").reply(LlmResponse::call("escalate", json!({})));
    let root = LlmAgent::builder("front_desk", model).tool(ghost).build().unwrap();
    let (_, error) = run(&Runner::new("app", Arc::new(root), Arc::clone(&service)), "s3", "?").await;
    assert_eq!(error.unwrap().to_string(), "Agent not found: ghost");
}

#[tokio::test]
async fn an_instruction_provider_bypasses_injection() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let model = ScriptedModel::new("m").reply(LlmResponse::text("ok"));
    let agent = LlmAgent::builder("a", model.clone())
        .instruction_provider(|ctx| {
            let injected = inject_session_state("topic={topic?}", ctx)?;
            Ok(format!("Literal {{topic}} stays; {injected}; agent={}", ctx.agent_name))
        })
        .build()
        .unwrap();
    let request = RunRequest::new("u", "s", Content::text("user", "x")).state("topic", json!("cats"));
    let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
    let events: Vec<_> = runner.run_request(request).collect().await;
    assert!(events.iter().all(Result::is_ok));
    assert_eq!(instruction(&model.requests()[0]), "Literal {topic} stays; topic=cats; agent=a");
    // Without the identity line, the instruction is exactly the provider's.
    create(&service, "s2").await;
    let model = ScriptedModel::new("m").reply(LlmResponse::text("ok"));
    let agent = LlmAgent::builder("b", model.clone()).instruction("Only this.").identity(false).build().unwrap();
    run_ok(&Runner::new("app", Arc::new(agent), Arc::clone(&service)), "s2", "x").await;
    assert_eq!(model.requests()[0].system_instruction.as_deref(), Some("Only this."));
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

#[tokio::test]
async fn two_runs_of_one_session_never_interleave_silently() {
    for (name, service) in services().await {
        create(&service, "s").await;
        let gate = agentstate_runtime::Gate::new();
        let slow_model = ScriptedModel::new("slow").reply(LlmResponse::text("late answer")).gated(gate.clone());
        let slow = LlmAgent::builder("slow", slow_model).output_key("slow_out").build().unwrap();
        let slow_runner = Runner::new("app", Arc::new(slow), Arc::clone(&service));
        let first =
            tokio::spawn(
                async move { slow_runner.run("u", "s", Content::text("user", "first")).collect::<Vec<_>>().await },
            );
        gate.called().await; // the first run appended its message and waits on its model

        let fast = LlmAgent::builder("fast", ScriptedModel::new("m").reply(LlmResponse::text("quick")))
            .output_key("fast_out")
            .build()
            .unwrap();
        run_ok(&Runner::new("app", Arc::new(fast), Arc::clone(&service)), "s", "second").await;
        gate.release();
        let items = first.await.unwrap();

        // The first run's answer was computed from a session that changed under it: refused, not
        // interleaved; what the second run stored is intact.
        let error = items.last().unwrap().as_ref().unwrap_err();
        assert!(
            matches!(error, RuntimeError::Session(e) if e.kind() == agentstate::ErrorKind::Conflict),
            "{name}: {error}"
        );
        let session = stored(&service, "s").await;
        let texts: Vec<String> = session.events().iter().map(|e| e.text()).collect();
        assert_eq!(texts, ["first", "second", "quick"], "{name}");
        assert_eq!(session.state().get("fast_out"), Some(&json!("quick")));
        assert!(!session.state().contains("slow_out"), "{name}");
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
    let events = run_ok(&Runner::new("app", Arc::new(agent), Arc::clone(&service)), "s", "weather?").await;
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
    for (name, service) in services().await {
        create(&service, "s").await;
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
            .tool(agentstate_runtime::AgentTool::new(Arc::new(weather)))
            .tool(agentstate_runtime::AgentTool::new(Arc::new(news)))
            .build()
            .unwrap();
        let request = RunRequest::new("u", "s", Content::text("user", "briefing")).state("topic", json!("markets"));
        let runner = Runner::new("app", Arc::new(root), Arc::clone(&service));
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

#[tokio::test]
async fn the_next_turn_resumes_with_the_agent_the_conversation_was_handed_to() {
    for (name, service) in services().await {
        create(&service, "s").await;
        let desk_model = ScriptedModel::new("d")
            .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "billing"})))
            .reply(LlmResponse::text("Anything else?"))
            .reply(LlmResponse::text("Goodbye."));
        let billing_model = ScriptedModel::new("b")
            .reply(LlmResponse::text("Your bill is 10."))
            .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "front_desk"})));
        let billing = LlmAgent::builder("billing", billing_model.clone()).description("Bills.").build().unwrap();
        let support = LlmAgent::builder("support", ScriptedModel::new("s")).description("Support.").build().unwrap();
        let desk = LlmAgent::builder("front_desk", desk_model.clone())
            .sub_agent(Arc::new(billing))
            .sub_agent(Arc::new(support))
            .build()
            .unwrap();
        let runner = Runner::new("app", Arc::new(desk), Arc::clone(&service));

        let first = run_ok(&runner, "s", "my bill?").await;
        assert_eq!(authors(&first), ["front_desk", "front_desk", "billing"], "{name}");
        // The user answers billing: the turn starts there; billing hands back to its parent.
        let second = run_ok(&runner, "s", "thanks, that's all for billing").await;
        assert_eq!(authors(&second), ["billing", "billing", "front_desk"], "{name}");
        let tools = &billing_model.requests()[1].tools;
        let transfer = tools.iter().find(|t| t.name == "transfer_to_agent").unwrap();
        assert_eq!(transfer.parameters["properties"]["agent_name"]["enum"], json!(["front_desk", "support"]));
        // The instruction says whom it may hand over to, as the reference's does.
        let instruction = billing_model.requests()[1].system_instruction.clone().unwrap();
        assert!(
            instruction.contains("Other agents can take over the conversation:\n- front_desk: \n- support: Support."),
            "{instruction}"
        );
        // front_desk answered last: the next turn starts at the root again.
        let third = run_ok(&runner, "s", "bye").await;
        assert_eq!(authors(&third), ["front_desk"], "{name}");
        assert_eq!(desk_model.requests().len(), 3);
    }
}

#[tokio::test]
async fn a_workflow_restarts_from_its_root_every_turn() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let model = ScriptedModel::new("m").reply(LlmResponse::text("one")).reply(LlmResponse::text("two"));
    let step = LlmAgent::builder("step", model.clone()).build().unwrap();
    let pipeline = SequentialAgent::new("pipeline", vec![Arc::new(step)]).unwrap();
    let extra_model = ScriptedModel::new("x").reply(LlmResponse::text("extra")).reply(LlmResponse::text("extra 2"));
    let extra = LlmAgent::builder("extra", extra_model).build().unwrap();
    let root = SequentialAgent::new("root", vec![Arc::new(pipeline), Arc::new(extra)]).unwrap();
    let runner = Runner::new("app", Arc::new(root), Arc::clone(&service));
    run_ok(&runner, "s", "1").await;
    let events = run_ok(&runner, "s", "2").await;
    // "extra" answered last, but its parent is a workflow: the turn starts at the root.
    assert_eq!(authors(&events)[0], "step");
    assert!(
        LlmAgent::builder("a", ScriptedModel::new("m"))
            .tool(FunctionTool::new("transfer_to_agent", "", schema(), |_, _| Ok(Value::Null)))
            .build()
            .is_err()
    );
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
    let agent = LlmAgent::builder("structured", model.clone())
        .output_schema(schema.clone())
        .output_key("result")
        .build()
        .unwrap();
    let runner = Runner::new("app", Arc::new(agent), Arc::clone(&service));
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

#[tokio::test]
async fn an_agent_that_may_not_hand_back_gives_the_next_turn_to_the_root() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let desk_model = ScriptedModel::new("d")
        .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "billing"})))
        .reply(LlmResponse::text("Front desk again."));
    let billing_model = ScriptedModel::new("b").reply(LlmResponse::text("Your bill is 10."));
    let billing = LlmAgent::builder("billing", billing_model.clone())
        .disallow_transfer_to_parent()
        .disallow_transfer_to_peers()
        .build()
        .unwrap();
    let support = LlmAgent::builder("support", ScriptedModel::new("s")).build().unwrap();
    let desk = LlmAgent::builder("front_desk", desk_model)
        .sub_agent(Arc::new(billing))
        .sub_agent(Arc::new(support))
        .build()
        .unwrap();
    let runner = Runner::new("app", Arc::new(desk), Arc::clone(&service));
    assert_eq!(authors(&run_ok(&runner, "s", "bill?").await), ["front_desk", "front_desk", "billing"]);
    // billing was offered nobody to hand over to…
    assert!(billing_model.requests()[0].tools.is_empty());
    // …and the next turn starts at the root.
    assert_eq!(authors(&run_ok(&runner, "s", "and then?").await), ["front_desk"]);
}
