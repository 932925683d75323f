//! A broker holds far more partitions than its open-file limit would allow if every segment
//! kept its three files open: segment files go through a bounded cache that closes the least
//! recently used ones and reopens them on use. The binary runs under `ulimit -n 256` (so the
//! cache keeps 128 files) through a small shell wrapper, with 600 partitions (1,800 segment
//! files): every partition takes writes and serves them back, through a clean restart and a
//! kill -9, while the process never holds more descriptors than the limit.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use common::frames::{s, Conn};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use skiff_records::{BatchBuilder, Batches, Compression};
use skiff_testkit::{Broker, Options};

const LIMIT: u32 = 256;
const TOPIC: &str = "many";
/// Partitions made by CreateTopics, then grown by CreatePartitions.
const CREATED: i32 = 400;
const GROWN: i32 = 600;
/// Partitions per Produce or Fetch request.
const CHUNK: i32 = 100;

/// A script that lowers the open-file limit and runs the broker in its place.
fn limited_skiff(dir: &Path, files: u32) -> PathBuf {
    let path = dir.join("skiff-limited.sh");
    let script = format!(
        "#!/bin/sh\nulimit -n {files} || exit 99\nexec '{}' \"$@\"\n",
        env!("CARGO_BIN_EXE_skiff")
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn create(conn: &mut Conn, name: &str, partitions: i32) {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(1)]);
    let r: CreateTopicsResponse = conn.call(ApiKey::CreateTopics, 5, &request);
    let t = &r.topics[0];
    assert_eq!(t.error_code, 0, "CreateTopics: {:?}", t.error_message);
}

fn grow(conn: &mut Conn, name: &str, total: i32) {
    let request = CreatePartitionsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatePartitionsTopic::default()
            .with_name(TopicName(s(name)))
            .with_count(total)]);
    let r: CreatePartitionsResponse = conn.call(ApiKey::CreatePartitions, 1, &request);
    let t = &r.results[0];
    assert_eq!(t.error_code, 0, "CreatePartitions: {:?}", t.error_message);
}

fn value(partition: i32, round: usize) -> String {
    format!("p{partition}-r{round}")
}

/// One record to each of `partitions` (acks=-1), `CHUNK` partitions a request; each lands at
/// offset `round`.
fn produce_round(conn: &mut Conn, partitions: i32, round: usize) {
    for start in (0..partitions).step_by(CHUNK as usize) {
        let data = (start..(start + CHUNK).min(partitions))
            .map(|p| {
                let mut builder = BatchBuilder::new(0, Compression::None);
                builder.push(0, None, Some(value(p, round).as_bytes()), &[]);
                PartitionProduceData::default()
                    .with_index(p)
                    .with_records(Some(Bytes::from(builder.build().unwrap())))
            })
            .collect();
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(s(TOPIC)))
                .with_partition_data(data)]);
        let r: ProduceResponse = conn.call(ApiKey::Produce, 8, &request);
        for p in &r.responses[0].partition_responses {
            assert_eq!(
                p.error_code, 0,
                "Produce to {}: {:?}",
                p.index, p.error_message
            );
            assert_eq!(p.base_offset, round as i64, "partition {}", p.index);
        }
    }
}

/// Reads every partition from offset 0 and checks it holds exactly the `rounds` records.
fn check_all(conn: &mut Conn, partitions: i32, rounds: usize) {
    for start in (0..partitions).step_by(CHUNK as usize) {
        let wanted = (start..(start + CHUNK).min(partitions))
            .map(|p| {
                FetchPartition::default()
                    .with_partition(p)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(64 * 1024)
            })
            .collect();
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(64 * 1024 * 1024)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(s(TOPIC)))
                .with_partitions(wanted)]);
        let r: FetchResponse = conn.call(ApiKey::Fetch, 4, &request);
        let partitions_read = &r.responses[0].partitions;
        assert_eq!(
            partitions_read.len() as i32,
            (start + CHUNK).min(partitions) - start
        );
        for p in partitions_read {
            assert_eq!(p.error_code, 0, "Fetch of {}", p.partition_index);
            let bytes = p.records.clone().unwrap_or_default();
            let mut values = Vec::new();
            for batch in Batches::new(&bytes) {
                let (_, batch) = batch.unwrap();
                for record in skiff_records::records(batch, 1 << 20).unwrap() {
                    values.push(String::from_utf8(record.value.unwrap().to_vec()).unwrap());
                }
            }
            let expected: Vec<String> = (0..rounds).map(|r| value(p.partition_index, r)).collect();
            assert_eq!(values, expected, "partition {}", p.partition_index);
        }
    }
}

/// Descriptors the broker process holds now.
fn open_descriptors(broker: &Broker) -> usize {
    let pid = broker.pid().unwrap();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn partitions_far_past_the_open_file_limit_take_writes_and_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::new().bin(limited_skiff(dir.path(), LIMIT));
    let mut broker = Broker::start_opts(opts).unwrap();
    let mut conn = Conn::connect(&broker.bootstrap());

    create(&mut conn, TOPIC, CREATED);
    grow(&mut conn, TOPIC, GROWN);
    produce_round(&mut conn, GROWN, 0);
    check_all(&mut conn, GROWN, 1);
    let held = open_descriptors(&broker);
    assert!(held < LIMIT as usize, "{held} descriptors open");

    // Clean stop: every partition's files are reopened as the broker loads them.
    assert!(broker.stop().unwrap().success());
    broker.restart().unwrap();
    let mut conn = Conn::connect(&broker.bootstrap());
    check_all(&mut conn, GROWN, 1);
    produce_round(&mut conn, GROWN, 1);

    // Acknowledged (acks=-1) writes survive a crash, including those whose files the cache
    // had closed before the fsync.
    broker.kill9().unwrap();
    broker.restart().unwrap();
    let mut conn = Conn::connect(&broker.bootstrap());
    check_all(&mut conn, GROWN, 2);
    let held = open_descriptors(&broker);
    assert!(held < LIMIT as usize, "{held} descriptors open");
    assert!(broker.stop().unwrap().success());
}
