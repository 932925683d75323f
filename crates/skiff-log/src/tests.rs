//! Log behaviour tests on temp dirs with a manual clock: append/read, rolls, reopen and crash
//! recovery, damaged indexes, retention, DeleteRecords, timestamp lookups, validation, LogDir.

use crate::{
    AppendValidation, CleanupPolicy, Clock, Log, LogConfig, LogDir, LogError, ManualClock, Recovery,
};
use skiff_records::{BatchBuilder, BatchHeader, Batches, Compression, TimestampType};
use std::path::Path;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(T0))
}

fn batch_with(timestamps: &[i64], value_len: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, Compression::None);
    let value = vec![b'v'; value_len];
    for (i, ts) in timestamps.iter().enumerate() {
        let key = format!("k{i}");
        b.push(*ts, Some(key.as_bytes()), Some(&value), &[]);
    }
    b.build().unwrap()
}

/// A batch of `n` records at time `ts`.
fn batch(n: usize, ts: i64) -> Vec<u8> {
    batch_with(&vec![ts; n], 20)
}

fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, cfg: LogConfig, c: &Arc<ManualClock>, r: Recovery) -> Log {
    Log::open(dir, cfg, c.clone(), r).unwrap()
}

fn v(c: &ManualClock) -> AppendValidation {
    AppendValidation { now_ms: c.now_ms() }
}

/// Headers of every batch in `bytes`, checking the bytes hold only whole batches.
fn headers(bytes: &[u8]) -> Vec<BatchHeader> {
    let mut it = Batches::new(bytes);
    let hs: Vec<BatchHeader> = it.by_ref().map(|r| r.unwrap().0).collect();
    assert_eq!(it.position(), bytes.len(), "partial batch returned");
    hs
}

fn all_offsets(log: &Log) -> Vec<(i64, i64)> {
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
fn reopen_after_clean_close() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 400,
        ..config()
    };
    let before;
    {
        let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        for i in 0..12 {
            log.append(&batch(1 + i % 3, T0 + i as i64), 0, &v(&c))
                .unwrap();
        }
        before = all_offsets(&log);
        log.close().unwrap();
        assert!(matches!(
            log.append(&batch(1, T0), 0, &v(&c)),
            Err(LogError::Offline(_))
        ));
    }
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    assert_eq!(all_offsets(&log), before);
    let leo = log.log_end_offset();
    assert_eq!(
        log.append(&batch(1, T0), 0, &v(&c)).unwrap().first_offset,
        leo
    );
    assert_eq!(
        log.max_timestamp().unwrap().map(|(ts, _)| ts),
        Some(T0 + 11)
    );
}

/// Writes three batches, then returns the log file and the start of the last batch.
fn three_batches(dir: &Path, c: &Arc<ManualClock>) -> (std::path::PathBuf, u64, u64) {
    let log = open(dir, config(), c, Recovery::Clean);
    log.append(&batch(2, T0), 0, &v(c)).unwrap();
    log.append(&batch(3, T0), 0, &v(c)).unwrap();
    let start = log.size_bytes();
    log.append(&batch(4, T0), 0, &v(c)).unwrap();
    let end = log.size_bytes();
    drop(log); // crash: no close
    (dir.join("00000000000000000000.log"), start, end)
}

#[test]
fn crash_recovery_truncates_torn_tail_at_every_byte() {
    let c = clock();
    let template = tempfile::tempdir().unwrap();
    let (_, start, end) = three_batches(template.path(), &c);
    for cut in start..end {
        let dir = tempfile::tempdir().unwrap();
        let (log_file, _, _) = three_batches(dir.path(), &c);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&log_file)
            .unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        let log = open(dir.path(), config(), &c, Recovery::FromOffset(0));
        assert_eq!(log.log_end_offset(), 5, "cut at {cut}");
        assert_eq!(all_offsets(&log), vec![(0, 1), (2, 4)]);
        assert_eq!(std::fs::metadata(&log_file).unwrap().len(), start);
        assert_eq!(
            log.append(&batch(1, T0), 0, &v(&c)).unwrap().first_offset,
            5
        );
    }
}

#[test]
fn crash_recovery_truncates_corrupt_last_batch() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let (log_file, start, end) = three_batches(dir.path(), &c);
    let mut bytes = std::fs::read(&log_file).unwrap();
    let i = usize::try_from(end - 3).unwrap();
    bytes[i] ^= 0xff;
    std::fs::write(&log_file, &bytes).unwrap();
    // A clean open checks the tail too.
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(log.size_bytes(), start);
    drop(log);
    let log = open(dir.path(), config(), &c, Recovery::FromOffset(0));
    assert_eq!(all_offsets(&log), vec![(0, 1), (2, 4)]);
}

#[test]
fn corrupt_middle_segment_drops_later_segments() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let b = batch(1, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 2) as i32,
        ..config()
    };
    {
        let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        for _ in 0..6 {
            log.append(&b, 0, &v(&c)).unwrap();
        }
        assert_eq!(log.segment_base_offsets(), vec![0, 2, 4]);
    }
    let p = dir.path().join("00000000000000000002.log");
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&p, &bytes).unwrap();
    let log = open(dir.path(), cfg, &c, Recovery::FromOffset(2));
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    assert_eq!(log.log_end_offset(), 3);
    assert!(!dir.path().join("00000000000000000004.log").exists());
}

#[test]
fn missing_or_garbage_indexes_are_rebuilt() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let b = batch(3, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 4) as i32,
        index_interval_bytes: 10,
        ..config()
    };
    let mut ts = T0;
    {
        let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        for _ in 0..10 {
            ts += 10;
            log.append(&batch(3, ts), 0, &v(&c)).unwrap();
        }
        log.close().unwrap();
    }
    let idx = dir.path().join("00000000000000000000.index");
    let tidx = dir.path().join("00000000000000000012.timeindex");
    let good_idx = std::fs::read(&idx).unwrap();
    assert!(!good_idx.is_empty());
    std::fs::remove_file(&idx).unwrap();
    std::fs::write(&tidx, b"garbage").unwrap();
    std::fs::write(dir.path().join("00000000000000000024.index"), [0xffu8; 8]).unwrap();
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    assert_eq!(std::fs::read(&idx).unwrap(), good_idx);
    assert_eq!(std::fs::metadata(&tidx).unwrap().len() % 12, 0);
    assert!(std::fs::metadata(&tidx).unwrap().len() > 0);
    assert_eq!(all_offsets(&log).len(), 10);
    let hs = headers(&log.read(25, 1, true).unwrap().records);
    assert_eq!(hs[0].base_offset, 24);
    assert_eq!(
        log.offset_for_timestamp(T0 + 55).unwrap(),
        Some((15, T0 + 60))
    );
}

#[test]
fn leftover_files_are_cleaned_up() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    {
        let log = open(dir.path(), config(), &c, Recovery::Clean);
        log.append(&batch(2, T0), 0, &v(&c)).unwrap();
        log.close().unwrap();
    }
    let d = dir.path();
    std::fs::write(d.join("00000000000000000000.log.deleted"), b"x").unwrap();
    std::fs::write(d.join("00000000000000000005.log.cleaned"), b"x").unwrap();
    std::fs::write(d.join("00000000000000000009.index"), b"").unwrap();
    std::fs::write(d.join("00000000000000000009.timeindex"), b"").unwrap();
    let log = open(d, config(), &c, Recovery::Clean);
    for gone in [
        "00000000000000000000.log.deleted",
        "00000000000000000005.log.cleaned",
        "00000000000000000009.index",
        "00000000000000000009.timeindex",
    ] {
        assert!(!d.join(gone).exists(), "{gone}");
    }
    assert_eq!(log.log_end_offset(), 2);
}

#[test]
fn swap_file_replaces_the_segments_it_covers() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let b = batch(1, T0);
    let cfg = LogConfig {
        segment_bytes: b.len() as i32,
        ..config()
    };
    {
        let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        for _ in 0..4 {
            log.append(&b, 0, &v(&c)).unwrap();
        }
        assert_eq!(log.segment_base_offsets(), vec![0, 1, 2, 3]);
        log.close().unwrap();
    }
    // A "cleaned" segment holding offsets 0 and 1 (segments 0 and 1) whose swap was cut short.
    let d = dir.path();
    let mut swap = std::fs::read(d.join("00000000000000000000.log")).unwrap();
    swap.extend(std::fs::read(d.join("00000000000000000001.log")).unwrap());
    std::fs::write(d.join("00000000000000000000.log.swap"), &swap).unwrap();
    let log = open(d, cfg, &c, Recovery::Clean);
    assert_eq!(log.segment_base_offsets(), vec![0, 2, 3]);
    assert_eq!(all_offsets(&log), vec![(0, 0), (1, 1), (2, 2), (3, 3)]);
}

#[test]
fn time_retention_is_strict_and_may_take_the_active_segment() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let b = batch(1, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 2) as i32,
        retention_ms: 1000,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    for i in 0..5 {
        log.append(&batch(1, T0 + i * 100), 0, &v(&c)).unwrap();
    }
    assert_eq!(log.segment_base_offsets(), vec![0, 2, 4]);
    // Segment 0 has max ts T0+100.
    c.set(T0 + 1100);
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 0);
    c.set(T0 + 1101);
    let out = log.apply_retention().unwrap();
    assert_eq!(out.deleted_segments, 1);
    assert_eq!(out.log_start_offset, 2);
    assert!(!dir.path().join("00000000000000000000.log").exists());
    assert!(matches!(
        log.read(1, 100, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // Everything expired: the active segment goes too, after a roll that keeps the LEO.
    c.set(T0 + 5000);
    let out = log.apply_retention().unwrap();
    assert_eq!(out.deleted_segments, 2);
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(log.log_start_offset(), 5);
    assert_eq!(log.segment_base_offsets(), vec![5]);
    assert_eq!(log.size_bytes(), 0);
    assert_eq!(
        log.append(&batch(1, T0 + 5000), 0, &v(&c))
            .unwrap()
            .first_offset,
        5
    );
    // No delete policy: nothing goes.
    log.update_config(LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        retention_ms: 1000,
        ..config()
    });
    c.set(T0 + 100_000);
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 0);
}

#[test]
fn size_retention_keeps_at_least_retention_bytes() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let b = batch(1, T0);
    let seg = b.len() as i64 * 2;
    let cfg = LogConfig {
        segment_bytes: seg as i32,
        ..config()
    };
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    for _ in 0..6 {
        log.append(&b, 0, &v(&c)).unwrap();
    }
    assert_eq!(log.segment_count(), 3);
    // size = 3 segments; cap = 2 segments + 1 byte: deleting one would leave less than the cap.
    log.update_config(LogConfig {
        retention_bytes: 2 * seg + 1,
        ..cfg.clone()
    });
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 0);
    // cap = exactly 2 segments: one goes.
    log.update_config(LogConfig {
        retention_bytes: 2 * seg,
        ..cfg.clone()
    });
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 1);
    assert_eq!(log.size_bytes() as i64, 2 * seg);
    assert_eq!(log.log_start_offset(), 2);
    // 0 wipes everything but keeps the LEO.
    log.update_config(LogConfig {
        retention_bytes: 0,
        ..cfg
    });
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 2);
    assert_eq!(log.log_start_offset(), 6);
    assert_eq!(log.log_end_offset(), 6);
}

#[test]
fn delete_records_moves_log_start() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let b = batch(2, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 2) as i32,
        ..config()
    };
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    for _ in 0..5 {
        log.append(&b, 0, &v(&c)).unwrap();
    }
    assert_eq!(log.segment_base_offsets(), vec![0, 4, 8]);
    assert!(matches!(
        log.delete_records_before(11),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert!(matches!(
        log.delete_records_before(-2),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert_eq!(log.delete_records_before(5).unwrap(), 5);
    assert_eq!(log.segment_base_offsets(), vec![4, 8]);
    assert_eq!(log.delete_records_before(3).unwrap(), 5, "never backwards");
    assert!(matches!(
        log.read(4, 100, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // Reading at the start returns the batch containing it.
    let hs = headers(&log.read(5, usize::MAX, true).unwrap().records);
    assert_eq!(hs[0].base_offset, 4);
    assert_eq!(log.delete_records_before(-1).unwrap(), 10);
    assert_eq!(log.segment_base_offsets(), vec![8]);
    assert!(log.read(10, 100, true).unwrap().records.is_empty());
    // The start survives a reopen via the checkpoint path.
    drop(log);
    let log =
        Log::open_with_log_start(dir.path(), cfg, c.clone(), Recovery::Clean, Some(10)).unwrap();
    assert_eq!(log.log_start_offset(), 10);
}

#[test]
fn timestamp_lookups() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_bytes: 300,
        index_interval_bytes: 1,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    assert_eq!(log.max_timestamp().unwrap(), None);
    assert_eq!(log.offset_for_timestamp(0).unwrap(), None);
    // offsets 0..3: 10, 30, 20 ; 3..5: 50, 40 ; 5..7: 50, 60 ; 7: 45
    log.append(&batch_with(&[T0 + 10, T0 + 30, T0 + 20], 10), 0, &v(&c))
        .unwrap();
    log.append(&batch_with(&[T0 + 50, T0 + 40], 10), 0, &v(&c))
        .unwrap();
    log.append(&batch_with(&[T0 + 50, T0 + 60], 10), 0, &v(&c))
        .unwrap();
    log.append(&batch_with(&[T0 + 45], 10), 0, &v(&c)).unwrap();
    assert!(log.segment_count() > 1);
    assert_eq!(log.offset_for_timestamp(T0).unwrap(), Some((0, T0 + 10)));
    assert_eq!(
        log.offset_for_timestamp(T0 + 15).unwrap(),
        Some((1, T0 + 30))
    );
    assert_eq!(
        log.offset_for_timestamp(T0 + 31).unwrap(),
        Some((3, T0 + 50))
    );
    assert_eq!(
        log.offset_for_timestamp(T0 + 55).unwrap(),
        Some((6, T0 + 60))
    );
    assert_eq!(log.offset_for_timestamp(T0 + 61).unwrap(), None);
    assert_eq!(log.max_timestamp().unwrap(), Some((T0 + 60, 6)));
    log.append(&batch_with(&[T0 + 1, T0 + 60], 10), 0, &v(&c))
        .unwrap();
    assert_eq!(
        log.max_timestamp().unwrap(),
        Some((T0 + 60, 6)),
        "first on a tie"
    );
    log.delete_records_before(2).unwrap();
    assert_eq!(log.offset_for_timestamp(T0).unwrap(), Some((2, T0 + 20)));
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
fn log_dir_lock_checkpoints_and_clean_marker() {
    let c = clock();
    let root = tempfile::tempdir().unwrap();
    let (ld, clean) = LogDir::open(root.path()).unwrap();
    assert!(!clean);
    assert!(matches!(
        LogDir::open(root.path()),
        Err(LogError::DirLocked(_))
    ));
    let a = ld
        .open_log("my-topic", 0, config(), c.clone(), clean)
        .unwrap();
    let b = ld.open_log("other", 3, config(), c.clone(), clean).unwrap();
    for _ in 0..3 {
        a.append(&batch(2, T0), 0, &v(&c)).unwrap();
    }
    b.append(&batch(1, T0), 0, &v(&c)).unwrap();
    a.flush().unwrap();
    a.delete_records_before(2).unwrap();
    std::fs::create_dir(root.path().join("gone-1.abc-delete")).unwrap();
    std::fs::write(root.path().join("stray-file-0"), b"").unwrap();
    let dirs = ld.list_partition_dirs().unwrap();
    assert_eq!(
        dirs.iter()
            .map(|(t, p, _)| (t.as_str(), *p))
            .collect::<Vec<_>>(),
        vec![("my-topic", 0), ("other", 3)]
    );
    assert!(!root.path().join("gone-1.abc-delete").exists());
    ld.write_checkpoints(&[("my-topic".into(), 0, &a), ("other".into(), 3, &b)])
        .unwrap();
    let text =
        std::fs::read_to_string(root.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert!(text.starts_with("0\n2\n"));
    a.close().unwrap();
    b.close().unwrap();
    ld.write_checkpoints(&[("my-topic".into(), 0, &a), ("other".into(), 3, &b)])
        .unwrap();
    ld.mark_clean_shutdown().unwrap();
    drop((a, b, ld));

    let (ld, clean) = LogDir::open(root.path()).unwrap();
    assert!(clean);
    assert!(!root.path().join(".kafka_cleanshutdown").exists());
    assert_eq!(ld.recovery_for("my-topic", 0, clean), Recovery::Clean);
    assert_eq!(
        ld.recovery_for("my-topic", 0, false),
        Recovery::FromOffset(6)
    );
    assert_eq!(ld.recovery_for("other", 3, false), Recovery::FromOffset(1));
    assert_eq!(ld.recovery_for("nope", 0, false), Recovery::FromOffset(0));
    assert_eq!(ld.log_start_for("my-topic", 0), Some(2));
    let a = ld
        .open_log("my-topic", 0, config(), c.clone(), clean)
        .unwrap();
    assert_eq!(a.log_start_offset(), 2);
    assert_eq!(a.log_end_offset(), 6);
}

mod model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Append {
            batches: usize,
            records: usize,
            value_len: usize,
        },
        Roll,
        Reopen {
            clean: bool,
        },
        Flush,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (1usize..4, 1usize..5, 0usize..200)
                .prop_map(|(batches, records, value_len)| Op::Append { batches, records, value_len }),
            1 => Just(Op::Roll),
            1 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
            1 => Just(Op::Flush),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn reads_return_every_appended_batch(ops in prop::collection::vec(op(), 1..25)) {
            let dir = tempfile::tempdir().unwrap();
            let c = clock();
            let cfg = LogConfig {
                segment_bytes: 3000,
                segment_ms: 50,
                index_interval_bytes: 64,
                ..LogConfig::default()
            };
            let mut log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
            // Model: (record count, payload) of each batch in order.
            let mut model: Vec<(usize, Vec<u8>)> = Vec::new();
            let mut ts = T0;
            for op in ops {
                match op {
                    Op::Append { batches, records, value_len } => {
                        let mut payload = Vec::new();
                        let mut these = Vec::new();
                        for _ in 0..batches {
                            ts += 1;
                            let b = batch_with(&vec![ts; records], value_len);
                            payload.extend(&b);
                            these.push((records, b));
                        }
                        let info = log.append(&payload, 0, &v(&c)).unwrap();
                        let expected_first: usize = model.iter().map(|m| m.0).sum();
                        prop_assert_eq!(info.first_offset, expected_first as i64);
                        model.extend(these);
                    }
                    Op::Roll => {
                        c.advance(100);
                        ts = c.now_ms();
                        log.roll_if_due().unwrap();
                    }
                    Op::Reopen { clean } => {
                        let rp = log.flushed_offset();
                        if clean { log.close().unwrap(); }
                        drop(log);
                        let r = if clean { Recovery::Clean } else { Recovery::FromOffset(rp) };
                        log = open(dir.path(), cfg.clone(), &c, r);
                    }
                    Op::Flush => { log.flush().unwrap(); }
                }
            }
            let r = log.read(0, usize::MAX, false).unwrap();
            let hs = headers(&r.records);
            prop_assert_eq!(hs.len(), model.len());
            let mut next = 0i64;
            let mut pos = 0usize;
            for (h, (n, original)) in hs.iter().zip(&model) {
                prop_assert_eq!(h.base_offset, next);
                prop_assert_eq!(h.record_count as usize, *n);
                let stored = &r.records[pos..pos + h.total_size()];
                // Identical to what was appended apart from the stamped base offset.
                prop_assert_eq!(&stored[8..12], &original[8..12]);
                prop_assert_eq!(&stored[16..], &original[16..]);
                next += *n as i64;
                pos += h.total_size();
            }
            prop_assert_eq!(log.log_end_offset(), next);
        }
    }
}
