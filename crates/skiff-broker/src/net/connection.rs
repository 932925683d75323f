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

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseKind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn, Instrument};

use crate::broker::Broker;
use crate::dispatch::{dispatch_on, Reply, ResponseFuture};
use crate::metrics::BrokerMetrics;

/// Responses queued behind a slow one before the reader stops reading (back-pressure).
const MAX_IN_FLIGHT: usize = 64;
/// Largest read buffer a connection keeps between requests: a full default-size producer
/// batch (librdkafka and the Java client send up to ~1 MiB) plus headroom, so steady produce
/// traffic reuses one allocation while a rare huge request's buffer is released.
const RETAINED_BUFFER_MAX: usize = 2 << 20;
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
        let mut buf = BytesMut::new();
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
            let Some(body) = read_body(&mut reader, &mut buf, size).await else {
                break;
            };
            let started = Instant::now();
            let outgoing = match skiff_protocol::decode_request(body) {
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

/// Reads one `size`-byte frame body (size already checked against `socket.request.max.bytes`)
/// into the connection's reused buffer and splits it off; `None` when the client closed.
///
/// The bytes land in spare capacity, so nothing is zero-filled, and once the previous body has
/// been dropped the next frame reuses its allocation. A buffer grown past
/// [`RETAINED_BUFFER_MAX`] is let go after its frame (the body keeps it alive only as long as
/// the request needs it), so one large request does not pin memory for the connection's life.
async fn read_body<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut BytesMut,
    size: usize,
) -> Option<Bytes> {
    buf.reserve(size);
    let allocation = buf.capacity();
    while buf.len() < size {
        let missing = size - buf.len();
        let mut limited = (&mut *buf).limit(missing);
        match reader.read_buf(&mut limited).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
    let body = buf.split_to(size).freeze();
    if allocation > RETAINED_BUFFER_MAX {
        *buf = BytesMut::new();
    }
    Some(body)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    #[tokio::test]
    async fn frames_are_read_whole_into_a_reused_bounded_buffer() {
        let sizes = [0usize, 1, 100, 70_000, 2 * RETAINED_BUFFER_MAX, 10, 1024];
        let mut wire = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            wire.extend(pattern(size, i as u8));
        }
        // A reader that hands out at most 7 bytes at a time exercises partial reads.
        let (mut client, mut server) = tokio::io::duplex(7);
        let writer = tokio::spawn(async move {
            client.write_all(&wire).await.unwrap();
        });
        let mut buf = BytesMut::new();
        for (i, &size) in sizes.iter().enumerate() {
            let body = read_body(&mut server, &mut buf, size).await.unwrap();
            assert_eq!(&body[..], &pattern(size, i as u8)[..], "frame {i}");
            assert!(buf.is_empty(), "no bytes of the next frame are consumed");
            // After a frame past the cap, the next frame must not reclaim the big allocation.
            assert!(
                buf.capacity() <= RETAINED_BUFFER_MAX,
                "frame {i}: {} bytes retained",
                buf.capacity()
            );
        }
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn a_frame_cut_short_by_the_client_is_none() {
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&[1, 2, 3]).await.unwrap();
        drop(client);
        let mut buf = BytesMut::new();
        assert!(read_body(&mut server, &mut buf, 10).await.is_none());
    }

    #[tokio::test]
    async fn steady_small_frames_reuse_one_allocation() {
        let (mut client, mut server) = tokio::io::duplex(1 << 16);
        let writer = tokio::spawn(async move {
            for i in 0..50u8 {
                client.write_all(&pattern(1000, i)).await.unwrap();
            }
        });
        let mut buf = BytesMut::new();
        let first = read_body(&mut server, &mut buf, 1000).await.unwrap();
        let base = first.as_ptr();
        drop(first);
        for i in 1..50u8 {
            let body = read_body(&mut server, &mut buf, 1000).await.unwrap();
            assert_eq!(&body[..], &pattern(1000, i)[..]);
            assert_eq!(body.as_ptr(), base, "frame {i} reuses the allocation");
        }
        writer.await.unwrap();
    }
}
