//! "The Standard Way: `EventActions.state_delta`" of the ADK state guide: a system
//! event carrying a hand-built delta updates session and user state; its `temp:` key is applied
//! for the invocation and never stored.
//!
//! Run: `cargo run -p agentstate --example manual_state_delta`

use std::time::{SystemTime, UNIX_EPOCH};

use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};
use serde_json::json;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // --- Setup ---
    let session_service = SessionService::in_memory();
    let (app_name, user_id, session_id) = ("state_app_manual", "user2", "session2");
    let mut session = session_service
        .create_session(
            CreateSession::new(app_name, user_id)
                .id(session_id)
                .state("user:login_count", json!(0))
                .state("task_status", json!("idle")),
        )
        .await?;
    println!("Initial state: {}", serde_json::to_string(session.state())?);

    // --- Define state changes and the event carrying them ---
    let current_time = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64();
    let login_count = session.state().get("user:login_count").and_then(|v| v.as_i64()).unwrap_or(0);
    let system_event = Event::new("inv_login_update")
        .author("system")
        .at(current_time)
        .delta("task_status", json!("active")) // session state
        .delta("user:login_count", json!(login_count + 1)) // user state
        .delta("user:last_login_ts", json!(current_time)) // new user state
        .delta("temp:validation_needed", json!(true)); // temporary: discarded

    // --- Append the event: this updates the state ---
    session_service.append_event(&mut session, system_event).await?;
    println!("`append_event` called with explicit state delta.");

    // --- Check the updated state ---
    let updated = session_service
        .get_session(session.key(), GetSessionConfig::default())
        .await?
        .ok_or_else(|| anyhow::anyhow!("session disappeared"))?;
    println!("State after event: {}", serde_json::to_string(updated.state())?);

    let state = updated.state();
    anyhow::ensure!(state.get("user:login_count") == Some(&json!(1)), "login count should be 1");
    anyhow::ensure!(state.get("task_status") == Some(&json!("active")), "task should be active");
    anyhow::ensure!(state.contains("user:last_login_ts"), "last login time should be stored");
    anyhow::ensure!(!state.contains("temp:validation_needed"), "temp keys must not be stored");
    println!(
        "Expected: user:login_count = 1, task_status = active, user:last_login_ts set; 'temp:validation_needed' is NOT present."
    );
    Ok(())
}
