//! The store over the real log (skiff-log's `Log` in a temporary directory): a crash that
//! tears the last share-state record loses that record only, and replay after the log's
//! recovery gives the state as of the record before it; pruning deletes whole segments, and
//! replay after reopening gives the same state with or without the log-start checkpoint.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use skiff_log::{ControlType, Log, LogConfig, LogError, ManualClock, Recovery};
use uuid::Uuid;

use super::*;
use crate::host::{InternalPartition, Storage};
use crate::share::{DeliveryState, ShareSnapshot, StateBatch};

struct LogPartition {
    index: i32,
    log: Log,
}

impl InternalPartition for LogPartition {
    fn index(&self) -> i32 {
        self.index
    }
    fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }
    fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }
    fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        Ok(self.log.read(offset, max_bytes, true)?.records)
    }
    fn append(&self, batch: &[u8], leader_epoch: i32, now_ms: i64) -> Result<i64, LogError> {
        Ok(self
            .log
            .append_internal(batch, leader_epoch, now_ms)?
            .last_offset
            + 1)
    }
    fn write_txn_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        control: ControlType,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(), LogError> {
        self.log
            .write_txn_marker(
                producer_id,
                epoch,
                coordinator_epoch,
                control,
                leader_epoch,
                now_ms,
            )
            .map(|_| ())
    }
    fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        self.log.delete_records_before(offset)
    }
    fn flush(&self) -> Result<(), LogError> {
        self.log.flush().map(|_| ())
    }
    fn wake_readers(&self) {}
}

/// One topic's partitions as logs under `root`, opened with `recovery`.
struct LogStorage {
    root: PathBuf,
    recovery: Recovery,
    config: LogConfig,
    partitions: Mutex<Option<Vec<Arc<LogPartition>>>>,
}

impl LogStorage {
    fn new(root: &Path, recovery: Recovery) -> LogStorage {
        LogStorage::with_config(root, recovery, LogConfig::default())
    }

    fn with_config(root: &Path, recovery: Recovery, config: LogConfig) -> LogStorage {
        let storage = LogStorage {
            root: root.to_path_buf(),
            recovery,
            config,
            partitions: Mutex::new(None),
        };
        let existing = (0..)
            .take_while(|i| storage.dir(*i).exists())
            .collect::<Vec<i32>>();
        if !existing.is_empty() {
            let opened = existing.into_iter().map(|i| storage.open(i)).collect();
            *storage.partitions.lock().unwrap() = Some(opened);
        }
        storage
    }

    fn dir(&self, index: i32) -> PathBuf {
        self.root.join(format!("{SHARE_STATE_TOPIC}-{index}"))
    }

    fn open(&self, index: i32) -> Arc<LogPartition> {
        let log = Log::open(
            &self.dir(index),
            self.config.clone(),
            Arc::new(ManualClock::new(1_000)),
            self.recovery,
        )
        .unwrap();
        Arc::new(LogPartition { index, log })
    }
}

impl Storage for LogStorage {
    type Partition = LogPartition;
    type Error = Infallible;

    fn topic_partitions(&self, topic: &str) -> Option<Vec<Arc<LogPartition>>> {
        assert_eq!(topic, SHARE_STATE_TOPIC);
        self.partitions.lock().unwrap().clone()
    }

    fn create_topic(
        &self,
        _topic: &str,
        partitions: i32,
        _configs: BTreeMap<String, String>,
    ) -> Result<Vec<Arc<LogPartition>>, Infallible> {
        let created: Vec<_> = (0..partitions).map(|i| self.open(i)).collect();
        *self.partitions.lock().unwrap() = Some(created.clone());
        Ok(created)
    }

    fn wait_durable(
        &self,
        partition: Arc<LogPartition>,
        _end_offset: i64,
    ) -> impl Future<Output = Result<(), String>> + Send {
        std::future::ready(partition.flush().map_err(|e| e.to_string()))
    }
}

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "skiff-share-state-{name}-{}-{}",
            std::process::id(),
            Uuid::new_v4()
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config() -> ShareStateConfig {
    ShareStateConfig {
        num_partitions: 2,
        updates_per_snapshot: 3,
        ..ShareStateConfig::default()
    }
}

/// The first write of a share partition: its whole (empty) state.
fn empty_snapshot() -> ShareWrite {
    ShareWrite::Snapshot(ShareSnapshot {
        start_offset: 0,
        state_epoch: 0,
        delivery_complete_count: 0,
        state_batches: vec![],
    })
}

fn acked(offset: i64) -> ShareWrite {
    ShareWrite::Batches(BatchWrite {
        state_epoch: 0,
        start_offset: None,
        delivery_complete_count: -1,
        state_batches: vec![StateBatch {
            first_offset: offset,
            last_offset: offset,
            delivery_state: DeliveryState::Acknowledged,
            delivery_count: 1,
        }],
    })
}

#[test]
fn a_torn_last_record_loses_only_that_record() {
    let dir = TempDir::new("torn");
    let key = SharePartitionKey {
        group: "g".into(),
        topic_id: Uuid::from_u64_pair(1, 2),
        partition: 0,
    };
    let home = partition_for(&key, 2);
    let (before_last, flushed, size_before_last) = {
        let storage = LogStorage::new(&dir.0, Recovery::Clean);
        let store = ShareStateStore::open(&storage, config()).unwrap();
        store.write(&key, empty_snapshot(), 1).unwrap();
        for o in 0..5 {
            store.write(&key, acked(o), 1).unwrap();
        }
        let partitions = storage.topic_partitions(SHARE_STATE_TOPIC).unwrap();
        let log = &partitions[home as usize].log;
        let flushed = log.flush().unwrap();
        let before_last = store.get(&key).unwrap();
        let size = log.size_bytes();
        store.write(&key, acked(5), 1).unwrap();
        // Crash: no close, no flush of the last record.
        (before_last, flushed, size)
    };
    // Tear the last record: keep only part of its batch.
    let file = dir
        .0
        .join(format!("{SHARE_STATE_TOPIC}-{home}"))
        .join("00000000000000000000.log");
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(size_before_last + 20).unwrap();
    drop(f);

    let storage = LogStorage::new(&dir.0, Recovery::FromOffset(flushed));
    let store = ShareStateStore::open(&storage, config()).unwrap();
    assert_eq!(store.get(&key), Some(before_last.clone()));
    assert_eq!(
        before_last
            .state
            .state_batches
            .last()
            .map(|b| b.last_offset),
        Some(4)
    );
    // The store carries on from there: the lost write can be made again.
    store.write(&key, acked(5), 2).unwrap();
    let reopened = {
        drop(store);
        drop(storage);
        let storage = LogStorage::new(&dir.0, Recovery::Clean);
        ShareStateStore::open(&storage, config())
            .unwrap()
            .get(&key)
            .unwrap()
    };
    assert_eq!(
        reopened.state.state_batches,
        vec![StateBatch {
            first_offset: 0,
            last_offset: 5,
            delivery_state: DeliveryState::Acknowledged,
            delivery_count: 1,
        }]
    );
}

#[test]
fn pruning_deletes_segments_and_replay_after_reopening_gives_the_same_state() {
    let dir = TempDir::new("prune");
    let key = SharePartitionKey {
        group: "g".into(),
        topic_id: Uuid::from_u64_pair(3, 4),
        partition: 0,
    };
    let home = partition_for(&key, 2) as usize;
    // Every record rolls a segment, so pruning can delete files.
    let small = LogConfig {
        segment_bytes: 400,
        ..LogConfig::default()
    };
    let (before, bound) = {
        let storage = LogStorage::with_config(&dir.0, Recovery::Clean, small.clone());
        let store = ShareStateStore::open(&storage, config()).unwrap();
        store.write(&key, empty_snapshot(), 1).unwrap();
        for o in 0..8 {
            store.write(&key, acked(o), 1).unwrap(); // snapshots at 4 and 8
        }
        let bound = store.redundant_below(home as i32).unwrap();
        assert_eq!(bound, 8);
        let pruned = store.prune();
        assert_eq!(pruned.len(), 1);
        assert_eq!(*pruned[0].1.as_ref().unwrap(), bound);
        let log = &storage.topic_partitions(SHARE_STATE_TOPIC).unwrap()[home].log;
        assert_eq!(log.log_start_offset(), bound);
        assert_eq!(log.flushed_offset(), log.log_end_offset(), "flushed first");
        (store.get(&key).unwrap(), bound)
    };
    let logs_left = std::fs::read_dir(dir.0.join(format!("{SHARE_STATE_TOPIC}-{home}")))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".log")
        })
        .count();
    assert!(logs_left <= 2, "{logs_left} segments left");
    // Reopened without the broker's log-start checkpoint (as after a crash): the log starts
    // at its first segment, at or below the bound, and the state is the same.
    let storage = LogStorage::with_config(&dir.0, Recovery::Clean, small);
    let log_start = storage.topic_partitions(SHARE_STATE_TOPIC).unwrap()[home]
        .log
        .log_start_offset();
    assert!(log_start <= bound && log_start > 0, "{log_start}");
    let store = ShareStateStore::open(&storage, config()).unwrap();
    assert_eq!(store.get(&key), Some(before));
}
