//! The managed-service API over HTTP: agentstate's client (`agentstate-vertex`) against an
//! in-process `agentstate` server on SQLite, next to the same operations on the same database
//! through the ADK routes and, as the floor, called directly in process. Every figure is the
//! median of its samples, taken interleaved in the same run, with its ratio to the floor.
//!
//! - append: one event (the workload's, with a 3-key delta) to a session growing to 1,000 events;
//!   ADK's route is PATCH with the same delta (it appends an event carrying it).
//! - get 20 recent / get all: a session of 1,000 events. The client with agentstate's
//!   extensions reads it in one request; without them (as against Google) it reads the session,
//!   then every page of events.
//!
//! Run: `cargo bench -p agentstate-bench --bench vertex`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agentstate::{CreateSession, GetSessionConfig, SessionKey, SessionService};
use agentstate_bench::{make_event, median};
use agentstate_server::{AppState, app};
use agentstate_sql::SqlStore;
use agentstate_vertex::VertexAiStore;
use serde_json::json;

const EVENTS: usize = 1_000;
const READS: usize = 200;

fn row(label: &str, measured: Duration, floor: Duration) {
    let ratio = measured.as_secs_f64() / floor.as_secs_f64();
    println!(
        "{label:<52} {:>10.1} µs {:>10.1} µs {ratio:>7.2}×",
        measured.as_secs_f64() * 1e6,
        floor.as_secs_f64() * 1e6
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("agentstate-bench-vertex-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}/bench.db?synchronous=normal", dir.display());
        let direct = SessionService::new(SqlStore::connect(&url).await.unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let served: SessionService = direct.clone();
        tokio::spawn(async move { axum::serve(listener, app(AppState::new(served))).await.unwrap() });
        let client = SessionService::new(VertexAiStore::builder().endpoint(&base).build().unwrap());
        let plain =
            SessionService::new(VertexAiStore::builder().endpoint(&base).agentstate_extensions(false).build().unwrap());
        let http = reqwest::Client::new();

        // Appends: three sessions, one per way, grown together.
        let mut on_direct = direct.create_session(CreateSession::new("42", "u").id("direct")).await.unwrap();
        let mut on_client = client.create_session(CreateSession::new("42", "u").id("client")).await.unwrap();
        direct.create_session(CreateSession::new("42", "u").id("patch")).await.unwrap();
        let patch_url = format!("{base}/apps/42/users/u/sessions/patch");
        let (mut d, mut c, mut p) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..EVENTS {
            let t = Instant::now();
            direct.append_event(&mut on_direct, make_event(i)).await.unwrap();
            d.push(t.elapsed());
            let t = Instant::now();
            client.append_event(&mut on_client, make_event(i)).await.unwrap();
            c.push(t.elapsed());
            let delta = json!({"stateDelta": make_event(i).actions.state_delta});
            let t = Instant::now();
            let status = http.patch(&patch_url).json(&delta).send().await.unwrap().status();
            p.push(t.elapsed());
            assert!(status.is_success(), "{status}");
        }
        let (d, c, p) = (median(d), median(c), median(p));
        println!(
            "\n{:<52} {:>13} {:>13} {:>8}",
            "operation (SQLite, synchronous=normal)", "measured", "floor", "ratio"
        );
        row("append: Vertex API, agentstate's client", c, d);
        row("append: ADK route (PATCH stateDelta)", p, d);

        // Reads of a 1,000-event session.
        let key = SessionKey::new("42", "u", "client").unwrap();
        let adk_url = format!("{base}/apps/42/users/u/sessions/client");
        let mut samples: [Vec<Duration>; 7] = Default::default();
        for _ in 0..READS {
            let t = Instant::now();
            direct.get_session(&key, GetSessionConfig::recent(20)).await.unwrap().unwrap();
            samples[0].push(t.elapsed());
            let t = Instant::now();
            client.get_session(&key, GetSessionConfig::recent(20)).await.unwrap().unwrap();
            samples[1].push(t.elapsed());
            let t = Instant::now();
            plain.get_session(&key, GetSessionConfig::recent(20)).await.unwrap().unwrap();
            samples[2].push(t.elapsed());
            let t = Instant::now();
            direct.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
            samples[3].push(t.elapsed());
            let t = Instant::now();
            let all = client.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
            samples[4].push(t.elapsed());
            assert_eq!(all.events().len(), EVENTS);
            let t = Instant::now();
            plain.get_session(&key, GetSessionConfig::default()).await.unwrap().unwrap();
            samples[5].push(t.elapsed());
            let t = Instant::now();
            let body = http.get(&adk_url).send().await.unwrap().bytes().await.unwrap();
            samples[6].push(t.elapsed());
            assert!(body.len() > 1000);
        }
        let [recent, client_recent, plain_recent, full, client_full, plain_full, adk_full] = samples.map(median);
        row("get 20 recent of 1,000: Vertex API, agentstate's client", client_recent, recent);
        row("get 20 recent of 1,000: client without extensions", plain_recent, recent);
        row("get all 1,000: Vertex API, agentstate's client", client_full, full);
        row("get all 1,000: client without extensions", plain_full, full);
        row("get all 1,000: ADK route (GET, JSON not parsed)", adk_full, full);
        drop(std::fs::remove_dir_all(&dir));
    });
}
