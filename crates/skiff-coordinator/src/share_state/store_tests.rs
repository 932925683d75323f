//! The store over the in-memory storage: the topic it creates, write then replay, snapshots
//! every N updates, tombstones, and replay refusing bytes that are not share state.

use std::sync::Arc;

use skiff_records::{BatchBuilder, Batches, Compression};
use uuid::Uuid;

use super::records::{self, Key, SharePartitionKey};
use super::*;
use crate::host::{InternalPartition, Storage, TopicCatalog};
use crate::memory::{MemPartition, MemStorage};
use crate::share::{DeliveryState, ShareLimits, SharePartition, ShareSnapshot, StateBatch};

fn key(partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group: "orders".into(),
        topic_id: Uuid::from_u64_pair(0x1234, 0x5678),
        partition,
    }
}

fn b(first: i64, last: i64, state: DeliveryState, count: u16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn init(start: i64) -> ShareWrite {
    ShareWrite::Snapshot(ShareSnapshot {
        start_offset: start,
        state_epoch: 0,
        delivery_complete_count: 0,
        state_batches: vec![],
    })
}

fn acked(offset: i64) -> ShareWrite {
    ShareWrite::Batches(BatchWrite {
        state_epoch: 0,
        start_offset: None,
        delivery_complete_count: -1,
        state_batches: vec![b(offset, offset, DeliveryState::Acknowledged, 1)],
    })
}

fn config(updates_per_snapshot: u32) -> ShareStateConfig {
    ShareStateConfig {
        updates_per_snapshot,
        ..ShareStateConfig::default()
    }
}

/// The record types (0 snapshot, 1 update) and whether each has a value, in log order.
fn kinds(partition: &MemPartition) -> Vec<(i16, bool)> {
    let mut out = Vec::new();
    for batch in partition.batches() {
        for item in Batches::new(&batch) {
            let (_, whole) = item.unwrap();
            for r in skiff_records::records(whole, 1 << 20).unwrap() {
                let kind = match records::decode_key(r.key.as_deref().unwrap()).unwrap() {
                    Key::Snapshot(_) => 0,
                    Key::Update(_) => 1,
                    Key::Other(k) => k,
                };
                out.push((kind, r.value.is_some()));
            }
        }
    }
    out
}

fn home(storage: &MemStorage, k: &SharePartitionKey) -> Arc<MemPartition> {
    storage
        .partition(SHARE_STATE_TOPIC, partition_for(k, DEFAULT_NUM_PARTITIONS))
        .unwrap()
}

#[test]
fn creates_the_topic_as_kafka_does() {
    let storage = MemStorage::default();
    ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    assert_eq!(storage.partition_count(SHARE_STATE_TOPIC), Some(50));
    let configs = storage.configs(SHARE_STATE_TOPIC).unwrap();
    assert_eq!(configs["cleanup.policy"], "delete");
    assert_eq!(configs["retention.ms"], "-1");
    assert_eq!(configs["segment.bytes"], "104857600");
    // Opening again keeps the topic.
    ShareStateStore::open(&storage, config(10)).unwrap();
    assert_eq!(storage.partition_count(SHARE_STATE_TOPIC), Some(50));
}

#[test]
fn writes_replay_to_the_same_state() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    for p in 0..4 {
        store.write(&key(p), init(10), 1).unwrap();
        store
            .write(
                &key(p),
                ShareWrite::Batches(BatchWrite {
                    state_epoch: 0,
                    start_offset: Some(12),
                    delivery_complete_count: 1,
                    state_batches: vec![
                        b(10, 12, DeliveryState::Acknowledged, 1),
                        b(13, 15, DeliveryState::Available, 2),
                    ],
                }),
                2,
            )
            .unwrap();
        store.write(&key(p), acked(14), 3).unwrap();
    }
    // Offset 14: the ack (count 1) loses to the count-2 AVAILABLE, as in Kafka's combiner.
    let want = ShareSnapshot {
        start_offset: 12,
        state_epoch: 0,
        delivery_complete_count: -1,
        state_batches: vec![
            b(12, 12, DeliveryState::Acknowledged, 1),
            b(13, 15, DeliveryState::Available, 2),
        ],
    };
    let before = store.snapshots();
    assert_eq!(before.len(), 4);
    assert_eq!(before[&key(0)], want);
    let replayed = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    assert_eq!(replayed.snapshots(), before);
    assert_eq!(replayed.get(&key(2)), store.get(&key(2)));
    // Each share partition's records are in the partition Kafka would pick.
    let k = key(3);
    assert_eq!(kinds(&home(&storage, &k)).first(), Some(&(0, true)));
}

#[test]
fn many_updates_make_a_snapshot_and_replay_keeps_the_cadence() {
    let storage = MemStorage::default();
    let k = key(0);
    let store = ShareStateStore::open(&storage, config(4)).unwrap();
    store.write(&k, init(0), 0).unwrap();
    for o in 0..6 {
        store.write(&k, acked(o), o).unwrap();
    }
    assert_eq!(
        kinds(&home(&storage, &k)),
        [
            (0, true),
            (1, true),
            (1, true),
            (1, true),
            (1, true),
            (0, true),
            (1, true)
        ]
    );
    // After a restart the count goes on from the log: three more updates, then a snapshot.
    let store = ShareStateStore::open(&storage, config(4)).unwrap();
    assert_eq!(store.updates_since_snapshot(&k), Some(1));
    for o in 6..10 {
        store.write(&k, acked(o), o).unwrap();
    }
    let kinds = kinds(&home(&storage, &k));
    assert_eq!(&kinds[7..], [(1, true), (1, true), (1, true), (0, true)]);
    let s = store.get(&k).unwrap();
    assert_eq!(s.snapshot_epoch, 2);
    assert_eq!(
        s.state.state_batches,
        vec![b(0, 9, DeliveryState::Acknowledged, 1)]
    );
}

#[test]
fn a_tombstone_removes_the_state_for_good() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    store.write(&key(0), init(5), 0).unwrap();
    store.write(&key(0), acked(5), 0).unwrap();
    store.write(&key(1), init(5), 0).unwrap();
    store.delete(&key(0), 1).unwrap();
    assert!(store.get(&key(0)).is_none());
    assert_eq!(kinds(&home(&storage, &key(0))).last(), Some(&(0, false)));
    let replayed = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    assert!(replayed.get(&key(0)).is_none());
    assert!(replayed.get(&key(1)).is_some());
    // Updates after a delete need a new snapshot first.
    let err = replayed.write(&key(0), acked(6), 2).err().unwrap();
    assert!(matches!(err, ShareStateError::Uninitialized(_)));
}

#[test]
fn a_share_partition_restores_from_replayed_state() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let k = key(0);
    store
        .write(
            &k,
            ShareWrite::Snapshot(ShareSnapshot {
                start_offset: 3,
                state_epoch: 1,
                delivery_complete_count: 1,
                state_batches: vec![
                    b(3, 3, DeliveryState::Acknowledged, 1),
                    b(4, 5, DeliveryState::Acquired, 1),
                ],
            }),
            0,
        )
        .unwrap();
    let replayed = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let snapshot = &replayed.snapshots()[&k];
    let partition = SharePartition::restore(snapshot, ShareLimits::default()).unwrap();
    // The acknowledged offset is behind the start; the acquired ones come back AVAILABLE.
    assert_eq!(partition.snapshot().start_offset, 4);
    assert_eq!(
        partition.snapshot().state_batches,
        vec![b(4, 5, DeliveryState::Available, 1)]
    );
}

#[test]
fn replay_refuses_a_corrupt_batch() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let k = key(0);
    store.write(&k, init(0), 0).unwrap();
    let partition = home(&storage, &k);
    // A whole batch whose last byte (in the value) was flipped: the CRC no longer matches.
    let mut batch = encode_batch(&ShareStates::tombstone(&k), 0).unwrap();
    let last = batch.len() - 1;
    batch[last] ^= 0xff;
    partition.append(&batch, 0, 0).unwrap();
    let err = ShareStateStore::open(&storage, ShareStateConfig::default())
        .err()
        .unwrap();
    assert!(
        matches!(&err, ShareStateError::Corrupt { offset: 1, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("CRC") || err.to_string().contains("crc"),
        "{err}"
    );
}

#[test]
fn replay_refuses_a_torn_batch() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let k = key(0);
    store.write(&k, init(0), 0).unwrap();
    let partition = home(&storage, &k);
    let batch = encode_batch(&ShareStates::tombstone(&k), 0).unwrap();
    partition.append(&batch[..batch.len() - 5], 0, 0).unwrap();
    let err = ShareStateStore::open(&storage, ShareStateConfig::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("torn"), "{err}");
}

#[test]
fn replay_refuses_garbage_in_a_valid_batch() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let k = key(0);
    store.write(&k, init(0), 0).unwrap();
    // A well-framed batch whose record is a snapshot key with a value that is not one.
    let mut builder = BatchBuilder::new(0, Compression::None);
    let kb = records::encode_key(&Key::Snapshot(k.clone()));
    builder.push(0, Some(&kb), Some(&[0, 0, 1, 2, 3]), &[]);
    home(&storage, &k)
        .append(&builder.build().unwrap(), 0, 0)
        .unwrap();
    let err = ShareStateStore::open(&storage, ShareStateConfig::default())
        .err()
        .unwrap();
    assert!(
        matches!(&err, ShareStateError::Corrupt { offset: 1, .. }),
        "{err}"
    );
    // A record of a type Kafka may add later is skipped, not an error.
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    store.write(&k, init(0), 0).unwrap();
    let mut builder = BatchBuilder::new(0, Compression::None);
    builder.push(0, Some(&[0, 7, 1]), Some(&[1]), &[]);
    home(&storage, &k)
        .append(&builder.build().unwrap(), 0, 0)
        .unwrap();
    let replayed = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    assert!(replayed.get(&k).is_some());
}

#[test]
fn a_failed_append_changes_nothing() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let k = key(0);
    store.write(&k, init(0), 0).unwrap();
    let before = store.get(&k);
    home(&storage, &k)
        .fail_appends
        .store(true, std::sync::atomic::Ordering::Release);
    let err = store.write(&k, acked(0), 1).err().unwrap();
    assert!(matches!(err, ShareStateError::Storage(_)));
    assert_eq!(store.get(&k), before);
    assert_eq!(store.updates_since_snapshot(&k), Some(0));
}

#[test]
fn appended_reports_where_to_wait_for_durability() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let k = key(0);
    let a = store.write(&k, init(0), 0).unwrap();
    assert_eq!(a.end_offset, 1);
    assert_eq!(a.partition.index(), partition_for(&k, 50));
    let a = store.write(&k, acked(0), 0).unwrap();
    assert_eq!(a.end_offset, 2);
    let fut = storage.wait_durable(a.partition.clone(), a.end_offset);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(fut).unwrap();
}

#[test]
fn redundant_offsets_follow_the_latest_snapshots() {
    let storage = MemStorage::default();
    let k = key(0);
    let store = ShareStateStore::open(&storage, config(2)).unwrap();
    let home = partition_for(&k, DEFAULT_NUM_PARTITIONS);
    store.write(&k, init(0), 0).unwrap(); // offset 0: snapshot
    assert_eq!(store.redundant_below(home), None);
    for o in 0..3 {
        store.write(&k, acked(o), 0).unwrap(); // 1, 2: updates; 3: snapshot
    }
    assert_eq!(store.redundant_below(home), Some(3));
    // The same after a restart.
    let store = ShareStateStore::open(&storage, config(2)).unwrap();
    assert_eq!(store.redundant_below(home), Some(3));
    assert_eq!(store.redundant_below(-1), None);
}

/// Every share partition in one topic partition, so they bound each other's pruning.
fn one_partition(updates_per_snapshot: u32) -> ShareStateConfig {
    ShareStateConfig {
        num_partitions: 1,
        updates_per_snapshot,
        ..ShareStateConfig::default()
    }
}

/// The offsets of the batches still in `partition`.
fn offsets_left(partition: &MemPartition) -> Vec<i64> {
    partition
        .batches()
        .iter()
        .map(|b| Batches::new(b).next().unwrap().unwrap().0.base_offset)
        .collect()
}

#[test]
fn pruning_deletes_what_later_snapshots_superseded_and_replay_gives_the_same_state() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, one_partition(2)).unwrap();
    let topic = storage.partition(SHARE_STATE_TOPIC, 0).unwrap();
    let (k0, k1) = (key(0), key(1));
    store.write(&k0, init(0), 0).unwrap(); // 0: snapshot
    store.write(&k1, init(0), 0).unwrap(); // 1: snapshot
    for o in 0..3 {
        store.write(&k0, acked(o), 1).unwrap(); // 2, 3: updates; 4: snapshot
    }
    // k1's snapshot at 1 holds the bound.
    assert_eq!(store.prune().len(), 1);
    assert_eq!(topic.log_start_offset(), 1);
    assert_eq!(offsets_left(&topic), [1, 2, 3, 4]);
    for o in 0..3 {
        store.write(&k1, acked(o), 2).unwrap(); // 5, 6: updates; 7: snapshot
    }
    store.write(&k0, acked(3), 3).unwrap(); // 8: update after k0's snapshot at 4
    let pruned = store.prune();
    assert_eq!(pruned.len(), 1);
    assert_eq!(pruned[0].0, 0);
    assert_eq!(*pruned[0].1.as_ref().unwrap(), 4);
    assert_eq!(offsets_left(&topic), [4, 5, 6, 7, 8]);
    assert!(store.prune().is_empty(), "already pruned that far");

    let before = store.snapshots();
    let replayed = ShareStateStore::open(&storage, one_partition(2)).unwrap();
    assert_eq!(replayed.snapshots(), before);
    for k in [&k0, &k1] {
        assert_eq!(replayed.get(k), store.get(k));
    }
    assert_eq!(replayed.redundant_below(0), store.redundant_below(0));
    assert_eq!(
        before[&k0].state_batches,
        vec![b(0, 3, DeliveryState::Acknowledged, 1)]
    );
}

#[test]
fn a_deleted_share_partition_is_pruned_away_once_a_later_snapshot_passes_its_tombstone() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, one_partition(1)).unwrap();
    let topic = storage.partition(SHARE_STATE_TOPIC, 0).unwrap();
    let (k0, k1) = (key(0), key(1));
    store.write(&k0, init(0), 0).unwrap(); // 0
    store.write(&k1, init(0), 0).unwrap(); // 1
    store.delete(&k0, 1).unwrap(); // 2: tombstone
    store.prune();
    assert_eq!(topic.log_start_offset(), 1, "k1's snapshot at 1");
    store.write(&k1, acked(0), 2).unwrap(); // 3: update
    store.write(&k1, acked(1), 2).unwrap(); // 4: snapshot (one update per snapshot)
    store.prune();
    assert_eq!(topic.log_start_offset(), 4);
    assert_eq!(kinds(&topic), [(0, true)]);
    let replayed = ShareStateStore::open(&storage, one_partition(1)).unwrap();
    assert!(replayed.get(&k0).is_none());
    assert_eq!(replayed.snapshots(), store.snapshots());
}

#[test]
fn an_idle_share_partition_is_cold_snapshotted_and_stops_holding_pruning_back() {
    const MIN: i64 = 60_000;
    let storage = MemStorage::default();
    let config = ShareStateConfig {
        cold_snapshot_interval_ms: 5 * MIN,
        ..one_partition(2)
    };
    let store = ShareStateStore::open(&storage, config).unwrap();
    let topic = storage.partition(SHARE_STATE_TOPIC, 0).unwrap();
    let (idle, busy) = (key(0), key(1));
    store.write(&idle, init(0), 0).unwrap(); // 0
    store.write(&busy, init(0), 0).unwrap(); // 1
    for o in 0..6 {
        store.write(&busy, acked(o), MIN).unwrap(); // busy's last snapshot at 7, time 1 min
    }
    store.prune();
    assert_eq!(
        topic.log_start_offset(),
        0,
        "the idle snapshot at 0 holds the bound"
    );
    assert!(store
        .snapshot_cold_partitions(5 * MIN - 1)
        .unwrap()
        .is_empty());

    let idle_before = store.get(&idle).unwrap();
    let cold = store.snapshot_cold_partitions(5 * MIN).unwrap();
    assert_eq!(cold.len(), 1, "only the idle one is 5 minutes old");
    assert_eq!(cold[0].end_offset, 9);
    let idle_after = store.get(&idle).unwrap();
    assert_eq!(idle_after.state, idle_before.state);
    assert_eq!(idle_after.snapshot_epoch, idle_before.snapshot_epoch + 1);
    assert_eq!(
        (idle_after.create_timestamp, idle_after.write_timestamp),
        (0, 5 * MIN)
    );
    store.prune();
    assert_eq!(
        topic.log_start_offset(),
        7,
        "busy's snapshot at 7 holds it now"
    );

    // The busy one's regular snapshot turns 5 minutes old: it gets a cold snapshot too.
    let cold = store.snapshot_cold_partitions(6 * MIN).unwrap();
    assert_eq!(cold.len(), 1);
    assert_eq!(store.get(&busy).unwrap().write_timestamp, 6 * MIN);
    store.prune();
    assert_eq!(topic.log_start_offset(), 8);
    // Every latest snapshot is a cold one: nothing more, however long nobody writes.
    assert!(store.snapshot_cold_partitions(60 * MIN).unwrap().is_empty());

    let replayed = ShareStateStore::open(&storage, config).unwrap();
    assert_eq!(replayed.get(&idle), store.get(&idle));
    assert_eq!(replayed.get(&busy), store.get(&busy));
    assert_eq!(kinds(&topic), [(0, true), (0, true)]);
}

#[test]
fn cold_snapshots_are_decided_per_topic_partition() {
    // In separate topic partitions, a busy share partition's regular snapshot does not make
    // an already cold-snapshotted one due again (Kafka decides per share coordinator shard).
    const MIN: i64 = 60_000;
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, ShareStateConfig::default()).unwrap();
    let a = key(0);
    let b = (1..)
        .map(key)
        .find(|k| partition_for(k, DEFAULT_NUM_PARTITIONS) != partition_for(&a, 50))
        .unwrap();
    store.write(&a, init(0), 0).unwrap();
    assert_eq!(store.snapshot_cold_partitions(5 * MIN).unwrap().len(), 1);
    store.write(&b, init(0), 9 * MIN).unwrap();
    assert!(store.snapshot_cold_partitions(10 * MIN).unwrap().is_empty());
    assert_eq!(store.get(&a).unwrap().write_timestamp, 5 * MIN);
}

#[test]
fn the_memory_host_deletes_records_as_delete_records_does() {
    let storage = MemStorage::default();
    let store = ShareStateStore::open(&storage, one_partition(0)).unwrap();
    let k = key(0);
    store.write(&k, init(0), 0).unwrap();
    store.write(&k, acked(0), 0).unwrap(); // a snapshot: every write is one
    let topic = storage.partition(SHARE_STATE_TOPIC, 0).unwrap();
    assert_eq!(store.prune().len(), 1);
    assert_eq!(topic.log_start_offset(), 1);
    // Past the end, or below -1: refused, nothing moves. Never backwards.
    assert!(topic.delete_records_before(100).is_err());
    assert!(topic.delete_records_before(-2).is_err());
    assert_eq!(topic.delete_records_before(0).unwrap(), 1);
    assert!(topic.read(0, 1 << 20).is_err(), "below the log start");
    // -1: up to the end.
    assert_eq!(topic.delete_records_before(-1).unwrap(), 2);
    assert!(topic.batches().is_empty());
}
