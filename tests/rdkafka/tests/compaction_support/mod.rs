//! Helpers for the compaction acceptance suite (docs/compaction.md §6): the test broker profile,
//! the default compacted topic, one-record raw produces, `roll()`, bounded `await` polling and
//! `snapshot()` over the raw client.
//!
//! Every wait has a deadline and fails naming what it last saw. Each test owns its broker and
//! raw connection; nothing here is shared between threads. No files of its own.
#![allow(dead_code)] // each test uses a subset

use std::collections::BTreeMap;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};
use skiff_e2e::raw::{RawClient, RawRecord};
use skiff_e2e::{unique_topic, Broker};
use skiff_records::{BatchBuilder, Compression};

/// §6 test broker profile (`log.initial.task.delay.ms` does not exist in Skiff: its cleaner and
/// retention tasks start at once).
pub const PROFILE: &[(&str, &str)] = &[
    ("log.cleaner.backoff.ms", "100"),
    ("log.retention.check.interval.ms", "500"),
    ("log.cleaner.threads", "2"),
    ("log.cleaner.enable", "true"),
];

/// §6 default test topic.
pub const DEFAULT_TOPIC: &[(&str, &str)] = &[
    ("cleanup.policy", "compact"),
    ("segment.ms", "100"),
    ("min.cleanable.dirty.ratio", "0.01"),
    ("delete.retention.ms", "1000"),
    ("file.delete.delay.ms", "0"),
    ("segment.bytes", "1048576"),
];

/// `segment.ms` of the default topic plus the 50 ms margin of §6's `roll()`.
pub const ROLL_WAIT: Duration = Duration::from_millis(150);

/// Default bound for `await`.
pub const AWAIT: Duration = Duration::from_secs(15);

pub const ROLL_KEY: &[u8] = b"~roll";

/// A broker with the §6 profile (plus `extra`, which wins) and a raw client to it.
pub struct Env {
    pub broker: Broker,
    pub raw: RawClient,
}

impl Env {
    pub fn start(extra: &[(&str, &str)]) -> Env {
        let mut props: Vec<(&str, &str)> = PROFILE
            .iter()
            .filter(|(k, _)| !extra.iter().any(|(ek, _)| ek == k))
            .copied()
            .collect();
        props.extend_from_slice(extra);
        let broker = Broker::start_with(&props).expect("broker starts");
        let raw = RawClient::connect(&broker.bootstrap()).expect("raw connect");
        Env { broker, raw }
    }

    /// Reconnects the raw client (after a restart).
    pub fn reconnect(&mut self) {
        self.raw = RawClient::connect(&self.broker.bootstrap()).expect("raw reconnect");
    }

    /// Creates a 1-partition topic with the default configs overridden by `overrides`.
    pub fn topic(&mut self, prefix: &str, overrides: &[(&str, &str)]) -> String {
        let name = unique_topic(prefix);
        let mut cfg: Vec<(&str, &str)> = DEFAULT_TOPIC
            .iter()
            .filter(|(k, _)| !overrides.iter().any(|(ok, _)| ok == k))
            .copied()
            .collect();
        cfg.extend_from_slice(overrides);
        let (err, msg) = self.raw.create_topic(&name, 1, &cfg).expect("CreateTopics");
        assert_eq!(err, 0, "CreateTopics {name} {cfg:?}: {msg:?}");
        name
    }

    /// Produces one record (CreateTime now) and returns its offset.
    pub fn put(&mut self, topic: &str, key: Option<&[u8]>, value: Option<&[u8]>) -> i64 {
        self.put_at(topic, key, value, now_ms())
    }

    pub fn put_at(
        &mut self,
        topic: &str,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        ts: i64,
    ) -> i64 {
        self.raw
            .produce_ok(topic, 0, batch(&[(key, value)], ts))
            .expect("produce")
    }

    /// Produces `key=value` string pairs one record per batch; returns their offsets.
    pub fn put_all(&mut self, topic: &str, kvs: &[(&str, &str)]) -> Vec<i64> {
        kvs.iter()
            .map(|(k, v)| self.put(topic, Some(k.as_bytes()), Some(v.as_bytes())))
            .collect()
    }

    /// §6 `roll()`: sleep `segment.ms`+50 ms, then append `~roll` (CreateTime now).
    pub fn roll(&mut self, topic: &str) -> i64 {
        sleep(ROLL_WAIT);
        self.put(topic, Some(ROLL_KEY), Some(b"r"))
    }

    /// Every record from the log start (EARLIEST): §6's "fetch from 0", which is the same
    /// offset on compact-only topics (compaction never moves the log start; s10–s14 check
    /// that), and what a consumer with `auto.offset.reset=earliest` reads after retention.
    ///
    /// Retention may move the log start between EARLIEST and the fetch; the fetch then answers
    /// OFFSET_OUT_OF_RANGE and, like such a consumer, we look up EARLIEST again (bounded).
    pub fn read(&mut self, topic: &str) -> Vec<RawRecord> {
        let mut attempt = 0;
        loop {
            let start = self
                .raw
                .offset(topic, 0, skiff_e2e::raw::EARLIEST)
                .expect("EARLIEST");
            match self.raw.read_all(topic, 0, start) {
                Ok(records) => return records,
                Err(e) => {
                    let moved = self
                        .raw
                        .offset(topic, 0, skiff_e2e::raw::EARLIEST)
                        .expect("EARLIEST")
                        > start;
                    attempt += 1;
                    assert!(
                        moved && attempt < 5,
                        "fetch from the log start {start}: {e:#}"
                    );
                }
            }
        }
    }

    /// Writes with `segment.ms` at an hour (nothing rolls, so nothing is cleaned while the
    /// test writes: Skiff rolls idle segments on the wall clock), then sets it back to the
    /// default topic's 100 ms. Used where a pre-cleaning snapshot is needed.
    pub fn hold_rolls(&mut self, topic: &str, hold: bool) {
        let v = if hold { "3600000" } else { "100" };
        let (e, m) = self
            .raw
            .alter_topic(topic, &[("segment.ms", Some(v))])
            .expect("IncrementalAlterConfigs");
        assert_eq!(e, 0, "setting segment.ms={v}: {m:?}");
    }

    /// §6 `snapshot()`: logStartOffset .. HW.
    pub fn snapshot(&mut self, topic: &str) -> Vec<RawRecord> {
        let start = self
            .raw
            .offset(topic, 0, skiff_e2e::raw::EARLIEST)
            .expect("EARLIEST");
        self.raw.read_all(topic, 0, start).expect("snapshot fetch")
    }

    /// Bytes of all batches from the log start: the stand-in for `sizeOf()` (DescribeLogDirs
    /// is not implemented yet); counts the same record batches the partition stores.
    pub fn stored_bytes(&mut self, topic: &str) -> usize {
        let start = self
            .raw
            .offset(topic, 0, skiff_e2e::raw::EARLIEST)
            .expect("EARLIEST");
        self.raw
            .fetch_all_batches(topic, 0, start)
            .expect("fetch batches")
            .iter()
            .map(|b| b.size)
            .sum()
    }

    /// §6 `await(pred)`: polls a fetch from 0 until `pred` holds; panics after `timeout`
    /// with the last records seen.
    pub fn await_records(
        &mut self,
        topic: &str,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&[RawRecord]) -> bool,
    ) -> Vec<RawRecord> {
        let deadline = Instant::now() + timeout;
        loop {
            let recs = self.read(topic);
            if pred(&recs) {
                return recs;
            }
            if Instant::now() > deadline {
                panic!(
                    "{topic}: not within {timeout:?}: {what}; last fetch from 0: {}",
                    show(&recs)
                );
            }
            sleep(Duration::from_millis(50));
        }
    }

    /// Like [`Env::await_records`] but rolls (appends `~roll`) between polls, to give a
    /// cleaner that only runs on new dirty data something to do.
    pub fn await_rolling(
        &mut self,
        topic: &str,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&[RawRecord]) -> bool,
    ) -> Vec<RawRecord> {
        let deadline = Instant::now() + timeout;
        loop {
            let recs = self.read(topic);
            if pred(&recs) {
                return recs;
            }
            if Instant::now() > deadline {
                panic!(
                    "{topic}: not within {timeout:?} (rolling): {what}; last fetch from 0: {}",
                    show(&recs)
                );
            }
            self.roll(topic);
            sleep(Duration::from_millis(150));
        }
    }
}

/// One record to build: key and value, `None` meaning null.
pub type Kv<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// key → (offset, value) of a key's last occurrence.
pub type Latest = BTreeMap<Option<Vec<u8>>, (i64, Option<Vec<u8>>)>;

/// One uncompressed batch, all records at timestamp `ts`.
pub fn batch(records: &[Kv<'_>], ts: i64) -> Vec<u8> {
    batch_with(records, ts, Compression::None)
}

pub fn batch_with(records: &[Kv<'_>], ts: i64, codec: Compression) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, codec);
    for (k, v) in records {
        b.push(ts, *k, *v, &[]);
    }
    b.build().expect("batch builds")
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Records of one key, in log order.
pub fn of_key<'a>(recs: &'a [RawRecord], key: &[u8]) -> Vec<&'a RawRecord> {
    recs.iter()
        .filter(|r| r.key.as_deref() == Some(key))
        .collect()
}

/// Records without the `~roll` helper records.
pub fn user(recs: &[RawRecord]) -> Vec<RawRecord> {
    recs.iter()
        .filter(|r| r.key.as_deref() != Some(ROLL_KEY))
        .cloned()
        .collect()
}

/// key → (offset, value) of the last occurrence of each key.
pub fn latest(recs: &[RawRecord]) -> Latest {
    let mut m = BTreeMap::new();
    for r in recs {
        m.insert(r.key.clone(), (r.offset, r.value.clone()));
    }
    m
}

/// Compact rendering of records for failure messages (first 40).
pub fn show(recs: &[RawRecord]) -> String {
    let s = |b: &Option<Vec<u8>>| match b {
        None => "null".to_string(),
        Some(v) => format!("{:?}", String::from_utf8_lossy(v)),
    };
    let mut out: Vec<String> = recs
        .iter()
        .take(40)
        .map(|r| format!("{}:{}={}", r.offset, s(&r.key), s(&r.value)))
        .collect();
    if recs.len() > 40 {
        out.push(format!("... ({} records)", recs.len()));
    }
    format!("[{}]", out.join(", "))
}

/// Fails unless offsets strictly increase.
pub fn check_ascending(recs: &[RawRecord]) -> Result<()> {
    for w in recs.windows(2) {
        if w[1].offset <= w[0].offset {
            bail!(
                "offsets not ascending: {} then {}",
                w[0].offset,
                w[1].offset
            );
        }
    }
    Ok(())
}

/// Every key `key-i` exactly once with value "2".
pub fn fully_compacted(recs: &[RawRecord], n: usize) -> bool {
    let u = user(recs);
    u.len() == n && u.iter().all(|r| r.value.as_deref() == Some(b"2"))
}
