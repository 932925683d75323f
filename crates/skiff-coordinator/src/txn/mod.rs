//! The transaction coordinator (KIP-98): transactional ids → producer id and epoch, the
//! partitions of each open transaction, EndTxn with COMMIT/ABORT markers written to every
//! partition of the transaction, the abort of transactions past `transaction.timeout.ms`, and
//! the state persisted in the compacted `__transaction_state` topic (`store.rs`), replayed at
//! start (requests get COORDINATOR_LOAD_IN_PROGRESS until then).
//!
//! Skiff is one node: markers are appended to the local logs directly (no WriteTxnMarkers
//! round trip), and EndTxn answers once the markers and the Complete* state are durable, so a
//! client never observes the Prepare* states except as CONCURRENT_TRANSACTIONS on a request
//! racing with a timeout abort. Offsets of TxnOffsetCommit become visible through the group
//! coordinator's `txn_offsets` hook once the COMMIT marker is in `__consumer_offsets`.
//!
//! Layout: this file holds InitProducerId, EndTxn at transaction version 0 and the writing of
//! states and markers; `add.rs` AddPartitionsToTxn/AddOffsetsToTxn; `tv2.rs` and `end_v2.rs`
//! transaction version 2 (KIP-890 part 2: EndTxn v5's epoch bump, implicit adds; see
//! docs/transactions.md); `verify.rs` KIP-890 part 1; `expire.rs` expired ids; `thread.rs`
//! the coordinator's thread.
//!
//! Thread safety: the metadata map is one std `Mutex`, held only for in-memory checks; a
//! transactional id whose next state is being written is marked `pending` (other requests
//! for it get CONCURRENT_TRANSACTIONS), so writes for one id never interleave. All
//! functions here block (appends and fsyncs): handlers call them on blocking threads.
//!
//! What the coordinator needs from the broker (producer ids, the data partitions that take
//! markers, the group coordinator) comes through [`TxnHost`]; its own topic through
//! [`Storage`]; time from the injected [`Clock`].

mod add;
pub mod end_v2;
mod expire;
pub mod records;
pub mod state;
mod store;
mod thread;
mod tv2;
mod verify;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};

use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::{Clock, ControlType, LogError};
use tracing::{info, warn};

use crate::groups::records::partition_for;
use crate::groups::{Coordinator, OFFSETS_TOPIC};
use crate::host::{InternalPartition, StartError, Storage, LEADER_EPOCH};
use crate::internal_topic::InternalTopic;
use state::{InitPlan, TxnMetadata, TxnState};

pub use store::TXN_STATE_TOPIC;
use thread::interval_ms;
pub use thread::spawn;

/// Coordinator epoch written in markers: one node, never moves.
const COORDINATOR_EPOCH: i32 = 0;

/// What the transaction coordinator needs from the broker that owns it. The broker passes
/// itself to the requests that write markers or allocate producer ids, and to [`spawn`].
pub trait TxnHost: Send + Sync + 'static {
    type Storage: Storage;
    /// A new producer id (InitProducerId).
    fn allocate_producer_id(&self) -> Result<i64, LogError>;
    /// A data partition that takes a transaction marker; `None` once its topic is deleted.
    fn data_partition(
        &self,
        topic: &str,
        index: i32,
    ) -> Option<Arc<<Self::Storage as Storage>::Partition>>;
    /// The group coordinator (offsets committed inside transactions).
    fn groups(&self) -> &Coordinator<Self::Storage>;
    /// The transaction coordinator itself (its thread reaches it through the host).
    fn txn(&self) -> &TxnCoordinator<Self::Storage>;
}

/// A [`TxnHost`] or an `Arc` of one: the requests take either, so a caller holding
/// `Arc<Broker>` passes `&broker` as it always did.
pub trait HostRef {
    type Host: TxnHost;
    fn host(&self) -> &Self::Host;
}

impl<H: TxnHost> HostRef for H {
    type Host = H;
    fn host(&self) -> &H {
        self
    }
}

impl<H: TxnHost> HostRef for Arc<H> {
    type Host = H;
    fn host(&self) -> &H {
        self
    }
}

pub struct TxnCoordinator<S: Storage> {
    storage: Arc<S>,
    /// `__transaction_state`, created on the first FindCoordinator or transactional write.
    state: InternalTopic<S::Partition>,
    txns: Mutex<HashMap<String, TxnMetadata>>,
    loaded: AtomicBool,
    max_timeout_ms: i32,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`, on the clock.
    abort_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`, on the clock.
    expiry_interval_ms: i64,
    /// `transactional.id.expiration.ms`.
    expiration_ms: i64,
    clock: Arc<dyn Clock>,
    /// Set by [`TxnCoordinator::stop`]: the thread ends after its current pass.
    stopping: AtomicBool,
    /// The coordinator thread ([`spawn`]), joined by [`TxnCoordinator::stop`].
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Asks the thread for a pass now ([`TxnCoordinator::tick_now`]); set by [`spawn`].
    ticks: Mutex<Option<mpsc::Sender<mpsc::SyncSender<()>>>>,
}

impl<S: Storage> TxnCoordinator<S> {
    /// Opens `__transaction_state` if an earlier run created it (a missing one is created on
    /// first use); the metadata is loaded by [`spawn`].
    pub fn start(
        storage: Arc<S>,
        config: &BrokerConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<TxnCoordinator<S>, StartError> {
        let state = InternalTopic::find(
            &*storage,
            TXN_STATE_TOPIC,
            config.transaction_state_log_num_partitions,
        );
        Ok(TxnCoordinator {
            storage,
            state,
            txns: Mutex::new(HashMap::new()),
            loaded: AtomicBool::new(false),
            max_timeout_ms: config.transaction_max_timeout_ms,
            abort_interval_ms: interval_ms(
                config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                10_000,
            ),
            expiry_interval_ms: interval_ms(
                config.transaction_remove_expired_transaction_cleanup_interval_ms,
                3_600_000,
            ),
            expiration_ms: config.transactional_id_expiration_ms,
            clock,
            stopping: AtomicBool::new(false),
            thread: Mutex::new(None),
            ticks: Mutex::new(None),
        })
    }

    /// Shutdown: asks the thread to end and returns once it has (after the pass in hand,
    /// within 100 ms otherwise). Timed-out transactions are no longer aborted after this.
    /// Idempotent.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the transaction coordinator thread panicked");
            }
        }
    }

    /// Runs the coordinator thread's periodic pass now instead of at its next real-time
    /// wake-up, and returns once it is done: the abort of timed-out transactions (and the
    /// retry of unfinished ones) and the removal of expired transactional ids, each if its
    /// interval has passed on the clock. Blocks (after the load, if one is in progress);
    /// returns `false` without waiting if the thread is not running. A test moves its manual
    /// clock, then calls this instead of waiting. Not part of the request path.
    #[doc(hidden)]
    pub fn tick_now(&self) -> bool {
        let (done, wait) = mpsc::sync_channel(1);
        let sent = match &*self.ticks.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(ticks) => ticks.send(done).is_ok(),
            None => false,
        };
        sent && wait.recv().is_ok()
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, TxnMetadata>> {
        self.txns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ready(&self) -> Result<MutexGuard<'_, HashMap<String, TxnMetadata>>, ResponseError> {
        if !self.is_loaded() {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        Ok(self.lock())
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// A copy of one transactional id's metadata (DescribeTransactions, tests).
    pub fn describe(&self, transactional_id: &str) -> Result<Option<TxnMetadata>, ResponseError> {
        Ok(self.ready()?.get(transactional_id).cloned())
    }

    /// Every transactional id's metadata (ListTransactions).
    pub fn list(&self) -> Result<Vec<TxnMetadata>, ResponseError> {
        let mut v: Vec<TxnMetadata> = self.ready()?.values().cloned().collect();
        v.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        Ok(v)
    }

    /// InitProducerId with a transactional id: a new producer id at epoch 0 for a new id,
    /// else the next epoch (aborting an ongoing transaction of the old epoch first).
    pub fn init_producer_id<R>(
        &self,
        broker: &R,
        transactional_id: &str,
        timeout_ms: i32,
        current: Option<(i64, i16)>,
    ) -> Result<(i64, i16), ResponseError>
    where
        R: HostRef,
        R::Host: TxnHost<Storage = S>,
    {
        let broker = broker.host();
        if timeout_ms <= 0 || timeout_ms > self.max_timeout_ms {
            return Err(ResponseError::InvalidTransactionTimeout);
        }
        let now = self.now();
        let allocate = || {
            broker.allocate_producer_id().map_err(|e| {
                warn!(error = %e, "producer id allocation failed");
                ResponseError::CoordinatorNotAvailable
            })
        };
        let plan = {
            let mut txns = self.ready()?;
            match txns.get_mut(transactional_id) {
                None => {
                    let mut placeholder = TxnMetadata::new(transactional_id, -1, timeout_ms, now);
                    placeholder.pending = true;
                    txns.insert(transactional_id.to_string(), placeholder);
                    None
                }
                Some(m) => {
                    let plan = m.plan_init(timeout_ms, current, now, allocate)?;
                    if !matches!(plan, InitPlan::Current(..)) {
                        m.pending = true;
                        m.ending = matches!(plan, InitPlan::AbortFirst(..));
                    }
                    Some(plan)
                }
            }
        };
        match plan {
            None => {
                let created = allocate()
                    .map(|pid| TxnMetadata::new(transactional_id, pid, timeout_ms, now))
                    .and_then(|m| self.persist(&m).map(|()| m));
                match created {
                    Ok(m) => {
                        let answer = (m.producer_id, m.producer_epoch);
                        self.install(m);
                        Ok(answer)
                    }
                    Err(e) => {
                        self.lock().remove(transactional_id);
                        Err(e)
                    }
                }
            }
            Some(InitPlan::Current(pid, epoch)) => Ok((pid, epoch)),
            Some(InitPlan::Bump(next)) => self.write_and_install(next),
            Some(InitPlan::AbortFirst(fenced)) => {
                let aborted = self.prepare_and_complete(broker, fenced)?;
                match aborted.plan_init(timeout_ms, None, self.now(), allocate) {
                    Ok(InitPlan::Bump(next)) => {
                        self.mark_pending(transactional_id);
                        self.write_and_install(next)
                    }
                    _ => Err(ResponseError::ConcurrentTransactions),
                }
            }
        }
    }

    /// EndTxn v0-4 (transaction version 0): markers to every partition of the transaction,
    /// then the Complete* state; the epoch does not change. Version 5 is [`Self::end_txn_v2`].
    pub fn end_txn<R>(
        &self,
        broker: &R,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(), ResponseError>
    where
        R: HostRef,
        R::Host: TxnHost<Storage = S>,
    {
        let broker = broker.host();
        let now = self.now();
        let next = {
            let mut txns = self.ready()?;
            let m = txns
                .get_mut(transactional_id)
                .ok_or(ResponseError::InvalidProducerIdMapping)?;
            let next = m.plan_end(producer_id, epoch, commit, now)?;
            if next.is_some() {
                m.pending = true;
                m.ending = true;
            }
            next
        };
        match next {
            None => Ok(()),
            Some(prepared) => self.prepare_and_complete(broker, prepared).map(|_| ()),
        }
    }

    /// Persists a Prepare* state, writes the markers and persists the Complete* state. The
    /// id is marked pending by the caller; it is released whatever happens (a failure leaves
    /// the Prepare* state installed, retried by the background thread).
    fn prepare_and_complete<H: TxnHost<Storage = S>>(
        &self,
        broker: &H,
        prepared: TxnMetadata,
    ) -> Result<TxnMetadata, ResponseError> {
        if let Err(e) = self.persist(&prepared) {
            self.release(&prepared.transactional_id);
            return Err(e);
        }
        self.complete(broker, prepared)
    }

    /// Markers, then the Complete* state; installs whatever state is durable at the end.
    fn complete<H: TxnHost<Storage = S>>(
        &self,
        broker: &H,
        prepared: TxnMetadata,
    ) -> Result<TxnMetadata, ResponseError> {
        let mut stuck = prepared.clone();
        stuck.pending = false;
        stuck.ending = false;
        if let Err(e) = write_markers(broker, &prepared, self.now()) {
            warn!(transactional_id = %prepared.transactional_id, error = %e,
                "writing transaction markers failed; will retry");
            self.install(stuck);
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        let done = prepared.completed(self.now());
        if let Err(e) = self.persist(&done) {
            self.install(stuck);
            return Err(e);
        }
        self.install(done.clone());
        Ok(done)
    }

    fn write_and_install(&self, next: TxnMetadata) -> Result<(i64, i16), ResponseError> {
        match self.persist(&next) {
            Ok(()) => {
                let answer = (next.producer_id, next.producer_epoch);
                self.install(next);
                Ok(answer)
            }
            Err(e) => {
                self.release(&next.transactional_id);
                Err(e)
            }
        }
    }

    fn install(&self, mut m: TxnMetadata) {
        m.pending = false;
        m.ending = false;
        self.lock().insert(m.transactional_id.clone(), m);
    }

    fn mark_pending(&self, transactional_id: &str) {
        if let Some(m) = self.lock().get_mut(transactional_id) {
            m.pending = true;
        }
    }

    fn release(&self, transactional_id: &str) {
        if let Some(m) = self.lock().get_mut(transactional_id) {
            m.pending = false;
            m.ending = false;
        }
    }

    /// The `__transaction_state` partition of `transactional_id`, creating the topic on first
    /// use. Blocking.
    fn state_partition(&self, transactional_id: &str) -> Result<Arc<S::Partition>, String> {
        let index = partition_for(transactional_id, self.state.partition_count());
        self.state.partition(&*self.storage, index)
    }

    /// Creates `__transaction_state` if no transaction has used it yet (FindCoordinator does,
    /// as Kafka's does). Blocking.
    pub fn ensure_state_topic(&self) -> Result<(), String> {
        self.state
            .get_or_create(&*self.storage)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Appends the metadata to `__transaction_state` and waits for the fsync.
    fn persist(&self, m: &TxnMetadata) -> Result<(), ResponseError> {
        self.state_partition(&m.transactional_id)
            .and_then(|p| store::write(&*p, m, self.now()))
            .map_err(|e| {
                warn!(transactional_id = %m.transactional_id, error = %e,
                "writing transaction state failed");
                ResponseError::CoordinatorNotAvailable
            })
    }

    /// One round of the background thread: abort timed-out transactions, finish Prepare*
    /// states left by a failure or a restart.
    fn housekeeping<H: TxnHost<Storage = S>>(&self, broker: &H) {
        let now = self.now();
        let allocate = || {
            broker
                .allocate_producer_id()
                .map_err(|_| ResponseError::CoordinatorNotAvailable)
        };
        let mut work: Vec<(TxnMetadata, bool)> = Vec::new();
        {
            let mut txns = self.lock();
            for m in txns.values_mut() {
                if m.pending {
                    continue;
                }
                if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
                    m.pending = true;
                    m.ending = true;
                    work.push((m.clone(), false));
                } else if let Some(fenced) = m.plan_timeout(now, allocate) {
                    m.pending = true;
                    m.ending = true;
                    work.push((fenced, true));
                }
            }
        }
        for (m, timed_out) in work {
            if timed_out {
                info!(transactional_id = %m.transactional_id, producer_id = m.producer_id,
                    epoch = m.producer_epoch, timeout_ms = m.timeout_ms,
                    "aborting a transaction past its timeout");
                let _ = self.prepare_and_complete(broker, m);
            } else {
                let _ = self.complete(broker, m);
            }
        }
    }
}

/// Writes the COMMIT/ABORT marker of `m` to each of its partitions and fsyncs them; then
/// offsets committed in the transaction are applied (commit) or dropped (abort).
fn write_markers<H: TxnHost>(broker: &H, m: &TxnMetadata, now: i64) -> Result<(), LogError> {
    let commit = m.state == TxnState::PrepareCommit;
    let control = if commit {
        ControlType::Commit
    } else {
        ControlType::Abort
    };
    let mut written = Vec::new();
    for (topic, index) in &m.partitions {
        let Some(partition) = broker.data_partition(topic, *index) else {
            // The topic was deleted: nothing left to mark.
            continue;
        };
        match partition.write_txn_marker(
            m.producer_id,
            m.producer_epoch,
            COORDINATOR_EPOCH,
            control,
            LEADER_EPOCH,
            now,
        ) {
            Ok(_) => written.push(partition),
            Err(LogError::InvalidProducerEpoch { current, .. }) => {
                // The partition saw a newer epoch: a newer marker already closed it.
                warn!(topic = %topic, partition = index, current,
                    "transaction marker fenced by a newer producer epoch; skipped");
            }
            Err(e) => return Err(e),
        }
    }
    for partition in &written {
        partition.flush()?;
        partition.wake_readers();
    }
    if m.partitions.iter().any(|(t, _)| t == OFFSETS_TOPIC) {
        broker.groups().complete_txn_offsets(m.producer_id, commit);
    }
    Ok(())
}
