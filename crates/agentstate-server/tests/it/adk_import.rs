//! `agentstate import-adk` copies a store written by the reference's SqliteSessionService (the
//! `adk web` default) into an agentstate database: the same sessions, state and events.

use std::process::Command;

use agentstate::{GetSessionConfig, Session, SessionKey, SessionService};
use agentstate_conformance::reference::adk_python;
use agentstate_sql::SqlStore;
use serde_json::{Value, json};

/// Drops the reference's default fields that agentstate does not write.
fn normalize(mut event: Value) -> Value {
    fn strip(map: &mut serde_json::Map<String, Value>) {
        map.retain(|k, v| *v != json!({}) && !(k == "node_info" && *v == json!({"path": ""})));
    }
    if let Value::Object(m) = &mut event {
        strip(m);
        m.remove("timestamp");
        if let Some(Value::Object(actions)) = m.get_mut("actions") {
            strip(actions);
        }
    }
    event
}

/// Runs `agentstate import-adk` with `args` into a fresh SQLite database, checks it says `said`,
/// and answers each session the reference wrote (`reference`, of `app`) with ours, whose state
/// is the same.
async fn import<'r>(app: &str, args: &[&str], said: &str, reference: &'r Value) -> Vec<(Session, &'r Value)> {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}/agentstate.db", dir.display());
    let run = Command::new(env!("CARGO_BIN_EXE_agentstate")).args(["import-adk", "--db", &db]).args(args).output();
    let run = run.unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains(said), "{stderr}");
    let svc = SessionService::new(SqlStore::connect(&db).await.unwrap());
    let mut pairs = Vec::new();
    for theirs in reference.as_array().unwrap() {
        let key = SessionKey::new(app, theirs["user_id"].as_str().unwrap(), theirs["id"].as_str().unwrap()).unwrap();
        let ours = svc.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
        assert_eq!(Value::Object(ours.state().all().clone()), theirs["state"], "state of {key}");
        pairs.push((ours, theirs));
    }
    pairs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_the_adk_web_store() {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("session.db");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adk_web_store.py");
    let out = Command::new(adk_python()).arg(script).arg(&store).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reference: Value = serde_json::from_slice(&out.stdout).unwrap();

    let from = store.display().to_string();
    let imported = import("web", &["--from", &from], "imported 2 sessions with 3 events", &reference).await;
    for (ours, theirs) in imported {
        let key = ours.key();
        let our_events: Vec<Value> =
            ours.events().iter().map(|e| normalize(serde_json::to_value(e).unwrap())).collect();
        let their_events: Vec<Value> = theirs["events"].as_array().unwrap().iter().cloned().map(normalize).collect();
        assert_eq!(our_events, their_events, "events of {key}");
    }
    // The source store was only read.
    let refused = SqlStore::connect(&format!("sqlite://{}", store.display())).await.unwrap_err();
    assert!(refused.to_string().contains("import-adk"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_sessions_of_the_references_redis_service() {
    let prefix = format!("agentstate-test-import-{}:", agentstate::Event::new_id());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../agentstate-redis/tests/interop/adk_redis.py");
    let redis = "redis://127.0.0.1:6379/0";
    let out = Command::new(adk_python()).arg(script).arg(redis).arg(&prefix).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reference: Value = serde_json::from_slice(&out.stdout).unwrap();

    let said = "imported 3 sessions with 12 events from redis://127.0.0.1:6379/0";
    let imported = import("interop", &["--from", redis, "--key-prefix", &prefix], said, &reference).await;
    for (ours, theirs) in imported {
        assert_eq!(ours.events().len(), theirs["events"].as_array().unwrap().len(), "events of {}", ours.key());
    }
    // Remove what the reference wrote.
    let keys = Command::new("redis-cli").args(["--scan", "--pattern", &format!("{prefix}*")]).output().unwrap();
    for key in String::from_utf8_lossy(&keys.stdout).lines() {
        Command::new("redis-cli").args(["del", key]).output().unwrap();
    }
}
