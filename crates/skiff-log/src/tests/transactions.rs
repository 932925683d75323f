//! Transactions in the log: markers close transactions, the last stable offset, read_committed
//! reads, the aborted-transaction index (in memory and `.txnindex` files) and its recovery
//! after a clean close, after a crash (replay of the log tail) and after retention.

use super::*;
use crate::txn_index::{decode_txn_index, TXN_INDEX_ENTRY_LEN};
use crate::{AbortedTxn, ControlType};

/// A transactional batch of `n` records from `pid` at `epoch` starting at sequence `seq`.
fn txn(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, Compression::None)
        .producer_id(pid)
        .producer_epoch(epoch)
        .base_sequence(seq)
        .transactional(true);
    for i in 0..n {
        let key = format!("k{i}");
        b.push(T0, Some(key.as_bytes()), Some(b"value"), &[]);
    }
    b.build().unwrap()
}

fn marker(log: &Log, pid: i64, epoch: i16, control: ControlType) -> crate::Result<i64> {
    log.write_txn_marker(pid, epoch, 0, control, 0, T0)
        .map(|i| i.first_offset)
}

fn txn_files(dir: &Path) -> Vec<(String, Vec<AbortedTxn>)> {
    let mut v: Vec<(String, Vec<AbortedTxn>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".txnindex"))
        .map(|e| {
            let bytes = std::fs::read(e.path()).unwrap();
            assert_eq!(bytes.len() % TXN_INDEX_ENTRY_LEN, 0);
            (
                e.file_name().to_string_lossy().into_owned(),
                decode_txn_index(&bytes),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn control_marker_round_trip() {
    let b = crate::control_batch(7, 3, 11, ControlType::Abort, T0).unwrap();
    let h = BatchHeader::parse(&b).unwrap();
    assert!(h.is_control() && h.is_transactional());
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (7, 3, -1)
    );
    assert_eq!(crate::parse_marker(&b), Some((ControlType::Abort, 11)));
    let c = crate::control_batch(7, 3, 2, ControlType::Commit, T0).unwrap();
    assert_eq!(crate::parse_marker(&c), Some((ControlType::Commit, 2)));
    let e = AbortedTxn {
        producer_id: 1,
        first_offset: 2,
        last_offset: 3,
        last_stable_offset: 4,
    };
    assert_eq!(e.encode().len(), 34);
    assert_eq!(AbortedTxn::decode(&e.encode()), Some(e));
}

#[test]
fn lso_stops_at_the_oldest_open_transaction_and_read_committed_stops_there() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    log.append(&batch(2, T0), 0, &v(&c)).unwrap(); // 0..1
    assert_eq!(log.last_stable_offset(), 2);
    log.append(&txn(10, 0, 0, 3), 0, &v(&c)).unwrap(); // 2..4 open
    log.append(&batch(1, T0), 0, &v(&c)).unwrap(); // 5
    log.append(&txn(11, 0, 0, 1), 0, &v(&c)).unwrap(); // 6 open
    assert_eq!(log.last_stable_offset(), 2);
    assert_eq!(log.high_watermark(), 7);
    let r = log.read_isolated(0, usize::MAX, true, true).unwrap();
    assert_eq!(r.last_stable_offset, 2);
    assert_eq!(headers(&r.records).last().unwrap().last_offset(), 1);
    assert!(log
        .read_isolated(2, usize::MAX, true, true)
        .unwrap()
        .records
        .is_empty());
    // read_uncommitted sees everything.
    assert_eq!(
        headers(&log.read(0, usize::MAX, true).unwrap().records).len(),
        4
    );

    assert_eq!(marker(&log, 10, 0, ControlType::Commit).unwrap(), 7);
    assert_eq!(log.last_stable_offset(), 6, "pid 11 is still open");
    assert_eq!(marker(&log, 11, 0, ControlType::Abort).unwrap(), 8);
    assert_eq!(log.last_stable_offset(), 9);
    assert_eq!(log.aborted_transactions(0, 9), vec![(11, 6)]);
    assert_eq!(log.aborted_transactions(0, 6), vec![], "starts at 6");
    assert_eq!(log.aborted_transactions(9, 20), vec![], "marker before 9");
    assert_eq!(log.aborted_txn_index()[0].last_offset, 8);
    assert_eq!(log.aborted_txn_index()[0].last_stable_offset, 9);
    assert!(log.ongoing_transactions().is_empty());
    assert_eq!(
        headers(
            &log.read_isolated(0, usize::MAX, true, true)
                .unwrap()
                .records
        )
        .len(),
        6
    );
}

#[test]
fn a_marker_from_an_older_epoch_is_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    log.append(&txn(10, 3, 0, 1), 0, &v(&c)).unwrap();
    assert!(matches!(
        marker(&log, 10, 2, ControlType::Commit),
        Err(LogError::InvalidProducerEpoch { .. })
    ));
    assert_eq!(log.last_stable_offset(), 0);
    // A marker at a newer epoch (a coordinator abort after an epoch bump) closes it.
    marker(&log, 10, 4, ControlType::Abort).unwrap();
    assert_eq!(log.last_stable_offset(), 2);
    // The old epoch can not write data any more.
    assert!(matches!(
        log.append(&txn(10, 3, 1, 1), 0, &v(&c)),
        Err(LogError::InvalidProducerEpoch { .. })
    ));
}

#[test]
fn txn_index_files_and_open_transactions_survive_close_and_crash() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 400,
        ..config()
    };
    {
        let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        log.append(&txn(10, 0, 0, 2), 0, &v(&c)).unwrap(); // 0..1
        marker(&log, 10, 0, ControlType::Abort).unwrap(); // 2
        log.append(&txn(11, 0, 0, 2), 0, &v(&c)).unwrap(); // 3..4
        marker(&log, 11, 0, ControlType::Commit).unwrap(); // 5
        log.append(&txn(12, 0, 0, 2), 0, &v(&c)).unwrap(); // 6..7 stays open
        log.append(&txn(13, 0, 0, 1), 0, &v(&c)).unwrap(); // 8
        marker(&log, 13, 0, ControlType::Abort).unwrap(); // 9
        assert!(log.segment_count() > 1);
        log.close().unwrap();
    }
    let files = txn_files(dir.path());
    let all: Vec<AbortedTxn> = files.iter().flat_map(|(_, e)| e.clone()).collect();
    assert_eq!(
        all.iter()
            .map(|a| (a.producer_id, a.first_offset, a.last_offset))
            .collect::<Vec<_>>(),
        vec![(10, 0, 2), (13, 8, 9)]
    );
    let expected = vec![(10, 0), (13, 8)];
    // Clean reopen: from the snapshot + files.
    {
        let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        assert_eq!(log.last_stable_offset(), 6);
        assert_eq!(log.aborted_transactions(0, 100), expected);
        assert_eq!(log.ongoing_transactions(), vec![(12, 6)]);
        drop(log);
    }
    // Crash: no snapshots, files gone: everything is replayed from the log.
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        let name = p.to_string_lossy().into_owned();
        if name.ends_with(".snapshot") || name.ends_with(".txnindex") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let log = open(dir.path(), cfg, &c, Recovery::FromOffset(0));
    assert_eq!(log.last_stable_offset(), 6);
    assert_eq!(log.aborted_transactions(0, 100), expected);
    assert_eq!(
        txn_files(dir.path())
            .iter()
            .map(|f| f.1.len())
            .sum::<usize>(),
        2
    );
    // The reopened log closes the open transaction normally.
    marker(&log, 12, 0, ControlType::Commit).unwrap();
    assert_eq!(log.last_stable_offset(), log.log_end_offset());
}

#[test]
fn retention_drops_index_entries_of_deleted_segments() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 300,
        retention_bytes: 1,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    log.append(&txn(10, 0, 0, 1), 0, &v(&c)).unwrap();
    marker(&log, 10, 0, ControlType::Abort).unwrap();
    for _ in 0..4 {
        log.append(&batch(2, T0), 0, &v(&c)).unwrap();
    }
    assert_eq!(log.aborted_transactions(0, 100), vec![(10, 0)]);
    let out = log.apply_retention().unwrap();
    assert!(out.deleted_segments > 0);
    assert!(log.log_start_offset() > 1);
    assert!(log.aborted_txn_index().is_empty());
    assert!(txn_files(dir.path()).is_empty());
}

#[test]
fn verification_guards_admit_only_verified_first_batches() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), config(), &c, Recovery::Clean);
    // Without a guard the first transactional batch of a producer is refused, and nothing
    // is written.
    let err = log.append_verified(&txn(7, 0, 0, 2), 0, &v(&c), None);
    assert!(matches!(
        err,
        Err(LogError::InvalidTxnState { producer_id: 7 })
    ));
    assert_eq!(log.log_end_offset(), 0);
    // Non-transactional batches need nothing.
    log.append_verified(&batch(1, T0), 0, &v(&c), None).unwrap();

    let g = log.start_txn_verification(7).unwrap();
    assert_eq!(
        log.start_txn_verification(7),
        Some(g),
        "one guard per producer"
    );
    log.append_verified(&txn(7, 0, 0, 2), 0, &v(&c), Some(g))
        .unwrap();
    // The transaction is open here now: later batches need no verification.
    assert_eq!(log.start_txn_verification(7), None);
    log.append_verified(&txn(7, 0, 2, 1), 0, &v(&c), None)
        .unwrap();
    marker(&log, 7, 0, ControlType::Commit).unwrap();

    // A marker written between the verification and the append voids the guard: the
    // append would otherwise open a transaction the coordinator has already ended.
    let stale = log.start_txn_verification(7).unwrap();
    assert_ne!(stale, g, "guards are never reused");
    marker(&log, 7, 0, ControlType::Abort).unwrap();
    let end = log.log_end_offset();
    let err = log.append_verified(&txn(7, 0, 3, 1), 0, &v(&c), Some(stale));
    assert!(matches!(err, Err(LogError::InvalidTxnState { .. })));
    // A new verification does not revive the stale guard (the ABA case).
    let fresh = log.start_txn_verification(7).unwrap();
    assert_ne!(fresh, stale);
    let err = log.append_verified(&txn(7, 0, 3, 1), 0, &v(&c), Some(stale));
    assert!(matches!(err, Err(LogError::InvalidTxnState { .. })));
    assert_eq!(log.log_end_offset(), end);
    assert!(
        log.ongoing_transactions().is_empty(),
        "no hanging transaction"
    );

    // Guards that never led to an append go with producer expiry.
    c.advance(10_000);
    log.remove_expired_producers(5_000);
    let err = log.append_verified(&txn(7, 0, 3, 1), 0, &v(&c), Some(fresh));
    assert!(matches!(err, Err(LogError::InvalidTxnState { .. })));
    // The plain append path does not verify (verification disabled).
    log.append(&txn(7, 0, 3, 1), 0, &v(&c)).unwrap();
    assert_eq!(log.ongoing_transactions().len(), 1);
}
