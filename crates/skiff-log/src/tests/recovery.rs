//! Reopen after close, crash recovery (torn and corrupt tails), damaged indexes, leftovers.

use super::*;

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

/// [`three_batches`] with a byte of the last batch flipped; returns where that batch starts.
fn three_batches_last_corrupt(dir: &Path, c: &Arc<ManualClock>) -> u64 {
    let (log_file, start, end) = three_batches(dir, c);
    let mut bytes = std::fs::read(&log_file).unwrap();
    let i = usize::try_from(end - 3).unwrap();
    bytes[i] ^= 0xff;
    std::fs::write(&log_file, &bytes).unwrap();
    start
}

#[test]
fn crash_recovery_truncates_corrupt_last_batch() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let start = three_batches_last_corrupt(dir.path(), &c);
    // A clean open checks the tail too.
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(log.size_bytes(), start);
    drop(log);
    let log = open(dir.path(), config(), &c, Recovery::FromOffset(0));
    assert_eq!(all_offsets(&log), vec![(0, 1), (2, 4)]);
}

/// Appends `count` one-record batches, two to a segment, then drops the log without a close
/// (a crash). Returns the config and the offsets written.
fn two_per_segment_then_crash(
    dir: &Path,
    c: &Arc<ManualClock>,
    count: usize,
) -> (LogConfig, Vec<(i64, i64)>) {
    let b = batch(1, T0);
    let cfg = LogConfig {
        segment_bytes: (b.len() * 2) as i32,
        ..config()
    };
    let log = open(dir, cfg.clone(), c, Recovery::Clean);
    for _ in 0..count {
        log.append(&b, 0, &v(c)).unwrap();
    }
    let bases: Vec<i64> = (0..count as i64).step_by(2).collect();
    assert_eq!(log.segment_base_offsets(), bases);
    (cfg, all_offsets(&log))
}

#[test]
fn corrupt_middle_segment_drops_later_segments() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let (cfg, _) = two_per_segment_then_crash(dir.path(), &c, 6);
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

/// Names and lengths of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn closing_a_log_untouched_since_a_clean_open_writes_nothing_and_an_append_is_still_kept() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    {
        let log = open(dir.path(), config(), &c, Recovery::Clean);
        log.append(&batch(2, T0), 0, &v(&c)).unwrap();
        log.close().unwrap();
    }
    let snapshot = dir.path().join("00000000000000000002.snapshot");
    let before = listing(dir.path());
    let written_at = std::fs::metadata(&snapshot).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    {
        let log = open(dir.path(), config(), &c, Recovery::Clean);
        log.close().unwrap();
    }
    assert_eq!(listing(dir.path()), before);
    assert_eq!(
        std::fs::metadata(&snapshot).unwrap().modified().unwrap(),
        written_at,
        "the snapshot at the log end was not rewritten"
    );
    // An append after a settled open is closed as usual.
    {
        let log = open(dir.path(), config(), &c, Recovery::Clean);
        log.append(&batch(3, T0 + 1), 0, &v(&c)).unwrap();
        log.close().unwrap();
    }
    assert!(dir.path().join("00000000000000000005.snapshot").exists());
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    assert_eq!(all_offsets(&log), vec![(0, 1), (2, 4)]);
}

#[test]
fn an_open_reports_a_changed_directory_only_when_it_wrote_or_removed_something() {
    let c = clock();
    let changed = |dir: &Path, recovery| {
        crate::recovery::load_segments(dir, &config(), T0, recovery)
            .unwrap()
            .dir_changed
    };
    let empty = tempfile::tempdir().unwrap();
    open(empty.path(), config(), &c, Recovery::Clean)
        .close()
        .unwrap();
    assert!(!changed(empty.path(), Recovery::Clean));
    // After a crash an empty log is trusted as it is: many idle partitions start cheaply.
    assert!(!changed(empty.path(), Recovery::FromOffset(0)));

    let full = tempfile::tempdir().unwrap();
    {
        let log = open(full.path(), config(), &c, Recovery::Clean);
        log.append(&batch(2, T0), 0, &v(&c)).unwrap();
        log.close().unwrap();
    }
    assert!(!changed(full.path(), Recovery::Clean));
    // After a crash the unflushed tail is scanned and synced: the directory is synced too.
    assert!(changed(full.path(), Recovery::FromOffset(0)));
    // An orphan index is removed.
    std::fs::write(full.path().join("00000000000000000009.index"), b"").unwrap();
    assert!(changed(full.path(), Recovery::Clean));
    assert!(!changed(full.path(), Recovery::Clean));
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
fn crash_recovery_validates_every_distrusted_segment_and_leaves_it_for_the_next_flush() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let (cfg, before) = two_per_segment_then_crash(dir.path(), &c, 9);
    // Everything from offset 3 on is distrusted: segments 2, 4, 6 and 8 are scanned (on
    // several threads) and found whole.
    let log = open(dir.path(), cfg.clone(), &c, Recovery::FromOffset(3));
    assert_eq!(all_offsets(&log), before);
    assert_eq!(log.log_end_offset(), 9);
    assert_eq!(
        log.flushed_offset(),
        2,
        "the recovery point stays at the first segment that was validated but not synced"
    );
    assert!(log.take_recovered_unsynced());
    assert!(!log.take_recovered_unsynced(), "reported once");
    assert_eq!(log.flush().unwrap(), 9);
    assert_eq!(log.flushed_offset(), 9);
    drop(log);

    // A clean open trusts everything and owes no flush.
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    assert_eq!(log.flushed_offset(), 9);
    assert!(!log.take_recovered_unsynced());
}

#[test]
fn crash_recovery_of_a_corrupt_segment_syncs_the_cut_and_owes_no_later_flush() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let start = three_batches_last_corrupt(dir.path(), &c);
    let log = open(dir.path(), config(), &c, Recovery::FromOffset(0));
    assert_eq!(log.size_bytes(), start);
    assert_eq!(log.flushed_offset(), log.log_end_offset());
    assert!(!log.take_recovered_unsynced());
}
