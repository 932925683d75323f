//! Typed per-topic log configuration (the storage-relevant subset of Kafka topic configs).
//!
//! Owns only the typed values and their Apache Kafka 4.x defaults; parsing and validation of
//! `name=value` topic configs lives in `skiff-config`. Plain data: `Clone` and freely shared.

use skiff_records::TimestampType;

/// `cleanup.policy`: any combination of `delete` and `compact`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// Time/size based retention deletes old segments.
    pub delete: bool,
    /// Log compaction keeps the latest record per key (requires keys on every record).
    pub compact: bool,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy {
            delete: true,
            compact: false,
        }
    }
}

/// Typed topic configuration used by the log. `Default` = Apache Kafka 4.x defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct LogConfig {
    /// `cleanup.policy` (default `delete`).
    pub cleanup_policy: CleanupPolicy,
    /// `retention.ms`; -1 = unlimited.
    pub retention_ms: i64,
    /// `retention.bytes`; -1 = unlimited.
    pub retention_bytes: i64,
    /// `segment.bytes`: roll when a segment would exceed this size.
    pub segment_bytes: i32,
    /// `segment.ms`: roll a non-empty segment older than this.
    pub segment_ms: i64,
    /// `segment.jitter.ms`: maximum random jitter subtracted from `segment.ms` per segment.
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes`: maximum offset/time index file size.
    pub segment_index_bytes: i32,
    /// `index.interval.bytes`: bytes appended between index entries.
    pub index_interval_bytes: i32,
    /// `max.message.bytes`: largest record batch accepted.
    pub max_message_bytes: i32,
    /// `message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far in the past a CreateTime may be.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far in the future a CreateTime may be.
    pub message_timestamp_after_max_ms: i64,
    /// `flush.messages`: fsync after this many messages.
    pub flush_messages: i64,
    /// `flush.ms`: fsync after this much time.
    pub flush_ms: i64,
    /// `file.delete.delay.ms`: delay before removing `.deleted` files.
    pub file_delete_delay_ms: i64,
    /// `delete.retention.ms`: how long compaction keeps tombstones.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// `preallocate`: preallocate segment files.
    pub preallocate: bool,
    /// `compression.type` (`producer` keeps the producer's codec).
    pub compression_type: String,
    /// `skiff.tombstone.wait.for.consumers`: compaction keeps a tombstone (beyond
    /// `delete.retention.ms`) until every consumer group with a committed offset on the
    /// partition has committed past it.
    pub tombstone_wait_for_consumers: bool,
    /// `skiff.tombstone.wait.max.ms`: how much longer than `delete.retention.ms` consumers may
    /// hold a tombstone back; past it the tombstone goes regardless (a dead group cannot keep
    /// tombstones forever).
    pub tombstone_wait_max_ms: i64,
    /// `skiff.compaction.archive.topic`: where compaction first copies the records it removes
    /// (empty: nowhere, Kafka's behaviour).
    pub archive_topic: String,
    /// `skiff.key.index.enable`: keep a key index of each partition (compacted topics only;
    /// the broker creates and builds it, `crate::key_index`).
    pub key_index_enable: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            cleanup_policy: CleanupPolicy::default(),
            retention_ms: 604_800_000,
            retention_bytes: -1,
            segment_bytes: 1_073_741_824,
            segment_ms: 604_800_000,
            segment_jitter_ms: 0,
            segment_index_bytes: 10_485_760,
            index_interval_bytes: 4096,
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: 3_600_000,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            delete_retention_ms: 86_400_000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5,
            preallocate: false,
            compression_type: "producer".to_string(),
            tombstone_wait_for_consumers: false,
            tombstone_wait_max_ms: 604_800_000,
            archive_topic: String::new(),
            key_index_enable: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_kafka() {
        let c = LogConfig::default();
        assert!(c.cleanup_policy.delete && !c.cleanup_policy.compact);
        assert_eq!(c.segment_bytes, 1 << 30);
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert_eq!(c.message_timestamp_type, TimestampType::CreateTime);
    }
}
