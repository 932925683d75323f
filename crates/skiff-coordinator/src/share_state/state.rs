//! The share coordinator's view of `__share_group_state`, as a pure value: the latest state of
//! every share partition, and the decision of which record a write appends.
//!
//! The same [`ShareStates::apply`] serves replay at start and every append after it (a record
//! is applied once it is in the log), so what a restarted broker rebuilds is exactly what the
//! running one held. This is how Kafka's share coordinator keeps its map: the shard replays
//! its own writes.
//!
//! Snapshot cadence, as Kafka's shard decides it:
//! - an update is counted per share partition when it is applied; a write appends a
//!   ShareSnapshot instead of a ShareUpdate once that count has reached
//!   `share.coordinator.snapshot.update.records.per.snapshot` (so with the default 500, one
//!   snapshot then 500 updates, then a snapshot folding them in);
//! - applying a snapshot resets the count only when it had reached the limit (Kafka's rule: a
//!   snapshot written for another reason leaves the count running);
//! - the start offset moving, either way, is something an update expresses (its StartOffset,
//!   -1 when unchanged): it does not force a snapshot in Kafka and does not here;
//! - a new state epoch is not: ShareUpdate has no StateEpoch field. Kafka starts a new state
//!   epoch with a snapshot (InitializeShareGroupState); a batch write carrying a newer epoch
//!   is written here as a snapshot too, rather than lose the epoch (Kafka would write an update
//!   and keep the old epoch in the record).

use std::collections::BTreeMap;

use super::combine::combine;
use super::error::ShareStateError;
use super::placement::coordinator_key;
use super::records::{Key, SharePartitionKey, SnapshotValue, UpdateValue};
use crate::share::{ShareSnapshot, StateBatch};

/// Kafka's default `share.coordinator.snapshot.update.records.per.snapshot`.
pub const DEFAULT_UPDATES_PER_SNAPSHOT: u32 = 500;

/// Kafka's epoch of a state not known yet (`UNINITIALIZED_EPOCH`).
const UNKNOWN_EPOCH: i32 = -1;

/// What a writer asks to persist for one share partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareWrite {
    /// The whole state (a share partition initialised, reset, or restored): always appended
    /// as a ShareSnapshot with the next snapshot epoch, replacing what was stored. Fenced,
    /// like batches, when its state epoch is older than the stored one.
    Snapshot(ShareSnapshot),
    /// State batches changed since the last write (Kafka's WriteShareGroupState): appended as
    /// a ShareUpdate, or as a snapshot folding in the state so far when one is due.
    Batches(BatchWrite),
}

/// A WriteShareGroupState's content for one share partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchWrite {
    /// The writer's state epoch; older than the stored one is fenced, -1 skips the check.
    pub state_epoch: i32,
    /// The new share-partition start offset; `None` when it did not move.
    pub start_offset: Option<i64>,
    /// Acknowledged and archived offsets at or after the start offset; -1 when not known.
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

/// One share partition's stored state and the share coordinator's bookkeeping around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredShare {
    /// Start offset, state epoch, delivery complete count and the combined state batches.
    pub state: ShareSnapshot,
    pub snapshot_epoch: i32,
    pub leader_epoch: i32,
    /// When the last snapshot was written (updates do not change them).
    pub create_timestamp: i64,
    pub write_timestamp: i64,
}

/// A record to append: a key and its value, `None` for a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Snapshot(SharePartitionKey, Option<SnapshotValue>),
    Update(SharePartitionKey, UpdateValue),
}

impl Record {
    pub fn key(&self) -> Key {
        match self {
            Record::Snapshot(k, _) => Key::Snapshot(k.clone()),
            Record::Update(k, _) => Key::Update(k.clone()),
        }
    }

    pub fn partition_key(&self) -> &SharePartitionKey {
        match self {
            Record::Snapshot(k, _) | Record::Update(k, _) => k,
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    stored: StoredShare,
    updates_since_snapshot: u32,
}

/// Every share partition's latest state.
#[derive(Debug, Default)]
pub struct ShareStates {
    entries: BTreeMap<SharePartitionKey, Entry>,
}

impl ShareStates {
    pub fn get(&self, key: &SharePartitionKey) -> Option<&StoredShare> {
        self.entries.get(key).map(|e| &e.stored)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&SharePartitionKey, &StoredShare)> {
        self.entries.iter().map(|(k, e)| (k, &e.stored))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Updates applied to `key` since the count was last reset (for tests and metrics).
    pub fn updates_since_snapshot(&self, key: &SharePartitionKey) -> Option<u32> {
        self.entries.get(key).map(|e| e.updates_since_snapshot)
    }

    /// The record `write` appends for `key`, decided on the current state; nothing changes
    /// until the record is appended and [`ShareStates::apply`]d.
    pub fn plan(
        &self,
        key: &SharePartitionKey,
        write: ShareWrite,
        updates_per_snapshot: u32,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<Record, ShareStateError> {
        let current = self.entries.get(key);
        let written_epoch = match &write {
            ShareWrite::Snapshot(s) => s.state_epoch,
            ShareWrite::Batches(b) => b.state_epoch,
        };
        if let Some(stored) = current.map(|e| e.stored.state.state_epoch) {
            if written_epoch != UNKNOWN_EPOCH && written_epoch < stored {
                return Err(ShareStateError::FencedStateEpoch {
                    key: coordinator_key(key),
                    written: written_epoch,
                    stored,
                });
            }
        }
        let batches = match write {
            ShareWrite::Snapshot(s) => {
                // As Java's int: the epoch wraps rather than overflow on a replayed maximum.
                let snapshot_epoch = current.map_or(0, |e| e.stored.snapshot_epoch.wrapping_add(1));
                return Ok(Record::Snapshot(
                    key.clone(),
                    Some(SnapshotValue {
                        snapshot_epoch,
                        state_epoch: s.state_epoch,
                        leader_epoch: current.map_or(leader_epoch, |e| e.stored.leader_epoch),
                        start_offset: s.start_offset,
                        delivery_complete_count: s.delivery_complete_count,
                        create_timestamp: now_ms,
                        write_timestamp: now_ms,
                        // Normalised (sorted, joined, cut at the start offset).
                        state_batches: combine(&[], &s.state_batches, s.start_offset),
                    }),
                ));
            }
            ShareWrite::Batches(b) => b,
        };
        let Some(current) = current else {
            return Err(ShareStateError::Uninitialized(coordinator_key(key)));
        };
        let stored = &current.stored;
        let new_epoch = batches.state_epoch > stored.state.state_epoch;
        if current.updates_since_snapshot >= updates_per_snapshot || new_epoch {
            let start_offset = batches.start_offset.unwrap_or(stored.state.start_offset);
            return Ok(Record::Snapshot(
                key.clone(),
                Some(SnapshotValue {
                    snapshot_epoch: stored.snapshot_epoch.wrapping_add(1),
                    state_epoch: stored.state.state_epoch.max(batches.state_epoch),
                    leader_epoch: stored.leader_epoch,
                    start_offset,
                    delivery_complete_count: batches.delivery_complete_count,
                    create_timestamp: now_ms,
                    write_timestamp: now_ms,
                    state_batches: combine(
                        &stored.state.state_batches,
                        &batches.state_batches,
                        start_offset,
                    ),
                }),
            ));
        }
        let start_offset = batches.start_offset.unwrap_or(-1);
        Ok(Record::Update(
            key.clone(),
            UpdateValue {
                snapshot_epoch: stored.snapshot_epoch,
                leader_epoch: stored.leader_epoch,
                start_offset,
                delivery_complete_count: batches.delivery_complete_count,
                // The write's own batches may overlap: combined among themselves.
                state_batches: combine(&[], &batches.state_batches, start_offset),
            },
        ))
    }

    /// The cold snapshot of `key` (see `cold.rs`): its state written again unchanged as a
    /// ShareSnapshot with the next snapshot epoch, keeping the create timestamp and writing
    /// now as the write timestamp, as Kafka's shard does. `None` when `key` has no state.
    pub fn cold_snapshot(&self, key: &SharePartitionKey, now_ms: i64) -> Option<Record> {
        let stored = &self.entries.get(key)?.stored;
        Some(Record::Snapshot(
            key.clone(),
            Some(SnapshotValue {
                snapshot_epoch: stored.snapshot_epoch.wrapping_add(1),
                state_epoch: stored.state.state_epoch,
                leader_epoch: stored.leader_epoch,
                start_offset: stored.state.start_offset,
                delivery_complete_count: stored.state.delivery_complete_count,
                create_timestamp: stored.create_timestamp,
                write_timestamp: now_ms,
                state_batches: stored.state.state_batches.clone(),
            }),
        ))
    }

    /// The tombstone that deletes `key`'s state (always a ShareSnapshot key, as Kafka writes
    /// it).
    pub fn tombstone(key: &SharePartitionKey) -> Record {
        Record::Snapshot(key.clone(), None)
    }

    /// Folds one record, appended or replayed, into the state.
    pub fn apply(&mut self, record: Record, updates_per_snapshot: u32) {
        match record {
            Record::Snapshot(key, None) => {
                self.entries.remove(&key);
            }
            Record::Snapshot(key, Some(v)) => {
                let stored = StoredShare {
                    state: ShareSnapshot {
                        start_offset: v.start_offset,
                        state_epoch: v.state_epoch,
                        delivery_complete_count: v.delivery_complete_count,
                        state_batches: v.state_batches,
                    },
                    snapshot_epoch: v.snapshot_epoch,
                    leader_epoch: v.leader_epoch,
                    create_timestamp: v.create_timestamp,
                    write_timestamp: v.write_timestamp,
                };
                match self.entries.get_mut(&key) {
                    Some(e) => {
                        e.stored = stored;
                        if e.updates_since_snapshot >= updates_per_snapshot {
                            e.updates_since_snapshot = 0;
                        }
                    }
                    None => {
                        self.entries.insert(
                            key,
                            Entry {
                                stored,
                                updates_since_snapshot: 0,
                            },
                        );
                    }
                }
            }
            Record::Update(key, v) => match self.entries.get_mut(&key) {
                Some(e) => {
                    let s = &mut e.stored;
                    if v.start_offset != -1 {
                        s.state.start_offset = v.start_offset;
                    }
                    if v.leader_epoch != UNKNOWN_EPOCH {
                        s.leader_epoch = v.leader_epoch;
                    }
                    s.state.delivery_complete_count = v.delivery_complete_count;
                    s.state.state_batches = combine(
                        &s.state.state_batches,
                        &v.state_batches,
                        s.state.start_offset,
                    );
                    e.updates_since_snapshot = e.updates_since_snapshot.saturating_add(1);
                }
                // An update with no snapshot before it (its snapshot was pruned away, or
                // the topic was truncated): Kafka takes the update alone as the state, with
                // an unknown state epoch; so does Skiff.
                None => {
                    self.entries.insert(
                        key,
                        Entry {
                            stored: StoredShare {
                                state: ShareSnapshot {
                                    start_offset: v.start_offset,
                                    state_epoch: UNKNOWN_EPOCH,
                                    delivery_complete_count: v.delivery_complete_count,
                                    state_batches: v.state_batches,
                                },
                                snapshot_epoch: v.snapshot_epoch,
                                leader_epoch: v.leader_epoch,
                                create_timestamp: -1,
                                write_timestamp: -1,
                            },
                            updates_since_snapshot: 1,
                        },
                    );
                }
            },
        }
    }
}
