//! `skiff-bench partitions` (issue 18): how a broker's costs grow with its partition count,
//! Skiff beside Apache Kafka 4.4 in one run. At each step (1, 10, 100, … up to
//! `--max-partitions`, default 100,000) each contender gets a fresh broker and:
//! - **create s**: CreateTopics of a topic `idle`, grown by CreatePartitions 5,000 at a time
//!   (Kafka refuses a request of over 10,000 partitions) to N, timed until all N
//!   partition directories exist on disk (Kafka answers CreateTopics once the controller has
//!   the metadata and makes the logs after, so the answer alone would flatter it);
//! - **RSS MiB** and **open files** with the N partitions idle;
//! - **produce p50/p99 ms** of one librdkafka producer to a separate one-partition topic
//!   (acks=1, 1 KiB, a fixed rate, see `latency`) while the N partitions sit idle;
//! - **restart s** after a clean stop and **crash restart s** after kill -9: from the spawn
//!   until the broker answers the high watermark of the last idle partition (it has loaded
//!   them all).
//!
//! A contender that fails a step (Kafka runs out of open files or memory maps) is reported
//! as not run from that step on, and the larger steps are skipped for it.
//!
//! Owns: [`run`]. Thread-safety: main thread only. On-disk: the brokers' temp roots, removed
//! after each step. Every loop is bounded by a deadline.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;

use crate::broker::{BrokerKind, Launch, RunningBroker};
use crate::latency::{self, LatencySpec};
use crate::matrix::{Better, Matrix};
use crate::produce::{self, Acks};

/// Most partitions a run may ask for.
pub const MAX_PARTITIONS: i32 = 200_000;
const IDLE_TOPIC: &str = "idle";
const HOT_TOPIC: &str = "hot";
/// The hot producer's rate and duration.
const RATE: f64 = 500.0;
const SECS: f64 = 4.0;
/// How long creating or loading the partitions of one step may take.
const DEADLINE: Duration = Duration::from_secs(600);
/// Partitions asked for in one request. Kafka's controller refuses a request that would
/// write more than 10,000 metadata records (one per partition), so larger counts are made
/// as a topic of this size grown by CreatePartitions; both contenders get the same requests.
const CHUNK: i32 = 5_000;

/// `runs` runs of each contender at every step up to `max`; prints the matrix.
pub fn run(
    skiff: &Path,
    kafka: Option<BrokerKind>,
    max: i32,
    runs: u32,
    clk_tck: f64,
    plot: Option<&Path>,
) -> Result<()> {
    if !(1..=MAX_PARTITIONS).contains(&max) {
        bail!("--max-partitions must be 1..={MAX_PARTITIONS}");
    }
    let contenders = crate::broker::skiff_and_kafka(skiff, kafka);
    let labels: Vec<&str> = contenders.iter().map(|(l, _)| *l).collect();
    let mut m = Matrix::new(&labels, "skiff");
    for (label, kind) in &contenders {
        kind.check()?;
        'steps: for n in steps(max) {
            for run in 1..=runs {
                eprintln!("{label}: {n} partitions, run {run}/{runs}");
                if let Err(e) = one(kind, label, n, clk_tck, &mut m) {
                    eprintln!("  {label} at {n} partitions: {e:#}");
                    m.not_run(
                        label,
                        &format!("failed at {n} partitions (larger steps skipped): {e}"),
                    );
                    break 'steps;
                }
            }
        }
    }
    println!();
    println!("skiff-bench partitions: up to {max} idle partitions ({runs} runs; medians, min-max)");
    print!("{}", m.render_text());
    if let Some(path) = plot {
        crate::scale_plot::render(
            &m,
            "skiff-bench partitions: cost against idle partitions",
            &[
                "create s",
                "RSS MiB",
                "restart s",
                "crash restart s",
                "open files",
                "produce p99 ms",
            ],
            path,
        )?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// 1, 10, 100, … below `max`, then `max`.
fn steps(max: i32) -> Vec<i32> {
    let mut s = Vec::new();
    let mut n = 1;
    while n < max {
        s.push(n);
        n = n.saturating_mul(10);
    }
    s.push(max);
    s
}

fn one(kind: &BrokerKind, label: &str, n: i32, clk_tck: f64, m: &mut Matrix) -> Result<()> {
    let scenario = format!("{n} partitions");
    let mut b = kind.launch_with(&Launch::default())?;
    let created = Instant::now();
    let measured = create_and_wait(&b, n).and_then(|()| {
        m.add(
            &scenario,
            "create s",
            Better::Lower,
            label,
            created.elapsed().as_secs_f64(),
        );
        idle_costs(&b, label, &scenario, clk_tck, m)
    });
    if let Err(e) = measured {
        let tail = b.log_tail(10);
        let _ = b.stop();
        return Err(e.context(tail));
    }
    let root = b.stop_keep()?;
    let b = kind.launch_in(root, &Launch::default())?;
    let loaded = wait_loaded(&b, n)?;
    m.add(
        &scenario,
        "restart s",
        Better::Lower,
        label,
        (b.started_in() + loaded).as_secs_f64(),
    );
    let root = b.kill9_keep()?;
    let mut b = kind.launch_in(root, &Launch::default())?;
    let loaded = wait_loaded(&b, n)?;
    m.add(
        &scenario,
        "crash restart s",
        Better::Lower,
        label,
        (b.started_in() + loaded).as_secs_f64(),
    );
    b.stop()
}

/// CreateTopics of up to [`CHUNK`] partitions, CreatePartitions by [`CHUNK`] more until there
/// are N, then every partition directory on disk.
fn create_and_wait(b: &RunningBroker, n: i32) -> Result<()> {
    let mut made = n.min(CHUNK);
    produce::create_topic_timeout(&b.bootstrap(), IDLE_TOPIC, made, DEADLINE)?;
    while made < n {
        made = n.min(made.saturating_add(CHUNK));
        produce::grow_topic_timeout(&b.bootstrap(), IDLE_TOPIC, made, DEADLINE)?;
    }
    let data = b.data_dir();
    let start = Instant::now();
    loop {
        let made = partition_dirs(&data, IDLE_TOPIC);
        if made >= n as usize {
            return Ok(());
        }
        if start.elapsed() > DEADLINE {
            bail!("{made} of {n} partition directories after {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Directories `<topic>-<n>` in the data dir (Skiff) or its `logs` (Kafka's start script).
fn partition_dirs(data: &Path, topic: &str) -> usize {
    let prefix = format!("{topic}-");
    [data.to_path_buf(), data.join("logs")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|name| name.strip_prefix(&prefix))
                .is_some_and(|rest| rest.bytes().all(|c| c.is_ascii_digit()))
        })
        .count()
}

fn idle_costs(
    b: &RunningBroker,
    label: &str,
    scenario: &str,
    clk_tck: f64,
    m: &mut Matrix,
) -> Result<()> {
    // Let the broker settle (creation buffers freed) before sampling.
    std::thread::sleep(Duration::from_secs(1));
    let rss = b.sample(clk_tck)?.rss_bytes as f64;
    m.add(
        scenario,
        "RSS MiB",
        Better::Lower,
        label,
        rss / (1024.0 * 1024.0),
    );
    m.add(
        scenario,
        "open files",
        Better::Lower,
        label,
        b.open_files()? as f64,
    );
    produce::create_topic(&b.bootstrap(), HOT_TOPIC, 1)?;
    let lat = latency::run(&LatencySpec {
        bootstrap: b.bootstrap(),
        topic: HOT_TOPIC.to_string(),
        rate: RATE,
        secs: SECS,
        size: 1024,
        acks: Acks::Leader,
    })?;
    m.add(
        scenario,
        "produce p50 ms",
        Better::Lower,
        label,
        lat.produce.p50,
    );
    m.add(
        scenario,
        "produce p99 ms",
        Better::Lower,
        label,
        lat.produce.p99,
    );
    Ok(())
}

/// Time from now until the broker answers the watermarks of the last idle partition.
fn wait_loaded(b: &RunningBroker, n: i32) -> Result<Duration> {
    let start = Instant::now();
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", b.bootstrap())
        .set("group.id", "skiff-bench-partitions")
        .create()
        .context("creating the watermark consumer")?;
    loop {
        if consumer
            .fetch_watermarks(IDLE_TOPIC, n - 1, Duration::from_secs(5))
            .is_ok()
        {
            return Ok(start.elapsed());
        }
        if start.elapsed() > DEADLINE {
            bail!(
                "partition {} not served {DEADLINE:?} after the restart",
                n - 1
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::steps;

    #[test]
    fn steps_go_by_powers_of_ten_and_end_at_the_maximum() {
        assert_eq!(steps(1), vec![1]);
        assert_eq!(steps(100_000), vec![1, 10, 100, 1_000, 10_000, 100_000]);
        assert_eq!(steps(2_500), vec![1, 10, 100, 1_000, 2_500]);
    }
}
