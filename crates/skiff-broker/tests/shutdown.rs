//! Shutdown under load, in the order the `skiff` binary runs it: stop the listener and wait
//! for `serve_listener` to return (its connections answered their requests in hand and
//! ended), stop the housekeeping thread, then `Broker::shutdown` (coordinators, cleaner and
//! flusher stopped and joined, then the logs closed).
//!
//! What it proves: once `serve` has returned no connection is still being served; while
//! producers pipeline appends and clients commit offsets (written by
//! the group coordinator thread) right up to the stop, no append reaches any log after that
//! log was closed (`Log::appends_after_close` counts the refused ones), and no broker thread
//! (`skiff-*`) is still running once `Broker::shutdown` returns. It is alone in its test
//! binary so that the thread check sees only this broker's threads.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    offset_commit_request, produce_request, ApiKey, GroupId, OffsetCommitRequest, ProduceRequest,
    TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use skiff_broker::background::Housekeeper;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PARTITIONS: i32 = 4;
/// Requests each load connection keeps in flight.
const PIPELINE: i32 = 8;

fn frame<R: Encodable>(key: ApiKey, version: i16, correlation_id: i32, body: &R) -> Bytes {
    common::request_frame(key, version, correlation_id, "shutdown-test", body)
}

fn produce(partition: i32) -> Bytes {
    let mut b = skiff_records::BatchBuilder::new(0, skiff_records::Compression::None);
    for i in 0..10 {
        b.push(
            1_700_000_000_000,
            Some(format!("k{i}").as_bytes()),
            Some(&[b'v'; 200]),
            &[],
        );
    }
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(Bytes::from(b.build().unwrap()))),
            ])]);
    frame(ApiKey::Produce, 9, partition, &request)
}

fn commit(group: &str, offset: i64) -> Bytes {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(
                    (0..PARTITIONS)
                        .map(|p| {
                            offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(offset)
                        })
                        .collect(),
                ),
        ]);
    frame(ApiKey::OffsetCommit, 8, 1, &request)
}

/// Sends `PIPELINE` requests from `next`, reads their responses, and again, until the broker
/// closes the connection; counts the responses.
async fn load(addr: std::net::SocketAddr, next: impl Fn(u64) -> Bytes, answered: Arc<AtomicU64>) {
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return;
    };
    let mut n = 0u64;
    loop {
        let mut burst = BytesMut::new();
        for _ in 0..PIPELINE {
            burst.extend_from_slice(&next(n));
            n += 1;
        }
        if s.write_all(&burst).await.is_err() {
            return;
        }
        for _ in 0..PIPELINE {
            let mut size = [0u8; 4];
            if s.read_exact(&mut size).await.is_err() {
                return;
            }
            let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).unwrap()];
            if s.read_exact(&mut body).await.is_err() {
                return;
            }
            answered.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Names (`comm`, at most 15 bytes) of this process's threads that start with `skiff-`.
fn skiff_threads() -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) {
            let comm = comm.trim().to_string();
            if comm.starts_with("skiff-") {
                names.push(comm);
            }
        }
    }
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_under_load_stops_every_writer_before_the_logs_close() {
    let dir = tempfile::tempdir().unwrap();
    // The wall clock: the housekeeping and coordinator threads do their real work meanwhile.
    let common::Served {
        addr,
        broker,
        stop,
        server,
    } = common::broker(dir.path())
        .sets(&[
            "offsets.topic.num.partitions=4",
            "transaction.state.log.num.partitions=2",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms=10",
        ])
        .wait_coordinators()
        .serve()
        .await;
    common::create_topic(&broker, "t", PARTITIONS).await;
    let running = skiff_threads();
    for name in ["skiff-coordinat", "skiff-txn", "skiff-flusher"] {
        assert!(
            running.iter().any(|n| n == name),
            "{name} not in {running:?}"
        );
    }
    let housekeeper = Housekeeper::start(broker.clone()).unwrap();

    let produced = Arc::new(AtomicU64::new(0));
    let committed = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for c in 0..4i32 {
        let answered = produced.clone();
        clients.push(tokio::spawn(load(
            addr,
            move |n| produce((c + i32::try_from(n % 4).unwrap()) % PARTITIONS),
            answered,
        )));
    }
    for c in 0..2 {
        let answered = committed.clone();
        let group = format!("g{c}");
        clients.push(tokio::spawn(load(
            addr,
            move |n| commit(&group, i64::try_from(n).unwrap()),
            answered,
        )));
    }
    // Let the load run, then stop in the middle of it.
    tokio::time::sleep(Duration::from_millis(400)).await;
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(20), server)
        .await
        .expect("serve returns once its connections ended")
        .unwrap();
    // Every connection task has ended, so no request can append from here on.
    assert_eq!(
        broker.metrics.connections_open(),
        0,
        "connections still being served after serve returned"
    );
    let b = broker.clone();
    tokio::task::spawn_blocking(move || {
        housekeeper.stop();
        b.shutdown()
    })
    .await
    .unwrap()
    .unwrap();
    let left = skiff_threads();
    // Any writer still alive gets time to try; the clients see their connections closed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for c in clients {
        tokio::time::timeout(Duration::from_secs(5), c)
            .await
            .expect("load clients end once the broker closed their connections")
            .unwrap();
    }
    let produced = produced.load(Ordering::Relaxed);
    let committed = committed.load(Ordering::Relaxed);
    eprintln!("{produced} produce and {committed} offset commit responses before shutdown");
    assert!(produced > 0 && committed > 0, "the load did not run");
    assert!(left.is_empty(), "still running after shutdown: {left:?}");
    let late: Vec<(String, i32, u64)> = broker
        .topics
        .all_partitions()
        .iter()
        .filter(|p| p.log.appends_after_close() > 0)
        .map(|p| (p.topic.clone(), p.index, p.log.appends_after_close()))
        .collect();
    assert!(late.is_empty(), "appends after close: {late:?}");
}
