//! Log behaviour tests on temp dirs with a manual clock. This file: shared helpers,
//! append/read, rolls, validation, flush. Siblings: recovery, retention (and lookups, log dir),
//! and the proptest model.

mod cleaning;
mod idempotence;
mod in_place;
mod key_index;
mod model;
mod recovery;
mod retention;
mod swap;
mod transactions;

use crate::{
    AppendValidation, CleanupPolicy, Clock, Log, LogConfig, LogError, ManualClock, Recovery,
};
use skiff_records::{BatchBuilder, BatchHeader, Batches, Compression, TimestampType};
use std::path::Path;
use std::sync::Arc;
const T0: i64 = 1_700_000_000_000;

pub(super) fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(T0))
}

pub(super) fn batch_with(timestamps: &[i64], value_len: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, Compression::None);
    let value = vec![b'v'; value_len];
    for (i, ts) in timestamps.iter().enumerate() {
        let key = format!("k{i}");
        b.push(*ts, Some(key.as_bytes()), Some(&value), &[]);
    }
    b.build().unwrap()
}

/// A batch of `n` records at time `ts`.
pub(super) fn batch(n: usize, ts: i64) -> Vec<u8> {
    batch_with(&vec![ts; n], 20)
}

pub(super) fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

pub(super) fn open(dir: &Path, cfg: LogConfig, c: &Arc<ManualClock>, r: Recovery) -> Log {
    Log::open(dir, cfg, c.clone(), r).unwrap()
}

pub(super) fn v(c: &ManualClock) -> AppendValidation {
    AppendValidation { now_ms: c.now_ms() }
}

/// Headers of every batch in `bytes`, checking the bytes hold only whole batches.
pub(super) fn headers(bytes: &[u8]) -> Vec<BatchHeader> {
    let mut it = Batches::new(bytes);
    let hs: Vec<BatchHeader> = it.by_ref().map(|r| r.unwrap().0).collect();
    assert_eq!(it.position(), bytes.len(), "partial batch returned");
    hs
}

pub(super) fn all_offsets(log: &Log) -> Vec<(i64, i64)> {
    let r = log.read(log.log_start_offset(), usize::MAX, true).unwrap();
    headers(&r.records)
        .iter()
        .map(|h| (h.base_offset, h.last_offset()))
        .collect()
}

#[test]
fn append_and_read_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    let b = batch(5, T0);
    for i in 0..3 {
        let info = log.append(&b, 7, &v(&c)).unwrap();
        assert_eq!(info.first_offset, i * 5);
        assert_eq!(info.last_offset, i * 5 + 4);
        assert_eq!(info.max_timestamp, T0);
        assert_eq!(info.bytes, b.len());
        assert_eq!(info.log_append_time, None);
    }
    assert_eq!(log.log_end_offset(), 15);
    assert_eq!(log.high_watermark(), 15);
    let r = log.read(0, usize::MAX, false).unwrap();
    assert_eq!(r.records.len(), 3 * b.len());
    let hs = headers(&r.records);
    assert_eq!(
        hs.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
        vec![0, 5, 10]
    );
    assert!(hs.iter().all(|h| h.partition_leader_epoch == 7));
    for w in r.records.chunks(b.len()) {
        skiff_records::validate_batch(w).unwrap();
    }
    // From the middle of a batch: whole batches from the one containing the offset.
    let hs = headers(&log.read(7, usize::MAX, false).unwrap().records);
    assert_eq!(hs.first().map(|h| h.base_offset), Some(5));
    assert_eq!(hs.len(), 2);
    // Budget of 1.5 batches: exactly one; smaller than one batch: min_one_batch decides.
    assert_eq!(
        log.read(0, b.len() * 3 / 2, false).unwrap().records.len(),
        b.len()
    );
    assert_eq!(log.read(0, 10, false).unwrap().records.len(), 0);
    assert_eq!(log.read(0, 10, true).unwrap().records.len(), b.len());
    assert_eq!(log.read(0, 0, true).unwrap().records.len(), b.len());
    // At LEO: empty; beyond: out of range.
    assert!(log.read(15, 1000, true).unwrap().records.is_empty());
    assert!(matches!(
        log.read(16, 1000, true),
        Err(LogError::OffsetOutOfRange {
            requested: 16,
            log_start: 0,
            log_end: 15
        })
    ));
    assert!(matches!(
        log.read(-1, 10, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn multi_batch_append_and_log_append_time() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    let mut payload = batch(2, T0 - 5_000_000);
    payload.extend(batch(3, T0 - 5_000_000));
    c.advance(10);
    let info = log.append(&payload, 0, &v(&c)).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (0, 4));
    assert_eq!(info.log_append_time, Some(T0 + 10));
    let r = log.read(0, usize::MAX, false).unwrap();
    let hs = headers(&r.records);
    assert_eq!(hs.len(), 2);
    assert_eq!(hs[1].base_offset, 2);
    assert!(hs
        .iter()
        .all(|h| h.max_timestamp == T0 + 10 && h.timestamp_type() == TimestampType::LogAppendTime));
    let first_len = hs[0].total_size();
    skiff_records::validate_batch(&r.records[..first_len]).unwrap();
    skiff_records::validate_batch(&r.records[first_len..]).unwrap();
    assert_eq!(log.offset_for_timestamp(T0).unwrap(), Some((0, T0 + 10)));
}

#[test]
fn rolls_by_size_and_reads_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let b = batch(2, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 3) as i32,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    for _ in 0..10 {
        log.append(&b, 0, &v(&c)).unwrap();
    }
    assert_eq!(log.segment_count(), 4);
    assert_eq!(log.segment_base_offsets(), vec![0, 6, 12, 18]);
    assert_eq!(all_offsets(&log).len(), 10);
    // A read starting in segment 1 continues through the following segments.
    let hs = headers(&log.read(7, usize::MAX, false).unwrap().records);
    assert_eq!(hs.first().unwrap().base_offset, 6);
    assert_eq!(hs.len(), 7);
    // Multi-batch append larger than the free space is split across segments.
    let mut payload = b.clone();
    payload.extend(&b);
    payload.extend(&b);
    log.append(&payload, 0, &v(&c)).unwrap();
    assert_eq!(all_offsets(&log).len(), 13);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"00000000000000000006.log".to_string()));
    assert!(names.contains(&"00000000000000000006.index".to_string()));
    assert!(names.contains(&"00000000000000000006.timeindex".to_string()));
}

#[test]
fn rolls_by_time_strictly_and_on_timer() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_ms: 1000,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    log.append(&batch(1, T0 + 1000), 0, &v(&c)).unwrap();
    assert_eq!(log.segment_count(), 1, "exactly segment.ms is not a roll");
    log.append(&batch(1, T0 + 1001), 0, &v(&c)).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    // Timer roll: based on the first batch's timestamp vs the wall clock.
    assert!(!log.roll_if_due().unwrap());
    c.set(T0 + 2002);
    assert!(log.roll_if_due().unwrap());
    assert_eq!(log.segment_base_offsets(), vec![0, 2, 3]);
    assert!(
        !log.roll_if_due().unwrap(),
        "an empty active segment never rolls"
    );
}

#[test]
fn rolls_when_index_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_index_bytes: 24, // three offset entries, two time entries
        index_interval_bytes: 0,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    for _ in 0..6 {
        log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    }
    // Offset entries for batches 2, 3 and 4 (one time entry: the timestamp never grows);
    // the 5th append finds the offset index full.
    assert_eq!(log.segment_base_offsets(), vec![0, 4]);
    assert_eq!(all_offsets(&log).len(), 6);
}

#[test]
fn rejected_appends_leave_the_log_unchanged() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    let good = batch(2, T0);
    let check_unchanged = |log: &Log| {
        assert_eq!(log.log_end_offset(), 0);
        assert_eq!(log.size_bytes(), 0);
    };
    // CRC mismatch in the second batch: the first is not written either.
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let mut payload = good.clone();
    payload.extend(&bad);
    assert!(matches!(
        log.append(&payload, 0, &v(&c)),
        Err(LogError::CorruptMessage(_))
    ));
    // Torn trailing batch.
    let mut payload = good.clone();
    payload.extend(&good[..20]);
    assert!(matches!(
        log.append(&payload, 0, &v(&c)),
        Err(LogError::CorruptMessage(_))
    ));
    assert!(matches!(
        log.append(&[], 0, &v(&c)),
        Err(LogError::InvalidRecord { .. })
    ));
    // Wrong magic.
    let mut m1 = good.clone();
    m1[16] = 1;
    assert!(matches!(
        log.append(&m1, 0, &v(&c)),
        Err(LogError::UnsupportedMagic(1))
    ));
    // Sizes.
    log.update_config(LogConfig {
        max_message_bytes: good.len() as i32 - 1,
        ..config()
    });
    assert!(matches!(
        log.append(&good, 0, &v(&c)),
        Err(LogError::MessageTooLarge { .. })
    ));
    log.update_config(LogConfig {
        segment_bytes: good.len() as i32 * 2 - 1,
        ..config()
    });
    let mut two = good.clone();
    two.extend(&good);
    assert!(matches!(
        log.append(&two, 0, &v(&c)),
        Err(LogError::RecordListTooLarge { .. })
    ));
    // Timestamps out of range (default after.max = 1h) and a LogAppendTime claim.
    log.update_config(config());
    let future = batch_with(&[T0, T0 + 3_600_001], 5);
    match log.append(&future, 0, &v(&c)) {
        Err(LogError::InvalidTimestamp { record_errors, .. }) => {
            assert_eq!(
                record_errors.iter().map(|e| e.0).collect::<Vec<_>>(),
                vec![1]
            );
        }
        other => panic!("{other:?}"),
    }
    log.update_config(LogConfig {
        message_timestamp_before_max_ms: 1000,
        ..config()
    });
    assert!(matches!(
        log.append(&batch(1, T0 - 1001), 0, &v(&c)),
        Err(LogError::InvalidTimestamp { .. })
    ));
    log.update_config(config());
    let lat = {
        let mut b = BatchBuilder::new(0, Compression::None).log_append_time(true);
        b.push(T0, Some(b"k"), Some(b"v"), &[]);
        b.build().unwrap()
    };
    assert!(matches!(
        log.append(&lat, 0, &v(&c)),
        Err(LogError::InvalidTimestamp { .. })
    ));
    // Keyless records on a compacted topic.
    log.update_config(LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        ..config()
    });
    let keyless = {
        let mut b = BatchBuilder::new(0, Compression::None);
        b.push(T0, Some(b"k"), Some(b"v"), &[]);
        b.push(T0, None, Some(b"v"), &[]);
        b.push(T0, None, None, &[]);
        b.build().unwrap()
    };
    match log.append(&keyless, 0, &v(&c)) {
        Err(LogError::InvalidRecord { record_errors, .. }) => {
            assert_eq!(
                record_errors.iter().map(|e| e.0).collect::<Vec<_>>(),
                vec![1, 2]
            );
        }
        other => panic!("{other:?}"),
    }
    // Non-zero base offset from a client.
    let based = {
        let mut b = BatchBuilder::new(5, Compression::None);
        b.push(T0, Some(b"k"), Some(b"v"), &[]);
        b.build().unwrap()
    };
    assert!(matches!(
        log.append(&based, 0, &v(&c)),
        Err(LogError::InvalidRecord { .. })
    ));
    check_unchanged(&log);
    // A keyed batch is fine on the compacted topic.
    assert_eq!(log.append(&good, 0, &v(&c)).unwrap().last_offset, 1);
}

#[test]
fn flush_advances_the_recovery_point() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let log = open(
        dir.path(),
        LogConfig {
            segment_bytes: 200,
            ..config()
        },
        &c,
        Recovery::Clean,
    );
    assert_eq!(log.flushed_offset(), 0);
    for _ in 0..5 {
        log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    }
    assert_eq!(log.flushed_offset(), 0);
    assert_eq!(log.flush().unwrap(), 5);
    assert_eq!(log.flushed_offset(), 5);
    assert_eq!(log.flush().unwrap(), 5);
    // flush.messages triggers a flush on append.
    log.update_config(LogConfig {
        flush_messages: 2,
        segment_bytes: 200,
        ..config()
    });
    log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    assert_eq!(log.flushed_offset(), 5);
    log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    assert_eq!(log.flushed_offset(), 7);
}

#[test]
fn an_append_is_light_until_it_would_roll_or_fsync() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let b = batch(1, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 2) as i32,
        ..config()
    };
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    assert!(log.append_is_light(b.len()), "an empty segment never rolls");
    log.append(&b, 0, &v(&c)).unwrap();
    assert!(log.append_is_light(b.len()), "the second batch still fits");
    log.append(&b, 0, &v(&c)).unwrap();
    assert!(
        !log.append_is_light(b.len()),
        "a third would roll the full segment"
    );
    let rolled = log.segment_base_offsets().len();
    log.append(&b, 0, &v(&c)).unwrap();
    assert_eq!(log.segment_base_offsets().len(), rolled + 1, "and it did");
    assert!(log.append_is_light(b.len()));
    log.update_config(LogConfig {
        flush_messages: 1_000,
        ..cfg
    });
    assert!(!log.append_is_light(b.len()), "flush.messages may fsync");
}

#[test]
fn delete_dir_removes_the_partition() {
    let c = clock();
    let root = tempfile::tempdir().unwrap();
    let d = root.path().join("t-0");
    let log = open(&d, config(), &c, Recovery::Clean);
    log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    log.delete_dir().unwrap();
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

#[test]
fn internal_appends_skip_client_only_rules() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    log.append(&batch(2, T0), 0, &v(&c)).unwrap();
    let marker = {
        let mut b = BatchBuilder::new(0, Compression::None)
            .control(true)
            .transactional(true)
            .producer_id(7)
            .producer_epoch(0)
            .base_sequence(-1);
        b.push(T0, Some(b"\0\0\0\0"), Some(b"\0\0\0\0\0\0"), &[]);
        b.build().unwrap()
    };
    assert!(matches!(
        log.append(&marker, 0, &v(&c)),
        Err(LogError::InvalidRecord { .. })
    ));
    let info = log.append_internal(&marker, 0, c.now_ms()).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (2, 2));
    let hs = headers(&log.read(2, usize::MAX, false).unwrap().records);
    assert!(hs[0].is_control());
    // Integrity is still checked.
    let mut bad = marker.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(matches!(
        log.append_internal(&bad, 0, c.now_ms()),
        Err(LogError::CorruptMessage(_))
    ));
}
