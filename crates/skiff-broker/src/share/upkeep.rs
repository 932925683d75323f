//! Upkeep of `__share_group_state`, Kafka's two periodic share coordinator jobs: cold-partition
//! snapshots (every `share.coordinator.cold.partition.snapshot.interval.ms`) and pruning (every
//! `share.coordinator.state.topic.prune.interval.ms`), which deletes the records that later
//! snapshots made redundant, so the topic stops growing without bound. The rules live in
//! `skiff_coordinator::share_state` (`cold.rs`, `prune.rs`); the housekeeper thread
//! (`background.rs`) calls these when they are due on the broker clock, tests call them
//! directly.
//!
//! Both do nothing while the store is closed (no share state yet, or a replay that failed),
//! and both hold the store handle's lock while they run: a reload after a failed durability
//! wait then neither replays a partition whose log start is moving nor misses a record the
//! store it replaces is appending.
//!
//! Thread safety: blocking (appends, an fsync per pruned partition, segment deletion); call
//! from a blocking thread.

use tracing::{debug, warn};

use super::ShareManager;

impl ShareManager {
    /// Writes the cold snapshots due now; returns how many were written.
    pub fn snapshot_cold_partitions(&self) -> usize {
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let Some(store) = store.as_ref() else {
            return 0;
        };
        match store.snapshot_cold_partitions(self.now_ms()) {
            Ok(appended) => {
                if !appended.is_empty() {
                    debug!(
                        snapshots = appended.len(),
                        "cold share partitions snapshotted"
                    );
                }
                appended.len()
            }
            Err(e) => {
                warn!(error = %e, "writing cold share partition snapshots failed");
                0
            }
        }
    }

    /// Deletes the records of `__share_group_state` below each partition's redundant bound;
    /// returns the partitions whose log start moved, with the new log start. A partition that
    /// fails is logged and tried again next time.
    pub fn prune_state(&self) -> Vec<(i32, i64)> {
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let Some(store) = store.as_ref() else {
            return Vec::new();
        };
        let mut pruned = Vec::new();
        for (partition, outcome) in store.prune() {
            match outcome {
                Ok(log_start) => {
                    debug!(partition, log_start, "share state pruned");
                    pruned.push((partition, log_start));
                }
                Err(e) => warn!(partition, error = %e, "pruning share state failed"),
            }
        }
        pruned
    }
}
