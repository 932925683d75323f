//! How a [`Log`] keeps its key index (`crate::key_index`) current and answers lookups.
//!
//! - After every append, the appending thread applies the batches it just wrote (or, when
//!   another append got there first or is still behind, catches up from the log), before
//!   `append` returns: a write is in the index before it is acknowledged.
//! - A new index is `Loading`: [`Log::build_key_index`] (called in steps by the broker's
//!   background builder) reads the log from its start; appends skip the index meanwhile and
//!   the builder catches up with them before turning `Ready`.
//! - A lookup catches up to the log end first (cheap when nothing is pending), then reads the
//!   one batch holding the key's latest offset and checks the record's key bytes.
//!
//! Thread-safety: runs outside the append lock; the index mutex is held while batches are
//! applied and while catch-up reads the log (readers never block appends).

use super::Log;
use crate::error::{LogError, Result};
use crate::key_index::{
    ApplyError, IndexState, KeyIndex, KeyIndexBudget, KeyIndexPhase, KeyIndexStatus, KeyLookup,
    KeyedRecord,
};
use crate::segment::{read_guard, write_guard};
use crate::validate::MAX_DECOMPRESSED_BATCH;
use skiff_records::{record_at, BatchHeader, Batches, TimestampType};
use std::sync::Arc;

/// Bytes read from the log per catch-up read.
const CATCH_UP_READ: usize = 1 << 20;

impl Log {
    fn key_index(&self) -> Option<Arc<KeyIndex>> {
        read_guard(&self.key_index).clone()
    }

    /// Starts a key index charged to `budget`, in the `Loading` phase. Returns true when a
    /// new index was created (the caller then runs [`Log::build_key_index`] until done);
    /// false when one already exists (whatever its phase).
    pub fn enable_key_index(&self, budget: &Arc<KeyIndexBudget>) -> bool {
        let mut slot = write_guard(&self.key_index);
        if slot.is_some() {
            return false;
        }
        *slot = Some(Arc::new(KeyIndex::new(
            budget.clone(),
            self.log_start_offset(),
        )));
        true
    }

    /// Drops the key index and gives its memory back to the budget.
    pub fn disable_key_index(&self) {
        write_guard(&self.key_index).take();
    }

    /// Phase, size and progress of the key index; None without one.
    pub fn key_index_status(&self) -> Option<KeyIndexStatus> {
        let ix = self.key_index()?;
        let st = ix.lock();
        let (keys, bytes) = st.stats();
        Some(KeyIndexStatus {
            phase: st.phase,
            keys,
            bytes,
            next_offset: st.next,
        })
    }

    /// One step of a background build: indexes up to about `max_bytes` of the log. Returns
    /// true when there is nothing more to do (the index is `Ready`, over budget, disabled, or
    /// the log is closed), false when the caller should call again.
    pub fn build_key_index(&self, max_bytes: usize) -> Result<bool> {
        let Some(ix) = self.key_index() else {
            return Ok(true);
        };
        if self.is_closed() {
            return Ok(true);
        }
        let mut st = ix.lock();
        if st.phase != KeyIndexPhase::Loading {
            return Ok(true);
        }
        let done = self.advance(&mut st, max_bytes)?;
        if done && st.phase == KeyIndexPhase::Loading {
            st.phase = KeyIndexPhase::Ready;
            tracing::info!(dir = %self.dir.display(), keys = st.stats().0,
                bytes = st.stats().1, "key index built");
        }
        Ok(done)
    }

    /// Called by `append` after the lock is released, with the stamped batches it wrote from
    /// `first_offset` on. Never fails the append: an error leaves the index behind, and the
    /// next lookup catches up (or reports the error).
    pub(super) fn key_index_after_append(&self, buf: &[u8], first_offset: i64) {
        let Some(ix) = self.key_index() else {
            return;
        };
        let mut st = ix.lock();
        if st.phase != KeyIndexPhase::Ready {
            return;
        }
        let mut result = Ok(());
        if st.next == first_offset {
            let log_start = self.log_start_offset();
            result = apply_all(&mut st, buf, log_start, &self.dir);
        }
        if let Err(e) = result.and_then(|()| self.advance(&mut st, usize::MAX).map(|_| ())) {
            tracing::warn!(dir = %self.dir.display(), error = %e,
                "key index could not follow an append; lookups will retry");
        }
    }

    /// Applies the log from `st.next` toward the log end, reading about `max_bytes` at most.
    /// Returns true once the log end was reached (or the index gave up over budget).
    fn advance(&self, st: &mut IndexState, max_bytes: usize) -> Result<bool> {
        let mut read = 0usize;
        loop {
            if st.phase == KeyIndexPhase::OverBudget {
                return Ok(true);
            }
            let snap = self.snapshot();
            if st.next < snap.log_start {
                st.next = snap.log_start;
            }
            if st.next >= snap.leo {
                return Ok(true);
            }
            if read >= max_bytes {
                return Ok(false);
            }
            let want = CATCH_UP_READ.min(max_bytes - read).max(1);
            let info = match self.read(st.next, want, true) {
                Ok(info) => info,
                // The log start moved past `next` since the snapshot: go round again.
                Err(LogError::OffsetOutOfRange { .. }) => continue,
                Err(e) => return Err(e),
            };
            if info.records.is_empty() {
                // No batch is left in [next, end): the cleaner removed them all.
                st.next = st.next.max(info.log_end_offset);
                continue;
            }
            read += info.records.len();
            apply_all(st, &info.records, info.log_start_offset, &self.dir)?;
        }
    }

    /// The latest record of `key`; see [`KeyLookup`]. `read_committed` leaves out records of
    /// transactions still open (aborted ones are never seen).
    pub fn lookup_key(&self, key: &[u8], read_committed: bool) -> Result<KeyLookup> {
        let Some(ix) = self.key_index() else {
            return Ok(KeyLookup::Disabled);
        };
        let entry = {
            let mut st = ix.lock();
            let hash = st.key_hash(key);
            match st.phase {
                KeyIndexPhase::Loading => return Ok(KeyLookup::Loading),
                KeyIndexPhase::OverBudget => {
                    return Ok(KeyLookup::OverBudget {
                        limit_bytes: ix.budget.limit(),
                    })
                }
                KeyIndexPhase::Ready => {}
            }
            self.advance(&mut st, usize::MAX)?;
            if st.phase == KeyIndexPhase::OverBudget {
                return Ok(KeyLookup::OverBudget {
                    limit_bytes: ix.budget.limit(),
                });
            }
            st.lookup(hash, read_committed)
        };
        match entry {
            Some(e) if !e.tombstone => self.read_keyed(e.offset, key),
            _ => Ok(KeyLookup::NotFound),
        }
    }

    /// Reads the record at `offset` and checks it carries `key`.
    fn read_keyed(&self, offset: i64, key: &[u8]) -> Result<KeyLookup> {
        let info = match self.read(offset, 1, true) {
            Ok(info) => info,
            Err(LogError::OffsetOutOfRange { .. }) => return Ok(KeyLookup::NotFound),
            Err(e) => return Err(e),
        };
        let Some(first) = Batches::new(&info.records).next() else {
            return Ok(KeyLookup::NotFound);
        };
        let (h, batch) = first.map_err(|e| corrupt(&self.dir, offset, &e.to_string()))?;
        if offset < h.base_offset || offset > h.last_offset() {
            // The record was removed (only a cleaner pass could have, for a newer one).
            return Ok(KeyLookup::NotFound);
        }
        // Within the batch's offset range (checked above), so the delta fits.
        let delta = i32::try_from(offset - h.base_offset).unwrap_or(-1);
        let Some(r) = record_at(batch, MAX_DECOMPRESSED_BATCH, delta)
            .map_err(|e| corrupt(&self.dir, offset, &e.to_string()))?
        else {
            return Ok(KeyLookup::NotFound);
        };
        match &r.key {
            Some(k) if k.as_ref() == key => {}
            _ => {
                return Err(LogError::CorruptMessage(format!(
                    "{}: key index hash collision or stale entry at offset {offset}: the record \
                     there has another key; disable and re-enable skiff.key.index.enable to rebuild",
                    self.dir.display()
                )))
            }
        }
        let Some(value) = r.value else {
            return Ok(KeyLookup::NotFound);
        };
        Ok(KeyLookup::Found(KeyedRecord {
            offset,
            timestamp: record_timestamp(&h, r.timestamp_delta),
            key: r.key.unwrap_or_default(),
            value,
            headers: r.headers,
        }))
    }
}

/// Applies every batch of `buf` (whole batches, in offset order); over budget, the index
/// gives up (and says so once in the log).
fn apply_all(st: &mut IndexState, buf: &[u8], log_start: i64, dir: &std::path::Path) -> Result<()> {
    for item in Batches::new(buf) {
        let (h, batch) = item.map_err(|e| corrupt(dir, st.next, &e.to_string()))?;
        match st.apply_batch(&h, batch, log_start) {
            Ok(()) => {}
            Err(ApplyError::OverBudget) => {
                tracing::warn!(dir = %dir.display(), offset = h.base_offset,
                    "key index dropped: it needs more than skiff.key.index.memory.bytes");
                st.give_up();
                return Ok(());
            }
            Err(ApplyError::Corrupt(m)) => return Err(corrupt(dir, h.base_offset, &m)),
        }
    }
    Ok(())
}

fn record_timestamp(h: &BatchHeader, delta: i64) -> i64 {
    match h.timestamp_type() {
        TimestampType::LogAppendTime => h.max_timestamp,
        TimestampType::CreateTime => h.base_timestamp.saturating_add(delta),
    }
}

fn corrupt(dir: &std::path::Path, offset: i64, what: &str) -> LogError {
    LogError::CorruptMessage(format!(
        "{}: key index could not decode the batch at offset {offset}: {what}",
        dir.display()
    ))
}
