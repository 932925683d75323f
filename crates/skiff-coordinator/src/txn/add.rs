//! AddPartitionsToTxn and AddOffsetsToTxn (and the implicit adds of transaction version 2,
//! through `tv2.rs`): a partition joins the producer's transaction, starting one when none
//! is ongoing; and the producer check of TxnOffsetCommit v0-4. The checks are
//! `TxnMetadata::plan_add_tv` (`state.rs`).
//!
//! Thread safety: checks under the coordinator's mutex; the transactional id is marked
//! `pending` while its new state is written. Blocks (the append and its fsync).

use kafka_protocol::ResponseError;

use super::{state, TxnCoordinator};
use crate::host::Storage;

impl<S: Storage> TxnCoordinator<S> {
    /// AddPartitionsToTxn / AddOffsetsToTxn for one transactional id.
    pub fn add_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<(), ResponseError> {
        self.add_partitions_tv(
            transactional_id,
            producer_id,
            epoch,
            partitions,
            state::TV_0,
        )
    }

    /// [`Self::add_partitions`], recording the transaction version `tv` of the request.
    pub(super) fn add_partitions_tv(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
        tv: i16,
    ) -> Result<(), ResponseError> {
        let now = self.now();
        let next = {
            let mut txns = self.ready()?;
            let m = txns
                .get_mut(transactional_id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            let next = m.plan_add_tv(producer_id, epoch, partitions, now, tv)?;
            if next.is_some() {
                m.pending = true;
            }
            next
        };
        match next {
            None => Ok(()),
            Some(next) => self.write_and_install(next).map(|_| ()),
        }
    }

    /// Checks that `producer_id`/`epoch` is the current producer of `transactional_id`
    /// (TxnOffsetCommit).
    pub fn check_producer(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<(), ResponseError> {
        let txns = self.ready()?;
        let m = txns
            .get(transactional_id)
            .ok_or(ResponseError::InvalidProducerIdMapping)?;
        if m.producer_id != producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if m.producer_epoch != epoch {
            return Err(ResponseError::ProducerFenced);
        }
        Ok(())
    }
}
