//! In-memory host for tests: partitions that keep their batches in a `Vec`, a storage that
//! creates topics on demand and whose "durable" point moves on [`Storage::wait_durable`], a
//! topic catalogue, group configs and a [`TxnHost`] with a producer id counter.
//!
//! Appends rewrite each batch's base offset (as a log does), so the coordinators' replay
//! reads back exactly what they wrote. Deleting records moves the log start and drops the
//! batches wholly below it, as DeleteRecords does on a log.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use skiff_log::{ControlType, LogError};
use skiff_records::Batches;
use uuid::Uuid;

use crate::groups::Coordinator;
use crate::host::{GroupConfigs, InternalPartition, Storage, TopicCatalog};
use crate::txn::{TxnCoordinator, TxnHost};

/// One partition: its batches with their base offsets.
#[derive(Default)]
pub struct MemPartition {
    index: i32,
    /// (base offset, next offset, bytes) of every batch.
    batches: Mutex<Vec<(i64, i64, Vec<u8>)>>,
    end: AtomicI64,
    /// The log start offset (moved only under the `batches` lock).
    start: AtomicI64,
    /// Durable up to here (moved by `flush` and `wait_durable`).
    pub flushed: AtomicI64,
    /// When set, appends fail as a full disk would.
    pub fail_appends: AtomicBool,
}

impl MemPartition {
    fn new(index: i32) -> MemPartition {
        MemPartition {
            index,
            ..MemPartition::default()
        }
    }

    /// Every batch appended and not deleted since.
    pub fn batches(&self) -> Vec<Vec<u8>> {
        let batches = self.batches.lock().unwrap();
        batches.iter().map(|b| b.2.clone()).collect()
    }

    fn push(&self, mut batch: Vec<u8>) -> Result<i64, LogError> {
        if self.fail_appends.load(Ordering::Acquire) {
            return Err(LogError::Io {
                context: "in-memory append".into(),
                source: std::io::Error::other("no space left (test)"),
            });
        }
        let mut batches = self.batches.lock().unwrap();
        let base = self.end.load(Ordering::Acquire);
        let count = Batches::new(&batch)
            .next()
            .and_then(Result::ok)
            .map(|(h, _)| h.next_offset() - h.base_offset)
            .unwrap_or(1);
        batch[..8].copy_from_slice(&base.to_be_bytes());
        batches.push((base, base + count, batch));
        self.end.store(base + count, Ordering::Release);
        Ok(base + count)
    }
}

impl InternalPartition for MemPartition {
    fn index(&self) -> i32 {
        self.index
    }

    fn log_start_offset(&self) -> i64 {
        self.start.load(Ordering::Acquire)
    }

    fn log_end_offset(&self) -> i64 {
        self.end.load(Ordering::Acquire)
    }

    fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        let batches = self.batches.lock().unwrap();
        let log_start = self.start.load(Ordering::Acquire);
        if offset < log_start {
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                log_start,
                log_end: self.end.load(Ordering::Acquire),
            });
        }
        let mut out = Vec::new();
        for (_, next, bytes) in batches.iter() {
            if *next <= offset {
                continue;
            }
            if !out.is_empty() && out.len() + bytes.len() > max_bytes {
                break;
            }
            out.extend_from_slice(bytes);
        }
        Ok(Bytes::from(out))
    }

    fn append(&self, batch: &[u8], _leader_epoch: i32, _now_ms: i64) -> Result<i64, LogError> {
        self.push(batch.to_vec())
    }

    fn write_txn_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        control: ControlType,
        _leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let batch =
            skiff_log::control_batch(producer_id, epoch, coordinator_epoch, control, now_ms)?;
        self.push(batch).map(|_| ())
    }

    fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        let mut batches = self.batches.lock().unwrap();
        let log_start = self.start.load(Ordering::Acquire);
        let log_end = self.end.load(Ordering::Acquire);
        let target = if offset == -1 { log_end } else { offset };
        if target < 0 || target > log_end {
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                log_start,
                log_end,
            });
        }
        let log_start = log_start.max(target);
        self.start.store(log_start, Ordering::Release);
        batches.retain(|(_, next, _)| *next > log_start);
        Ok(log_start)
    }

    fn flush(&self) -> Result<(), LogError> {
        self.flushed
            .store(self.end.load(Ordering::Acquire), Ordering::Release);
        Ok(())
    }

    fn wake_readers(&self) {}
}

/// One topic: its id, partitions and the configs it was created with.
type MemTopic = (Uuid, Vec<Arc<MemPartition>>, BTreeMap<String, String>);

/// Topics by name: the coordinators' internal topics and the data topics of a test.
#[derive(Default)]
pub struct MemStorage {
    topics: Mutex<BTreeMap<String, MemTopic>>,
}

impl MemStorage {
    /// A data topic, as a test creates it.
    pub fn add_topic(&self, name: &str, partitions: i32) -> Vec<Arc<MemPartition>> {
        self.create_topic(name, partitions, BTreeMap::new())
            .unwrap_or_else(|e| match e {})
    }

    /// The configs a topic was created with.
    pub fn configs(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.topics.lock().unwrap().get(name).map(|t| t.2.clone())
    }

    pub fn partition(&self, topic: &str, index: i32) -> Option<Arc<MemPartition>> {
        let topics = self.topics.lock().unwrap();
        let (_, partitions, _) = topics.get(topic)?;
        partitions.get(usize::try_from(index).ok()?).cloned()
    }
}

impl Storage for MemStorage {
    type Partition = MemPartition;
    type Error = Infallible;

    fn topic_partitions(&self, topic: &str) -> Option<Vec<Arc<MemPartition>>> {
        self.topics.lock().unwrap().get(topic).map(|t| t.1.clone())
    }

    fn create_topic(
        &self,
        topic: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Vec<Arc<MemPartition>>, Infallible> {
        let created: Vec<Arc<MemPartition>> = (0..partitions)
            .map(|i| Arc::new(MemPartition::new(i)))
            .collect();
        self.topics.lock().unwrap().insert(
            topic.to_string(),
            (Uuid::new_v4(), created.clone(), configs),
        );
        Ok(created)
    }

    fn wait_durable(
        &self,
        partition: Arc<MemPartition>,
        end_offset: i64,
    ) -> impl Future<Output = Result<(), String>> + Send {
        let result = if partition.fail_appends.load(Ordering::Acquire) {
            Err("fsync failed (test)".to_string())
        } else {
            partition.flushed.fetch_max(end_offset, Ordering::AcqRel);
            Ok(())
        };
        std::future::ready(result)
    }
}

impl TopicCatalog for MemStorage {
    fn topic_id(&self, name: &str) -> Option<Uuid> {
        self.topics.lock().unwrap().get(name).map(|t| t.0)
    }

    fn topic_name(&self, id: Uuid) -> Option<String> {
        let topics = self.topics.lock().unwrap();
        topics
            .iter()
            .find(|(_, t)| t.0 == id)
            .map(|(n, _)| n.clone())
    }

    fn partition_count(&self, name: &str) -> Option<i32> {
        let topics = self.topics.lock().unwrap();
        topics.get(name).map(|t| t.1.len() as i32)
    }
}

/// A group's (session timeout, heartbeat interval) overrides.
type GroupTimeouts = (Option<i32>, Option<i32>);

/// Group configs set by a test.
#[derive(Default)]
pub struct MemGroupConfigs {
    pub timeouts: Mutex<HashMap<String, GroupTimeouts>>,
}

impl GroupConfigs for MemGroupConfigs {
    fn consumer_timeouts(&self, group_id: &str) -> (Option<i32>, Option<i32>) {
        self.timeouts
            .lock()
            .unwrap()
            .get(group_id)
            .copied()
            .unwrap_or_default()
    }
}

/// Both coordinators over one [`MemStorage`], as the broker holds them.
pub struct MemHost {
    pub storage: Arc<MemStorage>,
    pub groups: Coordinator<MemStorage>,
    pub txn: TxnCoordinator<MemStorage>,
    pub next_producer_id: AtomicI64,
}

impl TxnHost for MemHost {
    type Storage = MemStorage;

    fn allocate_producer_id(&self) -> Result<i64, LogError> {
        Ok(self.next_producer_id.fetch_add(1, Ordering::AcqRel))
    }

    fn data_partition(&self, topic: &str, index: i32) -> Option<Arc<MemPartition>> {
        self.storage.partition(topic, index)
    }

    fn groups(&self) -> &Coordinator<MemStorage> {
        &self.groups
    }

    fn txn(&self) -> &TxnCoordinator<MemStorage> {
        &self.txn
    }
}
