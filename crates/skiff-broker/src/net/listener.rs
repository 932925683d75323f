//! Accepts connections until shutdown within the connection quotas ([`accept_bounded`], also
//! used by the HTTP listeners), tracks every connection task, and at shutdown stops
//! accepting and waits for those tasks to finish the requests in hand.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{error, info, warn};

use crate::broker::Broker;
use crate::net::connection;
use crate::net::quotas::ConnectionQuotas;

/// First pause after a failed accept (EMFILE, ENFILE, ENOBUFS...). The pending connection
/// stays in the backlog, so without a pause the listener would spin on it.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// Longest pause between retries of a failing accept: long enough not to burn a core or
/// flood the log while out of descriptors, short enough to resume soon after one frees.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Serve until `shutdown` turns true; then stop accepting and let open connections finish
/// the request in hand. Connections are answered as if they came in on the first listener.
pub async fn serve(listener: TcpListener, broker: Arc<Broker>, shutdown: watch::Receiver<bool>) {
    let name = broker
        .config
        .listeners
        .first()
        .map(|l| l.name.clone())
        .unwrap_or_default();
    serve_listener(listener, &name, broker, shutdown).await;
}

/// Like [`serve`] for the listener called `name` (`listeners` entry): clients that connect
/// here are told the advertised listener of the same name, as Kafka does. A listener mapped to
/// SSL in `listener.security.protocol.map` speaks TLS (see [`crate::net::tls`]); if its TLS
/// settings cannot be used this logs why and returns at once (call
/// [`crate::net::tls::listener_tls`] first to fail at start). Returns once shutdown was
/// requested and every connection accepted here has ended.
pub async fn serve_listener(
    listener: TcpListener,
    name: &str,
    broker: Arc<Broker>,
    shutdown: watch::Receiver<bool>,
) {
    use skiff_config::SecurityProtocol as P;
    let protocol = skiff_config::listener_protocol(&broker.config, name);
    let sasl = match protocol {
        Some(P::SaslPlaintext | P::SaslSsl) => match broker.sasl.get(name) {
            Some(s) => Some(s.clone()),
            None => {
                error!(
                    listener = name,
                    "cannot serve the SASL listener: it was not set up at start"
                );
                return;
            }
        },
        _ => None,
    };
    let tls = match protocol {
        Some(P::Ssl | P::SaslSsl) => {
            match crate::net::tls::TlsReloader::new(&broker.live_config(), name) {
                Ok(tls) => Some(Arc::new(tls)),
                Err(e) => {
                    error!(listener = name, error = %e, "cannot serve the SSL listener");
                    return;
                }
            }
        }
        _ => None,
    };
    if let Ok(addr) = listener.local_addr() {
        let protocol = protocol.map_or("PLAINTEXT", |p| p.name());
        info!(%addr, listener = name, protocol, "listening");
    }
    let name: Arc<str> = Arc::from(name);
    let watcher = shutdown.clone();
    let quotas = broker.connections.clone();
    accept_bounded(
        listener,
        quotas,
        watcher,
        "accept failed",
        move |stream, peer| {
            let broker = broker.clone();
            let shutdown = shutdown.clone();
            let name = name.clone();
            let tls = tls.as_ref().map(|t| t.current(&broker));
            let sasl = sasl.clone();
            async move {
                match tls {
                    // Boxed: a TLS connection's future is twice the size of a plaintext one's
                    // (the handshake and the TLS stream), and every connection's task would
                    // otherwise be sized for it, idle plaintext ones included.
                    Some(tls) => {
                        let tls =
                            connection::run_tls(stream, peer, &name, tls, sasl, broker, shutdown);
                        Box::pin(tls).await
                    }
                    None => connection::run(stream, peer, &name, sasl, broker, shutdown).await,
                }
            }
        },
    )
    .await;
}

/// Accepts on `listener` until `shutdown` turns true, within `quotas`: while every slot is
/// taken it does not accept (clients wait in the kernel's backlog), and a connection over its
/// address's limit is closed at once. Each accepted stream runs `serve` on its own task,
/// holding its slot until that returns. A failed accept is logged and retried after a pause
/// that doubles up to [`ACCEPT_BACKOFF_MAX`].
///
/// At shutdown the listening socket is closed first, then this waits for every task it
/// started; cancelling this future (a drain that ran out of time) aborts them.
pub(crate) async fn accept_bounded<F, Fut>(
    listener: TcpListener,
    quotas: Arc<ConnectionQuotas>,
    mut shutdown: watch::Receiver<bool>,
    accept_error: &'static str,
    serve: F,
) where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    let mut backoff = ACCEPT_BACKOFF_MIN;
    'accept: loop {
        let permit = loop {
            tokio::select! {
                p = quotas.wait_for_slot() => match p {
                    Some(p) => break p,
                    None => break 'accept,
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = shutdown.changed() => break 'accept,
            }
        };
        let accepted = loop {
            tokio::select! {
                a = listener.accept() => break a,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = shutdown.changed() => break 'accept,
            }
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = ACCEPT_BACKOFF_MIN;
                match quotas.admit(permit, peer.ip()) {
                    Ok(slot) => {
                        // Boxed: an async block that awaits a future it captured keeps room for
                        // it twice (the capture and the awaited value), which doubled every
                        // connection's task.
                        let served = Box::pin(serve(stream, peer));
                        tasks.spawn(async move {
                            served.await;
                            drop(slot);
                        });
                    }
                    Err(too_many) => {
                        info!(
                            %peer,
                            limit = too_many.limit,
                            "rejected connection: the address already has the configured maximum of connections"
                        );
                        drop(stream);
                    }
                }
            }
            Err(e) => {
                warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "{accept_error}");
                drop(permit);
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => break 'accept,
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
            }
        }
    }
    // Stop accepting: new clients are refused by the kernel from here on.
    drop(listener);
    while tasks.join_next().await.is_some() {}
}
