//! Crash points of a segment swap: stop after every step, reopen as after a crash, and check
//! the log is exactly the state before or after the swap (and that once the commit point is
//! passed it is always the state after). Also hand-made leftovers.

use super::cleaning::{clean, fill, layout, read_all};
use super::*;
use crate::log::SwapEnd;

/// Sealed segments 0, 6, 12, 18 and an active one at 24; the swap replaces 0, 6 and 12,
/// keeping batches with base offsets 0, 4, 8 and 16 (the last replaced segment keeps data).
fn setup(dir: &Path, c: &Arc<ManualClock>) -> Log {
    let (cfg, _) = layout();
    let log = open(dir, cfg, c, Recovery::Clean);
    fill(&log, c, 13);
    log
}

fn keep(h: &BatchHeader) -> bool {
    h.base_offset % 4 == 0 && h.base_offset != 12
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted"))
        .collect()
}

#[test]
fn every_crash_point_recovers_to_before_or_after() {
    let c = clock();
    let (cfg, _) = layout();
    let template = tempfile::tempdir().unwrap();
    let (before, after, leo) = {
        let log = setup(template.path(), &c);
        let before = read_all(&log);
        log.replace_segments(&[0, 6, 12], clean(&log, &[0, 6, 12], keep))
            .unwrap();
        (before, read_all(&log), log.log_end_offset())
    };
    assert_ne!(before, after);
    let mut seen_after = false;
    let mut steps = 0usize;
    loop {
        let dir = tempfile::tempdir().unwrap();
        let log = setup(dir.path(), &c);
        let w = clean(&log, &[0, 6, 12], keep);
        let end = log.replace_segments_steps(&[0, 6, 12], w, steps).unwrap();
        drop(log); // the crash: no close, no cleanup
        let log = open(dir.path(), cfg.clone(), &c, Recovery::FromOffset(0));
        let now = read_all(&log);
        assert!(
            now == before || now == after,
            "crash after {steps} steps: neither before nor after"
        );
        assert!(
            !(seen_after && now == before),
            "crash after {steps} steps went back to before after a later point was after"
        );
        seen_after |= now == after;
        assert_eq!(log.log_end_offset(), leo, "crash after {steps} steps");
        assert_eq!(log.log_start_offset(), 0);
        assert!(
            leftovers(dir.path()).is_empty(),
            "{:?}",
            leftovers(dir.path())
        );
        let bases = log.segment_base_offsets();
        if now == after {
            assert_eq!(bases, vec![0, 18, 24], "crash after {steps} steps");
        } else {
            assert_eq!(bases, vec![0, 6, 12, 18, 24], "crash after {steps} steps");
        }
        // The recovered log works: appends continue at the same offset, and a clean reopen
        // trusts the rebuilt indexes.
        assert_eq!(
            log.append(&batch(1, T0), 0, &v(&c)).unwrap().first_offset,
            leo
        );
        log.close().unwrap();
        drop(log);
        let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        assert_eq!(read_all(&log)[..now.len()], now[..]);
        for (at, _) in &now {
            let r = log.read(*at, 1, true).unwrap();
            assert_eq!(headers(&r.records)[0].base_offset, *at);
        }
        if end == SwapEnd::Done {
            break;
        }
        steps += 1;
    }
    assert!(seen_after);
    // 1 (written) + 1 (synced) + 3 (renames to .swap) + 1 (dir fsync) + 3 (olds to .deleted)
    // + 3 (swap to final) + 1 (publish) + 1 (dir fsync) + 9 (unlinks)
    assert_eq!(steps, 23, "every step was crashed at");
}

#[test]
fn a_swap_committed_before_old_segments_were_renamed_replaces_them() {
    let c = clock();
    let (cfg, _) = layout();
    let dir = tempfile::tempdir().unwrap();
    let log = setup(dir.path(), &c);
    let before = read_all(&log);
    // Up to and including the directory fsync after the commit rename.
    let end = log
        .replace_segments_steps(&[0, 6, 12], clean(&log, &[0, 6, 12], keep), 5)
        .unwrap();
    assert_eq!(end, SwapEnd::Crashed);
    drop(log);
    let d = dir.path();
    assert!(d.join("00000000000000000000.log.swap").exists());
    assert!(d.join("00000000000000000000.log").exists());
    assert!(d.join("00000000000000000006.log").exists());
    let log = open(d, cfg, &c, Recovery::Clean);
    let bases: Vec<i64> = read_all(&log).iter().map(|(b, _)| *b).collect();
    assert_eq!(bases, vec![0, 4, 8, 16, 18, 20, 22, 24]);
    assert_eq!(read_all(&log).len(), before.len() - 5);
    assert_eq!(log.segment_base_offsets(), vec![0, 18, 24]);
}

#[test]
fn index_swap_files_without_a_log_swap_are_uncommitted() {
    let c = clock();
    let (cfg, _) = layout();
    let dir = tempfile::tempdir().unwrap();
    let log = setup(dir.path(), &c);
    let before = read_all(&log);
    log.close().unwrap();
    drop(log);
    let d = dir.path();
    // An uncommitted swap whose index files would clobber the live segment's indexes.
    std::fs::write(d.join("00000000000000000000.index.swap"), [0u8; 8]).unwrap();
    std::fs::write(d.join("00000000000000000000.timeindex.swap"), [1u8; 12]).unwrap();
    std::fs::write(d.join("00000000000000000000.log.cleaned"), b"junk").unwrap();
    let log = open(d, cfg, &c, Recovery::Clean);
    assert_eq!(read_all(&log), before);
    assert!(leftovers(d).is_empty());
    for (at, _) in &before {
        assert_eq!(
            headers(&log.read(*at, 1, true).unwrap().records)[0].base_offset,
            *at
        );
    }
}

#[test]
fn retention_waits_for_pinned_segments_but_log_start_moves() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let log = setup(dir.path(), &c);
    log.pin_for_test(6);
    assert_eq!(log.delete_records_before(18).unwrap(), 18);
    assert_eq!(log.segment_base_offsets(), vec![6, 12, 18, 24]);
    assert!(matches!(
        log.read(10, 1, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    log.clear_pins_for_test();
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 2);
    assert_eq!(log.segment_base_offsets(), vec![18, 24]);
}

#[test]
fn an_old_segment_overlapped_by_a_cleaned_one_is_removed_at_load() {
    let c = clock();
    let (cfg, _) = layout();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = setup(d, &c);
    let old6 = std::fs::read(d.join("00000000000000000006.log")).unwrap();
    log.replace_segments(&[0, 6, 12], clean(&log, &[0, 6, 12], keep))
        .unwrap();
    let after = read_all(&log);
    drop(log);
    // A crash that kept the cleaned segment's final name but lost the old file's rename.
    std::fs::write(d.join("00000000000000000006.log"), old6).unwrap();
    let log = open(d, cfg, &c, Recovery::FromOffset(0));
    assert_eq!(read_all(&log), after);
    assert_eq!(log.segment_base_offsets(), vec![0, 18, 24]);
    assert!(!d.join("00000000000000000006.log").exists());
}
