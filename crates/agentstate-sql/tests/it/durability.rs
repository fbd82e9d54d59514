//! Every acknowledged append survives `kill -9` of the process in the middle of a write burst.
//! The test runs itself again as the child (selected by an environment variable); the child
//! appends from 8 concurrent writers and prints each event id after `append_event` returned.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use agentstate::{CreateSession, Event, GetSessionConfig, ListSessions, SessionKey, SessionService};
use agentstate_sql::SqlStore;
use serde_json::json;

use crate::sqlite::scratch_dir;

const CHILD: &str = "AGENTSTATE_KILL9_CHILD_URL";
const WRITERS: usize = 8;

#[test]
fn acknowledged_appends_survive_kill_9() {
    kill_9("acknowledged_appends_survive_kill_9", "");
}

/// The same where commits run on the caller's thread when the writer is idle: `synchronous=NORMAL`
/// may lose the last commits to a power loss, never to a crash of the process.
#[test]
fn acknowledged_appends_survive_kill_9_with_synchronous_normal() {
    kill_9("acknowledged_appends_survive_kill_9_with_synchronous_normal", "?synchronous=normal");
}

fn kill_9(test: &str, options: &str) {
    if let Ok(url) = std::env::var(CHILD) {
        return burst(&url);
    }
    let url = format!("sqlite://{}/burst.db{options}", scratch_dir().display());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("durability::{test}"), "--nocapture", "--test-threads=1"])
        .env(CHILD, &url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = Vec::new();
    while acked.len() < 2000 {
        match lines.next() {
            Some(line) => {
                if let Some(ack) = line.unwrap().strip_prefix("ack ") {
                    acked.push(ack.to_owned());
                }
            }
            None => panic!("the child stopped before it was killed: {:?}", child.wait()),
        }
    }
    child.kill().unwrap(); // SIGKILL
    // Acknowledgements already in the pipe were given before the kill: they count too.
    acked.extend(lines.map_while(Result::ok).filter_map(|l| l.strip_prefix("ack ").map(str::to_owned)));
    assert!(!child.wait().unwrap().success());

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stored: BTreeSet<String> = runtime.block_on(async {
        let svc = SessionService::new(SqlStore::connect(&url).await.unwrap());
        let mut ids = BTreeSet::new();
        for s in svc.list_sessions(ListSessions::user("burst", "u")).await.unwrap().sessions {
            let key = SessionKey::new("burst", "u", s.id()).unwrap();
            let full = svc.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
            // The state agrees with the history: `n` is the last event's counter.
            let last = full.events().last().map(|e| e.actions.state_delta["n"].clone());
            assert_eq!(full.state().get("n").cloned(), last);
            ids.extend(full.events().iter().map(|e| e.id.clone()));
        }
        ids
    });
    let lost: Vec<&String> = acked.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged appends lost, e.g. {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(5)]
    );
    println!("{} acknowledged appends, {} stored, none lost", acked.len(), stored.len());
}

/// The child: append until killed.
fn burst(url: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let svc = SessionService::new(SqlStore::connect(url).await.unwrap());
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let svc = svc.clone();
            tasks.push(tokio::spawn(async move {
                let mut session =
                    svc.create_session(CreateSession::new("burst", "u").id(format!("w{w}"))).await.unwrap();
                for n in 0.. {
                    let event = Event {
                        id: format!("w{w}-{n}"),
                        ..Event::new("inv").delta("n", json!(n)).delta("user:last", json!(n))
                    };
                    svc.append_event(&mut session, event).await.unwrap();
                    println!("ack w{w}-{n}");
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}
