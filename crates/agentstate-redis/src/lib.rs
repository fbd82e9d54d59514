//! A Redis store for agentstate: every [`SessionStore`](agentstate::store::SessionStore)
//! operation is one atomic step on the server (a script or a `MULTI` block), in one round trip.
//! It has every capability (history, lifecycle, administration); expired sessions are judged by
//! the caller's clock in every script and removed by Redis itself (`PEXPIREAT`).
//!
//! - **Layout for the operations** (see the key table in the `keys` module's source): a session's
//!   metadata and state are hashes; its events are a sorted set of ids scored by time beside a
//!   hash of their JSON, so "the last n", "after time t" and "a page after a position" read only
//!   what they return; app and user state are hashes, so a merge writes only the keys it sets.
//!   An append costs the same at event 10 and at event 10,000.
//! - **Atomic commits**: a server-side Lua script checks that the session exists, the event id
//!   (a retry of the same event is answered with the stored one), and the caller's marker (a
//!   stale handle is refused), then stores the event, sets and deletes each scope's keys field by
//!   field and moves the marker. Concurrent writers of different `user:`/`app:` keys lose
//!   nothing. Values are JSON text written here; the scripts never decode them (Lua's `cjson`
//!   would change number precision and key order).
//! - **Cluster**: all keys of one app share a hash slot (the app name is the hash tag), because a
//!   commit touches the app's, the user's and the session's keys at once. Apps spread over the
//!   cluster; one app lives on one shard.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use agentstate::{CreateSession, SessionService};
//! use agentstate_redis::RedisStore;
//!
//! let service = SessionService::new(RedisStore::connect("redis://127.0.0.1:6379/0?prefix=myagents:").await?);
//! let session = service.create_session(CreateSession::new("app", "alice")).await?;
//! # Ok(()) }
//! ```
//!
//! Durability is Redis's: with `appendonly yes` and `appendfsync always`, an acknowledged append
//! survives a crash of Redis; with `appendfsync everysec` (Redis's default when AOF is on) up to
//! a second of acknowledged appends can be lost; with RDB snapshots only, everything since the
//! last snapshot.

mod adk;
mod keys;
mod scripts;
mod sentinel;
mod store;
mod url;

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

pub use crate::adk::{ADK_DEFAULT_PREFIX, AdkRedisError, import as import_adk, read as read_adk};
pub use crate::url::{RedisUrl, RedisUrlError};

/// The key prefix used when none is given.
pub const DEFAULT_PREFIX: &str = "agentstate:";

/// How a [`RedisStore`] talks to Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// Prepended to every key, so several deployments (or test runs) share one Redis. Must not
    /// hold `{` or `}` (they would change the cluster hash tag).
    pub prefix: String,
    /// How long one command may take before it fails with a retryable error.
    pub response_timeout: Duration,
    /// How long connecting may take.
    pub connection_timeout: Duration,
    /// Talk to a Redis Cluster: the URL names one of its nodes, the others are discovered.
    pub cluster: bool,
    /// Acknowledge a write only once this many replicas have it (`WAIT`); 0 does not wait.
    pub wait_replicas: u32,
    /// How long a write waits for those replicas before it fails (retryably).
    pub wait_timeout: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_owned(),
            response_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(2),
            cluster: false,
            wait_replicas: 0,
            wait_timeout: Duration::from_secs(1),
        }
    }
}

/// Sessions in Redis. Cheap to clone: clones share one multiplexed connection, which reconnects
/// by itself after Redis restarts or the network drops (the call that saw the failure gets a
/// retryable [`agentstate::Error::Backend`]).
#[derive(Clone)]
pub struct RedisStore {
    connection: Connection,
    prefix: String,
    shown: String,
    /// Replicas a write waits for, and for how long.
    replicas: Option<(u32, Duration)>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore").field("url", &self.shown).field("prefix", &self.prefix).finish()
    }
}

/// Why a [`RedisStore`] could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is malformed.
    #[error(transparent)]
    Url(#[from] RedisUrlError),
    /// Redis could not be reached, or refused the connection.
    #[error("cannot connect to {url}: {source}")]
    Connect {
        /// The URL, without its password.
        url: String,
        /// What Redis or the network said.
        #[source]
        source: redis::RedisError,
    },
}

/// `rediss://` runs on rustls, which asks for a process-wide crypto provider when the program
/// builds in more than one (the agentstate binary does): ring's, unless the program installed one.
pub(crate) fn crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one between the check and here: either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

impl RedisStore {
    /// Connects to the Redis named by `url` (`redis://[user:password@]host[:port][/db]`,
    /// `rediss://` for TLS, or `redis+sentinel://…/master` for the master Redis Sentinel names),
    /// with the URL's options (`?prefix=…&timeout_ms=…`; see [`RedisUrl::parse`]).
    pub async fn connect(url: &str) -> Result<Self, ConnectError> {
        Self::open(&RedisUrl::parse(url)?).await
    }

    /// Connects to a parsed URL.
    pub async fn open(url: &RedisUrl) -> Result<Self, ConnectError> {
        crypto_provider();
        let shown = url.to_string();
        let connect_error = |source| ConnectError::Connect { url: shown.clone(), source };
        let options = url.options();
        let connection = if let Some(sentinel) = url.sentinel() {
            Connection::Sentinel(sentinel::SentinelConnection::open(url, sentinel).await.map_err(connect_error)?)
        } else if options.cluster {
            let client = ClusterClient::builder(vec![url.connection_url()])
                .response_timeout(options.response_timeout)
                .connection_timeout(options.connection_timeout)
                .build()
                .map_err(connect_error)?;
            Connection::Cluster(client.get_async_connection().await.map_err(connect_error)?)
        } else {
            let client = redis::Client::open(url.connection_url()).map_err(connect_error)?;
            let config = ConnectionManagerConfig::new()
                .set_response_timeout(Some(options.response_timeout))
                .set_connection_timeout(Some(options.connection_timeout));
            Connection::Single(ConnectionManager::new_with_config(client, config).await.map_err(connect_error)?)
        };
        let replicas = (options.wait_replicas > 0).then_some((options.wait_replicas, options.wait_timeout));
        let service = Self { connection, prefix: options.prefix.clone(), shown, replicas };
        Ok(service)
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

/// One Redis, a cluster, or the master the sentinels name: all multiplexed, all reconnecting by
/// themselves.
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(sentinel::SentinelConnection),
}

// The redis crate's `ConnectionLike`, implemented here and by `SentinelConnection` with the
// trait's own signatures (which is all the two share).
impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
            Self::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Self::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Self::Sentinel(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
            Self::Sentinel(c) => c.get_db(),
        }
    }
}
