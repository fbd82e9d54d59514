//! `agentstate_adk_rust::AdkSessionService`, ADK-Rust's `SessionService` over agentstate's
//! stores, on in-memory, SQLite, PostgreSQL, MariaDB, Redis, a Redis Cluster and the
//! managed-service API: ADK-Rust's published session
//! contract, its state guide's example, bare-id addressing, erasure, exact times, bad input, and
//! 16 writers of one user's state at once.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;

use adk_core::{AdkIdentity, AppName, ErrorCategory, SessionId, UserId};
use adk_session::{
    AppendEventRequest, CreateRequest, DeleteRequest, Event, GetRequest, KEY_PREFIX_APP, KEY_PREFIX_USER, ListRequest,
    SessionService,
};
use agentstate_adk_rust::AdkSessionService;
use chrono::{DateTime, Utc};
use serde_json::json;

/// ADK-Rust's contract, as adk-session 2.3 publishes it (see `build.rs`).
#[allow(dead_code, unreachable_pub, clippy::all, clippy::pedantic)]
mod session_contract {
    include!(concat!(env!("OUT_DIR"), "/session_contract.rs"));
}

fn create(app: &str, user: &str, id: Option<&str>, state: HashMap<String, serde_json::Value>) -> CreateRequest {
    CreateRequest { app_name: app.into(), user_id: user.into(), session_id: id.map(str::to_owned), state }
}

fn get(app: &str, user: &str, id: &str) -> GetRequest {
    GetRequest {
        app_name: app.into(),
        user_id: user.into(),
        session_id: id.into(),
        num_recent_events: None,
        after: None,
    }
}

fn identity(app: &str, user: &str, id: &str) -> AdkIdentity {
    AdkIdentity::new(AppName::try_from(app).unwrap(), UserId::try_from(user).unwrap(), SessionId::try_from(id).unwrap())
}

fn event(invocation: &str, delta: &[(&str, serde_json::Value)]) -> Event {
    let mut event = Event::new(invocation);
    event.author = "agent".into();
    event.actions.state_delta.extend(delta.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    event
}

async fn contract(service: AdkSessionService) {
    session_contract::assert_session_contract(&service, "contract-app", "contract-other-app").await;
}

/// The complete example of ADK-Rust's state guide with only the constructor changed, and its
/// append snippet.
async fn seed_example(service: AdkSessionService) {
    let mut state1 = HashMap::new();
    state1.insert(format!("{KEY_PREFIX_APP}theme"), json!("dark"));
    state1.insert(format!("{KEY_PREFIX_USER}language"), json!("en"));
    state1.insert("context".to_string(), json!("session1"));
    service.create(create("my_app", "alice", Some("s1"), state1)).await.unwrap();
    let state2 = HashMap::from([("context".to_string(), json!("session2"))]);
    let session2 = service.create(create("my_app", "alice", Some("s2"), state2)).await.unwrap();
    assert_eq!(session2.state().get("app:theme"), Some(json!("dark")));
    assert_eq!(session2.state().get("user:language"), Some(json!("en")));
    assert_eq!(session2.state().get("context"), Some(json!("session2")));

    let event = event("invocation_123", &[("counter", json!(42)), ("user:last_seen", json!("2024-01-15"))]);
    service.append_event(session2.id(), event).await.unwrap();
    let s1 = service.get(get("my_app", "alice", "s1")).await.unwrap();
    assert_eq!(s1.state().get("user:last_seen"), Some(json!("2024-01-15")));
    assert_eq!(s1.state().get("counter"), None);
    assert_eq!(service.get(get("my_app", "alice", "s2")).await.unwrap().state().get("counter"), Some(json!(42)));
}

/// A bare session id names one session or is refused: unknown → not found, used by two sessions
/// (two users, in two apps: the managed service keeps ids unique per app) → an error that says
/// to give the identity; with the identity, the append goes where it says.
/// On a store that cannot list its apps (the managed service), a session is found by its id once
/// this service has created, read, listed or appended to it; an id it has not seen is refused
/// with the same advice.
async fn bare_ids(service: AdkSessionService) {
    let listable = service.service().list_apps().await.is_ok();
    service.create(create("bare", "u1", Some("shared-id"), HashMap::new())).await.unwrap();
    service.create(create("bare-too", "u2", Some("shared-id"), HashMap::new())).await.unwrap();
    service.create(create("bare", "u1", Some("own-id"), HashMap::new())).await.unwrap();
    service.append_event("own-id", event("i", &[("k", json!(1))])).await.unwrap();
    assert_eq!(service.get(get("bare", "u1", "own-id")).await.unwrap().state().get("k"), Some(json!(1)));

    let ambiguous = service.append_event("shared-id", event("i", &[("k", json!(2))])).await.unwrap_err();
    assert_eq!(ambiguous.category, ErrorCategory::InvalidInput, "{ambiguous}");
    assert!(ambiguous.message.contains("append_event_for_identity"), "{ambiguous}");
    let missing = service.append_event("no-such-id", event("i", &[])).await.unwrap_err();
    if listable {
        assert!(missing.is_not_found() && missing.code == "session.not_found", "{missing}");
    } else {
        assert_eq!(missing.category, ErrorCategory::InvalidInput, "{missing}");
        assert!(missing.message.contains("append_event_for_identity"), "{missing}");
    }
    for (app, user) in [("bare", "u1"), ("bare-too", "u2")] {
        let s = service.get(get(app, user, "shared-id")).await.unwrap();
        assert!(s.events().is_empty(), "nothing written to either");
    }
    let request =
        AppendEventRequest { identity: identity("bare-too", "u2", "shared-id"), event: event("i", &[("k", json!(3))]) };
    service.append_event_for_identity(request).await.unwrap();
    assert_eq!(service.get(get("bare-too", "u2", "shared-id")).await.unwrap().state().get("k"), Some(json!(3)));
    assert_eq!(service.get(get("bare", "u1", "shared-id")).await.unwrap().state().get("k"), None);

    // Created elsewhere (not through this service).
    let elsewhere = agentstate::CreateSession::new("bare", "u3").id("elsewhere");
    service.service().create_session(elsewhere).await.unwrap();
    let first = service.append_event("elsewhere", event("i", &[("k", json!(4))])).await;
    if listable {
        first.unwrap();
    } else {
        let refused = first.unwrap_err();
        assert!(refused.message.contains("append_event_for_identity"), "{refused}");
        service.get(get("bare", "u3", "elsewhere")).await.unwrap();
        service.append_event("elsewhere", event("i", &[("k", json!(4))])).await.unwrap();
    }
    assert_eq!(service.get(get("bare", "u3", "elsewhere")).await.unwrap().state().get("k"), Some(json!(4)));
    // Deleted: not found by its id, on every store.
    service
        .delete(DeleteRequest { app_name: "bare".into(), user_id: "u3".into(), session_id: "elsewhere".into() })
        .await
        .unwrap();
    let gone = service.append_event("elsewhere", event("i", &[])).await.unwrap_err();
    assert!(gone.is_not_found() && gone.code == "session.not_found", "{gone}");
}

/// Times to the nanosecond through the adapter, and `after` windows exact at their bound.
async fn exact_times(service: AdkSessionService) {
    service.create(create("times", "u", Some("t"), HashMap::new())).await.unwrap();
    let t0: DateTime<Utc> = "2031-05-06T07:08:09.123456789Z".parse().unwrap();
    let times = [t0, t0 + chrono::Duration::nanoseconds(1_000_601), t0 + chrono::Duration::seconds(1)];
    for (i, time) in times.iter().enumerate() {
        let mut e = event(&format!("inv-{i}"), &[]);
        e.timestamp = *time;
        let request = AppendEventRequest { identity: identity("times", "u", "t"), event: e };
        service.append_event_for_identity(request).await.unwrap();
    }
    let window = |after: Option<DateTime<Utc>>, recent: Option<usize>| GetRequest {
        after,
        num_recent_events: recent,
        ..get("times", "u", "t")
    };
    let stamps = |s: Box<dyn adk_session::Session>| s.events().all().iter().map(|e| e.timestamp).collect::<Vec<_>>();
    assert_eq!(stamps(service.get(window(None, None)).await.unwrap()), times);
    assert_eq!(stamps(service.get(window(Some(times[1]), None)).await.unwrap()), times[1..]);
    let just_after = times[1] + chrono::Duration::nanoseconds(1);
    assert_eq!(stamps(service.get(window(Some(just_after), None)).await.unwrap()), times[2..]);
    assert_eq!(stamps(service.get(window(None, Some(2))).await.unwrap()), times[1..]);
}

/// Bad identities answer ADK-Rust's invalid-input errors and write nothing; a missing session
/// is `session.not_found`; `delete_all_sessions` erases one user's sessions only; the identity
/// forms of get and delete; the health check.
async fn errors_and_erasure(service: AdkSessionService) {
    let bad = service.create(create("", "u", None, HashMap::new())).await.err().expect("an empty app name");
    assert_eq!(bad.category, ErrorCategory::InvalidInput, "{bad}");
    // ADK-Rust's rules refuse a NUL; agentstate's, surrounding whitespace: both are bad input.
    for user in ["u\0x", " u"] {
        let bad = service.get(get("app", user, "s")).await.err().expect("a bad user id");
        assert_eq!(bad.category, ErrorCategory::InvalidInput, "{bad}");
        let bad = service.create(create("app", user, None, HashMap::new())).await.err().expect("a bad user id");
        assert_eq!(bad.category, ErrorCategory::InvalidInput, "{bad}");
    }
    let listed = service.list(ListRequest { app_name: "app".into(), user_id: "u".into(), limit: None, offset: None });
    assert!(listed.await.unwrap().is_empty(), "nothing was written");
    let missing = service.get(get("app", "u", "nothing")).await.err().expect("a missing session");
    assert!(missing.is_not_found() && missing.code == "session.not_found", "{missing}");

    for (user, id) in [("gone", "a"), ("gone", "b"), ("stays", "c")] {
        service
            .create(create("erase", user, Some(id), HashMap::from([("user:x".to_string(), json!(1))])))
            .await
            .unwrap();
    }
    service.delete_all_sessions("erase", "gone").await.unwrap();
    let list = |user: &str| ListRequest { app_name: "erase".into(), user_id: user.into(), limit: None, offset: None };
    assert!(service.list(list("gone")).await.unwrap().is_empty());
    assert_eq!(service.list(list("stays")).await.unwrap().len(), 1);
    service
        .delete(DeleteRequest { app_name: "erase".into(), user_id: "stays".into(), session_id: "c".into() })
        .await
        .unwrap();
    assert!(service.list(list("stays")).await.unwrap().is_empty());

    // The identity forms of get and delete.
    let state = HashMap::from([("k".to_string(), json!(5))]);
    service.create(create("erase", "stays", Some("d"), state)).await.unwrap();
    let by_identity = service.get_for_identity(&identity("erase", "stays", "d")).await.unwrap();
    assert_eq!((by_identity.id(), by_identity.state().get("k")), ("d", Some(json!(5))));
    service.delete_for_identity(&identity("erase", "stays", "d")).await.unwrap();
    let gone = service.get_for_identity(&identity("erase", "stays", "d")).await.err().expect("deleted");
    assert!(gone.is_not_found() && gone.code == "session.not_found", "{gone}");
    service.health_check().await.unwrap();
}

/// `rewind` and `rewind_steps` as ADK-Rust's trait reads them (only the events up to the target
/// and the state they leave), while agentstate's history keeps what was rewound.
async fn rewinds(service: AdkSessionService) {
    let created =
        service.create(create("rw", "u", Some("r"), HashMap::from([("k".to_string(), json!("init"))]))).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..4 {
        let e =
            event(&format!("inv-{i}"), &[("k", json!(i)), (&format!("only{i}"), json!(true)), ("user:seen", json!(i))]);
        ids.push(e.id.clone());
        service
            .append_event_for_identity(AppendEventRequest { identity: created.try_identity().unwrap(), event: e })
            .await
            .unwrap();
    }
    let ids_of = |s: &dyn adk_session::Session| s.events().all().iter().map(|e| e.id.clone()).collect::<Vec<_>>();

    let rewound = service.rewind("r", &ids[1]).await.unwrap();
    assert_eq!(ids_of(rewound.as_ref()), ids[..2]);
    assert_eq!(rewound.state().get("k"), Some(json!(1)));
    assert_eq!((rewound.state().get("only2"), rewound.state().get("only1")), (None, Some(json!(true))));
    assert_eq!(rewound.state().get("user:seen"), Some(json!(3)), "user: state is not rewound");
    let read = service.get(get("rw", "u", "r")).await.unwrap();
    assert_eq!((ids_of(read.as_ref()), read.state().all()), (ids[..2].to_vec(), rewound.state().all()));
    let key = agentstate::SessionKey::new("rw", "u", "r").unwrap();
    let history = service.service().get_session(&key, agentstate::GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(history.events().len(), 5, "agentstate's history keeps what was rewound, and the rewind");

    // A window counts live events, as ADK-Rust's stores (which delete) do.
    let newest = GetRequest { num_recent_events: Some(2), ..get("rw", "u", "r") };
    assert_eq!(ids_of(service.get(newest).await.unwrap().as_ref()), ids[..2]);
    assert_eq!(ids_of(service.rewind_steps("r", 0).await.unwrap().as_ref()), ids[..2]);
    let one = service.rewind_steps("r", 1).await.unwrap();
    assert_eq!((ids_of(one.as_ref()), one.state().get("k")), (ids[..1].to_vec(), Some(json!(0))));
    let too_many = service.rewind_steps("r", 2).await.err().expect("more steps than events");
    assert_eq!(too_many.category, ErrorCategory::InvalidInput, "{too_many}");
    let unknown = service.rewind("r", &ids[3]).await.err().expect("a rewound event is no target");
    assert_eq!(unknown.category, ErrorCategory::InvalidInput, "{unknown}");
    let all = service.rewind_steps("r", 1).await.unwrap();
    assert!(all.events().is_empty());
    assert_eq!((all.state().get("k"), all.state().get("only0")), (Some(json!("init")), None), "as created");
}

/// 16 writers at once on 16 sessions of one user, each writing its own `user:` key: all 16 kept.
async fn sixteen_writers(service: AdkSessionService) {
    let service = Arc::new(service);
    for i in 0..16 {
        service.create(create("writers", "u", Some(&format!("s{i}")), HashMap::new())).await.unwrap();
    }
    let writers = (0..16).map(|i| {
        let service = Arc::clone(&service);
        tokio::spawn(async move {
            let e = event("inv", &[(&format!("user:k{i}"), json!(i))]);
            let request = AppendEventRequest { identity: identity("writers", "u", &format!("s{i}")), event: e };
            service.append_event_for_identity(request).await
        })
    });
    for writer in writers.collect::<Vec<_>>() {
        writer.await.unwrap().unwrap();
    }
    let state = service.get(get("writers", "u", "s0")).await.unwrap().state().all();
    let kept = (0..16).filter(|i| state.get(&format!("user:k{i}")) == Some(&json!(i))).count();
    assert_eq!(kept, 16, "{state:?}");
}

macro_rules! on_every_backend {
    ($($backend:ident),*) => {
        $(
            mod $backend {
                use super::*;

                async fn service() -> AdkSessionService {
                    AdkSessionService::new(agentstate_adk_rust_clients::$backend().await)
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn adk_rust_session_contract() {
                    contract(service().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn the_state_guide_example() {
                    seed_example(service().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn bare_session_ids() {
                    bare_ids(service().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn times_to_the_nanosecond() {
                    exact_times(service().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn errors_and_erasure_of_a_user() {
                    errors_and_erasure(service().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn rewind_and_rewind_steps() {
                    rewinds(service().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sixteen_writers_of_one_user_lose_nothing() {
                    sixteen_writers(service().await).await;
                }
            }
        )*
    };
}

on_every_backend!(in_memory, sqlite, postgres, mysql, redis, agent_engine);

/// Every scenario above on a Redis Cluster of the test's own (three masters), each on a key
/// prefix of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster() {
    let cluster =
        tokio::task::spawn_blocking(agentstate_conformance::redis_servers::RedisCluster::start).await.unwrap();
    let service = || async { AdkSessionService::new(agentstate_adk_rust_clients::redis_cluster(&cluster).await) };
    contract(service().await).await;
    seed_example(service().await).await;
    bare_ids(service().await).await;
    exact_times(service().await).await;
    errors_and_erasure(service().await).await;
    rewinds(service().await).await;
    sixteen_writers(service().await).await;
    let holding = cluster.keys_per_node();
    assert!(holding.iter().filter(|&&keys| keys > 0).count() >= 2, "apps spread over the nodes: {holding:?}");
}

/// `open` takes the URLs `agentstate serve --db` takes, with its errors.
#[tokio::test]
async fn open_takes_the_servers_urls() {
    let service = AdkSessionService::open("sqlite::memory:").await.unwrap();
    service.create(create("a", "u", Some("s"), HashMap::new())).await.unwrap();
    let bad = AdkSessionService::open("ftp://somewhere").await.unwrap_err().to_string();
    assert!(bad.contains("unsupported scheme"), "{bad}");
}

/// Every field is kept by default, `llm_request` included; `without_llm_requests` stores
/// events without it and its telemetry copies (as ADK-Rust's SQL services do) and everything
/// else as before.
#[tokio::test]
async fn llm_requests_are_kept_unless_asked_not_to() {
    for keep in [true, false] {
        let service = AdkSessionService::new(agentstate_adk_rust_clients::sqlite().await);
        let service = if keep { service } else { service.without_llm_requests() };
        service.create(create("llm", "u", Some("s"), HashMap::new())).await.unwrap();
        let mut sent = event("inv", &[("k", json!(1))]);
        sent.llm_request = Some(r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#.into());
        sent.provider_metadata.insert("p".into(), "v".into());
        sent.provider_metadata.insert("gcp.vertex.agent.llm_request".into(), "{}".into());
        sent.provider_metadata.insert("gcp.vertex.agent.llm_response".into(), "{}".into());
        let request = AppendEventRequest { identity: identity("llm", "u", "s"), event: sent.clone() };
        service.append_event_for_identity(request).await.unwrap();
        let read = service.get(get("llm", "u", "s")).await.unwrap().events().all().remove(0);
        let expected = if keep { sent.llm_request.clone() } else { None };
        assert_eq!(read.llm_request, expected, "keep: {keep}");
        assert_eq!(read.provider_metadata.len(), if keep { 3 } else { 1 }, "keep: {keep}");
        let (mut read, mut sent) = (read, sent);
        for event in [&mut read, &mut sent] {
            event.llm_request = None;
            event.provider_metadata.retain(|k, _| k == "p");
        }
        assert_eq!(serde_json::to_value(&read).unwrap(), serde_json::to_value(&sent).unwrap(), "keep: {keep}");
    }
}
