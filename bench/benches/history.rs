//! History questions on a 10,000-event session: the state after event 9,000 and that event's
//! diff, on the in-memory service, SQLite and PostgreSQL, next to the floor measured in the same
//! run: the store reads one such question needs, done directly (the event by id, the nearest
//! snapshot, and the events from it to event 9,000), without the fold.
//!
//! The first question replays from the creation snapshot and keeps a snapshot every 64 events;
//! it is timed once and reported apart. The others are medians of 200, interleaved.
//!
//! Run: `cargo bench -p agentstate-bench --bench history` (PostgreSQL from
//! `AGENTSTATE_BENCH_POSTGRES`, default the local server; a throwaway database is created and
//! dropped).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agentstate::history::HistoryAt;
use agentstate::store::{EventCursor, EventQuery, EventSelect};
use agentstate::{CreateSession, Event, SessionService};
use agentstate_bench::{make_event, median};
use agentstate_sql::SqlStore;

const EVENTS: usize = 10_000;
const AT: usize = 9_000;
const SAMPLES: usize = 200;

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

async fn measure(name: &str, service: SessionService) {
    let mut session =
        service.create_session(CreateSession::new("bench", "u").state("k", serde_json::json!(0))).await.unwrap();
    let mut events: Vec<Event> = Vec::with_capacity(EVENTS);
    let started = Instant::now();
    for i in 0..EVENTS {
        events.push(service.append_event(&mut session, make_event(i)).await.unwrap());
    }
    let grow = started.elapsed();
    let key = session.key().clone();
    let target = events[AT - 1].id.clone();

    let t = Instant::now();
    let first = service.state_at(&key, HistoryAt::AfterEvent(target.clone())).await.unwrap().unwrap();
    let cold = t.elapsed();
    assert_eq!(first.state["step"], serde_json::json!(AT - 1));

    let store = service.store().as_ref();
    let history = store.capabilities().history.expect("the store keeps history");
    let snapshot = history.snapshot(&key, EventCursor::of(&events[AT - 1]).timestamp_micros).await.unwrap().unwrap();
    let replayed = events.iter().position(|e| e.id == snapshot.at.event_id).map_or(AT, |i| AT - 1 - i);
    let (mut state, mut diff, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let t = Instant::now();
        service.state_at(&key, HistoryAt::AfterEvent(target.clone())).await.unwrap().unwrap();
        state.push(t.elapsed());
        let t = Instant::now();
        service.event_diff(&key, &target).await.unwrap().unwrap();
        diff.push(t.elapsed());
        let t = Instant::now();
        let found = history.snapshot(&key, EventCursor::of(&events[AT - 1]).timestamp_micros).await.unwrap().unwrap();
        let select = EventSelect::Page { after: Some(found.at), since_micros: None, limit: replayed };
        store.events(&EventQuery { key: key.clone(), select, now_micros: i64::MIN }).await.unwrap().unwrap();
        floor.push(t.elapsed());
    }
    let t = Instant::now();
    let request =
        agentstate::history::ForkSession { source: key.clone(), at_event_id: target.clone(), session_id: None };
    let fork = service.fork_session(request).await.unwrap();
    let forked = t.elapsed();
    assert_eq!(fork.last_update_micros(), EventCursor::of(&events[AT - 1]).timestamp_micros);
    let (state, diff, floor) = (median(state), median(diff), median(floor));
    println!(
        "| {name} | {:.0} µs ({:.1}×) | {:.0} µs ({:.1}×) | {:.0} µs (the event, a snapshot, {replayed} events) | {:.1} ms | {:.2} s | {:.1} s |",
        micros(state),
        micros(state) / micros(floor),
        micros(diff),
        micros(diff) / micros(floor),
        micros(floor),
        cold.as_secs_f64() * 1e3,
        forked.as_secs_f64(),
        grow.as_secs_f64(),
    );
}

fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        println!(
            "\n| store | state after event 9,000 (× floor) | diff of event 9,000 (× floor) | floor | first question (replays 9,000 events, keeps snapshots) | fork at event 9,000 | growing to 10,000 events |"
        );
        println!("|---|---|---|---|---|---|---|");
        if wants("memory") {
            measure("in-memory", SessionService::in_memory()).await;
        }
        let dir = std::env::temp_dir().join(format!("agentstate-bench-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        if wants("sqlite") {
            let url = format!("sqlite://{}/history.db?synchronous=normal", dir.display());
            measure("SQLite (synchronous=normal)", SessionService::new(SqlStore::connect(&url).await.unwrap())).await;
        }
        if wants("postgres") {
            use sqlx::Connection;
            let admin = std::env::var("AGENTSTATE_BENCH_POSTGRES")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
            let db = format!("agentstate_bench_history_{}", std::process::id());
            let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}"))).execute(&mut conn).await.unwrap();
            let url = format!("{}/{db}", admin.rsplit_once('/').unwrap().0);
            measure("PostgreSQL", SessionService::new(SqlStore::connect(&url).await.unwrap())).await;
            if std::env::var_os("AGENTSTATE_BENCH_KEEP").is_some() {
                println!("kept {url}");
                return;
            }
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE {db} WITH (FORCE)")))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
