//! Consume load: one librdkafka `BaseConsumer` with `assign()` reading a topic from offset 0.
//!
//! Owns: [`run`]. No group membership is used (the broker has no groups yet): partitions are
//! assigned explicitly at offset 0 and nothing is committed. librdkafka still needs a
//! `group.id` for `assign()`, so one is set; client-side errors about the group coordinator
//! are reported once and do not stop the phase (only the deadline does). The clock runs from `assign()`
//! to the arrival of the last expected record.
//!
//! Thread-safety: single-threaded (librdkafka runs its own fetcher threads). Writes nothing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

/// One consume phase.
#[derive(Debug, Clone)]
pub struct ConsumeSpec {
    pub bootstrap: String,
    pub topic: String,
    pub partitions: i32,
    /// Records the topic holds; the phase ends when all of them have arrived.
    pub expected: u64,
    /// `fetch.wait.max.ms`; `None` keeps librdkafka's default (500 ms).
    pub fetch_wait_ms: Option<u32>,
    /// Upper bound on the whole phase; past it the phase fails instead of hanging.
    pub timeout: Duration,
    /// Connect over TLS trusting this CA file (see `produce::apply_tls`).
    pub ssl_ca: Option<PathBuf>,
}

/// What a consume phase achieved.
#[derive(Debug, Clone, Copy)]
pub struct ConsumeResult {
    pub records: u64,
    pub bytes: u64,
    pub secs: f64,
}

/// Reads every partition from offset 0 until `expected` records have arrived.
pub fn run(spec: &ConsumeSpec) -> Result<ConsumeResult> {
    let mut cfg = ClientConfig::new();
    crate::produce::apply_tls(&mut cfg, spec.ssl_ca.as_deref());
    cfg.set("bootstrap.servers", &spec.bootstrap)
        .set("group.id", "skiff-bench")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "false");
    if let Some(ms) = spec.fetch_wait_ms {
        cfg.set("fetch.wait.max.ms", ms.to_string());
    }
    let consumer: BaseConsumer = cfg.create().context("creating the consumer")?;
    // Connect and learn the leader before the clock starts.
    consumer
        .fetch_metadata(Some(&spec.topic), Duration::from_secs(10))
        .with_context(|| format!("fetching metadata for {}", spec.topic))?;

    let mut tpl = TopicPartitionList::new();
    for p in 0..spec.partitions {
        tpl.add_partition_offset(&spec.topic, p, Offset::Offset(0))
            .with_context(|| format!("adding {}/{p} to the assignment", spec.topic))?;
    }
    let start = Instant::now();
    let deadline = start + spec.timeout;
    consumer.assign(&tpl).context("assign()")?;

    let mut records = 0u64;
    let mut bytes = 0u64;
    let mut last = start;
    let mut errors = 0u64;
    while records < spec.expected {
        if Instant::now() > deadline {
            bail!(
                "consumed {records} of {} records from {} before the {:?} deadline \
                 ({errors} client errors)",
                spec.expected,
                spec.topic,
                spec.timeout
            );
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(msg)) => {
                records += 1;
                bytes += msg.payload_len() as u64;
                last = Instant::now();
            }
            Some(Err(e)) => {
                // Transient client errors (e.g. no group coordinator) are not fatal: the
                // record count and the deadline decide. Print the first few only.
                errors += 1;
                if errors <= 3 {
                    eprintln!("  consumer error (continuing): {e}");
                }
            }
            None => {}
        }
    }
    Ok(ConsumeResult {
        records,
        bytes,
        secs: last.duration_since(start).as_secs_f64(),
    })
}
