//! Start-up logging stays short at INFO: one summary line for the storage load (counts and
//! time), not one line per partition — neither on the first start (which creates the 100
//! partitions of `__consumer_offsets` and `__transaction_state`) nor on a restart.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts the binary on `data`, waits for "skiff is ready", stops it with SIGTERM and returns
/// its stderr lines.
fn start_and_stop(data: &std::path::Path) -> Vec<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skiff"));
    cmd.arg("--set")
        .arg(format!("log.dirs={}", data.display()))
        .args([
            "--set",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--log",
            "info",
        ])
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SKIFF_") {
            cmd.env_remove(name);
        }
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            let ready = line.contains("skiff is ready");
            if tx.send(line).is_err() {
                return;
            }
            if ready {
                let _ = tx.send(String::new());
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.is_empty() => break,
            Ok(l) => lines.push(l),
            Err(e) => {
                let _ = child.kill();
                panic!("not ready within 30 s ({e}):\n{}", lines.join("\n"));
            }
        }
    }
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = child.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter().filter(|l| !l.is_empty()));
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
