//! Accepts connections until shutdown, bounded by a connection semaphore.

use std::sync::Arc;

use tokio::net::TcpListener;
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
    mut shutdown: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, listener = name, "listening");
    }
    let name: Arc<str> = Arc::from(name);
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
                let broker = broker.clone();
                let shutdown = shutdown.clone();
                let name = name.clone();
                tokio::spawn(async move {
                    connection::run(stream, peer, &name, broker, shutdown).await;
                    drop(permit);
                });
            }
            Err(e) => {
                warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}
