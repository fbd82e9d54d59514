//! The floor of `GET /apps/{app}/users/{user}/sessions/{id}` over HTTP: the same server stack
//! (axum on hyper), the least reading a session needs (its state row, the app's and the user's
//! state rows and every event row, read as text through rusqlite on a blocking thread, nothing
//! parsed), and the answer written from bytes given in advance: agentstate's own answer to the
//! same GET, so both write the same bytes. What agentstate spends beyond it is its service
//! logic: decoding events, merging state, and writing the JSON.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// `floor-server`'s options.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The SQLite file to read (the one `agentstate serve` answered from).
    #[arg(long)]
    db: PathBuf,
    /// Where to listen (loopback); port 0 picks one, printed as `listening on ADDR`.
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: String,
    /// `SESSION_ID=FILE`: the body to answer for that session (repeatable).
    #[arg(long = "body", value_parser = parse_body)]
    bodies: Vec<(String, PathBuf)>,
}

fn parse_body(text: &str) -> Result<(String, PathBuf), String> {
    let (id, file) = text.split_once('=').ok_or("expected SESSION_ID=FILE")?;
    Ok((id.to_owned(), PathBuf::from(file)))
}

struct Floor {
    db: PathBuf,
    bodies: HashMap<String, Bytes>,
}

thread_local! {
    /// Each blocking thread's own read-only connection, opened on first use.
    static CONNECTION: RefCell<Option<rusqlite::Connection>> = const { RefCell::new(None) };
}

/// Reads the session's rows; the bytes of text read (so nothing is optimised away).
fn read_rows(db: &std::path::Path, app: &str, user: &str, id: &str) -> anyhow::Result<usize> {
    CONNECTION.with_borrow_mut(|slot| {
        if slot.is_none() {
            *slot = Some(rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?);
        }
        let conn = slot.as_ref().context("no connection")?;
        conn.execute_batch("BEGIN")?;
        let mut read = 0;
        let mut text = |sql: &str, params: &[&str]| -> anyhow::Result<()> {
            let mut stmt = conn.prepare_cached(sql)?;
            let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
            while let Some(row) = rows.next()? {
                for column in 0..row.as_ref().column_count() {
                    read += row.get_ref(column)?.as_str_or_null()?.map_or(0, str::len);
                }
            }
            Ok(())
        };
        text(
            "SELECT state, update_time FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
            &[app, user, id],
        )?;
        text("SELECT state FROM app_states WHERE app_name = ?1", &[app])?;
        text("SELECT state FROM user_states WHERE app_name = ?1 AND user_id = ?2", &[app, user])?;
        text(
            "SELECT id, invocation_id, timestamp, event_data FROM events \
             WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 ORDER BY timestamp, id",
            &[app, user, id],
        )?;
        conn.execute_batch("COMMIT")?;
        Ok(read)
    })
}

async fn session(State(floor): State<Arc<Floor>>, Path((app, user, id)): Path<(String, String, String)>) -> Response {
    let Some(body) = floor.bodies.get(&id).cloned() else { return StatusCode::NOT_FOUND.into_response() };
    let shared = Arc::clone(&floor);
    let read = tokio::task::spawn_blocking(move || read_rows(&shared.db, &app, &user, &id)).await;
    match read {
        Ok(Ok(n)) => {
            std::hint::black_box(n);
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Serves until stopped.
pub(crate) async fn serve(args: Args) -> anyhow::Result<()> {
    let mut bodies = HashMap::new();
    for (id, file) in args.bodies {
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        bodies.insert(id, Bytes::from(bytes));
    }
    let floor = Arc::new(Floor { db: args.db, bodies });
    let app = axum::Router::new()
        .route("/apps/{app}/users/{user}/sessions/{id}", get(session))
        // For the harness's readiness check.
        .route("/apps/{app}/users/{user}/sessions", get(|| async { "[]" }))
        .with_state(floor);
    let listener = tokio::net::TcpListener::bind(&args.addr).await.with_context(|| format!("binding {}", args.addr))?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
