//! A coordinator's internal topic (`__consumer_offsets`, `__transaction_state`), opened at
//! start when an earlier run created it and otherwise created on first use, as Kafka creates
//! them on the first FindCoordinator. A broker that never sees a group or a transaction never
//! opens their 100 partitions (300 open files), and an empty data dir starts without writing
//! them.
//!
//! Owns: [`InternalTopic`]. Until the topic exists, [`InternalTopic::partition_count`] is the
//! configured count, so the partition a group or transactional id maps to is the one it will
//! be written to once the topic is created.
//!
//! Thread safety: the partitions are set once (a `OnceLock`); creation is serialised by a
//! mutex so concurrent first uses create the topic once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::warn;

use crate::host::Storage;

/// Kafka's `offsets.topic.segment.bytes` and `transaction.state.log.segment.bytes` default.
const SEGMENT_BYTES: &str = "104857600";

pub struct InternalTopic<P> {
    name: &'static str,
    /// `offsets.topic.num.partitions` or `transaction.state.log.num.partitions`.
    configured: i32,
    partitions: OnceLock<Vec<Arc<P>>>,
    creating: Mutex<()>,
}

impl<P> InternalTopic<P> {
    /// The topic as an earlier run left it: opened if it exists (its partition count wins over
    /// the configured one, since changing it would move every group), else not created yet.
    pub fn find<S: Storage<Partition = P>>(
        storage: &S,
        name: &'static str,
        configured: i32,
    ) -> InternalTopic<P> {
        let topic = InternalTopic {
            name,
            configured: configured.max(1),
            partitions: OnceLock::new(),
            creating: Mutex::new(()),
        };
        if let Some(existing) = storage.topic_partitions(name) {
            let count = i32::try_from(existing.len()).unwrap_or(i32::MAX);
            if count != topic.configured {
                warn!(
                    existing = count,
                    configured = topic.configured,
                    "{name} keeps its existing partition count (changing it would move groups)"
                );
            }
            let _ = topic.partitions.set(existing);
        }
        topic
    }

    /// How many partitions the topic has, or will have once created.
    pub fn partition_count(&self) -> i32 {
        match self.partitions.get() {
            Some(p) => i32::try_from(p.len()).unwrap_or(i32::MAX),
            None => self.configured,
        }
    }

    /// The partitions if the topic exists; empty before its first use.
    pub fn existing(&self) -> &[Arc<P>] {
        self.partitions.get().map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether the topic has been opened or created.
    pub fn exists(&self) -> bool {
        self.partitions.get().is_some()
    }

    /// The partitions, creating the topic (compacted, 100 MiB segments, as Kafka creates it)
    /// on first use. Blocking: creating writes `configured` empty partitions.
    pub fn get_or_create<S: Storage<Partition = P>>(
        &self,
        storage: &S,
    ) -> Result<&[Arc<P>], S::Error> {
        if let Some(p) = self.partitions.get() {
            return Ok(p);
        }
        let _creating = self.creating.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = self.partitions.get() {
            return Ok(p);
        }
        // Another path (a restart race, a test) may have created it under the same name.
        let partitions = match storage.topic_partitions(self.name) {
            Some(p) => p,
            None => {
                let mut configs = BTreeMap::new();
                configs.insert("cleanup.policy".to_string(), "compact".to_string());
                configs.insert("segment.bytes".to_string(), SEGMENT_BYTES.to_string());
                storage.create_topic(self.name, self.configured, configs)?
            }
        };
        Ok(self.partitions.get_or_init(|| partitions))
    }

    /// The partition `index` of the topic, creating the topic on first use.
    pub fn partition<S: Storage<Partition = P>>(
        &self,
        storage: &S,
        index: i32,
    ) -> Result<Arc<P>, String> {
        let partitions = self.get_or_create(storage).map_err(|e| e.to_string())?;
        usize::try_from(index)
            .ok()
            .and_then(|i| partitions.get(i))
            .cloned()
            .ok_or_else(|| format!("{} has no partition {index}", self.name))
    }
}
