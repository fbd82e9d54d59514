//! An agentstate server for ADK-Rust's own clients to talk to, in the test's process, over a
//! throwaway store on each backend the conformance suite runs: SQLite (in memory), PostgreSQL
//! and MariaDB (a fresh database each, see [`agentstate_conformance::databases`]), Redis and a
//! Redis Cluster of the test's own (a key prefix each), and the managed-service API (agentstate's
//! client of it talking to an agentstate server). The tests are in `tests/`; [`scripted`] is an ADK-Rust agent on a
//! scripted model, for the tests and the benchmark that compare session services. This crate
//! publishes nothing.

pub mod scripted;

use agentstate::SessionService;
use agentstate_conformance::redis_servers::{fresh_prefix, redis_url, url_with_prefix};
use agentstate_server::{AppState, Tokens, app};

/// The API key the servers accept (ADK-Rust's API-key credentials send it as
/// `x-goog-api-key`).
pub const API_KEY: &str = "adk-rust-client-key-0123456789";

/// A service over agentstate's in-memory store.
pub async fn in_memory() -> SessionService {
    SessionService::in_memory()
}

/// A service over SQLite in memory, the embedded default.
pub async fn sqlite() -> SessionService {
    sql("sqlite::memory:".into()).await
}

/// A service over a new, empty database on the local PostgreSQL.
pub async fn postgres() -> SessionService {
    sql(agentstate_conformance::databases::fresh_postgres().await).await
}

/// A service over a new, empty database on the local MariaDB.
pub async fn mysql() -> SessionService {
    sql(agentstate_conformance::databases::fresh_mysql().await).await
}

/// A service over a key prefix of its own on the local Redis.
pub async fn redis() -> SessionService {
    redis_at(url_with_prefix(&redis_url(), &fresh_prefix())).await
}

/// A service over a key prefix of its own on `cluster` (see
/// [`RedisCluster::start`](agentstate_conformance::redis_servers::RedisCluster::start)).
pub async fn redis_cluster(cluster: &agentstate_conformance::redis_servers::RedisCluster) -> SessionService {
    redis_at(cluster.url(&fresh_prefix())).await
}

/// A service over the Redis at `url`; a server that cannot be reached panics, named.
async fn redis_at(url: String) -> SessionService {
    let store = agentstate_redis::RedisStore::connect(&url).await;
    SessionService::new(store.unwrap_or_else(|e| panic!("{url}: {e}")))
}

/// A service over the managed-service API: agentstate's client of it (`agentstate-vertex`, with
/// agentstate's extensions) talking to an agentstate server over SQLite in memory, served on a
/// spare loopback port for the life of the current runtime. Like Agent Engine, it cannot list
/// its apps.
pub async fn agent_engine() -> SessionService {
    let base = serve(sqlite().await).await;
    let client = agentstate_vertex::VertexAiStore::builder()
        .endpoint(base)
        .credentials(agentstate_vertex::Credentials::api_key(API_KEY))
        .agentstate_extensions(true)
        .build();
    SessionService::new(client.unwrap_or_else(|e| panic!("the managed-service client: {e}")))
}

/// A service over the SQL database at `url`; a server that cannot be reached panics, named.
async fn sql(url: String) -> SessionService {
    let store = agentstate_sql::SqlStore::connect(&url).await;
    SessionService::new(store.unwrap_or_else(|e| panic!("{url}: {e}")))
}

/// Serves `service` on a spare loopback port, with [`API_KEY`] allowed every app, for the
/// life of the current runtime; the base URL.
///
/// # Panics
/// When no loopback port can be had.
pub async fn serve(service: SessionService) -> String {
    let tokens = Tokens::parse(&format!(r#"{{"tokens": [{{"token": "{API_KEY}", "apps": "*"}}]}}"#));
    let tokens = tokens.unwrap_or_else(|e| panic!("the test's tokens: {e}"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("a port: {e}"));
    let base = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("its address: {e}")));
    tokio::spawn(async move { axum::serve(listener, app(AppState::new(service).with_tokens(tokens))).await });
    base
}
