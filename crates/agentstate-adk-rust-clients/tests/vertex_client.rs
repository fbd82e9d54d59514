//! ADK-Rust's own Agent Engine client (`adk_session::VertexAiSessionService`, adk-session 2.3
//! with `vertex-session`) pointed at an agentstate server, nothing between them, on SQLite,
//! PostgreSQL, MariaDB and Redis: ADK-Rust's published session contract, the scoping example of
//! its state guide, and times to the nanosecond.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;

use adk_session::{
    AppendEventRequest, CreateRequest, Event, GetRequest, KEY_PREFIX_APP, KEY_PREFIX_USER, ListRequest, SessionService,
    VertexAiSessionConfig, VertexAiSessionService,
};
use agentstate_adk_rust_clients::{API_KEY, serve};
use chrono::{DateTime, Utc};
use google_cloud_auth::credentials::api_key_credentials;
use serde_json::json;

/// ADK-Rust's contract, as adk-session 2.3 publishes it (see `build.rs`).
#[allow(dead_code, unreachable_pub, clippy::all, clippy::pedantic)]
mod session_contract {
    include!(concat!(env!("OUT_DIR"), "/session_contract.rs"));
}

/// The client as an ADK-Rust user builds it, with the two lines that point it at agentstate:
/// the endpoint, and an API key the server accepts.
fn client(
    base: &str,
    configure: impl FnOnce(VertexAiSessionConfig) -> VertexAiSessionConfig,
) -> VertexAiSessionService {
    let config = configure(VertexAiSessionConfig::new("my-project", "us-central1").with_endpoint(base));
    let credentials = api_key_credentials::Builder::new(API_KEY).build();
    VertexAiSessionService::with_credentials(config, credentials).unwrap()
}

async fn contract(service: agentstate::SessionService) {
    let base = serve(service).await;
    // App names are engine ids, as ADK-Rust's own Vertex test has them.
    session_contract::assert_session_contract(&client(&base, |c| c), "1001", "2002").await;
}

/// The complete example of ADK-Rust's state guide, on agentstate through ADK-Rust's client; a
/// logical app name needs the engine named in the configuration.
async fn seed_example(service: agentstate::SessionService) {
    let base = serve(service).await;
    let service = client(&base, |c| c.with_reasoning_engine("1001"));
    let mut state1 = HashMap::new();
    state1.insert(format!("{KEY_PREFIX_APP}theme"), json!("dark"));
    state1.insert(format!("{KEY_PREFIX_USER}language"), json!("en"));
    state1.insert("context".to_string(), json!("session1"));
    let request = |id: &str, state| CreateRequest {
        app_name: "my_app".to_string(),
        user_id: "alice".to_string(),
        session_id: Some(id.to_string()),
        state,
    };
    service.create(request("s1", state1)).await.unwrap();
    let mut state2 = HashMap::new();
    state2.insert("context".to_string(), json!("session2"));
    let session2 = service.create(request("s2", state2)).await.unwrap();
    let s2_state = session2.state();
    assert_eq!(s2_state.get("app:theme"), Some(json!("dark")));
    assert_eq!(s2_state.get("user:language"), Some(json!("en")));
    assert_eq!(s2_state.get("context"), Some(json!("session2")));

    // The guide's append: `counter` for this session, `user:last_seen` for alice's. (ADK-Rust's
    // Agent Engine client refuses an event without an author before sending it.)
    let mut event = Event::new("invocation_123");
    event.author = "user".to_string();
    event.actions.state_delta.insert("counter".to_string(), json!(42));
    event.actions.state_delta.insert("user:last_seen".to_string(), json!("2024-01-15"));
    service.append_event(session2.id(), event).await.unwrap();
    let get = |id: &str| GetRequest {
        app_name: "my_app".to_string(),
        user_id: "alice".to_string(),
        session_id: id.to_string(),
        num_recent_events: None,
        after: None,
    };
    let s1 = service.get(get("s1")).await.unwrap();
    assert_eq!(s1.state().get("user:last_seen"), Some(json!("2024-01-15")), "user: state is every session's");
    assert_eq!(s1.state().get("counter"), None, "session state is its own");
    assert_eq!(service.get(get("s2")).await.unwrap().state().get("counter"), Some(json!(42)));
}

/// A time to the nanosecond goes through create → append → get (whole, newest, after) → list
/// exactly; the same events read through agentstate's own API keep it too.
async fn nanoseconds(service: agentstate::SessionService) {
    let base = serve(service.clone()).await;
    let client = client(&base, |c| c);
    let session = client
        .create(CreateRequest {
            app_name: "1001".to_string(),
            user_id: "u".to_string(),
            session_id: None,
            state: HashMap::new(),
        })
        .await
        .unwrap();
    let t1: DateTime<Utc> = "2031-05-06T07:08:09.123456789Z".parse().unwrap();
    let times = [t1, t1 + chrono::Duration::nanoseconds(1_000_001), t1 + chrono::Duration::seconds(1)];
    for (i, time) in times.iter().enumerate() {
        let mut event = Event::new(format!("inv-{i}"));
        event.author = "agent".to_string();
        event.timestamp = *time;
        let request = AppendEventRequest {
            identity: adk_core::AdkIdentity::new(
                adk_core::AppName::try_from("1001").unwrap(),
                adk_core::UserId::try_from("u").unwrap(),
                adk_core::SessionId::try_from(session.id()).unwrap(),
            ),
            event,
        };
        client.append_event_for_identity(request).await.unwrap();
    }
    let get = |recent: Option<usize>, after: Option<DateTime<Utc>>| GetRequest {
        app_name: "1001".to_string(),
        user_id: "u".to_string(),
        session_id: session.id().to_string(),
        num_recent_events: recent,
        after,
    };
    let stamps = |s: &dyn adk_session::Session| -> Vec<DateTime<Utc>> {
        (0..s.events().len()).map(|i| s.events().at(i).unwrap().timestamp).collect()
    };
    assert_eq!(stamps(client.get(get(None, None)).await.unwrap().as_ref()), times);
    assert_eq!(stamps(client.get(get(Some(1), None)).await.unwrap().as_ref()), times[2..]);
    assert_eq!(stamps(client.get(get(None, Some(times[1]))).await.unwrap().as_ref()), times[1..]);
    let just_after = times[1] + chrono::Duration::nanoseconds(1);
    assert_eq!(stamps(client.get(get(None, Some(just_after))).await.unwrap().as_ref()), times[2..]);
    let listed = client
        .list(ListRequest { app_name: "1001".to_string(), user_id: "u".to_string(), limit: None, offset: None })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);

    // agentstate's own reading of the same events (the client keeps its session under an id
    // of its own making): the exact time, and the float nearest it.
    let all = service.list_sessions(agentstate::ListSessions::user("1001", "u")).await.unwrap();
    let [only] = &all.sessions[..] else { panic!("one session: {:?}", all.sessions) };
    let stored = service.get_session(only.key(), agentstate::GetSessionConfig::default()).await.unwrap().unwrap();
    for (event, time) in stored.events().iter().zip(&times) {
        assert_eq!(event.time().nanos(), time.timestamp_nanos_opt().unwrap());
        assert_eq!(event.timestamp, event.time().secs());
    }
}

macro_rules! on_every_backend {
    ($($backend:ident),*) => {
        $(
            mod $backend {
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn adk_rust_session_contract() {
                    contract(agentstate_adk_rust_clients::$backend().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn the_state_guide_example() {
                    seed_example(agentstate_adk_rust_clients::$backend().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn times_to_the_nanosecond() {
                    nanoseconds(agentstate_adk_rust_clients::$backend().await).await;
                }
            }
        )*
    };
}

on_every_backend!(sqlite, postgres, mysql, redis);
