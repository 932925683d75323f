//! The shared broker context handed to every handler, and its start-up and shutdown.
//!
//! Thread safety: every field synchronises itself (registry locks, per-log locks, the
//! flusher queue); `Broker` is shared as `Arc<Broker>`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine;
use skiff_cleaner::{CleanerConfig, CleanerHandle, CleanerPool};
use skiff_config::BrokerConfig;
use skiff_log::{Clock, LogDir, LogError};
use tracing::info;

use crate::coordinator_host::{CoordinatorStorage, GroupCoordinator, TxnCoordinator};
use crate::durability::Durability;
use crate::dynamic_configs::{DynamicConfigs, Stored};
use crate::metrics::{BrokerMetrics, FsyncSite};
use crate::net::quotas::ConnectionQuotas;
use crate::producer_ids::ProducerIds;
use crate::scram_store::ScramStore;
use crate::topics::{TopicError, Topics};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("config: {0}")]
    Config(String),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Topics(#[from] TopicError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// The group or transaction coordinator could not start.
    #[error(transparent)]
    Coordinator(#[from] skiff_coordinator::StartError),
    /// The ACL file (`acls.json`) of the data dir cannot be used with an authorizer configured.
    #[error("authorizer: {0}")]
    Acls(#[from] skiff_acl::AclError),
}

pub struct Broker {
    /// The configuration as loaded at start (file, `--set`, environment). Keys that can change
    /// at runtime (dynamic broker configs) must be read through [`Broker::live_config`].
    pub config: Arc<BrokerConfig>,
    /// Dynamic broker and group configs (`dynamic-configs.json`) and the live configuration.
    pub dynamic: Arc<DynamicConfigs>,
    pub cluster_id: String,
    pub topics: Arc<Topics>,
    pub durability: Arc<Durability>,
    /// Request, connection and fsync metrics (atomics; rendered on scrape).
    pub metrics: Arc<BrokerMetrics>,
    /// `max.connections` and the per-IP limits, shared by every listener.
    pub connections: Arc<ConnectionQuotas>,
    /// The log cleaner threads; `None` once stopped at shutdown.
    cleaner: Mutex<Option<CleanerPool>>,
    /// The committed offsets the cleaner reads for `skiff.tombstone.wait.for.consumers`
    /// (`compaction.rs`), set once the broker exists and handed to every cleaner it starts.
    pub(crate) group_offsets: std::sync::OnceLock<Arc<dyn skiff_cleaner::GroupOffsetsSource>>,
    pub log_dir: Arc<LogDir>,
    pub clock: Arc<dyn Clock>,
    /// InitProducerId's id allocator (`producer-ids` in the log dir).
    pub producer_ids: ProducerIds,
    /// Consumer groups and committed offsets (`__consumer_offsets`).
    pub coordinator: GroupCoordinator,
    /// Transactions (`__transaction_state`).
    pub txn: TxnCoordinator,
    /// SCRAM credentials (`scram-credentials.json`), managed by AlterUserScramCredentials.
    pub scram: Arc<ScramStore>,
    /// The SASL listeners' mechanisms and limits, by listener name (see [`crate::sasl_setup`]).
    pub sasl: std::collections::HashMap<String, Arc<crate::sasl_setup::SaslListener>>,
    /// Client quotas (`client-quotas.json`), managed by AlterClientQuotas.
    pub quota_store: Arc<crate::quotas::store::QuotaStore>,
    /// Client quota enforcement (rates, throttle times), fed by [`Broker::quota_store`].
    pub quotas: Arc<crate::quotas::QuotaManager>,
    /// The ACLs and authorizer when `authorizer.class.name` is set (see [`crate::authz`]).
    pub acls: Option<Arc<skiff_acl::Acls>>,
    /// Share partitions and share sessions (KIP-932; `__share_group_state`).
    pub share: Arc<crate::share::ShareManager>,
    /// Fetch sessions (KIP-227), sized by `max.incremental.fetch.session.cache.slots`. A std
    /// `Mutex`: held for in-memory session updates only, never across a read or an `.await`.
    pub fetch_sessions: Mutex<crate::fetch_sessions::FetchSessions>,
    /// Appends running on worker threads now ([`crate::dispatch::quick_or_blocking`]).
    pub quick_appends: std::sync::atomic::AtomicUsize,
    /// The streams group coordinator (KIP-1071), installed once when it starts; unset, the
    /// streams group APIs answer as Kafka's do with streams groups disabled. See
    /// [`crate::streams_groups`].
    pub streams_groups: std::sync::OnceLock<Arc<dyn crate::streams_groups::StreamsGroups>>,
}

/// The ACLs when `authorizer.class.name` names Kafka's StandardAuthorizer; `None` when it is
/// empty; any other class stops the start, and so does an unusable `acls.json`.
fn open_acls(
    config: &BrokerConfig,
    data_dir: &std::path::Path,
) -> Result<Option<Arc<skiff_acl::Acls>>, StartError> {
    let class = config.authorizer_class_name.trim();
    if class.is_empty() {
        return Ok(None);
    }
    if class != skiff_acl::authorizer::STANDARD_AUTHORIZER_CLASS {
        return Err(StartError::Config(format!(
            "authorizer.class.name: unsupported authorizer `{class}` (Skiff implements only {})",
            skiff_acl::authorizer::STANDARD_AUTHORIZER_CLASS
        )));
    }
    let auth_config = skiff_acl::AuthorizerConfig::parse(
        Some(&config.super_users),
        Some(if config.allow_everyone_if_no_acl_found {
            "true"
        } else {
            "false"
        }),
    )?;
    let acls = skiff_acl::Acls::open(data_dir, auth_config)?;
    info!(
        acls = acls.snapshot().len(),
        "authorizer enabled (StandardAuthorizer semantics)"
    );
    Ok(Some(Arc::new(acls)))
}

/// Kafka's `meta.properties`, so the data dir says which cluster and node it belongs to.
const META_FILE: &str = "meta.properties";

impl Broker {
    /// Open (and recover) the data dir, load the topics, apply the `[[topic]]` entries, with
    /// the wall clock; [`Broker::builder`] for anything else.
    pub fn start(config: BrokerConfig) -> Result<Arc<Broker>, StartError> {
        Broker::builder(config).start()
    }

    /// [`Broker::start`] with `clock` as the time source (called by the builder).
    pub(crate) fn open(
        config: BrokerConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Broker>, StartError> {
        let started = std::time::Instant::now();
        let config = Arc::new(config);
        let connections = ConnectionQuotas::from_config(&config).map_err(StartError::Config)?;
        crate::open_files::configure(config.skiff_log_open_files_max);
        let root: PathBuf = config
            .log_dirs
            .first()
            .cloned()
            .ok_or_else(|| StartError::Config("log.dirs is empty".into()))?;
        let (log_dir, clean) = LogDir::open(&root)?;
        let log_dir = Arc::new(log_dir);
        let cluster_id = load_or_create_meta(&log_dir, &config)?;
        let acls = open_acls(&config, log_dir.root())?;
        let dynamic = Arc::new(DynamicConfigs::open(log_dir.root(), config.clone())?);
        let scram = Arc::new(ScramStore::open(log_dir.root())?);
        crate::sasl_setup::bootstrap_scram_users(&config, &scram)?;
        let sasl = crate::sasl_setup::sasl_listeners(&config, &scram)?;
        let quota_store = Arc::new(crate::quotas::store::QuotaStore::open(log_dir.root())?);
        let quotas = Arc::new(crate::quotas::QuotaManager::new(
            quota_store.snapshot(),
            crate::quotas::rate::Windows::new(
                config.quota_window_num,
                config.quota_window_size_seconds,
            ),
            crate::quotas::rate::Windows::new(
                config.controller_quota_window_num,
                config.controller_quota_window_size_seconds,
            ),
        ));
        let live = dynamic.live();
        let topics = Arc::new(Topics::load(
            log_dir.clone(),
            live.clone(),
            clock.clone(),
            clean,
        )?);
        let cleaner = CleanerPool::start(
            cleaner_config(&live),
            topics.clone(),
            log_dir.clone(),
            clock.clone(),
        );
        let metrics = Arc::new(BrokerMetrics::default());
        let durability =
            Arc::new(
                Durability::start(metrics.clone()).map_err(|e| StartError::Io {
                    context: "starting the flusher thread".into(),
                    source: e,
                })?,
            );
        let storage = Arc::new(CoordinatorStorage::new(topics.clone(), durability.clone()));
        let coordinator = GroupCoordinator::start(
            storage.clone(),
            topics.clone(),
            &config,
            dynamic.clone(),
            clock.clone(),
        )?;
        let producer_ids = ProducerIds::open(log_dir.root())?;
        let txn = TxnCoordinator::start(storage.clone(), &config, clock.clone())?;
        // The share state topic is created on the first share fetch; when an earlier run
        // created it, it is replayed now, with the other coordinators' topics, so the first
        // share fetch after a restart does not wait for the replay.
        let share = Arc::new(crate::share::ShareManager::new(
            storage.clone(),
            topics.clone(),
            clock.clone(),
            &config,
        ));
        share.set_settings(crate::share::settings::from_group_configs(dynamic.clone()));
        share.open_existing();
        let fetch_sessions = Mutex::new(crate::fetch_sessions::FetchSessions::new(
            usize::try_from(config.max_incremental_fetch_session_cache_slots).unwrap_or(0),
        ));
        let broker = Arc::new(Broker {
            fetch_sessions,
            quick_appends: std::sync::atomic::AtomicUsize::new(0),
            streams_groups: std::sync::OnceLock::new(),
            scram,
            sasl,
            quota_store,
            quotas,
            producer_ids,
            coordinator,
            txn,
            config,
            dynamic,
            cluster_id,
            topics,
            durability,
            metrics,
            connections,
            cleaner: Mutex::new(Some(cleaner)),
            group_offsets: std::sync::OnceLock::new(),
            log_dir,
            clock,
            acls,
            share,
        });
        // Members leaving or expiring release their records; deleted groups drop share state.
        broker
            .coordinator
            .set_share_listener(crate::share::listener::GroupListener::new(&broker.share));
        // StreamsGroupHeartbeat and StreamsGroupDescribe reach the group coordinator.
        let streams = crate::streams_service::StreamsGroupService::new(&broker);
        if broker.streams_groups.set(Arc::new(streams)).is_err() {
            tracing::warn!("the streams group service was already installed");
        }
        broker.connect_cleaner_to_groups();
        broker.apply_configured_topics()?;
        skiff_coordinator::txn::spawn(&broker).map_err(|e| StartError::Io {
            context: "starting the transaction coordinator thread".into(),
            source: e,
        })?;
        // Every log is open: key indexes may now be built in the background.
        broker.topics.key_indexes.start_builds();
        // The one INFO line of the load (each log's own line is DEBUG).
        let partitions = broker.topics.all_partitions();
        let segments: usize = partitions.iter().map(|p| p.log.segment_count()).sum();
        info!(
            topics = broker.topics.list().len(),
            partitions = partitions.len(),
            segments,
            clean_start = clean,
            elapsed_ms = started.elapsed().as_millis() as u64,
            cluster_id = %broker.cluster_id,
            "storage ready"
        );
        Ok(broker)
    }

    /// `[[topic]]` entries: create missing topics, update configs and grow partitions.
    fn apply_configured_topics(&self) -> Result<(), StartError> {
        for spec in &self.config.topics {
            match self.topics.get(&spec.name) {
                None => {
                    self.topics
                        .create(&spec.name, spec.partitions, spec.config.clone(), false)?;
                }
                Some(topic) => {
                    if topic.overrides() != spec.config {
                        self.topics
                            .set_overrides(&spec.name, spec.config.clone(), false)?;
                    }
                    if spec.partitions > topic.partition_count() {
                        self.topics
                            .add_partitions(&spec.name, spec.partitions, false)?;
                    } else if spec.partitions < topic.partition_count() {
                        tracing::warn!(
                            topic = %spec.name,
                            configured = spec.partitions,
                            existing = topic.partition_count(),
                            "partitions cannot be removed from a topic; keeping the existing count"
                        );
                    }
                }
            }
        }
        Ok(())
    }

    pub fn node_id(&self) -> i32 {
        self.config.node_id
    }

    /// Compaction facts of one partition (None when the cleaner has not looked at it yet).
    pub fn compaction_status(
        &self,
        topic: &str,
        partition: i32,
    ) -> Option<skiff_cleaner::CompactionStatus> {
        self.with_cleaner(|c| c.status(topic, partition)).flatten()
    }

    /// Compaction facts of every partition the cleaner has planned, by topic and partition.
    pub fn compaction_statuses(&self) -> Vec<(String, i32, skiff_cleaner::CompactionStatus)> {
        self.with_cleaner(CleanerPool::statuses).unwrap_or_default()
    }

    /// Number of running log cleaner threads (0 when disabled or stopped).
    pub fn cleaner_thread_count(&self) -> usize {
        self.with_cleaner(CleanerPool::thread_count).unwrap_or(0)
    }

    fn with_cleaner<T>(&self, f: impl FnOnce(&CleanerPool) -> T) -> Option<T> {
        let cleaner = self.cleaner.lock().unwrap_or_else(|e| e.into_inner());
        cleaner.as_ref().map(f)
    }

    /// A handle on the cleaner, cloned out so that waiting for a pass to stop never holds
    /// `self.cleaner` (which `/metrics`, other deletes and shutdown take).
    pub(crate) fn cleaner_handle(&self) -> Option<CleanerHandle> {
        self.with_cleaner(CleanerPool::handle)
    }

    /// Delete a topic, first stopping any cleaning pass on its partitions and keeping them
    /// paused (Kafka's `abortAndPauseCleaning`) until the log is gone; then the cleaner forgets
    /// them (including an uncleanable mark), so a re-created topic starts afresh. Its share
    /// partitions and their stored state go too.
    pub fn delete_topic(&self, name: &str) -> Result<uuid::Uuid, TopicError> {
        let cleaner = self.cleaner_handle();
        let indexes: Vec<i32> = self
            .topics
            .get(name)
            .map(|t| t.partitions().iter().map(|p| p.index).collect())
            .unwrap_or_default();
        if let Some(c) = &cleaner {
            for &i in &indexes {
                c.abort_and_pause(name, i);
            }
        }
        let result = self.topics.delete(name);
        if let Ok(id) = &result {
            // Share partitions of the topic go with it (their state would never be read).
            self.share.topic_deleted(*id);
        }
        if let Some(c) = &cleaner {
            for &i in &indexes {
                if result.is_ok() {
                    c.forget(name, i);
                } else {
                    c.resume(name, i);
                }
            }
        }
        result
    }

    /// Replace a topic's config overrides. A pass running under the old `cleanup.policy`
    /// is aborted safely first (its half-written files are dropped); the cleaner then
    /// re-plans with the new settings.
    pub fn set_topic_overrides(
        &self,
        name: &str,
        overrides: std::collections::BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let cleaner = self.cleaner_handle();
        let indexes: Vec<i32> = match (&cleaner, validate_only) {
            (Some(_), false) => self
                .topics
                .get(name)
                .map(|t| t.partitions().iter().map(|p| p.index).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        if let Some(c) = &cleaner {
            for &i in &indexes {
                c.abort_and_pause(name, i);
            }
        }
        let result = self.topics.set_overrides(name, overrides, validate_only);
        if let Some(c) = &cleaner {
            for &i in &indexes {
                c.resume(name, i);
            }
            c.wake();
        }
        result
    }

    /// The configuration in force: the static one with the dynamic broker configs applied.
    pub fn live_config(&self) -> Arc<BrokerConfig> {
        self.dynamic.live()
    }

    /// Change this broker's (`per_broker`) or the cluster-default dynamic configs: `next` turns
    /// the current set into the new one; the new set is validated (names, values, the
    /// effective configuration, Kafka's cleaner-thread bounds, every topic's config over the
    /// new defaults), written durably, then applied live: topics take their new defaults and
    /// the log cleaner is restarted when one of its settings changed (as Kafka's
    /// `LogCleaner.reconfigure` does).
    pub fn alter_broker_configs<E>(
        &self,
        per_broker: bool,
        validate_only: bool,
        next: impl FnOnce(
            &std::collections::BTreeMap<String, String>,
        ) -> Result<std::collections::BTreeMap<String, String>, E>,
        refused: impl Fn(skiff_config::DynamicRefusal) -> E,
        failed: impl Fn(String) -> E,
    ) -> Result<(), E> {
        let _update = self.dynamic.lock_updates();
        let stored = self.dynamic.stored();
        let current = if per_broker {
            &stored.broker
        } else {
            &stored.default
        };
        let layer = next(current)?;
        skiff_config::validate_dynamic_broker(&layer).map_err(&refused)?;
        let mut new = (*stored).clone();
        if per_broker {
            new.broker = layer;
        } else {
            new.default = layer;
        }
        let old_live = self.dynamic.live();
        let live =
            skiff_config::with_dynamic(self.dynamic.static_config(), &new.default, &new.broker)
                .map_err(&refused)?;
        skiff_config::check_reconfiguration(&old_live, &live).map_err(&refused)?;
        crate::net::tls::check_reconfiguration(&old_live, &live)
            .map_err(|m| refused(skiff_config::DynamicRefusal::Request(m)))?;
        let live = Arc::new(live);
        self.topics
            .set_broker_config(live.clone(), true)
            .map_err(|e| failed(e.to_string()))?;
        if validate_only {
            return Ok(());
        }
        self.dynamic
            .commit(new, Some(live.clone()))
            .map_err(|e| failed(e.to_string()))?;
        self.topics
            .set_broker_config(live.clone(), false)
            .map_err(|e| failed(e.to_string()))?;
        if cleaner_config(&old_live) != cleaner_config(&live) {
            let mut cleaner = self.cleaner.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(old) = cleaner.take() {
                old.stop();
                let pool = CleanerPool::start(
                    cleaner_config(&live),
                    self.topics.clone(),
                    self.log_dir.clone(),
                    self.clock.clone(),
                );
                if let Some(groups) = self.group_offsets.get() {
                    pool.handle().set_group_offsets(groups.clone());
                }
                *cleaner = Some(pool);
                info!(
                    threads = live.log_cleaner_threads,
                    "log cleaner restarted with new dynamic settings"
                );
            }
        } else {
            self.with_cleaner(CleanerPool::wake);
        }
        Ok(())
    }

    /// Replace a group's configs (already validated by the caller) durably.
    pub fn set_group_configs(
        &self,
        group: &str,
        configs: std::collections::BTreeMap<String, String>,
    ) -> Result<(), skiff_log::LogError> {
        let _update = self.dynamic.lock_updates();
        let mut new: Stored = (*self.dynamic.stored()).clone();
        if configs.is_empty() {
            new.groups.remove(group);
        } else {
            new.groups.insert(group.to_string(), configs);
        }
        self.dynamic.commit(new, None)
    }

    /// Stop every thread that writes to the logs, then flush everything, write checkpoints
    /// and the clean-shutdown marker. Call it once the listeners have stopped and their
    /// connections ended (`serve_listener` returned), so no request appends meanwhile.
    ///
    /// Order: the share lock-expiry timer, the transaction coordinator (it may hand work to the group coordinator), the
    /// group coordinator (it writes the jobs already queued first), the cleaner, the flusher;
    /// each is joined before the next is stopped, and only then are the logs closed. The
    /// housekeeping thread belongs to the caller and must be stopped before this.
    pub fn shutdown(&self) -> Result<(), LogError> {
        self.share.stop();
        self.txn.stop();
        self.coordinator.stop();
        let cleaner = self
            .cleaner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(cleaner) = cleaner {
            cleaner.stop();
        }
        self.durability.stop();
        let partitions = self.topics.all_partitions();
        for partition in &partitions {
            partition.log.close()?;
        }
        self.write_checkpoints()?;
        self.log_dir.mark_clean_shutdown()?;
        info!("clean shutdown complete");
        Ok(())
    }

    /// Record recovery points and log start offsets so a crash scans only the tail.
    pub fn write_checkpoints(&self) -> Result<(), LogError> {
        let partitions = self.topics.all_partitions();
        let entries: Vec<(String, i32, &skiff_log::Log)> = partitions
            .iter()
            .map(|p| (p.topic.clone(), p.index, p.log.as_ref()))
            .collect();
        let started = std::time::Instant::now();
        let result = self.log_dir.write_checkpoints(&entries);
        self.metrics
            .record_fsync(FsyncSite::Checkpoint, started.elapsed());
        result
    }
}

/// The cleaner pool's settings from the broker's `log.cleaner.*` keys.
fn cleaner_config(config: &BrokerConfig) -> CleanerConfig {
    CleanerConfig {
        enable: config.log_cleaner_enable,
        threads: usize::try_from(config.log_cleaner_threads).unwrap_or(0),
        dedupe_buffer_size: u64::try_from(config.log_cleaner_dedupe_buffer_size).unwrap_or(0),
        io_buffer_size: usize::try_from(config.log_cleaner_io_buffer_size).unwrap_or(0),
        io_buffer_load_factor: config.log_cleaner_io_buffer_load_factor,
        backoff_ms: u64::try_from(config.log_cleaner_backoff_ms).unwrap_or(0),
        io_max_bytes_per_second: config.log_cleaner_io_max_bytes_per_second,
    }
}

/// Read the cluster id from `meta.properties`, or create the file with a new one (Kafka
/// formats cluster ids as URL-safe base64 of a random UUID, 22 characters).
fn load_or_create_meta(log_dir: &LogDir, config: &BrokerConfig) -> Result<String, StartError> {
    let path = log_dir.root().join(META_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let mut cluster_id = None;
            for line in text.lines() {
                if let Some((key, value)) = line.split_once('=') {
                    match key.trim() {
                        "cluster.id" => cluster_id = Some(value.trim().to_string()),
                        "node.id" if value.trim() != config.node_id.to_string() => {
                            return Err(StartError::Config(format!(
                                "{} belongs to node.id {} but node.id is {}",
                                path.display(),
                                value.trim(),
                                config.node_id
                            )))
                        }
                        _ => {}
                    }
                }
            }
            cluster_id
                .ok_or_else(|| StartError::Config(format!("{} has no cluster.id", path.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let cluster_id = config.cluster_id.clone().unwrap_or_else(|| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(uuid::Uuid::new_v4().as_bytes())
            });
            let text = format!(
                "version=1\ncluster.id={cluster_id}\nnode.id={}\n",
                config.node_id
            );
            skiff_log::write_atomically(&path, text.as_bytes())?;
            Ok(cluster_id)
        }
        Err(e) => Err(StartError::Io {
            context: format!("reading {}", path.display()),
            source: e,
        }),
    }
}
