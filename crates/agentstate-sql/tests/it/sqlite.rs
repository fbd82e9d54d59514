//! SQLite: a file of its own for every service (two instances share one), and the in-memory
//! database.

use std::path::PathBuf;

/// A fresh directory under the system temp dir, removed by the next CI run.
pub(crate) fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("agentstate-tests").join(agentstate::Event::new_id());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn file_url() -> String {
    format!("sqlite://{}/sessions.db", scratch_dir().display())
}

mod file {
    sql_backend_tests!(url: super::file_url(), model_cases: 48, two_instances: 24);
}

/// `synchronous=NORMAL`: an idle writer commits on its caller's thread, and the log is
/// checkpointed by the writer's thread.
mod file_normal {
    sql_backend_tests!(url: format!("{}?synchronous=normal", super::file_url()), model_cases: 24, two_instances: 12);
}

mod memory {
    sql_backend_tests!(url: "sqlite::memory:", model_cases: 48);
}

/// With `synchronous=NORMAL` an idle writer commits on the caller's thread, but never waits
/// there for another process's write lock: the write moves to the writer's thread, which waits,
/// and the caller's runtime (here a single thread) keeps running meanwhile.
#[tokio::test(flavor = "current_thread")]
async fn a_write_behind_another_process_lock_waits_off_the_callers_thread() {
    use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};
    use std::time::Duration;

    let path = scratch_dir().join("locked.db");
    let svc = SessionService::new(
        agentstate_sql::SqlStore::connect(&format!("sqlite://{}?synchronous=normal", path.display())).await.unwrap(),
    );
    let mut session = svc.create_session(CreateSession::new("a", "u").id("s")).await.unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();

    let append = svc.append_event(&mut session, Event::new("i").delta("k", serde_json::json!(1)));
    tokio::pin!(append);
    // The runtime's only thread is free while the append waits for the lock.
    let waited = tokio::time::timeout(Duration::from_millis(300), &mut append).await;
    assert!(waited.is_err(), "the append finished while another process held the write lock");
    other.execute_batch("COMMIT").unwrap();
    let stored = tokio::time::timeout(Duration::from_secs(5), append).await.expect("the append finished").unwrap();

    let key = agentstate::SessionKey::new("a", "u", "s").unwrap();
    let reloaded = svc.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(reloaded.events().last().map(|e| e.id.clone()), Some(stored.id));
    assert_eq!(reloaded.state().get("k"), Some(&serde_json::json!(1)));
}

/// Every SQL dialect answers a raw read with its events' stored text (what makes a GET of a long
/// session cheap); the conformance suite checks that it shows what the decoded read does.
#[tokio::test]
async fn sql_stores_read_events_raw_as_their_stored_text() {
    use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};

    let urls = [file_url(), crate::servers::postgres_url().await, crate::servers::mysql_url().await];
    for url in urls {
        let svc = SessionService::new(agentstate_sql::SqlStore::connect(&url).await.unwrap());
        let mut s = svc.create_session(CreateSession::new("raw", "u")).await.unwrap();
        svc.append_event(&mut s, Event::new("i").delta("k", serde_json::json!(1))).await.unwrap();
        let raw = svc.get_session_stored(s.key(), GetSessionConfig::default()).await.unwrap().unwrap();
        let stored = raw.stored_events.unwrap_or_else(|| panic!("{url}: no stored text"));
        assert_eq!(stored.len(), 1, "{url}");
        assert!(stored[0].data.as_deref().is_some_and(|t| t.contains("\"state_delta\"")), "{url}: {stored:?}");
        assert!(raw.session.events().is_empty(), "{url}");
    }
}
