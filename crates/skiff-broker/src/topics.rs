//! The topic registry: names, topic ids, partition counts and per-topic config overrides.
//!
//! Persisted as `skiff-topics.json` in the log dir, always written atomically (temp, fsync,
//! rename, fsync dir). Ordering makes crashes harmless: a new topic is recorded before its
//! A topic is recorded only after its partition directories exist and is forgotten before
//! they are removed, so a directory the registry does not list is the leftover of an
//! interrupted create or delete (never acknowledged data) and is removed at start.
//!
//! Thread safety: lookups take a std `RwLock` briefly; structural changes are serialised by
//! the `change` mutex and do blocking file I/O, so callers run them on blocking threads.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use serde::{Deserialize, Serialize};
use skiff_config::{BrokerConfig, TopicConfigError};
use skiff_log::{Clock, LogConfig, LogDir, LogError};
use tracing::{info, warn};
use uuid::Uuid;

use crate::key_indexes::KeyIndexes;
use crate::partition::Partition;

const REGISTRY_FILE: &str = "skiff-topics.json";
/// Kafka's limit: a topic name becomes a directory name plus a partition suffix.
const MAX_TOPIC_NAME_LEN: usize = 249;

#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error("{0}")]
    InvalidName(String),
    #[error("Topic '{0}' already exists.")]
    AlreadyExists(String),
    #[error("This server does not host this topic: {0}")]
    Unknown(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{}", .0.message)]
    InvalidConfig(TopicConfigError),
    #[error(transparent)]
    Storage(#[from] LogError),
    #[error("topic registry {path}: {message}")]
    Registry { path: PathBuf, message: String },
}

pub struct Topic {
    pub name: String,
    pub id: Uuid,
    overrides: RwLock<BTreeMap<String, String>>,
    partitions: RwLock<Vec<Arc<Partition>>>,
}

impl Topic {
    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    pub fn partition(&self, index: i32) -> Option<Arc<Partition>> {
        let partitions = self.partitions.read().unwrap_or_else(|e| e.into_inner());
        usize::try_from(index)
            .ok()
            .and_then(|i| partitions.get(i).cloned())
    }
    pub fn partition_count(&self) -> i32 {
        let n = self
            .partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        i32::try_from(n).unwrap_or(i32::MAX)
    }
    pub fn overrides(&self) -> BTreeMap<String, String> {
        self.overrides
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    /// Kafka marks only its own bookkeeping topics internal (`Topic.INTERNAL_TOPICS`, which
    /// includes the share state topic).
    pub fn is_internal(&self) -> bool {
        is_internal_name(&self.name)
    }
}

/// Whether `name` is one of Kafka's own bookkeeping topics (`Topic.INTERNAL_TOPICS`).
pub fn is_internal_name(name: &str) -> bool {
    matches!(
        name,
        "__consumer_offsets" | "__transaction_state" | "__share_group_state"
    )
}

#[derive(Serialize, Deserialize)]
struct RegistryFile {
    version: u32,
    topics: Vec<TopicRecord>,
}

#[derive(Serialize, Deserialize)]
struct TopicRecord {
    name: String,
    id: Uuid,
    partitions: i32,
    configs: BTreeMap<String, String>,
}

pub struct Topics {
    map: RwLock<BTreeMap<String, Arc<Topic>>>,
    change: Mutex<()>,
    log_dir: Arc<LogDir>,
    /// The broker configuration in force (its `log` defaults are the topics' defaults);
    /// replaced by dynamic broker config changes (`set_broker_config`).
    config: RwLock<Arc<BrokerConfig>>,
    clock: Arc<dyn Clock>,
    clean_start: bool,
    /// Key indexes of partitions with `skiff.key.index.enable` (`key_indexes.rs`).
    pub key_indexes: KeyIndexes,
}

impl Topics {
    /// Open every known partition log (recovering it when the last stop was not clean) and
    /// remove partition directories left behind by an interrupted delete.
    pub fn load(
        log_dir: Arc<LogDir>,
        config: Arc<BrokerConfig>,
        clock: Arc<dyn Clock>,
        clean_start: bool,
    ) -> Result<Topics, TopicError> {
        let topics = Topics {
            map: RwLock::new(BTreeMap::new()),
            change: Mutex::new(()),
            log_dir,
            key_indexes: KeyIndexes::new(
                config.skiff_key_index_memory_bytes,
                config.skiff_key_index_build_bytes_per_second,
            ),
            config: RwLock::new(config),
            clock,
            clean_start,
        };
        let path = topics.registry_path();
        let records = match std::fs::read(&path) {
            Ok(bytes) => {
                let file: RegistryFile =
                    serde_json::from_slice(&bytes).map_err(|e| TopicError::Registry {
                        path: path.clone(),
                        message: e.to_string(),
                    })?;
                Some(file.topics)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(TopicError::Registry {
                    path,
                    message: e.to_string(),
                })
            }
        };
        let on_disk = topics.log_dir.list_partition_dirs()?;
        let Some(records) = records else {
            if let Some((_, _, dir)) = on_disk.first() {
                return Err(TopicError::Registry {
                    path,
                    message: format!(
                        "missing, but partition directories exist (e.g. {}); refusing to guess their topics",
                        dir.display()
                    ),
                });
            }
            // Record the (empty) registry now, so that from here on a partition directory it
            // does not list is always a leftover that is safe to remove.
            topics.persist()?;
            return Ok(topics);
        };
        let mut jobs = Vec::new();
        for record in &records {
            let log_config = topics.resolve(&record.configs)?;
            for index in 0..record.partitions {
                jobs.push((record.name.as_str(), index, log_config.clone()));
            }
        }
        let threads = usize::try_from(config_threads(&topics)).unwrap_or(1);
        let mut opened = topics.open_in_parallel(jobs, threads)?.into_iter();
        for record in records {
            let partitions: Vec<Arc<Partition>> = opened
                .by_ref()
                .take(usize::try_from(record.partitions).unwrap_or(0))
                .collect();
            let topic = Topic {
                name: record.name.clone(),
                id: record.id,
                overrides: RwLock::new(record.configs),
                partitions: RwLock::new(partitions),
            };
            topics.write_map().insert(record.name, Arc::new(topic));
        }
        for (name, index, dir) in on_disk {
            let known = topics
                .get(&name)
                .is_some_and(|t| index < t.partition_count());
            if !known {
                warn!(dir = %dir.display(), "removing partition directory of a deleted topic");
                std::fs::remove_dir_all(&dir).map_err(|e| TopicError::Registry {
                    path: dir.clone(),
                    message: format!("cannot remove leftover directory: {e}"),
                })?;
            }
        }
        Ok(topics)
    }

    fn registry_path(&self) -> PathBuf {
        self.log_dir.root().join(REGISTRY_FILE)
    }

    fn write_map(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<Topic>>> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }

    fn resolve(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig, TopicError> {
        let config = self
            .config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        skiff_config::resolve_topic_config(overrides, &config).map_err(TopicError::InvalidConfig)
    }

    /// Opens the logs of `jobs` (topic, partition, config) on up to `threads` threads, as
    /// Kafka's `num.recovery.threads.per.data.dir` does; the partitions come back in the
    /// order of `jobs`. The first failure is returned once every thread has stopped.
    fn open_in_parallel(
        &self,
        jobs: Vec<(&str, i32, LogConfig)>,
        threads: usize,
    ) -> Result<Vec<Arc<Partition>>, TopicError> {
        let failed = std::sync::atomic::AtomicBool::new(false);
        // `None`: skipped because another partition failed first.
        let opened = skiff_log::parallel::map_in_parallel(
            &jobs,
            threads,
            "skiff-open",
            |(topic, index, config)| {
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    return None;
                }
                let r = self.open_partition(topic, *index, config.clone());
                if r.is_err() {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Some(r)
            },
        );
        let mut partitions = Vec::with_capacity(opened.len());
        let mut first_error = None;
        for slot in opened {
            match slot {
                Some(Some(Ok(p))) => partitions.push(p),
                Some(Some(Err(e))) => {
                    first_error.get_or_insert(e);
                }
                Some(None) => {}
                None => {
                    first_error.get_or_insert(TopicError::Registry {
                        path: self.registry_path(),
                        message: "a partition was not opened (its opener thread panicked)".into(),
                    });
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(partitions),
        }
    }

    /// Creates the partitions `indexes` of `topic`; when one fails, the ones made before it
    /// are closed and their directories removed, so a refused request leaves nothing behind.
    fn open_partitions(
        &self,
        topic: &str,
        indexes: std::ops::Range<i32>,
        config: &LogConfig,
    ) -> Result<Vec<Arc<Partition>>, TopicError> {
        let mut opened = Vec::new();
        for index in indexes {
            match self.open_partition(topic, index, config.clone()) {
                Ok(p) => opened.push(p),
                Err(e) => {
                    for made in opened {
                        made.log.disable_key_index();
                        let dir = made.log.dir().to_path_buf();
                        let removed = made.log.close().map_err(|e| e.to_string()).and_then(|()| {
                            std::fs::remove_dir_all(&dir).map_err(|e| e.to_string())
                        });
                        if let Err(why) = removed {
                            warn!(dir = %dir.display(), error = %why,
                                "could not remove a partition of a failed creation; the next start removes it");
                        }
                    }
                    return Err(e);
                }
            }
        }
        Ok(opened)
    }

    fn open_partition(
        &self,
        topic: &str,
        index: i32,
        config: LogConfig,
    ) -> Result<Arc<Partition>, TopicError> {
        let log =
            self.log_dir
                .open_log(topic, index, config, self.clock.clone(), self.clean_start)?;
        let partition = Arc::new(Partition::new(topic.to_string(), index, log));
        self.key_indexes.sync(&partition.log);
        Ok(partition)
    }

    pub fn get(&self, name: &str) -> Option<Arc<Topic>> {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    pub fn get_by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        map.values().find(|t| t.id == id).cloned()
    }

    pub fn list(&self) -> Vec<Arc<Topic>> {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    pub fn all_partitions(&self) -> Vec<Arc<Partition>> {
        self.list().iter().flat_map(|t| t.partitions()).collect()
    }

    /// Create a topic (or only validate the request when `validate_only`).
    pub fn create(
        &self,
        name: &str,
        partitions: i32,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<Topic>, TopicError> {
        let _change = self.change.lock().unwrap_or_else(|e| e.into_inner());
        validate_topic_name(name)?;
        if self.get(name).is_some() {
            return Err(TopicError::AlreadyExists(name.to_string()));
        }
        let collision_key = name.replace('.', "_");
        if let Some(other) = self
            .list()
            .iter()
            .find(|t| t.name.replace('.', "_") == collision_key)
        {
            return Err(TopicError::InvalidName(format!(
                "Topic '{name}' collides with existing topic: {}",
                other.name
            )));
        }
        if partitions < 1 {
            return Err(TopicError::InvalidPartitions(
                "Number of partitions was set to an invalid non-positive value.".to_string(),
            ));
        }
        let log_config = self.resolve(&overrides)?;
        if validate_only {
            return Ok(Arc::new(Topic {
                name: name.to_string(),
                id: Uuid::new_v4(),
                overrides: RwLock::new(overrides),
                partitions: RwLock::new(Vec::new()),
            }));
        }
        let opened = self.open_partitions(name, 0..partitions, &log_config)?;
        let topic = Arc::new(Topic {
            name: name.to_string(),
            id: Uuid::new_v4(),
            overrides: RwLock::new(overrides),
            partitions: RwLock::new(opened),
        });
        self.write_map().insert(name.to_string(), topic.clone());
        if let Err(e) = self.persist() {
            // Not recorded: the directories just made are leftovers that the next start removes.
            self.write_map().remove(name);
            return Err(e);
        }
        info!(topic = name, partitions, id = %topic.id, "created topic");
        Ok(topic)
    }

    /// Delete a topic: forget it durably, then remove its partition directories.
    pub fn delete(&self, name: &str) -> Result<Uuid, TopicError> {
        let _change = self.change.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .write_map()
            .remove(name)
            .ok_or_else(|| TopicError::Unknown(name.to_string()))?;
        if let Err(e) = self.persist() {
            self.write_map().insert(name.to_string(), topic);
            return Err(e);
        }
        let partitions =
            std::mem::take(&mut *topic.partitions.write().unwrap_or_else(|e| e.into_inner()));
        for partition in partitions {
            // Parked fetches or a cleaner may still hold the log; the files go either way
            // (open handles stay valid on Linux until they are dropped).
            partition.wake_all();
            partition.log.disable_key_index();
            partition.log.close()?;
            let dir = partition.log.dir().to_path_buf();
            std::fs::remove_dir_all(&dir).map_err(|e| TopicError::Registry {
                path: dir.clone(),
                message: format!("cannot remove directory: {e}"),
            })?;
        }
        info!(topic = name, "deleted topic");
        Ok(topic.id)
    }

    /// Grow a topic to `total` partitions.
    pub fn add_partitions(
        &self,
        name: &str,
        total: i32,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let _change = self.change.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .get(name)
            .ok_or_else(|| TopicError::Unknown(name.to_string()))?;
        let current = topic.partition_count();
        if total == current {
            return Err(TopicError::InvalidPartitions(format!(
                "Topic already has {current} partition(s)."
            )));
        }
        if total < current {
            return Err(TopicError::InvalidPartitions(format!(
                "The topic {name} currently has {current} partition(s); {total} would not be an increase."
            )));
        }
        if validate_only {
            return Ok(());
        }
        let log_config = self.resolve(&topic.overrides())?;
        let new = self.open_partitions(name, current..total, &log_config)?;
        topic
            .partitions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .extend(new);
        if let Err(e) = self.persist() {
            topic
                .partitions
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .truncate(current as usize);
            return Err(e);
        }
        info!(topic = name, partitions = total, "added partitions");
        Ok(())
    }

    /// Replace a topic's config overrides (validated first) and apply them to its logs.
    pub fn set_overrides(
        &self,
        name: &str,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let _change = self.change.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .get(name)
            .ok_or_else(|| TopicError::Unknown(name.to_string()))?;
        let log_config = self.resolve(&overrides)?;
        if validate_only {
            return Ok(());
        }
        let previous = std::mem::replace(
            &mut *topic.overrides.write().unwrap_or_else(|e| e.into_inner()),
            overrides,
        );
        if let Err(e) = self.persist() {
            *topic.overrides.write().unwrap_or_else(|e| e.into_inner()) = previous;
            return Err(e);
        }
        for partition in topic.partitions() {
            partition.log.update_config(log_config.clone());
            self.key_indexes.sync(&partition.log);
        }
        Ok(())
    }

    /// Dynamic broker configs changed: re-resolve every topic's log config over the new broker
    /// defaults (topics without an override of a key follow the new default at once). All
    /// topics are checked before any is changed; `validate_only` stops after the check.
    pub fn set_broker_config(
        &self,
        config: Arc<BrokerConfig>,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let _change = self.change.lock().unwrap_or_else(|e| e.into_inner());
        let mut resolved = Vec::new();
        for topic in self.list() {
            let log_config = skiff_config::resolve_topic_config(&topic.overrides(), &config)
                .map_err(TopicError::InvalidConfig)?;
            resolved.push((topic, log_config));
        }
        if validate_only {
            return Ok(());
        }
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
        for (topic, log_config) in resolved {
            for partition in topic.partitions() {
                partition.log.update_config(log_config.clone());
                self.key_indexes.sync(&partition.log);
            }
        }
        Ok(())
    }

    fn persist(&self) -> Result<(), TopicError> {
        let topics = self
            .list()
            .iter()
            .map(|t| TopicRecord {
                name: t.name.clone(),
                id: t.id,
                partitions: t.partition_count(),
                configs: t.overrides(),
            })
            .collect();
        let file = RegistryFile { version: 1, topics };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| TopicError::Registry {
            path: self.registry_path(),
            message: e.to_string(),
        })?;
        skiff_log::write_atomically(&self.registry_path(), &bytes)?;
        Ok(())
    }
}

/// The cleaner asks for the current logs on every loop.
impl skiff_cleaner::LogSource for Topics {
    fn logs(&self) -> Vec<(String, i32, Arc<skiff_log::Log>)> {
        self.all_partitions()
            .into_iter()
            .map(|p| (p.topic.clone(), p.index, p.log.clone()))
            .collect()
    }

    fn appended(&self, topic: &str, partition: i32) {
        if let Some(p) = self.get(topic).and_then(|t| t.partition(partition)) {
            p.wake_all();
        }
    }
}

/// Kafka's topic name rules: 1..=249 chars of `[a-zA-Z0-9._-]`, not "." or "..". The
/// messages are Kafka's (`Topic name is invalid: <reason>`), so clients see the same text.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let reason = if name.is_empty() {
        "the empty string is not allowed".to_string()
    } else if name == "." || name == ".." {
        format!("'{name}' is not allowed")
    } else if name.len() > MAX_TOPIC_NAME_LEN {
        format!("the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LEN}")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
    {
        format!("'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
    } else {
        return Ok(());
    };
    Err(TopicError::InvalidName(format!(
        "Topic name is invalid: {reason}"
    )))
}

/// `num.recovery.threads.per.data.dir` of the broker's current config.
fn config_threads(topics: &Topics) -> i32 {
    topics
        .config
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .num_recovery_threads_per_data_dir
}
