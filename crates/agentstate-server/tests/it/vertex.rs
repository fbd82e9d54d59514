//! The managed-service surface against the reference's own client: ADK for Python's
//! `VertexAiSessionService`, pointed at this server, must see what its `InMemorySessionService`
//! sees on the same steps (ids and clocks aside), in each way it can be configured.

use std::net::SocketAddr;
use std::process::Command;

use agentstate_conformance::reference::adk_python;
use agentstate_server::{AppState, Connections, Tls, Tokens, app};
use serde_json::{Value, json};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vertex/reference_client.py");
const TOKEN: &str = "vertex-client-token-0123456789";

/// Serves `app` (REST, and gRPC beside it) over SQLite on a free loopback port, on a thread of
/// its own, for the rest of the test run; its base URL.
pub(crate) fn serve(tokens: Option<&str>) -> String {
    format!("http://{}", serve_on(tokens.map(|json| Tokens::parse(json).unwrap()), None))
}

/// [`serve`], over TLS when given; the address.
pub(crate) fn serve_on(tokens: Option<Tokens>, tls: Option<Tls>) -> SocketAddr {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
            std::fs::create_dir_all(&dir).unwrap();
            let url = format!("sqlite://{}/vertex.db", dir.display());
            let service = agentstate::SessionService::new(agentstate_sql::SqlStore::connect(&url).await.unwrap());
            let mut state = AppState::new(service);
            if let Some(tokens) = tokens {
                state = state.with_tokens(tokens);
            }
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            sender.send(listener.local_addr().unwrap()).unwrap();
            let (router, connections, forever) = (app(state), Connections::default(), std::future::pending());
            match tls {
                Some(tls) => agentstate_server::serve_tls(listener, router, connections, tls, forever).await.unwrap(),
                None => agentstate_server::serve(listener, router, connections, forever).await.unwrap(),
            }
        });
    });
    receiver.recv().unwrap()
}

/// Runs a Python client script of the tests (with the reference's virtualenv) on `args` and an
/// optional token; the JSON of its last line.
pub(crate) fn run_script(script: &str, args: &[&str], token: Option<&str>) -> Value {
    let out = Command::new(adk_python()).arg(script).args(args).args(token).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

fn reference(base_url: &str, mode: &str, engine: &str, token: Option<&str>) -> Value {
    run_script(SCRIPT, &[base_url, mode, engine], token)
}

fn assert_same_as_in_memory(run: &Value) {
    let (vertex, memory) = (&run["vertex"], &run["memory"]);
    for (step, theirs) in memory.as_object().unwrap() {
        assert_eq!(&vertex[step], theirs, "step {step}: the Vertex client through agentstate (left) vs in-memory");
    }
    assert_eq!(vertex.as_object().unwrap().len(), memory.as_object().unwrap().len());
    // The spot checks the comparison stands on.
    assert_eq!(vertex["s2_long"]["ids"].as_array().unwrap().len(), 230, "every page of a long history");
    assert_eq!(vertex["concurrent_user_keys"].as_object().unwrap().len(), 16, "no user: key lost");
    assert_eq!(vertex["s1_full"]["state"]["big"], json!(1_152_921_504_606_846_977_u64), "integers beyond 2^53");
    let only = &run["vertex_only"];
    assert_eq!(only["duplicate"]["code"], 400, "{only}");
    assert_eq!(only["duplicate"]["status"], "INVALID_ARGUMENT");
    assert_eq!(only["duplicate"]["message"], "Session with user-provided ID 's-two' already exists");
    assert_eq!(only["other_user"], "Session s-two does not belong to user someone-else.");
}

#[test]
fn the_reference_client_without_credentials() {
    let base = serve(None);
    assert_same_as_in_memory(&reference(&base, "short", "1001", None));
}

#[test]
fn the_reference_client_with_project_location_and_a_bearer_token() {
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["2002"]}}]}}"#);
    let base = serve(Some(&tokens));
    assert_same_as_in_memory(&reference(&base, "full", "2002", Some(TOKEN)));
}

#[test]
fn the_reference_client_in_express_mode_with_an_api_key() {
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["3003"]}}]}}"#);
    let base = serve(Some(&tokens));
    assert_same_as_in_memory(&reference(&base, "apikey", "3003", Some(TOKEN)));
}
