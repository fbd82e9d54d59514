//! `agentstate sessions export` then `import` into another database: the same sessions, state and
//! events, with shared keys as they were (not reverted by replaying old deltas).

use std::process::Command;

use agentstate::{CreateSession, Event, GetSessionConfig, ListSessions, SessionService};
use agentstate_sql::SqlSessionService;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_agentstate");

fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN).args(args).env_remove("AGENTSTATE_DB").output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_import_reproduces_every_session() {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (format!("sqlite://{}/a.db", dir.display()), format!("sqlite://{}/b.db", dir.display()));
    let file = dir.join("sessions.jsonl");
    let source = SqlSessionService::connect(&a).await.unwrap();
    let mut s1 =
        source.create_session(CreateSession::new("x", "u1").id("s1").state("topic", json!("cats"))).await.unwrap();
    let mut s2 = source.create_session(CreateSession::new("x", "u1").id("s2").state("app:v", json!(1))).await.unwrap();
    let s3 = source.create_session(CreateSession::new("x", "u2").id("s3")).await.unwrap();
    source
        .append_event(&mut s1, Event::new("i1").author("user").delta("user:lang", json!("en")).delta("n", json!(1)))
        .await
        .unwrap();
    // A later change of the same user key through another session: replaying s1's delta would revert it.
    source.append_event(&mut s2, Event::new("i2").author("agent").delta("user:lang", json!("fr"))).await.unwrap();
    source
        .append_event(&mut s1, Event::new("i3").author("agent").delta("temp:t", json!(1)).delta("n", json!(2)))
        .await
        .unwrap();
    drop(s3);

    let (ok, stderr) = run(&["sessions", "export", "--db", &a, "x", "-o", file.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("exported 3 sessions with 3 events"), "{stderr}");
    let (ok, stderr) = run(&["sessions", "import", "--db", &b, "-i", file.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("imported 3 sessions with 3 events; 0 already existed"), "{stderr}");

    let target = SqlSessionService::connect(&b).await.unwrap();
    let listed = source.list_sessions(ListSessions::app("x")).await.unwrap().sessions;
    assert_eq!(listed.len(), 3);
    for s in listed {
        let want = source.get_session(s.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        let got = target.get_session(s.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        assert_eq!(got.state(), want.state(), "state of {}", s.id());
        let json =
            |s: &agentstate::Session| s.events().iter().map(|e| serde_json::to_value(e).unwrap()).collect::<Vec<_>>();
        assert_eq!(json(&got), json(&want), "events of {}", s.id());
    }
    let s1 = target
        .get_session(&agentstate::SessionKey::new("x", "u1", "s1").unwrap(), GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s1.state().get("user:lang"), Some(&json!("fr")), "the newest value of a shared key survives the import");

    let (ok, stderr) = run(&["sessions", "import", "--db", &b, "-i", file.to_str().unwrap()]);
    assert!(!ok && stderr.contains("already exists"), "{stderr}");
    let (ok, stderr) = run(&["sessions", "import", "--db", &b, "-i", file.to_str().unwrap(), "--skip-existing"]);
    assert!(ok && stderr.contains("imported 0 sessions with 0 events; 3 already existed"), "{stderr}");
}
