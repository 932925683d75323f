//! What the coordinators need from the broker, as traits the broker implements (in
//! skiff-broker's `coordinator_host.rs`) and tests implement in memory.
//!
//! - [`Storage`] and [`InternalPartition`]: create or open an internal topic, append a batch
//!   to one of its partitions and learn the end offset, wait until it is durable, read a
//!   partition back at start, delete records below an offset (pruning); the same partition
//!   type takes transaction markers.
//! - [`TopicCatalog`]: topic ids and partition counts (KIP-848 records name topics by id).
//! - [`GroupConfigs`]: per-group config overrides.
//! - [`ShareGroupListener`]: told when a share group member or share group is gone (the
//!   share-partition side releases what the member had acquired).
//! - Producer ids and the data partitions of a transaction: [`crate::txn::TxnHost`].
//!
//! Thread safety: every method may be called from any thread, with no coordinator lock held
//! except where a method says otherwise; implementations must not call back into the
//! coordinators.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use skiff_log::{ControlType, LogError};
use uuid::Uuid;

use crate::share_group::ShareGroupSettings;

/// The leader epoch the coordinators write with: one node, never re-elected (the same value
/// as the broker's handlers use for every partition).
pub const LEADER_EPOCH: i32 = 0;

/// One partition of a topic, as the coordinators use it: their own internal topics (append,
/// replay) and the data partitions that take transaction markers.
pub trait InternalPartition: Send + Sync + 'static {
    /// The partition's index in its topic.
    fn index(&self) -> i32;
    fn log_start_offset(&self) -> i64;
    fn log_end_offset(&self) -> i64;
    /// Record batches from `offset`, up to `max_bytes` (at least one whole batch).
    fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes, LogError>;
    /// Appends `batch` as the broker's own write (no producer checks); returns the end
    /// offset after it (last offset + 1). Not durable until [`InternalPartition::flush`] or
    /// [`Storage::wait_durable`].
    fn append(&self, batch: &[u8], leader_epoch: i32, now_ms: i64) -> Result<i64, LogError>;
    /// Appends a COMMIT/ABORT marker of `producer_id` at `epoch`.
    #[allow(clippy::too_many_arguments)]
    fn write_txn_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        control: ControlType,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(), LogError>;
    /// Moves the log start offset up to `offset` (never back; -1 means the end), as a
    /// DeleteRecords does, and returns the new log start. Records below it are gone for
    /// readers at once and for good once the broker checkpoints the log start (or its
    /// segments are deleted); until then a crash may bring them back, which must be harmless
    /// to whoever deletes them. An offset past the end is refused.
    fn delete_records_before(&self, offset: i64) -> Result<i64, LogError>;
    /// Makes everything appended so far durable (fsync).
    fn flush(&self) -> Result<(), LogError>;
    /// Wakes readers waiting for new data in this partition (fetches parked on it).
    fn wake_readers(&self);
}

/// The internal topics' storage.
pub trait Storage: Send + Sync + 'static {
    type Partition: InternalPartition;
    /// Why a topic could not be created.
    type Error: std::error::Error + Send + Sync + 'static;
    /// The partitions of `topic` if it exists.
    fn topic_partitions(&self, topic: &str) -> Option<Vec<Arc<Self::Partition>>>;
    /// Creates `topic` (not a user topic: no create policy applies) with `configs`.
    fn create_topic(
        &self,
        topic: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Vec<Arc<Self::Partition>>, Self::Error>;
    /// Resolves once `partition` is durable up to `end_offset` (group commit with the
    /// broker's other writes).
    fn wait_durable(
        &self,
        partition: Arc<Self::Partition>,
        end_offset: i64,
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// The topic catalogue.
pub trait TopicCatalog: Send + Sync {
    fn topic_id(&self, name: &str) -> Option<Uuid>;
    fn topic_name(&self, id: Uuid) -> Option<String>;
    fn partition_count(&self, name: &str) -> Option<i32>;
}

/// Per-group config overrides.
pub trait GroupConfigs: Send + Sync {
    /// A group's `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms`, when
    /// set.
    fn consumer_timeouts(&self, group_id: &str) -> (Option<i32>, Option<i32>);

    /// The limits share group `group_id` runs with: the broker's `group.share.*` configs,
    /// overridden by the group's own `share.*` configs where Kafka allows it. The default is
    /// Kafka's defaults, for hosts that do not resolve share group configs.
    fn share_group_settings(&self, group_id: &str) -> ShareGroupSettings {
        let _ = group_id;
        ShareGroupSettings::default()
    }

    /// The limits streams group `group_id` runs with: the broker's `group.streams.*` configs,
    /// overridden by the group's own `streams.*` configs. The default is Kafka's defaults.
    fn streams_group_settings(&self, group_id: &str) -> crate::streams_group::StreamsGroupSettings {
        let _ = group_id;
        crate::streams_group::StreamsGroupSettings::default()
    }
}

/// The share-partition side of share groups, told by the group coordinator when a share
/// group member or a whole share group is gone, so that records the member had acquired can
/// be released and a deleted group's share-partition state dropped.
///
/// Called with no coordinator lock held, from a request's thread (a leave, DeleteGroups) or
/// the coordinator thread (session expiry); an implementation must return quickly and must
/// not call back into the group coordinator on that thread.
pub trait ShareGroupListener: Send + Sync {
    /// `member_id` left share group `group_id` (epoch -1) or its session expired.
    fn member_removed(&self, group_id: &str, member_id: &str);
    /// Share group `group_id` was deleted (DeleteGroups); its tombstones are durable.
    fn group_deleted(&self, group_id: &str);
}

/// Why a coordinator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The internal topic could not be created.
    #[error(transparent)]
    Storage(Box<dyn std::error::Error + Send + Sync>),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}
