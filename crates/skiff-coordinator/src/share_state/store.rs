//! `__share_group_state`: creating it, replaying it at start, and appending share-state
//! records to it, through the same [`Storage`] / [`InternalPartition`] the group coordinator
//! writes `__consumer_offsets` with.
//!
//! Each write is one uncompressed batch of one record, appended to the partition Kafka would
//! choose for the share partition ([`partition_for`]) with the broker's own-write append
//! (`Log::append_internal`), then applied to the in-memory state. The caller makes it durable
//! with [`Storage::wait_durable`] on the returned [`Appended`] before answering, as the group
//! coordinator does.
//!
//! Writes are serialised by one lock held from deciding the record to applying it, so the
//! records of a share partition are in the log in the order they were decided: replay then
//! rebuilds exactly the state the writer held.
//!
//! Upkeep, which the broker runs periodically: [`ShareStateStore::snapshot_cold_partitions`]
//! (`cold.rs`) writes snapshots that let the prune bound move, and
//! [`ShareStateStore::prune`] deletes the records below it (`prune.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use skiff_records::{validate_batch, BatchBuilder, Batches, Compression};
use tracing::{info, warn};

use super::cold::{cold_partitions, DEFAULT_COLD_SNAPSHOT_INTERVAL_MS};
use super::error::ShareStateError;
use super::placement::partition_for;
use super::prune::RedundantOffsets;
use super::records::{self, Key, SharePartitionKey};
use super::state::{Record, ShareStates, ShareWrite, StoredShare, DEFAULT_UPDATES_PER_SNAPSHOT};
use super::wire::CodecError;
use crate::host::{InternalPartition, Storage, LEADER_EPOCH};
use crate::share::ShareSnapshot;

pub const SHARE_STATE_TOPIC: &str = "__share_group_state";
/// Kafka's `share.coordinator.state.topic.num.partitions` default.
pub const DEFAULT_NUM_PARTITIONS: i32 = 50;
/// Kafka's `share.coordinator.state.topic.segment.bytes` default (100 MiB): small segments so
/// pruning can drop superseded snapshots and updates soon.
pub const DEFAULT_SEGMENT_BYTES: i32 = 100 * 1024 * 1024;
/// Read size while replaying a partition (Kafka's `share.coordinator.load.buffer.size`).
const REPLAY_CHUNK: usize = 5 << 20;
/// Cap on the decompressed size of one replayed batch (a corrupt length cannot exhaust memory).
const MAX_DECOMPRESSED: usize = 64 << 20;

/// The share coordinator's settings that shape the topic and its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareStateConfig {
    /// `share.coordinator.state.topic.num.partitions`; used only when creating the topic.
    pub num_partitions: i32,
    /// `share.coordinator.state.topic.segment.bytes`; used only when creating the topic.
    pub segment_bytes: i32,
    /// `share.coordinator.snapshot.update.records.per.snapshot` (Kafka allows 0 to 500; 0
    /// makes every write a snapshot).
    pub updates_per_snapshot: u32,
    /// `share.coordinator.cold.partition.snapshot.interval.ms`: how old a share partition's
    /// latest snapshot must be for a cold snapshot (`cold.rs`).
    pub cold_snapshot_interval_ms: i64,
}

impl Default for ShareStateConfig {
    fn default() -> Self {
        ShareStateConfig {
            num_partitions: DEFAULT_NUM_PARTITIONS,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            updates_per_snapshot: DEFAULT_UPDATES_PER_SNAPSHOT,
            cold_snapshot_interval_ms: DEFAULT_COLD_SNAPSHOT_INTERVAL_MS,
        }
    }
}

/// Where a write went: wait for `end_offset` on `partition` to be durable before answering.
pub struct Appended<P> {
    pub partition: Arc<P>,
    pub end_offset: i64,
}

/// Durable share-partition state over `__share_group_state`.
pub struct ShareStateStore<S: Storage> {
    partitions: Vec<Arc<S::Partition>>,
    config: ShareStateConfig,
    inner: Mutex<Inner>,
}

/// What the store's lock guards: the states and, per topic partition, what can be pruned.
#[derive(Default)]
struct Inner {
    states: ShareStates,
    redundant: Vec<RedundantOffsets>,
}

impl Inner {
    /// Applies a record that is at `offset` of topic partition `index`.
    fn apply(&mut self, index: usize, offset: i64, record: Record, updates_per_snapshot: u32) {
        if let (Record::Snapshot(key, value), Some(r)) = (&record, self.redundant.get_mut(index)) {
            r.snapshot_at(key, offset, value.is_none());
        }
        self.states.apply(record, updates_per_snapshot);
    }
}

impl<S: Storage> ShareStateStore<S> {
    /// Finds or creates the topic and replays it. Fails when the topic cannot be created or
    /// holds bytes that are not share state (see [`ShareStateError::Corrupt`]).
    pub fn open(storage: &S, config: ShareStateConfig) -> Result<Self, ShareStateError> {
        let partitions = open_topic(storage, config)?;
        let mut inner = Inner::default();
        inner
            .redundant
            .resize_with(partitions.len(), RedundantOffsets::default);
        let mut count = 0u64;
        for (i, partition) in partitions.iter().enumerate() {
            count += replay(
                partition.as_ref(),
                i,
                &mut inner,
                config.updates_per_snapshot,
            )?;
        }
        info!(
            records = count,
            share_partitions = inner.states.len(),
            "share state loaded from {SHARE_STATE_TOPIC}"
        );
        Ok(ShareStateStore {
            partitions,
            config,
            inner: Mutex::new(inner),
        })
    }

    /// Persists `write` for `key`: a ShareSnapshot or a ShareUpdate record (see `state.rs`).
    pub fn write(
        &self,
        key: &SharePartitionKey,
        write: ShareWrite,
        now_ms: i64,
    ) -> Result<Appended<S::Partition>, ShareStateError> {
        let mut inner = self.lock();
        let record = inner.states.plan(
            key,
            write,
            self.config.updates_per_snapshot,
            LEADER_EPOCH,
            now_ms,
        )?;
        self.append_and_apply(&mut inner, record, now_ms)
    }

    /// Deletes `key`'s state with a tombstone; pruning later drops its records.
    pub fn delete(
        &self,
        key: &SharePartitionKey,
        now_ms: i64,
    ) -> Result<Appended<S::Partition>, ShareStateError> {
        let mut inner = self.lock();
        self.append_and_apply(&mut inner, ShareStates::tombstone(key), now_ms)
    }

    /// The stored state of one share partition.
    pub fn get(&self, key: &SharePartitionKey) -> Option<StoredShare> {
        self.lock().states.get(key).cloned()
    }

    /// Every share partition's state, as [`crate::share::SharePartition::restore`] takes it.
    pub fn snapshots(&self) -> BTreeMap<SharePartitionKey, ShareSnapshot> {
        let inner = self.lock();
        inner
            .states
            .iter()
            .map(|(k, s)| (k.clone(), s.state.clone()))
            .collect()
    }

    /// Updates applied to `key` since its count was last reset.
    pub fn updates_since_snapshot(&self, key: &SharePartitionKey) -> Option<u32> {
        self.lock().states.updates_since_snapshot(key)
    }

    /// Records of topic partition `index` below the returned offset are no longer needed
    /// (see `prune.rs`); [`ShareStateStore::prune`] deletes them.
    pub fn redundant_below(&self, index: i32) -> Option<i64> {
        let inner = self.lock();
        let r = inner.redundant.get(usize::try_from(index).ok()?)?;
        r.redundant_below()
    }

    /// Writes a cold snapshot (`cold.rs`) of every share partition that is due one at
    /// `now_ms`, deciding per topic partition as Kafka's shards do. Returns where they went;
    /// nobody waits for them (a lost one is written again next time), but pruning makes a
    /// partition durable before it deletes anything. Stops at the first failed append.
    pub fn snapshot_cold_partitions(
        &self,
        now_ms: i64,
    ) -> Result<Vec<Appended<S::Partition>>, ShareStateError> {
        let mut inner = self.lock();
        let count = i32::try_from(self.partitions.len()).unwrap_or(i32::MAX);
        let mut by_partition: BTreeMap<i32, Vec<_>> = BTreeMap::new();
        for (key, stored) in inner.states.iter() {
            by_partition
                .entry(partition_for(key, count))
                .or_default()
                .push((key, stored));
        }
        let due: Vec<SharePartitionKey> = by_partition
            .values()
            .flat_map(|shares| {
                cold_partitions(shares, now_ms, self.config.cold_snapshot_interval_ms)
            })
            .cloned()
            .collect();
        let mut appended = Vec::with_capacity(due.len());
        for key in &due {
            if let Some(record) = inner.states.cold_snapshot(key, now_ms) {
                appended.push(self.append_and_apply(&mut inner, record, now_ms)?);
            }
        }
        Ok(appended)
    }

    /// Deletes the records below each topic partition's redundant bound (Kafka's share
    /// coordinator prune job): flushes the partition first, so the snapshot at the bound is
    /// on disk before anything below it goes, then moves its log start there with the log's
    /// DeleteRecords. Partitions already pruned that far are left alone; a failure in one does
    /// not stop the others. Returns each partition touched with its new log start or the
    /// error. Blocking (fsync); the store's lock is not held while deleting, since the bound
    /// never goes down.
    ///
    /// Replay reads from the log start, so the caller must not run this while another store
    /// over the same topic is being opened.
    pub fn prune(&self) -> Vec<(i32, Result<i64, ShareStateError>)> {
        let mut outcomes = Vec::new();
        for (slot, partition) in self.partitions.iter().enumerate() {
            let bound = {
                let inner = self.lock();
                inner
                    .redundant
                    .get(slot)
                    .and_then(RedundantOffsets::redundant_below)
            };
            let Some(bound) = bound.filter(|b| *b > partition.log_start_offset()) else {
                continue;
            };
            let pruned = partition
                .flush()
                .and_then(|()| partition.delete_records_before(bound))
                .map_err(|e| ShareStateError::Storage(e.to_string()));
            outcomes.push((partition.index(), pruned));
        }
        outcomes
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves the map as it was before the
        // record (apply runs last): still consistent with the log.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn append_and_apply(
        &self,
        inner: &mut Inner,
        record: Record,
        now_ms: i64,
    ) -> Result<Appended<S::Partition>, ShareStateError> {
        let count = i32::try_from(self.partitions.len()).unwrap_or(i32::MAX);
        let index = partition_for(record.partition_key(), count);
        let (slot, partition) = usize::try_from(index)
            .ok()
            .and_then(|i| Some((i, self.partitions.get(i)?)))
            .ok_or_else(|| ShareStateError::Storage(format!("no partition {index}")))?;
        let batch = encode_batch(&record, now_ms)?;
        let end_offset = partition
            .append(&batch, LEADER_EPOCH, now_ms)
            .map_err(|e| ShareStateError::Storage(e.to_string()))?;
        partition.wake_readers();
        // One record per batch: it is at the offset before the new end.
        inner.apply(
            slot,
            end_offset - 1,
            record,
            self.config.updates_per_snapshot,
        );
        Ok(Appended {
            partition: partition.clone(),
            end_offset,
        })
    }
}

/// Finds or creates the topic; an existing topic keeps its partition count (changing it would
/// move share partitions to other partitions of the topic, away from their records).
fn open_topic<S: Storage>(
    storage: &S,
    config: ShareStateConfig,
) -> Result<Vec<Arc<S::Partition>>, ShareStateError> {
    if let Some(partitions) = storage.topic_partitions(SHARE_STATE_TOPIC) {
        let existing = i32::try_from(partitions.len()).unwrap_or(i32::MAX);
        if existing != config.num_partitions {
            warn!(
                existing,
                configured = config.num_partitions,
                "{SHARE_STATE_TOPIC} keeps its existing partition count"
            );
        }
        if partitions.is_empty() {
            return Err(ShareStateError::Storage(
                "the topic has no partitions".into(),
            ));
        }
        return Ok(partitions);
    }
    let mut configs = BTreeMap::new();
    for (name, value) in topic_configs(config) {
        configs.insert(name.to_string(), value);
    }
    storage
        .create_topic(SHARE_STATE_TOPIC, config.num_partitions.max(1), configs)
        .map_err(|e| ShareStateError::Storage(e.to_string()))
}

/// The configs Kafka 4.4 creates the topic with (`shareGroupStateTopicConfigs`):
/// `cleanup.policy=delete` with `retention.ms=-1`, not compaction. A ShareUpdate has another
/// key than the ShareSnapshot it builds on, so compaction would keep only the latest update of
/// a share partition and lose the ones between it and the snapshot; Kafka instead deletes the
/// records below the oldest latest-snapshot of a partition ([`ShareStateStore::prune`]).
/// `compression.type=producer` keeps the uncompressed batches as written.
pub fn topic_configs(config: ShareStateConfig) -> [(&'static str, String); 4] {
    [
        ("cleanup.policy", "delete".to_string()),
        ("retention.ms", "-1".to_string()),
        ("segment.bytes", config.segment_bytes.to_string()),
        ("compression.type", "producer".to_string()),
    ]
}

/// One record as one uncompressed batch (Kafka's default
/// `share.coordinator.state.topic.compression.codec` is none).
pub fn encode_batch(record: &Record, now_ms: i64) -> Result<Vec<u8>, ShareStateError> {
    let key = records::encode_key(&record.key());
    let value = match record {
        Record::Snapshot(_, None) => None,
        Record::Snapshot(_, Some(v)) => Some(records::encode_snapshot_value(v)),
        Record::Update(_, v) => Some(records::encode_update_value(v)),
    };
    let mut builder = BatchBuilder::new(0, Compression::None);
    builder.push(now_ms, Some(&key), value.as_deref(), &[]);
    builder
        .build()
        .map_err(|e| ShareStateError::Storage(e.to_string()))
}

/// Replays one partition into `states`; returns how many records were applied.
fn replay<P: InternalPartition>(
    partition: &P,
    slot: usize,
    inner: &mut Inner,
    updates_per_snapshot: u32,
) -> Result<u64, ShareStateError> {
    let index = partition.index();
    let mut count = 0u64;
    let mut offset = partition.log_start_offset();
    let end = partition.log_end_offset();
    while offset < end {
        let bytes = partition
            .read(offset, REPLAY_CHUNK)
            .map_err(|e| ShareStateError::corrupt(index, offset, e))?;
        let mut batches = Batches::new(&bytes);
        let mut next = offset;
        for batch in batches.by_ref() {
            let (header, whole) = batch.map_err(|e| ShareStateError::corrupt(index, next, e))?;
            validate_batch(whole).map_err(|e| ShareStateError::corrupt(index, next, e))?;
            next = header.next_offset();
            if header.is_control() {
                continue;
            }
            let recs = skiff_records::records(whole, MAX_DECOMPRESSED)
                .map_err(|e| ShareStateError::corrupt(index, header.base_offset, e))?;
            for r in recs {
                let at = header.base_offset + i64::from(r.offset_delta);
                if let Some(record) =
                    decode_record(r.key.as_deref(), r.value.as_deref()).map_err(|e| {
                        ShareStateError::corrupt(index, at, e.in_topic(SHARE_STATE_TOPIC))
                    })?
                {
                    inner.apply(slot, at, record, updates_per_snapshot);
                    count += 1;
                }
            }
        }
        // A read may stop inside a batch when it hits the size limit; bytes left over with no
        // whole batch before them are a torn batch, not a size limit.
        if next <= offset {
            let why = if bytes.is_empty() {
                "the log ends before its end offset".to_string()
            } else {
                format!(
                    "torn batch: {} bytes that are not a whole batch",
                    bytes.len() - batches.position()
                )
            };
            return Err(ShareStateError::corrupt(index, offset, why));
        }
        offset = next;
    }
    Ok(count)
}

/// The record a replayed key and value are, or `None` for a record type Kafka may add later.
fn decode_record(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Option<Record>, CodecError> {
    let key = key.ok_or(CodecError::Invalid("record without a key"))?;
    Ok(match records::decode_key(key)? {
        Key::Snapshot(k) => Some(Record::Snapshot(
            k,
            value.map(records::decode_snapshot_value).transpose()?,
        )),
        Key::Update(k) => match value {
            Some(v) => Some(Record::Update(k, records::decode_update_value(v)?)),
            // Kafka never writes one and its replay has no meaning for it: skipped.
            None => None,
        },
        Key::Other(kind) => {
            warn!(
                kind,
                "skipping a {SHARE_STATE_TOPIC} record of an unknown type"
            );
            None
        }
    })
}
