//! The group coordinator: every classic group's state machine (`group.rs`), KIP-848
//! consumer groups (`consumer.rs`), committed offsets, and their persistence in
//! `__consumer_offsets` (`records.rs` and `consumer_records.rs` for the byte format,
//! `consumer_store.rs` for consumer group snapshots, `store.rs` for the topic and the
//! writer thread). The requests are split by job: `membership.rs` (join, sync, heartbeats,
//! leave), `commits.rs` (offset commit, fetch and delete), `admin.rs` (describe, list,
//! delete groups), `txn_offsets.rs` (offsets committed inside transactions) and `share.rs`
//! (share groups: ShareGroupHeartbeat, ShareGroupDescribe, their records and expiry, the
//! [`crate::host::ShareGroupListener`]).
//!
//! Storage, the topic catalogue and group configs come from the broker through the traits of
//! [`crate::host`]; time from the injected [`Clock`].
//!
//! Skiff is one node, so it coordinates every group; `__consumer_offsets` still has
//! `offsets.topic.num.partitions` partitions and a group's records go to
//! `abs(javaHash(group)) % partitions`, exactly where Kafka puts them.
//!
//! Thread safety: classic and consumer groups live behind one std `Mutex`, share groups
//! behind a second one taken after the first when both are needed (never the other way);
//! both are held only for in-memory work and to queue records (never across `.await`, never
//! during I/O). Records are written by the coordinator thread in queue order; commits and
//! deletions wait for the fsync (group commit) before they are applied and answered.

pub mod classic_members;
pub mod commit_fence;
pub mod consumer;
pub mod consumer_records;
pub mod consumer_store;
pub mod embedded_protocol;
pub mod group;
pub mod records;
pub mod store;
pub mod txn_offsets;

mod admin;
pub(crate) mod assignment_codec;
mod commits;
mod membership;
mod share;
mod streams;

pub use commits::OffsetCommit;
pub use share::SHARE_GROUP_TYPE;
pub use streams::STREAMS_GROUP_TYPE;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};

use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::Clock;
use tokio::sync::oneshot;

use crate::host::{GroupConfigs, ShareGroupListener, StartError, Storage, TopicCatalog};
use crate::internal_topic::InternalTopic;
use group::{Committed, Group, GroupConfig, GroupState};
use store::{Job, Msg};

pub use store::OFFSETS_TOPIC;

/// Coordinator limits taken from the broker config once at start.
#[derive(Clone, Debug)]
pub struct Settings {
    pub group: GroupConfig,
    pub retention_ms: i64,
    pub retention_check_interval_ms: i64,
    pub metadata_max_bytes: usize,
    /// KIP-848 members: heartbeat interval handed out and session timeout enforced.
    pub consumer_heartbeat_interval_ms: i32,
    pub consumer_session_timeout_ms: i32,
}

impl Settings {
    pub fn from_config(config: &BrokerConfig) -> Settings {
        Settings {
            group: GroupConfig {
                min_session_timeout_ms: config.group_min_session_timeout_ms,
                max_session_timeout_ms: config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms: config.group_initial_rebalance_delay_ms,
                migration: group::MigrationPolicy::parse(&config.group_consumer_migration_policy),
            },
            retention_ms: i64::from(config.offsets_retention_minutes).saturating_mul(60_000),
            retention_check_interval_ms: config.offsets_retention_check_interval_ms,
            metadata_max_bytes: usize::try_from(config.offset_metadata_max_bytes).unwrap_or(0),
            consumer_heartbeat_interval_ms: config.group_consumer_heartbeat_interval_ms,
            consumer_session_timeout_ms: config.group_consumer_session_timeout_ms,
        }
    }
}

/// State shared with the coordinator thread.
pub struct Shared<S: Storage> {
    pub(crate) settings: Settings,
    /// `__consumer_offsets`, created on the first FindCoordinator or group write.
    pub(crate) offsets: InternalTopic<S::Partition>,
    pub(crate) clock: Arc<dyn Clock>,
    /// Where `__consumer_offsets` lives; waits for its writes to be durable.
    storage: Arc<S>,
    /// Topic ids for the KIP-848 assignment records (they name topics by id).
    topics: Arc<dyn TopicCatalog>,
    /// Every classic and consumer group by id. Std mutex: held for in-memory work only.
    groups: Mutex<HashMap<String, Group>>,
    /// Every share group (`share.rs`). Std mutex, held for in-memory work only; when both
    /// are needed, taken after `groups`, never before.
    share: Mutex<share::ShareState>,
    /// Told when a share group member or a share group is gone; set once by the broker.
    share_listener: OnceLock<Arc<dyn ShareGroupListener>>,
    loaded: AtomicBool,
    jobs: mpsc::Sender<Msg<S::Partition>>,
    /// Set by [`Coordinator::stop`]: the thread writes the queued jobs and ends.
    pub(crate) stopping: AtomicBool,
    /// Offsets of open transactions by producer id (`txn_offsets.rs`).
    txn_offsets: Mutex<txn_offsets::PendingTxnOffsets>,
    /// Group configs (`consumer.session.timeout.ms` / `consumer.heartbeat.interval.ms`).
    group_configs: Arc<dyn GroupConfigs>,
}

pub struct Coordinator<S: Storage> {
    shared: Arc<Shared<S>>,
    /// The coordinator thread, joined by [`Coordinator::stop`].
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// One row of ListGroups.
pub struct Listed {
    pub id: String,
    pub protocol_type: String,
    pub state: &'static str,
    /// "classic" or "consumer": Kafka 4.4 answers ListGroups v5 with the lower-case type names.
    pub group_type: &'static str,
}

/// One partition of an OffsetCommit that passed the handler's checks.
pub struct CommitEntry {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    /// OffsetCommit v2-4 `retention_time_ms` as an absolute time.
    pub expire_timestamp: Option<i64>,
}

impl<S: Storage> Coordinator<S> {
    /// Open `__consumer_offsets` if an earlier run created it and start the coordinator
    /// thread, which replays it; until then group requests get COORDINATOR_LOAD_IN_PROGRESS.
    /// A missing topic is created on first use ([`Coordinator::ensure_offsets_topic`]).
    pub fn start(
        storage: Arc<S>,
        topics: Arc<dyn TopicCatalog>,
        config: &BrokerConfig,
        group_configs: Arc<dyn GroupConfigs>,
        clock: Arc<dyn Clock>,
    ) -> Result<Coordinator<S>, StartError> {
        let offsets = InternalTopic::find(
            &*storage,
            OFFSETS_TOPIC,
            config.offsets_topic_num_partitions,
        );
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            settings: Settings::from_config(config),
            offsets,
            clock,
            storage,
            topics,
            groups: Mutex::new(HashMap::new()),
            share: Mutex::new(share::ShareState::default()),
            share_listener: OnceLock::new(),
            loaded: AtomicBool::new(false),
            jobs: tx,
            stopping: AtomicBool::new(false),
            txn_offsets: Mutex::new(HashMap::new()),
            group_configs,
        });
        let weak = Arc::downgrade(&shared);
        let thread = std::thread::Builder::new()
            .name("skiff-coordinator".into())
            .spawn(move || store::run(weak, rx))
            .map_err(|e| StartError::Io {
                context: "starting the group coordinator thread".into(),
                source: e,
            })?;
        Ok(Coordinator {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Shutdown: the thread writes the jobs already queued, then ends; returns once it has
    /// (within one tick, after any replay in progress). Later group writes fail. Idempotent.
    pub fn stop(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the group coordinator thread panicked");
            }
        }
    }

    pub fn is_loaded(&self) -> bool {
        self.shared.loaded.load(Ordering::Acquire)
    }

    pub(crate) fn now(&self) -> i64 {
        self.shared.clock.now_ms()
    }

    /// Runs the coordinator thread's periodic pass now instead of at its next real-time tick,
    /// and returns once it is done: every group's deadlines checked, the offsets expiry run
    /// if due on the clock, and the records they produced written. Blocks (after the load,
    /// if one is in progress); returns at once if the thread has ended. A test moves its
    /// manual clock, then calls this instead of waiting for a tick. Not part of the request
    /// path.
    #[doc(hidden)]
    pub fn tick_now(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        if self.shared.jobs.send(Msg::Tick(done)).is_ok() {
            let _ = wait.recv();
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.shared.settings
    }

    /// The heartbeat interval handed to a KIP-848 group's members: the group's
    /// `consumer.heartbeat.interval.ms` config, else the broker's.
    pub fn consumer_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.shared
            .group_configs
            .consumer_timeouts(group_id)
            .1
            .unwrap_or(self.shared.settings.consumer_heartbeat_interval_ms)
    }

    /// The `__consumer_offsets` partition that holds a group's records.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        records::partition_for(group_id, self.shared.offsets.partition_count())
    }

    /// Creates `__consumer_offsets` if no group has used it yet (FindCoordinator does, as
    /// Kafka's does). Blocking.
    pub fn ensure_offsets_topic(&self) -> Result<(), String> {
        self.shared
            .offsets
            .get_or_create(&*self.shared.storage)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    pub(crate) fn ready(&self) -> Result<MutexGuard<'_, HashMap<String, Group>>, ResponseError> {
        if !self.is_loaded() {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        Ok(self.shared.lock())
    }
}

impl<S: Storage> Shared<S> {
    /// A KIP-848 group's session timeout: its `consumer.session.timeout.ms` config, else the
    /// broker's.
    pub(crate) fn consumer_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.group_configs
            .consumer_timeouts(group_id)
            .0
            .unwrap_or(self.settings.consumer_session_timeout_ms)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue the KIP-848 records of the group that changed (on its outbox).
    pub(crate) fn persist_consumer(&self, group: &mut Group) {
        consumer_store::persist(group, &|name| self.topics.topic_id(name));
    }

    /// Queue the group's pending records (called with the groups lock held, so the queue
    /// order is the order the state changed).
    pub(crate) fn drain(
        &self,
        group: &mut Group,
        done: Option<oneshot::Sender<store::WriteResult<S::Partition>>>,
    ) {
        if group.outbox.is_empty() {
            if let Some(done) = done {
                let _ = done.send(Err("nothing to write".into()));
            }
            return;
        }
        let job = Job {
            partition: records::partition_for(&group.id, self.offsets.partition_count()),
            records: std::mem::take(&mut group.outbox),
            done,
        };
        if self.jobs.send(Msg::Write(job)).is_err() {
            tracing::error!(group = %group.id, "group coordinator thread is gone; records not written");
        }
    }

    /// Install the replayed groups and open for requests.
    pub(crate) fn install_loaded(&self, replayed: BTreeMap<String, store::Replayed>) {
        let now = self.clock.now_ms();
        let mut groups = self.lock();
        for (id, mut r) in replayed {
            let classic = r.metadata.is_some() || !r.consumer.is_empty() || !r.streams.is_empty();
            self.install_share(&id, std::mem::take(&mut r.share), classic);
            if r.metadata.is_none()
                && r.offsets.is_empty()
                && r.consumer.is_empty()
                && r.streams.is_empty()
            {
                continue;
            }
            let mut group = Group::new(&id, now);
            if let Some(m) = r.metadata {
                group.restore(m, now);
            }
            group.consumer = consumer_store::restore(
                &r.consumer,
                &|uuid| self.topics.topic_name(uuid),
                &|name| self.topics.partition_count(name),
                self.consumer_session_timeout_ms(&id),
                now,
            );
            group.consumer_persisted = r.consumer;
            self.restore_streams(&mut group, std::mem::take(&mut r.streams));
            for ((topic, partition), v) in r.offsets {
                group.commit(
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
            groups.insert(id, group);
        }
        self.loaded.store(true, Ordering::Release);
    }

    /// Deadlines of every group (called by the coordinator thread every tick).
    pub(crate) fn tick(&self) {
        let now = self.clock.now_ms();
        {
            let mut groups = self.lock();
            for group in groups.values_mut() {
                if group.tick(&self.settings.group, now) {
                    self.persist_consumer(group);
                    streams::persist_streams(group);
                    self.drain(group, None);
                }
            }
        }
        self.tick_share();
    }

    /// `offsets.retention.minutes`: tombstone expired offsets; an empty group left with no
    /// offsets is deleted (its metadata tombstoned), as Kafka does.
    pub(crate) fn expire_offsets(&self) {
        let now = self.clock.now_ms();
        let mut groups = self.lock();
        let mut dead = Vec::new();
        for group in groups.values_mut() {
            let n = group.expire_offsets(self.settings.retention_ms, now);
            if group.state == GroupState::Empty && group.is_empty() && group.offsets.is_empty() {
                group.delete(now);
                dead.push(group.id.clone());
            }
            if n > 0 || !group.outbox.is_empty() {
                tracing::info!(group = %group.id, expired = n, "expired committed offsets");
                self.drain(group, None);
            }
        }
        for id in dead {
            groups.remove(&id);
        }
    }
}

#[cfg(test)]
mod share_tests;
