//! One client connection: read size-prefixed frames, dispatch them one at a time in arrival
//! order, and write the responses in that same order.
//!
//! The reader processes requests sequentially (so pipelined produces to one partition are
//! appended in order, as Kafka does), but a request that waits — acks=all durability, a
//! fetch long poll — hands its wait to the writer as a future, so the next request is
//! read meanwhile. The writer awaits those futures in request order.
//!
//! Metrics: the connection counts itself open while it runs; each request is counted on
//! arrival and its latency (arrival to response written) recorded by the writer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ResponseKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn, Instrument};

use crate::broker::Broker;
use crate::dispatch::{dispatch_on, Reply, ResponseFuture};
use crate::metrics::BrokerMetrics;

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
    /// When the request's frame was read, for the latency histogram.
    started: Instant,
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
        let _open = broker.metrics.connection_opened();
        let _ = stream.set_nodelay(true);
        let (mut reader, writer) = stream.into_split();
        let (tx, rx) = mpsc::channel::<Outgoing>(MAX_IN_FLIGHT);
        let metrics = broker.metrics.clone();
        let writer_task = tokio::spawn(write_loop(writer, rx, metrics).in_current_span());
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
            let started = Instant::now();
            let outgoing = match skiff_protocol::decode_request(Bytes::from(body)) {
                Ok(request) => {
                    let header = Header {
                        correlation_id: request.header.correlation_id,
                        api_key: request.api_key,
                        version: request.api_version,
                        started,
                    };
                    broker.metrics.request_received(request.api_key as i16);
                    match dispatch_on(&broker, request, &client_host, listener).await {
                        Reply::Respond(response) => Outgoing::Now(header, response),
                        Reply::Later(future) => Outgoing::Later(header, future),
                        Reply::NoResponse => {
                            let key = header.api_key as i16;
                            broker.metrics.request_done(key, started.elapsed());
                            continue;
                        }
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

async fn write_loop(
    mut writer: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Outgoing>,
    metrics: Arc<BrokerMetrics>,
) {
    while let Some(outgoing) = rx.recv().await {
        let (frame, timing) = match outgoing {
            Outgoing::Raw(bytes) => (Ok(bytes), None),
            Outgoing::Now(h, response) => (encode(&h, &response), Some((h.api_key, h.started))),
            Outgoing::Later(h, future) => {
                let response = future.await;
                (encode(&h, &response), Some((h.api_key, h.started)))
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
        if let Some((api_key, started)) = timing {
            metrics.request_done(api_key as i16, started.elapsed());
        }
    }
    let _ = writer.shutdown().await;
}

fn encode(h: &Header, response: &ResponseKind) -> Result<Bytes, String> {
    skiff_protocol::encode_response(h.correlation_id, h.api_key, h.version, response)
        .map_err(|e| e.to_string())
}
