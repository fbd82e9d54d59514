//! ADK-Rust's own `Runner` (adk-runner 2.3) with an `LlmAgent` on a scripted model — a tool that
//! writes `user:` and `temp:` state, `output_key`, an instruction that reads `{user:name}` — on
//! `AdkSessionService` over SQLite, PostgreSQL and Redis, against ADK-Rust's own
//! `InMemorySessionService` as the oracle: the same turns store the same session, ids and
//! clocks aside.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;

use adk_session::{GetRequest, InMemorySessionService, SessionService};
use agentstate_adk_rust::AdkSessionService;
use agentstate_adk_rust_clients::scripted::{self, ScriptedModel};
use serde_json::{Value, json};

/// Two turns of the runner on `service`; the stored session (events without ids and times,
/// state) and the instructions the model was sent.
async fn two_turns(service: Arc<dyn SessionService>) -> (Vec<Value>, HashMap<String, Value>, Vec<String>) {
    let model = Arc::new(ScriptedModel::default());
    let runner =
        scripted::runner("app", scripted::assistant(Arc::clone(&model)).unwrap(), Arc::clone(&service)).unwrap();
    scripted::create(service.as_ref(), "app", "ann", "s").await.unwrap();
    for said in ["Ann", "Bob"] {
        scripted::turn(&runner, "ann", "s", said).await.unwrap();
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
