//! Retention by time and size, DeleteRecords, timestamp lookups, LogDir.

use super::*;
use crate::LogDir;

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
