//! The cleaner's storage API: views, segment readers, cleaned writers, swaps with offset gaps,
//! compacted-topic rolls and retention, free space.

use super::*;
use crate::{free_space, CleanedSegmentWriter};

/// Two records per batch, three batches per segment: segment bases 0, 6, 12, ...
pub(super) fn layout() -> (LogConfig, usize) {
    let b = batch(2, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 3) as i32,
        ..config()
    };
    (cfg, b.len())
}

/// `n` batches of two records; batch i has timestamp T0 + 10 i.
pub(super) fn fill(log: &Log, c: &ManualClock, n: i64) {
    for i in 0..n {
        log.append(&batch(2, T0 + 10 * i), 0, &v(c)).unwrap();
    }
}

/// A cleaned segment for `bases`, keeping the batches `keep` accepts.
pub(super) fn clean(
    log: &Log,
    bases: &[i64],
    keep: impl Fn(&BatchHeader) -> bool,
) -> CleanedSegmentWriter {
    let first = bases.first().copied().unwrap();
    let mut w = log.cleaned_segment_writer(first).unwrap();
    for &b in bases {
        for item in log.segment_batches(b, 150).unwrap() {
            let (h, bytes) = item.unwrap();
            if keep(&h) {
                w.append_batch(&bytes).unwrap();
            }
        }
    }
    w
}

/// Every batch readable from 0, as (base offset, bytes).
pub(super) fn read_all(log: &Log) -> Vec<(i64, Vec<u8>)> {
    let r = log.read(log.log_start_offset(), usize::MAX, true).unwrap();
    let mut it = Batches::new(&r.records);
    let out = it
        .by_ref()
        .map(|x| {
            let (h, b) = x.unwrap();
            (h.base_offset, b.to_vec())
        })
        .collect();
    assert_eq!(it.position(), r.records.len());
    out
}

#[test]
fn cleaner_view_describes_every_segment() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, len) = layout();
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    fill(&log, &c, 7);
    let view = log.cleaner_view();
    assert_eq!(view.config, cfg);
    assert_eq!((view.log_start_offset, view.log_end_offset), (0, 14));
    assert_eq!(view.active_base_offset, 12);
    let bases: Vec<i64> = view.segments.iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, 6, 12]);
    let s0 = &view.segments[0];
    assert_eq!(s0.next_offset, 6);
    assert_eq!(s0.size, 3 * len as u64);
    assert_eq!(s0.largest_timestamp, T0 + 20);
    assert_eq!(s0.first_batch_max_timestamp, Some(T0));
    // index.interval.bytes=100: the 2nd and 3rd batches are indexed, timestamps grow.
    assert_eq!(s0.index_entries, 2);
    assert_eq!(s0.time_index_entries, 2);
    assert!(!s0.is_active);
    let active = &view.segments[2];
    assert!(active.is_active);
    assert_eq!(
        (active.next_offset, active.size),
        (14, len as u64),
        "the active segment is listed too"
    );
    assert_eq!(active.first_batch_max_timestamp, Some(T0 + 60));
}

#[test]
fn segment_batches_returns_whole_batches_at_any_buffer_size() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 100_000,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    let big = batch_with(&[T0; 3], 5000); // larger than most buffers below
    log.append(&batch(2, T0), 0, &v(&c)).unwrap();
    log.append(&big, 0, &v(&c)).unwrap();
    log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    let expected = read_all(&log);
    for buffer in [0usize, 1, 61, 100, 4096, 1 << 20] {
        let mut it = log.segment_batches(0, buffer).unwrap();
        assert_eq!(it.base_offset(), 0);
        let got: Vec<(i64, Vec<u8>)> = it
            .by_ref()
            .map(|r| {
                let (h, b) = r.unwrap();
                assert_eq!(h.total_size(), b.len());
                (h.base_offset, b.to_vec())
            })
            .collect();
        assert_eq!(got, expected, "buffer {buffer}");
        assert_eq!(it.bytes_read(), log.size_bytes());
    }
}

#[test]
fn segment_batches_reports_a_torn_or_corrupt_tail() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    fill(&log, &c, 2);
    // Corrupt the second batch's length field behind the log's back.
    let path = dir.path().join("00000000000000000000.log");
    let first_len = batch(2, T0).len() as u64;
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[0x7f, 0, 0, 0], first_len + 8).unwrap();
    let items: Vec<_> = log.segment_batches(0, 64).unwrap().collect();
    assert_eq!(items.len(), 2, "one batch, then one error, then the end");
    assert!(items[0].is_ok());
    assert!(matches!(items[1], Err(LogError::CorruptMessage(_))));
}

#[test]
fn a_removed_segment_is_gone_but_open_readers_keep_reading() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, _) = layout();
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    fill(&log, &c, 7);
    let reader = log.segment_batches(0, 4096).unwrap();
    assert!(matches!(
        log.segment_batches(3, 4096),
        Err(LogError::SegmentGone(_))
    ));
    log.delete_records_before(6).unwrap();
    assert!(matches!(
        log.segment_batches(0, 4096),
        Err(LogError::SegmentGone(_))
    ));
    let bases: Vec<i64> = reader.map(|r| r.unwrap().0.base_offset).collect();
    assert_eq!(bases, vec![0, 2, 4]);
}

#[test]
fn cleaned_writer_checks_batches_and_cleans_up_after_itself() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, _) = layout();
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    fill(&log, &c, 7);
    let batches: Vec<Vec<u8>> = log
        .segment_batches(0, 4096)
        .unwrap()
        .map(|r| r.unwrap().1.to_vec())
        .collect();
    let cleaned = dir.path().join("00000000000000000000.log.cleaned");
    let mut w = log.cleaned_segment_writer(0).unwrap();
    assert!(cleaned.exists());
    w.append_batch(&batches[1]).unwrap();
    assert_eq!(w.size(), batches[1].len() as u64);
    assert_eq!((w.base_offset(), w.next_offset()), (0, 4));
    // Offsets must go up.
    assert!(matches!(
        w.append_batch(&batches[0]),
        Err(LogError::CorruptMessage(_))
    ));
    assert!(w.append_batch(&batches[1]).is_err());
    // A torn or corrupted batch is refused.
    let b2 = &batches[2];
    assert!(w.append_batch(&b2[..b2.len() - 1]).is_err());
    let mut bad = b2.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(w.append_batch(&bad).is_err());
    w.append_batch(b2).unwrap();
    w.abort().unwrap();
    for suffix in ["log", "index", "timeindex"] {
        assert!(!dir
            .path()
            .join(format!("00000000000000000000.{suffix}.cleaned"))
            .exists());
    }
    // Dropping an unswapped writer removes its files too.
    drop(log.cleaned_segment_writer(6).unwrap());
    assert!(!dir.path().join("00000000000000000006.log.cleaned").exists());
    assert_eq!(log.segment_base_offsets(), vec![0, 6, 12]);
}

#[test]
fn swap_with_gaps_keeps_offsets_and_reads_skip_the_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, len) = layout();
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    fill(&log, &c, 13); // segments 0, 6, 12, 18 sealed; 24 active
    let before_leo = log.log_end_offset();
    // Keep batches whose base offset is a multiple of 4: 0, 4, 8, 12, 16 (of 0..18).
    let w = clean(&log, &[0, 6, 12], |h| h.base_offset % 4 == 0);
    assert_eq!(w.size(), 5 * len as u64);
    log.replace_segments(&[0, 6, 12], w).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 18, 24]);
    assert_eq!(log.log_end_offset(), before_leo);
    assert_eq!(log.log_start_offset(), 0);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    // Producer-state snapshots describe offsets, not segments: a swap leaves them alone.
    assert!(
        names
            .iter()
            .filter(|n| !n.ends_with(".snapshot"))
            .all(|n| !n.contains(".cleaned")
                && !n.contains(".swap")
                && !n.contains(".deleted")
                && !n.starts_with("00000000000000000006")),
        "{names:?}"
    );
    let check = |log: &Log| {
        let bases: Vec<i64> = read_all(log).iter().map(|(b, _)| *b).collect();
        assert_eq!(bases[..9], [0, 4, 8, 12, 16, 18, 20, 22, 24]);
        // A read inside a gap returns the next batch, within and across segments.
        for (at, want) in [(2, 4), (3, 4), (6, 8), (7, 8), (10, 12), (15, 16), (17, 16)] {
            let r = log.read(at, 1, true).unwrap();
            assert_eq!(headers(&r.records)[0].base_offset, want, "read at {at}");
        }
        let view = log.cleaner_view();
        let s0 = &view.segments[0];
        assert_eq!((s0.base_offset, s0.next_offset), (0, 18));
        assert_eq!(s0.first_batch_max_timestamp, Some(T0));
        assert_eq!(s0.largest_timestamp, T0 + 80);
        // Timestamp lookups across the gaps: batch 1 (T0+10) is gone, batch 2 (T0+20, offset 4) is next.
        assert_eq!(
            log.offset_for_timestamp(T0 + 5).unwrap(),
            Some((4, T0 + 20))
        );
        assert_eq!(
            log.offset_for_timestamp(T0 + 85).unwrap(),
            Some((18, T0 + 90))
        );
        assert_eq!(log.max_timestamp().unwrap(), Some((T0 + 120, 24)));
    };
    check(&log);
    // The new segment's indexes and the gaps survive both kinds of reopen.
    drop(log);
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    check(&log);
    log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    drop(log);
    let log = open(dir.path(), cfg, &c, Recovery::FromOffset(0));
    check(&log);
    assert_eq!(log.log_end_offset(), before_leo + 1);
    // Retention and DeleteRecords over a gap.
    assert_eq!(log.delete_records_before(6).unwrap(), 6);
    assert_eq!(log.segment_base_offsets(), vec![0, 18, 24]);
    assert_eq!(
        headers(&log.read(6, 1, true).unwrap().records)[0].base_offset,
        8
    );
    assert_eq!(log.delete_records_before(18).unwrap(), 18);
    assert_eq!(log.segment_base_offsets(), vec![18, 24]);
}

#[test]
fn an_empty_cleaned_segment_and_repeated_cleaning() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, _) = layout();
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    fill(&log, &c, 10); // 0, 6, 12 sealed; 18 active
    log.replace_segments(&[0], clean(&log, &[0], |_| false))
        .unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 6, 12, 18]);
    assert_eq!(read_all(&log)[0].0, 6);
    // Clean again: the empty segment merges with the next ones.
    let w = clean(&log, &[0, 6, 12], |h| h.base_offset >= 10);
    log.replace_segments(&[0, 6, 12], w).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 18]);
    let bases: Vec<i64> = read_all(&log).iter().map(|(b, _)| *b).collect();
    assert_eq!(bases, vec![10, 12, 14, 16, 18]);
    drop(log);
    let log = open(dir.path(), cfg, &c, Recovery::FromOffset(0));
    let again: Vec<i64> = read_all(&log).iter().map(|(b, _)| *b).collect();
    assert_eq!(again, bases);
    assert_eq!(log.log_end_offset(), 20);
}

#[test]
fn replace_refuses_gone_active_or_mismatched_segments() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, _) = layout();
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    fill(&log, &c, 10); // 0, 6, 12 sealed; 18 active
    let before = read_all(&log);
    let cleaned_log = dir.path().join("00000000000000000000.log.cleaned");

    // Retention moved on between planning and the swap.
    let w = clean(&log, &[0, 6], |_| true);
    log.delete_records_before(6).unwrap();
    assert!(matches!(
        log.replace_segments(&[0, 6], w),
        Err(LogError::SegmentGone(_))
    ));
    assert!(!cleaned_log.exists(), "cleaned files are deleted");
    assert_eq!(read_all(&log), before[3..].to_vec());

    let w = clean(&log, &[6, 12], |_| true);
    assert!(
        matches!(
            log.replace_segments(&[6, 12, 18], w),
            Err(LogError::Aborted(_))
        ),
        "the active segment is never replaced"
    );
    let w = clean(&log, &[6], |_| true);
    assert!(matches!(
        log.replace_segments(&[12], w),
        Err(LogError::Aborted(_))
    ));
    let w = clean(&log, &[6, 12], |_| true);
    assert!(
        matches!(log.replace_segments(&[6], w), Err(LogError::Aborted(_))),
        "the cleaned data must lie inside the replaced range"
    );
    let w = clean(&log, &[6], |_| true);
    log.close().unwrap();
    assert!(log.is_closed());
    assert!(matches!(
        log.replace_segments(&[6], w),
        Err(LogError::Aborted(_))
    ));
    assert_eq!(read_all(&log), before[3..].to_vec());
    assert!(!dir.path().join("00000000000000000006.log.cleaned").exists());
}

#[test]
fn compacted_topics_roll_by_max_compaction_lag() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let compact = CleanupPolicy {
        delete: false,
        compact: true,
    };
    let cfg = LogConfig {
        cleanup_policy: compact,
        segment_ms: 1_000_000,
        max_compaction_lag_ms: 1000,
        ..config()
    };
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    // Append-time roll: the incoming batch is more than the lag past the first one.
    log.append(&batch(1, T0), 0, &v(&c)).unwrap();
    log.append(&batch(1, T0 + 1000), 0, &v(&c)).unwrap();
    assert_eq!(log.segment_count(), 1);
    log.append(&batch(1, T0 + 1001), 0, &v(&c)).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    // Timer roll of an idle active segment.
    c.set(T0 + 2001);
    assert!(!log.roll_if_due().unwrap());
    c.set(T0 + 2002);
    assert!(log.roll_if_due().unwrap());
    assert_eq!(log.segment_base_offsets(), vec![0, 2, 3]);
    // Without compact, segment.ms alone rules.
    let dir2 = tempfile::tempdir().unwrap();
    let log = open(
        dir2.path(),
        LogConfig {
            cleanup_policy: CleanupPolicy::default(),
            ..cfg
        },
        &c,
        Recovery::Clean,
    );
    log.append(&batch(1, c.now_ms()), 0, &v(&c)).unwrap();
    c.advance(5000);
    log.append(&batch(1, c.now_ms()), 0, &v(&c)).unwrap();
    assert!(!log.roll_if_due().unwrap());
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn compact_only_retention_removes_only_segments_below_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, _) = layout();
    let cfg = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        retention_ms: 1,
        retention_bytes: 1,
        ..cfg
    };
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    fill(&log, &c, 10);
    c.advance(10_000_000);
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 0);
    assert_eq!(log.segment_base_offsets(), vec![0, 6, 12, 18]);
    log.delete_records_before(8).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![6, 12, 18]);
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 0);
    // `compact,delete` retains like `delete`.
    log.update_config(LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: true,
            compact: true,
        },
        retention_ms: -1,
        ..cfg
    });
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 2);
    assert_eq!(log.segment_base_offsets(), vec![18]);
}

#[test]
fn free_space_reports_the_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    assert!(free_space(dir.path()).unwrap() > 0);
    assert!(matches!(
        free_space(&dir.path().join("missing")),
        Err(LogError::Io { .. })
    ));
}

#[test]
fn a_gap_at_a_segment_tail_is_skipped_by_reads_lookups_and_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let (cfg, _) = layout();
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    fill(&log, &c, 10); // 0, 6, 12 sealed; 18 active
    let w = clean(&log, &[0, 6], |h| h.base_offset == 0 || h.base_offset == 6);
    log.replace_segments(&[0, 6], w).unwrap();
    drop(log);
    for r in [Recovery::FromOffset(0), Recovery::Clean] {
        let log = open(dir.path(), cfg.clone(), &c, r);
        let view = log.cleaner_view();
        assert_eq!(view.segments[0].next_offset, 8, "below the next base 12");
        assert_eq!(view.log_end_offset, 20);
        for (at, want) in [(7, 6), (8, 12), (9, 12), (11, 12)] {
            let r = log.read(at, 1, true).unwrap();
            assert_eq!(headers(&r.records)[0].base_offset, want, "read at {at}");
        }
        assert_eq!(
            log.offset_for_timestamp(T0 + 35).unwrap(),
            Some((12, T0 + 60))
        );
        log.close().unwrap();
    }
    let log = open(dir.path(), cfg, &c, Recovery::FromOffset(0));
    assert_eq!(log.delete_records_before(9).unwrap(), 9);
    assert_eq!(log.segment_base_offsets(), vec![0, 12, 18]);
    assert_eq!(
        headers(&log.read(9, 1, true).unwrap().records)[0].base_offset,
        12
    );
    assert_eq!(log.delete_records_before(12).unwrap(), 12);
    assert_eq!(log.segment_base_offsets(), vec![12, 18]);
}
