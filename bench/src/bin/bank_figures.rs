//! Memory Bank figures: retrieval and writes through the Agent Engine routes, each next to the
//! same work done in process by `MemoryService` in the same run (the floor: what is left is HTTP,
//! JSON and the route).
//!
//! `cargo run --release -p agentstate-bench --bin bank_figures -- --memories 10000,100000
//! --backend sqlite --backend postgres --backend redis` stores, for each size, that many memories
//! in one scope (`{app_name: ENGINE, user_id}`, 12 words each from a skewed 5,000-word
//! vocabulary), then times 200 similarity retrievals of two words (`top_k` 3) and 200 simple
//! retrievals of a 100-memory page, over HTTP and in process (p50, p99); then 400 `generate` calls
//! of 5 direct facts each against as many `bank_create`s in process (facts a second).

use std::time::{Duration, Instant};

use agentstate::memory::{BankMemory, MemoryOptions, MemoryOwner, MemoryService, RevisionOptions, Scope};
use agentstate::{Content, Event, SessionService};
use agentstate_bench::databases::Backend;
use agentstate_bench::words::Words;
use agentstate_server::{AppState, Connections, app};
use clap::Parser;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// Memories in the scope, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    memories: Vec<usize>,
    /// Backends to measure (the in-memory store always runs).
    #[arg(long, value_enum)]
    backend: Vec<Backend>,
    /// Retrievals timed per figure.
    #[arg(long, default_value_t = 200)]
    retrievals: usize,
    /// `generate` calls (5 facts each) timed per backend.
    #[arg(long, default_value_t = 400)]
    generates: usize,
}

const ENGINE: &str = "4242";
const USER: &str = "u0";

fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let at = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Serves the API over `service` on a loopback port; its base URL.
async fn serve(service: SessionService) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = app(AppState::new(service));
    tokio::spawn(agentstate_server::serve(listener, router, Connections::default(), std::future::pending()));
    Ok(format!("http://{addr}/v1beta1/reasoningEngines/{ENGINE}"))
}

async fn post(client: &reqwest::Client, url: &str, body: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    let response = client.post(url).json(body).send().await?;
    let status = response.status();
    let answer: serde_json::Value = response.json().await?;
    anyhow::ensure!(status.is_success(), "{url}: {status} {answer}");
    Ok(answer)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut query_words = Words::new(7);
    let queries: Vec<String> = (0..args.retrievals).map(|_| query_words.sentence(2)).collect();
    let dir = std::env::temp_dir().join(format!("agentstate-bank-figures-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let scope = Scope::of_user(ENGINE, USER);
    let scope_json = json!({"app_name": ENGINE, "user_id": USER});
    let client = reqwest::Client::new();
    println!(
        "| memories | backend | similarity p50 / p99 (HTTP) | in process | simple page p50 / p99 (HTTP) | in process |"
    );
    println!("|---|---|---|---|---|---|");
    let mut writes = Vec::new();
    for &count in &args.memories {
        for backend in std::iter::once(None).chain(args.backend.iter().copied().map(Some)) {
            let (store, database) = agentstate_bench::databases::store_of(backend, &dir).await?;
            let service = SessionService::shared(store);
            let memory = MemoryService::new(service.clone());
            let owner = MemoryOwner::new(ENGINE, USER)?;
            let mut words = Words::new(1);
            for chunk in 0..count.div_ceil(1000) {
                let events: Vec<Event> = (0..1000.min(count - chunk * 1000))
                    .map(|i| {
                        let mut event =
                            Event::new("inv").author("user").content(Content::text("user", words.sentence(12)));
                        event.id = format!("c{chunk}-m{i}");
                        event
                    })
                    .collect();
                memory.add_events(&owner, Some(&format!("c{chunk}")), &events, &MemoryOptions::default()).await?;
            }
            let base = serve(service.clone()).await?;

            let (mut http, mut local) = (Vec::new(), Vec::new());
            for query in &queries {
                let body = json!({"scope": scope_json, "similaritySearchParams": {"searchQuery": query}});
                let started = Instant::now();
                post(&client, &format!("{base}/memories:retrieve"), &body).await?;
                http.push(started.elapsed());
                let started = Instant::now();
                memory.bank_search(ENGINE, &scope, query, 3).await?;
                local.push(started.elapsed());
            }
            let (similar, similar_local) = (percentiles(http), percentiles(local));
            let (mut http, mut local) = (Vec::new(), Vec::new());
            for _ in 0..args.retrievals {
                let body = json!({"scope": scope_json, "simpleRetrievalParams": {"pageSize": 100}});
                let started = Instant::now();
                post(&client, &format!("{base}/memories:retrieve"), &body).await?;
                http.push(started.elapsed());
                let started = Instant::now();
                memory.bank_list(ENGINE, &scope, None, 100).await?;
                local.push(started.elapsed());
            }
            let (page, page_local) = (percentiles(http), percentiles(local));
            let name = backend.map_or("in-memory", Backend::name);
            println!(
                "| {count} | {name} | {} / {} | {} / {} | {} / {} | {} / {} |",
                ms(similar.0),
                ms(similar.1),
                ms(similar_local.0),
                ms(similar_local.1),
                ms(page.0),
                ms(page.1),
                ms(page_local.0),
                ms(page_local.1)
            );

            if count == args.memories[0] {
                let started = Instant::now();
                for g in 0..args.generates {
                    let facts: Vec<_> =
                        (0..5).map(|f| json!({"fact": format!("fact {g} {f} {}", words.sentence(8))})).collect();
                    let body = json!({"scope": scope_json, "directMemoriesSource": {"directMemories": facts}});
                    post(&client, &format!("{base}/memories:generate"), &body).await?;
                }
                let over_http = (args.generates * 5) as f64 / started.elapsed().as_secs_f64();
                let none = RevisionOptions::default();
                let started = Instant::now();
                for g in 0..args.generates * 5 {
                    let fact = format!("local fact {g} {}", words.sentence(8));
                    memory
                        .bank_create(ENGINE, BankMemory::new(format!("local-{g}"), scope.clone(), fact), &none)
                        .await?;
                }
                let in_process = (args.generates * 5) as f64 / started.elapsed().as_secs_f64();
                writes.push(format!("| {name} | {over_http:.0} | {in_process:.0} | {:.2}× |", in_process / over_http));
            }
            if let Some(database) = database {
                database.remove().await?;
            }
        }
    }
    println!(
        "\n| backend | facts/s, `generate` (5 a call, HTTP) | facts/s, `bank_create` in process | in process / HTTP |"
    );
    println!("|---|---|---|---|");
    for row in writes {
        println!("{row}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
