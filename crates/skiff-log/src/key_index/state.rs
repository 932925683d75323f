//! The in-memory state of one partition's key index and the pure rule that applies a batch
//! to it: non-transactional records go straight to the committed table; transactional data
//! waits per producer until its COMMIT marker (then merged, latest offset winning) or ABORT
//! marker (dropped). No I/O here: `log/key_index.rs` feeds it batches in offset order.
//!
//! Thread-safety: none of its own; held behind the index's mutex.

use super::table::{Entry, OverBudget, Table};
use super::KeyIndexBudget;
use crate::producer_state::ControlType;
use crate::txn_index::parse_marker;
use crate::validate::MAX_DECOMPRESSED_BATCH;
use skiff_records::{records, BatchHeader};
use std::collections::HashMap;
use std::sync::Arc;
use xxhash_rust::xxh3::xxh3_128_with_seed;

/// Where the index stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyIndexPhase {
    /// Being built from the log in the background; lookups must wait.
    Loading,
    /// Up to date with every append.
    Ready,
    /// Gave up: it needed more than the broker's budget; its memory was released.
    OverBudget,
}

/// Why a batch could not be applied.
#[derive(Debug)]
pub(crate) enum ApplyError {
    OverBudget,
    /// The batch's records could not be decoded (message says where).
    Corrupt(String),
}

/// One partition's index: see the module docs.
pub(crate) struct IndexState {
    pub(crate) phase: KeyIndexPhase,
    /// Every batch below this offset has been applied; the next one to apply starts here.
    pub(crate) next: i64,
    committed: Table,
    /// Open transactions' entries by producer id.
    pending: HashMap<i64, Table>,
    budget: Arc<KeyIndexBudget>,
    /// Random per index: clients choose the keys, and an unseeded hash would let them craft
    /// keys that pile into one probe sequence of the table.
    seed: u64,
}

impl IndexState {
    pub(crate) fn new(budget: Arc<KeyIndexBudget>, next: i64) -> IndexState {
        IndexState {
            phase: KeyIndexPhase::Loading,
            next,
            committed: Table::new(budget.clone()),
            pending: HashMap::new(),
            budget,
            seed: rand::random(),
        }
    }

    /// This index's hash of a record key (XXH3-128, seeded).
    pub(crate) fn key_hash(&self, key: &[u8]) -> u128 {
        xxh3_128_with_seed(key, self.seed)
    }

    /// Keys (committed table) and bytes charged (all tables).
    pub(crate) fn stats(&self) -> (usize, u64) {
        let pending: u64 = self.pending.values().map(Table::bytes).sum();
        (self.committed.len(), self.committed.bytes() + pending)
    }

    /// The latest entry for `hash`: committed data only, or with `read_committed == false`
    /// also open transactions' records (the newest offset wins).
    pub(crate) fn lookup(&self, hash: u128, read_committed: bool) -> Option<Entry> {
        let mut best = self.committed.get(hash);
        if !read_committed {
            for table in self.pending.values() {
                if let Some(e) = table.get(hash) {
                    if best.is_none_or(|b| b.offset < e.offset) {
                        best = Some(e);
                    }
                }
            }
        }
        best
    }

    /// Drops every entry and marks the index over budget (its memory goes back at once).
    pub(crate) fn give_up(&mut self) {
        self.phase = KeyIndexPhase::OverBudget;
        self.committed = Table::new(self.budget.clone());
        self.pending.clear();
    }

    /// Applies one whole batch (`h` parsed from `batch`) whose records at or past `next`
    /// are new. `log_start` lets a full table drop entries retention has already removed.
    pub(crate) fn apply_batch(
        &mut self,
        h: &BatchHeader,
        batch: &[u8],
        log_start: i64,
    ) -> Result<(), ApplyError> {
        if h.last_offset() < self.next {
            return Ok(());
        }
        let result = if h.is_control() {
            self.apply_marker(h, batch, log_start)
        } else {
            self.apply_data(h, batch, log_start)
        };
        self.next = h.next_offset();
        result
    }

    fn apply_marker(
        &mut self,
        h: &BatchHeader,
        batch: &[u8],
        log_start: i64,
    ) -> Result<(), ApplyError> {
        let Some(txn) = self.pending.remove(&h.producer_id) else {
            return Ok(());
        };
        match parse_marker(batch) {
            Some((ControlType::Commit, _)) => {
                for (hash, entry) in txn.iter() {
                    self.insert_committed(hash, entry, log_start)?;
                }
                Ok(())
            }
            Some((ControlType::Abort, _)) => Ok(()),
            // A control batch that is no marker (unknown type): the transaction stays open.
            None => {
                self.pending.insert(h.producer_id, txn);
                Ok(())
            }
        }
    }

    fn apply_data(
        &mut self,
        h: &BatchHeader,
        batch: &[u8],
        log_start: i64,
    ) -> Result<(), ApplyError> {
        let recs = records(batch, MAX_DECOMPRESSED_BATCH)
            .map_err(|e| ApplyError::Corrupt(format!("batch at offset {}: {e}", h.base_offset)))?;
        for r in &recs {
            let offset = h.base_offset + i64::from(r.offset_delta);
            let Some(key) = &r.key else { continue };
            if offset < self.next {
                continue;
            }
            let entry = Entry {
                offset,
                tombstone: r.value.is_none(),
            };
            let hash = self.key_hash(key);
            if h.is_transactional() {
                self.insert_pending(h.producer_id, hash, entry, log_start)?;
            } else {
                self.insert_committed(hash, entry, log_start)?;
            }
        }
        Ok(())
    }

    fn insert_committed(
        &mut self,
        hash: u128,
        entry: Entry,
        log_start: i64,
    ) -> Result<(), ApplyError> {
        if self.committed.insert_max(hash, entry).is_ok() {
            return Ok(());
        }
        self.prune(log_start);
        self.committed
            .insert_max(hash, entry)
            .map_err(|OverBudget| ApplyError::OverBudget)
    }

    fn insert_pending(
        &mut self,
        pid: i64,
        hash: u128,
        entry: Entry,
        log_start: i64,
    ) -> Result<(), ApplyError> {
        let budget = self.budget.clone();
        let table = self
            .pending
            .entry(pid)
            .or_insert_with(|| Table::new(budget));
        if table.insert_max(hash, entry).is_ok() {
            return Ok(());
        }
        self.prune(log_start);
        let budget = self.budget.clone();
        self.pending
            .entry(pid)
            .or_insert_with(|| Table::new(budget))
            .insert_max(hash, entry)
            .map_err(|OverBudget| ApplyError::OverBudget)
    }

    /// Makes room when the budget is reached: drops entries below the log start (retention
    /// or DeleteRecords removed those records) and tombstones older than every open
    /// transaction's first entry (no later commit can bring back an older value for their
    /// key, and an absent key answers "not found" just as a tombstone does), then gives the
    /// freed memory back.
    fn prune(&mut self, log_start: i64) {
        let oldest_open = self
            .pending
            .values()
            .filter_map(Table::min_offset)
            .min()
            .unwrap_or(i64::MAX);
        self.committed
            .retain(|e| e.offset >= log_start && !(e.tombstone && e.offset < oldest_open));
        self.committed.shrink();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn_index::control_batch;
    use skiff_records::{stamp_base_offset, BatchBuilder, Compression};

    fn data(base: i64, pid: i64, txn: bool, recs: &[(&str, Option<&str>)]) -> Vec<u8> {
        let mut b = BatchBuilder::new(base, Compression::None)
            .producer_id(pid)
            .producer_epoch(0)
            .base_sequence(if pid >= 0 { 0 } else { -1 })
            .transactional(txn);
        for (k, v) in recs {
            b.push(1, Some(k.as_bytes()), v.map(str::as_bytes), &[]);
        }
        b.build().unwrap()
    }

    fn apply(st: &mut IndexState, batch: &[u8]) {
        let h = BatchHeader::parse(batch).unwrap();
        st.apply_batch(&h, batch, 0).unwrap();
    }

    fn marker(base: i64, pid: i64, c: ControlType) -> Vec<u8> {
        let mut b = control_batch(pid, 0, 0, c, 1).unwrap();
        stamp_base_offset(&mut b, base);
        b
    }

    fn at(st: &IndexState, k: &str, rc: bool) -> Option<(i64, bool)> {
        st.lookup(st.key_hash(k.as_bytes()), rc)
            .map(|e| (e.offset, e.tombstone))
    }

    #[test]
    fn transactions_wait_for_their_marker_and_latest_offset_wins() {
        let mut st = IndexState::new(Arc::new(KeyIndexBudget::new(1 << 20)), 0);
        apply(
            &mut st,
            &data(0, -1, false, &[("a", Some("1")), ("b", Some("1"))]),
        );
        apply(
            &mut st,
            &data(2, 7, true, &[("a", Some("2")), ("c", Some("2"))]),
        );
        apply(&mut st, &data(4, 8, true, &[("b", Some("3"))]));
        // Non-transactional tombstone for c after the open transaction wrote it.
        apply(&mut st, &data(5, -1, false, &[("c", None)]));
        assert_eq!(at(&st, "a", true), Some((0, false)));
        assert_eq!(at(&st, "a", false), Some((2, false)));
        assert_eq!(at(&st, "c", false), Some((5, true)));
        apply(&mut st, &marker(6, 7, ControlType::Commit));
        apply(&mut st, &marker(7, 8, ControlType::Abort));
        assert_eq!(at(&st, "a", true), Some((2, false)));
        // The commit's older c (offset 3) does not override the later tombstone.
        assert_eq!(at(&st, "c", true), Some((5, true)));
        // Aborted data is gone for both isolations.
        assert_eq!(at(&st, "b", false), Some((1, false)));
        assert_eq!(st.next, 8);
        // Replaying an already applied batch changes nothing.
        apply(
            &mut st,
            &data(0, -1, false, &[("a", Some("1")), ("b", Some("1"))]),
        );
        assert_eq!(at(&st, "a", true), Some((2, false)));
    }
}
