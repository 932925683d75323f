//! Idempotent producers: the sequence rules (duplicates of each of the last five batches, gaps,
//! epochs, unknown producers, wrap at i32::MAX) and producer-state durability (snapshots at
//! roll and close, replay after a crash, damaged and stale snapshots, expiry, retention).

use super::*;
use crate::producer_state::increment_sequence;

const PID: i64 = 4000;

/// A batch of `n` records from producer `pid` at `epoch`, starting at sequence `seq`.
fn idem(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, Compression::None)
        .producer_id(pid)
        .producer_epoch(epoch)
        .base_sequence(seq);
    for i in 0..n {
        let key = format!("k{i}");
        b.push(T0, Some(key.as_bytes()), Some(b"value"), &[]);
    }
    b.build().unwrap()
}

fn append(log: &Log, c: &ManualClock, bytes: &[u8]) -> crate::Result<crate::AppendInfo> {
    log.append(bytes, 0, &v(c))
}

#[test]
fn sequence_wraps_at_i32_max() {
    assert_eq!(increment_sequence(0, 4), 4);
    assert_eq!(increment_sequence(i32::MAX, 0), i32::MAX);
    assert_eq!(increment_sequence(i32::MAX, 1), 0);
    assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
}

#[test]
fn duplicates_of_each_of_the_last_five_batches_return_original_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    let mut sent = Vec::new();
    for i in 0..7 {
        let b = idem(PID, 0, i * 3, 3);
        let info = append(&log, &c, &b).unwrap();
        assert!(!info.duplicate);
        assert_eq!(info.first_offset, i64::from(i) * 3);
        sent.push((b, info.first_offset, info.last_offset));
    }
    let leo = log.log_end_offset();
    // The last five (batches 2..7) are recognised.
    for (b, first, last) in &sent[2..] {
        let info = append(&log, &c, b).unwrap();
        assert!(info.duplicate);
        assert_eq!((info.first_offset, info.last_offset), (*first, *last));
        assert_eq!(info.bytes, 0);
    }
    assert_eq!(
        log.log_end_offset(),
        leo,
        "a duplicate must not be appended"
    );
    // Older ones are outside the window: out of order, as in Kafka.
    for (b, _, _) in &sent[..2] {
        assert!(matches!(
            append(&log, &c, b),
            Err(LogError::OutOfOrderSequence {
                producer_id: PID,
                ..
            })
        ));
    }
    assert_eq!(all_offsets(&log).len(), 7);
    // The producer carries on.
    assert_eq!(
        append(&log, &c, &idem(PID, 0, 21, 1)).unwrap().first_offset,
        leo
    );
}

#[test]
fn a_gap_or_a_repeat_that_is_not_a_whole_batch_is_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    append(&log, &c, &idem(PID, 0, 0, 5)).unwrap();
    for seq in [6, 4, 1, 100] {
        assert!(
            matches!(
                append(&log, &c, &idem(PID, 0, seq, 1)),
                Err(LogError::OutOfOrderSequence { .. })
            ),
            "seq {seq}"
        );
    }
    // Same first sequence, different length: not a duplicate.
    assert!(matches!(
        append(&log, &c, &idem(PID, 0, 0, 2)),
        Err(LogError::OutOfOrderSequence { .. })
    ));
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(
        append(&log, &c, &idem(PID, 0, 5, 1)).unwrap().first_offset,
        5
    );
}

#[test]
fn epochs_new_must_start_at_zero_and_old_are_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    append(&log, &c, &idem(PID, 3, 0, 2)).unwrap();
    append(&log, &c, &idem(PID, 3, 2, 2)).unwrap();
    assert!(matches!(
        append(&log, &c, &idem(PID, 4, 4, 1)),
        Err(LogError::OutOfOrderSequence { .. })
    ));
    assert_eq!(
        append(&log, &c, &idem(PID, 4, 0, 1)).unwrap().first_offset,
        4
    );
    // The old epoch is fenced, even for a batch that was a duplicate before the bump.
    for (seq, n) in [(4, 1), (2, 2), (0, 2)] {
        assert!(matches!(
            append(&log, &c, &idem(PID, 3, seq, n)),
            Err(LogError::InvalidProducerEpoch {
                producer_id: PID,
                epoch: 3,
                current: 4
            })
        ));
    }
    assert_eq!(log.producer_entries()[0].epoch, 4);
    assert_eq!(log.producer_entries()[0].batches.len(), 1);
}

#[test]
fn unknown_producers_are_accepted_at_any_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    append(&log, &c, &idem(PID, 0, 42, 3)).unwrap();
    append(&log, &c, &idem(PID + 1, 7, 0, 1)).unwrap();
    assert!(matches!(
        append(&log, &c, &idem(PID, 0, 46, 1)),
        Err(LogError::OutOfOrderSequence { .. })
    ));
    assert_eq!(
        append(&log, &c, &idem(PID, 0, 45, 1)).unwrap().first_offset,
        4
    );
    assert_eq!(log.producer_entries().len(), 2);
}

#[test]
fn sequences_wrap_from_i32_max_to_zero() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    append(&log, &c, &idem(PID, 0, i32::MAX - 1, 2)).unwrap();
    let wrapping = idem(PID, 0, i32::MAX - 1, 2);
    assert!(append(&log, &c, &wrapping).unwrap().duplicate);
    assert_eq!(
        append(&log, &c, &idem(PID, 0, 0, 3)).unwrap().first_offset,
        2
    );
    // A batch that itself wraps: MAX-? .. 1 is handled the same way.
    let dir2 = tempfile::tempdir().unwrap();
    let log2 = open(dir2.path(), config(), &c, Recovery::Clean);
    append(&log2, &c, &idem(PID, 0, i32::MAX - 1, 4)).unwrap();
    assert_eq!(log2.producer_entries()[0].last_seq(), 1);
    assert!(
        append(&log2, &c, &idem(PID, 0, i32::MAX - 1, 4))
            .unwrap()
            .duplicate
    );
    assert_eq!(
        append(&log2, &c, &idem(PID, 0, 2, 1)).unwrap().first_offset,
        4
    );
}

#[test]
fn batches_of_one_append_are_checked_in_order_and_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    let mut two = idem(PID, 0, 0, 2);
    two.extend(idem(PID, 0, 2, 2));
    let info = append(&log, &c, &two).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (0, 3));
    let mut bad = idem(PID, 0, 4, 1);
    bad.extend(idem(PID, 0, 9, 1));
    assert!(matches!(
        append(&log, &c, &bad),
        Err(LogError::OutOfOrderSequence { .. })
    ));
    assert_eq!(
        log.log_end_offset(),
        4,
        "nothing of a rejected append is written"
    );
    assert_eq!(
        append(&log, &c, &idem(PID, 0, 4, 1)).unwrap().first_offset,
        4
    );
}

#[test]
fn negative_sequence_with_a_producer_id_is_invalid_and_plain_batches_are_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    assert!(matches!(
        append(&log, &c, &idem(PID, 0, -1, 1)),
        Err(LogError::InvalidRecord { .. })
    ));
    let plain = batch(2, T0);
    assert!(!append(&log, &c, &plain).unwrap().duplicate);
    assert!(!append(&log, &c, &plain).unwrap().duplicate);
    assert_eq!(log.log_end_offset(), 4);
    assert!(log.producer_entries().is_empty());
}

/// Small segments so appends roll (and snapshot) often.
fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        ..config()
    }
}

#[test]
fn state_survives_a_clean_reopen_through_the_close_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let last;
    {
        let log = open(dir.path(), small_segments(), &c, Recovery::Clean);
        for i in 0..10 {
            append(&log, &c, &idem(PID, 2, i * 2, 2)).unwrap();
        }
        last = log.log_end_offset();
        log.close().unwrap();
        assert!(log.producer_snapshot_offsets().unwrap().contains(&last));
        assert!(
            log.producer_snapshot_offsets().unwrap().len() > 1,
            "roll snapshots"
        );
    }
    let log = open(dir.path(), small_segments(), &c, Recovery::Clean);
    let entry = &log.producer_entries()[0];
    assert_eq!(
        (entry.epoch, entry.last_seq(), entry.batches.len()),
        (2, 19, 5)
    );
    let info = append(&log, &c, &idem(PID, 2, 16, 2)).unwrap();
    assert!(info.duplicate);
    assert_eq!(info.first_offset, 16);
    assert_eq!(log.log_end_offset(), last);
    assert_eq!(
        append(&log, &c, &idem(PID, 2, 20, 1)).unwrap().first_offset,
        last
    );
}

#[test]
fn state_is_rebuilt_from_the_log_tail_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let rp;
    {
        let log = open(dir.path(), small_segments(), &c, Recovery::Clean);
        for i in 0..12 {
            append(&log, &c, &idem(PID, 0, i, 1)).unwrap();
            append(&log, &c, &idem(PID + 1, 0, i * 2, 2)).unwrap();
        }
        rp = log.flush().unwrap();
        let snaps = log.producer_snapshot_offsets().unwrap();
        assert!(!snaps.is_empty() && *snaps.last().unwrap() < log.log_end_offset());
        // Dropped without close: a crash.
    }
    let log = open(dir.path(), small_segments(), &c, Recovery::FromOffset(rp));
    let leo = log.log_end_offset();
    for (pid, seq, n) in [(PID, 11, 1), (PID + 1, 22, 2), (PID + 1, 14, 2)] {
        assert!(
            append(&log, &c, &idem(pid, 0, seq, n)).unwrap().duplicate,
            "{pid} {seq}"
        );
    }
    assert_eq!(log.log_end_offset(), leo);
    assert_eq!(
        append(&log, &c, &idem(PID, 0, 12, 1)).unwrap().first_offset,
        leo
    );
}

#[test]
fn without_any_snapshot_the_whole_log_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    {
        let log = open(dir.path(), small_segments(), &c, Recovery::Clean);
        for i in 0..8 {
            append(&log, &c, &idem(PID, 1, i * 3, 3)).unwrap();
        }
        log.close().unwrap();
    }
    for o in std::fs::read_dir(dir.path()).unwrap() {
        let p = o.unwrap().path();
        if p.extension().is_some_and(|e| e == "snapshot") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let log = open(dir.path(), small_segments(), &c, Recovery::Clean);
    assert!(append(&log, &c, &idem(PID, 1, 21, 3)).unwrap().duplicate);
    assert!(append(&log, &c, &idem(PID, 1, 9, 3)).unwrap().duplicate);
    assert_eq!(
        append(&log, &c, &idem(PID, 1, 24, 1)).unwrap().first_offset,
        24
    );
}

#[test]
fn damaged_and_stale_snapshots_are_removed_and_replay_covers_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let leo;
    {
        let log = open(dir.path(), config(), &c, Recovery::Clean);
        for i in 0..4 {
            append(&log, &c, &idem(PID, 0, i, 1)).unwrap();
        }
        leo = log.log_end_offset();
        log.close().unwrap();
    }
    let snap = dir.path().join(format!("{leo:020}.snapshot"));
    let mut bytes = std::fs::read(&snap).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&snap, &bytes).unwrap();
    let beyond = dir.path().join(format!("{:020}.snapshot", 1_000_000));
    std::fs::write(&beyond, b"whatever").unwrap();
    std::fs::write(dir.path().join(format!("{leo:020}.snapshot.tmp")), b"x").unwrap();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    assert!(!snap.exists() && !beyond.exists());
    assert!(!dir.path().join(format!("{leo:020}.snapshot.tmp")).exists());
    assert!(append(&log, &c, &idem(PID, 0, 3, 1)).unwrap().duplicate);
    assert_eq!(
        append(&log, &c, &idem(PID, 0, 4, 1)).unwrap().first_offset,
        leo
    );
}

#[test]
fn idle_producers_expire() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    append(&log, &c, &idem(PID, 0, 0, 1)).unwrap();
    c.advance(1_000);
    assert_eq!(log.remove_expired_producers(60_000), 0);
    c.advance(60_000);
    assert_eq!(log.remove_expired_producers(60_000), 1);
    assert!(log.producer_entries().is_empty());
    // Forgotten: any sequence is accepted again, as in Kafka.
    assert!(!append(&log, &c, &idem(PID, 0, 7, 1)).unwrap().duplicate);
}

#[test]
fn retention_removes_snapshots_older_than_the_first_segment() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), small_segments(), &c, Recovery::Clean);
    for i in 0..20 {
        append(&log, &c, &idem(PID, 0, i, 1)).unwrap();
    }
    let before = log.producer_snapshot_offsets().unwrap();
    assert!(before.len() > 2);
    let start = log.delete_records_before(15).unwrap();
    let first_base = log.segment_base_offsets()[0];
    let after = log.producer_snapshot_offsets().unwrap();
    assert!(start >= first_base);
    assert!(
        after.iter().all(|&o| o >= first_base),
        "{after:?} vs {first_base}"
    );
    assert!(after.len() < before.len());
    // State is kept: the last batches are still duplicates.
    assert!(append(&log, &c, &idem(PID, 0, 19, 1)).unwrap().duplicate);
}
