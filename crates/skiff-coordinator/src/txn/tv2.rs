//! The coordinator's requests at transaction version 2 (KIP-890 part 2): EndTxn v5, which
//! bumps the producer epoch at every commit and abort and answers with the producer's next
//! id and epoch, and the implicit adds of Produce v12+ and TxnOffsetCommit v5 (the partition
//! or the group's offsets partition joins the transaction without AddPartitionsToTxn or
//! AddOffsetsToTxn from the client). The state machine is `end_v2.rs`; this module only
//! runs it under the coordinator's mutex and writes what it yields, like `mod.rs` does for
//! version 0.
//!
//! Thread safety: as `mod.rs` (checks under the mutex, the transactional id marked
//! `pending` while its next state is written). Blocks: call on blocking threads.

use kafka_protocol::ResponseError;
use tracing::warn;

use super::end_v2::EndV2;
use super::state::TV_2;
use super::{HostRef, TxnCoordinator, TxnHost};
use crate::host::Storage;

impl<S: Storage> TxnCoordinator<S> {
    /// EndTxn v5: markers with the bumped epoch to every partition of the transaction, then
    /// the Complete* state; returns the producer id and epoch the producer continues with
    /// (a new id at epoch 0 when the epoch ran out).
    pub fn end_txn_v2<R>(
        &self,
        broker: &R,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(i64, i16), ResponseError>
    where
        R: HostRef,
        R::Host: TxnHost<Storage = S>,
    {
        let broker = broker.host();
        let now = self.now();
        let allocate = || {
            broker.allocate_producer_id().map_err(|e| {
                warn!(error = %e, "producer id allocation failed");
                ResponseError::CoordinatorNotAvailable
            })
        };
        let plan = {
            let mut txns = self.ready()?;
            let m = txns
                .get_mut(transactional_id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            let plan = m.plan_end_v2(producer_id, epoch, commit, now, allocate)?;
            if matches!(plan, EndV2::Prepare(_)) {
                m.pending = true;
                m.ending = true;
            }
            plan
        };
        match plan {
            EndV2::Retry(pid, epoch) => Ok((pid, epoch)),
            EndV2::Prepare(prepared) => self
                .prepare_and_complete(broker, prepared)
                .map(|done| (done.producer_id, done.producer_epoch)),
        }
    }

    /// The implicit add of Produce v12+ and TxnOffsetCommit v5: the partitions join the
    /// producer's transaction (starting one if none is ongoing), recorded as TV2, with the
    /// checks and errors of AddPartitionsToTxn.
    pub fn add_partitions_implicitly(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<(), ResponseError> {
        if transactional_id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.add_partitions_tv(transactional_id, producer_id, epoch, partitions, TV_2)
    }
}
