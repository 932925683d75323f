//! Transaction version 2 over the in-memory host: the implicit add, EndTxn v5's markers at
//! the bumped epoch and its answer, retries, fencing of the old epoch, and the TV2 state
//! (bumped epoch, client transaction version) surviving a restart in the middle of a commit.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use skiff_log::ControlType;
use skiff_records::Batches;

use super::{start_host, stop_host};
use crate::memory::MemStorage;
use crate::txn::state::{TxnState, TV_0, TV_2};

/// The (producer id, epoch, control type) of each marker in `batches`.
fn markers(batches: &[Vec<u8>]) -> Vec<(i64, i16, ControlType)> {
    batches
        .iter()
        .filter_map(|b| {
            let (h, bytes) = Batches::new(b).next()?.ok()?;
            if !h.is_control() {
                return None;
            }
            let (control, _) = skiff_log::parse_marker(bytes)?;
            Some((h.producer_id, h.producer_epoch, control))
        })
        .collect()
}

#[test]
fn end_txn_v2_bumps_the_epoch_writes_markers_with_it_and_fences_the_old_one() {
    let storage = Arc::new(MemStorage::default());
    let data = storage.add_topic("t", 1);
    let host = start_host(&storage);
    let (pid, epoch) = host
        .txn
        .init_producer_id(&host, "tx", 60_000, None)
        .unwrap();
    let part = [("t".to_string(), 0)];
    host.txn
        .add_partitions_implicitly("tx", pid, epoch, &part)
        .unwrap();
    let m = host.txn.describe("tx").unwrap().unwrap();
    assert_eq!((m.state, m.client_tv), (TxnState::Ongoing, TV_2));

    let next = host.txn.end_txn_v2(&host, "tx", pid, epoch, true).unwrap();
    assert_eq!(next, (pid, epoch + 1));
    assert_eq!(
        markers(&data[0].batches()),
        [(pid, epoch + 1, ControlType::Commit)]
    );
    // The retried commit is answered with the new epoch and writes nothing.
    assert_eq!(
        host.txn.end_txn_v2(&host, "tx", pid, epoch, true),
        Ok((pid, epoch + 1))
    );
    assert_eq!(data[0].batches().len(), 1);
    // A zombie at the old epoch can no longer add or end anything.
    assert_eq!(
        host.txn.add_partitions_implicitly("tx", pid, epoch, &part),
        Err(ResponseError::ProducerFenced)
    );
    assert_eq!(
        host.txn.end_txn(&host, "tx", pid, epoch, false),
        Err(ResponseError::ProducerFenced)
    );
    // The producer continues at the new epoch; an abort of an empty transaction bumps too.
    assert_eq!(
        host.txn.end_txn_v2(&host, "tx", pid, epoch + 1, false),
        Ok((pid, epoch + 2))
    );
    assert_eq!(data[0].batches().len(), 1, "nothing to mark");
    // An empty transactional id is refused.
    assert_eq!(
        host.txn.add_partitions_implicitly("", pid, epoch, &part),
        Err(ResponseError::InvalidRequest)
    );
    stop_host(host);
}

#[test]
fn a_tv2_commit_interrupted_by_a_failed_marker_completes_after_a_restart() {
    let storage = Arc::new(MemStorage::default());
    let data = storage.add_topic("t", 1);
    let host = start_host(&storage);
    let (pid, epoch) = host
        .txn
        .init_producer_id(&host, "tx", 60_000, None)
        .unwrap();
    host.txn
        .add_partitions_implicitly("tx", pid, epoch, &[("t".to_string(), 0)])
        .unwrap();
    data[0].fail_appends.store(true, Ordering::Release);
    assert_eq!(
        host.txn.end_txn_v2(&host, "tx", pid, epoch, true),
        Err(ResponseError::CoordinatorNotAvailable)
    );
    let m = host.txn.describe("tx").unwrap().unwrap();
    assert_eq!(
        (m.state, m.producer_epoch, m.client_tv),
        (TxnState::PrepareCommit, epoch + 1, TV_2)
    );
    stop_host(host);

    data[0].fail_appends.store(false, Ordering::Release);
    let host = start_host(&storage);
    // Replayed as a TV2 PrepareCommit; the first pass writes the markers at the bumped epoch.
    assert!(host.txn.tick_now());
    let m = host.txn.describe("tx").unwrap().unwrap();
    assert_eq!(
        (m.state, m.producer_id, m.producer_epoch, m.client_tv),
        (TxnState::CompleteCommit, pid, epoch + 1, TV_2)
    );
    assert_eq!(
        markers(&data[0].batches()),
        [(pid, epoch + 1, ControlType::Commit)]
    );
    // The producer's retry now learns its new epoch.
    assert_eq!(
        host.txn.end_txn_v2(&host, "tx", pid, epoch, true),
        Ok((pid, epoch + 1))
    );
    stop_host(host);
}

#[test]
fn a_tv0_transaction_keeps_its_epoch_and_records_tv0() {
    let storage = Arc::new(MemStorage::default());
    let data = storage.add_topic("t", 1);
    let host = start_host(&storage);
    let (pid, epoch) = host
        .txn
        .init_producer_id(&host, "tx", 60_000, None)
        .unwrap();
    host.txn
        .add_partitions("tx", pid, epoch, &[("t".to_string(), 0)])
        .unwrap();
    host.txn.end_txn(&host, "tx", pid, epoch, true).unwrap();
    let m = host.txn.describe("tx").unwrap().unwrap();
    assert_eq!((m.producer_epoch, m.client_tv), (epoch, TV_0));
    assert_eq!(
        markers(&data[0].batches()),
        [(pid, epoch, ControlType::Commit)]
    );
    stop_host(host);
}
