//! Network tests: raw bytes over TCP to a real in-process server on port 0.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use skiff_broker::Broker;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

struct Server {
    addr: std::net::SocketAddr,
    _stop: watch::Sender<bool>,
    _dir: tempfile::TempDir,
    _broker: Arc<Broker>,
}

async fn start() -> Server {
    start_with(&[]).await
}

/// A server with `sets` (`key=value`) applied after `log.dirs`.
async fn start_with(extra: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let served = common::broker(dir.path()).sets(extra).serve().await;
    Server {
        addr: served.addr,
        _stop: served.stop,
        _dir: dir,
        _broker: served.broker,
    }
}

fn frame<R: Encodable>(key: ApiKey, version: i16, correlation_id: i32, body: &R) -> Bytes {
    common::request_frame(key, version, correlation_id, "net-test", body)
}

async fn read_response(stream: &mut TcpStream) -> Option<Bytes> {
    common::read_frame(stream, Duration::from_secs(5)).await
}

#[tokio::test]
async fn api_versions_v3_has_no_trailing_tagged_fields_and_v0_works() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    for version in [0i16, 3] {
        s.write_all(&frame(
            ApiKey::ApiVersions,
            version,
            7,
            &ApiVersionsRequest::default(),
        ))
        .await
        .unwrap();
        let mut body = read_response(&mut s).await.unwrap();
        let header = ResponseHeader::decode(&mut body, 0).unwrap();
        assert_eq!(header.correlation_id, 7);
        let response = ApiVersionsResponse::decode(&mut body, version).unwrap();
        assert_eq!(response.error_code, 0);
        assert!(
            body.is_empty(),
            "v{version}: {} bytes left over",
            body.len()
        );
        let keys: Vec<i16> = response.api_keys.iter().map(|k| k.api_key).collect();
        for (key, _, _) in skiff_protocol::SUPPORTED {
            assert!(keys.contains(&(*key as i16)), "{key:?} not advertised");
        }
    }
}

#[tokio::test]
async fn api_versions_above_max_gets_v0_fallback() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    // v4 body layout is the newest the crate knows; announce v9.
    let mut f =
        BytesMut::from(&frame(ApiKey::ApiVersions, 3, 9, &ApiVersionsRequest::default())[..]);
    f[6..8].copy_from_slice(&9i16.to_be_bytes());
    s.write_all(&f).await.unwrap();
    let mut body = read_response(&mut s).await.unwrap();
    let header = ResponseHeader::decode(&mut body, 0).unwrap();
    assert_eq!(header.correlation_id, 9);
    let response = ApiVersionsResponse::decode(&mut body, 0).unwrap();
    assert_eq!(response.error_code, 35);
    assert!(!response.api_keys.is_empty());
}

#[tokio::test]
async fn oversized_and_negative_frames_close_the_connection() {
    let server = start().await;
    for size in [i32::MAX, -1, 104_857_601] {
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        s.write_all(&size.to_be_bytes()).await.unwrap();
        assert!(common::closed(&mut s).await, "size {size} did not close");
    }
}

#[tokio::test]
async fn hostile_array_count_closes_connection_and_broker_survives() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    // Metadata v1: header then a topics array claiming i32::MAX entries.
    let mut f = BytesMut::new();
    f.put_i32(0);
    f.put_i16(ApiKey::Metadata as i16);
    f.put_i16(1);
    f.put_i32(1);
    f.put_i16(-1);
    f.put_i32(i32::MAX);
    let size = i32::try_from(f.len() - 4).unwrap();
    f[..4].copy_from_slice(&size.to_be_bytes());
    s.write_all(&f).await.unwrap();
    assert!(common::closed(&mut s).await);
    // Short header: 2 bytes.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&[0, 0, 0, 2, 0, 3]).await.unwrap();
    assert!(common::closed(&mut s).await);
    // Still serving.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(&frame(
        ApiKey::ApiVersions,
        0,
        1,
        &ApiVersionsRequest::default(),
    ))
    .await
    .unwrap();
    assert!(read_response(&mut s).await.is_some());
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let server = start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    let mut all = BytesMut::new();
    for cid in 0..20 {
        if cid % 2 == 0 {
            all.extend_from_slice(&frame(
                ApiKey::ApiVersions,
                3,
                cid,
                &ApiVersionsRequest::default(),
            ));
        } else {
            all.extend_from_slice(&frame(
                ApiKey::Metadata,
                12,
                cid,
                &MetadataRequest::default(),
            ));
        }
    }
    s.write_all(&all).await.unwrap();
    for cid in 0..20 {
        let mut body = read_response(&mut s).await.unwrap();
        let header_version = if cid % 2 == 0 { 0 } else { 1 };
        let header = ResponseHeader::decode(&mut body, header_version).unwrap();
        assert_eq!(header.correlation_id, cid);
        if cid % 2 == 1 {
            MetadataResponse::decode(&mut body, 12).unwrap();
        }
    }
}

// ---- connection limits, idle expiry, fetch.max.bytes -----------------------------------------

/// The soft `RLIMIT_NOFILE` of this process (from /proc; 1024 if it cannot be read).
fn fd_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|soft| soft.parse().ok())
        })
        .unwrap_or(1024)
}

/// ApiVersions then Metadata on a fresh connection; the time until both are answered.
async fn well_behaved_client(addr: std::net::SocketAddr) -> Duration {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&frame(
        ApiKey::ApiVersions,
        3,
        1,
        &ApiVersionsRequest::default(),
    ))
    .await
    .unwrap();
    let mut body = read_response(&mut s).await.expect("ApiVersions answered");
    assert_eq!(
        ResponseHeader::decode(&mut body, 0).unwrap().correlation_id,
        1
    );
    s.write_all(&frame(ApiKey::Metadata, 12, 2, &MetadataRequest::default()))
        .await
        .unwrap();
    let mut body = read_response(&mut s).await.expect("Metadata answered");
    assert_eq!(
        ResponseHeader::decode(&mut body, 1).unwrap().correlation_id,
        2
    );
    started.elapsed()
}

/// A client that sends a size prefix announcing 1,000 bytes and then only 500 of them.
async fn stalled_client(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut half = 1000i32.to_be_bytes().to_vec();
    half.extend([0u8; 500]);
    s.write_all(&half).await.unwrap();
    s
}

/// True when nothing (no byte, no EOF) arrives within `wait`: the server keeps it open.
async fn still_open(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut byte = [0u8; 1];
    tokio::time::timeout(wait, stream.read(&mut byte))
        .await
        .is_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_half_sent_requests_do_not_starve_a_client_and_expire_when_idle() {
    // Each stalled client costs two descriptors here (client and server ends).
    let stalled_count = 3000.min(fd_limit().saturating_sub(256) / 2);
    assert!(stalled_count >= 100, "fd limit {} too low", fd_limit());
    let idle = Duration::from_millis(4000);
    let server = start_with(&["connections.max.idle.ms=4000"]).await;
    let opened = Instant::now();
    let mut stalled = Vec::with_capacity(stalled_count);
    for _ in 0..stalled_count {
        stalled.push(stalled_client(server.addr).await);
    }
    let setup = opened.elapsed();
    let latency = well_behaved_client(server.addr).await;
    eprintln!(
        "{stalled_count} stalled connections opened in {setup:?}; \
         ApiVersions + Metadata answered in {latency:?}"
    );
    assert!(
        latency < Duration::from_secs(2),
        "served after {latency:?} with {stalled_count} stalled connections"
    );
    // Before the idle time has passed they are still open (the expiry below is the idle
    // timeout, not some other limit)...
    if opened.elapsed() + Duration::from_millis(500) < idle {
        for s in stalled.iter_mut().rev().take(20) {
            assert!(still_open(s, Duration::from_millis(10)).await);
        }
    }
    // ...and each is closed once it has been idle for connections.max.idle.ms.
    let deadline = tokio::time::Instant::now() + idle + Duration::from_secs(10);
    for (i, s) in stalled.iter_mut().enumerate() {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout_at(deadline, s.read(&mut byte)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "stalled connection {i} still open {:?} after it was opened",
            opened.elapsed()
        );
    }
    let closed_after = opened.elapsed();
    assert!(closed_after >= idle, "closed after {closed_after:?}");
    eprintln!("all stalled connections closed {closed_after:?} after the first was opened");
    // The broker still serves.
    well_behaved_client(server.addr).await;
}

#[tokio::test]
async fn at_max_connections_the_next_client_waits_until_one_closes() {
    let server = start_with(&["max.connections=5"]).await;
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        // A round trip proves the broker accepted this one.
        s.write_all(&frame(
            ApiKey::ApiVersions,
            0,
            1,
            &ApiVersionsRequest::default(),
        ))
        .await
        .unwrap();
        assert!(read_response(&mut s).await.is_some());
        held.push(s);
    }
    // The sixth connects (the kernel's backlog completes the handshake) but is not served.
    let mut sixth = TcpStream::connect(server.addr).await.unwrap();
    sixth
        .write_all(&frame(
            ApiKey::ApiVersions,
            0,
            6,
            &ApiVersionsRequest::default(),
        ))
        .await
        .unwrap();
    assert!(
        still_open(&mut sixth, Duration::from_millis(500)).await,
        "a sixth connection was served with max.connections=5"
    );
    // One closes: the sixth is accepted and its waiting request answered.
    held.pop();
    let mut body = read_response(&mut sixth)
        .await
        .expect("served once a slot freed");
    assert_eq!(
        ResponseHeader::decode(&mut body, 0).unwrap().correlation_id,
        6
    );
}

#[tokio::test]
async fn a_connection_over_the_per_ip_limit_is_accepted_and_closed() {
    for sets in [
        vec!["max.connections.per.ip=2"],
        // The override for this address wins over the default.
        vec![
            "max.connections.per.ip=100",
            "max.connections.per.ip.overrides=127.0.0.1:2",
        ],
    ] {
        let server = start_with(&sets).await;
        let mut first = TcpStream::connect(server.addr).await.unwrap();
        let mut second = TcpStream::connect(server.addr).await.unwrap();
        for s in [&mut first, &mut second] {
            s.write_all(&frame(
                ApiKey::ApiVersions,
                0,
                1,
                &ApiVersionsRequest::default(),
            ))
            .await
            .unwrap();
            assert!(read_response(s).await.is_some(), "{sets:?}");
        }
        let mut third = TcpStream::connect(server.addr).await.unwrap();
        assert!(
            common::closed(&mut third).await,
            "{sets:?}: third connection kept"
        );
        // Closing one makes room for another.
        drop(first);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let elapsed = well_behaved_client(server.addr).await;
        assert!(elapsed < Duration::from_secs(2), "{sets:?}");
    }
}

/// Produces three 10 kB batches to each of the 3 partitions of a new topic `t`.
async fn three_batches_per_partition(server: &Server, s: &mut TcpStream) {
    use kafka_protocol::messages::{produce_request, ProduceRequest, TopicName};
    let b = server._broker.clone();
    tokio::task::spawn_blocking(move || b.topics.create("t", 3, Default::default(), false))
        .await
        .unwrap()
        .unwrap();
    for round in 0..3 {
        let parts = (0..3)
            .map(|p| {
                produce_request::PartitionProduceData::default()
                    .with_index(p)
                    .with_records(Some(common::one_record_batch(10_000)))
            })
            .collect();
        let produce = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partition_data(parts)]);
        s.write_all(&frame(ApiKey::Produce, 9, round, &produce))
            .await
            .unwrap();
        assert!(read_response(s).await.is_some());
    }
}

/// Fetch v12 of `t` partitions 0-2 from offset 0 with `max_bytes` in all and 1 MiB per
/// partition; the bytes of records returned per partition.
async fn fetch_sizes(s: &mut TcpStream, max_bytes: i32) -> Vec<usize> {
    fetch_records(s, 12, max_bytes)
        .await
        .iter()
        .map(|r| r.len())
        .collect()
}

/// Fetch at `version` of `t` partitions 0-2 from offset 0 with `max_bytes` in all and 1 MiB
/// per partition; the records returned per partition.
async fn fetch_records(s: &mut TcpStream, version: i16, max_bytes: i32) -> Vec<Bytes> {
    use kafka_protocol::messages::{fetch_request, FetchRequest, FetchResponse, TopicName};
    let partitions = (0..3)
        .map(|p| {
            fetch_request::FetchPartition::default()
                .with_partition(p)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)
        })
        .collect();
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_topics(vec![fetch_request::FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(partitions)]);
    s.write_all(&frame(ApiKey::Fetch, version, 100, &request))
        .await
        .unwrap();
    let mut body = read_response(s).await.unwrap();
    ResponseHeader::decode(&mut body, ApiKey::Fetch.response_header_version(version)).unwrap();
    let response = FetchResponse::decode(&mut body, version).unwrap();
    assert!(body.is_empty(), "v{version}: bytes after the response");
    let mut records = vec![Bytes::new(); 3];
    for p in &response.responses[0].partitions {
        assert_eq!(p.error_code, 0);
        records[usize::try_from(p.partition_index).unwrap()] =
            p.records.clone().unwrap_or_default();
    }
    records
}

/// On a plaintext connection large record sets are sent from their files (sendfile): the
/// frames still decode at every version, and hold exactly the log's batches.
#[tokio::test]
async fn record_sets_sent_from_their_files_are_the_logs_batches_at_every_version() {
    let server = start_with(&[]).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    three_batches_per_partition(&server, &mut s).await;
    let topic = server._broker.topics.get("t").unwrap();
    let logs: Vec<Bytes> = (0..3)
        .map(|p| {
            topic
                .partition(p)
                .unwrap()
                .log
                .read(0, usize::MAX, true)
                .unwrap()
                .records
        })
        .collect();
    assert!(logs.iter().all(|l| l.len() > 30_000));
    for version in 4..=12 {
        assert_eq!(
            fetch_records(&mut s, version, 10_000_000).await,
            logs,
            "v{version}"
        );
    }
}

#[tokio::test]
async fn fetch_max_bytes_caps_a_multi_partition_fetch() {
    let one = common::one_record_batch(10_000).len();
    // 15,000 bytes hold one ~10 kB batch: the first partition's; the next would overflow.
    // 1,000 bytes hold none, but the first batch of the first partition with data is still
    // returned (KIP-74), and nothing else.
    for cap in [15_000, 1_000] {
        let server = start_with(&[&format!("fetch.max.bytes={cap}")]).await;
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        three_batches_per_partition(&server, &mut s).await;
        // The client allows 10 MB in all: the broker's cap wins.
        assert_eq!(
            fetch_sizes(&mut s, 10_000_000).await,
            vec![one, 0, 0],
            "cap {cap}"
        );
        // A client asking for less than the cap still gets less.
        assert_eq!(fetch_sizes(&mut s, 100).await, vec![one, 0, 0], "cap {cap}");
    }
    // Without a cap below the request, all nine batches come back.
    let server = start_with(&[]).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    three_batches_per_partition(&server, &mut s).await;
    assert_eq!(fetch_sizes(&mut s, 10_000_000).await, vec![3 * one; 3]);
}
