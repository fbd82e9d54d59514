//! The complete example of ADK-Rust's state guide, on agentstate: only the line that builds the
//! service differs (`InMemorySessionService::new()` there). Then the guide's `append_event`
//! snippet. Run: `cargo run -p agentstate-adk-rust --example state_scoping`.
#![allow(clippy::uninlined_format_args)] // as the guide writes it

use adk_session::{CreateRequest, Event, EventActions, KEY_PREFIX_APP, KEY_PREFIX_USER, SessionService};
use agentstate_adk_rust::AdkSessionService;
use serde_json::json;
use std::collections::HashMap;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let service = AdkSessionService::open("sqlite::memory:").await?;

    // Create first session with initial state
    let mut state1 = HashMap::new();
    state1.insert(format!("{}theme", KEY_PREFIX_APP), json!("dark"));
    state1.insert(format!("{}language", KEY_PREFIX_USER), json!("en"));
    state1.insert("context".to_string(), json!("session1"));

    let session1 = service
        .create(CreateRequest {
            app_name: "my_app".to_string(),
            user_id: "alice".to_string(),
            session_id: Some("s1".to_string()),
            state: state1,
        })
        .await?;

    // Create second session for same user
    let mut state2 = HashMap::new();
    state2.insert("context".to_string(), json!("session2"));

    let session2 = service
        .create(CreateRequest {
            app_name: "my_app".to_string(),
            user_id: "alice".to_string(),
            session_id: Some("s2".to_string()),
            state: state2,
        })
        .await?;

    // Session 2 inherits app and user state
    let s2_state = session2.state();

    // App state is shared
    assert_eq!(s2_state.get("app:theme"), Some(json!("dark")));

    // User state is shared
    assert_eq!(s2_state.get("user:language"), Some(json!("en")));

    // Session state is separate
    assert_eq!(s2_state.get("context"), Some(json!("session2")));

    println!("State scoping works correctly!");

    // The guide's state update through an event.
    let mut state_delta = HashMap::new();
    state_delta.insert("counter".to_string(), json!(42));
    state_delta.insert("user:last_seen".to_string(), json!("2024-01-15"));

    let mut event = Event::new("invocation_123");
    event.actions = EventActions { state_delta, ..Default::default() };

    // When this event is appended, state is updated
    service.append_event(session1.id(), event).await?;

    let s1 = service.get_for_identity(&session1.try_identity()?).await?;
    println!("counter: {}", s1.state().get("counter").unwrap_or_default());
    println!("user:last_seen: {}", s1.state().get("user:last_seen").unwrap_or_default());
    Ok(())
}
