//! The same scenario against `adk api_server` (google-adk 2.13.0, in-memory sessions, a trivial
//! agents folder) and against `agentstate serve`: responses must be equal except ids and
//! timestamps. Where agentstate is deliberately different (SPEC ★), the step names the
//! difference and checks both sides.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::binary::{Running, http, serve};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn adk() -> PathBuf {
    let python = std::env::var_os("AGENTSTATE_ADK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv-adk/bin/python")));
    let adk = python.with_file_name("adk");
    assert!(adk.exists(), "{} is missing: run `bash .ci/setup-adk` to install google-adk 2.13.0", adk.display());
    adk
}

fn start_reference() -> (Server, String) {
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

/// Replaces what legitimately differs between two servers: generated ids and clock readings.
fn normalize(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), &v) {
                        ("lastUpdateTime" | "timestamp", Value::Number(_)) => json!("<time>"),
                        ("id", Value::String(s)) if s.len() == 36 && s.matches('-').count() == 4 => json!("<uuid>"),
                        ("invocationId", Value::String(s)) if s.starts_with("p-") => json!("p-<uuid>"),
                        _ => normalize(v),
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(normalize).collect()),
        other => other,
    }
}

fn call(addr: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
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
            Expect::Differs(
                200,
                400,
                "ids with leading/trailing whitespace are refused (SPEC §1 ★); the reference strips them",
            ),
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
