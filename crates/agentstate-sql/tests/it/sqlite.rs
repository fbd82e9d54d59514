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

/// SQLite answers a written read with its events written as each row is read (the conformance
/// suite checks the bytes against the stored read's); a row whose text is not JSON fails the
/// read, naming its event, as the stored read's writing does.
#[tokio::test]
async fn sqlite_writes_events_as_it_reads_them() {
    use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};

    let url = file_url();
    let svc = SessionService::new(agentstate_sql::SqlStore::connect(&url).await.unwrap());
    let mut s = svc.create_session(CreateSession::new("written", "u")).await.unwrap();
    for i in 0..3 {
        svc.append_event(&mut s, Event::new("i").delta("k", serde_json::json!(i))).await.unwrap();
    }
    for recent in [None, Some(2)] {
        let config = GetSessionConfig { num_recent_events: recent, ..GetSessionConfig::default() };
        let read = svc.get_session_written(s.key(), config).await.unwrap().unwrap();
        assert!(read.stored_events.is_none() && read.session.events().is_empty(), "{recent:?}");
        let written = read.written_events.expect("written events");
        let events: Vec<serde_json::Value> =
            serde_json::from_slice(&[b"[", &written.json[..], b"]"].concat()).expect("a JSON array's contents");
        let steps: Vec<_> = events.iter().map(|e| e["actions"]["stateDelta"]["k"].clone()).collect();
        let expected: Vec<_> = (0..3).skip(3 - recent.unwrap_or(3)).map(|i| serde_json::json!(i)).collect();
        assert_eq!((written.count, steps), (expected.len(), expected), "{recent:?}");
    }

    let last = s.events().last().unwrap().id.clone();
    let path = url.trim_start_matches("sqlite://");
    rusqlite::Connection::open(path)
        .unwrap()
        .execute("UPDATE events SET event_data = '{\"content\": [' WHERE id = ?1", [&last])
        .unwrap();
    let err = svc.get_session_written(s.key(), GetSessionConfig::default()).await.unwrap_err();
    assert_eq!(err.kind(), agentstate::ErrorKind::Backend, "{err}");
    assert!(err.to_string().contains(&format!("event {last} is unreadable")), "{err}");
}

/// SQLite, PostgreSQL and MySQL answer the compacted view themselves, plain and encrypted (see
/// `agentstate_conformance::check_store_answers_views`).
#[test]
fn sql_stores_answer_compacted_views() {
    for dialect in ["sqlite", "postgres", "mysql"] {
        let open = move |_clock| async move {
            let url = match dialect {
                "sqlite" => file_url(),
                "postgres" => crate::servers::postgres_url().await,
                _ => crate::servers::mysql_url().await,
            };
            let store: std::sync::Arc<dyn agentstate::store::SessionStore> =
                std::sync::Arc::new(agentstate_sql::SqlStore::connect(&url).await.unwrap());
            store
        };
        for stack in [agentstate_conformance::Stack::Plain, agentstate_conformance::Stack::Encrypted] {
            agentstate_conformance::run(open, stack, agentstate_conformance::check_store_answers_views);
        }
    }
}

/// The compacted view reads each event's kept facts, and the text of an event without them (one
/// another program wrote, or one rewritten): the same view either way, on SQLite, PostgreSQL and
/// MySQL.
#[tokio::test]
async fn compacted_views_read_events_without_facts_from_their_text() {
    use agentstate::{CreateSession, Event, SessionService};
    use agentstate_conformance::views::{compacted_ids, summarised_session};

    let dir = scratch_dir();
    let sqlite = format!("sqlite://{}/sessions.db", dir.display());
    for url in [sqlite, crate::servers::postgres_url().await, crate::servers::mysql_url().await] {
        // A statement run beside the store, on its database; the test's own app only (the
        // database may be shared with other tests).
        let app = format!("view{}", Event::new_id().replace('-', ""));
        let run = |statement: &str| {
            let (url, dir) = (url.clone(), dir.clone());
            let statement = statement.replace("{app}", &app);
            async move {
                let statement = sqlx::AssertSqlSafe(statement);
                if url.starts_with("sqlite") {
                    let conn = rusqlite::Connection::open(dir.join("sessions.db")).unwrap();
                    conn.query_row(&statement.0, [], |r| r.get::<_, i64>(0)).unwrap_or(0)
                } else if url.starts_with("postgres") {
                    let pool = sqlx::PgPool::connect(&url).await.unwrap();
                    sqlx::query_scalar::<_, i64>(statement).fetch_optional(&pool).await.unwrap().unwrap_or(0)
                } else {
                    let pool = sqlx::MySqlPool::connect(&url).await.unwrap();
                    sqlx::query_scalar::<_, i64>(statement).fetch_optional(&pool).await.unwrap().unwrap_or(0)
                }
            }
        };
        let svc = SessionService::new(agentstate_sql::SqlStore::connect(&url).await.unwrap());
        let mut s = summarised_session(&svc, CreateSession::new(app.as_str(), "u")).await;
        let with_facts = compacted_ids(&svc, s.key()).await;
        let count = "SELECT COUNT(*) FROM agentstate_event_facts WHERE app_name = '{app}'";
        assert_eq!(run(count).await, 13, "{url}: every append keeps its facts");
        run("DELETE FROM agentstate_event_facts WHERE app_name = '{app}' AND event_id IN \
             (SELECT id FROM events WHERE app_name = '{app}' AND invocation_id LIKE 'inv-1%')")
        .await;
        assert!(run(count).await < 13, "{url}");
        assert_eq!(compacted_ids(&svc, s.key()).await, with_facts, "{url}: some facts");
        run("DELETE FROM agentstate_event_facts WHERE app_name = '{app}'").await;
        assert_eq!(compacted_ids(&svc, s.key()).await, with_facts, "{url}: no facts");
        svc.append_event(&mut s, Event::new("inv-last").author("user")).await.unwrap();
        assert_eq!(run(count).await, 1, "{url}");
        svc.delete_session(s.key()).await.unwrap();
        assert_eq!(run(count).await, 0, "{url}: the facts go with their session");
    }
}
