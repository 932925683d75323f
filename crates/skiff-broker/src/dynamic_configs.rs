//! The durable store of dynamic configs: this broker's per-broker dynamic configs, the
//! cluster-default (`<default>`) dynamic configs, and each group's configs (KIP-848), plus the
//! effective broker configuration they produce (see `skiff_config::with_dynamic`).
//!
//! On disk: `dynamic-configs.json` in the data dir, a JSON object
//! `{"version":1,"broker":{k:v},"default":{k:v},"groups":{group:{k:v}}}`, replaced as a whole
//! by `skiff_log::write_private_atomically` (temp file of mode 600, as it may hold passwords,
//! fsync, rename, fsync of the directory) on every change, before the change is applied or answered. Kafka keeps these as ConfigRecords
//! in its metadata log; Skiff has no metadata log, and the broker layers must be known before
//! the topics are opened (they are the topics' defaults), so they cannot wait for a replay of
//! `__consumer_offsets`: a small file read at start is the simplest durable place. A missing
//! file means no dynamic configs; an unreadable one stops the start (its contents would
//! otherwise be silently lost on the next write).
//!
//! Thread safety: readers take a snapshot (`Arc`) under a short `RwLock`; writers serialise
//! on `update` (a std `Mutex`, held across the file write and the apply but never across an
//! `.await`), so two alterations cannot interleave their read-modify-write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use serde::{Deserialize, Serialize};
use skiff_config::BrokerConfig;

use crate::broker::StartError;

/// The file name in the data dir.
pub const FILE: &str = "dynamic-configs.json";
const VERSION: u32 = 1;

/// Everything the file holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Stored {
    pub version: u32,
    /// Per-broker dynamic configs of this node.
    #[serde(default)]
    pub broker: BTreeMap<String, String>,
    /// Cluster-default dynamic configs.
    #[serde(default)]
    pub default: BTreeMap<String, String>,
    /// Group configs by group id.
    #[serde(default)]
    pub groups: BTreeMap<String, BTreeMap<String, String>>,
}

pub struct DynamicConfigs {
    path: PathBuf,
    static_config: Arc<BrokerConfig>,
    /// Serialises updates (see the module docs).
    update: Mutex<()>,
    stored: RwLock<Arc<Stored>>,
    live: RwLock<Arc<BrokerConfig>>,
}

impl DynamicConfigs {
    /// Read the file (if any) and build the effective configuration from it.
    pub fn open(
        root: &Path,
        static_config: Arc<BrokerConfig>,
    ) -> Result<DynamicConfigs, StartError> {
        let path = root.join(FILE);
        let stored = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<Stored>(&bytes)
                .map_err(|e| StartError::Config(format!("{} is not valid: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored {
                version: VERSION,
                ..Stored::default()
            },
            Err(e) => {
                return Err(StartError::Io {
                    context: format!("reading {}", path.display()),
                    source: e,
                })
            }
        };
        if stored.version != VERSION {
            return Err(StartError::Config(format!(
                "{} has version {}; this Skiff reads version {VERSION}",
                path.display(),
                stored.version
            )));
        }
        let live = skiff_config::with_dynamic(&static_config, &stored.default, &stored.broker)
            .map_err(|e| {
                let (skiff_config::DynamicRefusal::Request(m)
                | skiff_config::DynamicRefusal::Config(m)) = e;
                StartError::Config(format!("dynamic broker configs in {}: {m}", path.display()))
            })?;
        Ok(DynamicConfigs {
            path,
            static_config,
            update: Mutex::new(()),
            stored: RwLock::new(Arc::new(stored)),
            live: RwLock::new(Arc::new(live)),
        })
    }

    /// The configuration in force (static with the dynamic layers applied).
    pub fn live(&self) -> Arc<BrokerConfig> {
        self.live.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The configuration as loaded at start, without dynamic layers.
    pub fn static_config(&self) -> &Arc<BrokerConfig> {
        &self.static_config
    }

    pub fn stored(&self) -> Arc<Stored> {
        self.stored
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Held by whoever changes the store, from reading the current set to applying the new.
    pub fn lock_updates(&self) -> MutexGuard<'_, ()> {
        self.update.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A group's configs (empty when it has none).
    pub fn group(&self, group: &str) -> BTreeMap<String, String> {
        self.stored().groups.get(group).cloned().unwrap_or_default()
    }

    /// A group's `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms` overrides.
    pub fn group_consumer_timeouts(&self, group: &str) -> (Option<i32>, Option<i32>) {
        let stored = self.stored();
        match stored.groups.get(group) {
            Some(configs) => skiff_config::group_consumer_timeouts(configs),
            None => (None, None),
        }
    }

    /// The settings a share group runs with: its `share.*` overrides, else the broker's
    /// `group.share.*` configs in force.
    pub fn share_group_values(&self, group: &str) -> skiff_config::ShareGroupValues {
        let stored = self.stored();
        let empty = BTreeMap::new();
        let overrides = stored.groups.get(group).unwrap_or(&empty);
        skiff_config::share_group_values(overrides, &self.live())
    }

    /// The settings a streams group runs with: its `streams.*` overrides, else the broker's
    /// `group.streams.*` configs in force.
    pub fn streams_group_values(&self, group: &str) -> skiff_config::StreamsGroupValues {
        let stored = self.stored();
        let empty = BTreeMap::new();
        let overrides = stored.groups.get(group).unwrap_or(&empty);
        skiff_config::streams_group_values(overrides, &self.live())
    }

    /// Write `next` durably and make it (and `live`, when given) current. The caller holds
    /// [`Self::lock_updates`].
    pub fn commit(
        &self,
        next: Stored,
        live: Option<Arc<BrokerConfig>>,
    ) -> Result<(), skiff_log::LogError> {
        let bytes = serde_json::to_vec_pretty(&next).unwrap_or_default();
        skiff_log::write_private_atomically(&self.path, &bytes)?;
        *self.stored.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        if let Some(live) = live {
            *self.live.write().unwrap_or_else(|e| e.into_inner()) = live;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_reopen_and_rejects_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Arc::new(BrokerConfig::default());
        let store = DynamicConfigs::open(dir.path(), cfg.clone()).unwrap();
        let mut next = (*store.stored()).clone();
        next.default
            .insert("log.retention.bytes".into(), "1234".into());
        next.groups
            .entry("g".into())
            .or_default()
            .insert("consumer.session.timeout.ms".into(), "50000".into());
        let live = skiff_config::with_dynamic(&cfg, &next.default, &next.broker).unwrap();
        {
            let _u = store.lock_updates();
            store.commit(next, Some(Arc::new(live))).unwrap();
        }
        assert_eq!(store.live().log.retention_bytes, 1234);
        let again = DynamicConfigs::open(dir.path(), cfg.clone()).unwrap();
        assert_eq!(again.live().log.retention_bytes, 1234);
        assert_eq!(again.group_consumer_timeouts("g"), (Some(50000), None));
        assert_eq!(again.group_consumer_timeouts("other"), (None, None));
        std::fs::write(dir.path().join(FILE), b"{not json").unwrap();
        assert!(DynamicConfigs::open(dir.path(), cfg).is_err());
    }
}
