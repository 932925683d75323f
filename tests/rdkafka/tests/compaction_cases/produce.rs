//! §6 produce validation (1–9) over the raw client: keyless records, whole-batch rejection
//! with indices, tombstones and empty keys/values, CRC, batch structure, sizes, timestamps
//! and codecs. Each test owns its broker; nothing shared.
#![allow(clippy::unwrap_used)]

use crate::compaction_support::*;
use crate::*;
use skiff_e2e::raw::{magic1_message, LATEST};
use skiff_records::{BatchBuilder, Compression};

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
