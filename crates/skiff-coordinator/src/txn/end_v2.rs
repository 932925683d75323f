//! EndTxn at transaction version 2 (KIP-890 part 2, EndTxn v5), sans I/O: every commit or
//! abort bumps the producer epoch, the markers carry the bumped epoch, and the answer gives
//! the producer its next id and epoch. Checked against Kafka 4.x's
//! `TransactionCoordinator.endTransaction` (the TV2 branch) and `TransactionMetadata`
//! (`prepareAbortOrCommit`, `prepareComplete`).
//!
//! Which request is a retry: the epoch one below the stored one is a retry of an EndTxn
//! whose bump already happened; a stored epoch 0 with the previous producer id and the
//! request at the last usable epoch is a retry of one that rotated the producer id. A retry
//! of the same outcome answers NONE with the current id and epoch; otherwise (Kafka's table):
//!
//! | state          | abort, retry | abort, current | commit, retry | commit, current |
//! |----------------|--------------|----------------|---------------|-----------------|
//! | Empty          | FENCED       | bump           | FENCED        | INVALID_TXN_STATE |
//! | CompleteAbort  | NONE         | bump           | INVALID_TXN_STATE | INVALID_TXN_STATE |
//! | CompleteCommit | INVALID_TXN_STATE | bump      | NONE          | INVALID_TXN_STATE |
//!
//! An abort with no partition in the transaction (Empty, Complete*) is allowed: it only
//! bumps the epoch (the Java producer aborts that way after an error).
//!
//! Thread-safety: plain data, behind the coordinator's mutex.

use kafka_protocol::ResponseError;

use super::state::{TxnMetadata, TxnState, MAX_EPOCH, NO_PRODUCER_ID, TV_2};

/// What a TV2 EndTxn must do.
#[derive(Debug, PartialEq, Eq)]
pub enum EndV2 {
    /// Persist this Prepare* state, write its markers, complete it, and answer with the
    /// completed state's producer id and epoch.
    Prepare(TxnMetadata),
    /// A retry of an EndTxn already done: answer NONE with this producer id and epoch.
    Retry(i64, i16),
}

impl TxnMetadata {
    /// EndTxn v5 for this transactional id. `new_id` allocates the producer id the
    /// transaction rotates to when its bump exhausts the epoch.
    pub fn plan_end_v2(
        &self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now: i64,
        new_id: impl FnOnce() -> Result<i64, ResponseError>,
    ) -> Result<EndV2, ResponseError> {
        let retry_on_overflow =
            self.prev_producer_id == producer_id && epoch == MAX_EPOCH && self.producer_epoch == 0;
        let retry_on_bump = i32::from(self.producer_epoch) == i32::from(epoch) + 1;
        let valid_epoch = match self.state {
            TxnState::Ongoing | TxnState::Empty | TxnState::Dead | TxnState::PrepareEpochFence => {
                epoch == self.producer_epoch
            }
            TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
            TxnState::CompleteCommit | TxnState::CompleteAbort => {
                retry_on_bump || retry_on_overflow || epoch == self.producer_epoch
            }
        };
        let retry = retry_on_bump || retry_on_overflow;
        if self.producer_id != producer_id && !retry_on_overflow {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if !valid_epoch {
            return Err(ResponseError::ProducerFenced);
        }
        if self.pending {
            return Err(ResponseError::ConcurrentTransactions);
        }
        let answer = EndV2::Retry(self.producer_id, self.producer_epoch);
        match (self.state, commit) {
            (TxnState::Ongoing, _) => self.prepare_v2(commit, false, now, new_id),
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) if retry => {
                Ok(answer)
            }
            (TxnState::CompleteCommit, false)
            | (TxnState::CompleteAbort, false)
            | (TxnState::Empty, false)
                if !retry =>
            {
                self.prepare_v2(false, true, now, new_id)
            }
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Err(ResponseError::ConcurrentTransactions)
            }
            _ => Err(ResponseError::InvalidTxnState),
        }
    }

    /// The Prepare* state with the bumped epoch (Kafka's `prepareAbortOrCommit` at TV2).
    fn prepare_v2(
        &self,
        commit: bool,
        no_partition_added: bool,
        now: i64,
        new_id: impl FnOnce() -> Result<i64, ResponseError>,
    ) -> Result<EndV2, ResponseError> {
        let mut next = self.successor();
        // The bump itself cannot overflow: clients never hold an epoch above MAX_EPOCH.
        next.producer_epoch = self
            .producer_epoch
            .checked_add(1)
            .ok_or(ResponseError::InvalidTxnState)?;
        next.next_producer_id = if self.producer_epoch >= MAX_EPOCH {
            new_id()?
        } else {
            NO_PRODUCER_ID
        };
        next.client_tv = TV_2;
        next.state = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        if no_partition_added {
            // Kafka: the start time of a transaction with nothing in it is the abort's time.
            next.start_ms = now;
            next.partitions.clear();
        }
        next.last_update_ms = now;
        Ok(EndV2::Prepare(next))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::txn::state::TV_0;

    fn p(t: &str, i: i32) -> (String, i32) {
        (t.to_string(), i)
    }

    fn no_id() -> Result<i64, ResponseError> {
        Err(ResponseError::UnknownServerError)
    }

    /// Producer 7 at epoch 3 with partition a-0 in an ongoing transaction (implicit add).
    fn ongoing() -> TxnMetadata {
        let mut m = TxnMetadata::new("tx", 7, 60_000, 1000);
        m.producer_epoch = 3;
        m.plan_add_tv(7, 3, &[p("a", 0)], 2000, TV_2)
            .unwrap()
            .unwrap()
    }

    fn prepared(plan: Result<EndV2, ResponseError>) -> TxnMetadata {
        match plan.unwrap() {
            EndV2::Prepare(m) => m,
            other => panic!("expected a prepare, got {other:?}"),
        }
    }

    #[test]
    fn commit_bumps_the_epoch_for_markers_and_answer() {
        let on = ongoing();
        assert_eq!(on.client_tv, TV_2, "the implicit add records TV2");
        let prep = prepared(on.plan_end_v2(7, 3, true, 3000, no_id));
        assert_eq!(
            (prep.state, prep.producer_id, prep.producer_epoch),
            (TxnState::PrepareCommit, 7, 4),
            "markers are written with the bumped epoch"
        );
        assert_eq!(prep.client_tv, TV_2);
        assert_eq!(prep.partitions.len(), 1);
        let done = prep.completed(3100);
        assert_eq!(
            (done.state, done.producer_id, done.producer_epoch),
            (TxnState::CompleteCommit, 7, 4)
        );
    }

    #[test]
    fn retries_after_the_bump_follow_kafkas_table() {
        let done = prepared(ongoing().plan_end_v2(7, 3, true, 3000, no_id)).completed(3100);
        // The commit retried with the epoch it was sent with: NONE, with the new epoch.
        assert_eq!(
            done.plan_end_v2(7, 3, true, 4000, no_id),
            Ok(EndV2::Retry(7, 4))
        );
        // An abort retried with the old epoch after a commit: INVALID_TXN_STATE.
        assert_eq!(
            done.plan_end_v2(7, 3, false, 4000, no_id),
            Err(ResponseError::InvalidTxnState)
        );
        // The same epoch again is the next EndTxn: commit has nothing to commit...
        assert_eq!(
            done.plan_end_v2(7, 4, true, 4000, no_id),
            Err(ResponseError::InvalidTxnState)
        );
        // ...while an abort of nothing bumps again.
        let empty_abort = prepared(done.plan_end_v2(7, 4, false, 4000, no_id));
        assert_eq!(
            (empty_abort.state, empty_abort.producer_epoch),
            (TxnState::PrepareAbort, 5)
        );
        assert!(empty_abort.partitions.is_empty());
        assert_eq!(empty_abort.start_ms, 4000);
        let aborted = empty_abort.completed(4100);
        assert_eq!(
            aborted.plan_end_v2(7, 4, false, 4200, no_id),
            Ok(EndV2::Retry(7, 5))
        );
        assert_eq!(
            aborted.plan_end_v2(7, 4, true, 4200, no_id),
            Err(ResponseError::InvalidTxnState)
        );
        // Two epochs behind is a zombie.
        assert_eq!(
            aborted.plan_end_v2(7, 3, false, 4200, no_id),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            aborted.plan_end_v2(8, 5, false, 4200, no_id),
            Err(ResponseError::InvalidProducerIdMapping)
        );
    }

    #[test]
    fn empty_state_takes_only_a_current_abort() {
        let mut m = TxnMetadata::new("tx", 7, 60_000, 1000);
        m.producer_epoch = 2;
        assert_eq!(
            m.plan_end_v2(7, 2, true, 5, no_id),
            Err(ResponseError::InvalidTxnState)
        );
        assert_eq!(
            m.plan_end_v2(7, 1, false, 5, no_id),
            Err(ResponseError::ProducerFenced),
            "a retry makes no sense in Empty"
        );
        let prep = prepared(m.plan_end_v2(7, 2, false, 5, no_id));
        assert_eq!(
            (prep.state, prep.producer_epoch),
            (TxnState::PrepareAbort, 3)
        );
    }

    #[test]
    fn a_prepared_transaction_answers_retries_with_concurrent_transactions() {
        let prep = prepared(ongoing().plan_end_v2(7, 3, true, 3000, no_id));
        assert_eq!(
            prep.plan_end_v2(7, 3, true, 3001, no_id),
            Err(ResponseError::ConcurrentTransactions)
        );
        assert_eq!(
            prep.plan_end_v2(7, 3, false, 3001, no_id),
            Err(ResponseError::InvalidTxnState)
        );
        assert_eq!(
            prep.plan_end_v2(7, 4, true, 3001, no_id),
            Err(ResponseError::ProducerFenced)
        );
        let mut busy = ongoing();
        busy.pending = true;
        assert_eq!(
            busy.plan_end_v2(7, 3, true, 3001, no_id),
            Err(ResponseError::ConcurrentTransactions)
        );
    }

    #[test]
    fn an_exhausted_epoch_rotates_the_producer_id() {
        let mut m = TxnMetadata::new("tx", 7, 60_000, 1000);
        m.producer_epoch = MAX_EPOCH;
        let on = m
            .plan_add_tv(7, MAX_EPOCH, &[p("a", 0)], 10, TV_2)
            .unwrap()
            .unwrap();
        let prep = prepared(on.plan_end_v2(7, MAX_EPOCH, true, 20, || Ok(99)));
        assert_eq!(
            (prep.producer_id, prep.producer_epoch, prep.next_producer_id),
            (7, i16::MAX, 99),
            "markers at the last epoch of the old id"
        );
        let done = prep.completed(30);
        assert_eq!(
            (done.producer_id, done.producer_epoch, done.prev_producer_id),
            (99, 0, 7)
        );
        assert_eq!(done.next_producer_id, NO_PRODUCER_ID);
        // The retried commit (old id, last epoch) is recognised and answered with the new id.
        assert_eq!(
            done.plan_end_v2(7, MAX_EPOCH, true, 40, no_id),
            Ok(EndV2::Retry(99, 0))
        );
        // Anything else under the old id is unknown.
        assert_eq!(
            done.plan_end_v2(7, MAX_EPOCH - 1, true, 40, no_id),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        // A failed allocation fails the EndTxn and changes nothing.
        assert_eq!(
            on.plan_end_v2(7, MAX_EPOCH, true, 20, no_id),
            Err(ResponseError::UnknownServerError)
        );
    }

    #[test]
    fn a_tv0_end_after_a_tv2_add_does_not_bump() {
        let prep = ongoing().plan_end(7, 3, true, 3000).unwrap().unwrap();
        assert_eq!((prep.producer_epoch, prep.client_tv), (3, TV_0));
        assert_eq!(prep.completed(3100).producer_epoch, 3);
    }

    #[test]
    fn a_timeout_abort_leaves_the_old_producer_one_epoch_behind() {
        // As Kafka 4.4 answers (tests/diff/test_transactions_v2.py): one bump, and the
        // timed-out producer's own abort is taken for a retry while its commit is refused.
        let on = ongoing();
        let t = on.plan_timeout(62_000, no_id).unwrap();
        assert_eq!(t.client_tv, TV_2);
        let aborted = t.completed(62_001);
        assert_eq!(
            (aborted.state, aborted.producer_epoch),
            (TxnState::CompleteAbort, 4)
        );
        assert_eq!(
            aborted.plan_end_v2(7, 3, false, 62_002, no_id),
            Ok(EndV2::Retry(7, 4))
        );
        assert_eq!(
            aborted.plan_end_v2(7, 3, true, 62_002, no_id),
            Err(ResponseError::InvalidTxnState)
        );
        assert_eq!(
            aborted.plan_end_v2(7, 2, false, 62_002, no_id),
            Err(ResponseError::ProducerFenced)
        );
        // At the last epoch the timeout rotates the producer id.
        let mut old = on.clone();
        old.producer_epoch = MAX_EPOCH - 1;
        let t = old.plan_timeout(62_000, || Ok(42)).unwrap();
        assert_eq!((t.producer_epoch, t.next_producer_id), (MAX_EPOCH, 42));
        let rotated = t.completed(62_001);
        assert_eq!((rotated.producer_id, rotated.producer_epoch), (42, 0));
    }
}
