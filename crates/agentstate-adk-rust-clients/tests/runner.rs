//! ADK-Rust's own `Runner` (adk-runner 2.3) with an `LlmAgent` on a scripted model — a tool that
//! writes `user:` and `temp:` state, `output_key`, an instruction that reads `{user:name}` — on
//! `AdkSessionService` over SQLite, PostgreSQL and Redis, against ADK-Rust's own
//! `InMemorySessionService` as the oracle: the same turns store the same session, ids and
//! clocks aside.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use adk_agent::LlmAgentBuilder;
use adk_core::{Content, Llm, LlmRequest, LlmResponse, LlmResponseStream, Part, SessionId, Tool, ToolContext, UserId};
use adk_runner::Runner;
use adk_session::{CreateRequest, GetRequest, InMemorySessionService, SessionService};
use agentstate_adk_rust::AdkSessionService;
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

/// Answers a user's message with a call of `remember`, and the tool's answer with text; keeps
/// every request it was sent (its configuration and contents, where the instruction is).
#[derive(Default)]
struct ScriptedModel {
    requests: Mutex<Vec<String>>,
}

#[async_trait]
impl Llm for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate_content(&self, req: LlmRequest, _stream: bool) -> adk_core::Result<LlmResponseStream> {
        self.requests.lock().unwrap().push(format!("{:?} {:?}", req.config, req.contents));
        let answered_tool =
            req.contents.last().is_some_and(|c| c.parts.iter().any(|p| matches!(p, Part::FunctionResponse { .. })));
        let said = req
            .contents
            .iter()
            .rev()
            .find(|c| c.role == "user")
            .and_then(|c| c.parts.iter().find_map(|p| p.text().map(str::to_owned)))
            .unwrap_or_default();
        let part = if answered_tool {
            Part::Text { text: format!("Noted: {said}") }
        } else {
            Part::FunctionCall {
                name: "remember".into(),
                args: json!({"name": said}),
                id: None,
                thought_signature: None,
            }
        };
        let response = LlmResponse {
            content: Some(Content { role: "model".into(), parts: vec![part] }),
            turn_complete: true,
            ..LlmResponse::default()
        };
        Ok(Box::pin(futures::stream::iter(vec![Ok(response)])))
    }
}

/// Writes the name to `user:name` and a scratch value to `temp:scratch`.
struct Remember;

#[async_trait]
impl Tool for Remember {
    fn name(&self) -> &str {
        "remember"
    }

    fn description(&self) -> &str {
        "Remembers the user's name"
    }

    async fn execute(&self, ctx: Arc<dyn ToolContext>, args: Value) -> adk_core::Result<Value> {
        let mut actions = ctx.actions();
        actions.state_delta.insert("user:name".into(), args["name"].clone());
        actions.state_delta.insert("temp:scratch".into(), json!(1));
        ctx.set_actions(actions);
        Ok(json!({"remembered": args["name"]}))
    }
}

/// Two turns of the runner on `service`; the stored session (events without ids and times,
/// state) and the instructions the model was sent.
async fn two_turns(service: Arc<dyn SessionService>) -> (Vec<Value>, HashMap<String, Value>, Vec<String>) {
    let model = Arc::new(ScriptedModel::default());
    let agent = LlmAgentBuilder::new("assistant")
        .model(Arc::clone(&model) as Arc<dyn Llm>)
        .instruction("You help {user:name}.")
        .output_key("last_reply")
        .tool(Arc::new(Remember))
        .build()
        .unwrap();
    let initial = HashMap::from([("user:name".to_string(), json!("nobody"))]);
    let created = service
        .create(CreateRequest {
            app_name: "app".into(),
            user_id: "ann".into(),
            session_id: Some("s".into()),
            state: initial,
        })
        .await
        .unwrap();
    let runner = Runner::builder()
        .app_name("app")
        .agent(Arc::new(agent) as Arc<dyn adk_core::Agent>)
        .session_service(Arc::clone(&service))
        .build()
        .unwrap();
    for said in ["Ann", "Bob"] {
        let content = Content { role: "user".into(), parts: vec![Part::Text { text: said.into() }] };
        let mut events =
            runner.run(UserId::new("ann").unwrap(), SessionId::new(created.id()).unwrap(), content).await.unwrap();
        while let Some(event) = events.next().await {
            event.unwrap();
        }
    }
    let stored = service
        .get(GetRequest {
            app_name: "app".into(),
            user_id: "ann".into(),
            session_id: "s".into(),
            num_recent_events: None,
            after: None,
        })
        .await
        .unwrap();
    let events = stored
        .events()
        .all()
        .iter()
        .map(|e| {
            let mut e = serde_json::to_value(e).unwrap();
            for volatile in ["id", "timestamp", "invocation_id"] {
                e.as_object_mut().unwrap().remove(volatile);
            }
            // Function call ids are generated per run.
            strip_ids(&mut e);
            e
        })
        .collect();
    let instructions = model.requests.lock().unwrap().clone();
    (events, stored.state().all(), instructions)
}

fn strip_ids(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("name") && (map.contains_key("args") || map.contains_key("response")) {
                map.remove("id");
            }
            if map.contains_key("functionResponse") {
                map.remove("id");
            }
            map.values_mut().for_each(strip_ids);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_ids),
        _ => {}
    }
}

async fn same_as_in_memory(service: AdkSessionService) {
    let (oracle_events, oracle_state, oracle_instructions) = two_turns(Arc::new(InMemorySessionService::new())).await;
    let (events, state, instructions) = two_turns(Arc::new(service)).await;
    assert_eq!(state, oracle_state);
    assert_eq!(state.get("user:name"), Some(&json!("Bob")));
    assert_eq!(state.get("last_reply"), Some(&json!("Noted: Bob")));
    assert!(!state.contains_key("temp:scratch"), "temp: state is not stored: {state:?}");
    assert_eq!(events.len(), oracle_events.len(), "{events:#?}\n{oracle_events:#?}");
    for (got, expected) in events.iter().zip(&oracle_events) {
        assert_eq!(got, expected);
    }
    assert_eq!(instructions, oracle_instructions, "the instruction read user:name from storage");
    assert!(instructions.iter().any(|i| i.contains("You help Ann.")), "{instructions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    same_as_in_memory(AdkSessionService::new(agentstate_adk_rust_clients::sqlite().await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    same_as_in_memory(AdkSessionService::new(agentstate_adk_rust_clients::postgres().await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    same_as_in_memory(AdkSessionService::new(agentstate_adk_rust_clients::redis().await)).await;
}
