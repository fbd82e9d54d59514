//! Interoperability with ADK for Python: `google-adk==2.13.0`'s DatabaseSessionService and
//! agentstate read and write the same database, in both directions, on SQLite, PostgreSQL and
//! MariaDB; each detects the other's stale handles.
//!
//! Python comes from `AGENTSTATE_ADK_PYTHON`, else `.venv-adk/bin/python` at the workspace root
//! (`.ci/setup-adk` creates it).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use agentstate::{
    Content, CreateSession, ErrorKind, Event, FunctionCall, GetSessionConfig, Part, Session, SessionKey, SessionService,
};
use agentstate_conformance::reference::adk_python;
use agentstate_sql::SqlStore;
use serde_json::{Value, json};

use crate::servers::{fresh_postgres_url, mysql_url};
use crate::sqlite::scratch_dir;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/adk.py");

fn adk(args: &[&str]) -> Value {
    let out = Command::new(adk_python()).arg(SCRIPT).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "adk.py {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

/// Drops what the reference fills in by default and agentstate does not write: empty maps
/// (`artifact_delta`, `requested_auth_configs`, …) and `node_info: {"path": ""}`; and what it
/// does not know and ignores: `deleted_keys` (the deletions it reads as the `null`s of the delta).
fn normalize(mut event: Value) -> Value {
    fn strip(map: &mut serde_json::Map<String, Value>) {
        map.retain(|k, v| *v != json!({}) && !(k == "node_info" && *v == json!({"path": ""})) && k != "deleted_keys");
    }
    if let Value::Object(m) = &mut event {
        strip(m);
        if let Some(Value::Object(actions)) = m.get_mut("actions") {
            strip(actions);
        }
    }
    event
}

/// agentstate's view of a session equals the reference's.
fn assert_same(ours: &Session, theirs: &Value) {
    let id = ours.id();
    assert_eq!(Value::Object(ours.state().all().clone()), theirs["state"], "state of {id}");
    let our_events: Vec<Value> = ours.events().iter().map(|e| normalize(serde_json::to_value(e).unwrap())).collect();
    let their_events: Vec<Value> = theirs["events"].as_array().unwrap().iter().cloned().map(normalize).collect();
    assert_eq!(our_events, their_events, "events of {id}");
    let their_time = theirs["last_update_time"].as_f64().unwrap();
    assert_eq!(ours.last_update_micros(), (their_time * 1e6).round() as i64, "last_update_time of {id}");
}

async fn load(svc: &SessionService, app: &str, user: &str, id: &str) -> Session {
    svc.get_session(&SessionKey::new(app, user, id).unwrap(), GetSessionConfig::default()).await.unwrap().unwrap()
}

async fn interop(url: &str, py_url: &str) {
    let app = agentstate_conformance::unique("interop");
    let svc = agentstate::SessionService::new(SqlStore::connect(url).await.unwrap());

    // Written by Python, read by agentstate.
    let written = adk(&["write", py_url, &app]);
    for theirs in written.as_array().unwrap() {
        let ours = load(&svc, &app, theirs["user_id"].as_str().unwrap(), theirs["id"].as_str().unwrap()).await;
        assert_same(&ours, theirs);
    }
    assert_eq!(written[1]["state"], json!({"app:theme": "light", "app:calls": 1, "user:name": "Bob"}));

    // Appended by agentstate to Python's session, read back by Python.
    let mut py1 = load(&svc, &app, "u1", "py-1").await;
    let event = Event::new("e-rs")
        .author("agentstate")
        .content(Content::text("model", "from agentstate"))
        .delta("from_rust", json!(true))
        .delta("user:visits", json!(2))
        .delta("app:calls", json!(2))
        .delta("temp:x", json!(1));
    svc.append_event(&mut py1, event).await.unwrap();
    let theirs = adk(&["read", py_url, &app, "u1", "py-1"]);
    assert_same(&load(&svc, &app, "u1", "py-1").await, &theirs);
    assert_eq!(theirs["state"]["user:visits"], 2);
    assert_eq!(theirs["events"].as_array().unwrap().len(), 5);

    // Created by agentstate, read by Python.
    let mut ours = svc
        .create_session(
            CreateSession::new(&app, "u1")
                .id("rs-1")
                .state("topic", json!("dogs"))
                .state("user:lang", json!("fr"))
                .state("temp:t", json!(0)),
        )
        .await
        .unwrap();
    let call = Part {
        function_call: Some(FunctionCall {
            id: Some("call-9".into()),
            name: Some("lookup".into()),
            args: serde_json::from_value(json!({"query_text": "x", "limit": 3})).unwrap(),
            ..FunctionCall::default()
        }),
        ..Part::default()
    };
    let events = [
        Event::new("e-a").author("user").content(Content::text("user", "Bonjour")).delta("turn", json!(1)),
        Event {
            branch: Some("root.helper".into()),
            ..Event::new("e-a")
                .author("helper")
                .content(Content { parts: Some(vec![call]), role: Some("model".into()), ..Content::default() })
                .delta("user:count", json!(1))
                .delta("app:seen", json!(["rs-1"]))
        },
    ];
    for e in events {
        svc.append_event(&mut ours, e).await.unwrap();
    }
    assert_same(&load(&svc, &app, "u1", "rs-1").await, &adk(&["read", py_url, &app, "u1", "rs-1"]));

    // Deleted by agentstate: Python reads the session (and the deleting event) with the keys gone.
    let deletion = Event::new("e-d").author("agentstate").delete("topic").delete("user:lang").delete("app:seen");
    svc.append_event(&mut ours, deletion).await.unwrap();
    let theirs = adk(&["read", py_url, &app, "u1", "rs-1"]);
    assert_same(&load(&svc, &app, "u1", "rs-1").await, &theirs);
    for gone in ["topic", "user:lang", "app:seen"] {
        assert!(theirs["state"].get(gone).is_none(), "{gone} still in {}", theirs["state"]);
    }
    let last = theirs["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["actions"]["state_delta"], json!({"topic": null, "user:lang": null, "app:seen": null}));

    // Appended by Python to agentstate's session, read back by agentstate.
    let theirs = adk(&["append", py_url, &app, "u1", "rs-1", r#"{"py_key": 1, "user:count": 2, "temp:q": 1}"#]);
    assert_same(&load(&svc, &app, "u1", "rs-1").await, &theirs);

    // A Python handle made stale by an agentstate append is refused.
    let mut child = Command::new(adk_python())
        .arg(SCRIPT)
        .args(["stale", py_url, &app, "u1", "rs-1", r#"{"late": true}"#])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), r#"{"loaded": true}"#);
    let mut fresh = load(&svc, &app, "u1", "rs-1").await;
    svc.append_event(&mut fresh, Event::new("e-b").delta("rust_again", json!(1))).await.unwrap();
    writeln!(child.stdin.take().unwrap()).unwrap();
    let outcome: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(outcome["outcome"], "StaleSessionError", "{outcome}");

    // An agentstate handle made stale by a Python append is refused.
    let mut stale = load(&svc, &app, "u1", "rs-1").await;
    adk(&["append", py_url, &app, "u1", "rs-1", r#"{"py_again": 1}"#]);
    let err = svc.append_event(&mut stale, Event::new("e-c").delta("lost", json!(1))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    let final_state = adk(&["read", py_url, &app, "u1", "rs-1"]);
    assert_same(&load(&svc, &app, "u1", "rs-1").await, &final_state);
    assert!(final_state["state"].get("late").is_none() && final_state["state"].get("lost").is_none());
}

/// Our view of a session as the rewind comparisons read it: state and live events.
async fn live(svc: &SessionService, app: &str, user: &str, id: &str) -> Value {
    let session = load(svc, app, user, id).await;
    let live: Vec<Value> =
        session.events().live().iter().map(|e| json!([e.invocation_id, e.author, e.text()])).collect();
    json!({"state": Value::Object(session.state().all().clone()), "live": live})
}

/// The reference's `Runner.rewind_async` and agentstate's rewind on the same scenario, and each
/// reading the other's rewound session.
async fn rewind_interop(url: &str, py_url: &str) {
    let app = agentstate_conformance::unique("rewind");
    let svc = agentstate::SessionService::new(SqlStore::connect(url).await.unwrap());
    // The reference's scenario, rewound by the reference.
    adk(&["rewind-scenario", py_url, &app, "u", "py"]);
    let theirs = adk(&["rewind", py_url, &app, "u", "py", "B"]);
    // The same steps, rewound by agentstate.
    let mut ours = svc.create_session(CreateSession::new(&app, "u").id("rs").state("init", json!(1))).await.unwrap();
    let steps = [
        ("A", "user", "first", json!({"k": "a", "x": 1})),
        ("B", "user", "second", json!({"k": "b", "user:u": 1, "y": 2})),
        ("B", "agent", "answer", json!({"z": 3})),
        ("C", "user", "third", json!({"k": "c"})),
    ];
    for (invocation, author, words, delta) in steps {
        let mut event = Event::new(invocation).author(author).content(Content::text(author, words));
        event.actions.state_delta = delta.as_object().unwrap().clone();
        svc.append_event(&mut ours, event).await.unwrap();
    }
    svc.rewind(&mut ours, "B").await.unwrap();
    let mine = live(&svc, &app, "u", "rs").await;

    // The same live events; the same state but for the two documented differences: the creation
    // state counts as the state before the first event (the reference sets `init` to null, its
    // issue #4839), and keys that did not exist then are deleted, not set to null.
    assert_eq!(mine["live"], theirs["live"]);
    assert_eq!(mine["live"], json!([["A", "user", "first"]]));
    assert_eq!(mine["state"], json!({"init": 1, "k": "a", "x": 1, "user:u": 1}));
    assert_eq!(theirs["state"], json!({"init": null, "k": "a", "x": 1, "y": null, "z": null, "user:u": 1}));

    // Each reads the other's rewound session as its writer does.
    assert_eq!(adk(&["live", py_url, &app, "u", "rs"]), mine, "the reference reading agentstate's rewind");
    assert_eq!(live(&svc, &app, "u", "py").await, theirs, "agentstate reading the reference's rewind");
    // And agentstate can rewind the reference's session further, before A: back to its creation
    // state as far as agentstate knows it (the reference records none: empty), every key deleted.
    let mut py = load(&svc, &app, "u", "py").await;
    svc.rewind(&mut py, "A").await.unwrap();
    let after = adk(&["live", py_url, &app, "u", "py"]);
    assert_eq!((&after["state"], &after["live"]), (&json!({"user:u": 1}), &json!([])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_interoperates_with_adk_python() {
    let path = scratch_dir().join("shared.db");
    interop(&format!("sqlite://{}", path.display()), &format!("sqlite+aiosqlite:///{}", path.display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_agrees_with_adk_python_on_sqlite() {
    let path = scratch_dir().join("rewind.db");
    rewind_interop(&format!("sqlite://{}", path.display()), &format!("sqlite+aiosqlite:///{}", path.display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_agrees_with_adk_python_on_postgres() {
    let url = fresh_postgres_url().await;
    rewind_interop(&url, &url.replacen("postgres://", "postgresql+asyncpg://", 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_agrees_with_adk_python_on_mariadb() {
    let url = mysql_url().await;
    rewind_interop(&url, &url.replacen("mysql://", "mysql+aiomysql://", 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_interoperates_with_adk_python() {
    let url = fresh_postgres_url().await;
    interop(&url, &url.replacen("postgres://", "postgresql+asyncpg://", 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_interoperates_with_adk_python() {
    let url = mysql_url().await;
    interop(&url, &url.replacen("mysql://", "mysql+aiomysql://", 1)).await;
}
