//! Serving connections with the protections a public socket needs: a deadline for a request's
//! headers (a client that trickles them, sends nothing at all, or holds an idle keep-alive
//! connection open, is cut off),
//! a deadline for its body, and a limit on open connections (the next ones wait in the kernel's
//! backlog). `axum::serve` has none of the first and third, so slow clients could hold the server.
//! [`serve_tls`] does the same over TLS ([`Tls`]): a handshake is due when the headers would be.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower_http::timeout::RequestBodyTimeoutLayer;

use crate::tls::Tls;

/// The most HTTP/2 streams (calls) open at once on one connection.
const MAX_STREAMS: u32 = 256;

/// How connections are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    /// The longest a client may take to send a request's headers, and the longest an idle
    /// keep-alive connection stays open.
    pub header_read_timeout: Duration,
    /// The longest a client may take to send a request's body (then 408).
    pub body_read_timeout: Duration,
    /// The most connections open at once.
    pub max_connections: usize,
    /// How long a shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
}

impl Default for Connections {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish
/// (up to `connections.shutdown_grace`).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    connections: Connections,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_with(listener, router, connections, None, shutdown).await
}

/// [`serve`] over TLS: every connection's handshake first (due within
/// `connections.header_read_timeout`); one that fails, such as a cleartext request, is closed
/// unanswered.
pub async fn serve_tls(
    listener: TcpListener,
    router: Router,
    connections: Connections,
    tls: Tls,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_with(listener, router, connections, Some(tls), shutdown).await
}

async fn serve_with(
    listener: TcpListener,
    router: Router,
    connections: Connections,
    tls: Option<Tls>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let router = router.layer(RequestBodyTimeoutLayer::new(connections.body_read_timeout));
    let slots = Arc::new(Semaphore::new(connections.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(connections.header_read_timeout);
    // HTTP/2 (gRPC, and REST clients that speak it): pings find dead peers, and a connection
    // carries at most so many calls at once.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(connections.header_read_timeout))
        .keep_alive_timeout(connections.header_read_timeout)
        .max_concurrent_streams(MAX_STREAMS);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot { Ok(slot) => slot, Err(_) => break },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let (builder, watcher) = (Arc::clone(&builder), graceful.watcher());
        let (first_bytes, tls) = (connections.header_read_timeout, tls.clone());
        tokio::spawn(async move {
            // hyper reads a connection's first bytes (HTTP/1 or HTTP/2?) with no deadline of its
            // own: a client that connects and sends nothing is let go when its headers are due.
            let mut first = [0_u8; 1];
            if let Ok(Ok(1)) = tokio::time::timeout(first_bytes, stream.peek(&mut first)).await {
                let served = match tls {
                    None => connection(&builder, watcher, stream, service).await,
                    Some(tls) => match handshake(&tls, stream, first_bytes).await {
                        Some(stream) => connection(&builder, watcher, stream, service).await,
                        None => Ok(()),
                    },
                };
                if let Err(e) = served {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(connections.shutdown_grace, graceful.shutdown()).await.is_err() {
        tracing::warn!("requests still in flight after the shutdown grace period were cut off");
    }
    Ok(())
}

/// Serves one connection's requests until it closes or the shutdown's grace ends.
async fn connection(
    builder: &Builder<TokioExecutor>,
    watcher: Watcher,
    io: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    service: TowerToHyperService<Router>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    watcher.watch(builder.serve_connection_with_upgrades(TokioIo::new(io), service).into_owned()).await
}

/// The TLS handshake of a connection, within `deadline`; `None` (and the connection closed)
/// when it fails or is late.
async fn handshake(
    tls: &Tls,
    stream: TcpStream,
    deadline: Duration,
) -> Option<impl AsyncRead + AsyncWrite + Unpin + Send + 'static> {
    match tokio::time::timeout(deadline, tls.acceptor().accept(stream)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!("TLS handshake not done in time");
            None
        }
    }
}
