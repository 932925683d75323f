//! Which records of a `__share_group_state` partition are no longer needed, so they can be
//! deleted from the log's start (the topic is not compacted; see `store.rs`).
//!
//! A share partition's state depends only on its latest ShareSnapshot and the records after
//! it. So every record below the oldest of the latest snapshots of the share partitions held in
//! a topic partition is redundant. A deleted share partition counts at its tombstone until the
//! next snapshot in the partition moves the bound on (Kafka's share coordinator keeps the same
//! bound: `ShareCoordinatorOffsetsManager`).
//!
//! Pure bookkeeping, fed with the offset of every snapshot and tombstone record, appended or
//! replayed; updates are not needed (they always follow their snapshot).

use std::collections::BTreeMap;

use super::records::SharePartitionKey;

/// The bound of one topic partition.
#[derive(Debug, Default)]
pub struct RedundantOffsets {
    /// Offset of each live share partition's latest snapshot.
    latest: BTreeMap<SharePartitionKey, i64>,
    /// Records below this are redundant; `None` until the first snapshot.
    bound: Option<i64>,
}

impl RedundantOffsets {
    /// A snapshot (or, when `deleted`, a tombstone) of `key` at `offset`.
    pub fn snapshot_at(&mut self, key: &SharePartitionKey, offset: i64, deleted: bool) {
        self.latest.insert(key.clone(), offset);
        self.bound = self.latest.values().min().copied();
        if deleted {
            self.latest.remove(key);
        }
    }

    /// Records below the returned offset can be deleted; `None` when there is nothing to
    /// delete.
    pub fn redundant_below(&self) -> Option<i64> {
        self.bound.filter(|b| *b > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn k(p: i32) -> SharePartitionKey {
        SharePartitionKey {
            group: "g".into(),
            topic_id: Uuid::nil(),
            partition: p,
        }
    }

    #[test]
    fn the_oldest_latest_snapshot_bounds_what_can_go() {
        let mut r = RedundantOffsets::default();
        assert_eq!(r.redundant_below(), None);
        r.snapshot_at(&k(0), 0, false);
        assert_eq!(r.redundant_below(), None, "offset 0: nothing below");
        r.snapshot_at(&k(1), 3, false);
        assert_eq!(
            r.redundant_below(),
            None,
            "k0's snapshot at 0 is still needed"
        );
        r.snapshot_at(&k(0), 7, false);
        assert_eq!(r.redundant_below(), Some(3));
        r.snapshot_at(&k(1), 9, false);
        assert_eq!(r.redundant_below(), Some(7));
    }

    #[test]
    fn a_deleted_share_partition_stops_holding_the_bound_back() {
        let mut r = RedundantOffsets::default();
        r.snapshot_at(&k(0), 2, false);
        r.snapshot_at(&k(1), 4, false);
        r.snapshot_at(&k(0), 6, true);
        assert_eq!(r.redundant_below(), Some(4));
        r.snapshot_at(&k(1), 8, false);
        assert_eq!(r.redundant_below(), Some(8), "only k1 is left");
    }
}
