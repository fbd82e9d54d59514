//! An append whose delta changes user or app state writes that row even when it is gone (deleted
//! outside agentstate, or never written by another writer of the same tables): on every dialect
//! the append creates it again and the state is read back, with or without the other row.

use agentstate::{CreateSession, Event, GetSessionConfig, SessionService};
use agentstate_sql::SqlStore;
use serde_json::json;

/// Deletes the user's and/or the app's state row of `app` with a connection of its own.
async fn delete_rows(url: &str, app: &str, user: bool, app_row: bool) {
    let tables = [("user_states", user), ("app_states", app_row)];
    for (table, _) in tables.iter().filter(|(_, on)| *on) {
        if let Some(path) = url.strip_prefix("sqlite://") {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.execute(&format!("DELETE FROM {table} WHERE app_name = ?1"), [app]).unwrap();
        } else if url.starts_with("postgres") {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
            let sql = format!("DELETE FROM {table} WHERE app_name = $1");
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(app).execute(&mut conn).await.unwrap();
        } else {
            use sqlx::Connection;
            let mut conn = sqlx::MySqlConnection::connect(url).await.unwrap();
            let sql = format!("DELETE FROM {table} WHERE app_name = ?");
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(app).execute(&mut conn).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_writes_a_shared_row_that_is_gone() {
    let dir = crate::sqlite::scratch_dir();
    let sqlite = format!("sqlite://{}/shared.db", dir.display());
    for url in [sqlite, crate::servers::postgres_url().await, crate::servers::mysql_url().await] {
        let svc = SessionService::new(SqlStore::connect(&url).await.unwrap());
        // Gone: the user's row, the app's, both; the append changes both.
        for (user_gone, app_gone) in [(true, false), (false, true), (true, true)] {
            let app = format!("shared-{}", Event::new_id());
            let create = CreateSession::new(&app, "u").state("user:kept", json!(1)).state("app:kept", json!(2));
            let mut session = svc.create_session(create).await.unwrap();
            delete_rows(&url, &app, user_gone, app_gone).await;
            let event = Event::new("inv")
                .author("user")
                .delta("user:n", json!(3))
                .delta("app:n", json!(4))
                .delta("s", json!(5));
            svc.append_event(&mut session, event).await.unwrap();

            let read = svc.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
            let mut expected = json!({"s": 5, "user:n": 3, "app:n": 4, "user:kept": 1, "app:kept": 2});
            for (gone, key) in [(user_gone, "user:kept"), (app_gone, "app:kept")] {
                if gone {
                    expected.as_object_mut().unwrap().remove(key);
                }
            }
            let state = serde_json::Value::Object(read.state().all().clone());
            assert_eq!(state, expected, "{url}: user row gone {user_gone}, app row gone {app_gone}");
            assert_eq!(read.last_update_micros(), session.last_update_micros(), "{url}: the marker moved");
        }
    }
}
