//! Keyed workload for the compaction benchmark: every key written `rounds` times, round by
//! round, then optionally `hot_rounds` more rounds over only the first `hot_keys` keys (a few
//! hot keys updated over a large cold table), with values that say which key and round they belong to; a producer that records
//! the offset of every key's last acknowledged write; and a verifier that reads the partition
//! from offset 0 and checks that each key's latest value is exactly that write.
//!
//! Owns: [`Workload`] (key and value encoding), [`produce`], [`verify`].
//!
//! Value format (little-endian): key index u64, round u32, then filler bytes that are the
//! same for every record (a fixed xorshift sequence), so a value is checked byte for byte
//! without storing it.
//!
//! Thread-safety: single-threaded driver; the producer's delivery callbacks run inside
//! `poll()` on the same thread and update state behind an uncontended `Mutex`. Writes nothing
//! to disk.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

/// Bytes of the value header (key index u64 + round u32).
const HEADER: usize = 12;
/// Smallest value that holds the header and some filler.
pub const MIN_VALUE: usize = 16;

/// The records of one compaction run.
#[derive(Debug, Clone)]
pub struct Workload {
    pub keys: u64,
    pub rounds: u32,
    /// Keys `0..hot_keys` are written `hot_rounds` more times after the `rounds` rounds.
    pub hot_keys: u64,
    pub hot_rounds: u32,
    /// Pause after each hot round (serving delivery reports meanwhile): a steady stream of
    /// updates instead of a burst.
    pub hot_pause: Duration,
    pub value_size: usize,
    filler: Vec<u8>,
}

impl Workload {
    /// `value_size` must be at least [`MIN_VALUE`] (checked by the caller's plan).
    pub fn new(keys: u64, rounds: u32, value_size: usize) -> Workload {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let filler = (0..value_size.max(MIN_VALUE))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        Workload {
            keys,
            rounds,
            hot_keys: 0,
            hot_rounds: 0,
            hot_pause: Duration::ZERO,
            value_size: value_size.max(MIN_VALUE),
            filler,
        }
    }

    /// Adds `hot_rounds` rounds over keys `0..hot_keys` (at most `keys`) after the others.
    pub fn with_hot(mut self, hot_keys: u64, hot_rounds: u32) -> Workload {
        self.hot_keys = hot_keys.min(self.keys);
        self.hot_rounds = hot_rounds;
        self
    }

    /// Pauses `pause` after each hot round.
    pub fn with_hot_pause(mut self, pause: Duration) -> Workload {
        self.hot_pause = pause;
        self
    }

    /// Every round, the hot ones included.
    pub fn total_rounds(&self) -> u32 {
        self.rounds.saturating_add(self.hot_rounds)
    }

    /// Keys written in round `round`.
    fn keys_in_round(&self, round: u32) -> u64 {
        if round < self.rounds {
            self.keys
        } else {
            self.hot_keys
        }
    }

    /// Key bytes of key `k`: fixed width, so every record has the same size.
    pub fn key(k: u64) -> String {
        format!("key-{k:010}")
    }

    pub fn key_len() -> usize {
        Self::key(0).len()
    }

    /// Key + value bytes of one record.
    pub fn record_bytes(&self) -> u64 {
        (Self::key_len() + self.value_size) as u64
    }

    /// Key + value bytes of the whole workload.
    pub fn total_bytes(&self) -> u64 {
        (self.keys * u64::from(self.rounds) + self.hot_keys * u64::from(self.hot_rounds))
            * self.record_bytes()
    }

    /// Key + value bytes of the latest write of every key.
    pub fn live_bytes(&self) -> u64 {
        self.keys * self.record_bytes()
    }

    fn value_into(&self, k: u64, round: u32, buf: &mut Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(&k.to_le_bytes());
        buf.extend_from_slice(&round.to_le_bytes());
        buf.extend_from_slice(&self.filler[HEADER..self.value_size]);
    }

    /// (key index, round) of a value this workload wrote; `None` if the bytes differ in any
    /// way from what was written.
    fn decode_value(&self, v: &[u8]) -> Option<(u64, u32)> {
        if v.len() != self.value_size || v[HEADER..] != self.filler[HEADER..self.value_size] {
            return None;
        }
        let k = u64::from_le_bytes(v.get(..8)?.try_into().ok()?);
        let r = u32::from_le_bytes(v.get(8..HEADER)?.try_into().ok()?);
        (k < self.keys && r < self.total_rounds()).then_some((k, r))
    }
}

/// Index of key `k` parsed from its bytes.
fn decode_key(key: &[u8]) -> Option<u64> {
    std::str::from_utf8(key)
        .ok()?
        .strip_prefix("key-")?
        .parse()
        .ok()
}

/// The latest acknowledged write of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastWrite {
    pub offset: i64,
    pub round: u32,
}

/// What [`produce`] wrote.
#[derive(Debug)]
pub struct Produced {
    pub records: u64,
    pub bytes: u64,
    /// First send to last delivery report.
    pub secs: f64,
    /// When the last delivery report arrived: the "last write" the clean time counts from.
    pub last_write: Instant,
    /// Per key index, its highest acknowledged offset (what a reader must see last).
    pub latest: Vec<LastWrite>,
}

struct Deliveries {
    delivered: u64,
    failed: u64,
    first_error: Option<String>,
    last_at: Option<Instant>,
    latest: Vec<Option<LastWrite>>,
    rounds: u64,
}

struct Ctx(Arc<Mutex<Deliveries>>);

impl ClientContext for Ctx {}

impl ProducerContext for Ctx {
    /// `key index * rounds + round`.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, tag: usize) {
        let Ok(mut d) = self.0.lock() else { return };
        match result {
            Ok(msg) => {
                d.delivered += 1;
                d.last_at = Some(Instant::now());
                let (k, round) = (tag as u64 / d.rounds, (tag as u64 % d.rounds) as u32);
                let offset = msg.offset();
                if let Some(slot) = d.latest.get_mut(k as usize) {
                    if slot.is_none_or(|w| w.offset < offset) {
                        *slot = Some(LastWrite { offset, round });
                    }
                }
            }
            Err((e, _)) => {
                d.failed += 1;
                d.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// Writes the workload to partition 0 of `topic` (acks=1, round by round, keys in order) and
/// waits for every delivery report. Fails if any record is not acknowledged by `deadline`.
pub fn produce(bootstrap: &str, topic: &str, w: &Workload, deadline: Instant) -> Result<Produced> {
    let rounds = u64::from(w.total_rounds());
    if w.keys
        .checked_mul(rounds)
        .is_none_or(|n| n > usize::MAX as u64)
    {
        bail!(
            "{} keys x {} rounds does not fit a delivery tag",
            w.keys,
            w.rounds
        );
    }
    let state = Arc::new(Mutex::new(Deliveries {
        delivered: 0,
        failed: 0,
        first_error: None,
        last_at: None,
        latest: vec![None; w.keys as usize],
        rounds,
    }));
    let timeout = deadline.saturating_duration_since(Instant::now());
    let producer: BaseProducer<Ctx> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "1")
        .set("enable.idempotence", "false")
        .set("compression.type", "none")
        .set("linger.ms", "5")
        .set("batch.size", "1000000")
        .set("batch.num.messages", "1000000")
        .set("queue.buffering.max.messages", "2000000")
        .set("queue.buffering.max.kbytes", "2097151")
        .set(
            "message.timeout.ms",
            timeout.as_millis().clamp(1000, 600_000).to_string(),
        )
        .create_with_context(Ctx(Arc::clone(&state)))
        .context("creating the keyed producer")?;
    producer
        .client()
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .with_context(|| format!("fetching metadata for {topic}"))?;

    let start = Instant::now();
    let mut value = Vec::with_capacity(w.value_size);
    let mut sent = 0u64;
    for round in 0..w.total_rounds() {
        for k in 0..w.keys_in_round(round) {
            let key = Workload::key(k);
            w.value_into(k, round, &mut value);
            let tag = (k * rounds + u64::from(round)) as usize;
            loop {
                let record = BaseRecord::with_opaque_to(topic, tag)
                    .partition(0)
                    .key(key.as_bytes())
                    .payload(value.as_slice());
                match producer.send(record) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                        producer.poll(Duration::from_millis(5));
                        if Instant::now() > deadline {
                            bail!("producer queue still full at the deadline");
                        }
                    }
                    Err((e, _)) => bail!("send to {topic}/0 failed: {e}"),
                }
            }
            sent += 1;
            if sent % 1024 == 0 {
                producer.poll(Duration::ZERO);
            }
        }
        if round >= w.rounds && !w.hot_pause.is_zero() {
            let until = Instant::now() + w.hot_pause;
            while let Some(left) = until.checked_duration_since(Instant::now()) {
                producer.poll(left);
            }
        }
    }
    producer
        .flush(deadline.saturating_duration_since(Instant::now()))
        .map_err(|e| anyhow!("flush did not finish before the deadline: {e}"))?;

    let d = state
        .lock()
        .map_err(|_| anyhow!("delivery state poisoned"))?;
    if d.failed > 0 || d.delivered != sent {
        bail!(
            "{} of {sent} records acknowledged, {} failed (first error: {})",
            d.delivered,
            d.failed,
            d.first_error.as_deref().unwrap_or("none reported")
        );
    }
    let last_write = d.last_at.unwrap_or(start);
    let latest = d
        .latest
        .iter()
        .enumerate()
        .map(|(k, w)| w.ok_or_else(|| anyhow!("no acknowledged write for key {k}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Produced {
        records: sent,
        bytes: sent * w.record_bytes(),
        secs: last_write.duration_since(start).as_secs_f64(),
        last_write,
        latest,
    })
}

/// What [`verify`] read.
#[derive(Debug, Clone, Copy)]
pub struct Verified {
    pub records_read: u64,
    /// Largest number of records of one key found below `active_base`.
    pub max_copies_below_active: u32,
}

/// A consumer (no commits) for reading partition 0 of `topic` from offset 0, the partition's
/// high watermark now, and the assignment to give it when the reading starts.
pub fn partition0_reader(
    bootstrap: &str,
    group: &str,
    topic: &str,
) -> Result<(BaseConsumer, i64, TopicPartitionList)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "false")
        .create()
        .with_context(|| format!("creating the consumer of group {group}"))?;
    let (_, high) = consumer
        .fetch_watermarks(topic, 0, Duration::from_secs(10))
        .with_context(|| format!("reading the watermarks of {topic}/0"))?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(0))
        .context("building the assignment")?;
    Ok((consumer, high, tpl))
}

/// Reads partition 0 of `topic` from offset 0 to its high watermark and checks that every
/// record is intact and that each key's last record is the write `produced.latest` names.
pub fn verify(
    bootstrap: &str,
    topic: &str,
    w: &Workload,
    produced: &Produced,
    active_base: i64,
    deadline: Instant,
) -> Result<Verified> {
    let (consumer, high, tpl) = partition0_reader(bootstrap, "skiff-bench-verify", topic)?;
    consumer.assign(&tpl).context("assign()")?;

    let mut last: Vec<Option<LastWrite>> = vec![None; w.keys as usize];
    let mut below = vec![0u32; w.keys as usize];
    let mut records = 0u64;
    let mut next = 0i64;
    let mut errors = 0u32;
    while next < high {
        if Instant::now() > deadline {
            bail!("verify: read up to offset {next} of {high} before the deadline");
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let offset = m.offset();
                if offset < next {
                    bail!("verify: offset {offset} after {next}: offsets went backwards");
                }
                next = offset + 1;
                records += 1;
                let k = m
                    .key()
                    .and_then(decode_key)
                    .filter(|&k| k < w.keys)
                    .ok_or_else(|| anyhow!("verify: offset {offset} has a foreign key"))?;
                let (vk, round) = m
                    .payload()
                    .and_then(|v| w.decode_value(v))
                    .filter(|&(vk, _)| vk == k)
                    .ok_or_else(|| {
                        anyhow!("verify: offset {offset} (key {k}) has a corrupt value")
                    })?;
                last[vk as usize] = Some(LastWrite { offset, round });
                if offset < active_base {
                    below[vk as usize] += 1;
                }
            }
            Some(Err(e)) => {
                errors += 1;
                if errors <= 3 {
                    eprintln!("  verify consumer error (continuing): {e}");
                }
            }
            None => {}
        }
    }
    let mut wrong = Vec::new();
    for (k, (seen, want)) in last.iter().zip(&produced.latest).enumerate() {
        if *seen != Some(*want) {
            wrong.push(format!("key {k}: read {seen:?}, last write {want:?}"));
        }
    }
    if !wrong.is_empty() {
        bail!(
            "verify: {} of {} keys do not end with their last write, e.g. {}",
            wrong.len(),
            w.keys,
            wrong[..wrong.len().min(3)].join("; ")
        );
    }
    Ok(Verified {
        records_read: records,
        max_copies_below_active: below.iter().copied().max().unwrap_or(0),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_any_change_is_caught() {
        let w = Workload::new(100, 10, 64);
        let mut v = Vec::new();
        w.value_into(42, 7, &mut v);
        assert_eq!(v.len(), 64);
        assert_eq!(w.decode_value(&v), Some((42, 7)));
        let mut bad = v.clone();
        bad[40] ^= 1;
        assert_eq!(w.decode_value(&bad), None);
        assert_eq!(w.decode_value(&v[..63]), None);
        w.value_into(100, 0, &mut v);
        assert_eq!(w.decode_value(&v), None, "key out of range");
        let hot = Workload::new(100, 10, 64).with_hot(5, 20);
        hot.value_into(3, 29, &mut v);
        assert_eq!(hot.decode_value(&v), Some((3, 29)));
        assert_eq!(
            (
                hot.total_rounds(),
                hot.keys_in_round(9),
                hot.keys_in_round(10)
            ),
            (30, 100, 5)
        );
        assert_eq!(hot.total_bytes(), (100 * 10 + 5 * 20) * hot.record_bytes());
    }

    #[test]
    fn keys_have_fixed_width_and_parse_back() {
        assert_eq!(Workload::key(7), "key-0000000007");
        assert_eq!(decode_key(Workload::key(99_999).as_bytes()), Some(99_999));
        assert_eq!(decode_key(b"other"), None);
        let w = Workload::new(1000, 10, 186);
        assert_eq!(w.record_bytes(), 200);
        assert_eq!(w.total_bytes(), 2_000_000);
        assert_eq!(w.live_bytes(), 200_000);
    }
}
