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
//!
//! Idle connections (`connections.max.idle.ms`, as Kafka's selector): a connection on which
//! nothing was read or written for that long is closed, whether it is between requests or
//! in the middle of one whose size prefix arrived but whose body did not. A frame's buffer
//! grows with the bytes that actually arrive, so a stalled frame holds little memory
//! whatever size it announced.
//!
//! TLS (SSL listeners): [`run_tls`] first completes the handshake, bounded by
//! `connections.max.idle.ms` as a whole (a client that stalls in the handshake, or sends
//! plaintext to the TLS port, is closed; the latter at once, since rustls rejects the bytes),
//! then serves the decrypted stream like a plaintext one, with the principal of the client
//! certificate (see [`crate::net::tls`]) in every request's context.
//!
//! SASL (SASL_PLAINTEXT and SASL_SSL listeners): every frame first goes through the
//! connection's [`SaslGate`] (see [`crate::net::sasl`]), which answers the SASL exchange
//! itself and lets requests through only once the client is authenticated; the principal is
//! then `User:<name>`. Before authentication frames are bounded by
//! `sasl.server.max.receive.size`, and the whole exchange by `connections.max.idle.ms`
//! counted from its start (not from the last byte), so a client that trickles an exchange
//! is still closed in bounded time, as a stalled TLS handshake is.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ResponseKind;
use skiff_log::FileRange;
use skiff_protocol::{Api, Outside, OwnResponse, Piece};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::{debug, info, warn, Instrument};

use crate::acl_operations::Principal;
use crate::broker::Broker;
use crate::dispatch::{
    dispatch_as, sending_files, FileAnswerFuture, OwnResponseFuture, Reply, ResponseFuture,
};
use crate::metrics::BrokerMetrics;
use crate::net::sasl::{Answering, Gate, SaslGate};
use crate::sasl_setup::SaslListener;

/// Responses queued behind a slow one before the reader stops reading (back-pressure).
const MAX_IN_FLIGHT: usize = 64;
/// Largest read buffer a connection keeps between requests: a full default-size producer
/// batch (librdkafka and the Java client send up to ~1 MiB) plus headroom, so steady produce
/// traffic reuses one allocation while a rare huge request's buffer is released.
const RETAINED_BUFFER_MAX: usize = 2 << 20;
/// Most a frame's buffer grows by before the bytes to fill it have arrived (and the least,
/// unless the frame is smaller): the buffer doubles with the data received, so a client
/// that announces 100 MiB and sends 10 bytes costs 64 KiB, not 100 MiB.
const READ_CHUNK: usize = 64 << 10;

/// When the connection last read or wrote a byte, shared by its reader and writer.
pub(crate) struct Activity {
    start: Instant,
    /// Milliseconds since `start`.
    last_ms: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    pub(crate) fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Runs `work` until it completes, or until `idle` has passed with no activity on the
/// connection (`None`): a response written meanwhile counts as activity and extends the
/// wait, as in Kafka where any socket read or write does. `idle` of `None` never expires.
async fn unless_idle<F: Future>(
    work: F,
    activity: &Activity,
    idle: Option<Duration>,
) -> Option<F::Output> {
    let Some(idle) = idle else {
        return Some(work.await);
    };
    tokio::pin!(work);
    loop {
        let deadline = activity.last() + idle;
        match tokio::time::timeout_at(deadline.into(), &mut work).await {
            Ok(output) => return Some(output),
            Err(_) if activity.last() + idle <= Instant::now() => return None,
            Err(_) => {} // written to meanwhile: wait for the rest of the new deadline
        }
    }
}

/// Why the reader stopped reading frames.
enum FrameEnd {
    /// The client closed or the socket failed.
    Closed,
    /// The size prefix broke `socket.request.max.bytes` or was negative.
    BadSize(skiff_protocol::FrameError),
}

/// What the reader hands the writer, boxed through the channel ([`Queued`]): the channel
/// allocates its slots in blocks of 32 when the connection opens, so every idle connection
/// pays 32 slots of whatever goes through it (9 KiB with an unboxed `ResponseKind`, 1.5 KiB
/// with this enum inline, 256 bytes boxed).
// Always boxed whole ([`Queued`]), so the size of its largest variant costs nothing extra.
#[allow(clippy::large_enum_variant)]
enum Outgoing {
    Now(Header, ResponseKind),
    Later(Header, ResponseFuture),
    LaterInFiles(Header, FileAnswerFuture),
    /// The answer of an API Skiff codes itself.
    Own(Header, OwnResponseFuture),
    Raw(Bytes),
    Close,
}

/// One [`Outgoing`] in the writer's channel.
type Queued = Box<Outgoing>;

struct Header {
    correlation_id: i32,
    api_key: Api,
    version: i16,
    /// When the request's frame was read, for the latency histogram.
    started: Instant,
}

/// `connections.max.idle.ms` as a duration; `None` when negative (no limit, as Kafka).
fn idle_limit(broker: &Broker) -> Option<Duration> {
    u64::try_from(broker.config.connections_max_idle_ms)
        .ok()
        .map(Duration::from_millis)
}

/// `listener` is the name of the `listeners` entry the client connected to; `sasl` is set on
/// a SASL_PLAINTEXT listener.
pub async fn run(
    stream: TcpStream,
    peer: SocketAddr,
    listener: &str,
    sasl: Option<Arc<SaslListener>>,
    broker: Arc<Broker>,
    shutdown: watch::Receiver<bool>,
) {
    let span = tracing::info_span!("connection", %peer, principal = tracing::field::Empty);
    let _ = stream.set_nodelay(true);
    let (reader, writer) = stream.into_split();
    serve(
        reader,
        writer,
        peer,
        listener,
        Principal::ANONYMOUS,
        sasl,
        broker,
        shutdown,
    )
    .instrument(span)
    .await
}

/// [`run`] on an SSL listener: the TLS handshake (bounded by `connections.max.idle.ms`),
/// then the connection with the principal of the client certificate (or, on a SASL_SSL
/// listener, `sasl` set, the SASL exchange and its principal).
pub async fn run_tls(
    stream: TcpStream,
    peer: SocketAddr,
    listener: &str,
    tls: crate::net::tls::ListenerTls,
    sasl: Option<Arc<SaslListener>>,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let span = tracing::info_span!("connection", %peer, principal = tracing::field::Empty);
    async move {
        let _ = stream.set_nodelay(true);
        let handshake = tls.acceptor.accept(stream);
        let activity = Activity::new();
        let done = tokio::select! {
            r = unless_idle(handshake, &activity, idle_limit(&broker)) => r,
            _ = shutdown.changed() => return,
        };
        let stream = match done {
            Some(Ok(stream)) => stream,
            Some(Err(e)) => {
                // A refused client (untrusted or missing certificate, plaintext bytes) is worth
                // an operator's attention, as Kafka's INFO "Failed authentication" line; a bare
                // close before the handshake (port probes, health checks) is not.
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                ) {
                    debug!(error = %e, "TLS handshake not completed: client closed; closing connection");
                } else {
                    tracing::info!(error = %e, "failed authentication: TLS handshake failed; closing connection");
                }
                return;
            }
            None => {
                debug!("closing connection: TLS handshake not done within connections.max.idle.ms");
                return;
            }
        };
        let principal = match crate::net::tls::principal(
            stream.get_ref().1.peer_certificates(),
            &tls.mapper,
        ) {
            Ok(p) => p,
            Err(e) => {
                // Kafka fails the authentication when no mapping rule applies.
                warn!(error = %e, "closing connection: no principal for the client certificate");
                return;
            }
        };
        if sasl.is_none() {
            tracing::Span::current().record("principal", tracing::field::display(&principal));
        }
        debug!(%principal, "TLS handshake done");
        let (reader, writer) = tokio::io::split(stream);
        serve(
            reader, writer, peer, listener, principal, sasl, broker, shutdown,
        )
        .await
    }
    .instrument(span)
    .await
}

/// Serves one connection's requests (already in the connection span). With `sasl`, the
/// client must authenticate first and `principal` is replaced by the authenticated one.
#[allow(clippy::too_many_arguments)]
async fn serve<R, W>(
    mut reader: R,
    writer: W,
    peer: SocketAddr,
    listener: &str,
    mut principal: Principal<'static>,
    sasl: Option<Arc<SaslListener>>,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin,
    W: Sink,
{
    {
        let _open = broker.metrics.connection_opened();
        let sends_files = writer.socket().is_some();
        let (tx, rx) = mpsc::channel::<Queued>(MAX_IN_FLIGHT);
        let metrics = broker.metrics.clone();
        let activity = Arc::new(Activity::new());
        // KIP-219: the writer mutes the connection after a throttled response; the reader
        // waits the mute out before handling the next request.
        let mute = Arc::new(crate::quotas::mute::Mute::default());
        let writer_task = tokio::spawn(
            write_loop(writer, rx, metrics, activity.clone(), mute.clone()).in_current_span(),
        );
        let max_size = usize::try_from(broker.config.socket_request_max_bytes).unwrap_or(0);
        // Negative disables the check, as in Kafka.
        let idle = idle_limit(&broker);
        let client_host = format!("/{}", peer.ip());
        let mut buf = BytesMut::new();
        let mut gate = sasl.map(SaslGate::new);
        // Share sessions remember the connection that opened them (see `share::connection`).
        let connection_id = crate::share::connection::next_id();
        loop {
            let frame_max = gate.as_ref().map_or(max_size, |g| g.max_frame(max_size));
            // An exchange in progress must end within connections.max.idle.ms of its start.
            let exchange_deadline = gate
                .as_ref()
                .and_then(|g| g.exchange_started())
                .zip(idle)
                .map(|(start, idle)| start + idle);
            let frame = read_frame(&mut reader, &mut buf, frame_max, &activity);
            let read = tokio::select! {
                r = unless_idle(frame, &activity, idle) => r,
                // A frame not yet whole at shutdown is dropped; one in hand is answered.
                _ = shutdown.changed() => break,
                _ = sleep_until_or_never(exchange_deadline) => {
                    info!("closing connection: SASL authentication not done within connections.max.idle.ms");
                    break;
                }
            };
            let body = match read {
                Some(Ok(body)) => body,
                Some(Err(FrameEnd::Closed)) => break,
                Some(Err(FrameEnd::BadSize(e))) => {
                    warn!(error = %e, "closing connection: bad frame size");
                    break;
                }
                None => {
                    debug!("closing idle connection (connections.max.idle.ms)");
                    break;
                }
            };
            tokio::select! {
                _ = mute.wait() => {}
                _ = shutdown.changed() => break,
            }
            let started = Instant::now();
            let body = match gate.as_mut() {
                None => body,
                Some(gate) => {
                    let was = gate.principal().cloned();
                    let step = gate.on_frame(body, started, now_ms());
                    if let Some(p) = gate.principal() {
                        if was.as_ref() != Some(p) {
                            tracing::Span::current()
                                .record("principal", tracing::field::display(p));
                            debug!(principal = %p, "SASL authentication done");
                            principal = p.clone();
                        }
                    }
                    match step {
                        Gate::Pass(body) => body,
                        Gate::Respond(to, response) => {
                            if tx
                                .send(Box::new(Outgoing::Now(header(to, started), response)))
                                .await
                                .is_err()
                            {
                                break;
                            }
                            continue;
                        }
                        Gate::RawFrame(frame) => {
                            if tx.send(Box::new(Outgoing::Raw(frame))).await.is_err() {
                                break;
                            }
                            continue;
                        }
                        Gate::RawToken(token) => {
                            if tx
                                .send(Box::new(Outgoing::Raw(size_prefixed(&token))))
                                .await
                                .is_err()
                            {
                                break;
                            }
                            continue;
                        }
                        Gate::Fail(response, reason) => {
                            info!(%reason, "SASL authentication failed; closing connection");
                            tokio::select! {
                                _ = tokio::time::sleep(gate.failed_auth_delay()) => {}
                                _ = shutdown.changed() => break,
                            }
                            if let Some((to, response)) = response {
                                let _ = tx
                                    .send(Box::new(Outgoing::Now(header(to, started), response)))
                                    .await;
                            }
                            break;
                        }
                        Gate::Close(reason) => {
                            info!(%reason, "closing connection");
                            break;
                        }
                    }
                }
            };
            let outgoing = match skiff_protocol::decode_request(body) {
                Ok(request) => {
                    let header = Header {
                        correlation_id: request.header.correlation_id,
                        api_key: request.api_key,
                        version: request.api_version,
                        started,
                    };
                    broker.metrics.request_received(request.api_key.key());
                    let from = principal.clone();
                    // Boxed: inline, the largest handler's future would sit in every
                    // connection's task for its whole life, idle or not.
                    let dispatched =
                        Box::pin(dispatch_as(&broker, request, &client_host, listener, from));
                    let dispatched = crate::share::connection::scope(connection_id, dispatched);
                    let scoped = crate::quotas::mute::CURRENT.scope(mute.clone(), dispatched);
                    let reply = if sends_files {
                        sending_files(scoped).await
                    } else {
                        scoped.await
                    };
                    match reply {
                        Reply::Respond(response) => Outgoing::Now(header, response),
                        Reply::Later(future) => Outgoing::Later(header, future),
                        Reply::LaterInFiles(future) => Outgoing::LaterInFiles(header, future),
                        Reply::Own(future) => Outgoing::Own(header, future),
                        Reply::NoResponse => {
                            let key = header.api_key.key();
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
            if tx.send(Box::new(outgoing)).await.is_err() || close {
                break;
            }
        }
        drop(tx);
        let _ = writer_task.await;
        // Kafka releases the records of the share sessions a connection opened when it ends.
        broker.share.connection_closed(connection_id);
    }
}

fn header(to: Answering, started: Instant) -> Header {
    Header {
        correlation_id: to.correlation_id,
        api_key: to.api_key,
        version: to.version,
        started,
    }
}

/// A raw SASL token as Kafka's v0 path sends it: a 4-byte big-endian size, then the bytes.
fn size_prefixed(token: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(4 + token.len());
    out.put_i32(i32::try_from(token.len()).unwrap_or(i32::MAX));
    out.put_slice(token);
    out.freeze()
}

/// Wall-clock milliseconds since the epoch (token expiry is wall-clock).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until_or_never(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Reads one size-prefixed frame: the prefix, its check against `socket.request.max.bytes`
/// (before anything is allocated for the body), then the body.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut BytesMut,
    max_size: usize,
    activity: &Activity,
) -> Result<Bytes, FrameEnd> {
    let mut prefix = [0u8; 4];
    if reader.read_exact(&mut prefix).await.is_err() {
        return Err(FrameEnd::Closed);
    }
    activity.touch();
    let size = skiff_protocol::check_frame_size(prefix, max_size).map_err(FrameEnd::BadSize)?;
    read_body(reader, buf, size, activity)
        .await
        .ok_or(FrameEnd::Closed)
}

/// Reads one `size`-byte frame body (size already checked against `socket.request.max.bytes`)
/// into the connection's reused buffer and splits it off; `None` when the client closed.
/// Every read that brings bytes touches `activity`.
///
/// The bytes land in spare capacity, so nothing is zero-filled, and once the previous body has
/// been dropped the next frame reuses its allocation. The buffer grows by at most
/// [`READ_CHUNK`] or its current length ahead of the data, so memory follows what arrived,
/// not what the prefix announced. A buffer grown past [`RETAINED_BUFFER_MAX`] is let go after
/// its frame (the body keeps it alive only as long as the request needs it), so one large
/// request does not pin memory for the connection's life.
async fn read_body<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut BytesMut,
    size: usize,
    activity: &Activity,
) -> Option<Bytes> {
    while buf.len() < size {
        let missing = size - buf.len();
        buf.reserve(missing.min(buf.len().max(READ_CHUNK)));
        let mut limited = (&mut *buf).limit(missing);
        match reader.read_buf(&mut limited).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => activity.touch(),
        }
    }
    let allocation = buf.capacity();
    let body = buf.split_to(size).freeze();
    if allocation > RETAINED_BUFFER_MAX {
        *buf = BytesMut::new();
    }
    Some(body)
}

async fn write_loop<W: Sink>(
    mut writer: W,
    mut rx: mpsc::Receiver<Queued>,
    metrics: Arc<BrokerMetrics>,
    activity: Arc<Activity>,
    mute: Arc<crate::quotas::mute::Mute>,
) {
    while let Some(outgoing) = rx.recv().await {
        let throttled = |r: &ResponseKind| crate::quotas::throttle_field::throttle_time_ms(r);
        let (frame, timing, throttle) = match *outgoing {
            Outgoing::Raw(bytes) => (Ok(vec![Piece::Bytes(bytes)]), None, None),
            Outgoing::Now(h, response) => {
                let t = throttled(&response);
                (
                    encode(&h, &response, vec![]),
                    Some((h.api_key, h.started)),
                    t,
                )
            }
            Outgoing::Later(h, future) => {
                let response = future.await;
                let t = throttled(&response);
                (
                    encode(&h, &response, vec![]),
                    Some((h.api_key, h.started)),
                    t,
                )
            }
            Outgoing::LaterInFiles(h, future) => {
                let answer = future.await;
                let t = throttled(&answer.response);
                let frame = encode(&h, &answer.response, answer.outside);
                (frame, Some((h.api_key, h.started)), t)
            }
            Outgoing::Own(h, future) => {
                let response = future.await;
                let t = Some(response.throttle_time_ms());
                (encode_own(&h, &response), Some((h.api_key, h.started)), t)
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
        if write_pieces(&mut writer, &frame).await.is_err() {
            break;
        }
        if let Some(ms) = throttle {
            mute.after_response(ms);
        }
        activity.touch();
        if let Some((api_key, started)) = timing {
            metrics.request_done(api_key.key(), started.elapsed());
        }
    }
    let _ = writer.shutdown().await;
}

/// The response frame as pieces to write in order: a Fetch response's record sets are
/// shared with the log read rather than copied into the frame, or are `outside` it.
fn encode(
    h: &Header,
    response: &ResponseKind,
    outside: Vec<Outside<Files>>,
) -> Result<Frame, String> {
    let Api::Kafka(api_key) = h.api_key else {
        // A handler bug: a kafka-protocol response to a request of an own API.
        return Err(format!(
            "kafka-protocol response to a {} request",
            h.api_key
        ));
    };
    skiff_protocol::encode_response_pieces(h.correlation_id, api_key, h.version, response, outside)
        .map_err(|e| e.to_string())
}

/// The frame of an own-API response (one piece: these responses carry no record sets).
fn encode_own(h: &Header, response: &OwnResponse) -> Result<Frame, String> {
    if Api::Own(response.api()) != h.api_key {
        // A handler bug: the header would name another API than the body.
        return Err(format!(
            "{} response to a {} request",
            Api::Own(response.api()),
            h.api_key
        ));
    }
    skiff_protocol::encode_own_response(h.correlation_id, h.version, response)
        .map(|frame| vec![Piece::Bytes(frame)])
        .map_err(|e| e.to_string())
}

/// Record sets still in segment files.
type Files = Vec<FileRange>;

/// A response frame as pieces.
type Frame = Vec<Piece<Files>>;

/// A connection's writing half, and how it sends record sets that are ranges of files.
pub(crate) trait Sink: AsyncWrite + Unpin + Send + 'static {
    /// The socket to `sendfile` to; `None` where bytes must pass through the writer (TLS
    /// encrypts them), so the connection asks for no file ranges.
    fn socket(&self) -> Option<&TcpStream> {
        None
    }
}

impl Sink for tokio::net::tcp::OwnedWriteHalf {
    fn socket(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

impl<S: AsyncRead + AsyncWrite + Send + 'static> Sink for tokio::io::WriteHalf<S> {}

#[cfg(test)]
impl Sink for tokio::io::DuplexStream {}

/// Writes `pieces` in order: runs of bytes with vectored writes (one syscall for a frame in
/// pieces where the socket takes it all), file ranges with `sendfile`.
async fn write_pieces<W: Sink>(writer: &mut W, pieces: &[Piece<Files>]) -> std::io::Result<()> {
    let mut rest = pieces;
    while !rest.is_empty() {
        let bytes = rest
            .iter()
            .position(|p| matches!(p, Piece::Outside(_)))
            .unwrap_or(rest.len());
        let (run, after) = rest.split_at(bytes);
        write_bytes(writer, run).await?;
        if let Some((Piece::Outside(ranges), after)) = after.split_first() {
            for range in ranges {
                send_range(writer, range).await?;
            }
            rest = after;
        } else {
            rest = after;
        }
    }
    Ok(())
}

async fn write_bytes<W: Sink>(writer: &mut W, pieces: &[Piece<Files>]) -> std::io::Result<()> {
    if let [Piece::Bytes(one)] = pieces {
        return writer.write_all(one).await;
    }
    // An empty slice left alone at the end would make the write return 0.
    let mut slices: Vec<std::io::IoSlice<'_>> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Bytes(b) if !b.is_empty() => Some(std::io::IoSlice::new(b)),
            _ => None,
        })
        .collect();
    let mut rest = slices.as_mut_slice();
    while !rest.is_empty() {
        let n = writer.write_vectored(rest).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        std::io::IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

/// Sends a file range: `sendfile` to the socket (the kernel moves page-cache pages, nothing
/// is copied through the broker), or, on a writer without a socket, read and written.
async fn send_range<W: Sink>(writer: &mut W, range: &FileRange) -> std::io::Result<()> {
    let Some(socket) = writer.socket() else {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; range.len];
        range.file.read_exact_at(&mut buf, range.pos)?;
        return writer.write_all(&buf).await;
    };
    let mut at = range.pos;
    let end = range.pos + range.len as u64;
    while at < end {
        socket.writable().await?;
        let want = usize::try_from(end - at).unwrap_or(usize::MAX);
        let sent = socket.try_io(tokio::io::Interest::WRITABLE, || {
            rustix::fs::sendfile(socket, &*range.file, Some(&mut at), want).map_err(Into::into)
        });
        match sent {
            // The file ends before the range: bytes of the frame would be missing.
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn own_api_answers_are_framed_with_their_own_header_and_never_mixed_up() {
        use skiff_protocol::streams::{
            StreamsGroupDescribeResponse, StreamsGroupHeartbeatResponse,
        };
        use skiff_protocol::OwnApi;
        let header = |api: Api| Header {
            correlation_id: 5,
            api_key: api,
            version: 1,
            started: Instant::now(),
        };
        let describe = OwnResponse::StreamsGroupDescribe(StreamsGroupDescribeResponse {
            throttle_time_ms: 12,
            ..Default::default()
        });
        let frame = encode_own(&header(OwnApi::StreamsGroupDescribe.into()), &describe).unwrap();
        let [Piece::Bytes(bytes)] = &frame[..] else {
            panic!("one piece expected")
        };
        assert_eq!(
            *bytes,
            skiff_protocol::encode_own_response(5, 1, &describe).unwrap()
        );
        // A response of another API than the request's is refused, not sent.
        let heartbeat =
            OwnResponse::StreamsGroupHeartbeat(StreamsGroupHeartbeatResponse::default());
        assert!(encode_own(&header(OwnApi::StreamsGroupDescribe.into()), &heartbeat).is_err());
        assert!(encode_own(
            &header(kafka_protocol::messages::ApiKey::Metadata.into()),
            &heartbeat
        )
        .is_err());
        let metadata = ResponseKind::Metadata(Default::default());
        assert!(encode(
            &header(OwnApi::StreamsGroupDescribe.into()),
            &metadata,
            vec![]
        )
        .is_err());
    }

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
            let body = read_body(&mut server, &mut buf, size, &Activity::new())
                .await
                .unwrap();
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
    async fn pieces_are_written_whole_and_in_order_through_a_small_pipe() {
        let (mut client, mut server) = tokio::io::duplex(7);
        let (file, ranges) = file_ranges(&[(3, 900), (2000, 7000)]);
        let pieces = vec![
            Piece::Bytes(Bytes::from(pattern(100, 1))),
            Piece::Bytes(Bytes::new()),
            Piece::Outside(ranges.clone()),
            Piece::Bytes(Bytes::from(pattern(5000, 2))),
            Piece::Bytes(Bytes::new()),
        ];
        let mut expected = pattern(100, 1);
        expected.extend_from_slice(&file[3..903]);
        expected.extend_from_slice(&file[2000..9000]);
        expected.extend_from_slice(&pattern(5000, 2));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut client, &mut got)
                .await
                .unwrap();
            got
        });
        write_pieces(&mut server, &pieces).await.unwrap();
        write_pieces(&mut server, &[Piece::Bytes(Bytes::new())])
            .await
            .unwrap();
        drop(server);
        assert_eq!(reader.await.unwrap(), expected);
    }

    /// A file of 64 KiB of pattern bytes and ranges (position, length) of it.
    fn file_ranges(at: &[(u64, usize)]) -> (Vec<u8>, Vec<FileRange>) {
        let bytes = pattern(1 << 16, 9);
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        let file = Arc::new(f);
        let ranges = at
            .iter()
            .map(|&(pos, len)| FileRange {
                file: file.clone(),
                pos,
                len,
            })
            .collect();
        (bytes, ranges)
    }

    #[tokio::test]
    async fn file_ranges_are_sent_with_sendfile_between_bytes_on_a_socket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (_read, mut writer) = server.into_split();
        assert!(writer.socket().is_some());
        // More than a socket buffer, so sendfile must wait for the reader part way.
        let (file, ranges) = file_ranges(&[(0, 1 << 16), (10, 50_000), (65_000, 536)]);
        let mut expected = b"head".to_vec();
        expected.extend_from_slice(&file);
        expected.extend_from_slice(&file[10..50_010]);
        expected.extend_from_slice(&file[65_000..]);
        expected.extend_from_slice(b"tail");
        let pieces: Vec<Piece<Files>> = vec![
            Piece::Bytes(Bytes::from_static(b"head")),
            Piece::Outside(ranges),
            Piece::Bytes(Bytes::from_static(b"tail")),
        ];
        let want = expected.len() * 20;
        let reader = tokio::spawn(async move {
            let mut got = vec![0u8; want];
            tokio::time::sleep(Duration::from_millis(50)).await;
            client.read_exact(&mut got).await.unwrap();
            got
        });
        for _ in 0..20 {
            write_pieces(&mut writer, &pieces).await.unwrap();
        }
        let got = reader.await.unwrap();
        for chunk in got.chunks(expected.len()) {
            assert!(chunk == expected.as_slice());
        }
    }

    #[tokio::test]
    async fn a_range_past_the_end_of_its_file_fails_the_write() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (_read, mut writer) = server.into_split();
        let (_, ranges) = file_ranges(&[(60_000, 10_000)]);
        let err = write_pieces(&mut writer, &[Piece::Outside(ranges)])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test]
    async fn a_frame_cut_short_by_the_client_is_none() {
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&[1, 2, 3]).await.unwrap();
        drop(client);
        let mut buf = BytesMut::new();
        assert!(read_body(&mut server, &mut buf, 10, &Activity::new())
            .await
            .is_none());
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
        let first = read_body(&mut server, &mut buf, 1000, &Activity::new())
            .await
            .unwrap();
        let base = first.as_ptr();
        drop(first);
        for i in 1..50u8 {
            let body = read_body(&mut server, &mut buf, 1000, &Activity::new())
                .await
                .unwrap();
            assert_eq!(&body[..], &pattern(1000, i)[..]);
            assert_eq!(body.as_ptr(), base, "frame {i} reuses the allocation");
        }
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn a_stalled_frame_holds_memory_for_what_arrived_not_what_it_announced() {
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&[7u8; 10]).await.unwrap();
        let mut buf = BytesMut::new();
        let activity = Activity::new();
        let pending = tokio::time::timeout(
            Duration::from_millis(50),
            read_body(&mut server, &mut buf, 50 << 20, &activity),
        )
        .await;
        assert!(pending.is_err(), "the frame is not complete");
        assert_eq!(buf.len(), 10);
        assert!(
            buf.capacity() <= 2 * READ_CHUNK,
            "a 50 MiB frame with 10 bytes received holds {} bytes",
            buf.capacity()
        );
        drop(client);
    }

    #[tokio::test]
    async fn idle_deadline_counts_from_the_last_activity() {
        let activity = Arc::new(Activity::new());
        let idle = Some(Duration::from_millis(200));
        // Nothing happens: expires.
        let never = std::future::pending::<()>();
        assert!(unless_idle(never, &activity, idle).await.is_none());
        // Activity keeps pushing the deadline; the work finishes after 500 ms in all.
        activity.touch();
        let toucher = activity.clone();
        let work = async move {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                toucher.touch();
            }
        };
        assert!(unless_idle(work, &activity, idle).await.is_some());
        // Disabled (negative connections.max.idle.ms): never expires.
        let slow = tokio::time::sleep(Duration::from_millis(300));
        assert!(unless_idle(slow, &activity, None).await.is_some());
    }
}
