//! The "complete example" of the ADK state-management guide: a second session of
//! the same user inherits app and user state; session state stays separate.
//!
//! Run: `cargo run -p agentstate --example scoped_state`

use agentstate::{APP_PREFIX, CreateSession, SessionService, USER_PREFIX};
use serde_json::json;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let service = SessionService::in_memory();

    // Create the first session with initial state.
    let session1 = service
        .create_session(
            CreateSession::new("my_app", "alice")
                .id("s1")
                .state(format!("{APP_PREFIX}theme"), json!("dark"))
                .state(format!("{USER_PREFIX}language"), json!("en"))
                .state("context", json!("session1")),
        )
        .await?;
    println!("session 1 state: {}", serde_json::to_string(session1.state())?);

    // Create a second session for the same user.
    let session2 = service
        .create_session(CreateSession::new("my_app", "alice").id("s2").state("context", json!("session2")))
        .await?;
    let s2_state = session2.state();
    println!("session 2 state: {}", serde_json::to_string(s2_state)?);

    // App state is shared.
    anyhow::ensure!(s2_state.get("app:theme") == Some(&json!("dark")), "app state is not shared");
    // User state is shared.
    anyhow::ensure!(s2_state.get("user:language") == Some(&json!("en")), "user state is not shared");
    // Session state is separate.
    anyhow::ensure!(s2_state.get("context") == Some(&json!("session2")), "session state leaked");

    println!("State scoping works correctly!");
    Ok(())
}
