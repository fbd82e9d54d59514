//! Sidebar lists at scale: the newest 20 sessions of a user with many sessions and of an app
//! with a million, on each backend, from the list indexes; and ADK for Python's `list_sessions`
//! on the same database (its schema is ours), which reads every session of the user or app.
//!
//! `cargo run --release -p agentstate-bench --bin list_figures -- --backend sqlite --backend
//! postgres --backend redis [--adk .venv-adk/bin/python]` fills one app with `--sessions`
//! sessions (every tenth one of user `heavy`, the rest spread over 10,000 users; state
//! `{"k": (i / 10) % 10}`), then times `--runs` reads of each list (p50, p99): newest 20 by update of
//! `heavy` and of the app, newest 20 by creation of `heavy`, and newest 20 of `heavy` with
//! `state.k = 3` (a tenth of them: the SQL backends test it in the statement, Redis in the
//! service). SQL databases are filled by one `INSERT … SELECT` in ADK's tables; Redis through
//! the store, 256 creates at a time, with progress on stderr. `--append-cost` times appends with
//! the list indexes and without them instead (SQL backends).

use std::path::Path;
use std::time::{Duration, Instant};

use agentstate::filter::parse_session_filter;
use agentstate::store::ListOrder;
use agentstate::{CreateSession, ListSessions, SessionService};
use agentstate_bench::databases::{Backend, Database};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Backends to measure: sqlite, postgres, redis (and mysql, on MariaDB).
    #[arg(long, value_enum)]
    backend: Vec<Backend>,
    /// Sessions in the app; a tenth of them are `heavy`'s.
    #[arg(long, default_value_t = 1_000_000)]
    sessions: usize,
    /// Reads timed per list.
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Instead of the lists: what the list indexes cost an append on the SQL backends, timing
    /// appends with the four indexes and without them (dropped and made again), alternately.
    #[arg(long)]
    append_cost: bool,
    /// The Python with ADK for Python 2.13 installed (`.venv-adk/bin/python`): also time its
    /// `list_sessions` on the SQL databases (three reads each).
    #[arg(long)]
    adk: Option<String>,
}

const APP: &str = "bench";
const BASE_SECS: i64 = 1_790_000_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Fills the app: SQL in one statement (create and update times a second apart, updates
/// shuffled), Redis through the service.
async fn fill(database: &Database, service: &SessionService, sessions: usize) -> anyhow::Result<()> {
    let n = i64::try_from(sessions)?;
    match database.backend {
        Backend::Sqlite => {
            let connection = rusqlite::Connection::open(&database.name)?;
            connection.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
                 WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
                 SELECT ?2, CASE WHEN i % 10 = 0 THEN 'heavy' ELSE 'u' || (i % 10000) END, 's' || i,
                        json_object('k', (i / 10) % 10),
                        strftime('%Y-%m-%d %H:%M:%S', ?3 + i, 'unixepoch') || '.000000',
                        strftime('%Y-%m-%d %H:%M:%S', ?3 + i + (i * 7919) % 100000, 'unixepoch') || '.000000'
                 FROM n",
                rusqlite::params![n, APP, BASE_SECS],
            )?;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&database.url).await?;
            sqlx::query(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
                 SELECT $1, CASE WHEN i % 10 = 0 THEN 'heavy' ELSE 'u' || (i % 10000) END, 's' || i,
                        jsonb_build_object('k', (i / 10) % 10),
                        to_timestamp($2 + i) AT TIME ZONE 'UTC',
                        to_timestamp($2 + i + (i * 7919) % 100000) AT TIME ZONE 'UTC'
                 FROM generate_series(0, $3 - 1) AS i",
            )
            .bind(APP)
            .bind(BASE_SECS)
            .bind(n)
            .execute(&pool)
            .await?;
            sqlx::query("ANALYZE sessions").execute(&pool).await?;
            pool.close().await;
        }
        Backend::Mysql => {
            // MariaDB's sequence engine numbers the rows.
            let pool = sqlx::MySqlPool::connect(&database.url).await?;
            let statement = format!(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
                 SELECT ?, IF(seq % 10 = 0, 'heavy', CONCAT('u', seq % 10000)), CONCAT('s', seq),
                        JSON_OBJECT('k', (seq DIV 10) % 10), FROM_UNIXTIME(? + seq),
                        FROM_UNIXTIME(? + seq + (seq * 7919) % 100000)
                 FROM seq_0_to_{}",
                n - 1
            );
            sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(APP)
                .bind(BASE_SECS)
                .bind(BASE_SECS)
                .execute(&pool)
                .await?;
            pool.close().await;
        }
        Backend::Redis => {
            let started = Instant::now();
            for chunk in (0..sessions).collect::<Vec<_>>().chunks(256) {
                let creates = chunk.iter().map(|i| {
                    let user = if i % 10 == 0 { "heavy".to_owned() } else { format!("u{}", i % 10_000) };
                    let state = agentstate::Map::from_iter([("k".to_owned(), serde_json::json!((i / 10) % 10))]);
                    service.create_session(CreateSession::new(APP, user).id(format!("s{i}")).with_state(state))
                });
                for created in futures_util::future::join_all(creates).await {
                    created?;
                }
                let done = chunk.last().map_or(0, |i| i + 1);
                if done % 50_000 < 256 {
                    eprintln!("  {done} of {sessions} sessions made, {:.0} s", started.elapsed().as_secs_f64());
                }
            }
        }
    }
    Ok(())
}

/// `runs` reads of `request` after 3 unmeasured ones, each answering 20 sessions.
async fn time(service: &SessionService, request: ListSessions, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs + 3 {
        let started = Instant::now();
        let page = service.list_sessions(request.clone()).await?;
        let took = started.elapsed();
        anyhow::ensure!(page.sessions.len() == 20, "a list answered {} sessions", page.sessions.len());
        if i >= 3 {
            times.push(took);
        }
    }
    times.sort_unstable();
    Ok(times)
}

/// ADK for Python's `list_sessions` of `heavy` and of the app, three reads each (seconds).
fn adk(python: &str, database: &Database) -> anyhow::Result<String> {
    let url = match database.backend {
        Backend::Sqlite => format!("sqlite+aiosqlite:///{}", database.name),
        Backend::Postgres => database.url.replacen("postgres://", "postgresql+asyncpg://", 1),
        _ => return Ok("–".to_owned()),
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("list_reference.py");
    let out = std::process::Command::new(python).arg(script).arg(url).arg(APP).arg("heavy").output()?;
    anyhow::ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// The list indexes, and how to make each.
const LIST_INDEXES: [(&str, &str); 4] = [
    ("idx_sessions_app_update", "(app_name, update_time, user_id, id)"),
    ("idx_sessions_app_user_update", "(app_name, user_id, update_time, id)"),
    ("idx_sessions_app_create", "(app_name, create_time, user_id, id)"),
    ("idx_sessions_app_user_create", "(app_name, user_id, create_time, id)"),
];

/// Runs `statement` on the SQL database.
async fn execute(database: &Database, statement: &str) -> anyhow::Result<()> {
    match database.backend {
        Backend::Sqlite => {
            rusqlite::Connection::open(&database.name)?.execute_batch(statement)?;
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&database.url).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_owned())).execute(&pool).await?;
            pool.close().await;
        }
        Backend::Mysql => {
            let pool = sqlx::MySqlPool::connect(&database.url).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_owned())).execute(&pool).await?;
            pool.close().await;
        }
        Backend::Redis => anyhow::bail!("no SQL on Redis"),
    }
    Ok(())
}

/// Appends to sessions among the app's (`rounds` of `per_round` appends, each round on sessions
/// of its own), with the list indexes in even rounds and without them in odd ones; p50 of each.
async fn append_cost(
    database: &Database,
    service: &SessionService,
    per_round: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..6 {
        let indexed = round % 2 == 0;
        for (name, columns) in LIST_INDEXES {
            let statement = match (indexed, database.backend) {
                (true, _) => format!("CREATE INDEX {name} ON sessions {columns}"),
                (false, Backend::Mysql) => format!("DROP INDEX {name} ON sessions"),
                (false, _) => format!("DROP INDEX {name}"),
            };
            if round > 0 || !indexed {
                execute(database, &statement).await?;
            }
        }
        for i in 0..per_round {
            // A session of heavy's (spread over the app's times), appended to once.
            let key = agentstate::SessionKey::new(APP, "heavy", format!("s{}", (round * per_round + i) * 10))?;
            let mut event = agentstate::Event::new(format!("r{round}-{i}")).author("user");
            event.actions.state_delta.insert("turn".into(), serde_json::json!(i));
            let started = Instant::now();
            service.append_now(&key, event).await?;
            (if indexed { &mut with } else { &mut without }).push(started.elapsed());
        }
    }
    with.sort_unstable();
    without.sort_unstable();
    Ok((percentile(&with, 0.5), percentile(&without, 0.5)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.append_cost {
        let dir = std::env::temp_dir().join(format!("agentstate-list-figures-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        println!("| backend | sessions | append p50 with the list indexes | without | cost |");
        println!("|---|---|---|---|---|");
        for backend in args.backend {
            let database = Database::create(backend, &dir).await?;
            let service = SessionService::shared(agentstate_backends::open(&database.url).await?);
            fill(&database, &service, args.sessions).await?;
            let per_round = (args.runs * 10).min(args.sessions / 60);
            let (with, without) = append_cost(&database, &service, per_round).await?;
            let cost = 100.0 * (with.as_secs_f64() / without.as_secs_f64() - 1.0);
            println!("| {} | {} | {} | {} | {cost:+.0} % |", backend.name(), args.sessions, ms(with), ms(without));
            drop(service);
            database.remove().await?;
        }
        std::fs::remove_dir_all(&dir).ok();
        return Ok(());
    }
    anyhow::ensure!(args.runs > 0 && args.sessions >= 200, "--runs at least 1, --sessions at least 200");
    let dir = std::env::temp_dir().join(format!("agentstate-list-figures-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!(
        "| backend | sessions (heavy's) | heavy newest 20 p50 / p99 | app newest 20 p50 / p99 | heavy newest 20 by creation p50 | heavy newest 20 with state.k = 3 p50 | ADK list_sessions: heavy / app (median of 3) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for backend in args.backend {
        let database = Database::create(backend, &dir).await?;
        let service = SessionService::shared(agentstate_backends::open(&database.url).await?);
        let started = Instant::now();
        fill(&database, &service, args.sessions).await?;
        eprintln!("{}: {} sessions in {:.0} s", backend.name(), args.sessions, started.elapsed().as_secs_f64());
        let newest = |request: ListSessions| request.newest_first().page_size(20);
        let heavy = time(&service, newest(ListSessions::user(APP, "heavy")), args.runs).await?;
        let app = time(&service, newest(ListSessions::app(APP)), args.runs).await?;
        let created =
            time(&service, newest(ListSessions::user(APP, "heavy").order_by(ListOrder::CreateTime)), args.runs).await?;
        let filter = parse_session_filter("state.k=3")?.filter;
        let filtered = time(&service, newest(ListSessions::user(APP, "heavy").filter(filter)), args.runs).await?;
        let reference = match &args.adk {
            Some(python) => adk(python, &database)?,
            None => "–".to_owned(),
        };
        println!(
            "| {} | {} ({}) | {} / {} | {} / {} | {} | {} | {} |",
            backend.name(),
            args.sessions,
            args.sessions.div_ceil(10),
            ms(percentile(&heavy, 0.5)),
            ms(percentile(&heavy, 0.99)),
            ms(percentile(&app, 0.5)),
            ms(percentile(&app, 0.99)),
            ms(percentile(&created, 0.5)),
            ms(percentile(&filtered, 0.5)),
            reference,
        );
        drop(service);
        if std::env::var_os("LIST_FIGURES_KEEP").is_none() {
            database.remove().await?;
        }
    }
    if std::env::var_os("LIST_FIGURES_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
    Ok(())
}
