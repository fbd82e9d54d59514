//! agentstate's own client of the managed-service API (`agentstate-vertex`) against this
//! server: the conformance suite and the model test on every stack, as every store runs them,
//! and the client without agentstate's extensions (as it talks to Google) on the plain API.

use std::sync::{Arc, OnceLock};

use agentstate::clock::ManualClock;
use agentstate::store::SessionStore;
use agentstate::{CreateSession, GetSessionConfig, ListSessions, SessionKey, SessionService};
use agentstate_server::{AppState, Tokens, app};
use agentstate_sql::SqlStore;
use agentstate_vertex::{Credentials, VertexAiStore};
use serde_json::json;

const TOKEN: &str = "vertex-conformance-token-0123";

/// One server for the tests that keep the system's time (the cases use apps of their own).
fn server() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| super::vertex::serve(Some(&format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": "*"}}]}}"#))))
}

fn client(base: &str, extensions: bool) -> VertexAiStore {
    VertexAiStore::builder()
        .endpoint(base)
        .credentials(Credentials::bearer(TOKEN))
        .agentstate_extensions(extensions)
        .build()
        .unwrap()
}

/// The client, talking to a server of the case's own (SQLite in memory, in the case's runtime)
/// whose service reads the case's clock, so that expiry cases move the server's time too.
async fn store(clock: ManualClock) -> Arc<dyn SessionStore> {
    let database = SqlStore::connect("sqlite::memory:").await.unwrap();
    let service = SessionService::builder(database).clock(clock).build().unwrap();
    let tokens = Tokens::parse(&format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": "*"}}]}}"#)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app(AppState::new(service).with_tokens(tokens))).await });
    Arc::new(client(&base, true))
}

agentstate_conformance::session_store_tests!(
    store,
    lacks: [session_ids_per_user, retention, lifecycle, admin, shared_state, memory, leases, artifacts],
    model_cases: 48
);

#[test]
fn the_extension_headers_are_the_ones_the_server_reads() {
    let document = agentstate_server::openapi::document(agentstate_server::OPERATIONS);
    let text = document.to_string();
    for header in [agentstate_vertex::USER_HEADER, agentstate_vertex::LAST_UPDATE_HEADER] {
        assert!(text.contains(&format!("\"name\":\"{header}\"")), "{header} is not in the OpenAPI document");
    }
}

/// Without the extensions the client speaks the plain API, as to Google: every call works,
/// lists come back in the store order, and sessions of another user are not shown.
#[tokio::test]
async fn without_extensions_the_plain_api_serves_every_call() {
    let plain = SessionService::new(client(server(), false));
    let app = agentstate_conformance::unique("plain");
    let mut alice = plain
        .create_session(
            CreateSession::new(&app, "alice")
                .id("a1")
                .with_state(json!({"k": 1, "user:u": 1}).as_object().unwrap().clone())
                .label("team", "x"),
        )
        .await
        .unwrap();
    for i in 0..130 {
        let mut event = agentstate::Event::new(format!("inv{i}")).author("agent");
        event.actions.state_delta.insert("n".into(), json!(i));
        plain.append_event(&mut alice, event).await.unwrap();
    }
    plain.create_session(CreateSession::new(&app, "bob").id("b1")).await.unwrap();
    let got = plain.get_session(alice.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(
        (got.events().len(), got.state().get("n"), got.state().get("user:u")),
        (130, Some(&json!(129)), Some(&json!(1)))
    );
    assert_eq!(got.attributes().labels["team"], "x");
    let recent = plain.get_session(alice.key(), GetSessionConfig::recent(3)).await.unwrap().unwrap();
    assert_eq!(
        recent.events().iter().map(|e| e.invocation_id.as_str()).collect::<Vec<_>>(),
        ["inv127", "inv128", "inv129"]
    );
    let not_bobs = SessionKey::new(&app, "bob", "a1").unwrap();
    assert!(plain.get_session(&not_bobs, GetSessionConfig::default()).await.unwrap().is_none());
    plain.delete_session(&not_bobs).await.unwrap();
    assert!(
        plain.get_session(alice.key(), GetSessionConfig::recent(0)).await.unwrap().is_some(),
        "bob deleted alice's"
    );
    let mut listed = Vec::new();
    let mut token = None;
    loop {
        let page = plain
            .list_sessions(ListSessions {
                app_name: app.clone(),
                page_size: Some(1),
                page_token: token,
                ..ListSessions::default()
            })
            .await
            .unwrap();
        listed.extend(page.sessions.iter().map(|s| s.id().to_owned()));
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(listed, ["a1", "b1"], "oldest update first: alice appended before bob was created");
    plain.delete_session(alice.key()).await.unwrap();
    assert!(plain.get_session(alice.key(), GetSessionConfig::recent(0)).await.unwrap().is_none());
}
