//! [`ShareManager`]: the broker's share partitions, (group, topic id, partition) →
//! [`SharePartition`], each behind its own lock, with their durable state in
//! `__share_group_state` ([`ShareStateStore`]), the share sessions, and the waiting fetches.
//!
//! A share partition is loaded on first use: from the store when it has state for it (a
//! restored partition gets back what it had delivered, with no locks), else started at
//! `share.auto.offset.reset` and that initial state written as a ShareSnapshot. Every change
//! Kafka persists — acknowledgements, releases (member leaving, session closing, connection
//! dropping), lock expiry — is written as a ShareUpdate of the share partition's state before
//! its lock is let go, so the records of one share partition reach the log in the order they
//! were decided. The writes return [`Pending`] durability that the caller waits for
//! ([`ShareManager::wait_durable`]) before answering acknowledgements.
//!
//! The store is opened lazily (first share fetch or acknowledgement), which creates the
//! 50-partition topic; at start the broker opens it only when the topic already exists
//! ([`ShareManager::open_existing`]), so replay happens once, at start, like the other
//! coordinators' topics, and a broker that never served a share group has no such topic.
//!
//! Thread safety: the partition map, the store handle and the sessions are std `Mutex`es held
//! only for lookups; a share partition's `Mutex` is held for one operation, which may read the
//! data log and append to `__share_group_state` (no fsync): every method that takes it is
//! blocking and runs on the blocking pool. Nothing here is held across `.await`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

use bytes::Bytes;
use skiff_coordinator::host::Storage;
use skiff_coordinator::share::{
    initial_start_offset, AckBatch, AckContext, Acknowledged, AcquireMode, AcquiredRecords,
    DeliveryState, Fetch, SharePartition,
};
use skiff_coordinator::share_state::{
    Appended, BatchWrite, SharePartitionKey, ShareStateConfig, ShareStateStore, ShareWrite,
    SHARE_STATE_TOPIC,
};
use skiff_log::Clock;
use tokio::sync::Notify;
use tracing::{error, info};

use super::log_view::{self, LogView};
use super::metrics::ShareMetrics;
use super::session::ShareSessions;
use super::settings::{KafkaDefaults, ShareGroupSettings, ShareIsolation, ShareSettings};
use crate::coordinator_host::CoordinatorStorage;
use crate::errors::BrokerError;
use crate::partition::Partition;
use crate::topics::Topics;

/// The durable share-state store as the broker runs it.
pub type StateStore = ShareStateStore<CoordinatorStorage>;

/// Writes to `__share_group_state` not yet known durable.
#[derive(Default)]
pub struct Pending(Vec<Appended<Partition>>);

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn extend(&mut self, other: Pending) {
        self.0.extend(other.0);
    }
    pub(super) fn push(&mut self, appended: Appended<Partition>) {
        self.0.push(appended);
    }
}

/// No lock deadline (the slot's cached earliest deadline).
pub(super) const NO_DEADLINE: i64 = i64::MAX;

/// One share partition: its state once loaded, and the fetches waiting for it.
pub struct Slot {
    pub(super) state: Mutex<Option<SharePartition>>,
    /// ShareFetches parked until records become available again (release, expiry).
    pub(super) waiters: Mutex<Vec<Weak<Notify>>>,
    /// The state's earliest lock deadline, kept beside it so the expiry timer never takes the
    /// state lock (which may be held across a log read) on a runtime thread.
    pub(super) next_deadline: AtomicI64,
    /// This share partition's counters (the broker-wide ones are their sums).
    pub(super) counters: ShareMetrics,
}

/// One loaded share partition's figures, for `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct SharePartitionFacts {
    pub group: String,
    pub topic_id: uuid::Uuid,
    pub partition: i32,
    pub start_offset: i64,
    pub end_offset: i64,
    /// Offsets between the start and the end offset (counted against the record-lock limit).
    pub in_flight: u64,
    /// Records held by a consumer right now (ACQUIRED).
    pub acquired: u64,
    /// Records not finished yet (AVAILABLE or ACQUIRED) by delivery count, ascending: how
    /// close the partition's backlog is to `share.delivery.count.limit`.
    pub by_delivery_count: Vec<(u16, u64)>,
    /// `(name, help, value)` of the share partition's counters.
    pub counters: Vec<(&'static str, &'static str, u64)>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            state: Mutex::new(None),
            waiters: Mutex::new(Vec::new()),
            next_deadline: AtomicI64::new(NO_DEADLINE),
            counters: ShareMetrics::default(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Option<SharePartition>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn park(&self, waiter: &Arc<Notify>) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        waiters.retain(|w| w.strong_count() > 0);
        waiters.push(Arc::downgrade(waiter));
    }

    pub(super) fn wake(&self) {
        let drained = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|e| e.into_inner()));
        for waiter in drained.iter().filter_map(Weak::upgrade) {
            waiter.notify_one();
        }
    }
}

/// What one acquisition asks for.
#[derive(Debug, Clone, Copy)]
pub struct AcquireLimits {
    pub max_records: u32,
    pub batch_size: u32,
    pub max_bytes: usize,
}

/// What one acquisition handed out.
#[derive(Debug, Default)]
pub struct AcquiredData {
    pub records: Vec<AcquiredRecords>,
    pub bytes: Bytes,
}

impl AcquiredData {
    pub fn count(&self) -> u64 {
        self.records
            .iter()
            .map(|r| (r.last_offset - r.first_offset + 1).max(0) as u64)
            .sum()
    }
}

/// The broker's share partitions and sessions; see the module documentation.
pub struct ShareManager {
    storage: Arc<CoordinatorStorage>,
    topics: Arc<Topics>,
    clock: Arc<dyn Clock>,
    settings: RwLock<Arc<dyn ShareSettings>>,
    /// `__share_group_state`, once opened. Held while opening (creating and replaying the
    /// topic), so concurrent first uses open it once, and while pruning (`upkeep.rs`), so a
    /// replay never reads a partition whose log start is moving.
    pub(super) store: Mutex<Option<Arc<StateStore>>>,
    pub(super) partitions: Mutex<HashMap<SharePartitionKey, Arc<Slot>>>,
    sessions: Mutex<ShareSessions>,
    /// How `__share_group_state` is created and when snapshots are written.
    state_config: ShareStateConfig,
    pub metrics: ShareMetrics,
    pub(super) timer: super::timer::TimerHandle,
}

impl ShareManager {
    pub fn new(
        storage: Arc<CoordinatorStorage>,
        topics: Arc<Topics>,
        clock: Arc<dyn Clock>,
        config: &skiff_config::BrokerConfig,
    ) -> ShareManager {
        let state_config = ShareStateConfig {
            num_partitions: config.share_coordinator_state_topic_num_partitions,
            updates_per_snapshot: u32::try_from(
                config.share_coordinator_snapshot_update_records_per_snapshot,
            )
            .unwrap_or(0),
            cold_snapshot_interval_ms: config.share_coordinator_cold_partition_snapshot_interval_ms,
            ..ShareStateConfig::default()
        };
        let max_sessions = usize::try_from(config.group_share_max_share_sessions).unwrap_or(1);
        ShareManager {
            storage,
            topics,
            clock,
            settings: RwLock::new(Arc::new(KafkaDefaults)),
            store: Mutex::new(None),
            partitions: Mutex::new(HashMap::new()),
            sessions: Mutex::new(ShareSessions::new(max_sessions)),
            state_config,
            metrics: ShareMetrics::default(),
            timer: super::timer::TimerHandle::default(),
        }
    }

    /// Opens the store at start when `__share_group_state` already exists (blocking: replays
    /// the topic). A store that does not replay is logged and left closed: share requests then
    /// fail per partition until it can be opened, and the rest of the broker serves on.
    pub fn open_existing(&self) {
        if self.storage.topic_partitions(SHARE_STATE_TOPIC).is_none() {
            return;
        }
        if let Err(e) = self.store() {
            error!(error = %e, "share state not loaded; share fetches will fail until it is");
        }
    }

    /// Replaces the per-group settings resolver (the broker sets the group configs one).
    pub fn set_settings(&self, settings: Arc<dyn ShareSettings>) {
        *self.settings.write().unwrap_or_else(|e| e.into_inner()) = settings;
    }

    pub fn settings(&self, group: &str) -> ShareGroupSettings {
        let resolver = self
            .settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        resolver.for_group(group)
    }

    pub fn sessions(&self) -> MutexGuard<'_, ShareSessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The store, opened (and the topic created) on first use. Blocking.
    pub fn store(&self) -> Result<Arc<StateStore>, BrokerError> {
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = store.as_ref() {
            return Ok(s.clone());
        }
        let opened = Arc::new(StateStore::open(&*self.storage, self.state_config)?);
        *store = Some(opened.clone());
        Ok(opened)
    }

    /// The store when `__share_group_state` exists (opening it if needed), never creating it.
    /// Blocking.
    pub fn store_if_exists(&self) -> Option<Arc<StateStore>> {
        if !self.store_is_open() && self.storage.topic_partitions(SHARE_STATE_TOPIC).is_none() {
            return None;
        }
        self.store().ok()
    }

    /// Whether the store is open (tests; the topic exists once it is).
    pub fn store_is_open(&self) -> bool {
        self.store
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    fn slot(&self, key: &SharePartitionKey) -> Arc<Slot> {
        let mut map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.clone())
            .or_insert_with(|| Arc::new(Slot::new()))
            .clone()
    }

    pub(super) fn slots_of_group(&self, group: &str) -> Vec<(SharePartitionKey, Arc<Slot>)> {
        let map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        map.iter()
            .filter(|(k, _)| k.group == group)
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
    }

    /// Parks `waiter` on the share partition: woken when records are given back.
    pub fn park(&self, key: &SharePartitionKey, waiter: &Arc<Notify>) {
        self.slot(key).park(waiter);
    }

    /// Runs `op` on the share partition `key` of `data`, loading it first when `load` (a
    /// fetch; an acknowledgement of a share partition not loaded is UNKNOWN_TOPIC_OR_PARTITION,
    /// as Kafka answers), expiring its lapsed locks and following the log start. `op` answers
    /// its result and whether it changed state that must be persisted. Blocking.
    fn with_partition<T>(
        &self,
        key: &SharePartitionKey,
        data: &Partition,
        settings: &ShareGroupSettings,
        load: bool,
        pending: &mut Pending,
        op: impl FnOnce(&mut SharePartition) -> Result<(T, bool), BrokerError>,
    ) -> Result<T, BrokerError> {
        let slot = self.slot(key);
        let now = self.now_ms();
        let mut guard = slot.lock();
        if guard.is_none() {
            if !load {
                return Err(BrokerError::UnknownPartition {
                    topic: data.topic.clone(),
                    partition: data.index,
                });
            }
            *guard = Some(self.load(key, data, settings, now, pending)?);
        }
        let Some(sp) = guard.as_mut() else {
            return Err(BrokerError::Internal("share partition not loaded".into()));
        };
        sp.set_limits(settings.limits());
        sp.log_start_moved(data.log.log_start_offset());
        let expired = sp.expire(now);
        self.metrics.expired(expired);
        slot.counters.expired(expired);
        let result = op(sp);
        let changed = match &result {
            Ok((_, changed)) => *changed,
            Err(_) => false,
        };
        if changed || expired.made_available + expired.archived_at_limit > 0 {
            match self.persist(key, sp, now) {
                Ok(appended) => pending.push(appended),
                Err(e) => {
                    // The memory is ahead of the log: reload from the store next time.
                    *guard = None;
                    slot.next_deadline.store(NO_DEADLINE, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        slot.next_deadline.store(
            sp.next_lock_deadline().unwrap_or(NO_DEADLINE),
            Ordering::Relaxed,
        );
        drop(guard);
        if expired.made_available > 0 {
            slot.wake();
        }
        result.map(|(t, _)| t)
    }

    /// Loads a share partition: its stored state, else a new one at
    /// `share.auto.offset.reset`, whose initial state is written as a snapshot.
    fn load(
        &self,
        key: &SharePartitionKey,
        data: &Partition,
        settings: &ShareGroupSettings,
        now: i64,
        pending: &mut Pending,
    ) -> Result<SharePartition, BrokerError> {
        let store = self.store()?;
        if let Some(stored) = store.get(key) {
            let sp = SharePartition::restore(&stored.state, settings.limits())?;
            return Ok(sp);
        }
        let start = initial_start_offset(settings.auto_offset_reset, now, &LogView(data))?;
        let sp = SharePartition::new(start, 0, settings.limits());
        pending.push(store.write(key, ShareWrite::Snapshot(sp.snapshot()), now)?);
        info!(group = %key.group, topic = %data.topic, partition = data.index, start,
            "share partition initialised");
        Ok(sp)
    }

    /// Writes the share partition's state as a ShareUpdate (or the snapshot the store decides
    /// is due). The whole window is written: combining it over the stored state gives the
    /// state now, since a newer write of an offset never loses to an older one.
    pub(super) fn persist(
        &self,
        key: &SharePartitionKey,
        sp: &SharePartition,
        now: i64,
    ) -> Result<Appended<Partition>, BrokerError> {
        let snapshot = sp.snapshot();
        let write = ShareWrite::Batches(BatchWrite {
            state_epoch: snapshot.state_epoch,
            start_offset: Some(snapshot.start_offset),
            delivery_complete_count: snapshot.delivery_complete_count,
            state_batches: snapshot.state_batches,
        });
        Ok(self.store()?.write(key, write, now)?)
    }

    /// Applies a member's acknowledgements to one share partition and writes the result.
    /// Blocking.
    pub fn acknowledge(
        &self,
        key: &SharePartitionKey,
        data: &Partition,
        member: &str,
        batches: &[AckBatch],
        pending: &mut Pending,
    ) -> Result<Acknowledged, BrokerError> {
        let settings = self.settings(&key.group);
        let ctx = AckContext {
            now_ms: self.now_ms(),
            lock_duration_ms: settings.lock_duration_ms,
            renew_supported: false,
            is_renew_ack: false,
            renew_enabled: settings.renew_enabled,
        };
        let slot = self.slot(key);
        let acked = self.with_partition(key, data, &settings, false, pending, |sp| {
            let acked = sp.acknowledge(member, batches, &ctx)?;
            Ok((acked, true))
        })?;
        self.metrics.acknowledged(&acked);
        slot.counters.acknowledged(&acked);
        if acked.released > 0 {
            slot.wake();
        }
        Ok(acked)
    }

    /// Reads the log from the share partition's next fetch offset and acquires what it can
    /// for `member`. Nothing is persisted for an acquisition (Kafka does not either; a restart
    /// redelivers). Blocking.
    pub fn acquire(
        &self,
        key: &SharePartitionKey,
        data: &Partition,
        member: &str,
        limits: AcquireLimits,
        pending: &mut Pending,
    ) -> Result<AcquiredData, BrokerError> {
        let settings = self.settings(&key.group);
        let read_committed = settings.isolation == ShareIsolation::ReadCommitted;
        let now = self.now_ms();
        let slot = self.slot(key);
        let acquired = self.with_partition(key, data, &settings, true, pending, |sp| {
            if limits.max_records == 0 || limits.max_bytes == 0 {
                return Ok((AcquiredData::default(), false));
            }
            let offset = sp.next_fetch_offset();
            let read = log_view::read(data, offset, limits.max_bytes, read_committed)?;
            let records = sp.acquire(&Fetch {
                member_id: member,
                fetch_offset: read.fetch_offset,
                batches: &read.batches,
                isolation: &read.isolation,
                max_records: limits.max_records,
                batch_size: limits.batch_size,
                mode: AcquireMode::BatchOptimized,
                lock_duration_ms: settings.lock_duration_ms,
                now_ms: now,
            });
            let bytes = read.bytes_for(&records);
            Ok((AcquiredData { records, bytes }, false))
        })?;
        self.metrics.acquired(acquired.count());
        slot.counters.acquired(acquired.count());
        if !acquired.records.is_empty() {
            self.timer.kick();
        }
        Ok(acquired)
    }

    /// The earliest lock deadline of any loaded share partition (no lock taken).
    pub fn next_lock_deadline(&self) -> Option<i64> {
        let map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        map.values()
            .map(|s| s.next_deadline.load(Ordering::Relaxed))
            .min()
            .filter(|d| *d != NO_DEADLINE)
    }

    /// Waits until every write in `pending` is durable. On failure the store and every
    /// loaded share partition are dropped, so the next use replays the topic (the memory may
    /// be ahead of what survived), and the caller answers KAFKA_STORAGE_ERROR.
    pub async fn wait_durable(&self, pending: Pending) -> Result<(), BrokerError> {
        for appended in pending.0 {
            if let Err(e) = self
                .storage
                .wait_durable(appended.partition, appended.end_offset)
                .await
            {
                error!(error = %e, "share state not durable; reloading it");
                self.reload();
                return Err(BrokerError::StorageFailure(format!(
                    "{SHARE_STATE_TOPIC} write not durable: {e}"
                )));
            }
        }
        Ok(())
    }

    fn reload(&self) {
        *self.store.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let slots: Vec<Arc<Slot>> = {
            let mut map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
            map.drain().map(|(_, s)| s).collect()
        };
        for slot in slots {
            slot.wake();
        }
    }

    /// Start, end and in-flight count of every loaded share partition (metrics, tests).
    pub fn partition_states(&self) -> Vec<(SharePartitionKey, i64, i64, u64)> {
        self.partition_facts()
            .into_iter()
            .map(|f| {
                let key = SharePartitionKey {
                    group: f.group,
                    topic_id: f.topic_id,
                    partition: f.partition,
                };
                (key, f.start_offset, f.end_offset, f.in_flight)
            })
            .collect()
    }

    /// Every loaded share partition's figures, sorted by key. A share partition busy with an
    /// operation (its lock taken) is left out of this scrape rather than waited for.
    pub fn partition_facts(&self) -> Vec<SharePartitionFacts> {
        let mut slots: Vec<(SharePartitionKey, Arc<Slot>)> = {
            let map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
            map.iter().map(|(k, s)| (k.clone(), s.clone())).collect()
        };
        slots.sort_by(|a, b| a.0.cmp(&b.0));
        slots
            .into_iter()
            .filter_map(|(k, s)| {
                let guard = s.state.try_lock().ok()?;
                let sp = guard.as_ref()?;
                let mut acquired = 0;
                let mut by_count: std::collections::BTreeMap<u16, u64> = Default::default();
                for (_, record) in sp.records().filter(|(_, r)| !r.state.is_terminal()) {
                    if record.state == DeliveryState::Acquired {
                        acquired += 1;
                    }
                    *by_count.entry(record.delivery_count).or_default() += 1;
                }
                Some(SharePartitionFacts {
                    group: k.group,
                    topic_id: k.topic_id,
                    partition: k.partition,
                    start_offset: sp.start_offset(),
                    end_offset: sp.end_offset(),
                    in_flight: sp.in_flight_count(),
                    acquired,
                    by_delivery_count: by_count.into_iter().collect(),
                    counters: s.counters.counters().to_vec(),
                })
            })
            .collect()
    }

    /// The data partition `(topic id, index)` if it exists.
    pub fn data_partition(&self, topic_id: uuid::Uuid, index: i32) -> Option<Arc<Partition>> {
        self.topics.get_by_id(topic_id)?.partition(index)
    }
}
