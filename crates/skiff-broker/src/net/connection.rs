//! One client connection: read size-prefixed frames, dispatch them one at a time in arrival
//! order, and write the responses in that same order.
//!
//! The reader processes requests sequentially (so pipelined produces to one partition are
//! appended in order, as Kafka does), but a request that waits — acks=all durability, a
//! fetch long poll — hands its wait to the writer as a future, so the next request is
//! read meanwhile. The writer awaits those futures in request order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ResponseKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn, Instrument};

use crate::broker::Broker;
use crate::dispatch::{dispatch_on, Reply, ResponseFuture};

/// Responses queued behind a slow one before the reader stops reading (back-pressure).
const MAX_IN_FLIGHT: usize = 64;
/// Kafka's `connections.max.idle.ms` default.
const IDLE_TIMEOUT: Duration = Duration::from_secs(600);

// Moved once per request; boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Outgoing {
    Now(Header, ResponseKind),
    Later(Header, ResponseFuture),
    Raw(Bytes),
    Close,
}

struct Header {
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
}

/// `listener` is the name of the `listeners` entry the client connected to.
pub async fn run(
    stream: TcpStream,
    peer: SocketAddr,
    listener: &str,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let span = tracing::info_span!("connection", %peer);
    async move {
        let _ = stream.set_nodelay(true);
        let (mut reader, writer) = stream.into_split();
        let (tx, rx) = mpsc::channel::<Outgoing>(MAX_IN_FLIGHT);
        let writer_task = tokio::spawn(write_loop(writer, rx).in_current_span());
        let max_size = usize::try_from(broker.config.socket_request_max_bytes).unwrap_or(0);
        let client_host = format!("/{}", peer.ip());
        loop {
            let mut prefix = [0u8; 4];
            let read = tokio::select! {
                r = tokio::time::timeout(IDLE_TIMEOUT, reader.read_exact(&mut prefix)) => r,
                _ = shutdown.changed() => break,
            };
            match read {
                Ok(Ok(_)) => {}
                Ok(Err(_)) => break, // closed by the client
                Err(_) => {
                    debug!("closing idle connection");
                    break;
                }
            }
            let size = match skiff_protocol::check_frame_size(prefix, max_size) {
                Ok(size) => size,
                Err(e) => {
                    warn!(error = %e, "closing connection: bad frame size");
                    break;
                }
            };
            let mut body = vec![0u8; size];
            if reader.read_exact(&mut body).await.is_err() {
                break;
            }
            let outgoing = match skiff_protocol::decode_request(Bytes::from(body)) {
                Ok(request) => {
                    let header = Header {
                        correlation_id: request.header.correlation_id,
                        api_key: request.api_key,
                        version: request.api_version,
                    };
                    match dispatch_on(&broker, request, &client_host, listener).await {
                        Reply::Respond(response) => Outgoing::Now(header, response),
                        Reply::Later(future) => Outgoing::Later(header, future),
                        Reply::NoResponse => continue,
                        Reply::Close(reason) => {
                            warn!(%reason, "closing connection");
                            Outgoing::Close
                        }
                    }
                }
                Err(skiff_protocol::RequestError::ApiVersionsFallback {
                    api_version,
                    correlation_id,
                }) => {
                    debug!(api_version, "ApiVersions version above ours: v0 fallback");
                    Outgoing::Raw(skiff_protocol::api_versions_fallback(correlation_id))
                }
                Err(e) => {
                    warn!(error = %e, "closing connection: malformed or unsupported request");
                    break;
                }
            };
            let close = matches!(outgoing, Outgoing::Close);
            if tx.send(outgoing).await.is_err() || close {
                break;
            }
        }
        drop(tx);
        let _ = writer_task.await;
    }
    .instrument(span)
    .await
}

async fn write_loop(mut writer: OwnedWriteHalf, mut rx: mpsc::Receiver<Outgoing>) {
    while let Some(outgoing) = rx.recv().await {
        let frame = match outgoing {
            Outgoing::Raw(bytes) => Ok(bytes),
            Outgoing::Now(h, response) => encode(&h, &response),
            Outgoing::Later(h, future) => {
                let response = future.await;
                encode(&h, &response)
            }
            Outgoing::Close => break,
        };
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => {
                warn!(error = %e, "cannot encode response; closing connection");
                break;
            }
        };
        if writer.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = writer.shutdown().await;
}

fn encode(h: &Header, response: &ResponseKind) -> Result<Bytes, String> {
    skiff_protocol::encode_response(h.correlation_id, h.api_key, h.version, response)
        .map_err(|e| e.to_string())
}
