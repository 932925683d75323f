//! KIP-890 part 1: is a partition in a producer's ongoing transaction? Kafka's
//! `TransactionCoordinator.handleVerifyPartitionsInTransaction`, asked in process by the
//! produce handler (Kafka's leader asks with AddPartitionsToTxn `verify_only`, which Skiff
//! also serves from here).
//!
//! Answers, as Kafka's coordinator gives them: an unknown transactional id or another
//! producer id is INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED, a transaction
//! being ended (Prepare*, or a pending transition to it) CONCURRENT_TRANSACTIONS; otherwise
//! each partition is in the transaction or not (the caller's TRANSACTION_ABORTABLE).
//!
//! A yes is only a snapshot: the transaction may end right after. The produce path closes
//! that gap with the log's verification guard (taken before asking, voided by any marker).
//!
//! The checks themselves are `TxnMetadata::verify_partitions` (`state.rs`, unit-tested).
//!
//! Thread safety: one lookup under the coordinator's mutex; no I/O.

use kafka_protocol::ResponseError;

use super::TxnCoordinator;
use crate::host::Storage;

impl<S: Storage> TxnCoordinator<S> {
    /// For each of `partitions`, whether it is in the ongoing transaction of
    /// `transactional_id` at `producer_id`/`epoch`.
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<Vec<bool>, ResponseError> {
        if transactional_id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.ready()?
            .get(transactional_id)
            .ok_or(ResponseError::InvalidProducerIdMapping)?
            .verify_partitions(producer_id, epoch, partitions)
    }
}
