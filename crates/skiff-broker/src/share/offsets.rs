//! A share group's start offsets as the admin APIs see them: DescribeShareGroupOffsets reads
//! the stored share-partition start offsets, AlterShareGroupOffsets replaces a share
//! partition's state with a fresh one starting at a given offset, DeleteShareGroupOffsets
//! deletes it (Kafka's ReadShareGroupStateSummary, InitializeShareGroupState and
//! DeleteShareGroupState, here internal calls on `__share_group_state`).
//!
//! The stored state is what a share partition is loaded from, and every change that moves
//! the start offset is written there before it is answered, so it is the one place read.
//! Resetting or deleting drops the loaded share partition too, so the next fetch loads the
//! new state. The caller checks first that the group is empty.
//!
//! Thread safety: blocking (appends to the store); call on the blocking pool.

use std::collections::BTreeMap;
use std::sync::Arc;

use skiff_coordinator::share::ShareSnapshot;
use skiff_coordinator::share_state::{SharePartitionKey, ShareWrite};
use uuid::Uuid;

use super::manager::{Pending, ShareManager, Slot};
use crate::errors::BrokerError;

impl ShareManager {
    /// The stored start offset of every share partition of `group`, by (topic id, partition).
    /// Empty when no share state exists (the state topic is not created for this).
    pub fn stored_start_offsets(&self, group: &str) -> BTreeMap<(Uuid, i32), i64> {
        let Some(store) = self.store_if_exists() else {
            return BTreeMap::new();
        };
        store
            .snapshots()
            .into_iter()
            .filter(|(k, _)| k.group == group)
            .map(|(k, s)| ((k.topic_id, k.partition), s.start_offset))
            .collect()
    }

    /// Gives each (topic id, partition) of `group` a fresh state starting at its offset: no
    /// record in flight, a newer state epoch (so nothing written by the old state can land
    /// after it). Returns the writes to wait for.
    pub fn reset_start_offsets(
        &self,
        group: &str,
        starts: &[(Uuid, i32, i64)],
    ) -> Result<Pending, BrokerError> {
        let store = self.store()?;
        let now = self.now_ms();
        let mut pending = Pending::default();
        for &(topic_id, partition, start_offset) in starts {
            let key = SharePartitionKey {
                group: group.to_string(),
                topic_id,
                partition,
            };
            let slot = self.forget_loaded(&key);
            let state_epoch = store
                .get(&key)
                .map_or(0, |s| s.state.state_epoch.saturating_add(1));
            let snapshot = ShareSnapshot {
                start_offset,
                state_epoch,
                delivery_complete_count: 0,
                state_batches: Vec::new(),
            };
            pending.push(store.write(&key, ShareWrite::Snapshot(snapshot), now)?);
            if let Some(slot) = slot {
                slot.wake();
            }
        }
        Ok(pending)
    }

    /// Deletes the state of every share partition of `topic_id` in `group`: the tombstones
    /// to wait for, and whether there was any.
    pub fn delete_topic_state(&self, group: &str, topic_id: Uuid) -> (Pending, bool) {
        let (pending, deleted) = self.forget(|k| k.group == group && k.topic_id == topic_id);
        (pending, deleted > 0)
    }

    /// Removes the loaded share partition of `key`, if any (it reloads from the store).
    fn forget_loaded(&self, key: &SharePartitionKey) -> Option<Arc<Slot>> {
        self.partitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
    }
}
