//! The transaction state machine of one transactional id (Kafka's `TransactionMetadata` and
//! the checks of `TransactionCoordinator`), sans I/O: every request is checked against the
//! current metadata and yields the metadata to persist next; the caller writes it to
//! `__transaction_state`, writes markers, and installs it.
//!
//! States and transitions (one node, markers written synchronously):
//! `Empty`/`CompleteCommit`/`CompleteAbort` --AddPartitions--> `Ongoing`
//! `Ongoing` --EndTxn/timeout--> `PrepareCommit`/`PrepareAbort` --markers--> `Complete*`.
//! While a transition is being written (`pending`), other requests get
//! CONCURRENT_TRANSACTIONS, which clients retry.
//!
//! Thread-safety: plain data, kept behind the coordinator's mutex.

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;

/// Kafka's `TransactionState`, with the ids `__transaction_state` stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TxnState {
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            7 => TxnState::PrepareEpochFence,
            _ => return None,
        })
    }

    /// The name DescribeTransactions/ListTransactions report (Kafka's `stateName`).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn is_complete(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }
}

/// What the coordinator knows about one transactional id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// Partitions in the transaction, `(topic, partition)`.
    pub partitions: BTreeSet<(String, i32)>,
    /// When the transaction became `Ongoing` (-1 when none is).
    pub start_ms: i64,
    pub last_update_ms: i64,
    /// A transition is being written; not persisted.
    pub pending: bool,
    /// The pending transition ends the transaction (Prepare*, markers): KIP-890 verification
    /// must refuse it although the state still reads `Ongoing`. Not persisted.
    pub ending: bool,
    /// The producer id before the last transition (Kafka's `prevProducerId`, persisted): a
    /// retried TV2 EndTxn whose commit rotated the producer id is recognised by it.
    pub prev_producer_id: i64,
    /// The producer id a TV2 Prepare* state rotates to when it completes, because the epoch
    /// is exhausted (Kafka's `nextProducerId`, persisted); -1 when none.
    pub next_producer_id: i64,
    /// The transaction version of the request behind the last transition ([`TV_0`] or
    /// [`TV_2`], Kafka's `clientTransactionVersion`, persisted): TV2 Prepare* states carry
    /// the bumped epoch and may rotate the producer id when they complete.
    pub client_tv: i16,
}

/// Transaction version 0 (KIP-98 as before KIP-890 part 2): no epoch bump at EndTxn.
pub const TV_0: i16 = 0;
/// Transaction version 2 (KIP-890 part 2): an epoch bump at every commit and abort, and
/// partitions added implicitly by Produce v12+ and TxnOffsetCommit v5.
pub const TV_2: i16 = 2;

/// Kafka's `Short.MaxValue - 1` guard: at this epoch a new producer id is needed.
pub const MAX_EPOCH: i16 = i16::MAX - 1;
pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// What InitProducerId must do for an existing transactional id.
#[derive(Debug, PartialEq, Eq)]
pub enum InitPlan {
    /// Persist this metadata (state Empty, bumped epoch) and answer with it.
    Bump(TxnMetadata),
    /// Abort the ongoing transaction first, fencing its producer with this metadata (bumped
    /// epoch, state PrepareAbort); then bump again.
    AbortFirst(TxnMetadata),
    /// A retry whose bump already happened: answer with the current id and epoch.
    Current(i64, i16),
}

impl TxnMetadata {
    pub fn new(transactional_id: &str, producer_id: i64, timeout_ms: i32, now: i64) -> Self {
        TxnMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id,
            producer_epoch: 0,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            pending: false,
            ending: false,
            prev_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            client_tv: TV_0,
        }
    }

    /// A copy to turn into the next state: as Kafka's transitions do, it remembers the
    /// producer id it came from.
    pub(crate) fn successor(&self) -> TxnMetadata {
        let mut next = self.clone();
        next.prev_producer_id = self.producer_id;
        next
    }

    fn busy(&self) -> Result<(), ResponseError> {
        if self.pending || matches!(self.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return Err(ResponseError::ConcurrentTransactions);
        }
        Ok(())
    }

    /// The producer of a request is the current one (Kafka's id and epoch checks).
    fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), ResponseError> {
        if producer_id != self.producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if epoch != self.producer_epoch {
            return Err(ResponseError::ProducerFenced);
        }
        Ok(())
    }

    /// InitProducerId for this (existing) id. `new_id` gives a fresh producer id when the
    /// epoch is exhausted. `current` is the KIP-360 (v3+) id and epoch the producer sends.
    pub fn plan_init(
        &self,
        timeout_ms: i32,
        current: Option<(i64, i16)>,
        now: i64,
        new_id: impl FnOnce() -> Result<i64, ResponseError>,
    ) -> Result<InitPlan, ResponseError> {
        self.busy()?;
        if let Some((pid, epoch)) = current {
            if pid != self.producer_id || epoch > self.producer_epoch {
                return Err(ResponseError::ProducerFenced);
            }
            if epoch < self.producer_epoch && self.state.is_complete() && !self.pending {
                // The producer never saw the answer to the bump it asked for.
                if epoch + 1 == self.producer_epoch {
                    return Ok(InitPlan::Current(self.producer_id, self.producer_epoch));
                }
                return Err(ResponseError::ProducerFenced);
            }
        }
        let mut next = self.successor();
        next.next_producer_id = NO_PRODUCER_ID;
        next.timeout_ms = timeout_ms;
        next.last_update_ms = now;
        if self.state == TxnState::Ongoing {
            next.bump_epoch(new_id)?;
            next.state = TxnState::PrepareAbort;
            return Ok(InitPlan::AbortFirst(next));
        }
        next.bump_epoch(new_id)?;
        next.state = TxnState::Empty;
        next.partitions.clear();
        next.start_ms = -1;
        Ok(InitPlan::Bump(next))
    }

    /// Next epoch, or a new producer id at epoch 0 when the epoch is exhausted.
    pub fn bump_epoch(
        &mut self,
        new_id: impl FnOnce() -> Result<i64, ResponseError>,
    ) -> Result<(), ResponseError> {
        if self.producer_epoch >= MAX_EPOCH {
            self.producer_id = new_id()?;
            self.producer_epoch = 0;
        } else {
            self.producer_epoch += 1;
        }
        Ok(())
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: `None` when every partition is already in the
    /// ongoing transaction (nothing to persist).
    pub fn plan_add(
        &self,
        producer_id: i64,
        epoch: i16,
        add: &[(String, i32)],
        now: i64,
    ) -> Result<Option<TxnMetadata>, ResponseError> {
        self.plan_add_tv(producer_id, epoch, add, now, TV_0)
    }

    /// [`Self::plan_add`] recording the transaction version of the request that adds
    /// (Kafka records TV_0 for AddPartitionsToTxn/AddOffsetsToTxn from clients, TV_2 for the
    /// implicit adds of Produce v12+ and TxnOffsetCommit v5).
    pub fn plan_add_tv(
        &self,
        producer_id: i64,
        epoch: i16,
        add: &[(String, i32)],
        now: i64,
        tv: i16,
    ) -> Result<Option<TxnMetadata>, ResponseError> {
        self.check_producer(producer_id, epoch)?;
        self.busy()?;
        if self.state == TxnState::Ongoing && add.iter().all(|p| self.partitions.contains(p)) {
            return Ok(None);
        }
        let mut next = self.successor();
        next.client_tv = tv;
        if self.state != TxnState::Ongoing {
            if !self.state.is_complete() {
                return Err(ResponseError::InvalidTxnState);
            }
            next.partitions.clear();
            next.start_ms = now;
        }
        next.state = TxnState::Ongoing;
        next.partitions.extend(add.iter().cloned());
        next.last_update_ms = now;
        Ok(Some(next))
    }

    /// EndTxn: the Prepare* metadata to persist, or `None` for a retry of a transaction that
    /// already ended the same way.
    pub fn plan_end(
        &self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now: i64,
    ) -> Result<Option<TxnMetadata>, ResponseError> {
        if producer_id != self.producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if self.pending {
            return Err(ResponseError::ConcurrentTransactions);
        }
        if epoch != self.producer_epoch {
            return Err(ResponseError::ProducerFenced);
        }
        match (self.state, commit) {
            (TxnState::Ongoing, _) => {
                let mut next = self.successor();
                next.client_tv = TV_0;
                next.next_producer_id = NO_PRODUCER_ID;
                next.state = if commit {
                    TxnState::PrepareCommit
                } else {
                    TxnState::PrepareAbort
                };
                next.last_update_ms = now;
                Ok(Some(next))
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(None),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Err(ResponseError::ConcurrentTransactions)
            }
            _ => Err(ResponseError::InvalidTxnState),
        }
    }

    /// The timeout abort: fence the producer (bumped epoch) and prepare the abort. `None`
    /// unless the transaction is ongoing, idle and past its timeout.
    pub fn plan_timeout(
        &self,
        now: i64,
        new_id: impl FnOnce() -> Result<i64, ResponseError>,
    ) -> Option<TxnMetadata> {
        if self.pending
            || self.state != TxnState::Ongoing
            || self.start_ms.saturating_add(i64::from(self.timeout_ms)) > now
        {
            return None;
        }
        let mut next = self.successor();
        // One bump fences the producer, and the abort is recorded at the broker's own
        // transaction version, 2, as Kafka 4.4 does (measured against it: the epoch moves by
        // one, and the timed-out producer's own EndTxn v5 abort then reads as a retry). When
        // the bump reaches the last epoch, the producer id rotates at completion.
        next.client_tv = TV_2;
        next.producer_epoch = self.producer_epoch.saturating_add(1);
        next.next_producer_id = if next.producer_epoch >= MAX_EPOCH {
            new_id().ok()?
        } else {
            NO_PRODUCER_ID
        };
        next.state = TxnState::PrepareAbort;
        next.last_update_ms = now;
        Some(next)
    }

    /// KIP-890 verification (Kafka's `handleVerifyPartitionsInTransaction`): for each of
    /// `partitions`, whether it is in this producer's ongoing transaction. A transaction
    /// being ended is CONCURRENT_TRANSACTIONS, even while the state still reads `Ongoing`.
    pub fn verify_partitions(
        &self,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<Vec<bool>, ResponseError> {
        self.check_producer(producer_id, epoch)?;
        if self.ending || matches!(self.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return Err(ResponseError::ConcurrentTransactions);
        }
        let ongoing = self.state == TxnState::Ongoing;
        Ok(partitions
            .iter()
            .map(|p| ongoing && self.partitions.contains(p))
            .collect())
    }

    /// `transactional.id.expiration.ms`: no transaction in progress, nothing being written,
    /// and no update for `expiration_ms`.
    pub fn is_expired(&self, now: i64, expiration_ms: i64) -> bool {
        !self.pending
            && self.state.is_complete()
            && now.saturating_sub(self.last_update_ms) >= expiration_ms
    }

    /// The metadata after every marker of a Prepare* state is written.
    pub fn completed(&self, now: i64) -> TxnMetadata {
        let mut next = self.successor();
        // A TV2 transaction whose bump exhausted the epoch: the producer continues under the
        // id allocated when it was prepared, at epoch 0.
        if self.client_tv >= TV_2 && self.next_producer_id != NO_PRODUCER_ID {
            next.producer_id = self.next_producer_id;
            next.producer_epoch = 0;
        }
        next.next_producer_id = NO_PRODUCER_ID;
        next.state = if self.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        next.partitions.clear();
        next.start_ms = -1;
        next.last_update_ms = now;
        next.pending = false;
        next.ending = false;
        next
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fresh() -> TxnMetadata {
        TxnMetadata::new("tx", 7, 60_000, 1000)
    }

    fn p(t: &str, i: i32) -> (String, i32) {
        (t.to_string(), i)
    }

    fn no_id() -> Result<i64, ResponseError> {
        Err(ResponseError::UnknownServerError)
    }

    #[test]
    fn add_then_commit_then_complete() {
        let m = fresh();
        let on = m.plan_add(7, 0, &[p("a", 0)], 2000).unwrap().unwrap();
        assert_eq!(on.state, TxnState::Ongoing);
        assert_eq!(on.start_ms, 2000);
        // Adding a partition already there writes nothing.
        assert_eq!(on.plan_add(7, 0, &[p("a", 0)], 2100).unwrap(), None);
        let more = on.plan_add(7, 0, &[p("b", 1)], 2200).unwrap().unwrap();
        assert_eq!(more.partitions.len(), 2);
        assert_eq!(more.start_ms, 2000, "the start time stays");
        let prep = more.plan_end(7, 0, true, 3000).unwrap().unwrap();
        assert_eq!(prep.state, TxnState::PrepareCommit);
        assert_eq!(
            prep.plan_add(7, 0, &[p("c", 0)], 3001),
            Err(ResponseError::ConcurrentTransactions)
        );
        let done = prep.completed(3500);
        assert_eq!(done.state, TxnState::CompleteCommit);
        assert!(done.partitions.is_empty());
        // A retried commit succeeds; an abort now is invalid.
        assert_eq!(done.plan_end(7, 0, true, 4000).unwrap(), None);
        assert_eq!(
            done.plan_end(7, 0, false, 4000),
            Err(ResponseError::InvalidTxnState)
        );
        // The next transaction starts afresh.
        let next = done.plan_add(7, 0, &[p("z", 0)], 5000).unwrap().unwrap();
        assert_eq!(next.partitions.len(), 1);
        assert_eq!(next.start_ms, 5000);
    }

    #[test]
    fn wrong_producer_or_epoch_is_rejected() {
        let m = fresh();
        assert_eq!(
            m.plan_add(8, 0, &[p("a", 0)], 1),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        assert_eq!(
            m.plan_add(7, 1, &[p("a", 0)], 1),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            m.plan_end(7, 0, true, 1),
            Err(ResponseError::InvalidTxnState),
            "nothing to end"
        );
        let mut busy = m.clone();
        busy.pending = true;
        assert_eq!(
            busy.plan_add(7, 0, &[p("a", 0)], 1),
            Err(ResponseError::ConcurrentTransactions)
        );
    }

    #[test]
    fn init_bumps_the_epoch_and_aborts_an_ongoing_transaction() {
        let m = fresh();
        let InitPlan::Bump(b) = m.plan_init(30_000, None, 10, no_id).unwrap() else {
            panic!("expected a bump");
        };
        assert_eq!(
            (b.producer_id, b.producer_epoch, b.timeout_ms),
            (7, 1, 30_000)
        );
        let on = b.plan_add(7, 1, &[p("a", 0)], 20).unwrap().unwrap();
        let InitPlan::AbortFirst(f) = on.plan_init(30_000, None, 30, no_id).unwrap() else {
            panic!("expected an abort first");
        };
        assert_eq!((f.producer_epoch, f.state), (2, TxnState::PrepareAbort));
        assert_eq!(f.partitions.len(), 1, "the abort covers the partitions");
        // The old producer is fenced.
        let aborted = f.completed(40);
        assert_eq!(
            aborted.plan_end(7, 1, true, 50),
            Err(ResponseError::ProducerFenced)
        );
        // KIP-360: a producer with a stale epoch other than the previous one is fenced.
        assert_eq!(
            aborted.plan_init(30_000, Some((7, 0)), 60, no_id),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            aborted.plan_init(30_000, Some((7, 1)), 60, no_id),
            Ok(InitPlan::Current(7, 2))
        );
        assert_eq!(
            aborted.plan_init(30_000, Some((9, 2)), 60, no_id),
            Err(ResponseError::ProducerFenced)
        );
    }

    #[test]
    fn an_exhausted_epoch_takes_a_new_producer_id() {
        let mut m = fresh();
        m.producer_epoch = MAX_EPOCH;
        let InitPlan::Bump(b) = m.plan_init(1000, None, 1, || Ok(99)).unwrap() else {
            panic!("expected a bump");
        };
        assert_eq!((b.producer_id, b.producer_epoch), (99, 0));
    }

    #[test]
    fn timeout_fences_and_aborts_only_expired_ongoing_transactions() {
        let m = fresh();
        assert_eq!(m.plan_timeout(i64::MAX, no_id), None, "not ongoing");
        let on = m.plan_add(7, 0, &[p("a", 0)], 1000).unwrap().unwrap();
        assert_eq!(on.plan_timeout(60_999, no_id), None);
        let t = on.plan_timeout(61_000, no_id).unwrap();
        assert_eq!((t.state, t.producer_epoch), (TxnState::PrepareAbort, 1));
        assert_eq!(t.completed(61_001).state, TxnState::CompleteAbort);
    }

    #[test]
    fn verification_sees_only_partitions_of_the_ongoing_transaction() {
        let m = fresh();
        assert_eq!(m.verify_partitions(7, 0, &[p("a", 0)]), Ok(vec![false]));
        let on = m.plan_add(7, 0, &[p("a", 0)], 10).unwrap().unwrap();
        assert_eq!(
            on.verify_partitions(7, 0, &[p("a", 0), p("a", 1)]),
            Ok(vec![true, false])
        );
        assert_eq!(
            on.verify_partitions(8, 0, &[p("a", 0)]),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        assert_eq!(
            on.verify_partitions(7, 1, &[p("a", 0)]),
            Err(ResponseError::ProducerFenced)
        );
        // An EndTxn being written: still `Ongoing` in memory, but markers may be on disk.
        let mut ending = on.clone();
        ending.pending = true;
        ending.ending = true;
        assert_eq!(
            ending.verify_partitions(7, 0, &[p("a", 0)]),
            Err(ResponseError::ConcurrentTransactions)
        );
        // Another partition being added does not stop the partitions already in.
        let mut adding = on.clone();
        adding.pending = true;
        assert_eq!(adding.verify_partitions(7, 0, &[p("a", 0)]), Ok(vec![true]));
        let prep = on.plan_end(7, 0, true, 20).unwrap().unwrap();
        assert_eq!(
            prep.verify_partitions(7, 0, &[p("a", 0)]),
            Err(ResponseError::ConcurrentTransactions)
        );
        assert_eq!(
            prep.completed(30).verify_partitions(7, 0, &[p("a", 0)]),
            Ok(vec![false])
        );
    }

    #[test]
    fn only_idle_ids_without_a_transaction_expire() {
        let m = fresh(); // Empty, updated at 1000
        assert!(!m.is_expired(1999, 1000));
        assert!(m.is_expired(2000, 1000));
        let on = m.plan_add(7, 0, &[p("a", 0)], 1000).unwrap().unwrap();
        assert!(
            !on.is_expired(i64::MAX, 1000),
            "an ongoing transaction never expires"
        );
        let prep = on.plan_end(7, 0, false, 1000).unwrap().unwrap();
        assert!(!prep.is_expired(i64::MAX, 1000));
        let done = prep.completed(1500);
        assert!(!done.is_expired(2499, 1000));
        assert!(done.is_expired(2500, 1000));
        let mut busy = done.clone();
        busy.pending = true;
        assert!(!busy.is_expired(i64::MAX, 1000));
    }

    #[test]
    fn state_ids_round_trip() {
        for id in 0..8 {
            assert_eq!(TxnState::from_id(id).unwrap().id(), id);
        }
        assert_eq!(TxnState::from_id(8), None);
    }
}
