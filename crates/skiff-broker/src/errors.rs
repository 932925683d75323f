//! The one place where internal errors become Kafka error codes.

use kafka_protocol::ResponseError;
use skiff_log::LogError;

/// Kafka error code for a storage error on one partition. Exhaustive on purpose: a new
/// `LogError` variant must decide its code here.
pub fn log_error_code(err: &LogError) -> ResponseError {
    match err {
        LogError::CorruptMessage(..) => ResponseError::CorruptMessage,
        LogError::InvalidRecord { .. } => ResponseError::InvalidRecord,
        LogError::MessageTooLarge { .. } => ResponseError::MessageTooLarge,
        LogError::RecordListTooLarge { .. } => ResponseError::RecordListTooLarge,
        LogError::InvalidTimestamp { .. } => ResponseError::InvalidTimestamp,
        LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        // Kafka 4 (KIP-724): produce v3+ may only carry magic 2 batches -> INVALID_RECORD.
        LogError::UnsupportedMagic(..) => ResponseError::InvalidRecord,
        LogError::Io { .. } => ResponseError::KafkaStorageError,
        LogError::Offline(..) => ResponseError::KafkaStorageError,
        LogError::SegmentGone(..) => ResponseError::KafkaStorageError,
        LogError::Aborted(..) => ResponseError::KafkaStorageError,
        LogError::OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber,
        // Kafka 2.7+ answers a produce from a stale epoch with INVALID_PRODUCER_EPOCH (the
        // client aborts and retries) rather than the fatal PRODUCER_FENCED.
        LogError::InvalidProducerEpoch { .. } => ResponseError::InvalidProducerEpoch,
        // Kafka's UnifiedLog: "Record was not part of an ongoing transaction".
        LogError::InvalidTxnState { .. } => ResponseError::InvalidTxnState,
        LogError::DirLocked(..) | LogError::MalformedFile { .. } => {
            ResponseError::KafkaStorageError
        }
    }
}

pub fn code(err: ResponseError) -> i16 {
    err.code()
}

pub const NONE: i16 = 0;

/// Kafka error code and message for a topic-registry failure.
pub fn topic_error_code(err: &crate::topics::TopicError) -> ResponseError {
    use crate::topics::TopicError;
    match err {
        TopicError::InvalidName(..) => ResponseError::InvalidTopicException,
        TopicError::AlreadyExists(..) => ResponseError::TopicAlreadyExists,
        TopicError::Unknown(..) => ResponseError::UnknownTopicOrPartition,
        TopicError::InvalidPartitions(..) => ResponseError::InvalidPartitions,
        TopicError::InvalidConfig(..) => ResponseError::InvalidConfig,
        TopicError::Storage(e) => log_error_code(e),
        TopicError::Registry { .. } => ResponseError::KafkaStorageError,
    }
}
