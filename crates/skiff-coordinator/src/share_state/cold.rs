//! Cold-partition snapshots: which share partitions get their state written again as a
//! ShareSnapshot only because their last snapshot is old, so that a share partition nobody
//! writes to does not hold the prune bound (`prune.rs`) of its topic partition back forever.
//!
//! Kafka 4.4's share coordinator shard (`snapshotColdPartitions`) decides it per topic
//! partition of `__share_group_state`, every
//! `share.coordinator.cold.partition.snapshot.interval.ms`, from the two timestamps of the
//! latest snapshot (updates change neither):
//!
//! - a regular snapshot has `create_timestamp == write_timestamp`; a cold snapshot keeps the
//!   create timestamp and sets the write timestamp to now, so the two differ;
//! - when every share partition of the topic partition has a cold snapshot as its latest (or
//!   there is none), nothing is written: nothing was snapshotted for another reason since;
//! - otherwise every share partition whose latest snapshot was written at least the interval
//!   ago gets a cold snapshot, those already cold-snapshotted included.
//!
//! Pure: the caller groups the share partitions by topic partition and appends the records.

use super::records::SharePartitionKey;
use super::state::StoredShare;

/// Kafka's `share.coordinator.cold.partition.snapshot.interval.ms` default (5 minutes).
pub const DEFAULT_COLD_SNAPSHOT_INTERVAL_MS: i64 = 300_000;

/// The share partitions of one topic partition that get a cold snapshot at `now_ms`.
pub fn cold_partitions<'a>(
    shares: &[(&'a SharePartitionKey, &'a StoredShare)],
    now_ms: i64,
    interval_ms: i64,
) -> Vec<&'a SharePartitionKey> {
    if shares.iter().all(|(_, s)| was_cold_snapshotted(s)) {
        return Vec::new();
    }
    shares
        .iter()
        .filter(|(_, s)| now_ms.saturating_sub(s.write_timestamp) >= interval_ms)
        .map(|(k, _)| *k)
        .collect()
}

/// Whether the latest snapshot was a cold one (it kept an older create timestamp).
fn was_cold_snapshotted(share: &StoredShare) -> bool {
    share.create_timestamp != share.write_timestamp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::ShareSnapshot;
    use uuid::Uuid;

    fn k(p: i32) -> SharePartitionKey {
        SharePartitionKey {
            group: "g".into(),
            topic_id: Uuid::nil(),
            partition: p,
        }
    }

    fn stored(created: i64, written: i64) -> StoredShare {
        StoredShare {
            state: ShareSnapshot {
                start_offset: 0,
                state_epoch: 0,
                delivery_complete_count: 0,
                state_batches: vec![],
            },
            snapshot_epoch: 0,
            leader_epoch: 0,
            create_timestamp: created,
            write_timestamp: written,
        }
    }

    fn parts(keys: &[&SharePartitionKey]) -> Vec<i32> {
        keys.iter().map(|k| k.partition).collect()
    }

    #[test]
    fn an_old_regular_snapshot_is_cold_and_a_young_one_is_not() {
        let (k0, k1) = (k(0), k(1));
        let (old, young) = (stored(1_000, 1_000), stored(5_000, 5_000));
        let shares = [(&k0, &old), (&k1, &young)];
        assert_eq!(parts(&cold_partitions(&shares, 6_000, 5_000)), [0]);
        // Exactly the interval counts.
        assert_eq!(parts(&cold_partitions(&shares, 10_000, 5_000)), [0, 1]);
        assert!(cold_partitions(&shares, 5_999, 5_000).is_empty());
    }

    #[test]
    fn nothing_when_every_latest_snapshot_is_already_a_cold_one() {
        let (k0, k1) = (k(0), k(1));
        let (a, b) = (stored(1_000, 2_000), stored(1_500, 3_000));
        assert!(cold_partitions(&[(&k0, &a), (&k1, &b)], 100_000, 1_000).is_empty());
        assert!(cold_partitions(&[], 100_000, 1_000).is_empty());
    }

    #[test]
    fn one_regular_snapshot_lets_the_cold_ones_be_written_again() {
        // Kafka's shard filters per share partition by age only, once some share partition of
        // the topic partition has a regular latest snapshot.
        let (k0, k1) = (k(0), k(1));
        let (cold, regular) = (stored(1_000, 2_000), stored(9_000, 9_000));
        let shares = [(&k0, &cold), (&k1, &regular)];
        assert_eq!(parts(&cold_partitions(&shares, 9_500, 5_000)), [0]);
    }

    #[test]
    fn a_state_replayed_from_updates_alone_is_cold_at_once() {
        // Timestamps -1 (no snapshot was replayed): equal, so not cold-snapshotted yet, and
        // older than any interval on a real clock.
        let k0 = k(0);
        let s = stored(-1, -1);
        let now = 1_700_000_000_000;
        assert_eq!(parts(&cold_partitions(&[(&k0, &s)], now, 300_000)), [0]);
    }

    #[test]
    fn clock_extremes_do_not_overflow() {
        let k0 = k(0);
        let s = stored(i64::MIN, i64::MIN);
        assert_eq!(parts(&cold_partitions(&[(&k0, &s)], i64::MAX, 1)), [0]);
        let s = stored(i64::MAX, i64::MAX);
        assert!(cold_partitions(&[(&k0, &s)], i64::MIN, 1).is_empty());
    }
}
