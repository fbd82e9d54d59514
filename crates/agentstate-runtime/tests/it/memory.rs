//! Long-term memory in runs: a runner that adds its runs to memory, `load_memory` called by the
//! model, `preload_memory` putting what memory recalls in front of the user's message, and
//! `ToolContext::search_memory`; on the in-memory service and on SQLite.

use agentstate::memory::{MemoryOwner, MemoryService};
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent, Runner, load_memory, preload_memory};
use serde_json::json;

use crate::support::{create, run_ok, schema, services};

#[tokio::test]
async fn an_agent_recalls_an_earlier_session_with_load_memory() {
    for (name, service) in services().await {
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::text("Noted."))
            .reply(LlmResponse::call("load_memory", json!({"query": "favourite colour"})))
            .reply(LlmResponse::text("It is teal."));
        let agent = LlmAgent::builder("helper", model.clone()).tool(load_memory()).build().unwrap();
        let memory = MemoryService::new(service.clone());
        let runner = Runner::new("app", agent, service.clone()).memory(memory.clone()).add_runs_to_memory(true);
        create(&service, "first").await;
        run_ok(&runner, "first", "my favourite colour is teal").await;
        let owner = MemoryOwner::new("app", "u").unwrap();
        assert_eq!(memory.count(&owner).await.unwrap(), 2, "{name}: the run's two texts are memories");

        create(&service, "second").await;
        let events = run_ok(&runner, "second", "what is my favourite colour?").await;
        // The tool's answer holds the memory; the model got it.
        let answer = events.iter().find_map(|e| e.content.as_ref()?.parts()[0].function_response.clone()).unwrap();
        assert_eq!(answer.name.as_deref(), Some("load_memory"));
        let response = answer.response.unwrap();
        let memories = response["memories"].as_array().unwrap();
        let texts: Vec<&str> = memories.iter().filter_map(|m| m["content"]["parts"][0]["text"].as_str()).collect();
        assert!(texts.contains(&"my favourite colour is teal"), "{name}: {texts:?}");
        assert_eq!(memories[0]["author"], "user", "{name}");
        let requests = model.requests();
        let declared: Vec<&str> = requests[1].tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(declared, ["load_memory"], "{name}");
    }
}

#[tokio::test]
async fn preload_memory_puts_what_memory_recalls_before_the_users_message() {
    for (name, service) in services().await {
        let memory = MemoryService::new(service.clone());
        let owner = MemoryOwner::new("app", "u").unwrap();
        let fact = agentstate::memory::NewMemory {
            content: agentstate::Content::text("user", "the dog is called Rex"),
            author: Some("user".into()),
            timestamp: Some("2026-11-01T09:30:00Z".into()),
            ..Default::default()
        };
        memory.add_memories(&owner, vec![fact], &Default::default()).await.unwrap();
        let model = ScriptedModel::new("m").reply(LlmResponse::text("Rex!")).reply(LlmResponse::text("?"));
        let agent = LlmAgent::builder("helper", model.clone()).tool(preload_memory()).build().unwrap();
        let runner = Runner::new("app", agent, service.clone()).memory(memory);
        create(&service, "s").await;
        run_ok(&runner, "s", "what is my dog called?").await;
        run_ok(&runner, "s", "nothing relevant here").await;

        let requests = model.requests();
        assert!(requests[0].tools.is_empty(), "{name}: preload_memory is never shown to the model");
        let contents = &requests[0].contents;
        let recalled = contents[contents.len() - 2].joined_text();
        assert!(
            recalled.contains(
                "<PAST_CONVERSATIONS>\nTime: 2026-11-01T09:30:00Z\nuser: the dog is called Rex\n</PAST_CONVERSATIONS>"
            ),
            "{name}: {recalled}"
        );
        assert_eq!(contents.last().unwrap().joined_text(), "what is my dog called?");
        // Nothing recalled: the request is as it was; what was preloaded is never stored.
        assert!(!requests[1].contents.iter().any(|c| c.joined_text().contains("PAST_CONVERSATIONS")), "{name}");
    }
}

#[tokio::test]
async fn tools_search_memory_through_their_context() {
    for (name, service) in services().await {
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::call("recall", json!({"q": "tea"})))
            .reply(LlmResponse::text("ok"));
        let recall = FunctionTool::new_async("recall", "searches memory", schema(), |args, ctx| {
            Box::pin(async move {
                let found = ctx.search_memory(args["q"].as_str().unwrap_or_default()).await?;
                Ok(json!({"found": found.iter().map(|m| m.text()).collect::<Vec<_>>()}))
            })
        });
        let without = LlmAgent::builder("helper", model.clone()).tool(recall.clone()).build().unwrap();
        create(&service, "s").await;
        // Without a memory service, the tool's error goes back to the model.
        let events = run_ok(&Runner::new("app", without, service.clone()), "s", "go").await;
        let response = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
        let error = response.response.unwrap()["error"].as_str().unwrap().to_owned();
        assert!(error.contains("no memory service"), "{name}: {error}");

        let memory = MemoryService::new(service.clone());
        let said = agentstate::Event::new("inv").author("user").content(agentstate::Content::text("user", "green tea"));
        memory
            .add_events(&MemoryOwner::new("app", "u").unwrap(), Some("old"), &[said], &Default::default())
            .await
            .unwrap();
        let model = ScriptedModel::new("m")
            .reply(LlmResponse::call("recall", json!({"q": "tea"})))
            .reply(LlmResponse::text("ok"));
        let with = LlmAgent::builder("helper", model).tool(recall).build().unwrap();
        let events = run_ok(&Runner::new("app", with, service.clone()).memory(memory), "s", "go").await;
        let response = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
        assert_eq!(serde_json::Value::Object(response.response.unwrap()), json!({"found": ["green tea"]}), "{name}");
    }
}

/// An agent file naming ADK's memory tools, run against a mock Gemini server: the model calls
/// `load_memory`, and its second request carries what memory recalled.
#[tokio::test]
async fn an_agent_file_names_the_memory_tools() {
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    let answer = |parts: serde_json::Value| {
        ResponseTemplate::new(200).set_body_json(
            json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}),
        )
    };
    Mock::given(method("POST"))
        .and(body_string_contains("functionResponse"))
        .respond_with(answer(json!([{"text": "Your dog is Rex."}])))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(answer(json!([{"functionCall": {"name": "load_memory", "args": {"query": "dog"}}}])))
        .with_priority(2)
        .mount(&server)
        .await;
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("helper.yaml");
    let yaml = format!(
        "name: helper\nmodel: gemini-test\nbase_url: {}\ninstruction: Help.\ntools:\n  - name: load_memory\n  - name: google.adk.tools.preload_memory\n",
        server.uri()
    );
    std::fs::write(&file, yaml).unwrap();
    let agent =
        agentstate_runtime::config::load_agent_with(&file, &|name| (name == "GEMINI_API_KEY").then(|| "k".into()))
            .unwrap();

    let service = agentstate::SessionService::in_memory();
    let memory = MemoryService::new(service.clone());
    let owner = MemoryOwner::new("app", "u").unwrap();
    let fact = agentstate::memory::NewMemory {
        content: agentstate::Content::text("user", "my dog is Rex"),
        ..Default::default()
    };
    memory.add_memories(&owner, vec![fact], &agentstate::memory::MemoryOptions::default()).await.unwrap();
    let runner = Runner::new("app", agent, service.clone()).memory(memory);
    create(&service, "s").await;
    let events = run_ok(&runner, "s", "what is my dog called?").await;
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().parts()[0].text.as_deref(), Some("Your dog is Rex."));

    let requests = server.received_requests().await.unwrap();
    let first: serde_json::Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(first["tools"][0]["functionDeclarations"][0]["name"], "load_memory", "{first}");
    assert!(first.to_string().contains("my dog is Rex"), "preload_memory put the memory in the request: {first}");
    let second = String::from_utf8(requests[1].body.clone()).unwrap();
    assert!(second.contains("functionResponse") && second.contains("my dog is Rex"), "{second}");

    // A name that is no built-in tool is refused, naming the ones there are.
    std::fs::write(&file, "name: helper\nmodel: m\ntools:\n  - name: google_search\n").unwrap();
    let error = agentstate_runtime::config::load_agent_with(&file, &|_| Some("k".into())).err().unwrap().to_string();
    assert!(error.contains("\"google_search\"") && error.contains("load_memory, preload_memory"), "{error}");
}
