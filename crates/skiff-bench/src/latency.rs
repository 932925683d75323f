//! Latency at a fixed rate: produce latency (send → delivery report) and end-to-end latency
//! (send → a consumer receives the record), both as percentiles.
//!
//! Owns: [`run`]. One paced producer (librdkafka, `linger.ms=1`) sends `rate` records per
//! second for `secs` seconds to partition 0 of a fresh topic; every payload starts with the
//! send time (ns since the phase's zero point, big-endian u64), read back in the delivery
//! callback and by one consumer (`assign()` at offset 0, `fetch.wait.max.ms=10`) running on
//! its own thread. The first 10% of the records (warm-up: connections, first batches) are
//! left out of the percentiles.
//!
//! Thread-safety: the producer's delivery callbacks run on the producer thread (inside
//! `poll`), latencies go to an uncontended `Mutex<Vec>`; the consumer thread owns its own
//! vector and returns it on join. Writes nothing to disk.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use crate::produce::Acks;

/// One fixed-rate phase.
#[derive(Debug, Clone)]
pub struct LatencySpec {
    pub bootstrap: String,
    pub topic: String,
    /// Records per second.
    pub rate: f64,
    pub secs: f64,
    /// Record size (at least 8: the timestamp).
    pub size: usize,
    pub acks: Acks,
}

/// Percentiles in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
}

/// What a fixed-rate phase measured.
#[derive(Debug, Clone, Copy)]
pub struct LatencyResult {
    pub produce: Percentiles,
    pub e2e: Percentiles,
    /// Rate actually achieved by the sender (records/s).
    pub achieved_rate: f64,
}

/// Percentiles of latencies given in ns; `None` when empty. Nearest-rank.
pub fn percentiles(ns: &mut [u64]) -> Option<Percentiles> {
    if ns.is_empty() {
        return None;
    }
    ns.sort_unstable();
    let at = |p: f64| {
        let rank = (p * ns.len() as f64).ceil() as usize;
        ns[rank.clamp(1, ns.len()) - 1] as f64 / 1e6
    };
    Some(Percentiles {
        p50: at(0.50),
        p99: at(0.99),
        p999: at(0.999),
    })
}

struct Ctx {
    t0: Instant,
    produce_ns: Mutex<Vec<u64>>,
    errors: Mutex<Option<String>>,
}

impl Ctx {
    fn on_delivery(&self, result: &DeliveryResult<'_>) {
        match result {
            Ok(msg) => {
                if let Some(sent) = msg.payload().and_then(read_stamp) {
                    let now = ns_since(self.t0);
                    if let Ok(mut v) = self.produce_ns.lock() {
                        v.push(now.saturating_sub(sent));
                    }
                }
            }
            Err((e, _)) => {
                if let Ok(mut slot) = self.errors.lock() {
                    slot.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
}

fn ns_since(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn read_stamp(payload: &[u8]) -> Option<u64> {
    let b: [u8; 8] = payload.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

/// Runs one fixed-rate phase against a fresh 1-partition topic.
pub fn run(spec: &LatencySpec) -> Result<LatencyResult> {
    if spec.size < 8 || spec.rate <= 0.0 || spec.secs <= 0.0 {
        bail!("latency phase needs size >= 8, rate > 0 and secs > 0");
    }
    let total = (spec.rate * spec.secs).ceil() as u64;
    let warmup = total / 10;
    let t0 = Instant::now();
    let timeout = Duration::from_secs_f64(spec.secs + 60.0);
    let stop = Arc::new(AtomicBool::new(false));

    let consumer = consumer(spec)?;
    let ready = Arc::new(AtomicBool::new(false));
    let cons = {
        let (stop, ready) = (Arc::clone(&stop), Arc::clone(&ready));
        thread::Builder::new()
            .name("bench-latency-consumer".into())
            .spawn(move || consume_loop(&consumer, t0, total, &stop, &ready, timeout))
            .context("spawning the consumer thread")?
    };
    // Let the consumer connect and send its first fetch before the clock matters.
    let ready_deadline = Instant::now() + Duration::from_secs(15);
    while !ready.load(Ordering::Relaxed) && Instant::now() < ready_deadline {
        thread::sleep(Duration::from_millis(10));
    }

    let sent = produce_paced(spec, t0, total);
    if sent.is_err() {
        stop.store(true, Ordering::Relaxed);
    }
    let e2e = cons
        .join()
        .map_err(|_| anyhow!("the consumer thread panicked"))?;
    let (produce_ns, send_secs) = sent?;
    let mut e2e = e2e?;
    let mut produce_ns = produce_ns;
    if produce_ns.len() as u64 != total {
        bail!("{} of {total} records were acknowledged", produce_ns.len());
    }
    // Records arrive in send order on one partition: drop the warm-up by position.
    let skip = usize::try_from(warmup).unwrap_or(0);
    let mut produce_kept = produce_ns.split_off(skip.min(produce_ns.len()));
    let mut e2e_kept = e2e.split_off(skip.min(e2e.len()));
    Ok(LatencyResult {
        produce: percentiles(&mut produce_kept).ok_or_else(|| anyhow!("no produce samples"))?,
        e2e: percentiles(&mut e2e_kept).ok_or_else(|| anyhow!("no end-to-end samples"))?,
        achieved_rate: total as f64 / send_secs.max(1e-9),
    })
}

fn consumer(spec: &LatencySpec) -> Result<BaseConsumer> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &spec.bootstrap)
        .set("group.id", "skiff-bench-latency")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("fetch.wait.max.ms", "10")
        .create()
        .context("creating the latency consumer")?;
    consumer
        .fetch_metadata(Some(&spec.topic), Duration::from_secs(10))
        .with_context(|| format!("fetching metadata for {}", spec.topic))?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&spec.topic, 0, Offset::Offset(0))
        .context("building the assignment")?;
    consumer.assign(&tpl).context("assign()")?;
    Ok(consumer)
}

/// Receives `total` records (or fails at the deadline); returns end-to-end latencies in ns.
fn consume_loop(
    consumer: &BaseConsumer,
    t0: Instant,
    total: u64,
    stop: &AtomicBool,
    ready: &AtomicBool,
    timeout: Duration,
) -> Result<Vec<u64>> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut polls = 0u32;
    while (out.len() as u64) < total {
        if stop.load(Ordering::Relaxed) {
            bail!("stopped: the producer failed");
        }
        if Instant::now() > deadline {
            bail!(
                "received {} of {total} records before the deadline",
                out.len()
            );
        }
        let msg = consumer.poll(Duration::from_millis(20));
        polls += 1;
        if polls == 10 {
            ready.store(true, Ordering::Relaxed);
        }
        if let Some(Ok(m)) = msg {
            if let Some(sent) = m.payload().and_then(read_stamp) {
                out.push(ns_since(t0).saturating_sub(sent));
            }
        }
    }
    Ok(out)
}

/// Sends `total` records at the spec's rate; returns produce latencies (ns) and send time.
fn produce_paced(spec: &LatencySpec, t0: Instant, total: u64) -> Result<(Vec<u64>, f64)> {
    let ctx = Arc::new(Ctx {
        t0,
        produce_ns: Mutex::new(Vec::with_capacity(usize::try_from(total).unwrap_or(0))),
        errors: Mutex::new(None),
    });
    let producer: BaseProducer<ArcCtx> = ClientConfig::new()
        .set("bootstrap.servers", &spec.bootstrap)
        .set("acks", if spec.acks == Acks::All { "all" } else { "1" })
        .set("enable.idempotence", "false")
        .set("compression.type", "none")
        .set("linger.ms", "1")
        .set("message.timeout.ms", "60000")
        .create_with_context(ArcCtx(Arc::clone(&ctx)))
        .context("creating the latency producer")?;
    producer
        .client()
        .fetch_metadata(Some(&spec.topic), Duration::from_secs(10))
        .with_context(|| format!("fetching metadata for {}", spec.topic))?;
    let mut payload = vec![0x5au8; spec.size];
    let start = Instant::now();
    let interval = 1.0 / spec.rate;
    for i in 0..total {
        let due = start + Duration::from_secs_f64(i as f64 * interval);
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            producer.poll((due - now).min(Duration::from_millis(1)));
        }
        payload[..8].copy_from_slice(&ns_since(t0).to_be_bytes());
        loop {
            let rec = BaseRecord::<(), [u8]>::to(&spec.topic)
                .partition(0)
                .payload(&payload);
            match producer.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    producer.poll(Duration::from_millis(1));
                }
                Err((e, _)) => bail!("send failed: {e}"),
            }
        }
        if i % 64 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    let send_secs = start.elapsed().as_secs_f64();
    producer
        .flush(Duration::from_secs(60))
        .map_err(|e| anyhow!("flush: {e}"))?;
    if let Ok(slot) = ctx.errors.lock() {
        if let Some(e) = slot.as_ref() {
            bail!("delivery failed: {e}");
        }
    }
    let v = ctx
        .produce_ns
        .lock()
        .map_err(|_| anyhow!("latency vector poisoned"))?
        .clone();
    Ok((v, send_secs))
}

/// The context handed to librdkafka; shares [`Ctx`] with the caller.
struct ArcCtx(Arc<Ctx>);

impl ClientContext for ArcCtx {}

impl ProducerContext for ArcCtx {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        self.0.on_delivery(result);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_in_ms() {
        let mut v: Vec<u64> = (1..=1000).map(|i| i * 1_000_000).collect();
        let p = percentiles(&mut v).unwrap();
        assert_eq!((p.p50, p.p99, p.p999), (500.0, 990.0, 999.0));
        let mut one = vec![2_000_000];
        assert_eq!(percentiles(&mut one).unwrap().p999, 2.0);
        assert!(percentiles(&mut []).is_none());
    }

    #[test]
    fn stamps_round_trip() {
        let mut p = vec![0u8; 16];
        p[..8].copy_from_slice(&42u64.to_be_bytes());
        assert_eq!(read_stamp(&p), Some(42));
        assert_eq!(read_stamp(&[1, 2]), None);
    }
}
