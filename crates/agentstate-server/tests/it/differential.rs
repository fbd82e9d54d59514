//! The same scenario against `adk api_server` (google-adk 2.13.0, in-memory sessions, a trivial
//! agents folder) and against `agentstate serve`: responses must be equal except ids and
//! timestamps. Where agentstate is deliberately different, the step names the difference and
//! checks both sides.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::binary::{Running, http, serve};

pub(crate) struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn adk() -> PathBuf {
    let adk = agentstate_conformance::reference::adk_python().with_file_name("adk");
    assert!(adk.exists(), "{} is missing: run `bash .ci/setup-adk` to install google-adk 2.13.0", adk.display());
    adk
}

pub(crate) fn start_reference() -> (Server, String) {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let agents = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adk_agents");
    let child = Command::new(adk())
        .args(["api_server", "--host", "127.0.0.1", "--port", &port.to_string(), "--no-reload"])
        .args(["--session_service_uri", "memory://", "--artifact_service_uri", "memory://", agents])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "adk api_server did not start within 60 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    (server, addr)
}

/// `value` with each object entry (key, value) that `rule` answers for replaced by its answer,
/// and the entries it answers `Some(None)` for dropped, at every depth.
pub(crate) fn rewrite(value: Value, rule: &dyn Fn(&str, &Value) -> Option<Option<Value>>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| match rule(&k, &v) {
                    Some(replaced) => replaced.map(|v| (k, v)),
                    None => Some((k, rewrite(v, rule))),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| rewrite(v, rule)).collect()),
        other => other,
    }
}

/// Replaces what legitimately differs between two servers: generated ids and clock readings.
fn normalize(value: Value) -> Value {
    rewrite(value, &|k, v| match (k, v) {
        ("lastUpdateTime" | "timestamp", Value::Number(_)) => Some(Some(json!("<time>"))),
        ("id", Value::String(s)) if s.len() == 36 && s.matches('-').count() == 4 => Some(Some(json!("<uuid>"))),
        ("invocationId", Value::String(s)) if s.starts_with("p-") => Some(Some(json!("p-<uuid>"))),
        _ => None,
    })
}

pub(crate) fn call(addr: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let (status, text) = http(addr, method, path, body);
    let value =
        if text.trim().is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
    (status, normalize(value))
}

enum Expect {
    /// Status and body equal.
    Same,
    /// Status equal, and the `detail[0].type` of the 422 (FastAPI's messages are Python's own).
    SameStatusAndKind,
    /// A deliberate difference: the reference's status, ours, and why.
    Differs(u16, u16, &'static str),
}

#[test]
fn session_routes_match_adk_api_server() {
    let (_reference, theirs) = start_reference();
    let (ours_child, ours) = serve("sqlite::memory:");
    let _ours = Running(ours_child);

    let s = "/apps/trivial/users/u1/sessions";
    let rich_events = json!([
        {"author": "user", "invocationId": "i1", "content": {"role": "user", "parts": [{"text": "hi"}]}},
        {"author": "trivial", "invocationId": "i1", "branch": "trivial",
         "content": {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "lookup", "args": {"query_text": "x"}}}]},
         "customMetadata": {"source": "client"}}
    ])
    .to_string();
    let steps: Vec<(&str, String, String, Expect)> = vec![
        (
            "POST",
            s.into(),
            r#"{"sessionId": "s1", "state": {"k": 1, "app:a": "A", "user:u": "U1", "temp:t": "T"}}"#.into(),
            Expect::Same,
        ),
        ("POST", s.into(), String::new(), Expect::Same),
        ("POST", s.into(), r#"{"sessionId": "s1"}"#.into(), Expect::Same),
        ("GET", format!("{s}/s1"), String::new(), Expect::Same),
        ("GET", format!("{s}/missing"), String::new(), Expect::Same),
        (
            "PATCH",
            format!("{s}/s1"),
            r#"{"stateDelta": {"k": 2, "user:u": "U1b", "app:a": "A2", "none": null, "temp:x": 1}}"#.into(),
            Expect::Same,
        ),
        ("GET", format!("{s}/s1"), String::new(), Expect::Same),
        ("PATCH", format!("{s}/missing"), r#"{"stateDelta": {"k": 1}}"#.into(), Expect::Same),
        ("PATCH", format!("{s}/s1"), r#"{"delta": {}}"#.into(), Expect::Same),
        (
            "POST",
            "/apps/trivial/users/u2/sessions".into(),
            r#"{"sessionId": "s2", "state": {"own": true}}"#.into(),
            Expect::Same,
        ),
        ("GET", "/apps/trivial/users/u2/sessions/s2".into(), String::new(), Expect::Same),
        ("POST", s.into(), r#"{"sessionId": "adk-eval-session-9"}"#.into(), Expect::Same),
        ("POST", s.into(), format!(r#"{{"sessionId": "restored", "events": {rich_events}}}"#), Expect::Same),
        (
            "POST",
            s.into(),
            r#"{"events": [{"author": "a", "actions": {"stateDelta": {"k": 1}}}]}"#.into(),
            Expect::Same,
        ),
        ("POST", s.into(), r#"{"events": [{"author": "a", "longRunningToolIds": ["t"]}]}"#.into(), Expect::Same),
        ("POST", s.into(), r#"{"options": {"state": {}, "user_id": "x"}}"#.into(), Expect::Same),
        ("POST", s.into(), r#"{"options": {"ttl": "60s"}}"#.into(), Expect::Same),
        ("POST", format!("{s}/legacy"), r#"{"user:x": 1, "k": 2}"#.into(), Expect::Same),
        ("POST", format!("{s}/legacy"), String::new(), Expect::Same),
        ("POST", s.into(), "{not json".into(), Expect::SameStatusAndKind),
        ("GET", s.into(), String::new(), Expect::Same),
        ("GET", "/apps/trivial/users/nobody/sessions".into(), String::new(), Expect::Same),
        ("DELETE", format!("{s}/s1"), String::new(), Expect::Same),
        ("DELETE", format!("{s}/s1"), String::new(), Expect::Same),
        ("GET", format!("{s}/s1"), String::new(), Expect::Same),
        ("GET", s.into(), String::new(), Expect::Same),
        (
            "POST",
            s.into(),
            r#"{"sessionId": " padded "}"#.into(),
            Expect::Differs(200, 400, "ids with leading/trailing whitespace are refused; the reference strips them"),
        ),
    ];
    for (i, (method, path, body, expect)) in steps.iter().enumerate() {
        let reference = call(&theirs, method, path, body);
        let ours = call(&ours, method, path, body);
        let step = format!("step {i}: {method} {path} {body}");
        match expect {
            Expect::Same => assert_eq!(ours, reference, "{step}"),
            Expect::SameStatusAndKind => {
                assert_eq!(ours.0, reference.0, "{step}");
                assert_eq!(ours.1["detail"][0]["type"], reference.1["detail"][0]["type"], "{step}");
            }
            Expect::Differs(their_status, our_status, why) => {
                assert_eq!((reference.0, ours.0), (*their_status, *our_status), "{step}: {why}");
            }
        }
    }
}

/// The `greeter` agent of `tests/adk_agents/greeter/agent.py`, in Rust: its model answers from the
/// request alone, so both servers get the same answers.
struct EchoScript;

#[async_trait::async_trait]
impl agentstate_runtime::model::Model for EchoScript {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate(
        &self,
        request: agentstate_runtime::model::LlmRequest,
        _: bool,
    ) -> Result<agentstate_runtime::model::ResponseStream, agentstate_runtime::model::ModelError> {
        let last = request.contents.last().cloned().unwrap_or_default();
        let response = if last.parts().iter().any(|p| p.function_response.is_some()) {
            let instruction = request.system_instruction.unwrap_or_default();
            agentstate_runtime::model::LlmResponse::text(format!("Done. Instruction was: {instruction}"))
        } else {
            agentstate_runtime::model::LlmResponse::call("remember", json!({"name": last.joined_text()}))
        };
        Ok(Box::pin(futures_util::stream::iter([Ok(response)])))
    }
}

fn greeter() -> std::sync::Arc<dyn agentstate_runtime::agent::Agent> {
    let remember = agentstate_runtime::FunctionTool::new(
        "remember",
        "Remembers the user's name.",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        |args, ctx| {
            ctx.state_mut().set("user:name", args["name"].clone());
            ctx.state_mut().set("temp:scratch", json!("never stored"));
            Ok(json!({"remembered": args["name"]}))
        },
    );
    let agent = agentstate_runtime::LlmAgent::builder(
        "greeter",
        Arc::new(EchoScript) as Arc<dyn agentstate_runtime::model::Model>,
    )
    .instruction("Greet {user:name?} about {topic}; mood {mood?}.")
    .output_key("last_greeting")
    .tool(remember)
    .build()
    .unwrap();
    std::sync::Arc::new(agent)
}

/// Ids the two servers generate differently, and the reference's workflow-node path (`greeter@1`,
/// from its 2.x node graph, which agentstate does not have).
fn normalize_run(value: Value) -> Value {
    rewrite(normalize(value), &|k, v| match (k, v) {
        ("nodeInfo", _) => Some(None),
        ("invocationId", Value::String(s)) if s.starts_with("e-") => Some(Some(json!("e-<uuid>"))),
        ("id", Value::String(s)) if s.starts_with("adk-") => Some(Some(json!("adk-<uuid>"))),
        _ => None,
    })
}

async fn post(client: &reqwest::Client, addr: &str, path: &str, body: &Value) -> (u16, String) {
    let response = client.post(format!("http://{addr}{path}")).json(body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

fn sse_events(text: &str) -> Value {
    let events = text.split("\n\n").filter_map(|c| c.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap());
    normalize_run(Value::Array(events.collect()))
}

#[tokio::test(flavor = "multi_thread")]
async fn run_matches_adk_api_server() {
    let (_reference, theirs) = start_reference();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ours = listener.local_addr().unwrap().to_string();
    let service = agentstate::SessionService::in_memory();
    let router = agentstate_server::app(agentstate_server::AppState::new(service).with_agent("greeter", greeter()));
    tokio::spawn(async move { axum::serve(listener, router).await });

    let client = reqwest::Client::new();
    let sessions = "/apps/greeter/users/u1/sessions";
    let message = |text: &str| json!({"role": "user", "parts": [{"text": text}]});
    let run = |id: &str, text: &str| json!({"appName": "greeter", "userId": "u1", "sessionId": id, "newMessage": message(text)});
    let steps: Vec<(&str, String, Value)> = vec![
        ("create", sessions.into(), json!({"sessionId": "s1", "state": {"topic": "tides"}})),
        // Tool call, tool answer (user: and temp: writes), the answer echoing the instruction.
        ("run", "/run".into(), {
            let mut body = run("s1", "Ann");
            body["stateDelta"] = json!({"mood": "calm"});
            body
        }),
        // The next turn's instruction reads user:name written by the tool in the first.
        ("run again", "/run".into(), run("s1", "Bob")),
        ("missing session", "/run".into(), run("nope", "hi")),
        ("create s2", sessions.into(), json!({"sessionId": "s2", "state": {"topic": "waves"}})),
    ];
    for (step, path, body) in &steps {
        let (status_theirs, text_theirs) = post(&client, &theirs, path, body).await;
        let (status_ours, text_ours) = post(&client, &ours, path, body).await;
        let parse = |t: &str| normalize_run(serde_json::from_str(t).unwrap_or(Value::String(t.to_owned())));
        assert_eq!(
            (status_ours, parse(&text_ours)),
            (status_theirs, parse(&text_theirs)),
            "step {step:?}: ours (left) differs from adk api_server (right)"
        );
    }
    // The stored sessions agree too.
    for id in ["s1", "s2"] {
        let get = |addr: String| {
            let client = client.clone();
            async move { client.get(format!("http://{addr}{sessions}/{id}")).send().await.unwrap().text().await.unwrap() }
        };
        let (theirs_text, ours_text) = (get(theirs.clone()).await, get(ours.clone()).await);
        assert_eq!(
            normalize_run(serde_json::from_str(&ours_text).unwrap()),
            normalize_run(serde_json::from_str(&theirs_text).unwrap()),
            "session {id}"
        );
    }
    // /run_sse: the same events, as server-sent events.
    let (status_theirs, text_theirs) = post(&client, &theirs, "/run_sse", &run("s2", "Cy")).await;
    let (status_ours, text_ours) = post(&client, &ours, "/run_sse", &run("s2", "Cy")).await;
    assert_eq!((status_ours, sse_events(&text_ours)), (status_theirs, sse_events(&text_theirs)), "/run_sse");
    assert_eq!(sse_events(&text_ours).as_array().unwrap().len(), 3);
}
