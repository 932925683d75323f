//! The log's producer state (idempotence and transactions, `producer_state.rs`) over time:
//! loaded at open from the newest snapshot plus a replay of the batch headers after it,
//! snapshots queued under the append lock and written after it, old snapshots removed after
//! retention, idle producers expired. The snapshot format is `producer_snapshot.rs`.
//!
//! Thread-safety: the state lives in `Inner`, so reading or changing it takes the append lock;
//! `queue_producer_snapshot` needs the lock (a method of [`AppendLocked`]) and
//! `write_pending_snapshots` must run without it (it fsyncs).

use super::{AppendLocked, Log};
use crate::error::{LogError, Result};
use crate::fsutil::write_atomically;
use crate::producer_snapshot::{decode, encode, list_snapshots, remove, snapshot_path};
use crate::producer_state::{ProducerEntry, ProducerStateManager};
use crate::txn_index::{parse_marker, AbortedTxn};
use std::sync::PoisonError;

impl Log {
    /// At open, before the log is shared: snapshots above the log end (a crash cut the data
    /// they describe) go; the newest readable one at or below the log end is loaded, then the
    /// batch headers after it are replayed.
    pub(super) fn load_producer_state(&self) -> Result<()> {
        let mut inner = self.lock();
        let leo = inner.leo;
        let mut loaded: Option<(i64, Vec<ProducerEntry>)> = None;
        for (offset, path) in list_snapshots(&self.dir)?.into_iter().rev() {
            if offset > leo || loaded.is_some() {
                if offset > leo {
                    tracing::info!(snapshot = %path.display(), log_end = leo,
                        "removing producer snapshot beyond the log end");
                    remove(&path)?;
                }
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| LogError::io("read", &path, e))?;
            match decode(&bytes) {
                Ok(entries) => loaded = Some((offset, entries)),
                Err(why) => {
                    tracing::warn!(snapshot = %path.display(), reason = %why,
                        "removing unreadable producer snapshot");
                    remove(&path)?;
                }
            }
        }
        let snapshot_at_end = loaded.as_ref().is_some_and(|(o, _)| *o == leo) || leo == 0;
        let (from, entries) = loaded.unwrap_or((0, Vec::new()));
        let mut state = ProducerStateManager::from_entries(entries, from);
        let mut replayed = 0usize;
        let mut aborted = Vec::new();
        for seg in inner.segments.iter() {
            if seg.next_offset() <= from {
                continue;
            }
            let limit = seg.size();
            let Some((mut pos, _)) = seg.find_position(from, limit)? else {
                continue;
            };
            while let Some(h) = seg.header_at(pos, limit)? {
                let marker = if h.is_control() {
                    parse_marker(&seg.read_exact(pos, h.total_size())?)
                } else {
                    None
                };
                if let Some(done) = state.replay(&h, marker).filter(|c| c.aborted) {
                    aborted.push(AbortedTxn {
                        producer_id: done.producer_id,
                        first_offset: done.first_offset,
                        last_offset: done.last_offset,
                        last_stable_offset: state
                            .first_unstable_offset()
                            .unwrap_or(h.next_offset())
                            .min(h.next_offset()),
                    });
                }
                replayed += 1;
                pos += h.total_size() as u64;
            }
        }
        if replayed > 0 || state.len() > 0 {
            // One per partition at start-up: DEBUG (the broker summarises the load at INFO).
            tracing::debug!(dir = %self.dir.display(), snapshot_offset = from,
                replayed_batches = replayed, producers = state.len(), "producer state loaded");
        }
        inner.producers = state;
        inner.load_txn_index(from, aborted)?;
        inner.publish();
        if snapshot_at_end {
            if let Some(active) = inner.segments.last() {
                let _ = self.settled_at_open.set((leo, active.base_offset));
            }
        }
        Ok(())
    }

    /// Writes queued snapshots. Must not be called with the append lock held (fsync; checked
    /// in debug builds).
    pub(super) fn write_pending_snapshots(&self) -> Result<()> {
        super::locked::assert_unlocked("writing producer snapshots");
        // A snapshot must not describe aborted transactions whose index entry could be lost.
        self.sync_txn_index()?;
        let _writing = self
            .snapshot_writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let pending = std::mem::take(
            &mut *self
                .pending_snapshots
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (offset, bytes) in pending {
            write_atomically(&snapshot_path(&self.dir, offset), &bytes)?;
        }
        Ok(())
    }

    /// Removes snapshot files below the first segment's base offset (after retention): the
    /// newest of the kept ones covers everything that is still in the log.
    pub(super) fn delete_old_snapshots(&self) -> Result<()> {
        let first_base = self.snapshot().segments.first().map(|s| s.base_offset);
        let Some(first_base) = first_base else {
            return Ok(());
        };
        // Listing removes temp files of interrupted writes: not while a write is in progress.
        let _writing = self
            .snapshot_writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let snapshots = list_snapshots(&self.dir)?;
        let newest = snapshots.last().map(|(o, _)| *o);
        for (offset, path) in snapshots {
            if offset < first_base && Some(offset) != newest {
                remove(&path)?;
            }
        }
        Ok(())
    }

    /// `producer.id.expiration.ms`: forgets producers whose last batch is at least
    /// `expiration_ms` old by the log's clock. Returns how many were removed.
    pub fn remove_expired_producers(&self, expiration_ms: i64) -> usize {
        let now = self.clock.now_ms();
        let removed = self.lock().producers.remove_expired(now, expiration_ms);
        self.remove_stale_guards(now, expiration_ms);
        if removed > 0 {
            tracing::debug!(dir = %self.dir.display(), removed, "expired idle producer ids");
        }
        removed
    }

    /// The producers this partition knows, by producer id (DescribeProducers, tests).
    pub fn producer_entries(&self) -> Vec<ProducerEntry> {
        self.lock().producers.entries()
    }

    /// Offsets of the snapshot files on disk (tests and tools).
    pub fn producer_snapshot_offsets(&self) -> Result<Vec<i64>> {
        let _writing = self
            .snapshot_writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(list_snapshots(&self.dir)?
            .into_iter()
            .map(|(o, _)| o)
            .collect())
    }
}

impl AppendLocked<'_> {
    /// Queues a snapshot of the current producer state, written by the next
    /// `write_pending_snapshots` (after the lock is released).
    pub(super) fn queue_producer_snapshot(&self) {
        let offset = self.producers.map_end_offset();
        let bytes = encode(&self.producers.entries());
        self.log()
            .pending_snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((offset, bytes));
    }
}
