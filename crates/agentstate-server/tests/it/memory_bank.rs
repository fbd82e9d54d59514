//! Memory Bank's REST surface against the reference's own client: ADK for Python's
//! `VertexAiMemoryBankService` and the google-cloud-agentplatform client it uses, pointed at this
//! server, on SQLite, PostgreSQL and Redis (`tests/vertex/memory_bank_client.py`).

use agentstate_server::{AppState, Connections, Tokens, app};
use serde_json::{Value, json};

use crate::vertex::run_script;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vertex/memory_bank_client.py");
const TOKEN: &str = "memory-bank-token-0123456789";

/// Serves the API over the store at `url`, to a token for `engine`, on a free loopback port, on a thread of its own, for
/// the rest of the test run; its base URL.
fn serve_store(url: String, engine: &str) -> String {
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": ["{engine}"]}}]}}"#);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let store = agentstate_backends::open(&url).await.unwrap();
            let state =
                AppState::new(agentstate::SessionService::new(store)).with_tokens(Tokens::parse(&tokens).unwrap());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            sender.send(listener.local_addr().unwrap()).unwrap();
            let forever = std::future::pending();
            agentstate_server::serve(listener, app(state), Connections::default(), forever).await.unwrap();
        });
    });
    format!("http://{}", receiver.recv().unwrap())
}

fn check(run: &Value) {
    // Similarity search: the seat preference first, within Alice's scope only; ADK's entries.
    let alice = run["search_alice"].as_array().unwrap();
    assert_eq!(alice[0]["text"], "Alice prefers window seats on long flights", "{run}");
    assert_eq!((&alice[0]["author"], &alice[0]["has_time"]), (&json!("user"), &json!(true)));
    assert!(alice.len() <= 3, "the managed default top_k is 3: {run}");
    assert_eq!(run["search_bob"], json!(["Bob prefers aisle seats"]), "scopes never leak");
    let peanuts = &run["search_peanuts"][0];
    assert_eq!(peanuts[0], "Alice is allergic to peanuts");
    assert_eq!(peanuts[1], json!({"source": "chat", "confidence": 0.9}), "typed metadata round trip");

    let got = &run["get"];
    assert!(got["name"].as_str().unwrap().ends_with("/memories/seat-pref"), "{got}");
    assert_eq!(got["fact"], "Alice prefers window seats on long flights");
    assert_eq!(got["scope"], json!({"app_name": run_engine(run), "user_id": "alice"}));
    assert_eq!(got["has_times"], true);
    assert_eq!(run["patched"], json!({"done": true, "fact": "Alice prefers aisle seats now"}));
    assert_eq!(
        run["listed"],
        json!([
            "Alice flies to Lisbon every spring",
            "Alice is allergic to peanuts",
            "Alice prefers aisle seats now",
            "Bob prefers aisle seats"
        ]),
        "every memory of the engine, two a page"
    );
    assert_eq!(
        run["simple_alice"],
        json!(["Alice flies to Lisbon every spring", "Alice is allergic to peanuts", "Alice prefers aisle seats now"])
    );
    assert_eq!(run["other_scope"], json!({"user_id": "carol"}));
    assert_eq!(run["exact_scope"], json!([]), "{{user_id}} is not {{app_name, user_id}}");
    assert_eq!(run["ttl_has_expiry"], true);
    assert_eq!(run["deleted_done"], true);
    assert_eq!(run["deleted_get"]["status"], "NOT_FOUND", "{run}");

    let bad = &run["bad"];
    for (case, status) in
        [("empty_fact", "INVALID_ARGUMENT"), ("no_scope", "INVALID_ARGUMENT"), ("long_fact", "INVALID_ARGUMENT")]
    {
        assert_eq!(bad[case]["status"], status, "{case}: {bad}");
        assert_eq!(bad[case]["code"], 400, "{case}: {bad}");
    }
    assert_eq!(bad["generate_contents"]["status"], "FAILED_PRECONDITION", "{bad}");
    assert!(bad["generate_contents"]["message"].as_str().unwrap().contains("needs a model"), "{bad}");

    // agentstate's own memory service sees the app's user's memories.
    assert_eq!(
        run["own_search"],
        json!(["Alice flies to Lisbon every spring", "Alice is in Lisbon this week"]),
        "{run}"
    );
}

fn run_engine(run: &Value) -> String {
    run["get"]["name"].as_str().unwrap().split('/').nth(5).unwrap().to_owned()
}

fn reference(url: String, engine: &str) {
    let base = serve_store(url, engine);
    check(&run_script(SCRIPT, &[&base, engine, TOKEN], None));
}

#[test]
fn the_reference_memory_bank_client_on_sqlite() {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    reference(format!("sqlite://{}/bank.db", dir.display()), "4004");
}

#[test]
fn the_reference_memory_bank_client_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    reference(runtime.block_on(agentstate_conformance::databases::fresh_postgres()), "5005");
}

#[test]
fn the_reference_memory_bank_client_on_redis() {
    let prefix = agentstate_conformance::unique("bank");
    reference(format!("redis://127.0.0.1:6379/0?prefix={prefix}:"), "6006");
}
