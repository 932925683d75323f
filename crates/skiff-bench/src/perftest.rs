//! `skiff-bench perf-test` (issue 18): what `acks=all` costs the broker, measured with Apache
//! Kafka's own load generator, `ProducerPerformance` (kafka-producer-perf-test: the Java
//! client, 1 KiB records, unthrottled), Skiff beside Kafka 4.4 in one run. For each acks
//! setting (`1`, then `all`) a fresh broker gets one topic of `--partitions` partitions
//! (default 1) and the tool sends `--records` records; the broker's CPU time (user + system,
//! all threads, fsyncs included) over the tool's run is divided by the bytes sent. MB/s is
//! the tool's own figure.
//!
//! The tool runs through `tests/kafka/tool.sh` (which installs Kafka's jars on first use), so
//! Java is required even for a Skiff-only run.
//!
//! Owns: [`run`]. Thread-safety: main thread only. On-disk: the brokers' temp roots. Every run
//! sends a bounded number of records to 127.0.0.1 and the tool's run has a deadline.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::broker::{BrokerKind, RunningBroker};
use crate::matrix::{Better, Matrix};
use crate::produce;

const TOPIC: &str = "bench-perf-test";
const RECORD_BYTES: u64 = 1024;
/// Most records one run may send (20 GiB at 1 KiB).
pub const MAX_RECORDS: u64 = 20_000_000;

/// The tool's run, one contender and acks setting.
struct Sent {
    mb_per_sec: f64,
    broker_cpu_secs: f64,
}

/// `runs` runs of each contender and acks setting; prints the matrix and returns it as
/// markdown.
pub fn run(
    skiff: &Path,
    kafka: Option<BrokerKind>,
    tool: &Path,
    records: u64,
    partitions: i32,
    runs: u32,
    clk_tck: f64,
) -> Result<String> {
    if records == 0 || records > MAX_RECORDS {
        bail!("--records must be 1..={MAX_RECORDS}");
    }
    let contenders = crate::broker::skiff_and_kafka(skiff, kafka);
    let labels: Vec<&str> = contenders.iter().map(|(l, _)| *l).collect();
    let mut m = Matrix::new(&labels, "skiff");
    let gb = (records * RECORD_BYTES) as f64 / 1e9;
    for run in 1..=runs {
        for (label, kind) in &contenders {
            for acks in ["1", "all"] {
                eprintln!("run {run}/{runs}: {label}, acks={acks}");
                match kind.with_fresh(|b| measure(b, tool, records, partitions, acks, clk_tck)) {
                    Ok(sent) => {
                        let scenario = scenario(partitions, acks);
                        m.add(&scenario, "MB/s", Better::Higher, label, sent.mb_per_sec);
                        m.add(
                            &scenario,
                            "broker CPU s/GB",
                            Better::Lower,
                            label,
                            sent.broker_cpu_secs / gb,
                        );
                    }
                    Err(e) => {
                        eprintln!("  {label}: {e:#}");
                        m.not_run(label, &format!("failed in run {run}, acks={acks}: {e}"));
                    }
                }
            }
        }
    }
    println!();
    println!(
        "skiff-bench perf-test: {records} records of 1 KiB per run, {partitions} partition(s) ({runs} runs; medians, min-max)"
    );
    print!("{}", m.render_text());
    Ok(m.render_markdown())
}

/// The row's name: "ProducerPerformance 1 KiB, acks=all", with "p12" when not one partition.
fn scenario(partitions: i32, acks: &str) -> String {
    match partitions {
        1 => format!("ProducerPerformance 1 KiB, acks={acks}"),
        n => format!("ProducerPerformance 1 KiB p{n}, acks={acks}"),
    }
}

fn measure(
    b: &RunningBroker,
    tool: &Path,
    records: u64,
    partitions: i32,
    acks: &str,
    clk_tck: f64,
) -> Result<Sent> {
    let addr = b.bootstrap();
    produce::create_topic(&addr, TOPIC, partitions)?;
    let before = b.sample(clk_tck)?.cpu_secs;
    let output = perf_test(tool, &addr, records, acks)?;
    let after = b.sample(clk_tck)?.cpu_secs;
    Ok(Sent {
        mb_per_sec: parse_mb_per_sec(&output)
            .with_context(|| format!("no summary line in the tool's output:\n{output}"))?,
        broker_cpu_secs: after - before,
    })
}

/// Runs kafka-producer-perf-test to the end (bounded by a deadline); its standard output.
fn perf_test(tool: &Path, bootstrap: &str, records: u64, acks: &str) -> Result<String> {
    let out_file = tempfile::NamedTempFile::new()?;
    let mut child = Command::new("bash")
        .arg(tool)
        .arg("kafka-producer-perf-test")
        .args(["--topic", TOPIC])
        .args(["--num-records", &records.to_string()])
        .args(["--record-size", &RECORD_BYTES.to_string()])
        .args(["--throughput", "-1"])
        .arg("--producer-props")
        .arg(format!("bootstrap.servers={bootstrap}"))
        .arg(format!("acks={acks}"))
        .stdin(Stdio::null())
        .stdout(out_file.reopen()?)
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting kafka-producer-perf-test")?;
    // At least 2 MB/s, plus the JVM's start: a broker slower than that is broken.
    let deadline = Instant::now() + Duration::from_secs(60 + records * RECORD_BYTES / 2_000_000);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("kafka-producer-perf-test did not finish before its deadline");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = std::fs::read_to_string(out_file.path())?;
    if !status.success() {
        bail!("kafka-producer-perf-test exited with {status}:\n{output}");
    }
    Ok(output)
}

/// The MB/s of the tool's summary line, "N records sent, R records/sec (M MB/sec), …".
fn parse_mb_per_sec(output: &str) -> Option<f64> {
    let line = output.lines().rev().find(|l| l.contains("records sent"))?;
    let (before, _) = line.split_once(" MB/sec")?;
    before.rsplit('(').next()?.trim().parse().ok()
}

/// `tests/kafka/tool.sh` of the workspace.
pub fn tool_script(workspace: &Path) -> PathBuf {
    workspace.join("tests").join("kafka").join("tool.sh")
}

#[cfg(test)]
mod tests {
    use super::parse_mb_per_sec;

    #[test]
    fn the_summary_line_gives_the_mb_per_sec() {
        let out = "5000 records sent, 1000.0 records/sec (0.98 MB/sec), 3.0 ms avg latency.\n\
            1000000 records sent, 154035.736291 records/sec (150.43 MB/sec), 172.47 ms avg \
            latency, 461.00 ms max latency, 165 ms 50th, 305 ms 95th, 380 ms 99th, 447 ms 99.9th.\n";
        assert_eq!(parse_mb_per_sec(out), Some(150.43));
        assert_eq!(parse_mb_per_sec("nothing here"), None);
    }
}
