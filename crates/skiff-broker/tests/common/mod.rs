//! The one way the broker's integration tests start a broker, and send it requests.
//!
//! [`TestBroker`] is a builder: a data dir, `--set`-style settings, optionally a manual clock
//! (so time-based logic is driven by moving the clock instead of sleeping), optionally waiting
//! for the coordinators to load; then [`TestBroker::start`] for a broker driven through
//! `dispatch`, or [`TestBroker::serve`] for a real listener on port 0. Every wait here is
//! bounded so that a regression fails instead of hanging.
#![allow(clippy::unwrap_used, dead_code)]

pub mod http;
pub mod tables;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use kafka_protocol::protocol::{Encodable, StrBytes};
use skiff_broker::dispatch::{dispatch, Reply};
use skiff_broker::Broker;
use skiff_log::{Clock, ManualClock, SystemClock};
use skiff_protocol::DecodedRequest;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long a background thread may take to do what a test waits for before the test calls
/// it a hang.
pub const BOUND: Duration = Duration::from_secs(20);

/// A broker to start; see the module docs.
pub struct TestBroker {
    dir: PathBuf,
    sets: Vec<String>,
    clock: Option<Arc<dyn Clock>>,
    wait_groups: bool,
    wait_txns: bool,
}

/// A broker on `dir` (which the caller keeps, so a test can restart on it).
pub fn broker(dir: &Path) -> TestBroker {
    TestBroker {
        dir: dir.to_path_buf(),
        sets: Vec::new(),
        clock: None,
        wait_groups: false,
        wait_txns: false,
    }
}

/// A manual clock set to the wall clock's now, so record timestamps look ordinary.
pub fn manual_clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(SystemClock.now_ms()))
}

impl TestBroker {
    /// `key=value` settings, applied after `log.dirs` in order.
    pub fn sets(mut self, sets: &[&str]) -> TestBroker {
        self.sets.extend(sets.iter().map(|s| s.to_string()));
        self
    }

    /// The broker's clock (the wall clock when not given).
    pub fn clock(mut self, clock: Arc<ManualClock>) -> TestBroker {
        self.clock = Some(clock);
        self
    }

    /// Wait until the group coordinator has loaded `__consumer_offsets`.
    pub fn wait_groups(mut self) -> TestBroker {
        self.wait_groups = true;
        self
    }

    /// Wait until both coordinators have loaded.
    pub fn wait_coordinators(mut self) -> TestBroker {
        self.wait_groups = true;
        self.wait_txns = true;
        self
    }

    /// Starts the broker (on a blocking thread), then waits for what was asked.
    pub async fn start(self) -> Arc<Broker> {
        let mut all = vec![format!("log.dirs={}", self.dir.display())];
        all.extend(self.sets);
        let (config, _) = skiff_config::load(None, &all, Vec::<(String, String)>::new()).unwrap();
        let clock = self.clock;
        let broker = tokio::task::spawn_blocking(move || {
            let builder = Broker::builder(config);
            match clock {
                Some(clock) => builder.clock(clock).start(),
                None => builder.start(),
            }
        })
        .await
        .unwrap()
        .unwrap();
        let (groups, txns) = (self.wait_groups, self.wait_txns);
        wait_until("the coordinators to load", || {
            (!groups || broker.coordinator.is_loaded()) && (!txns || broker.txn.is_loaded())
        })
        .await;
        broker
    }

    /// Starts the broker and serves it on a listener on 127.0.0.1, port 0.
    pub async fn serve(self) -> Served {
        let broker = self.start().await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, rx) = watch::channel(false);
        let server = tokio::spawn(skiff_broker::serve(listener, broker.clone(), rx));
        Served {
            addr,
            broker,
            stop,
            server,
        }
    }
}

/// A broker behind a listener. Dropping it stops the listener (the watch sender goes away).
pub struct Served {
    pub addr: SocketAddr,
    pub broker: Arc<Broker>,
    /// Send `true` to stop accepting and end the connections.
    pub stop: watch::Sender<bool>,
    /// The `serve` task; it returns once its connections have ended.
    pub server: tokio::task::JoinHandle<()>,
}

/// Polls `done` every 5 ms until it holds; panics after [`BOUND`]. For waiting on background
/// threads (coordinator loads, a tick after the clock moved), never for time itself.
pub async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "waited {BOUND:?} for {what}: a hang"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `Broker::shutdown` on a blocking thread.
pub async fn stop(broker: Arc<Broker>) {
    tokio::task::spawn_blocking(move || broker.shutdown())
        .await
        .unwrap()
        .unwrap();
}

/// Creates `name` with `partitions` partitions and default configs, on a blocking thread.
pub async fn create_topic(broker: &Arc<Broker>, name: &str, partitions: i32) {
    let (b, name) = (broker.clone(), name.to_string());
    tokio::task::spawn_blocking(move || {
        b.topics
            .create(&name, partitions, Default::default(), false)
    })
    .await
    .unwrap()
    .unwrap();
}

/// One request through `dispatch`, waiting for a deferred answer; panics if there is none.
pub async fn call(
    broker: &Arc<Broker>,
    key: ApiKey,
    version: i16,
    body: RequestKind,
) -> ResponseKind {
    let request = DecodedRequest {
        api_key: key.into(),
        api_version: version,
        header: RequestHeader::default(),
        body: body.into(),
    };
    match dispatch(broker, request, "/127.0.0.1").await {
        Reply::Respond(r) => r,
        Reply::Later(f) => f.await,
        Reply::LaterInFiles(f) => f.await.into_response().unwrap(),
        Reply::NoResponse => panic!("{key:?} v{version}: no response"),
        Reply::Close(why) => panic!("{key:?} v{version}: closed: {why}"),
        Reply::Own(_) => panic!("{key:?} v{version}: an own-API answer"),
    }
}

/// One request as it goes on the wire (size prefix, header, body), for tests that talk to a
/// listener.
pub fn request_frame<R: Encodable>(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &R,
) -> Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    header
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let size = i32::try_from(buf.len() - 4).unwrap();
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.freeze()
}

/// True when the peer closed `s` (EOF or an error) within a few seconds without sending a
/// byte first.
pub async fn closed<S: tokio::io::AsyncRead + Unpin>(s: &mut S) -> bool {
    use tokio::io::AsyncReadExt;
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), s.read(&mut byte)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

/// Whether the peer closed `s` within `bound`; bytes sent before the close (a TLS alert, a
/// last answer) are skipped.
pub async fn closed_within<S: tokio::io::AsyncRead + Unpin>(s: &mut S, bound: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let deadline = Instant::now() + bound;
    let mut buf = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// The body of the next size-prefixed frame from `s`; `None` when the peer closed the
/// connection or the frame did not come whole within `bound`.
pub async fn read_frame<S: tokio::io::AsyncRead + Unpin>(
    s: &mut S,
    bound: Duration,
) -> Option<Bytes> {
    use tokio::io::AsyncReadExt;
    // The whole frame within `bound`: a frame shorter than its size prefix fails, not hangs.
    let read = async {
        let mut size = [0u8; 4];
        s.read_exact(&mut size).await.ok()?;
        let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).ok()?];
        s.read_exact(&mut body).await.ok()?;
        Some(Bytes::from(body))
    };
    tokio::time::timeout(bound, read).await.ok()?
}

/// A small deterministic generator (xorshift64*) for hostile-input tests, so a failing case
/// can be replayed from its seed.
pub struct Noise(pub u64);

impl Noise {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// `good` with one byte changed, cut short, or with random bytes appended.
    pub fn mutate(&mut self, good: &[u8]) -> Vec<u8> {
        let mut t = good.to_vec();
        let at = (self.next() as usize) % t.len().max(1);
        match self.next() % 3 {
            0 if !t.is_empty() => t[at] ^= 1 + (self.next() % 255) as u8,
            1 => t.truncate(at),
            _ => {
                let n = (self.next() % 64) as usize;
                t.extend(self.bytes(n));
            }
        }
        t
    }
}

/// One uncompressed batch holding a single record (key `k`) with a `value_len`-byte value.
pub fn one_record_batch(value_len: usize) -> Bytes {
    let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
    b.push(
        1_700_000_000_000,
        Some(b"k"),
        Some(&vec![b'v'; value_len]),
        &[],
    );
    Bytes::from(b.build().unwrap())
}
