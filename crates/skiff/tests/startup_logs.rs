//! Start-up logging stays short at INFO: one summary line for the storage load (counts and
//! time), not one line per partition — neither on the first start (which creates the 100
//! partitions of `__consumer_offsets` and `__transaction_state`) nor on a restart.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use skiff_testkit::{Broker, Options, Ready, READY_LINE};

/// Starts the binary on `data`, waits for "skiff is ready", stops it with SIGTERM and returns
/// the lines it logged in that run.
fn start_and_stop(data: &Path) -> Vec<String> {
    let opts = Options::new()
        .bin(env!("CARGO_BIN_EXE_skiff"))
        .data_dir(data)
        .log_filter("info")
        .ready(Ready::LogLine(READY_LINE.to_string()))
        .start_timeout(Duration::from_secs(30));
    let mut broker = Broker::start_opts(opts).unwrap();
    let status = broker.stop().unwrap();
    let lines: Vec<String> = broker.last_run_logs().lines().map(String::from).collect();
    assert!(status.success(), "{status}:\n{}", lines.join("\n"));
    lines
}

fn check(lines: &[String], what: &str) {
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
    for field in ["partitions=100", "segments=100", "elapsed_ms="] {
        assert!(
            summary[0].contains(field),
            "{what}: {field} not in {}",
            summary[0]
        );
    }
    assert!(lines.len() <= 12, "{what}: {} lines:\n{all}", lines.len());
}

#[test]
fn first_start_and_restart_log_one_summary_not_a_line_per_partition() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    check(&start_and_stop(&data), "first start");
    check(&start_and_stop(&data), "restart");
}
