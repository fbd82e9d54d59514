//! `agentstate sessions export` then `import` into another database: the same sessions, state and
//! events, with shared keys as they were (not reverted by replaying old deltas).

use std::process::Command;

use agentstate::{CreateSession, Event, GetSessionConfig, ListSessions, SessionService};
use agentstate_sql::SqlStore;
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
    let source = SessionService::new(SqlStore::connect(&a).await.unwrap());
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

    let target = SessionService::new(SqlStore::connect(&b).await.unwrap());
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

/// `--db agentengine://…`: the sessions of a server's managed-service API, exported through
/// agentstate's client into a database and imported into another server, each copy the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_move_through_the_managed_service_api() {
    use agentstate_vertex::{Credentials, VertexAiStore};

    const TOKEN: &str = "transfer-token-0123456789";
    let tokens = format!(r#"{{"tokens": [{{"token": "{TOKEN}", "apps": "*"}}]}}"#);
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let db = |name: &str| format!("sqlite://{}/{name}.db", dir.display());
    let file = dir.join("sessions.jsonl");
    let start = |name: &str| {
        let (child, addr) =
            super::binary::serve_with(&["--db", &db(name), "--addr", "127.0.0.1:0", "--tokens", &tokens]);
        (super::binary::Running(child), format!("http://{addr}"))
    };
    let ((_a, a), (_c, c)) = (start("a"), start("c"));
    let client = |base: &str| {
        SessionService::new(
            VertexAiStore::builder().endpoint(base).credentials(Credentials::bearer(TOKEN)).build().unwrap(),
        )
    };
    let source = client(&a);
    let mut s1 = source
        .create_session(CreateSession::new("77", "u1").id("s1").display_name("Trip").state("topic", json!("cats")))
        .await
        .unwrap();
    source.create_session(CreateSession::new("77", "u2").id("s2").state("app:v", json!(1))).await.unwrap();
    source.append_event(&mut s1, Event::new("i1").author("user").delta("user:lang", json!("en"))).await.unwrap();
    source.append_event(&mut s1, Event::new("i2").author("agent").delta("n", json!(2))).await.unwrap();

    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .env_remove("AGENTSTATE_DB")
            .env_remove("GOOGLE_API_KEY")
            .env("AGENTSTATE_VERTEX_TOKEN", TOKEN)
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let from_a = format!("agentengine://?endpoint={a}");
    let (ok, stderr) = run(&["sessions", "export", "--db", &from_a, "77", "-o", file.to_str().unwrap()]);
    assert!(ok && stderr.contains("exported 2 sessions with 2 events"), "{stderr}");
    let (ok, stderr) = run(&["sessions", "import", "--db", &db("b"), "-i", file.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let (ok, stderr) =
        run(&["sessions", "import", "--db", &format!("agentengine://?endpoint={c}"), "-i", file.to_str().unwrap()]);
    assert!(ok && stderr.contains("imported 2 sessions with 2 events"), "{stderr}");
    let (ok, stderr) = run(&["migrate", "--db", &from_a]);
    assert!(!ok && stderr.contains("works on a SQL database"), "{stderr}");

    let database = SessionService::new(SqlStore::connect(&db("b")).await.unwrap());
    let copy = client(&c);
    for key in [s1.key().clone(), agentstate::SessionKey::new("77", "u2", "s2").unwrap()] {
        let want = source.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
        let in_db = database.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
        let in_copy = copy.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
        for got in [&in_db, &in_copy] {
            assert_eq!(got.state(), want.state(), "state of {key}");
            assert_eq!(got.attributes(), want.attributes(), "attributes of {key}");
            let ids = |s: &agentstate::Session| s.events().iter().map(|e| e.id.clone()).collect::<Vec<_>>();
            assert_eq!(ids(got), ids(&want), "events of {key}");
        }
        // The database keeps each event whole, delta included.
        let json =
            |s: &agentstate::Session| s.events().iter().map(|e| serde_json::to_value(e).unwrap()).collect::<Vec<_>>();
        assert_eq!(json(&in_db), json(&want), "events of {key}");
    }
}

/// `agentstate sessions history`: the creation state, then each event with its changes; a
/// rewound event marked; `--json` the same as JSON Lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_prints_each_event_with_its_changes() {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}/h.db", dir.display());
    let service = SessionService::new(SqlStore::connect(&db).await.unwrap());
    let mut s = service.create_session(CreateSession::new("x", "u").id("s").state("k", json!(0))).await.unwrap();
    let first = Event::new("A").author("user").content(agentstate::Content::text("user", "hello")).delta("k", json!(1));
    service.append_event(&mut s, first).await.unwrap();
    service.append_event(&mut s, Event::new("B").author("agent").delta("new", json!("n")).delete("k")).await.unwrap();
    service.rewind(&mut s, "B").await.unwrap();
    drop(service);

    let out = Command::new(BIN)
        .args(["sessions", "history", "--db", &db, "x", "u", "s"])
        .env_remove("AGENTSTATE_DB")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with(r#"created  {"k":0}"#), "{text}");
    assert!(lines[1].contains("  A  user  "), "{text}");
    assert_eq!((lines[2], lines[3]), (r#"    "hello""#, "    ~ k: 0 -> 1"), "{text}");
    assert!(lines[4].contains("  B  agent  ") && lines[4].ends_with("(rewound)"), "{text}");
    assert_eq!((lines[5], lines[6]), ("    - k (was 1)", r#"    + new = "n""#), "{text}");
    assert!(
        lines[7].contains("  user  ") && lines[7].contains("rewinds before B") && lines[7].ends_with("(rewound)"),
        "{text}"
    );
    assert_eq!((lines[8], lines[9]), ("    + k = 1", "    - new (was \"n\")"), "{text}");

    let out = Command::new(BIN)
        .args(["sessions", "history", "--json", "--db", &db, "x", "u", "s"])
        .env_remove("AGENTSTATE_DB")
        .output()
        .unwrap();
    let docs: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(docs[0]["state"], json!({"k": 0}));
    assert_eq!(
        docs[2]["changes"],
        json!([{"key": "k", "change": "deleted", "before": 1, "after": null}, {"key": "new", "change": "set", "before": null, "after": "n"}])
    );
    assert_eq!(
        docs.iter().map(|d| d["live"].as_bool()).collect::<Vec<_>>(),
        [None, Some(true), Some(false), Some(false)]
    );

    let out = Command::new(BIN)
        .args(["sessions", "history", "--db", &db, "x", "u", "nope"])
        .env_remove("AGENTSTATE_DB")
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no session"));
}
