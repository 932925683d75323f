//! The log's side of transactions (formats and files: `txn_index.rs`): the aborted
//! transactions of each append recorded in memory and in the `.txnindex` files, the files
//! reconciled at open, after retention and after a swap, the LSO and aborted-transaction
//! queries of fetch, and KIP-890 verification guards.
//!
//! Thread-safety: the aborted list, producer state and guards live in `Inner`: what changes
//! them under the append lock is a method of [`AppendLocked`] (`record_completed`,
//! `check_verified`, `load_txn_index`); readers use the published snapshot. File rewrites
//! (`reconcile_txn_index`) hold `txn_files`, then the append lock only to copy the list, and
//! write the files after releasing it. `sync_txn_index` fsyncs and must run without the lock.

use super::{AppendLocked, Log};
use crate::error::{LogError, Result};
use crate::producer_state::{CompletedTxn, ControlType};
use crate::segment::segment_path;
use crate::txn_index::{
    control_batch, owner, read_index_files, write_files, AbortedTxn, VerificationGuard,
    TXN_INDEX_SUFFIX,
};
use skiff_records::BatchHeader;
use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::sync::{Arc, PoisonError};

impl Log {
    /// Last stable offset: no offset at or above it belongs to an undecided transaction.
    pub fn last_stable_offset(&self) -> i64 {
        let snap = self.snapshot();
        snap.first_unstable.map_or(snap.leo, |f| f.min(snap.leo))
    }

    /// `(producer id, first offset)` of the aborted transactions that may have data in
    /// `[from, to)`: those whose marker is at or after `from` and that started before `to`.
    pub fn aborted_transactions(&self, from: i64, to: i64) -> Vec<(i64, i64)> {
        let snap = self.snapshot();
        let start = snap.aborted.partition_point(|a| a.last_offset < from);
        snap.aborted
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .filter(|a| a.first_offset < to)
            .map(|a| (a.producer_id, a.first_offset))
            .collect()
    }

    /// Every aborted transaction still indexed (tests and tools).
    pub fn aborted_txn_index(&self) -> Vec<AbortedTxn> {
        self.snapshot().aborted.as_ref().clone()
    }

    /// `(producer id, first offset)` of the open transactions, oldest first.
    pub fn ongoing_transactions(&self) -> Vec<(i64, i64)> {
        self.lock().producers.ongoing()
    }

    /// Starts a KIP-890 verification for `producer_id`: `None` when the producer already has
    /// an open transaction in this partition (nothing to verify), else its guard (the existing
    /// one if a verification is already under way, as Kafka does).
    pub fn start_txn_verification(&self, producer_id: i64) -> Option<VerificationGuard> {
        let mut inner = self.lock();
        if inner.producers.has_ongoing_txn(producer_id) {
            return None;
        }
        let now = self.clock.now_ms();
        let fresh = inner.next_guard;
        let (guard, _) = *inner
            .verification
            .entry(producer_id)
            .or_insert((fresh, now));
        if guard == fresh {
            inner.next_guard += 1;
        }
        Some(VerificationGuard(guard))
    }

    /// Drops verification guards older than `max_age_ms` (verifications that never led to
    /// an append), alongside producer expiry.
    pub(super) fn remove_stale_guards(&self, now_ms: i64, max_age_ms: i64) {
        self.lock()
            .verification
            .retain(|_, (_, created)| now_ms.saturating_sub(*created) < max_age_ms);
    }

    /// Writes a COMMIT or ABORT marker for `producer_id` at `epoch` (the transaction
    /// coordinator's WriteTxnMarkers). Fails with INVALID_PRODUCER_EPOCH when the partition has
    /// seen a newer epoch of the producer.
    pub fn write_txn_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        control: ControlType,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<crate::AppendInfo> {
        let batch = control_batch(producer_id, epoch, coordinator_epoch, control, now_ms)?;
        self.append_internal(&batch, leader_epoch, now_ms)
    }

    /// fsyncs index files appended to since the last call (flush, before snapshots). Must not
    /// be called with the append lock held (checked in debug builds).
    pub(super) fn sync_txn_index(&self) -> Result<()> {
        super::locked::assert_unlocked("syncing the transaction index");
        let dirty = std::mem::take(
            &mut *self
                .txn_dirty
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for base in dirty {
            let path = segment_path(&self.dir, base, TXN_INDEX_SUFFIX);
            match OpenOptions::new().read(true).open(&path) {
                Ok(f) => f
                    .sync_data()
                    .map_err(|e| LogError::io("fsync transaction index", &path, e))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("open transaction index", &path, e)),
            }
        }
        Ok(())
    }

    /// The cleaner is about to remove these ABORT markers (their aborted data is already
    /// gone): their index entries go first, in memory and in the sealed segments' files, so
    /// no reader is told about a transaction whose marker it will not find.
    pub fn forget_aborted_txns(&self, marker_offsets: &[i64]) -> Result<()> {
        if marker_offsets.is_empty() {
            return Ok(());
        }
        {
            let mut inner = self.lock();
            let kept: Vec<AbortedTxn> = inner
                .aborted
                .iter()
                .filter(|a| !marker_offsets.contains(&a.last_offset))
                .copied()
                .collect();
            if kept.len() != inner.aborted.len() {
                inner.aborted = Arc::new(kept);
                inner.publish();
            }
        }
        self.reconcile_txn_index()
    }

    /// After retention or a cleaner swap: drops entries of removed segments and rewrites the
    /// sealed segments' files (the active one only receives appends).
    pub(super) fn reconcile_txn_index(&self) -> Result<()> {
        let _files = self
            .txn_files
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (bases, list) = {
            let mut inner = self.lock();
            let first_base = inner.segments.first().map_or(0, |s| s.base_offset);
            if inner
                .aborted
                .first()
                .is_some_and(|a| a.last_offset < first_base)
            {
                let kept: Vec<AbortedTxn> = inner
                    .aborted
                    .iter()
                    .filter(|a| a.last_offset >= first_base)
                    .copied()
                    .collect();
                inner.aborted = Arc::new(kept);
                inner.publish();
            }
            let bases: Vec<i64> = inner.segments.iter().map(|s| s.base_offset).collect();
            (bases, inner.aborted.clone())
        };
        let active = bases.last().copied();
        write_files(&self.dir, &bases, &list, active)
    }
}

impl AppendLocked<'_> {
    /// `headers` passed the producer-state check. A transactional data batch is refused unless
    /// its producer has an open transaction here or `guard` is the producer's current guard.
    pub(super) fn check_verified(
        &self,
        headers: &[BatchHeader],
        guard: Option<VerificationGuard>,
    ) -> Result<()> {
        let inner = &**self;
        for h in headers {
            if !h.is_transactional()
                || h.is_control()
                || inner.producers.has_ongoing_txn(h.producer_id)
            {
                continue;
            }
            let current = inner
                .verification
                .get(&h.producer_id)
                .map(|(g, _)| VerificationGuard(*g));
            if guard.is_none() || current != guard {
                return Err(LogError::InvalidTxnState {
                    producer_id: h.producer_id,
                });
            }
        }
        Ok(())
    }

    /// Records closed transactions of an append (the batches are written): aborted ones go to
    /// the in-memory index and to the marker segment's file (appended, not fsynced: the next
    /// flush syncs it).
    pub(super) fn record_completed(&mut self, completed: &[CompletedTxn]) {
        let log = self.log();
        let inner = &mut **self;
        let aborted: Vec<&CompletedTxn> = completed.iter().filter(|c| c.aborted).collect();
        if aborted.is_empty() {
            return;
        }
        let bases: Vec<i64> = inner.segments.iter().map(|s| s.base_offset).collect();
        let mut list = inner.aborted.as_ref().clone();
        for c in aborted {
            let lso = inner
                .producers
                .first_unstable_offset()
                .unwrap_or(inner.leo)
                .min(inner.leo);
            let entry = AbortedTxn {
                producer_id: c.producer_id,
                first_offset: c.first_offset,
                last_offset: c.last_offset,
                last_stable_offset: lso,
            };
            list.push(entry);
            let Some(base) = owner(&bases, c.last_offset) else {
                continue;
            };
            let path = segment_path(&log.dir, base, TXN_INDEX_SUFFIX);
            let written = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(&entry.encode()));
            match written {
                Ok(()) => {
                    log.txn_dirty
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(base);
                }
                // The in-memory index stays right; the next reconciliation rewrites the file.
                Err(e) => tracing::warn!(path = %path.display(), error = %e,
                    "could not append to the transaction index"),
            }
        }
        list.sort_by_key(|a| a.last_offset);
        inner.aborted = Arc::new(list);
    }

    /// At open (the log is not shared yet, so the file rewrite under the lock blocks no one):
    /// entries below `replayed_from` come from the files, the rest from the replay of the log
    /// tail; files are then rewritten to match.
    pub(super) fn load_txn_index(
        &mut self,
        replayed_from: i64,
        replayed: Vec<AbortedTxn>,
    ) -> Result<()> {
        let dir = &self.log().dir;
        let inner = &mut **self;
        let first_base = inner.segments.first().map_or(0, |s| s.base_offset);
        let limit = replayed_from.min(inner.leo);
        let mut set: BTreeSet<(i64, i64, i64, i64)> = BTreeSet::new();
        for (_, entries) in read_index_files(dir)? {
            for a in entries {
                if a.last_offset < limit && a.last_offset >= first_base {
                    set.insert((
                        a.last_offset,
                        a.producer_id,
                        a.first_offset,
                        a.last_stable_offset,
                    ));
                }
            }
        }
        for a in replayed {
            set.insert((
                a.last_offset,
                a.producer_id,
                a.first_offset,
                a.last_stable_offset,
            ));
        }
        let list: Vec<AbortedTxn> = set
            .into_iter()
            .map(|(l, p, f, s)| AbortedTxn {
                producer_id: p,
                first_offset: f,
                last_offset: l,
                last_stable_offset: s,
            })
            .collect();
        inner.aborted = Arc::new(list);
        let bases: Vec<i64> = inner.segments.iter().map(|s| s.base_offset).collect();
        write_files(dir, &bases, &inner.aborted, None)
    }
}
