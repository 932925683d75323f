//! A broker whose open-file limit cannot hold the partitions asked for refuses CreateTopics
//! and CreatePartitions with INVALID_PARTITIONS and a message naming the limit, before any
//! partition is created (it used to fail part way with "Too many open files", a storage error
//! that clients retry). The binary runs under `ulimit -n 400` through a small shell wrapper.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::frames::{s, Conn};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::*;
use skiff_testkit::{Broker, Options};

const INVALID_PARTITIONS: i16 = 37;

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

/// CreateTopics v5 of one topic: (error code, message).
fn create(conn: &mut Conn, name: &str, partitions: i32) -> (i16, String) {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(1)]);
    let r: CreateTopicsResponse = conn.call(ApiKey::CreateTopics, 5, &request);
    let t = &r.topics[0];
    (
        t.error_code,
        t.error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

/// CreatePartitions v1 growing `name` to `total`: (error code, message).
fn grow(conn: &mut Conn, name: &str, total: i32) -> (i16, String) {
    let request = CreatePartitionsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatePartitionsTopic::default()
            .with_name(TopicName(s(name)))
            .with_count(total)]);
    let r: CreatePartitionsResponse = conn.call(ApiKey::CreatePartitions, 1, &request);
    let t = &r.results[0];
    (
        t.error_code,
        t.error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

fn partition_dirs(data: &Path, topic: &str) -> usize {
    std::fs::read_dir(data)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.rsplit_once('-').is_some_and(|(t, _)| t == topic)
        })
        .count()
}

#[test]
fn partitions_past_the_open_file_limit_are_refused_before_any_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::new().bin(limited_skiff(dir.path(), 400));
    let mut broker = Broker::start_opts(opts).unwrap();
    let data = broker.data_dir();
    let mut conn = Conn::connect(&broker.bootstrap());

    let (code, message) = create(&mut conn, "big", 200);
    assert_eq!(code, INVALID_PARTITIONS, "{message}");
    assert!(message.contains("limit of 400 open files"), "{message}");
    assert_eq!(
        partition_dirs(&data, "big"),
        0,
        "nothing of the refused topic on disk"
    );

    let (code, message) = create(&mut conn, "small", 10);
    assert_eq!(code, 0, "{message}");
    assert_eq!(partition_dirs(&data, "small"), 10);

    let (code, message) = grow(&mut conn, "small", 210);
    assert_eq!(code, INVALID_PARTITIONS, "{message}");
    assert!(message.contains("open files"), "{message}");
    assert_eq!(partition_dirs(&data, "small"), 10, "no partition added");
    let (code, message) = grow(&mut conn, "small", 20);
    assert_eq!(code, 0, "{message}");
    assert_eq!(partition_dirs(&data, "small"), 20);

    // The broker still serves: the refused topic does not exist, the other does.
    let (code, _) = create(&mut conn, "small", 1);
    assert_eq!(code, 36, "TOPIC_ALREADY_EXISTS");
    assert!(broker.stop().unwrap().success());
}
