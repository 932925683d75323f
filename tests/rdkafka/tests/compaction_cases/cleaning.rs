//! §6 compaction basics (10–20): latest value per key, stable offsets, timestamps and
//! headers, unchanged LEO/HW/EARLIEST, reads from removed offsets, shrinking, the active
//! segment, dirty ratio, min/max compaction lag, byte-wise keys, more keys than the map.
#![allow(clippy::unwrap_used)]

use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::compaction_support::*;
use crate::*;
use rdkafka::consumer::Consumer;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::raw::{EARLIEST, LATEST};

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
        env.raw.fetch(&t, 0, 0).unwrap().high_watermark,
        leo,
        "12: HW unchanged"
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
