//! The group coordinator: every classic group's state machine (`group.rs`), KIP-848
//! consumer groups (`consumer.rs`), committed offsets, and their persistence in
//! `__consumer_offsets` (`records.rs` and `consumer_records.rs` for the byte format,
//! `consumer_store.rs` for consumer group snapshots, `store.rs` for the topic and the
//! writer thread).
//!
//! Skiff is one node, so it coordinates every group; `__consumer_offsets` still has
//! `offsets.topic.num.partitions` partitions and a group's records go to
//! `abs(javaHash(group)) % partitions`, exactly where Kafka puts them.
//!
//! Thread safety: all groups live behind one std `Mutex`, held only for in-memory work and
//! to queue records (never across `.await`, never during I/O). Records are written by the
//! coordinator thread in queue order; commits and deletions wait for the fsync (group
//! commit) before they are applied and answered.

pub mod consumer;
pub mod consumer_records;
pub mod consumer_store;
pub mod group;
pub mod records;
pub mod store;
pub mod txn_offsets;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};

use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::Clock;
use tokio::sync::oneshot;

use crate::broker::StartError;
use crate::durability::Durability;
use crate::dynamic_configs::DynamicConfigs;
use crate::partition::Partition;
use crate::topics::Topics;
use group::{
    Committed, Group, GroupConfig, GroupState, JoinOutcome, JoinRequest, SyncOutcome, Value,
};
use records::{Key, OffsetValue};
use store::Job;

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
pub struct Shared {
    pub(crate) settings: Settings,
    pub(crate) partitions: Vec<Arc<Partition>>,
    pub(crate) clock: Arc<dyn Clock>,
    /// Topic ids for the KIP-848 assignment records (they name topics by id).
    topics: Arc<Topics>,
    /// Every group by id. Std mutex: held for in-memory work only.
    groups: Mutex<HashMap<String, Group>>,
    loaded: AtomicBool,
    jobs: mpsc::Sender<Job>,
    /// Set by [`Coordinator::stop`]: the thread writes the queued jobs and ends.
    pub(crate) stopping: AtomicBool,
    /// Offsets of open transactions by producer id (`txn_offsets.rs`).
    txn_offsets: Mutex<txn_offsets::PendingTxnOffsets>,
    /// Group configs (`consumer.session.timeout.ms` / `consumer.heartbeat.interval.ms`).
    group_configs: Arc<DynamicConfigs>,
}

pub struct Coordinator {
    shared: Arc<Shared>,
    durability: Arc<Durability>,
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

impl Coordinator {
    /// Create `__consumer_offsets` if needed and start the coordinator thread, which replays
    /// it; until then group requests get COORDINATOR_LOAD_IN_PROGRESS.
    pub fn start(
        topics: &Arc<Topics>,
        durability: Arc<Durability>,
        config: &BrokerConfig,
        group_configs: Arc<DynamicConfigs>,
        clock: Arc<dyn Clock>,
    ) -> Result<Coordinator, StartError> {
        let partitions = store::open_topic(topics, config.offsets_topic_num_partitions)?;
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            settings: Settings::from_config(config),
            partitions,
            clock,
            topics: topics.clone(),
            groups: Mutex::new(HashMap::new()),
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
            durability,
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

    fn now(&self) -> i64 {
        self.shared.clock.now_ms()
    }

    /// Check every group's deadlines now instead of at the coordinator thread's next tick.
    #[cfg(test)]
    pub(crate) fn tick_now(&self) {
        self.shared.tick();
    }

    pub fn settings(&self) -> &Settings {
        &self.shared.settings
    }

    /// The heartbeat interval handed to a KIP-848 group's members: the group's
    /// `consumer.heartbeat.interval.ms` config, else the broker's.
    pub fn consumer_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.shared
            .group_configs
            .group_consumer_timeouts(group_id)
            .1
            .unwrap_or(self.shared.settings.consumer_heartbeat_interval_ms)
    }

    /// The `__consumer_offsets` partition that holds a group's records.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        let n = i32::try_from(self.shared.partitions.len()).unwrap_or(i32::MAX);
        records::partition_for(group_id, n)
    }

    fn ready(&self) -> Result<MutexGuard<'_, HashMap<String, Group>>, ResponseError> {
        if !self.is_loaded() {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        Ok(self.shared.lock())
    }

    pub fn join(&self, group_id: &str, req: JoinRequest) -> Result<JoinOutcome, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        if !groups.contains_key(group_id) && !req.member_id.is_empty() {
            return Err(ResponseError::UnknownMemberId);
        }
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id, now));
        if group.consumer.as_ref().is_some_and(|c| !c.is_empty()) {
            return Err(ResponseError::InconsistentGroupProtocol);
        }
        group.consumer = None;
        let outcome = group.join(&self.shared.settings.group, req, now);
        self.shared.persist_consumer(group);
        self.shared.drain(group, None);
        Ok(outcome)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, bytes::Bytes)>,
    ) -> Result<SyncOutcome, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        let group = groups
            .get_mut(group_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        let outcome = group.sync(
            member_id,
            instance_id,
            generation,
            protocol_type,
            protocol_name,
            assignments,
            now,
        );
        self.shared.drain(group, None);
        Ok(outcome)
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        match groups.get_mut(group_id) {
            Some(group) => group.heartbeat(member_id, instance_id, generation, now),
            None => Err(ResponseError::UnknownMemberId),
        }
    }

    /// Remove members `(member id, group instance id)`; one error per member.
    pub fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<(), ResponseError>>, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        let Some(group) = groups.get_mut(group_id) else {
            return Ok(vec![Err(ResponseError::UnknownMemberId); members.len()]);
        };
        let cfg = &self.shared.settings.group;
        let errors = members
            .iter()
            .map(|(id, instance)| group.leave(cfg, id, instance.as_deref(), now))
            .collect();
        self.shared.drain(group, None);
        Ok(errors)
    }

    /// Validate, persist (waiting for the fsync, as acks=all) and apply an offset commit.
    pub async fn commit(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        entries: Vec<CommitEntry>,
    ) -> Result<(), ResponseError> {
        let now = self.now();
        let rx = {
            let mut groups = self.ready()?;
            let group = match groups.get_mut(group_id) {
                Some(g) => g,
                None if generation < 0 => groups
                    .entry(group_id.to_string())
                    .or_insert_with(|| Group::new(group_id, now)),
                None => return Err(ResponseError::IllegalGeneration),
            };
            group.validate_commit(member_id, instance_id, generation)?;
            if entries.is_empty() {
                return Ok(());
            }
            for e in &entries {
                group.outbox.push((
                    Key::Offset {
                        group: group_id.to_string(),
                        topic: e.topic.clone(),
                        partition: e.partition,
                    },
                    Some(Value::Offset(OffsetValue {
                        offset: e.offset,
                        leader_epoch: e.leader_epoch,
                        metadata: e.metadata.clone(),
                        commit_timestamp: now,
                        expire_timestamp: e.expire_timestamp.unwrap_or(-1),
                    })),
                ));
            }
            let (tx, rx) = oneshot::channel();
            self.shared.drain(group, Some(tx));
            rx
        };
        self.wait_written(rx).await?;
        let mut groups = self.shared.lock();
        if let Some(group) = groups.get_mut(group_id) {
            for e in entries {
                group.commit(
                    &e.topic,
                    e.partition,
                    Committed {
                        offset: e.offset,
                        leader_epoch: e.leader_epoch,
                        metadata: e.metadata,
                        commit_timestamp: now,
                        expire_timestamp: e.expire_timestamp,
                    },
                );
            }
        }
        Ok(())
    }

    async fn wait_written(
        &self,
        rx: oneshot::Receiver<store::WriteResult>,
    ) -> Result<(), ResponseError> {
        let written = rx
            .await
            .map_err(|_| ResponseError::CoordinatorNotAvailable)?;
        let (partition, end) = written.map_err(|_| ResponseError::KafkaStorageError)?;
        self.durability
            .wait_flushed(partition, end)
            .await
            .map_err(|_| ResponseError::KafkaStorageError)
    }

    /// Committed offsets of a group: the requested partitions (`None` offset when nothing is
    /// committed) or, when `wanted` is `None`, every committed partition.
    #[allow(clippy::type_complexity)]
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        wanted: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<(String, i32, Option<Committed>)>, ResponseError> {
        let groups = self.ready()?;
        let group = groups.get(group_id);
        let lookup =
            |t: &str, p: i32| group.and_then(|g| g.offsets.get(&(t.to_string(), p)).cloned());
        Ok(match wanted {
            Some(list) => list
                .into_iter()
                .map(|(t, p)| {
                    let c = lookup(&t, p);
                    (t, p, c)
                })
                .collect(),
            None => {
                let mut all: Vec<(String, i32, Option<Committed>)> = group
                    .map(|g| {
                        g.offsets
                            .iter()
                            .map(|((t, p), c)| (t.clone(), *p, Some(c.clone())))
                            .collect()
                    })
                    .unwrap_or_default();
                all.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
                all
            }
        })
    }

    /// Read access to one group (DescribeGroups).
    pub fn with_group<R>(
        &self,
        group_id: &str,
        f: impl FnOnce(Option<&Group>) -> R,
    ) -> Result<R, ResponseError> {
        let groups = self.ready()?;
        Ok(f(groups.get(group_id)))
    }

    /// Every group (ListGroups).
    pub fn list(&self) -> Result<Vec<Listed>, ResponseError> {
        let groups = self.ready()?;
        let mut v: Vec<Listed> = groups
            .values()
            .map(|g| Listed {
                id: g.id.clone(),
                protocol_type: if g.is_consumer_group() {
                    "consumer".to_string()
                } else {
                    g.protocol_type.clone().unwrap_or_default()
                },
                state: g.state_name(),
                group_type: if g.is_consumer_group() {
                    "consumer"
                } else {
                    "classic"
                },
            })
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(v)
    }

    /// ConsumerGroupHeartbeat (KIP-848). `partitions` gives a topic's partition count;
    /// `all_topics` lists every topic (internal ones included, as Kafka's regexes see them),
    /// asked only when a regex is in use.
    pub fn consumer_heartbeat(
        &self,
        group_id: &str,
        hb: consumer::Heartbeat,
        partitions: impl Fn(&str) -> Option<i32>,
        all_topics: impl Fn() -> BTreeSet<String>,
    ) -> Result<consumer::HeartbeatResult, ResponseError> {
        if group_id.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        let now = self.now();
        let mut groups = self.ready()?;
        // Only a join (epoch 0) creates the group or converts an empty classic one; any
        // other heartbeat (a leave too) to a missing or classic group is GROUP_ID_NOT_FOUND,
        // as in Kafka.
        let exists_as_consumer = groups.get(group_id).map(|g| g.consumer.is_some());
        if hb.member_epoch != 0 && exists_as_consumer != Some(true) {
            return Err(ResponseError::GroupIdNotFound);
        }
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id, now));
        if group.consumer.is_none() {
            if !group.is_empty() || group.state != GroupState::Empty {
                // A classic group with members: Kafka will not switch it over.
                return Err(ResponseError::GroupIdNotFound);
            }
            group.consumer = Some(consumer::ConsumerState::default());
        }
        let Some(state) = group.consumer.as_mut() else {
            return Err(ResponseError::GroupIdNotFound);
        };
        let mut topics = state.subscribed_topics();
        if let Some(s) = &hb.subscribed {
            topics.extend(s.iter().cloned());
        }
        if state.uses_regex() || matches!(hb.regex, Some(Some(_))) {
            let all = all_topics();
            topics.extend(all.iter().cloned());
            state.observe_topics(all);
        }
        let counts: HashMap<String, i32> = topics
            .into_iter()
            .filter_map(|t| partitions(&t).map(|c| (t, c)))
            .collect();
        let result = state.heartbeat(
            hb,
            &counts,
            self.shared.consumer_session_timeout_ms(group_id),
            now,
        );
        self.shared.persist_consumer(group);
        self.shared.drain(group, None);
        result
    }

    /// DeleteGroups: empty groups only; tombstones are durable before the answer.
    pub async fn delete_groups(&self, ids: &[String]) -> Vec<Result<(), ResponseError>> {
        let now = self.now();
        let mut waits = Vec::new();
        let mut results = Vec::new();
        {
            let mut groups = match self.ready() {
                Ok(g) => g,
                Err(e) => return vec![Err(e); ids.len()],
            };
            for id in ids {
                let error = match groups.get_mut(id) {
                    None => Err(ResponseError::GroupIdNotFound),
                    Some(g) if g.state == GroupState::Dead => Err(ResponseError::GroupIdNotFound),
                    Some(g) if !g.is_empty() || g.state != GroupState::Empty => {
                        Err(ResponseError::NonEmptyGroup)
                    }
                    Some(g) => {
                        g.delete(now);
                        let (tx, rx) = oneshot::channel();
                        self.shared.drain(g, Some(tx));
                        groups.remove(id);
                        waits.push((results.len(), rx));
                        Ok(())
                    }
                };
                results.push(error);
            }
        }
        for (i, rx) in waits {
            if let Err(e) = self.wait_written(rx).await {
                results[i] = Err(e);
            }
        }
        results
    }

    /// OffsetDelete: remove committed offsets of partitions the group does not consume.
    /// Returns one error per partition.
    pub async fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<Result<(), ResponseError>>, ResponseError> {
        let (mut results, rx) = {
            let mut groups = self.ready()?;
            let group = match groups.get_mut(group_id) {
                Some(g) if g.state != GroupState::Dead => g,
                _ => return Err(ResponseError::GroupIdNotFound),
            };
            if !group.is_empty() && group.protocol_type.as_deref() != Some("consumer") {
                return Err(ResponseError::NonEmptyGroup);
            }
            let subscribed = group.subscribed_topics().unwrap_or_default();
            let mut results = Vec::new();
            for (topic, partition) in partitions {
                if subscribed.contains(topic) {
                    results.push(Err(ResponseError::GroupSubscribedToTopic));
                    continue;
                }
                if group.offsets.remove(&(topic.clone(), *partition)).is_some() {
                    group.outbox.push((
                        Key::Offset {
                            group: group_id.to_string(),
                            topic: topic.clone(),
                            partition: *partition,
                        },
                        None,
                    ));
                }
                results.push(Ok(()));
            }
            let (tx, rx) = oneshot::channel();
            if group.outbox.is_empty() {
                (results, None)
            } else {
                self.shared.drain(group, Some(tx));
                (results, Some(rx))
            }
        };
        if let Some(rx) = rx {
            if let Err(e) = self.wait_written(rx).await {
                for r in results.iter_mut().filter(|r| r.is_ok()) {
                    *r = Err(e);
                }
            }
        }
        Ok(results)
    }
}

impl Shared {
    /// A KIP-848 group's session timeout: its `consumer.session.timeout.ms` config, else the
    /// broker's.
    fn consumer_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.group_configs
            .group_consumer_timeouts(group_id)
            .0
            .unwrap_or(self.settings.consumer_session_timeout_ms)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue the KIP-848 records of the group that changed (on its outbox).
    fn persist_consumer(&self, group: &mut Group) {
        consumer_store::persist(group, &|name| self.topics.get(name).map(|t| t.id));
    }

    /// Queue the group's pending records (called with the groups lock held, so the queue
    /// order is the order the state changed).
    fn drain(&self, group: &mut Group, done: Option<oneshot::Sender<store::WriteResult>>) {
        if group.outbox.is_empty() {
            if let Some(done) = done {
                let _ = done.send(Err("nothing to write".into()));
            }
            return;
        }
        let n = i32::try_from(self.partitions.len()).unwrap_or(i32::MAX);
        let job = Job {
            partition: records::partition_for(&group.id, n),
            records: std::mem::take(&mut group.outbox),
            done,
        };
        if self.jobs.send(job).is_err() {
            tracing::error!(group = %group.id, "group coordinator thread is gone; records not written");
        }
    }

    /// Install the replayed groups and open for requests.
    pub(crate) fn install_loaded(&self, replayed: BTreeMap<String, store::Replayed>) {
        let now = self.clock.now_ms();
        let mut groups = self.lock();
        for (id, r) in replayed {
            if r.metadata.is_none() && r.offsets.is_empty() && r.consumer.is_empty() {
                continue;
            }
            let mut group = Group::new(&id, now);
            if let Some(m) = r.metadata {
                group.restore(m, now);
            }
            group.consumer = consumer_store::restore(
                &r.consumer,
                &|uuid| self.topics.get_by_id(uuid).map(|t| t.name.clone()),
                &|name| self.topics.get(name).map(|t| t.partition_count()),
                self.consumer_session_timeout_ms(&id),
                now,
            );
            group.consumer_persisted = r.consumer;
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
        let mut groups = self.lock();
        for group in groups.values_mut() {
            if group.tick(&self.settings.group, now) {
                self.persist_consumer(group);
                self.drain(group, None);
            }
        }
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
