//! Pins the allocation-free [`check_records`] to the full-decode implementation it replaced
//! (kept here as the oracle): on random valid and corrupted batches, random timestamps around
//! the window and compacted or not, both return the same result and the same error.
#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;
use skiff_records::{records, BatchBuilder, Compression, HEADER_LEN};

/// The pre-walker `check_records`: decodes every record into key/value/header `Bytes`.
fn check_records_oracle(
    h: &BatchHeader,
    batch: &[u8],
    config: &LogConfig,
    now_ms: i64,
) -> Result<()> {
    let create_time = config.message_timestamp_type == TimestampType::CreateTime;
    if create_time && h.timestamp_type() == TimestampType::LogAppendTime {
        return Err(LogError::InvalidTimestamp {
            message: "producer batch claims LogAppendTime on a CreateTime topic".to_string(),
            record_errors: Vec::new(),
        });
    }
    let check_ts = create_time
        && (config.message_timestamp_before_max_ms != i64::MAX
            || config.message_timestamp_after_max_ms != i64::MAX);
    let need_keys = config.cleanup_policy.compact;
    if !check_ts && !need_keys {
        return Ok(());
    }
    let recs = records(batch, MAX_DECOMPRESSED_BATCH)
        .map_err(|e| LogError::CorruptMessage(format!("cannot decode records: {e}")))?;
    if recs.len() != usize::try_from(h.record_count).unwrap_or(usize::MAX) {
        return Err(LogError::InvalidRecord {
            message: format!(
                "batch declares {} records but holds {}",
                h.record_count,
                recs.len()
            ),
            record_errors: Vec::new(),
        });
    }
    let lower = now_ms.saturating_sub(config.message_timestamp_before_max_ms);
    let upper = now_ms.saturating_add(config.message_timestamp_after_max_ms);
    let mut ts_errors = Vec::new();
    let mut key_errors = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let idx = i32::try_from(i).unwrap_or(i32::MAX);
        if check_ts {
            let ts = h.base_timestamp.saturating_add(r.timestamp_delta);
            if ts != NO_TIMESTAMP && (ts < lower || ts > upper) {
                ts_errors.push((
                    idx,
                    format!(
                        "Timestamp {ts} of message with offset {i} is out of range. \
                         The timestamp should be within [{lower}, {upper}]"
                    ),
                ));
            }
        }
        if need_keys && r.key.is_none() {
            key_errors.push((
                idx,
                "Compacted topic cannot accept message without key".to_string(),
            ));
        }
    }
    if let Some((_, first)) = ts_errors.first() {
        let message = first.clone();
        ts_errors.extend(key_errors);
        return Err(LogError::InvalidTimestamp {
            message,
            record_errors: ts_errors,
        });
    }
    if let Some((_, first)) = key_errors.first() {
        return Err(LogError::InvalidRecord {
            message: first.clone(),
            record_errors: key_errors,
        });
    }
    Ok(())
}

const NOW: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;
/// Offset of the record count in a v2 batch header.
const RECORD_COUNT_OFFSET: usize = 57;

type Rec = (i64, Option<Vec<u8>>, Option<Vec<u8>>, usize);

fn rec() -> impl Strategy<Value = Rec> {
    (
        prop_oneof![
            4 => NOW - 2 * HOUR..NOW + 2 * HOUR,
            1 => Just(NO_TIMESTAMP),
            1 => any::<i64>(),
        ],
        prop::option::of(prop::collection::vec(any::<u8>(), 0..20)),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..120)),
        0usize..3,
    )
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![
        3 => Just(Compression::None),
        1 => Just(Compression::Gzip),
        1 => Just(Compression::Lz4),
        1 => Just(Compression::Zstd),
        1 => Just(Compression::Snappy),
    ]
}

fn build(codec: Compression, recs: &[Rec], log_append_time: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, codec).log_append_time(log_append_time);
    for (ts, k, v, headers) in recs {
        let hs: Vec<(&[u8], Option<&[u8]>)> = (0..*headers).map(|_| (&b"h"[..], None)).collect();
        b.push(*ts, k.as_deref(), v.as_deref(), &hs);
    }
    b.build().unwrap()
}

fn config(compact: bool, create_time: bool, before: i64, after: i64) -> LogConfig {
    let mut c = LogConfig::default();
    c.cleanup_policy.compact = compact;
    c.message_timestamp_type = if create_time {
        TimestampType::CreateTime
    } else {
        TimestampType::LogAppendTime
    };
    c.message_timestamp_before_max_ms = before;
    c.message_timestamp_after_max_ms = after;
    c
}

fn assert_same(batch: &[u8], config: &LogConfig) {
    let Ok(h) = BatchHeader::parse(batch) else {
        return;
    };
    let new = check_records(&h, batch, config, NOW);
    let old = check_records_oracle(&h, batch, config, NOW);
    assert_eq!(format!("{new:?}"), format!("{old:?}"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn walker_matches_full_decode(
        codec in codec(),
        recs in prop::collection::vec(rec(), 1..10),
        compact in any::<bool>(),
        create_time in prop_oneof![4 => Just(true), 1 => Just(false)],
        log_append_time in prop_oneof![5 => Just(false), 1 => Just(true)],
        before in prop_oneof![Just(i64::MAX), 0..3 * HOUR],
        after in prop_oneof![Just(HOUR), Just(i64::MAX), 0..3 * HOUR],
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..3),
        truncate in prop::option::of(any::<usize>()),
        count in prop::option::of(-1i32..12),
    ) {
        let cfg = config(compact, create_time, before, after);
        let mut batch = build(codec, &recs, log_append_time);
        assert_same(&batch, &cfg);
        let body = batch.len() - HEADER_LEN;
        for (at, xor) in flips {
            batch[HEADER_LEN + at % body] ^= xor;
        }
        if let Some(keep) = truncate {
            batch.truncate(HEADER_LEN + keep % (body + 1));
        }
        if let Some(count) = count {
            batch[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4]
                .copy_from_slice(&count.to_be_bytes());
        }
        assert_same(&batch, &cfg);
    }
}

#[test]
fn keyless_records_on_compacted_topics_are_named_by_index() {
    let recs: Vec<Rec> = vec![
        (NOW, Some(b"k".to_vec()), Some(b"v".to_vec()), 0),
        (NOW, None, Some(b"v".to_vec()), 1),
        (NOW, None, None, 0),
    ];
    let batch = build(Compression::None, &recs, false);
    let h = BatchHeader::parse(&batch).unwrap();
    match check_records(&h, &batch, &config(true, true, i64::MAX, HOUR), NOW) {
        Err(LogError::InvalidRecord {
            message,
            record_errors,
        }) => {
            assert_eq!(message, "Compacted topic cannot accept message without key");
            let idx: Vec<i32> = record_errors.iter().map(|(i, _)| *i).collect();
            assert_eq!(idx, vec![1, 2]);
        }
        other => panic!("expected INVALID_RECORD, got {other:?}"),
    }
}

#[test]
fn negative_deltas_below_the_window_are_caught() {
    // The first record (the base timestamp) and the producer's max are in the window; the
    // second record's negative delta takes it below, so the header alone cannot clear a batch.
    let recs: Vec<Rec> = vec![
        (NOW, Some(b"k".to_vec()), None, 0),
        (NOW - 2 * HOUR, Some(b"k".to_vec()), None, 0),
    ];
    let batch = build(Compression::None, &recs, false);
    let h = BatchHeader::parse(&batch).unwrap();
    assert!(h.max_timestamp <= NOW);
    match check_records(&h, &batch, &config(false, true, HOUR, HOUR), NOW) {
        Err(LogError::InvalidTimestamp { record_errors, .. }) => {
            assert_eq!(record_errors.len(), 1);
            assert_eq!(record_errors[0].0, 1);
        }
        other => panic!("expected INVALID_TIMESTAMP, got {other:?}"),
    }
}

#[test]
fn overrunning_record_length_is_corrupt() {
    let recs: Vec<Rec> = vec![(NOW, Some(b"k".to_vec()), Some(b"v".to_vec()), 0)];
    let mut batch = build(Compression::None, &recs, false);
    batch[HEADER_LEN] = batch[HEADER_LEN].wrapping_add(40); // length +20, past the end
    let h = BatchHeader::parse(&batch).unwrap();
    let err = check_records(&h, &batch, &config(false, true, i64::MAX, HOUR), NOW).unwrap_err();
    match err {
        LogError::CorruptMessage(m) => assert!(m.contains("record body"), "{m}"),
        other => panic!("expected CORRUPT_MESSAGE, got {other:?}"),
    }
}
