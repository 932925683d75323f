//! Acknowledgement: a member reports what became of records it holds (ShareFetch and
//! ShareAcknowledge `AcknowledgementBatches`).
//!
//! Checked first as a whole, as Kafka's request handler does (INVALID_REQUEST), then applied
//! batch by batch to a staging copy; the first batch that fails (INVALID_RECORD_STATE, or
//! INVALID_REQUEST for a range past what is in flight) discards every change of the call, as
//! Kafka rolls back the partition's updates.

use std::collections::BTreeMap;

use super::error::ShareError;
use super::partition::SharePartition;
use super::record::{DeliveryState, InFlightRecord, Lock};

/// Kafka's message for a batch that starts before the records in flight (or when none are).
const NOT_IN_FLIGHT: &str =
    "Batch record not found. The request batch offsets are not found in the cache.";

/// Acknowledge types on the wire (`AcknowledgeTypes` entries).
pub const ACK_GAP: i8 = 0;
pub const ACK_ACCEPT: i8 = 1;
pub const ACK_RELEASE: i8 = 2;
pub const ACK_REJECT: i8 = 3;
/// KIP-1222 (ShareFetch/ShareAcknowledge v2): extend the lock, state unchanged.
pub const ACK_RENEW: i8 = 4;

/// One `AcknowledgementBatch`: either one type for the whole range or one per offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub types: Vec<i8>,
}

impl AckBatch {
    /// One type for every offset of `[first, last]`.
    pub fn range(first_offset: i64, last_offset: i64, ack_type: i8) -> AckBatch {
        AckBatch {
            first_offset,
            last_offset,
            types: vec![ack_type],
        }
    }

    fn type_at(&self, offset: i64) -> Option<i8> {
        if self.types.len() == 1 {
            return self.types.first().copied();
        }
        let index = usize::try_from(offset - self.first_offset).ok()?;
        self.types.get(index).copied()
    }
}

/// What the request and the group allow, and the clock for renewals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckContext {
    pub now_ms: i64,
    /// `share.record.lock.duration.ms`, for RENEW.
    pub lock_duration_ms: i64,
    /// The request version knows RENEW (ShareFetch/ShareAcknowledge v2+).
    pub renew_supported: bool,
    /// The request's `IsRenewAck`: RENEW is only accepted when announced.
    pub is_renew_ack: bool,
    /// The group's `share.renew.acknowledge.enable` (Kafka default true).
    pub renew_enabled: bool,
}

/// What an acknowledgement changed, by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acknowledged {
    pub accepted: u64,
    /// Back to AVAILABLE.
    pub released: u64,
    /// Released at the delivery limit, so ARCHIVED.
    pub archived_at_limit: u64,
    pub rejected: u64,
    pub gaps: u64,
    pub renewed: u64,
}

/// Kafka's request-level checks of one partition's batches (any failure: INVALID_REQUEST):
/// first <= last, batches in order (a batch may start at the previous one's last offset, as
/// Kafka allows), a non-empty list of types that is either one type or one per offset, known
/// types, and RENEW only when the request supports and announces it.
pub fn validate_acknowledgements(batches: &[AckBatch], ctx: &AckContext) -> Result<(), ShareError> {
    let max_type = if ctx.renew_supported {
        ACK_RENEW
    } else {
        ACK_REJECT
    };
    let mut previous_last = -1i64;
    for batch in batches {
        let invalid = |why: &str| {
            Err(ShareError::MalformedBatches(format!(
                "batch {}-{}: {why}",
                batch.first_offset, batch.last_offset
            )))
        };
        if batch.first_offset > batch.last_offset {
            return invalid("first offset after last offset");
        }
        if batch.first_offset < previous_last {
            return invalid("batches overlap or are out of order");
        }
        if batch.types.is_empty() {
            return invalid("no acknowledge types");
        }
        let span = batch.last_offset.abs_diff(batch.first_offset);
        if batch.types.len() > 1 && span != (batch.types.len() - 1) as u64 {
            return invalid("acknowledge types do not match the range");
        }
        if batch.types.iter().any(|t| *t < 0 || *t > max_type) {
            return invalid("unknown acknowledge type");
        }
        if batch.types.contains(&ACK_RENEW) && !ctx.is_renew_ack {
            return invalid("RENEW in a request not marked IsRenewAck");
        }
        previous_last = batch.last_offset;
    }
    Ok(())
}

impl SharePartition {
    /// Applies `batches` for `member_id`, all or nothing. Every acknowledged offset must be
    /// ACQUIRED by that member (else INVALID_RECORD_STATE; a member the partition never saw
    /// holds nothing, so it gets the same). Offsets below the start offset are skipped (the
    /// log no longer has them), as are offsets the log never held (compaction holes).
    pub fn acknowledge(
        &mut self,
        member_id: &str,
        batches: &[AckBatch],
        ctx: &AckContext,
    ) -> Result<Acknowledged, ShareError> {
        validate_acknowledgements(batches, ctx)?;
        let limit = self.limits.delivery_count_limit;
        let mut staged: BTreeMap<i64, InFlightRecord> = BTreeMap::new();
        let mut outcome = Acknowledged::default();
        for batch in batches {
            if batch.last_offset < self.start_offset {
                continue;
            }
            self.check_range(batch)?;
            let from = batch.first_offset.max(self.start_offset);
            for (offset, current) in self.records.range(from..=batch.last_offset) {
                let mut record = staged.get(offset).unwrap_or(current).clone();
                if record.state != DeliveryState::Acquired {
                    return Err(ShareError::InvalidRecordState(
                        "The offset cannot be acknowledged. The offset is not acquired.".into(),
                    ));
                }
                if !record.held_by(member_id) {
                    return Err(ShareError::InvalidRecordState(
                        "Member is not the owner of offset".into(),
                    ));
                }
                match batch.type_at(*offset) {
                    Some(ACK_ACCEPT) => {
                        record.finish(DeliveryState::Acknowledged);
                        outcome.accepted += 1;
                    }
                    Some(ACK_RELEASE) => {
                        if record.give_back(limit) {
                            outcome.archived_at_limit += 1;
                        } else {
                            outcome.released += 1;
                        }
                    }
                    Some(ACK_REJECT) => {
                        record.finish(DeliveryState::Archived);
                        outcome.rejected += 1;
                    }
                    Some(ACK_GAP) => {
                        record.finish(DeliveryState::Archived);
                        outcome.gaps += 1;
                    }
                    Some(ACK_RENEW) => {
                        if !ctx.renew_enabled {
                            return Err(ShareError::InvalidRecordState(
                                "Renewing acquisition locks is not enabled for the group.".into(),
                            ));
                        }
                        record.lock = Some(Lock {
                            member_id: member_id.into(),
                            deadline_ms: ctx.now_ms.saturating_add(ctx.lock_duration_ms),
                        });
                        outcome.renewed += 1;
                    }
                    other => {
                        return Err(ShareError::InvalidRequest(format!(
                            "Invalid acknowledge type: {other:?} at offset {offset}"
                        )));
                    }
                }
                staged.insert(*offset, record);
            }
        }
        self.records.extend(staged);
        self.advance_start();
        Ok(outcome)
    }

    /// Kafka's lookup of a batch among the in-flight records: it must start at or after the
    /// first tracked offset (unless the start offset moved into it) and must not reach past
    /// the last tracked offset.
    fn check_range(&self, batch: &AckBatch) -> Result<(), ShareError> {
        let (Some(first_tracked), Some(last_tracked)) =
            (self.records.keys().next().copied(), self.last_tracked())
        else {
            return Err(ShareError::InvalidRecordState(NOT_IN_FLIGHT.into()));
        };
        let start_moved_inside = batch.first_offset < self.start_offset;
        if batch.first_offset < first_tracked && !start_moved_inside {
            return Err(ShareError::InvalidRecordState(NOT_IN_FLIGHT.into()));
        }
        if batch.first_offset > last_tracked {
            return Err(ShareError::InvalidRequest(
                "Batch record not found. The first offset in request is past acquired records."
                    .into(),
            ));
        }
        if batch.last_offset > last_tracked {
            return Err(ShareError::InvalidRequest(
                "Batch record not found. The last offset in request is past acquired records."
                    .into(),
            ));
        }
        Ok(())
    }
}
