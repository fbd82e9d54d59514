//! Databases agentstate must not write to are refused with a message naming the way out, and
//! left untouched.

use agentstate_sql::{Schema, SqlStore};

use crate::servers::{fresh_postgres_url, postgres_url};
use crate::sqlite::scratch_dir;

/// Events of ADK for Python's legacy pickle schema (v0): one column per field, `actions` pickled.
const V0_EVENTS: &str = "CREATE TABLE sessions (app_name VARCHAR(128) NOT NULL, user_id VARCHAR(128) NOT NULL, \
    id VARCHAR(128) NOT NULL, state TEXT NOT NULL, create_time TIMESTAMP NOT NULL, update_time TIMESTAMP NOT NULL, \
    PRIMARY KEY (app_name, user_id, id)); \
    CREATE TABLE events (id VARCHAR(128) NOT NULL, app_name VARCHAR(128) NOT NULL, user_id VARCHAR(128) NOT NULL, \
    session_id VARCHAR(128) NOT NULL, invocation_id VARCHAR(256) NOT NULL, author VARCHAR(256) NOT NULL, \
    actions BYTEA, timestamp TIMESTAMP NOT NULL, PRIMARY KEY (id, app_name, user_id, session_id))";

async fn refusal(url: &str) -> String {
    match SqlStore::connect(url).await {
        Ok(_) => panic!("{url} should have been refused"),
        Err(e) => e.to_string(),
    }
}

fn sqlite_with(sql: &str) -> (String, std::path::PathBuf) {
    let path = scratch_dir().join("old.db");
    rusqlite::Connection::open(&path).unwrap().execute_batch(sql).unwrap();
    (format!("sqlite://{}", path.display()), path)
}

fn sqlite_tables(path: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[tokio::test]
async fn sqlite_legacy_pickle_schema_is_refused_untouched() {
    let (url, path) = sqlite_with(&V0_EVENTS.replace("BYTEA", "BLOB"));
    let message = refusal(&url).await;
    assert!(message.contains("legacy pickle schema (v0)") && message.contains("adk migrate session"), "{message}");
    assert_eq!(sqlite_tables(&path), ["events", "sessions"], "nothing was created");
}

#[tokio::test]
async fn sqlite_adk_web_store_is_refused_with_the_import_command() {
    let (url, path) = sqlite_with(
        "CREATE TABLE sessions (app_name TEXT NOT NULL, user_id TEXT NOT NULL, id TEXT NOT NULL, state TEXT NOT NULL, \
         create_time REAL NOT NULL, update_time REAL NOT NULL, PRIMARY KEY (app_name, user_id, id)); \
         CREATE TABLE events (id TEXT NOT NULL, app_name TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL, \
         invocation_id TEXT NOT NULL, timestamp REAL NOT NULL, event_data TEXT NOT NULL, \
         PRIMARY KEY (app_name, user_id, session_id, id))",
    );
    let message = refusal(&url).await;
    assert!(message.contains("agentstate import-adk --from"), "{message}");
    assert_eq!(sqlite_tables(&path), ["events", "sessions"]);
}

#[tokio::test]
async fn sqlite_unknown_or_missing_versions_are_refused() {
    let metadata = "CREATE TABLE adk_internal_metadata (\"key\" VARCHAR(128) NOT NULL, value VARCHAR(256) NOT NULL, \
                    PRIMARY KEY (\"key\"));";
    let (url, _) = sqlite_with(&format!("{metadata} INSERT INTO adk_internal_metadata VALUES ('schema_version', '2')"));
    assert!(refusal(&url).await.contains("schema version \"2\""));
    let (url, _) = sqlite_with(&format!("{metadata} INSERT INTO adk_internal_metadata VALUES ('schema_version', '0')"));
    assert!(refusal(&url).await.contains("adk migrate session"));
    let (url, _) = sqlite_with(metadata);
    assert!(refusal(&url).await.contains("without a schema_version row"));
}

#[tokio::test]
async fn postgres_legacy_pickle_schema_is_refused_untouched() {
    let url = fresh_postgres_url().await;
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await.unwrap();
    sqlx::raw_sql(V0_EVENTS).execute(&mut conn).await.unwrap();
    let message = refusal(&url).await;
    assert!(message.contains("adk migrate session"), "{message}");
    let metadata: Option<String> =
        sqlx::query_scalar("SELECT to_regclass('adk_internal_metadata')::text").fetch_one(&mut conn).await.unwrap();
    assert_eq!(metadata, None, "nothing was created");
}

#[tokio::test]
async fn an_existing_database_is_opened_as_is() {
    // Opening twice (as a restart does) keeps the data.
    let url = postgres_url().await;
    SqlStore::connect(&url).await.unwrap();
    let again = SqlStore::connect(&url).await.unwrap();
    assert_eq!(again.schema(), &Schema { version: "1".into(), created: false });
    let fresh = SqlStore::connect(&fresh_postgres_url().await).await.unwrap();
    assert_eq!(fresh.schema(), &Schema { version: "1".into(), created: true });
    let file = format!("sqlite://{}/s.db", scratch_dir().display());
    assert!(SqlStore::connect(&file).await.unwrap().schema().created);
    assert!(!SqlStore::connect(&file).await.unwrap().schema().created);
}

#[tokio::test]
async fn a_password_never_shows_in_debug() {
    // The local server trusts every connection, so any password connects.
    let url = postgres_url().await.replacen("postgres://postgres@", "postgres://postgres:pw-never-shown@", 1);
    let store = SqlStore::connect(&url).await.unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains("pw-never-shown"), "{shown}");
    let url = agentstate_sql::DatabaseUrl::parse(&url).unwrap();
    assert!(!format!("{url} {url:?}").contains("pw-never-shown"));
}

/// `sql/README.md` names every statement file of every dialect, and no file that is gone.
#[test]
fn the_statement_table_names_every_file() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
    let table = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut files = std::collections::BTreeSet::new();
    for dialect in ["sqlite", "mysql", "postgres"] {
        for entry in std::fs::read_dir(root.join(dialect)).unwrap() {
            files.insert(entry.unwrap().file_name().into_string().unwrap());
        }
    }
    for file in &files {
        assert!(table.contains(&format!("`{file}`")), "sql/README.md does not name {file}");
    }
    let named = table.split('`').skip(1).step_by(2).filter(|s| s.ends_with(".sql"));
    for name in named {
        assert!(files.contains(name), "sql/README.md names {name}, which no dialect has");
    }
}
