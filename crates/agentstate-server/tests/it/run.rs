//! `/run` and `/run_sse`: agents registered in Rust (router tests), and an agent declared in YAML
//! served by the binary (`agentstate serve --agent FILE`) against a mock model server.

use agentstate::SessionService;
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent};
use agentstate_server::{AppState, Tokens, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::binary::{Running, http, serve_with};

fn greeter(model: ScriptedModel) -> LlmAgent {
    let tool = FunctionTool::new("remember", "Remembers the name.", json!({"type": "object"}), |args, ctx| {
        ctx.state_mut().set("user:name", args.get("name").cloned().unwrap_or(Value::Null));
        Ok(json!("ok"))
    });
    LlmAgent::builder("greeter", model)
        .instruction("Greet {user:name?}.")
        .output_key("last_greeting")
        .tool(tool)
        .build()
        .unwrap()
}

async fn post(router: &Router, path: &str, body: Value, token: Option<&str>) -> (StatusCode, String, String) {
    let mut request = Request::builder().method("POST").uri(path).header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = router.clone().oneshot(request.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let status = response.status();
    let content_type =
        response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, content_type, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn setup(model: ScriptedModel) -> (Router, SessionService) {
    let service = SessionService::in_memory();
    let router = app(AppState::new(service.clone()).with_agent("hello_app", greeter(model)));
    let create = Request::builder()
        .method("POST")
        .uri("/apps/hello_app/users/u1/sessions")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"sessionId": "s1"}"#))
        .unwrap();
    assert_eq!(router.clone().oneshot(create).await.unwrap().status(), StatusCode::OK);
    (router, service)
}

fn message(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

#[tokio::test]
async fn run_answers_the_stored_events_in_camel_case() {
    let model = ScriptedModel::new("m")
        .reply(LlmResponse::call("remember", json!({"name": "Ann"})))
        .reply(LlmResponse::text("Hello Ann!"));
    let (router, service) = setup(model.clone()).await;
    let body = json!({"appName": "hello_app", "userId": "u1", "sessionId": "s1", "newMessage": message("I am Ann")});
    let (status, content_type, text) = post(&router, "/run", body, None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(content_type.starts_with("application/json"));
    let events: Vec<Value> = serde_json::from_str(&text).unwrap();
    let authors: Vec<&str> = events.iter().map(|e| e["author"].as_str().unwrap()).collect();
    assert_eq!(authors, ["greeter", "greeter", "greeter"]);
    assert!(events[0]["content"]["parts"][0]["functionCall"]["name"] == "remember", "camelCase parts: {}", events[0]);
    assert_eq!(events[1]["actions"]["stateDelta"], json!({"user:name": "Ann"}));
    assert_eq!(events[2]["actions"]["stateDelta"], json!({"last_greeting": "Hello Ann!"}));
    assert!(events[0]["invocationId"].as_str().unwrap().starts_with("e-"));

    let key = agentstate::SessionKey::new("hello_app", "u1", "s1").unwrap();
    let session = service.get_session(&key, Default::default()).await.unwrap().unwrap();
    let stored: Vec<&str> = session.events().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(stored[1..], events.iter().map(|e| e["id"].as_str().unwrap()).collect::<Vec<_>>());
    assert_eq!(session.state().get("last_greeting"), Some(&json!("Hello Ann!")));

    // The next turn reads user:name in the instruction; snake_case body and no appName (one app).
    let model_next = model.clone().reply(LlmResponse::text("Hi again Ann."));
    let body =
        json!({"user_id": "u1", "session_id": "s1", "new_message": message("hi"), "state_delta": {"mood": "good"}});
    let (status, _, text) = post(&router, "/run", body, None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let instruction = model_next.requests().last().unwrap().system_instruction.clone().unwrap();
    assert!(instruction.starts_with("Greet Ann.\n\n"), "{instruction}");
    let session = service.get_session(&key, Default::default()).await.unwrap().unwrap();
    assert_eq!(session.state().get("mood"), Some(&json!("good")));
}

#[tokio::test]
async fn run_sse_streams_partials_and_stores_only_the_whole() {
    let model = ScriptedModel::new("m").streamed_text(&["Hel", "lo!"]);
    let (router, service) = setup(model).await;
    let body = json!({"appName": "hello_app", "userId": "u1", "sessionId": "s1", "newMessage": message("hi"), "streaming": true});
    let (status, content_type, text) = post(&router, "/run_sse", body, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "text/event-stream");
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|chunk| chunk.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let shape: Vec<(String, bool)> = events
        .iter()
        .map(|e| (e["author"].as_str().unwrap().to_owned(), e.get("partial").and_then(Value::as_bool).unwrap_or(false)))
        .collect();
    assert_eq!(shape, [("greeter".to_owned(), true), ("greeter".to_owned(), true), ("greeter".to_owned(), false)]);
    let key = agentstate::SessionKey::new("hello_app", "u1", "s1").unwrap();
    let session = service.get_session(&key, Default::default()).await.unwrap().unwrap();
    assert_eq!(session.events().len(), 2);
    assert_eq!(session.state().get("last_greeting"), Some(&json!("Hello!")));
}

#[tokio::test]
async fn run_errors_are_the_references_and_name_the_problem() {
    let (router, _) = setup(ScriptedModel::new("empty")).await;
    let cases = [
        (json!({"appName": "hello_app", "userId": "u1", "sessionId": "nope"}), 404, "Session not found: nope"),
        (
            json!({"appName": "other", "userId": "u1", "sessionId": "s1"}),
            404,
            "App not found: other. Served: hello_app",
        ),
        (json!({"appName": "hello_app", "sessionId": "s1"}), 422, "Field required"),
        // The model has nothing to say: the agent fails, with the reason.
        (
            json!({"appName": "hello_app", "userId": "u1", "sessionId": "s1", "newMessage": message("hi")}),
            502,
            "the scripted model has no response left",
        ),
    ];
    for (body, status, expected) in cases {
        let (got, _, text) = post(&router, "/run", body.clone(), None).await;
        assert_eq!(got.as_u16(), status, "{body}: {text}");
        assert!(text.contains(expected), "{body}: {text}");
    }
    // On /run_sse a failure after the stream began arrives as an error event.
    let body = json!({"appName": "hello_app", "userId": "u1", "sessionId": "s1", "newMessage": message("hi")});
    let (status, _, text) = post(&router, "/run_sse", body, None).await;
    assert_eq!(status, StatusCode::OK);
    let last = text.split("\n\n").filter_map(|c| c.strip_prefix("data: ")).last().unwrap();
    assert!(serde_json::from_str::<Value>(last).unwrap()["error"].as_str().unwrap().contains("scripted model"));

    // The apps served.
    let list = Request::builder().uri("/list-apps").body(Body::empty()).unwrap();
    let bytes = router.clone().oneshot(list).await.unwrap().into_body().collect().await.unwrap().to_bytes();
    assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), json!(["hello_app"]));

    // No agents at all.
    let bare = app(AppState::new(SessionService::in_memory()));
    let (status, _, text) = post(&bare, "/run", json!({"userId": "u", "sessionId": "s"}), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(text.contains("--agent FILE"), "{text}");
}

#[tokio::test]
async fn run_checks_tokens_against_the_app_and_user_in_the_body() {
    let service = SessionService::in_memory();
    let tokens =
        Tokens::parse(r#"{"tokens": [{"token": "only-user-u2-xxxxx", "apps": ["hello_app"], "users": ["u2"]}]}"#)
            .unwrap();
    let state = AppState::new(service).with_tokens(tokens).with_agent("hello_app", greeter(ScriptedModel::new("m")));
    let router = app(state);
    let body = json!({"appName": "hello_app", "userId": "u1", "sessionId": "s1"});
    let (status, _, _) = post(&router, "/run", body.clone(), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, text) = post(&router, "/run_sse", body, Some("only-user-u2-xxxxx")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let body = json!({"appName": "hello_app", "userId": "u2", "sessionId": "s1"});
    let (status, _, text) = post(&router, "/run", body, Some("only-user-u2-xxxxx")).await;
    assert_eq!((status, text.contains("Session not found: s1")), (StatusCode::NOT_FOUND, true));
}

/// Two apps, `hello_app` and `secret_app`, with a token for the first and an admin token.
fn two_apps_behind_tokens() -> Router {
    let tokens = Tokens::parse(
        r#"{"tokens": [{"token": "hello-only-token-0123", "apps": ["hello_app"]},
                       {"token": "admin-token-0123456789", "apps": "*"}]}"#,
    )
    .unwrap();
    let state = AppState::new(SessionService::in_memory())
        .with_tokens(tokens)
        .with_agent("hello_app", greeter(ScriptedModel::new("m")))
        .with_agent("secret_app", greeter(ScriptedModel::new("m")));
    app(state)
}

/// An outsider learns nothing about which apps exist: authentication comes before any lookup,
/// and a token is refused an app it may not touch whether that app exists or not.
#[tokio::test]
async fn run_authenticates_before_it_looks_anything_up() {
    let router = two_apps_behind_tokens();
    for path in ["/run", "/run_sse"] {
        for app_name in ["hello_app", "secret_app", "no_such_app"] {
            let body = json!({"appName": app_name, "userId": "u", "sessionId": "s"});
            let (status, _, text) = post(&router, path, body.clone(), None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path} {app_name}: {text}");
            assert!(!text.contains("secret_app"), "{text}");
            if app_name != "hello_app" {
                let (status, _, text) = post(&router, path, body, Some("hello-only-token-0123")).await;
                assert_eq!(status, StatusCode::FORBIDDEN, "{path} {app_name}: {text}");
                assert!(!text.contains("secret_app") || app_name == "secret_app", "{text}");
            }
        }
    }
    // Only the admin learns that an app does not exist, and which ones do.
    let body = json!({"appName": "no_such_app", "userId": "u", "sessionId": "s"});
    let (status, _, text) = post(&router, "/run", body, Some("admin-token-0123456789")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(text.contains("hello_app, secret_app"), "{text}");
    // Without appName, several apps served: the refusal names only the caller's.
    let (status, _, text) =
        post(&router, "/run", json!({"userId": "u", "sessionId": "s"}), Some("hello-only-token-0123")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("hello_app") && !text.contains("secret_app"), "{text}");
}

#[tokio::test]
async fn list_apps_shows_only_the_apps_a_token_may_touch() {
    let router = two_apps_behind_tokens();
    let list = |token: Option<&'static str>| {
        let router = router.clone();
        async move {
            let mut request = Request::get("/list-apps");
            if let Some(token) = token {
                request = request.header("authorization", format!("Bearer {token}"));
            }
            let response = router.oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null))
        }
    };
    assert_eq!(list(None).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(list(Some("hello-only-token-0123")).await, (StatusCode::OK, json!(["hello_app"])));
    assert_eq!(list(Some("admin-token-0123456789")).await, (StatusCode::OK, json!(["hello_app", "secret_app"])));
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_runs_a_yaml_agent_against_an_openai_compatible_server() {
    use wiremock::matchers::{body_partial_json, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({
            "model": "llama3.2",
            "messages": [{"role": "system", "content": "Write a one-line story about robots.\n\nYou are an agent. Your internal name is \"story_agent\"."},
                         {"role": "user", "content": "go"}]
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Beep."}}]
        })))
        .expect(1)
        .mount(&server)
        .await;

    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("story.yaml");
    std::fs::write(
        &file,
        format!(
            "name: story_agent\nprovider: openai\nbase_url: {}/v1\nmodel: llama3.2\n\
             instruction: Write a one-line story about {{topic}}.\noutput_key: story\n",
            server.uri()
        ),
    )
    .unwrap();
    let db = format!("sqlite://{}", dir.join("a.db").display());
    let agent = format!("stories={}", file.display());
    let (child, addr) = serve_with(&["--db", &db, "--addr", "127.0.0.1:0", "--agent", &agent]);
    let _running = Running(child);
    let addr2 = addr.clone();
    let (status, _) = tokio::task::spawn_blocking(move || {
        http(&addr2, "POST", "/apps/stories/users/u/sessions", r#"{"sessionId": "s", "state": {"topic": "robots"}}"#)
    })
    .await
    .unwrap();
    assert_eq!(status, 200);
    let (status, body) = tokio::task::spawn_blocking(move || {
        http(&addr, "POST", "/run", r#"{"appName": "stories", "userId": "u", "sessionId": "s", "newMessage": {"role": "user", "parts": [{"text": "go"}]}}"#)
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let events: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(events[0]["actions"]["stateDelta"], json!({"story": "Beep."}));
    server.verify().await;
}

#[test]
fn serve_refuses_a_broken_agent_file_with_its_reason() {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(&file, "name: a\nmodel: m\ninstructions: typo\n").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentstate"))
        .args(["serve", "--db", "sqlite::memory:", "--addr", "127.0.0.1:0", "--agent"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown field `instructions`") && stderr.contains("bad.yaml"), "{stderr}");

    // The same file named in a config file, relative to it.
    let config = dir.join("agentstate.toml");
    std::fs::write(&config, "db = \"sqlite::memory:\"\naddr = \"127.0.0.1:0\"\nagents = [\"stories=bad.yaml\"]\n")
        .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentstate"))
        .args(["serve", "--config"])
        .arg(&config)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown field `instructions`"), "the config's agents are loaded: {stderr}");
}

#[tokio::test]
async fn run_sse_sends_each_event_as_it_happens_and_a_disconnect_stops_the_run() {
    let gate = agentstate_runtime::testing::Gate::new();
    let model = ScriptedModel::new("slow").reply(LlmResponse::text("finally")).gated(gate.clone());
    let agent = LlmAgent::builder("slow", model)
        .before_agent_callback(|ctx| {
            ctx.state_mut().set("started", json!(true));
            None
        })
        .build()
        .unwrap();
    let service = SessionService::in_memory();
    service.create_session(agentstate::CreateSession::new("slow_app", "u").id("s")).await.unwrap();
    let router = app(AppState::new(service.clone()).with_agent("slow_app", agent));
    let body = json!({"appName": "slow_app", "userId": "u", "sessionId": "s", "newMessage": message("hi")});
    let request = Request::builder()
        .method("POST")
        .uri("/run_sse")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let mut response = router.clone().oneshot(request).await.unwrap().into_body();

    // The callback's event arrives while the model is still thinking.
    let frame = tokio::time::timeout(std::time::Duration::from_secs(10), response.frame()).await.unwrap();
    let chunk = frame.unwrap().unwrap().into_data().unwrap();
    let text = String::from_utf8(chunk.to_vec()).unwrap();
    assert!(text.starts_with("data: ") && text.contains(r#""stateDelta":{"started":true}"#), "{text}");
    while gate.calls() == 0 {
        tokio::task::yield_now().await;
        let _ = tokio::time::timeout(std::time::Duration::from_millis(10), response.frame()).await;
    }

    // The client goes away: the run stops; the model's late answer is never stored.
    drop(response);
    gate.release();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let key = agentstate::SessionKey::new("slow_app", "u", "s").unwrap();
    let session = service.get_session(&key, Default::default()).await.unwrap().unwrap();
    let authors: Vec<&str> = session.events().iter().map(|e| e.author.as_str()).collect();
    assert_eq!(authors, ["user", "slow"], "only what happened before the disconnect is stored");
    assert_eq!(gate.calls(), 1);
}
