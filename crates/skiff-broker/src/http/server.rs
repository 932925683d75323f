//! Serving the HTTP listeners' connections (the HTTP API and `metrics.listener`): accepted within a connection bound
//! ([`MAX_CONNECTIONS`]), optionally TLS with the broker's keystore, one request per
//! connection (`Connection: close`, as the metrics listener: no keep-alive state, and no
//! idle connection holding a slot), every phase under a deadline: the TLS handshake, the
//! request head ([`HEAD_TIMEOUT`]), and each write ([`WRITE_TIMEOUT`] without progress,
//! so a snapshot to a reader that stopped reading ends instead of pinning its scan forever).
//!
//! Logs: a span per request (peer, method, path), its status at debug level.
//!
//! Thread safety: each connection is its own task; the router and the API state are shared.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Sleep;
use tower::ServiceExt;
use tracing::{debug, info, Instrument};

use super::Peer;
use crate::net::listener::accept_bounded;
use crate::net::quotas::ConnectionQuotas;

/// Connections served at once; more wait in the kernel's accept queue. An operator's API,
/// not a data path: a handful of clients, plus `skiff.snapshot.max.concurrent` streams.
pub const MAX_CONNECTIONS: usize = 64;
/// Time to complete the TLS handshake.
const TLS_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head (hyper's read buffer; its minimum): a scraper's GET is a few hundred
/// bytes, a request with a JWT a few KB. A larger head is answered 431.
pub const MAX_HEAD: usize = 8 * 1024;
/// Longest a write may make no progress (a stalled reader).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` turns true; then stops accepting and lets
/// requests in hand finish. `name` is for the logs (`metrics.listener`,
/// `skiff.http.listener`).
pub async fn serve(
    listener: TcpListener,
    name: &'static str,
    router: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: watch::Receiver<bool>,
) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, listener = name, tls = tls.is_some(), "HTTP listening");
    }
    let stop = shutdown.clone();
    accept_bounded(
        listener,
        ConnectionQuotas::bounded(MAX_CONNECTIONS),
        shutdown,
        "HTTP accept failed",
        move |stream, peer| {
            let (router, tls, stop) = (router.clone(), tls.clone(), stop.clone());
            async move {
                if let Err(e) = connection(stream, Peer(peer), router, tls, stop).await {
                    debug!(%peer, listener = name, error = %e, "HTTP connection ended");
                }
            }
        },
    )
    .await;
}

async fn connection(
    stream: TcpStream,
    peer: Peer,
    router: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let stream = WriteDeadline::new(stream, WRITE_TIMEOUT);
    match tls {
        None => serve_io(stream, peer, router, stop).await,
        Some(acceptor) => {
            let tls = tokio::time::timeout(TLS_TIMEOUT, acceptor.accept(stream))
                .await
                .map_err(|_| "TLS handshake timed out".to_string())?
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
            serve_io(tls, peer, router, stop).await
        }
    }
}

async fn serve_io<S>(
    io: S,
    peer: Peer,
    router: Router,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        let span = tracing::info_span!(
            "http",
            peer = %peer.0,
            method = %request.method(),
            path = request.uri().path(),
        );
        request.extensions_mut().insert(peer);
        let answer = router.clone().oneshot(request);
        async move {
            let response = answer.await;
            if let Ok(r) = &response {
                debug!(status = r.status().as_u16(), "answered");
            }
            response
        }
        .instrument(span)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .keep_alive(false);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => return r.map_err(|e| e.to_string()),
        _ = stop.changed() => {}
    }
    // Shutting down: finish the response in hand (the drain in main bounds it).
    conn.as_mut().graceful_shutdown();
    conn.await.map_err(|e| e.to_string())
}

/// A stream whose writes fail with `TimedOut` once one has made no progress for the limit.
/// Reads are bounded by hyper's head timeout instead.
struct WriteDeadline<S> {
    inner: S,
    limit: Duration,
    /// Armed when a write returns `Pending`, dropped when one makes progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    fn new(inner: S, limit: Duration) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled: None,
        }
    }

    /// After the inner stream answered `poll`: disarm on progress, arm (or check) on Pending.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading the response",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_stalled_write_times_out() {
        // A duplex pipe of 16 bytes that nobody reads: the second write stalls.
        let (a, _b) = tokio::io::duplex(16);
        let mut s = WriteDeadline::new(a, Duration::from_millis(100));
        s.write_all(&[0; 16]).await.unwrap();
        let e = s.write_all(&[0; 16]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
