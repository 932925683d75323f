//! Accepts connections until shutdown, bounded by a connection semaphore ([`accept_bounded`],
//! also used by the metrics listener).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tracing::{info, warn};

use crate::broker::Broker;
use crate::net::connection;

/// Ample for a single-node developer broker; each connection costs a task and its buffers.
const MAX_CONNECTIONS: usize = 4096;

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
/// here are told the advertised listener of the same name, as Kafka does.
pub async fn serve_listener(
    listener: TcpListener,
    name: &str,
    broker: Arc<Broker>,
    shutdown: watch::Receiver<bool>,
) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, listener = name, "listening");
    }
    let name: Arc<str> = Arc::from(name);
    let watcher = shutdown.clone();
    accept_bounded(
        listener,
        MAX_CONNECTIONS,
        watcher,
        "accept failed",
        move |stream, peer| {
            let broker = broker.clone();
            let shutdown = shutdown.clone();
            let name = name.clone();
            async move { connection::run(stream, peer, &name, broker, shutdown).await }
        },
    )
    .await;
}

/// Accepts on `listener` until `shutdown` turns true, with at most `max` accepted streams
/// being served at once; each one runs `serve` on its own task, holding its permit until that
/// returns. A failed accept is logged with `accept_error` and retried after a short pause.
/// Shared by the Kafka listeners and the metrics listener.
pub(crate) async fn accept_bounded<F, Fut>(
    listener: TcpListener,
    max: usize,
    mut shutdown: watch::Receiver<bool>,
    accept_error: &'static str,
    serve: F,
) where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(max));
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
            _ = shutdown.changed() => return,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let served = serve(stream, peer);
                tokio::spawn(async move {
                    served.await;
                    drop(permit);
                });
            }
            Err(e) => {
                warn!(error = %e, "{accept_error}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}
