//! The persistable shape of a share partition: what Kafka writes to `__share_group_state` as
//! a ShareSnapshot (and, as deltas, ShareUpdate), and rebuilding a partition from it.
//!
//! Only the in-memory shape: the record encoding and the share coordinator come later.

use super::error::ShareError;
use super::partition::{ShareLimits, SharePartition};
use super::record::{DeliveryState, InFlightRecord};

/// A restored span (start offset to last batch) larger than this is refused: it would be
/// tracked offset by offset, and Kafka's in-flight limit is at most 10 000 offsets
/// (`group.share.max.partition.max.record.locks` ranges up to 10 000), so a real state is far
/// below it.
pub const MAX_RESTORED_SPAN: i64 = 1 << 20;

/// One `StateBatch`: consecutive offsets with the same state and delivery count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_state: DeliveryState,
    pub delivery_count: u16,
}

/// ShareSnapshot's content (leader epoch, snapshot epoch and timestamps belong to the share
/// coordinator and are added when it is built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSnapshot {
    pub start_offset: i64,
    pub state_epoch: i32,
    /// ACKNOWLEDGED and ARCHIVED offsets at or after the start offset (Kafka 4.4's tagged
    /// `DeliveryCompleteCount`, used for the lag).
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

impl SharePartition {
    /// The state as it stands, ACQUIRED records included (with the count of the delivery in
    /// progress); [`SharePartition::restore`] turns them back to AVAILABLE.
    pub fn snapshot(&self) -> ShareSnapshot {
        let mut batches: Vec<StateBatch> = Vec::new();
        let mut complete = 0i32;
        for (offset, record) in self.records.range(self.start_offset..) {
            if record.state.is_terminal() {
                complete = complete.saturating_add(1);
            }
            if let Some(last) = batches.last_mut() {
                if last.last_offset + 1 == *offset
                    && last.delivery_state == record.state
                    && last.delivery_count == record.delivery_count
                {
                    last.last_offset = *offset;
                    continue;
                }
            }
            batches.push(StateBatch {
                first_offset: *offset,
                last_offset: *offset,
                delivery_state: record.state,
                delivery_count: record.delivery_count,
            });
        }
        ShareSnapshot {
            start_offset: self.start_offset,
            state_epoch: self.state_epoch,
            delivery_complete_count: complete,
            state_batches: batches,
        }
    }

    /// Rebuilds a partition from persisted state. ACQUIRED records come back as after a lock
    /// expiry (no lock survives a restart): AVAILABLE with their delivery count, or ARCHIVED
    /// when that count has reached the delivery limit. Offsets between the start offset and
    /// the last batch that no batch covers were never delivered and will be acquired as new.
    /// Refuses (as Kafka fails the partition) batches before the start offset, reversed or
    /// overlapping batches, and spans over [`MAX_RESTORED_SPAN`].
    pub fn restore(
        snapshot: &ShareSnapshot,
        limits: ShareLimits,
    ) -> Result<SharePartition, ShareError> {
        let mut partition =
            SharePartition::new(snapshot.start_offset, snapshot.state_epoch, limits);
        let mut next = snapshot.start_offset;
        for batch in &snapshot.state_batches {
            let corrupt = |why: &str| {
                Err(ShareError::CorruptState(format!(
                    "state batch {}-{}: {why}",
                    batch.first_offset, batch.last_offset
                )))
            };
            if batch.first_offset < snapshot.start_offset {
                return corrupt("before the start offset");
            }
            if batch.last_offset < batch.first_offset {
                return corrupt("last offset before first offset");
            }
            if batch.first_offset < next {
                return corrupt("overlaps the previous batch");
            }
            if batch.last_offset - snapshot.start_offset >= MAX_RESTORED_SPAN {
                return corrupt("too far past the start offset");
            }
            partition.gaps.add(next, batch.first_offset - 1);
            let state = match batch.delivery_state {
                // As if the lock had expired: a record already delivered `limit` times is
                // not handed out again.
                DeliveryState::Acquired if batch.delivery_count >= limits.delivery_count_limit => {
                    DeliveryState::Archived
                }
                DeliveryState::Acquired => DeliveryState::Available,
                other => other,
            };
            for offset in batch.first_offset..=batch.last_offset {
                partition.records.insert(
                    offset,
                    InFlightRecord {
                        state,
                        delivery_count: batch.delivery_count,
                        lock: None,
                        batch: batch.first_offset,
                    },
                );
            }
            next = batch.last_offset + 1;
        }
        partition.end_offset = next;
        partition.advance_start();
        Ok(partition)
    }
}
