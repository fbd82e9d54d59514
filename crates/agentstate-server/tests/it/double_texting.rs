//! Two clients double-text one session through two servers over one database: for each policy,
//! what is stored is exactly what the policy promises, never interleaved. The agent's model is an
//! OpenAI-compatible mock that takes its time over the first message.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::binary::{Running, http, serve_with};

fn answer(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]
    }))
}

/// The model: "late answer" to the first message after `delay`, "quick" to the second (whose
/// request also holds the first message, so it is matched first).
async fn model(delay: Duration) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("fast-please"))
        .respond_with(answer("quick"))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("slow-please"))
        .respond_with(answer("late answer").set_delay(delay))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

fn run_body(text: &str) -> String {
    json!({"appName": "chat", "userId": "u", "sessionId": "s", "newMessage": {"role": "user", "parts": [{"text": text}]}})
        .to_string()
}

async fn call(addr: &str, path: &'static str, body: String) -> (u16, String) {
    let addr = addr.to_owned();
    tokio::task::spawn_blocking(move || http(&addr, "POST", path, &body)).await.unwrap()
}

/// Two servers with `policy` over one SQLite file, a session `s`, and the first run (through the
/// first server) parked in its model call. Answers the servers, the model and the first run.
async fn double_text(
    policy: &str,
    delay: Duration,
) -> ([(Running, String); 2], MockServer, tokio::task::JoinHandle<(u16, String)>) {
    let model = model(delay).await;
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("chat.yaml");
    let agent = format!(
        "name: chat\nprovider: openai\nbase_url: {}/v1\nmodel: m\ninstruction: Answer.\noutput_key: answer\n",
        model.uri()
    );
    std::fs::write(&file, agent).unwrap();
    let db = format!("sqlite://{}", dir.join("a.db").display());
    let agent = file.display().to_string();
    let options = ["--db", &db, "--addr", "127.0.0.1:0", "--agent", &agent, "--double-texting", policy];
    let servers = [(), ()].map(|()| {
        let (child, addr) = serve_with(&options);
        (Running(child), addr)
    });
    let (status, body) = call(&servers[0].1, "/apps/chat/users/u/sessions", r#"{"sessionId": "s"}"#.into()).await;
    assert_eq!(status, 200, "{body}");
    let first = {
        let addr = servers[0].1.clone();
        tokio::spawn(async move { call(&addr, "/run", run_body("slow-please")).await })
    };
    // The first run holds the session once its model call arrived.
    for _ in 0..500 {
        if !model.received_requests().await.unwrap_or_default().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (servers, model, first)
}

async fn stored(addr: &str) -> Vec<Value> {
    let addr = addr.to_owned();
    let (status, body) =
        tokio::task::spawn_blocking(move || http(&addr, "GET", "/apps/chat/users/u/sessions/s", "")).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let session: Value = serde_json::from_str(&body).unwrap();
    session["events"].as_array().unwrap().clone()
}

fn texts(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["content"]["parts"][0]["text"].as_str().unwrap_or_default().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reject_answers_409_through_the_other_server_and_stores_nothing() {
    let (servers, _model, first) = double_text("reject", Duration::from_millis(1500)).await;
    let (status, body) = call(&servers[1].1, "/run", run_body("fast-please")).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("running another turn"), "{body}");
    let (status, body) = call(&servers[1].1, "/run_sse", run_body("fast-please")).await;
    assert_eq!(status, 409, "a status, not a stream: {body}");
    let (status, body) = first.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(texts(&stored(&servers[1].1).await), ["slow-please", "late answer"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn enqueue_runs_the_second_through_the_other_server_after_the_first() {
    let (servers, _model, first) = double_text("enqueue", Duration::from_millis(1500)).await;
    let (status, body) = call(&servers[1].1, "/run", run_body("fast-please")).await;
    assert_eq!(status, 200, "{body}");
    let (status, first_body) = first.await.unwrap();
    assert_eq!(status, 200, "{first_body}");
    let events = stored(&servers[0].1).await;
    assert_eq!(texts(&events), ["slow-please", "late answer", "fast-please", "quick"]);
    let second: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(texts(&second), ["quick"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_stops_the_first_run_on_the_other_server_and_marks_its_turn() {
    // The first run renews its lease every half second, and sees the request then; its model
    // answers later, and that answer is where it stops.
    let (servers, _model, first) = double_text("interrupt", Duration::from_millis(3000)).await;
    let (status, body) = call(&servers[1].1, "/run", run_body("fast-please")).await;
    assert_eq!(status, 200, "{body}");
    let (status, first_body) = first.await.unwrap();
    assert_eq!(status, 200, "{first_body}");
    let first_events: Vec<Value> = serde_json::from_str(&first_body).unwrap();
    assert_eq!(first_events.last().unwrap()["interrupted"], json!(true), "{first_body}");
    let events = stored(&servers[0].1).await;
    assert_eq!(texts(&events), ["slow-please", "", "fast-please", "quick"], "the late answer is not stored");
    assert_eq!(events[1]["interrupted"], json!(true));
    assert_eq!(events[1]["author"], json!("chat"));
}
