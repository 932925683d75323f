//! Offsets committed inside a transaction (TxnOffsetCommit): they are written to
//! `__consumer_offsets` as a transactional batch of the producer, held here as pending per
//! producer id, and become committed offsets only when the transaction coordinator writes the
//! COMMIT marker (dropped on ABORT). Replay at start does the same with the markers it meets;
//! offsets of transactions still undecided at the end of the replay stay pending until the
//! transaction coordinator completes them.
//!
//! Thread safety: the pending map is its own std `Mutex`, never held with the groups lock
//! except in `complete_txn_offsets` (pending first, then groups).

use std::collections::HashMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::commit_fence::CommitFence;
use super::records::{self, Key};
use super::store::Replayed;
use super::{Committed, Coordinator, Group, Shared};
use crate::host::Storage;

/// One raw `__consumer_offsets` record: key bytes and value bytes (None: tombstone).
pub type RawRecord = (Vec<u8>, Option<Vec<u8>>);

/// Pending transactional records by producer id.
pub type PendingTxnOffsets = HashMap<i64, Vec<RawRecord>>;

impl<S: Storage> Coordinator<S> {
    /// Kafka's TxnOffsetCommit member checks: a member id, when given, must belong to the
    /// group at this generation (or, in a consumer or streams group, at an older member epoch
    /// at which it held every one of `partitions`, KIP-1251); an unknown group is accepted
    /// only without a generation.
    pub fn check_txn_commit<'a>(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        partitions: impl IntoIterator<Item = (&'a str, i32)>,
    ) -> Result<(), ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let groups = self.ready()?;
        // Kafka: a share group refuses offset commits as "not a consumer group".
        if self.shared.share().groups.get(group_id).is_some() {
            return Err(ResponseError::GroupIdNotFound);
        }
        let fence = match groups.get(group_id) {
            None if generation < 0 => CommitFence::Open,
            None => return Err(ResponseError::IllegalGeneration),
            Some(_) if member_id.is_empty() && generation < 0 => CommitFence::Open,
            Some(g) => g.validate_commit(member_id, instance_id, generation, None)?,
        };
        fence.check_all(partitions)
    }

    /// The `__consumer_offsets` partition holding `group_id`'s records.
    pub fn offsets_partition(&self, group_id: &str) -> Option<Arc<S::Partition>> {
        self.shared
            .offsets
            .partition(&*self.shared.storage, self.partition_for(group_id))
            .ok()
    }

    /// Remembers records a TxnOffsetCommit wrote (after they are durable).
    pub fn add_pending_txn_offsets(&self, producer_id: i64, recs: Vec<RawRecord>) {
        self.shared
            .pending_txn()
            .entry(producer_id)
            .or_default()
            .extend(recs);
    }

    /// The transaction of `producer_id` ended (its marker is durable in every offsets
    /// partition): on commit its offsets become the groups' committed offsets.
    pub fn complete_txn_offsets(&self, producer_id: i64, commit: bool) {
        let Some(recs) = self.shared.pending_txn().remove(&producer_id) else {
            return;
        };
        if !commit {
            return;
        }
        let now = self.now();
        let mut groups = self.shared.lock();
        for (key, value) in recs {
            let Ok(Key::Offset {
                group,
                topic,
                partition,
            }) = records::decode_key(&key)
            else {
                continue;
            };
            let Some(Ok(v)) = value.as_deref().map(records::decode_offset_value) else {
                continue;
            };
            groups
                .entry(group.clone())
                .or_insert_with(|| Group::new(&group, now))
                .commit(
                    &topic,
                    partition,
                    Committed {
                        offset: v.offset,
                        leader_epoch: v.leader_epoch,
                        metadata: v.metadata,
                        commit_timestamp: v.commit_timestamp,
                        expire_timestamp: Some(v.expire_timestamp).filter(|t| *t >= 0),
                    },
                );
        }
    }

    /// Whether an undecided transaction holds an offset for this group partition
    /// (OffsetFetch `require_stable`).
    pub fn has_pending_txn_offset(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.shared.pending_txn().values().flatten().any(|(key, _)| {
            matches!(records::decode_key(key), Ok(Key::Offset { group: g, topic: t, partition: p })
                if g == group && t == topic && p == partition)
        })
    }

    /// Producer ids with offsets waiting for their transaction's end.
    pub fn pending_txn_producers(&self) -> Vec<i64> {
        self.shared.pending_txn().keys().copied().collect()
    }
}

impl<S: Storage> Shared<S> {
    pub(crate) fn pending_txn(&self) -> std::sync::MutexGuard<'_, PendingTxnOffsets> {
        self.txn_offsets.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Replay of a transactional batch's records: held until the producer's marker.
pub(crate) fn hold(
    pending: &mut PendingTxnOffsets,
    producer_id: i64,
    key: &[u8],
    value: Option<&[u8]>,
) {
    pending
        .entry(producer_id)
        .or_default()
        .push((key.to_vec(), value.map(<[u8]>::to_vec)));
}

/// Replay of a marker: a COMMIT applies the producer's held records, an ABORT drops them.
pub(crate) fn resolve(
    pending: &mut PendingTxnOffsets,
    groups: &mut std::collections::BTreeMap<String, Replayed>,
    producer_id: i64,
    commit: bool,
    apply: impl Fn(&mut std::collections::BTreeMap<String, Replayed>, Option<&[u8]>, Option<&[u8]>),
) -> u64 {
    let Some(recs) = pending.remove(&producer_id) else {
        return 0;
    };
    if !commit {
        return 0;
    }
    for (k, v) in &recs {
        apply(groups, Some(k), v.as_deref());
    }
    recs.len() as u64
}
