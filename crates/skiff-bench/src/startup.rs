//! Start-up figures of the `compare` mode: time from spawn to the first served request
//! (an ApiVersions round trip, see `probe`) on an empty data dir, and with data: after
//! `kill -9` straight after the writes (nothing flushed), after a clean stop, and after
//! `kill -9` of that clean start; idle RSS one second after an empty start.
//!
//! Owns: [`run`] for one contender and one run. "Empty" is a restart on a data dir that the
//! broker itself created and left empty (for Kafka: formatted by `kafka-storage format` on
//! the first start, so the restart does not include formatting). For Kafka the time starts
//! when `tests/kafka/start.sh` is run (a few tens of ms of shell before the JVM).
//! After each data restart the partition's high watermark is checked against what was
//! written, so a fast start that lost data is reported as a failure.
//!
//! Thread-safety: main thread only. On-disk: the broker's temp root, reused across restarts.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::broker::RunningBroker;
use crate::compare::{first_line, produce_n, Contender, Plan};
use crate::matrix::{Better, Matrix};
use crate::produce::{self, Acks};

const TOPIC: &str = "bench-restart";

/// One run of the start-up figures for `c`; failures are recorded as "not run" notes.
pub fn run(c: &Contender, plan: &Plan, clk_tck: f64, m: &mut Matrix) {
    if let Err(e) = run_inner(c, plan, clk_tck, m) {
        eprintln!("  {}: start-up failed: {e:#}", c.label);
        m.not_run(
            c.label,
            &format!("start-up failed in one run: {}", first_line(&e)),
        );
    }
}

fn run_inner(c: &Contender, plan: &Plan, clk_tck: f64, m: &mut Matrix) -> Result<()> {
    let first = c.kind.launch_with(&c.launch).context("first start")?;
    std::thread::sleep(Duration::from_secs(1));
    let idle = first.sample(clk_tck)?;
    m.add(
        "start-up",
        "idle RSS MiB (1 s after start)",
        Better::Lower,
        c.label,
        idle.rss_bytes as f64 / (1024.0 * 1024.0),
    );
    let root = first
        .stop_keep()
        .context("stopping after the first start")?;
    let b = c
        .kind
        .launch_in(root, &c.launch)
        .context("restart on the empty dir")?;
    m.add(
        "start-up",
        "to first request, empty ms",
        Better::Lower,
        c.label,
        ms(b.started_in()),
    );
    eprintln!(
        "  {}: start-up empty: {:.1} ms",
        c.label,
        ms(b.started_in())
    );
    if !c.kind.persists() {
        let mut b = b;
        return b.stop();
    }
    produce::create_topic(&b.bootstrap(), TOPIC, 1)?;
    let records = plan.restart_bytes / 1024;
    produce_n(&b, plan, clk_tck, TOPIC, 1024, 1, Acks::Leader, records).context("filling")?;
    let mb = plan.restart_bytes / 1_000_000;

    // The harshest crash: nothing written with acks=1 has been fsynced or checkpointed, so
    // recovery must check everything the broker does not trust.
    let root = b.kill9_keep().context("kill -9 right after the writes")?;
    let b = restart_and_record(c, root, records, ", kill -9 right after writing", mb, m)?;
    let root = b.stop_keep().context("clean stop with data")?;
    let b = restart_and_record(c, root, records, " after clean stop", mb, m)?;
    let root = b.kill9_keep().context("kill -9")?;
    let mut b = restart_and_record(c, root, records, ", kill -9 after a clean start", mb, m)?;
    b.stop()
}

/// Starts `c` on the data left in `root`, checks that all `records` are served, and records
/// the time to the first request as the row "to first request, {mb} MB{how} ms".
fn restart_and_record(
    c: &Contender,
    root: tempfile::TempDir,
    records: u64,
    how: &str,
    mb: u64,
    m: &mut Matrix,
) -> Result<RunningBroker> {
    let b = c
        .kind
        .launch_in(root, &c.launch)
        .with_context(|| format!("restart{how}"))?;
    check_high_watermark(&b.bootstrap(), records).with_context(|| format!("restart{how}"))?;
    let label = format!("to first request, {mb} MB{how} ms");
    m.add(
        "start-up",
        &label,
        Better::Lower,
        c.label,
        ms(b.started_in()),
    );
    eprintln!("  {}: {label}: {:.1}", c.label, ms(b.started_in()));
    Ok(b)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Partition 0 of the restart topic must hold exactly the `records` written before.
fn check_high_watermark(bootstrap: &str, records: u64) -> Result<()> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "skiff-bench-restart")
        .create()
        .context("creating a consumer for the watermark check")?;
    let (low, high) = c
        .fetch_watermarks(TOPIC, 0, Duration::from_secs(60))
        .context("ListOffsets (watermarks)")?;
    if low != 0 || u64::try_from(high).ok() != Some(records) {
        bail!("watermarks are {low}..{high}, expected 0..{records}");
    }
    Ok(())
}
