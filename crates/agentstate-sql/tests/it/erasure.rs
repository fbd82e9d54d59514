//! After `erase_user`, nothing of that user is left: a marker written in the user's state, events,
//! memories and artifacts is found nowhere, in SQLite's database file (and its write-ahead log) byte for byte, and
//! in every table of PostgreSQL and MariaDB; other users' data is intact.

use agentstate::{CreateSession, Event, SessionService};
use agentstate_sql::SqlStore;
use serde_json::json;

/// Writes the marker all over `gone`'s data (state changed many times, long events that spill
/// into overflow pages, history snapshots) and `kept`'s marker beside it; erases `gone`.
async fn write_and_erase(svc: &SessionService, app: &str, marker: &str, kept_marker: &str) {
    for (user, mark) in [("gone", marker), ("kept", kept_marker)] {
        let request = CreateSession::new(app, user).id("s").state("user:email", json!(format!("{mark}@example.com")));
        let mut session = svc.create_session(request).await.unwrap();
        for i in 0..80 {
            let long = format!("{mark} says something long: {}", "x".repeat(3000));
            let event = Event::new("inv")
                .author("user")
                .content(agentstate::Content::text("user", long))
                .delta("note", json!(format!("{mark} {i}")))
                .delta("user:last", json!(format!("{mark} {i}")));
            svc.append_event(&mut session, event).await.unwrap();
        }
        // History snapshots hold the state too.
        svc.state_at(session.key(), agentstate::history::HistoryAt::Time(agentstate::store::now_secs())).await.unwrap();
        // And memory: the session's events, and a memory written directly.
        let memory = agentstate::memory::MemoryService::new(svc.clone());
        assert_eq!(memory.add_session(&session).await.unwrap(), 80);
        let owner = agentstate::memory::MemoryOwner::new(app, user).unwrap();
        let direct = agentstate::memory::NewMemory {
            content: agentstate::Content::text("user", format!("{mark} is a fact")),
            custom_metadata: serde_json::from_value(json!({"who": mark})).unwrap(),
            author: Some(mark.to_owned()),
            ..Default::default()
        };
        memory.add_memories(&owner, vec![direct], &Default::default()).await.unwrap();
        memory.delete(&owner, &session.events()[0].id).await.unwrap();
        // And artifacts: two versions of a long one in the session, and one of the user's.
        let artifacts = agentstate::artifact::ArtifactService::new(svc.clone());
        let scope = agentstate::artifact::ArtifactScope::new(app, user, Some("s"));
        for version in 0..2 {
            let long = agentstate::Part::text(format!("{mark} wrote v{version}: {}", "y".repeat(20_000)));
            artifacts.save(scope, "notes.txt", &long, None).await.unwrap();
        }
        let metadata = serde_json::from_value(json!({"owner": mark})).unwrap();
        artifacts.save(scope, "user:profile", &agentstate::Part::text(mark), Some(metadata)).await.unwrap();
    }
    let erased = svc.erase_user(app, "gone").await.unwrap();
    assert_eq!((erased.sessions, erased.events, erased.user_state_keys, erased.memories), (1, 80, 2, 80));
    assert_eq!(erased.artifacts, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_no_byte_of_an_erased_user() {
    let dir = crate::sqlite::scratch_dir();
    let url = format!("sqlite://{}/erase.db", dir.display());
    let svc = SessionService::new(SqlStore::connect(&url).await.unwrap());
    let (marker, kept) =
        (format!("GONE-{}", agentstate::Event::new_id()), format!("KEPT-{}", agentstate::Event::new_id()));
    write_and_erase(&svc, "app", &marker, &kept).await;

    let mut bytes = std::fs::read(dir.join("erase.db")).unwrap();
    if let Ok(wal) = std::fs::read(dir.join("erase.db-wal")) {
        bytes.extend(wal);
    }
    let found = |needle: &str| bytes.windows(needle.len()).filter(|w| *w == needle.as_bytes()).count();
    assert_eq!(found(&marker), 0, "the erased user's marker is nowhere in the file or its log");
    assert!(found(&kept) > 0, "the other user's data is there (the search works)");
    let conn = rusqlite::Connection::open(dir.join("erase.db")).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}

/// Rows of any table that hold `needle` in any column, as text.
const TABLES: [&str; 9] = [
    "sessions",
    "events",
    "user_states",
    "app_states",
    "agentstate_state_snapshots",
    "agentstate_memories",
    "agentstate_memory_deletions",
    "agentstate_memory_sources",
    "agentstate_artifacts",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_and_mariadb_keep_no_row_of_an_erased_user() {
    for url in [crate::servers::fresh_postgres_url().await, crate::servers::mysql_url().await] {
        let svc = SessionService::new(SqlStore::connect(&url).await.unwrap());
        let app = format!("erase-{}", agentstate::Event::new_id());
        let (marker, kept) =
            (format!("GONE-{}", agentstate::Event::new_id()), format!("KEPT-{}", agentstate::Event::new_id()));
        write_and_erase(&svc, &app, &marker, &kept).await;
        let count = |needle: String| {
            let url = url.clone();
            async move {
                let mut total = 0i64;
                for table in TABLES {
                    let n: i64 = if url.starts_with("postgres") {
                        use sqlx::Connection;
                        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
                        // A row as text shows BYTEA in hex: payloads (UTF-8 here) are read as text.
                        let payload = if table == "agentstate_artifacts" {
                            " OR convert_from(t.data, 'UTF8') LIKE $1"
                        } else {
                            ""
                        };
                        let sql = format!("SELECT count(*) FROM {table} t WHERE t::text LIKE $1{payload}");
                        sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                            .bind(format!("%{needle}%"))
                            .fetch_one(&mut conn)
                            .await
                            .unwrap()
                    } else {
                        use sqlx::Connection;
                        let mut conn = sqlx::MySqlConnection::connect(&url).await.unwrap();
                        let columns: Vec<String> = sqlx::query_scalar(
                            "SELECT CAST(column_name AS CHAR) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?",
                        )
                        .bind(table)
                        .fetch_all(&mut conn)
                        .await
                        .unwrap();
                        let text = columns
                            .iter()
                            .map(|c| format!("COALESCE(CAST(`{c}` AS CHAR), '')"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        let sql = format!("SELECT count(*) FROM {table} WHERE CONCAT({text}) LIKE ?");
                        sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                            .bind(format!("%{needle}%"))
                            .fetch_one(&mut conn)
                            .await
                            .unwrap()
                    };
                    total += n;
                }
                total
            }
        };
        assert_eq!(count(marker.clone()).await, 0, "{url}: the erased user's marker is in no row");
        assert!(count(kept.clone()).await > 0, "{url}: the other user's rows are there (the search works)");
    }
}

/// Re-encryption on every SQL dialect (see `agentstate_conformance::check_rekey`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rekey_reencrypts_everything_on_every_dialect() {
    let dir = crate::sqlite::scratch_dir();
    let sqlite = format!("sqlite://{}/rekey.db", dir.display());
    // Databases of their own: the keys recorded in a database are the rekey's, not the suite's.
    for url in [sqlite, crate::servers::fresh_postgres_url().await, crate::servers::fresh_mysql_url().await] {
        agentstate_conformance::check_rekey(|| {
            let url = url.clone();
            async move { SqlStore::connect(&url).await.unwrap() }
        })
        .await;
    }
}
