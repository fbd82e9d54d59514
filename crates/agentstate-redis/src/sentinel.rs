//! Redis behind Sentinel: the sentinels name the master; one multiplexed connection to it serves
//! every call until a call finds it gone or read-only (a failover demoted it), and the next call
//! asks the sentinels again. The call that saw the failure fails retryably; none waits on a master
//! that is not there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{AsyncConnectionConfig, Cmd, ErrorKind, IntoConnectionInfo as _, Pipeline, RedisError, RedisFuture, Value};

use crate::url::{RedisUrl, Sentinel};

/// The master the sentinels name, reconnected after a failover.
#[derive(Clone)]
pub(crate) struct SentinelConnection {
    inner: Arc<Inner>,
}

struct Inner {
    /// Asks the sentinels; one caller at a time.
    client: tokio::sync::Mutex<SentinelClient>,
    /// The master's connection, numbered so a failure forgets only the connection it met.
    current: Mutex<Option<(u64, MultiplexedConnection)>>,
    connections: AtomicU64,
    config: AsyncConnectionConfig,
    connect_timeout: std::time::Duration,
    db: i64,
}

impl SentinelConnection {
    /// Asks the sentinels for the master and connects to it.
    pub(crate) async fn open(url: &RedisUrl, sentinel: &Sentinel) -> redis::RedisResult<Self> {
        let node = url.connection_url().into_connection_info()?.redis_settings().clone();
        let db = node.db();
        let sentinels: Vec<String> = sentinel.sentinels.iter().map(|a| format!("redis://{a}")).collect();
        let client = SentinelClient::build(
            sentinels,
            sentinel.master.clone(),
            Some(SentinelNodeConnectionInfo::default().set_redis_connection_info(node)),
            SentinelServerType::Master,
        )?;
        let options = url.options();
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(Some(options.response_timeout))
            .set_connection_timeout(Some(options.connection_timeout));
        let connection = Self {
            inner: Arc::new(Inner {
                client: tokio::sync::Mutex::new(client),
                current: Mutex::new(None),
                connections: AtomicU64::new(0),
                config,
                connect_timeout: options.connection_timeout,
                db,
            }),
        };
        connection.master().await?;
        Ok(connection)
    }

    fn current(&self) -> Option<(u64, MultiplexedConnection)> {
        self.inner.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The master's connection, asking the sentinels when there is none.
    async fn master(&self) -> redis::RedisResult<(u64, MultiplexedConnection)> {
        if let Some(current) = self.current() {
            return Ok(current);
        }
        let mut client = self.inner.client.lock().await;
        // Another call may have connected while this one waited.
        if let Some(current) = self.current() {
            return Ok(current);
        }
        let asked = client.get_async_connection_with_config(&self.inner.config);
        let connection = tokio::time::timeout(self.inner.connect_timeout * 2, asked)
            .await
            .map_err(|_| RedisError::from((ErrorKind::Io, "the sentinels named no reachable master in time")))??;
        let number = self.inner.connections.fetch_add(1, Ordering::Relaxed) + 1;
        *self.inner.current.lock().unwrap_or_else(PoisonError::into_inner) = Some((number, connection.clone()));
        tracing::info!("Redis Sentinel: connected to the master the sentinels name");
        Ok((number, connection))
    }

    /// `call` on the master's connection; a failure that says the master is gone or demoted drops
    /// the connection, so the next call asks the sentinels again.
    async fn on_master<T>(
        &self,
        call: impl AsyncFnOnce(&mut MultiplexedConnection) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        let (number, mut connection) = self.master().await?;
        let result = call(&mut connection).await;
        if let Err(error) = &result {
            self.after(number, error);
        }
        result
    }

    /// Drops connection `number` if `error` says its server is gone or no longer the master.
    fn after(&self, number: u64, error: &RedisError) {
        let demoted = matches!(error.kind(), ErrorKind::Server(redis::ServerErrorKind::ReadOnly));
        if demoted || error.is_io_error() || error.is_connection_dropped() || error.is_timeout() {
            let mut current = self.inner.current.lock().unwrap_or_else(PoisonError::into_inner);
            if current.as_ref().is_some_and(|(n, _)| *n == number) {
                *current = None;
                tracing::warn!(%error, "Redis Sentinel: the master went away or was demoted; asking the sentinels again");
            }
        }
    }
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.on_master(async |connection| connection.req_packed_command(cmd).await))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(self.on_master(async move |connection| connection.req_packed_commands(pipeline, offset, count).await))
    }

    fn get_db(&self) -> i64 {
        self.inner.db
    }
}
