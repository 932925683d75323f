//! Key index of a compacted partition (issue 16, docs/key-index.md): key → offset of its
//! latest record, so a lookup costs a hash probe and one batch read whatever the log's size.
//!
//! - `table`: one budget-charged hash table (128-bit XXH3 key hash → offset + tombstone);
//! - `state`: the index of one partition and the rule applying a batch to it (transactions
//!   wait for their marker);
//! - `log/key_index.rs`: how a `Log` keeps it current (after each append, background build,
//!   catch-up before a lookup) and answers lookups.
//!
//! Nothing is written to disk: the index is rebuilt from the log after a restart.
//!
//! Thread-safety: [`KeyIndex`] is `Send + Sync`; its state is behind one std `Mutex`, held
//! for in-memory work and reads of the log's files (never under the log's append lock, never
//! across an fsync). Lock order: the log's append lock is never taken while it is held.

mod state;
mod table;

pub use state::KeyIndexPhase;
pub(crate) use state::{ApplyError, IndexState};
pub use table::KeyIndexBudget;

use bytes::Bytes;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A key's latest record, as a lookup returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedRecord {
    pub offset: i64,
    /// CreateTime from the record, or the batch's LogAppendTime.
    pub timestamp: i64,
    pub key: Bytes,
    pub value: Bytes,
    /// Header keys as stored (UTF-8 by Kafka's contract), values possibly null.
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

/// The answer of [`crate::Log::lookup_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLookup {
    Found(KeyedRecord),
    /// The key never existed, its latest record is a tombstone, or the topic no longer holds
    /// it (retention, DeleteRecords).
    NotFound,
    /// The partition has no key index.
    Disabled,
    /// The index is being built (after start-up or after it was enabled).
    Loading,
    /// The index needed more than `skiff.key.index.memory.bytes` and was dropped.
    OverBudget {
        limit_bytes: u64,
    },
}

/// What [`crate::Log::key_index_status`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyIndexStatus {
    pub phase: KeyIndexPhase,
    /// Distinct keys held (tombstoned ones included until pruned).
    pub keys: usize,
    /// Bytes charged to the broker's budget.
    pub bytes: u64,
    /// Every batch below this offset is indexed.
    pub next_offset: i64,
}

/// One partition's index: its state and the budget it charges.
pub(crate) struct KeyIndex {
    pub(crate) budget: Arc<KeyIndexBudget>,
    state: Mutex<IndexState>,
}

impl KeyIndex {
    pub(crate) fn new(budget: Arc<KeyIndexBudget>, start: i64) -> KeyIndex {
        KeyIndex {
            state: Mutex::new(IndexState::new(budget.clone(), start)),
            budget,
        }
    }

    /// Locks the state (a poisoned lock is taken over: the state is only ever replaced
    /// wholesale or updated entry by entry, both valid at every step).
    pub(crate) fn lock(&self) -> MutexGuard<'_, IndexState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
