//! Start-up stays short: a broker starts without the internal topics (Kafka creates
//! `__consumer_offsets` and `__transaction_state` on the first FindCoordinator, and so does
//! Skiff), and its INFO logging is one summary line for the storage load (counts and time),
//! not one line per partition — neither on the run that creates the 100 internal partitions
//! nor on the restart that opens them.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::frames::{s, Conn};
use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest, FindCoordinatorResponse};
use skiff_testkit::{Broker, Options, Ready, READY_LINE};

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

/// Starts the binary on `data`, waits for "skiff is ready", runs `while_up` against it,
/// stops it with SIGTERM and returns the lines it logged in that run.
fn start_and_stop(data: &Path, while_up: impl FnOnce(&Broker)) -> Vec<String> {
    let opts = Options::new()
        .bin(env!("CARGO_BIN_EXE_skiff"))
        .data_dir(data)
        .log_filter("info")
        .ready(Ready::LogLine(READY_LINE.to_string()))
        .start_timeout(Duration::from_secs(30));
    let mut broker = Broker::start_opts(opts).unwrap();
    while_up(&broker);
    let status = broker.stop().unwrap();
    let lines: Vec<String> = broker.last_run_logs().lines().map(String::from).collect();
    assert!(status.success(), "{status}:\n{}", lines.join("\n"));
    lines
}

/// FindCoordinator v4 for one key of `key_type`: this node, no error.
fn find_coordinator(broker: &Broker, key_type: i8, key: &str) {
    let mut conn = Conn::connect(&broker.bootstrap());
    let request = FindCoordinatorRequest::default()
        .with_key_type(key_type)
        .with_coordinator_keys(vec![s(key)]);
    let r: FindCoordinatorResponse = conn.call(ApiKey::FindCoordinator, 4, &request);
    let c = &r.coordinators[0];
    assert_eq!((c.error_code, c.node_id.0), (0, 1), "{c:?}");
}

/// One "storage ready" line with `partitions` partitions and segments, and no line per
/// partition.
fn check(lines: &[String], what: &str, partitions: usize) {
    let all = lines.join("\n");
    for per_partition in ["log loaded", "producer state loaded"] {
        assert!(
            !all.contains(per_partition),
            "{what}: {per_partition:?} at INFO:\n{all}"
        );
    }
    let summary: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("storage ready"))
        .collect();
    assert_eq!(summary.len(), 1, "{what}:\n{all}");
    for field in [
        format!("partitions={partitions} "),
        format!("segments={partitions} "),
        "elapsed_ms=".to_string(),
    ] {
        assert!(
            summary[0].contains(&field),
            "{what}: {field} not in {}",
            summary[0]
        );
    }
    assert!(lines.len() <= 14, "{what}: {} lines:\n{all}", lines.len());
}

#[test]
fn internal_topics_are_created_on_the_first_find_coordinator_and_logged_in_one_summary() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let first = start_and_stop(&data, |broker| {
        find_coordinator(broker, GROUP, "g");
        find_coordinator(broker, TRANSACTION, "tx");
    });
    check(&first, "first start", 0);
    for topic in ["__consumer_offsets", "__transaction_state"] {
        assert!(
            first
                .iter()
                .any(|l| l.contains("created topic") && l.contains(topic)),
            "{topic} not created:\n{}",
            first.join("\n")
        );
    }
    check(&start_and_stop(&data, |_| {}), "restart", 100);
}

#[test]
fn a_broker_no_client_asked_for_a_coordinator_restarts_without_internal_topics() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    check(&start_and_stop(&data, |_| {}), "first start", 0);
    check(&start_and_stop(&data, |_| {}), "restart", 0);
}
