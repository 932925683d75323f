//! §6 retention and DeleteRecords (33–38) and config lifecycle (39–42): time/size/unlimited
//! retention, compact,delete, DeleteRecords policy, config validation and defaults, live
//! policy switches, kill -9 during a multi-pass cleaning.
#![allow(clippy::unwrap_used)]

use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::compaction_support::*;
use crate::*;
use rdkafka::admin::{AlterConfig, ConfigSource, ResourceSpecifier};
use rdkafka::config::ClientConfig;
use skiff_e2e::raw::{EARLIEST, LATEST};

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

    // A graceful restart after cleaning changes nothing, and the next record gets the LEO.
    env.broker.restart().unwrap();
    env.reconnect();
    assert_eq!(env.snapshot(&t), recs, "snapshot after a clean restart");
    assert_eq!(env.put(&t, Some(b"after"), Some(b"1")), leo);
}
