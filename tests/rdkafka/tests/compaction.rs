//! Black-box compaction acceptance tests (COMPACTION.md §6, scenarios 1–27 and 33–42 that need
//! neither transactions nor idempotent producers), against the real `skiff` binary: produce
//! validation over the raw wire client, what readers see after cleaning (rdkafka consumer and
//! raw fetches), tombstone horizons, compaction lags, dirty ratio, retention, DeleteRecords,
//! live policy changes and kill -9 during cleaning.
//!
//! `sizeOf()` (DescribeLogDirs) is not available yet: where §6 compares sizes, the bytes of the
//! record batches fetched from the log start stand in for it.
//! Every wait is a bounded poll; fixed sleeps only where §6 asks that something does *not*
//! happen for a while.
#![allow(clippy::unwrap_used)]

mod compaction_support;

use std::thread::sleep;
use std::time::{Duration, Instant};

use compaction_support::*;
use rdkafka::admin::{AlterConfig, ConfigSource, ResourceSpecifier};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::raw::{magic1_message, EARLIEST, LATEST};
use skiff_records::{BatchBuilder, Compression};

const INVALID_RECORD: i16 = 87;
const CORRUPT_MESSAGE: i16 = 2;
const MESSAGE_TOO_LARGE: i16 = 10;
const RECORD_LIST_TOO_LARGE: i16 = 18;
const INVALID_TIMESTAMP: i16 = 32;
const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const POLICY_VIOLATION: i16 = 44;
const INVALID_CONFIG: i16 = 40;

fn rd_producer(env: &Env) -> BaseProducer {
    ClientConfig::new()
        .set("bootstrap.servers", env.broker.bootstrap())
        .set("linger.ms", "5")
        .set("message.timeout.ms", "20000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap()
}

fn rd_consumer(env: &Env) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", env.broker.bootstrap())
        .set("group.id", "skiff-e2e-compaction")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .unwrap()
}

/// Sends every `(key, value)` with an rdkafka BaseProducer and waits until all are delivered.
fn rd_send_all(p: &BaseProducer, topic: &str, kvs: impl Iterator<Item = (String, String)>) {
    for (k, v) in kvs {
        let mut rec = BaseRecord::to(topic).partition(0).key(&k).payload(&v);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((e, r)) => {
                    assert!(
                        matches!(
                            e.rdkafka_error_code(),
                            Some(rdkafka::types::RDKafkaErrorCode::QueueFull)
                        ),
                        "enqueue failed: {e}"
                    );
                    rec = r;
                    p.poll(Duration::from_millis(10));
                }
            }
        }
    }
    p.flush(Duration::from_secs(60))
        .expect("all records delivered");
}

// ---------------------------------------------------------------- produce validation (1–9)

#[test]
fn s01_keyless_record_rejected() {
    let mut env = Env::start(&[]);
    let t = env.topic("s01", &[]);
    let r = env
        .raw
        .produce(9, &t, 0, batch(&[(None, Some(b"v"))], now_ms()))
        .unwrap();
    assert_eq!(r.error_code, INVALID_RECORD, "{r:?}");
    assert_eq!(r.record_errors.len(), 1, "{r:?}");
    assert_eq!(r.record_errors[0].batch_index, 0);
    let msg = format!(
        "{:?} {:?}",
        r.record_errors[0].batch_index_error_message, r.error_message
    )
    .to_lowercase();
    assert!(
        msg.contains("key"),
        "error message should name the missing key: {msg}"
    );
    assert_eq!(env.raw.offset(&t, 0, LATEST).unwrap(), 0, "LEO unchanged");
}

#[test]
fn s02_whole_batch_rejected_with_indices() {
    let mut env = Env::start(&[]);
    let t = env.topic("s02", &[]);
    let b = batch(
        &[
            (Some(b"k1"), Some(b"a")),
            (None, Some(b"b")),
            (Some(b"k2"), Some(b"c")),
            (None, Some(b"d")),
        ],
        now_ms(),
    );
    let r = env.raw.produce(9, &t, 0, b).unwrap();
    assert_eq!(r.error_code, INVALID_RECORD, "{r:?}");
    let mut idx: Vec<i32> = r.record_errors.iter().map(|e| e.batch_index).collect();
    idx.sort_unstable();
    assert_eq!(idx, vec![1, 3], "record_errors {:?}", r.record_errors);
    assert_eq!(
        env.raw.offset(&t, 0, LATEST).unwrap(),
        0,
        "nothing appended"
    );
    assert!(env.read(&t).is_empty(), "not even k1 or k2");
}

#[test]
fn s03_compact_delete_requires_keys_delete_does_not() {
    let mut env = Env::start(&[]);
    let cd = env.topic("s03cd", &[("cleanup.policy", "compact,delete")]);
    let r = env
        .raw
        .produce(9, &cd, 0, batch(&[(None, Some(b"v"))], now_ms()))
        .unwrap();
    assert_eq!(r.error_code, INVALID_RECORD, "compact,delete: {r:?}");
    assert_eq!(env.raw.offset(&cd, 0, LATEST).unwrap(), 0);
    let d = env.topic("s03d", &[("cleanup.policy", "delete")]);
    let r = env
        .raw
        .produce(9, &d, 0, batch(&[(None, Some(b"v"))], now_ms()))
        .unwrap();
    assert_eq!(r.error_code, 0, "delete topic takes keyless records: {r:?}");
    assert_eq!(env.raw.offset(&d, 0, LATEST).unwrap(), 1);
}

#[test]
fn s04_tombstones_empty_keys_and_values_accepted() {
    let mut env = Env::start(&[]);
    let t = env.topic("s04", &[]);
    assert_eq!(env.put(&t, Some(b"k"), None), 0);
    assert_eq!(env.put(&t, Some(b""), Some(b"v")), 1);
    assert_eq!(env.put(&t, Some(b"k2"), Some(b"")), 2);
    let recs = env.read(&t);
    assert_eq!(recs.len(), 3, "{}", show(&recs));
    assert_eq!(
        (recs[0].key.as_deref(), recs[0].value.as_deref()),
        (Some(&b"k"[..]), None)
    );
    assert_eq!(
        (recs[1].key.as_deref(), recs[1].value.as_deref()),
        (Some(&b""[..]), Some(&b"v"[..]))
    );
    assert_eq!(
        (recs[2].key.as_deref(), recs[2].value.as_deref()),
        (Some(&b"k2"[..]), Some(&b""[..])),
        "empty value must stay non-null"
    );
}

#[test]
fn s05_bad_crc_rejected() {
    let mut env = Env::start(&[]);
    let t = env.topic("s05", &[]);
    let mut b = batch(&[(Some(b"k"), Some(b"value"))], now_ms());
    let last = b.len() - 1;
    b[last] ^= 0xFF;
    let r = env.raw.produce(9, &t, 0, b).unwrap();
    assert_eq!(r.error_code, CORRUPT_MESSAGE, "{r:?}");
    assert_eq!(env.raw.offset(&t, 0, LATEST).unwrap(), 0, "LEO unchanged");
}

#[test]
fn s06_batch_structure_checks() {
    let mut env = Env::start(&[]);
    let t = env.topic("s06", &[]);
    let now = now_ms();
    let mut failures = Vec::new();

    let mut two = batch(&[(Some(b"a"), Some(b"1"))], now);
    two.extend(batch(&[(Some(b"b"), Some(b"2"))], now));
    let r = env.raw.produce(9, &t, 0, two).unwrap();
    if r.error_code != INVALID_RECORD {
        failures.push(format!(
            "two batches in one request: got {} {:?}",
            r.error_code, r.error_message
        ));
    }

    let mut ctl = BatchBuilder::new(0, Compression::None).control(true);
    // A COMMIT marker: key = version 0, type 1; value = version 0, coordinator epoch 0.
    ctl.push(now, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0]), &[]);
    let r = env.raw.produce(9, &t, 0, ctl.build().unwrap()).unwrap();
    if r.error_code != INVALID_RECORD {
        failures.push(format!(
            "client control batch: got {} {:?}",
            r.error_code, r.error_message
        ));
    }

    let mut based = BatchBuilder::new(5, Compression::None);
    based.push(now, Some(b"k"), Some(b"v"), &[]);
    let r = env.raw.produce(9, &t, 0, based.build().unwrap()).unwrap();
    if r.error_code != INVALID_RECORD {
        failures.push(format!(
            "baseOffset 5: got {} {:?}",
            r.error_code, r.error_message
        ));
    }

    let r = env
        .raw
        .produce(9, &t, 0, magic1_message(now, b"k", b"v"))
        .unwrap();
    if r.error_code != INVALID_RECORD {
        failures.push(format!(
            "magic 1 in Produce v9: got {} {:?}",
            r.error_code, r.error_message
        ));
    }

    assert_eq!(
        env.raw.offset(&t, 0, LATEST).unwrap(),
        0,
        "nothing appended"
    );
    assert!(
        failures.is_empty(),
        "expected INVALID_RECORD (87): {failures:#?}"
    );
}

#[test]
fn s07_size_limits() {
    let mut env = Env::start(&[]);
    let t = env.topic("s07a", &[("max.message.bytes", "10000")]);
    let big = vec![b'x'; 20_000];
    let r = env
        .raw
        .produce(9, &t, 0, batch(&[(Some(b"k"), Some(&big))], now_ms()))
        .unwrap();
    assert_eq!(
        r.error_code, MESSAGE_TOO_LARGE,
        "20 KB into max.message.bytes=10000: {r:?}"
    );

    let t2 = env.topic(
        "s07b",
        &[
            ("segment.bytes", "1048576"),
            ("max.message.bytes", "4000000"),
        ],
    );
    let huge = vec![b'y'; 1_500_000];
    let r = env
        .raw
        .produce(9, &t2, 0, batch(&[(Some(b"k"), Some(&huge))], now_ms()))
        .unwrap();
    assert_eq!(
        r.error_code,
        RECORD_LIST_TOO_LARGE,
        "batch > segment.bytes: {:?}",
        (r.error_code, &r.error_message)
    );
    assert_eq!(env.raw.offset(&t2, 0, LATEST).unwrap(), 0);
}

#[test]
fn s08_timestamp_bounds() {
    let mut env = Env::start(&[]);
    let hour = 3_600_000;
    let after = env.topic("s08a", &[("message.timestamp.after.max.ms", "60000")]);
    let r = env
        .raw
        .produce(
            9,
            &after,
            0,
            batch(&[(Some(b"k"), Some(b"v"))], now_ms() + hour),
        )
        .unwrap();
    assert_eq!(r.error_code, INVALID_TIMESTAMP, "now+1h: {r:?}");
    let before = env.topic("s08b", &[("message.timestamp.before.max.ms", "60000")]);
    let r = env
        .raw
        .produce(
            9,
            &before,
            0,
            batch(&[(Some(b"k"), Some(b"v"))], now_ms() - hour),
        )
        .unwrap();
    assert_eq!(r.error_code, INVALID_TIMESTAMP, "now-1h: {r:?}");

    let lat = env.topic(
        "s08c",
        &[
            ("message.timestamp.type", "LogAppendTime"),
            ("message.timestamp.after.max.ms", "60000"),
            ("message.timestamp.before.max.ms", "60000"),
        ],
    );
    let t0 = now_ms();
    env.put_at(&lat, Some(b"k"), Some(b"future"), t0 + hour);
    env.put_at(&lat, Some(b"k"), Some(b"past"), t0 - hour);
    let t1 = now_ms();
    let batches = env.raw.fetch_all_batches(&lat, 0, 0).unwrap();
    let recs: Vec<_> = batches.iter().flat_map(|b| b.records.clone()).collect();
    assert_eq!(recs.len(), 2);
    for b in &batches {
        assert_eq!(
            b.header.timestamp_type(),
            skiff_records::TimestampType::LogAppendTime,
            "batch at {}",
            b.header.base_offset
        );
    }
    for r in &recs {
        assert!(
            (t0 - 1000..=t1 + 1000).contains(&r.timestamp),
            "broker time expected, got {} (now {t0}..{t1})",
            r.timestamp
        );
    }
}

const TWO: &[Kv<'static>] = &[(Some(b"a"), Some(b"1")), (Some(b"b"), Some(b"2"))];

#[test]
fn s09a_topic_codec_lz4_recompresses() {
    let mut env = Env::start(&[]);
    let lz4 = env.topic("s09a", &[("compression.type", "lz4")]);
    env.raw.produce_ok(&lz4, 0, batch(TWO, now_ms())).unwrap();
    let b = env.raw.fetch_all_batches(&lz4, 0, 0).unwrap();
    assert_eq!(b.len(), 1);
    let kv: Vec<_> = b[0]
        .records
        .iter()
        .map(|r| (r.key.clone(), r.value.clone()))
        .collect();
    assert_eq!(
        kv,
        vec![
            (Some(b"a".to_vec()), Some(b"1".to_vec())),
            (Some(b"b".to_vec()), Some(b"2".to_vec()))
        ]
    );
    assert_eq!(
        b[0].header.attributes & 7,
        3,
        "compression.type=lz4: stored codec"
    );
}

#[test]
fn s09b_producer_codec_zstd_kept_and_refused_before_v7() {
    let mut env = Env::start(&[]);
    let prod = env.topic("s09b", &[("compression.type", "producer")]);
    let z = batch_with(TWO, now_ms(), Compression::Zstd);
    env.raw.produce_ok(&prod, 0, z.clone()).unwrap();
    let b = env.raw.fetch_all_batches(&prod, 0, 0).unwrap();
    assert_eq!(b[0].header.attributes & 7, 4, "stored as zstd");
    assert_eq!(b[0].records.len(), 2);
    let r = env.raw.produce(6, &prod, 0, z).unwrap();
    assert_eq!(
        r.error_code, UNSUPPORTED_COMPRESSION_TYPE,
        "zstd in Produce v6: {r:?}"
    );
    assert_eq!(env.raw.offset(&prod, 0, LATEST).unwrap(), 2);
}

// ---------------------------------------------------------------- compaction basics (10–20)

/// 10–14 on one topic: latest value per key, stable offsets/timestamps/headers, unchanged
/// LEO and EARLIEST, reading from a removed offset, shrinking and idempotence.
#[test]
fn s10_to_s14_latest_value_per_key_and_stability() {
    let mut env = Env::start(&[]);
    let t = env.topic("s10", &[("segment.ms", "3600000")]);
    let p = rd_producer(&env);
    for j in 0..10 {
        // One flush per round keeps the 100 records in key-round-robin order.
        rd_send_all(
            &p,
            &t,
            (0..10).map(|i| (format!("k{i}"), format!("{i}:{j}"))),
        );
    }
    let before = env.snapshot(&t);
    assert_eq!(before.len(), 100);
    assert!(before.iter().enumerate().all(|(i, r)| r.offset == i as i64));
    let size_before = env.stored_bytes(&t);
    env.hold_rolls(&t, false);
    let roll_off = env.roll(&t);
    assert_eq!(roll_off, 100);
    let leo = env.raw.offset(&t, 0, LATEST).unwrap();
    assert_eq!(leo, 101);

    // 10
    let after = env.await_records(&t, AWAIT, "one record per key", |r| r.len() == 11);
    let expect: Vec<(i64, String, String)> = (0..10)
        .map(|i| (90 + i, format!("k{i}"), format!("{i}:9")))
        .chain([(100, "~roll".to_string(), "r".to_string())])
        .collect();
    let got: Vec<(i64, String, String)> = after
        .iter()
        .map(|r| {
            (
                r.offset,
                String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned(),
                String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned(),
            )
        })
        .collect();
    assert_eq!(got, expect, "scenario 10");

    // 11: every survivor identical to its pre-cleaning entry.
    for r in after.iter().filter(|r| r.offset < 100) {
        assert_eq!(
            Some(r),
            before.iter().find(|b| b.offset == r.offset),
            "scenario 11"
        );
    }

    // 12
    assert_eq!(
        env.raw.offset(&t, 0, LATEST).unwrap(),
        leo,
        "12: LEO unchanged"
    );
    assert_eq!(
        env.raw.offset(&t, 0, EARLIEST).unwrap(),
        0,
        "12: EARLIEST stays 0"
    );
    let fresh = env.put(&t, Some(b"fresh"), Some(b"1"));
    assert_eq!(fresh, leo, "12: a fresh produce gets the old LEO");

    // 13: raw fetch and an rdkafka consumer at a removed offset.
    let r = env.raw.fetch(&t, 0, 5).unwrap();
    assert_eq!(r.error_code, 0, "13: fetch at a compacted-away offset");
    let first = r
        .batches
        .iter()
        .flat_map(|b| &b.records)
        .find(|x| x.offset >= 5)
        .unwrap();
    assert_eq!(first.offset, 90, "13: first surviving offset >= 5");
    let c = rd_consumer(&env);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&t, 0, Offset::Offset(5)).unwrap();
    c.assign(&tpl).unwrap();
    let deadline = Instant::now() + AWAIT;
    let m = loop {
        assert!(
            Instant::now() < deadline,
            "13: consumer got nothing from offset 5"
        );
        match c.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => break (m.offset(), m.key().map(<[u8]>::to_vec)),
            Some(Err(e)) => panic!("13: consumer error at offset 5: {e}"),
            None => {}
        }
    };
    assert_eq!(m, (90, Some(b"k0".to_vec())), "13: consumer's first record");

    // 14: smaller, and a roll without new duplicates changes nothing but the ~roll records.
    let size_after = env.stored_bytes(&t);
    assert!(
        size_after < size_before,
        "14: size {size_after} !< {size_before}"
    );
    let stable = user(&env.snapshot(&t));
    env.roll(&t);
    // The previous ~roll is now a duplicate: wait for it to go, then compare the rest.
    env.await_records(&t, AWAIT, "old ~roll compacted", |r| {
        of_key(r, ROLL_KEY).len() == 1
    });
    sleep(Duration::from_millis(500));
    assert_eq!(user(&env.snapshot(&t)), stable, "14: idempotent");
}

#[test]
fn s15_active_segment_never_compacted() {
    let mut env = Env::start(&[]);
    let t = env.topic(
        "s15",
        &[
            ("segment.ms", "3600000"),
            ("min.cleanable.dirty.ratio", "0"),
        ],
    );
    for i in 1..=50 {
        env.put(&t, Some(b"k"), Some(format!("v{i}").as_bytes()));
    }
    sleep(Duration::from_secs(5));
    let recs = env.read(&t);
    assert_eq!(
        recs.len(),
        50,
        "active segment was compacted: {}",
        show(&recs)
    );
}

#[test]
fn s16_dirty_ratio_threshold() {
    let mut env = Env::start(&[]);
    let t = env.topic("s16", &[]);
    let kvs: Vec<(String, String)> = (0..100)
        .map(|i| (format!("u{i}"), "1".to_string()))
        .collect();
    for (k, v) in &kvs {
        env.put(&t, Some(k.as_bytes()), Some(v.as_bytes()));
    }
    env.put(&t, Some(b"d"), Some(b"1"));
    env.put(&t, Some(b"d"), Some(b"2"));
    env.roll(&t);
    env.await_records(&t, AWAIT, "cleaning #1 (first d gone)", |r| {
        of_key(r, b"d").len() == 1
    });
    let (e, m) = env
        .raw
        .alter_topic(&t, &[("min.cleanable.dirty.ratio", Some("0.99"))])
        .unwrap();
    assert_eq!(e, 0, "{m:?}");
    env.put(&t, Some(b"u0"), Some(b"2"));
    env.roll(&t);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let recs = env.read(&t);
        assert_eq!(
            of_key(&recs, b"u0").len(),
            2,
            "cleaned below the 0.99 ratio: {}",
            show(&recs)
        );
        sleep(Duration::from_millis(200));
    }
    let (e, m) = env
        .raw
        .alter_topic(&t, &[("min.cleanable.dirty.ratio", Some("0.01"))])
        .unwrap();
    assert_eq!(e, 0, "{m:?}");
    let recs = env.await_records(&t, Duration::from_secs(10), "u0's older copy gone", |r| {
        of_key(r, b"u0").len() == 1
    });
    assert_eq!(of_key(&recs, b"u0")[0].value.as_deref(), Some(&b"2"[..]));
}

#[test]
fn s17_min_compaction_lag() {
    let mut env = Env::start(&[]);
    let t = env.topic("s17", &[("min.compaction.lag.ms", "4000")]);
    for v in ["1", "2", "3"] {
        env.put(&t, Some(b"k"), Some(v.as_bytes()));
    }
    env.roll(&t);
    let t0 = Instant::now();
    sleep(Duration::from_secs(2));
    let recs = env.read(&t);
    assert_eq!(
        of_key(&recs, b"k").len(),
        3,
        "cleaned within the min lag: {}",
        show(&recs)
    );
    let recs = env.await_records(&t, Duration::from_secs(10), "only k=3 left", |r| {
        of_key(r, b"k").len() == 1
    });
    assert!(
        t0.elapsed() >= Duration::from_millis(3500),
        "cleaned after {:?}",
        t0.elapsed()
    );
    assert_eq!(of_key(&recs, b"k")[0].value.as_deref(), Some(&b"3"[..]));
}

#[test]
fn s18_max_compaction_lag_forces_roll_and_cleaning() {
    let mut env = Env::start(&[]);
    let t = env.topic(
        "s18",
        &[
            ("segment.ms", "3600000"),
            ("max.compaction.lag.ms", "500"),
            ("min.cleanable.dirty.ratio", "0.99"),
        ],
    );
    for v in ["1", "2", "3", "4"] {
        env.put(&t, Some(b"k"), Some(v.as_bytes()));
    }
    sleep(Duration::from_millis(600));
    env.put(&t, Some(b"other"), Some(b"x"));
    let recs = env.await_records(&t, Duration::from_secs(10), "only k=4 left", |r| {
        of_key(r, b"k").len() == 1
    });
    assert_eq!(of_key(&recs, b"k")[0].value.as_deref(), Some(&b"4"[..]));
    assert_eq!(of_key(&recs, b"k")[0].offset, 3);
}

#[test]
fn s19_keys_compare_bytewise() {
    let mut env = Env::start(&[]);
    let t = env.topic("s19", &[]);
    let keys: [&[u8]; 4] = [b"a", b"a ", b"", &[0u8]];
    for round in ["1", "2"] {
        for k in keys {
            env.put(&t, Some(k), Some(round.as_bytes()));
        }
    }
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "4 keys + ~roll", |r| r.len() == 5);
    for k in keys {
        let v = of_key(&recs, k);
        assert_eq!(v.len(), 1, "key {k:?}: {}", show(&recs));
        assert_eq!(v[0].value.as_deref(), Some(&b"2"[..]), "key {k:?}");
    }
}

/// Writes `n` keys twice through rdkafka (second values "2"), then rolls.
/// Rolls are held while writing, so the whole cleaning starts at the final roll.
fn write_keys_twice(env: &mut Env, t: &str, n: usize) {
    env.hold_rolls(t, true);
    let p = rd_producer(env);
    for round in 1..=2 {
        rd_send_all(
            &p,
            t,
            (0..n).map(|i| (format!("key-{i:06}"), round.to_string())),
        );
    }
    env.hold_rolls(t, false);
    env.roll(t);
}

/// Every key `key-i` exactly once with value "2".
fn fully_compacted(recs: &[skiff_e2e::raw::RawRecord], n: usize) -> bool {
    let u = user(recs);
    u.len() == n && u.iter().all(|r| r.value.as_deref() == Some(b"2"))
}

#[test]
fn s20_more_keys_than_the_map_holds() {
    // 1 thread and a 256 KiB dedupe buffer (48 B a slot: ~5k keys a pass) force several passes
    // over 30k keys (§6 uses 300k keys and 2 MiB; scaled down to keep the suite short).
    let n = 30_000;
    let mut env = Env::start(&[
        ("log.cleaner.threads", "1"),
        ("log.cleaner.dedupe.buffer.size", "262144"),
    ]);
    let t = env.topic("s20", &[]);
    write_keys_twice(&mut env, &t, n);
    let leo = env.raw.offset(&t, 0, LATEST).unwrap();
    assert_eq!(leo, 2 * n as i64 + 1);
    let recs = env.await_records(
        &t,
        Duration::from_secs(60),
        "30k keys, second values",
        |r| fully_compacted(r, n),
    );
    check_ascending(&recs).unwrap();
    assert_eq!(env.raw.offset(&t, 0, LATEST).unwrap(), leo);
}

// ---------------------------------------------------------------- tombstones (21–26)

#[test]
fn s21_tombstone_visible_after_first_pass() {
    let mut env = Env::start(&[]);
    let t = env.topic("s21", &[("delete.retention.ms", "60000")]);
    env.put(&t, Some(b"k"), Some(b"v1"));
    env.put(&t, Some(b"k"), None);
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "v1 gone", |r| of_key(r, b"k").len() == 1);
    let k = of_key(&recs, b"k");
    assert_eq!(
        (k[0].offset, k[0].value.clone()),
        (1, None),
        "tombstone at its offset"
    );
    // It stays for the horizon (60 s), across more passes.
    env.put_all(&t, &[("x", "1"), ("x", "2")]);
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "x compacted", |r| of_key(r, b"x").len() == 1);
    assert_eq!(
        of_key(&recs, b"k").len(),
        1,
        "tombstone kept: {}",
        show(&recs)
    );
}

#[test]
fn s22_tombstone_removed_after_horizon_and_second_pass() {
    let mut env = Env::start(&[]);
    let t = env.topic("s22", &[("delete.retention.ms", "1000")]);
    env.put(&t, Some(b"k"), Some(b"v1"));
    env.put(&t, Some(b"k"), None);
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "cleaning #1", |r| of_key(r, b"k").len() == 1);
    assert_eq!(of_key(&recs, b"k")[0].value, None);
    sleep(Duration::from_millis(1500));
    env.put_all(&t, &[("o1", "1"), ("o2", "1")]);
    env.roll(&t);
    env.await_records(&t, Duration::from_secs(10), "k absent", |r| {
        of_key(r, b"k").is_empty()
    });
}

#[test]
fn s23_horizon_counts_from_first_pass_not_record_time() {
    let mut env = Env::start(&[]);
    let t = env.topic("s23", &[("delete.retention.ms", "5000")]);
    env.put(&t, Some(b"k"), Some(b"v1"));
    env.put_at(&t, Some(b"k"), None, now_ms() - 86_400_000);
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "cleaning #1 (v1 gone)", |r| {
        of_key(r, b"k").len() == 1
    });
    let seen = Instant::now();
    assert_eq!(
        of_key(&recs, b"k")[0].value,
        None,
        "day-old tombstone kept by pass #1"
    );
    // Passes roughly every second for ~3.5 s (the first pass ran at most a poll before `seen`).
    let mut i = 0;
    while seen.elapsed() < Duration::from_millis(3500) {
        env.put_all(&t, &[("x", &i.to_string()), ("x", &(i + 1).to_string())]);
        env.roll(&t);
        i += 2;
        sleep(Duration::from_millis(700));
        let recs = env.read(&t);
        assert_eq!(
            of_key(&recs, b"k").len(),
            1,
            "tombstone removed {:?} after pass #1 (horizon 5 s): {}",
            seen.elapsed(),
            show(&recs)
        );
    }
    env.await_rolling(
        &t,
        Duration::from_secs(12),
        "tombstone gone after 5 s",
        |r| of_key(r, b"k").is_empty(),
    );
}

#[test]
fn s24_zero_retention_still_needs_two_passes() {
    let mut env = Env::start(&[]);
    let t = env.topic("s24", &[("delete.retention.ms", "0")]);
    env.put(&t, Some(b"k"), Some(b"v1"));
    env.put(&t, Some(b"k"), None);
    env.roll(&t);
    // Poll tightly: the state between the two passes may be short-lived.
    let deadline = Instant::now() + AWAIT;
    let mut saw_tombstone_alone = false;
    loop {
        let recs = env.read(&t);
        let k = of_key(&recs, b"k");
        match k.as_slice() {
            [one] if one.value.is_none() => saw_tombstone_alone = true,
            [] => break,
            [_, _] => {}
            other => panic!("unexpected k records: {other:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "tombstone never removed: {}",
            show(&recs)
        );
        sleep(Duration::from_millis(2));
    }
    assert!(
        saw_tombstone_alone,
        "v1 and the tombstone vanished together: the tombstone was not kept by the first pass"
    );
}

#[test]
fn s25_later_write_wins_over_tombstone() {
    let mut env = Env::start(&[]);
    let t = env.topic("s25", &[]);
    env.put(&t, Some(b"k"), Some(b"v1"));
    env.put(&t, Some(b"k"), None);
    env.put(&t, Some(b"k"), Some(b"v2"));
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "only k=v2", |r| of_key(r, b"k").len() == 1);
    let k = of_key(&recs, b"k");
    assert_eq!((k[0].offset, k[0].value.as_deref()), (2, Some(&b"v2"[..])));
}

#[test]
fn s26_empty_value_is_not_a_tombstone() {
    let mut env = Env::start(&[]);
    let t = env.topic("s26", &[("delete.retention.ms", "1000")]);
    env.put(&t, Some(b"k"), Some(b""));
    env.roll(&t);
    for i in 0..2 {
        env.put_all(&t, &[("x", "1"), ("x", "2")]);
        env.roll(&t);
        env.await_records(&t, AWAIT, "pass over x", |r| of_key(r, b"x").len() == 1);
        if i == 0 {
            sleep(Duration::from_secs(2));
        }
    }
    sleep(Duration::from_millis(500));
    let recs = env.read(&t);
    let k = of_key(&recs, b"k");
    assert_eq!(k.len(), 1, "k=\"\" removed: {}", show(&recs));
    assert_eq!(k[0].value.as_deref(), Some(&b""[..]));
}

#[test]
fn s27_interleaved_ordering() {
    let mut env = Env::start(&[]);
    let t = env.topic("s27", &[]);
    env.put_all(
        &t,
        &[("a", "1"), ("b", "1"), ("a", "2"), ("c", "1"), ("b", "2")],
    );
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "a2 c1 b2 left", |r| user(r).len() == 3);
    let got: Vec<(i64, Vec<u8>, Vec<u8>)> = user(&recs)
        .into_iter()
        .map(|r| (r.offset, r.key.unwrap(), r.value.unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![
            (2, b"a".to_vec(), b"2".to_vec()),
            (3, b"c".to_vec(), b"1".to_vec()),
            (4, b"b".to_vec(), b"2".to_vec())
        ]
    );
}

// ---------------------------------------------------------------- retention / delete (33–38)

#[test]
fn s33_time_retention_uses_record_timestamps() {
    let mut env = Env::start(&[]);
    let t = env.topic(
        "s33",
        &[
            ("cleanup.policy", "delete"),
            ("retention.ms", "600000"),
            ("segment.ms", "3600000"),
        ],
    );
    let old = now_ms() - 3_600_000;
    for i in 0..3 {
        env.put_at(&t, Some(format!("k{i}").as_bytes()), Some(b"v"), old);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let e = env.raw.offset(&t, 0, EARLIEST).unwrap();
        if e == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "EARLIEST still {e} after 10 s");
        sleep(Duration::from_millis(100));
    }
    assert_eq!(env.raw.offset(&t, 0, LATEST).unwrap(), 3);
    assert_eq!(
        env.raw.fetch(&t, 0, 0).unwrap().error_code,
        OFFSET_OUT_OF_RANGE
    );
    assert_eq!(env.put(&t, Some(b"n"), Some(b"v")), 3);
}

#[test]
fn s34_size_retention() {
    let mut env = Env::start(&[]);
    let t = env.topic(
        "s34",
        &[
            ("cleanup.policy", "delete"),
            ("retention.bytes", "2097152"),
            ("segment.bytes", "1048576"),
            ("segment.ms", "3600000"),
        ],
    );
    let v = vec![b'z'; 100_000];
    for i in 0..63 {
        env.put(&t, Some(format!("k{i}").as_bytes()), Some(&v));
    }
    let mib = 1 << 20;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let size = env.stored_bytes(&t);
        if (2 * mib..=3 * mib).contains(&size) {
            break;
        }
        assert!(Instant::now() < deadline, "size still {size} after 15 s");
        sleep(Duration::from_millis(200));
    }
    let e = env.raw.offset(&t, 0, EARLIEST).unwrap();
    assert!(e > 0, "EARLIEST advanced");
    assert_eq!(
        env.raw.fetch(&t, 0, e - 1).unwrap().error_code,
        OFFSET_OUT_OF_RANGE
    );
    let first = env.raw.fetch(&t, 0, e).unwrap();
    assert_eq!(
        first.batches.first().map(|b| b.header.base_offset),
        Some(e),
        "EARLIEST is a batch (segment) boundary"
    );
}

#[test]
fn s35_unlimited_retention() {
    let mut env = Env::start(&[]);
    let t = env.topic(
        "s35",
        &[
            ("cleanup.policy", "delete"),
            ("retention.ms", "-1"),
            ("retention.bytes", "-1"),
        ],
    );
    let old = now_ms() - 30 * 86_400_000;
    for i in 0..3 {
        env.put_at(&t, Some(format!("k{i}").as_bytes()), Some(b"v"), old);
    }
    sleep(Duration::from_secs(3));
    assert_eq!(env.raw.offset(&t, 0, EARLIEST).unwrap(), 0);
    assert_eq!(env.read(&t).len(), 3);
}

#[test]
fn s36_compact_delete() {
    let mut env = Env::start(&[]);
    let t = env.topic(
        "s36",
        &[
            ("cleanup.policy", "compact,delete"),
            ("retention.ms", "3000"),
        ],
    );
    env.put_all(&t, &[("k", "v1"), ("o1", "1"), ("o2", "1")]);
    env.roll(&t);
    // Newer segments are still compacted (checked before retention can take them).
    env.put_all(&t, &[("x", "1"), ("x", "2")]);
    env.roll(&t);
    let recs = env.await_records(&t, Duration::from_secs(3), "x compacted", |r| {
        of_key(r, b"x").len() == 1
    });
    assert_eq!(of_key(&recs, b"x")[0].value.as_deref(), Some(&b"2"[..]));
    sleep(Duration::from_secs(3));
    env.put(&t, Some(b"late"), Some(b"1"));
    env.await_records(&t, Duration::from_secs(10), "k removed by retention", |r| {
        of_key(r, b"k").is_empty()
    });
    assert!(
        env.raw.offset(&t, 0, EARLIEST).unwrap() > 0,
        "EARLIEST advanced"
    );
}

#[test]
fn s37_delete_records() {
    let mut env = Env::start(&[]);
    let t = env.topic("s37", &[("cleanup.policy", "delete")]);
    for i in 0..10 {
        env.put(&t, Some(format!("k{i}").as_bytes()), Some(b"v"));
    }
    assert_eq!(env.raw.delete_records(&t, 0, 4).unwrap(), (0, 4));
    assert_eq!(env.raw.offset(&t, 0, EARLIEST).unwrap(), 4);
    assert_eq!(
        env.raw.fetch(&t, 0, 3).unwrap().error_code,
        OFFSET_OUT_OF_RANGE
    );
    assert_eq!(
        env.raw.delete_records(&t, 0, -1).unwrap(),
        (0, 10),
        "-1 means HW"
    );
    assert_eq!(
        env.raw.delete_records(&t, 0, 11).unwrap().0,
        OFFSET_OUT_OF_RANGE
    );
}

#[test]
fn s38_delete_records_policy() {
    let mut env = Env::start(&[]);
    let c = env.topic("s38c", &[]);
    env.put_all(&c, &[("a", "1"), ("b", "1")]);
    assert_eq!(
        env.raw.delete_records(&c, 0, 1).unwrap().0,
        POLICY_VIOLATION
    );
    assert_eq!(env.raw.offset(&c, 0, EARLIEST).unwrap(), 0);
    let cd = env.topic("s38cd", &[("cleanup.policy", "compact,delete")]);
    env.put_all(&cd, &[("a", "1"), ("b", "1")]);
    assert_eq!(env.raw.delete_records(&cd, 0, 1).unwrap(), (0, 1));
    assert_eq!(env.raw.offset(&cd, 0, EARLIEST).unwrap(), 1);
}

// ---------------------------------------------------------------- config lifecycle (39–42)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s39_config_validation_and_defaults() {
    let mut env = Env::start(&[]);
    let bad: &[&[(&str, &str)]] = &[
        &[
            ("min.compaction.lag.ms", "5000"),
            ("max.compaction.lag.ms", "1000"),
        ],
        &[("max.compaction.lag.ms", "0")],
        &[("min.cleanable.dirty.ratio", "1.5")],
        &[("cleanup.policy", "foo")],
        &[("segment.bytes", "100")],
        &[("retention.ms", "-2")],
    ];
    let ok = env.topic("s39", &[]);
    let mut failures = Vec::new();
    for cfg in bad {
        let name = skiff_e2e::unique_topic("s39bad");
        let (e, m) = env.raw.create_topic(&name, 1, cfg).unwrap();
        if e != INVALID_CONFIG {
            failures.push(format!("CreateTopics {cfg:?}: {e} {m:?}"));
        }
        let set: Vec<(&str, Option<&str>)> = cfg.iter().map(|(k, v)| (*k, Some(*v))).collect();
        let (e, m) = env.raw.alter_topic(&ok, &set).unwrap();
        if e != INVALID_CONFIG {
            failures.push(format!("IncrementalAlterConfigs {cfg:?}: {e} {m:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "expected INVALID_CONFIG (40): {failures:#?}"
    );

    // Defaults (§1.1) on a topic created without overrides.
    let plain = skiff_e2e::unique_topic("s39plain");
    assert_eq!(env.raw.create_topic(&plain, 1, &[]).unwrap().0, 0);
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        ClientConfig::new()
            .set("bootstrap.servers", env.broker.bootstrap())
            .create()
            .unwrap();
    let res = admin
        .describe_configs(
            [&ResourceSpecifier::Topic(&plain)],
            &rdkafka::admin::AdminOptions::new().request_timeout(Some(Duration::from_secs(15))),
        )
        .await
        .unwrap();
    let cfg = res.into_iter().next().unwrap().unwrap();
    for (k, v) in [
        ("cleanup.policy", "delete"),
        ("delete.retention.ms", "86400000"),
        ("min.compaction.lag.ms", "0"),
        ("max.compaction.lag.ms", "9223372036854775807"),
        ("min.cleanable.dirty.ratio", "0.5"),
        ("segment.ms", "604800000"),
        ("segment.bytes", "1073741824"),
        ("file.delete.delay.ms", "60000"),
        ("retention.ms", "604800000"),
        ("retention.bytes", "-1"),
    ] {
        let e = cfg.get(k).unwrap_or_else(|| panic!("{k} not described"));
        assert_eq!(e.value.as_deref(), Some(v), "{k} default");
        assert_eq!(e.source, ConfigSource::Default, "{k} source");
    }
}

#[test]
fn s40_delete_to_compact() {
    let mut env = Env::start(&[]);
    let t = env.topic("s40", &[("cleanup.policy", "delete")]);
    env.put(&t, None, Some(b"keyless1"));
    env.put_all(&t, &[("k", "1"), ("k", "2")]);
    env.put(&t, None, Some(b"keyless2"));
    let (e, m) = env
        .raw
        .alter_topic(&t, &[("cleanup.policy", Some("compact"))])
        .unwrap();
    assert_eq!(e, 0, "{m:?}");
    let r = env
        .raw
        .produce(9, &t, 0, batch(&[(None, Some(b"v"))], now_ms()))
        .unwrap();
    assert_eq!(
        r.error_code, INVALID_RECORD,
        "keyless after delete->compact: {r:?}"
    );
    env.roll(&t);
    let recs = env.await_records(&t, AWAIT, "keyless and duplicates gone", |r| {
        r.iter().all(|x| x.key.is_some()) && of_key(r, b"k").len() == 1
    });
    assert_eq!(of_key(&recs, b"k")[0].value.as_deref(), Some(&b"2"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s41_compact_to_delete() {
    let mut env = Env::start(&[]);
    let t = env.topic("s41", &[]);
    env.put_all(&t, &[("k", "1"), ("k", "2")]);
    env.roll(&t);
    env.await_records(&t, AWAIT, "compacted while compact", |r| {
        of_key(r, b"k").len() == 1
    });
    // AlterConfigs (full replacement) through rdkafka's AdminClient.
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        ClientConfig::new()
            .set("bootstrap.servers", env.broker.bootstrap())
            .create()
            .unwrap();
    let alter = AlterConfig::new(ResourceSpecifier::Topic(&t))
        .set("cleanup.policy", "delete")
        .set("segment.ms", "100")
        .set("min.cleanable.dirty.ratio", "0.01")
        .set("file.delete.delay.ms", "0")
        .set("retention.ms", "4000");
    let opts = rdkafka::admin::AdminOptions::new().request_timeout(Some(Duration::from_secs(15)));
    for r in admin.alter_configs([&alter], &opts).await.unwrap() {
        r.unwrap();
    }
    let started = Instant::now();
    env.put_all(&t, &[("d", "1"), ("d", "2")]);
    for _ in 0..3 {
        env.roll(&t);
        sleep(Duration::from_millis(300));
    }
    if started.elapsed() < Duration::from_millis(3500) {
        let recs = env.read(&t);
        assert_eq!(
            of_key(&recs, b"d").len(),
            2,
            "compacted after compact->delete: {}",
            show(&recs)
        );
    }
    // Time retention now applies: everything older than 4 s goes.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if env.raw.offset(&t, 0, EARLIEST).unwrap() > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "retention never applied after compact->delete"
        );
        env.roll(&t);
        sleep(Duration::from_millis(200));
    }
}

#[test]
fn s42_kill9_during_cleaning() {
    let n = 30_000;
    let mut env = Env::start(&[
        ("log.cleaner.threads", "1"),
        ("log.cleaner.dedupe.buffer.size", "262144"),
    ]);
    let t = env.topic("s42", &[("segment.ms", "3600000")]);
    let p = rd_producer(&env);
    for round in 1..=2 {
        rd_send_all(
            &p,
            &t,
            (0..n).map(|i| (format!("key-{i:06}"), round.to_string())),
        );
    }
    let mut original = env.read(&t);
    assert_eq!(original.len(), 2 * n, "uncleaned before the roll");
    env.hold_rolls(&t, false);
    env.roll(&t);
    original.extend(env.raw.read_all(&t, 0, 2 * n as i64).unwrap());
    let leo = env.raw.offset(&t, 0, LATEST).unwrap();
    assert_eq!(original.len() as i64, leo);
    // Let the first passes start, then crash in the middle of the multi-pass cleaning.
    env.await_records(&t, Duration::from_secs(30), "cleaning started", |r| {
        r.len() < original.len()
    });
    env.broker.kill9().unwrap();
    env.broker.restart().unwrap();
    env.reconnect();

    let check = |recs: &[skiff_e2e::raw::RawRecord]| {
        check_ascending(recs).unwrap();
        for r in recs {
            let o = usize::try_from(r.offset).unwrap();
            assert_eq!(Some(r), original.get(o), "record at {} changed", r.offset);
        }
        let last = latest(recs);
        assert_eq!(last.len(), n + 1, "every key present (+~roll)");
        assert!(
            last.iter()
                .filter(|(k, _)| k.as_deref() != Some(ROLL_KEY))
                .all(|(_, (_, v))| v.as_deref() == Some(b"2")),
            "a key lost its latest value"
        );
    };
    let after_crash = env.snapshot(&t);
    check(&after_crash);
    assert_eq!(
        env.raw.offset(&t, 0, LATEST).unwrap(),
        leo,
        "LEO after restart"
    );
    let recs = env.await_records(
        &t,
        Duration::from_secs(60),
        "fully compacted after restart",
        |r| fully_compacted(r, n),
    );
    check(&recs);
}
