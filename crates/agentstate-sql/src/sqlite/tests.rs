//! The store's own workings: planning, where reads run.

use super::*;

/// A statement with a `LIMIT ?`, run again with another limit: whether SQLite prepared it
/// again (its `SQLITE_STMTSTATUS_REPREPARE` count).
fn prepared_again(conn: &Connection) -> i32 {
    let sql = "SELECT value FROM json_each('[1,2,3]') LIMIT ?1";
    for limit in [1, 2, 3] {
        let mut stmt = conn.prepare_cached(sql).unwrap();
        let rows: Vec<i64> = stmt.query_map([limit], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
        assert_eq!(rows.len(), usize::try_from(limit).unwrap());
    }
    conn.prepare_cached(sql).unwrap().get_status(rusqlite::StatementStatus::RePrepare)
}

#[test]
fn statements_are_planned_once_on_the_writer_and_the_readers() {
    let dir = std::env::temp_dir().join(format!(
        "agentstate-plan-once-{}-{}",
        std::process::id(),
        std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let options = SqliteOptions { path: Some(dir.join("db.sqlite")), ..SqliteOptions::default() };
    let (writer, _) = open_writer(&options).unwrap();
    let pool = ReaderPool {
        path: dir.join("db.sqlite"),
        busy_timeout: options.busy_timeout,
        permits: Arc::new(tokio::sync::Semaphore::new(1)),
        idle: Mutex::new(Vec::new()),
        sizes: LoadSizes::default(),
    };
    let reader = pool.take().unwrap();
    assert_eq!(prepared_again(&writer), 0);
    assert_eq!(prepared_again(&reader), 0);
    // Without it, binding the limit prepares the statement again.
    let plain = Connection::open_in_memory().unwrap();
    assert!(prepared_again(&plain) > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store on a file of its own, in a new directory named after `what`.
async fn store_in(what: &str) -> (std::path::PathBuf, SqliteStore) {
    let dir = std::env::temp_dir().join(format!("{what}-{}", Event::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(SqliteOptions { path: Some(dir.join("db.sqlite")), ..SqliteOptions::default() })
        .await
        .unwrap();
    (dir, store)
}

/// A quick read runs on the caller's thread once a reader is idle, without waiting for a
/// lock there (busy timeout zero); one that fails there runs again on a blocking thread, with
/// the busy timeout, and its answer is that run's.
#[tokio::test(flavor = "current_thread")]
async fn a_quick_read_runs_here_and_again_off_this_thread_if_it_fails_here() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let (dir, store) = store_in("agentstate-quick-read").await;
    let here = std::thread::current().id();
    // Where each run was, and whether it could wait for a lock (a busy timeout).
    let runs = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(AtomicUsize::new(0));
    let read = |fail_first: bool| {
        let (runs, failures) = (Arc::clone(&runs), Arc::clone(&failures));
        move |conn: &Connection| {
            let waits: i64 = conn.query_row("PRAGMA busy_timeout", [], |row| row.get(0)).unwrap();
            runs.lock().unwrap().push((std::thread::current().id() == here, waits > 0));
            if fail_first && failures.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(Error::backend("database is locked", true, "busy"));
            }
            Ok(waits)
        }
    };
    // No reader is open yet: the first read opens one on a blocking thread.
    store.read_quick(read(false)).await.unwrap();
    assert_eq!(std::mem::take(&mut *runs.lock().unwrap()), [(false, true)]);
    // Now here, not waiting for locks; the reader keeps its busy timeout afterwards.
    assert_eq!(store.read_quick(read(false)).await.unwrap(), 0);
    assert_eq!(std::mem::take(&mut *runs.lock().unwrap()), [(true, false)]);
    // Failing here: again there, waiting as any read does; that run answers.
    assert_eq!(store.read_quick(read(true)).await.unwrap(), 5_000);
    assert_eq!(std::mem::take(&mut *runs.lock().unwrap()), [(true, false), (false, true)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A load runs on its caller's thread when it reads few events: a window of that many newest
/// events, or a session with no more, by its count as last seen (made at create, grown by each
/// append, set by each whole load, forgotten by a delete) or else counted.
#[tokio::test(flavor = "current_thread")]
async fn a_load_runs_here_when_it_reads_few_events() {
    use agentstate::store::{EventWindow, SessionRead};
    use agentstate::{CreateSession, SessionService};

    let (dir, store) = store_in("agentstate-short-load").await;
    let service = SessionService::new(store.clone());
    let small = service.create_session(CreateSession::new("app", "u")).await.unwrap();
    let mut long = service.create_session(CreateSession::new("app", "u")).await.unwrap();
    for _ in 0..=ops::SHORT_LOAD_EVENTS {
        service.append_event(&mut long, Event::new("inv").author("agent")).await.unwrap();
    }
    let pool = store.readers.clone().unwrap();
    let conn = pool.take().unwrap();
    let sizes = &pool.sizes;
    let short = |key: &SessionKey, read: &SessionRead| pool.short_load(&conn, sizes.slot(key), key, read);
    let all = SessionRead::decoded(EventWindow::ALL, i64::MIN);
    let newest = SessionRead::decoded(EventWindow { recent: Some(20), since_micros: None }, i64::MIN);

    assert_eq!(sizes.get(sizes.slot(small.key())), Some(0));
    assert_eq!(sizes.get(sizes.slot(long.key())), Some(ops::SHORT_LOAD_EVENTS + 1));
    assert!(short(small.key(), &all));
    assert!(!short(long.key(), &all));
    assert!(short(long.key(), &newest), "the newest few of a long session");

    // Not seen: counted on the connection.
    sizes.forget(sizes.slot(small.key()));
    sizes.forget(sizes.slot(long.key()));
    assert!(short(small.key(), &all));
    assert!(!short(long.key(), &all));

    // A whole load sees the count; a window does not.
    store.get(long.key(), &newest).await.unwrap().unwrap();
    assert_eq!(sizes.get(sizes.slot(long.key())), None);
    let loaded = store.get(long.key(), &all).await.unwrap().unwrap();
    assert_eq!(loaded.session.events().len(), ops::SHORT_LOAD_EVENTS + 1);
    assert_eq!(sizes.get(sizes.slot(long.key())), Some(ops::SHORT_LOAD_EVENTS + 1));

    service.delete_session(long.key()).await.unwrap();
    assert_eq!(sizes.get(sizes.slot(long.key())), None);
    drop(conn);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A page of history runs on the caller's thread when it is short: by its size, or one event by
/// its id. A page forwards from a time bound and the first event of an invocation may pass over
/// the whole history, and do not.
#[test]
fn a_page_of_history_runs_here_when_it_is_short() {
    use agentstate::store::EventSelect;

    let page = |limit| EventSelect::Page { after: None, since_micros: None, limit };
    let latest = |limit, since_micros| EventSelect::Latest { before: None, since_micros, limit };
    assert!(ops::short_select(&page(ops::SHORT_LOAD_EVENTS)));
    assert!(!ops::short_select(&page(ops::SHORT_LOAD_EVENTS + 1)));
    assert!(!ops::short_select(&EventSelect::Page { after: None, since_micros: Some(1), limit: 1 }));
    assert!(ops::short_select(&latest(20, None)));
    assert!(ops::short_select(&latest(20, Some(1))), "backwards, the bound ends the index range");
    assert!(!ops::short_select(&latest(1_000, None)));
    assert!(ops::short_select(&EventSelect::Id("e-1".to_owned())));
    assert!(!ops::short_select(&EventSelect::FirstOfInvocation("inv".to_owned())));
}

/// A page of a list runs on the caller's thread when it is short and unfiltered: a filter may
/// pass over most of the app's sessions before it fills a page, and a list without a page size
/// reads them all.
#[test]
fn a_short_page_of_sessions_runs_here_without_a_filter() {
    let page = |limit| ListQuery {
        app_name: "app".to_owned(),
        user_id: Some("u".to_owned()),
        after: None,
        order: agentstate::store::ListOrder::UpdateTime,
        descending: true,
        filter: agentstate::store::SessionFilter::default(),
        limit,
        now_micros: 0,
    };
    assert!(ops::short_list(&page(Some(21))));
    assert!(ops::short_list(&page(Some(ops::SHORT_LIST_SESSIONS))));
    assert!(!ops::short_list(&page(Some(ops::SHORT_LIST_SESSIONS + 1))));
    assert!(!ops::short_list(&page(None)));
    let mut filtered = page(Some(21));
    filtered.filter.display_name = Some("a chat".to_owned());
    assert!(!ops::short_list(&filtered));
}
