//! Produce load: topic creation and a multi-threaded librdkafka producer run.
//!
//! Owns: [`create_topic`] (CreateTopics through the admin client), [`alter_topic_configs`]
//! (AlterConfigs) and [`run`], which starts
//! `producers` threads, each with its own `BaseProducer` (own connection and librdkafka
//! threads, so the client is not the bottleneck), sends its share of the records to explicit
//! partitions (round robin) and waits for every delivery report.
//!
//! Timing: all producers connect and fetch metadata first, then meet at a barrier; the clock
//! runs from the barrier (first send) to the last successful delivery report.
//!
//! Thread-safety: the delivery counters are atomics shared through an `Arc`; the only lock
//! holds the first delivery error, taken on the (rare) failure path. Writes nothing to disk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier,
    TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::ClientContext;

/// Acknowledgement level of a produce phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    Leader,
    All,
}

impl Acks {
    fn config_value(self) -> &'static str {
        match self {
            Acks::Leader => "1",
            Acks::All => "all",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Acks::Leader => "acks=1",
            Acks::All => "acks=all",
        }
    }
}

/// One produce phase.
#[derive(Debug, Clone)]
pub struct ProduceSpec {
    pub bootstrap: String,
    pub topic: String,
    pub partitions: i32,
    pub records: u64,
    pub size: usize,
    pub acks: Acks,
    pub producers: usize,
    /// Upper bound on the whole phase; past it the phase fails instead of hanging.
    pub timeout: Duration,
    /// Connect over TLS (`security.protocol=ssl`), trusting this CA file; `bootstrap` must
    /// then name an SSL listener.
    pub ssl_ca: Option<PathBuf>,
}

/// Sets `security.protocol=ssl` and the trusted CA when `ssl_ca` is given (server-only
/// authentication; librdkafka checks the broker's name against the certificate).
pub fn apply_tls(cfg: &mut ClientConfig, ssl_ca: Option<&Path>) {
    if let Some(ca) = ssl_ca {
        cfg.set("security.protocol", "ssl")
            .set("ssl.ca.location", ca.display().to_string());
    }
}

/// What a produce phase achieved.
#[derive(Debug, Clone, Copy)]
pub struct ProduceResult {
    pub records: u64,
    pub bytes: u64,
    pub secs: f64,
}

/// Creates `topic` with `partitions` partitions (replication factor 1) and waits for the
/// broker's answer. Uses a small current-thread runtime because the admin API is async.
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<()> {
    create_topic_with(bootstrap, topic, partitions, &[])
}

/// [`create_topic`] with topic configs (`cleanup.policy=compact`, ...).
pub fn create_topic_with(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, String)],
) -> Result<()> {
    create_topic_within(
        bootstrap,
        topic,
        partitions,
        configs,
        Duration::from_secs(15),
    )
}

/// [`create_topic`] waiting up to `timeout` for the answer (a topic of very many partitions).
pub fn create_topic_timeout(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    timeout: Duration,
) -> Result<()> {
    create_topic_within(bootstrap, topic, partitions, &[], timeout)
}

fn create_topic_within(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, String)],
    timeout: Duration,
) -> Result<()> {
    let (admin, rt) = admin_client(bootstrap)?;
    let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        new = new.set(k, v);
    }
    let opts = AdminOptions::new()
        .request_timeout(Some(timeout))
        .operation_timeout(Some(timeout));
    let results = rt
        .block_on(admin.create_topics([&new], &opts))
        .with_context(|| format!("CreateTopics {topic}"))?;
    for r in results {
        if let Err((name, code)) = r {
            bail!("CreateTopics {name} with {partitions} partitions failed: {code}");
        }
    }
    Ok(())
}

/// An admin client of `bootstrap` and the small current-thread runtime its async calls are
/// run on.
fn admin_client(
    bootstrap: &str,
) -> Result<(AdminClient<DefaultClientContext>, tokio::runtime::Runtime)> {
    let admin = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .context("creating the admin client")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("building the admin runtime")?;
    Ok((admin, rt))
}

/// CreatePartitions: grows `topic` to `total` partitions, waiting up to `timeout`.
pub fn grow_topic_timeout(
    bootstrap: &str,
    topic: &str,
    total: i32,
    timeout: Duration,
) -> Result<()> {
    let (admin, rt) = admin_client(bootstrap)?;
    let total_partitions = usize::try_from(total).context("a partition count below 0")?;
    let grow = NewPartitions::new(topic, total_partitions);
    let opts = AdminOptions::new()
        .request_timeout(Some(timeout))
        .operation_timeout(Some(timeout));
    let results = rt
        .block_on(admin.create_partitions([&grow], &opts))
        .with_context(|| format!("CreatePartitions {topic}"))?;
    for r in results {
        if let Err((name, code)) = r {
            bail!("CreatePartitions {name} to {total} partitions failed: {code}");
        }
    }
    Ok(())
}

/// Replaces the configs of `topic` with `configs` (AlterConfigs: configs not listed go back
/// to their defaults) and waits for the broker's answer.
pub fn alter_topic_configs(bootstrap: &str, topic: &str, configs: &[(&str, String)]) -> Result<()> {
    let (admin, rt) = admin_client(bootstrap)?;
    let mut alter = AlterConfig::new(ResourceSpecifier::Topic(topic));
    for (k, v) in configs {
        alter = alter.set(k, v);
    }
    let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(15)));
    let results = rt
        .block_on(admin.alter_configs([&alter], &opts))
        .with_context(|| format!("AlterConfigs {topic}"))?;
    for r in results {
        if let Err((_, code)) = r {
            bail!("AlterConfigs {topic} failed: {code}");
        }
    }
    Ok(())
}

/// Delivery bookkeeping shared by all producer threads.
struct Progress {
    /// Zero point for the nanosecond timestamps below.
    t0: Instant,
    delivered: AtomicU64,
    failed: AtomicU64,
    /// Time of the latest successful delivery report, in ns since `t0`.
    last_delivery_ns: AtomicU64,
    first_error: Mutex<Option<String>>,
}

struct Ctx(Arc<Progress>);

impl ClientContext for Ctx {}

impl ProducerContext for Ctx {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let p = &self.0;
        match result {
            Ok(_) => {
                p.delivered.fetch_add(1, Ordering::Relaxed);
                let ns = u64::try_from(p.t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                p.last_delivery_ns.fetch_max(ns, Ordering::Relaxed);
            }
            Err((e, _)) => {
                p.failed.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut slot) = p.first_error.lock() {
                    slot.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
}

/// Runs one produce phase and checks that every record was acknowledged.
pub fn run(spec: &ProduceSpec) -> Result<ProduceResult> {
    if spec.producers == 0 || spec.partitions <= 0 {
        bail!("need at least one producer and one partition");
    }
    let progress = Arc::new(Progress {
        t0: Instant::now(),
        delivered: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        last_delivery_ns: AtomicU64::new(0),
        first_error: Mutex::new(None),
    });
    let payload: Arc<Vec<u8>> = Arc::new(payload(spec.size));
    let threads = spec.producers as u64;
    let barrier = Arc::new(Barrier::new(spec.producers + 1));
    let deadline = Instant::now() + spec.timeout;

    let mut handles = Vec::with_capacity(spec.producers);
    for i in 0..threads {
        // Thread i sends records i, i + T, i + 2T, ...: shares differ by at most one.
        let count = spec.records / threads + u64::from(i < spec.records % threads);
        let spec = spec.clone();
        let progress = Arc::clone(&progress);
        let payload = Arc::clone(&payload);
        let barrier = Arc::clone(&barrier);
        let h = thread::Builder::new()
            .name(format!("bench-producer-{i}"))
            .spawn(move || {
                producer_thread(
                    &spec, i, threads, count, &progress, &payload, &barrier, deadline,
                )
            })
            .context("spawning a producer thread")?;
        handles.push(h);
    }
    // If a thread fails before the barrier, the others would wait forever: the barrier is
    // only reached after setup, and setup errors are returned *after* waiting on it.
    barrier.wait();
    let start_ns = u64::try_from(progress.t0.elapsed().as_nanos()).unwrap_or(u64::MAX);

    let mut first_err: Option<anyhow::Error> = None;
    for h in handles {
        let r = h
            .join()
            .map_err(|_| anyhow!("a producer thread panicked"))
            .and_then(|r| r);
        if let Err(e) = r {
            first_err.get_or_insert(e);
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let delivered = progress.delivered.load(Ordering::Relaxed);
    let failed = progress.failed.load(Ordering::Relaxed);
    if failed > 0 || delivered != spec.records {
        let why = progress
            .first_error
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .unwrap_or_else(|| "no error reported".to_string());
        bail!(
            "{}: {delivered} of {} records delivered, {failed} failed (first error: {why})",
            spec.acks.label(),
            spec.records
        );
    }
    let end_ns = progress.last_delivery_ns.load(Ordering::Relaxed);
    let secs = end_ns.saturating_sub(start_ns) as f64 / 1e9;
    Ok(ProduceResult {
        records: delivered,
        bytes: delivered * spec.size as u64,
        secs,
    })
}

/// One producer thread: set up (connect, metadata), wait at the barrier, send, flush.
#[allow(clippy::too_many_arguments)]
fn producer_thread(
    spec: &ProduceSpec,
    index: u64,
    threads: u64,
    count: u64,
    progress: &Arc<Progress>,
    payload: &[u8],
    barrier: &Barrier,
    deadline: Instant,
) -> Result<()> {
    let setup = setup_producer(spec, progress);
    barrier.wait();
    let producer = setup?;
    let partitions = spec.partitions as u64;
    for k in 0..count {
        let global = index + k * threads;
        let partition = i32::try_from(global % partitions).unwrap_or(0);
        loop {
            let record = BaseRecord::<(), [u8]>::to(&spec.topic)
                .partition(partition)
                .payload(payload);
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    // The local queue is full: serve delivery reports until there is room.
                    producer.poll(Duration::from_millis(5));
                    if Instant::now() > deadline {
                        bail!("producer queue still full at the phase deadline");
                    }
                }
                Err((e, _)) => bail!("send to {}/{partition} failed: {e}", spec.topic),
            }
        }
        // Serve delivery callbacks regularly so the queue drains as we go.
        if k % 1024 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    let remaining = deadline.saturating_duration_since(Instant::now());
    producer
        .flush(remaining)
        .map_err(|e| anyhow!("flush did not finish before the phase deadline: {e}"))?;
    Ok(())
}

fn setup_producer(spec: &ProduceSpec, progress: &Arc<Progress>) -> Result<BaseProducer<Ctx>> {
    // Deliveries that outlive the phase timeout fail instead of hanging the bench.
    let message_timeout_ms = spec.timeout.as_millis().clamp(1000, 600_000).to_string();
    let mut cfg = ClientConfig::new();
    apply_tls(&mut cfg, spec.ssl_ca.as_deref());
    let producer: BaseProducer<Ctx> = cfg
        .set("bootstrap.servers", &spec.bootstrap)
        .set("acks", spec.acks.config_value())
        .set("enable.idempotence", "false")
        .set("compression.type", "none")
        .set("linger.ms", "5")
        // ~1 MB batches, just under the broker's default max.message.bytes (1048588).
        .set("batch.size", "1000000")
        .set("batch.num.messages", "1000000")
        // Large enough that the queue never throttles the producer on the runs we size.
        .set("queue.buffering.max.messages", "2000000")
        .set("queue.buffering.max.kbytes", "2097151")
        .set("message.timeout.ms", &message_timeout_ms)
        .create_with_context(Ctx(Arc::clone(progress)))
        .context("creating the producer")?;
    producer
        .client()
        .fetch_metadata(Some(&spec.topic), Duration::from_secs(10))
        .with_context(|| format!("fetching metadata for {}", spec.topic))?;
    Ok(producer)
}

/// Incompressible-looking payload bytes (xorshift), so compression settings elsewhere cannot
/// flatter the numbers.
fn payload(size: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn payload_has_the_requested_size_and_varies() {
        let p = payload(4096);
        assert_eq!(p.len(), 4096);
        let distinct: std::collections::HashSet<u8> = p.iter().copied().collect();
        assert!(distinct.len() > 200, "{}", distinct.len());
    }
}
