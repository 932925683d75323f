//! The crate's error type. Client-visible variants map one-to-one onto Kafka error codes in the
//! broker (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
//! INVALID_TIMESTAMP, OFFSET_OUT_OF_RANGE, UNSUPPORTED_FOR_MESSAGE_FORMAT, KAFKA_STORAGE_ERROR,
//! OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH).
//!
//! Pure data, `Send + Sync`. I/O messages name the file and position so a log line is
//! actionable on its own.

use std::io;
use std::path::Path;
use thiserror::Error;

/// Everything a log operation can fail with.
#[derive(Debug, Error)]
pub enum LogError {
    /// A batch failed framing, length or CRC checks (Kafka CORRUPT_MESSAGE).
    #[error("corrupt message: {0}")]
    CorruptMessage(String),

    /// A batch or some of its records break a produce rule (Kafka INVALID_RECORD).
    /// `record_errors` holds (index of the record within its batch, reason).
    #[error("invalid record: {message}")]
    InvalidRecord {
        message: String,
        record_errors: Vec<(i32, String)>,
    },

    /// One batch is larger than `max.message.bytes` (Kafka MESSAGE_TOO_LARGE).
    #[error("record batch of {size} bytes exceeds max.message.bytes={max}")]
    MessageTooLarge { size: usize, max: i32 },

    /// The whole append is larger than `segment.bytes` (Kafka RECORD_LIST_TOO_LARGE).
    #[error("append of {size} bytes exceeds segment.bytes={max}")]
    RecordListTooLarge { size: usize, max: i32 },

    /// A CreateTime timestamp is outside the allowed window, or a producer batch claims
    /// LogAppendTime (Kafka INVALID_TIMESTAMP).
    #[error("invalid timestamp: {message}")]
    InvalidTimestamp {
        message: String,
        record_errors: Vec<(i32, String)>,
    },

    /// The requested offset is outside `[log_start, log_end]` (Kafka OFFSET_OUT_OF_RANGE).
    #[error("offset {requested} is out of range [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        requested: i64,
        log_start: i64,
        log_end: i64,
    },

    /// Only RecordBatch v2 (magic 2) is stored (Kafka UNSUPPORTED_FOR_MESSAGE_FORMAT).
    #[error("unsupported record batch magic {0}; only magic 2 is accepted")]
    UnsupportedMagic(i8),

    /// A file operation failed (Kafka KAFKA_STORAGE_ERROR).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },

    /// The log refuses writes after an earlier I/O error or after close (KAFKA_STORAGE_ERROR).
    #[error("log is offline: {0}")]
    Offline(String),

    /// Another process holds the log directory lock.
    #[error("log directory {0} is locked by another process (is another broker running?)")]
    DirLocked(String),

    /// The segment a cleaner asked for no longer exists (retention, DeleteRecords or another
    /// swap moved on); the cleaner should re-plan from a fresh view (KAFKA_STORAGE_ERROR).
    #[error("segment gone: {0}")]
    SegmentGone(String),

    /// A cleaning step was abandoned: the log was closed or deleted, or the request broke
    /// the swap contract (KAFKA_STORAGE_ERROR).
    #[error("cleaning aborted: {0}")]
    Aborted(String),

    /// An idempotent producer's batch does not follow its last appended sequence, or a new
    /// epoch does not start at sequence 0 (Kafka OUT_OF_ORDER_SEQUENCE_NUMBER).
    #[error("out of order sequence for producer {producer_id} at offset {offset}: {message}")]
    OutOfOrderSequence {
        producer_id: i64,
        offset: i64,
        message: String,
    },

    /// A batch carries an epoch older than the producer's current one: a zombie producer
    /// (Kafka INVALID_PRODUCER_EPOCH, which Kafka 2.7+ returns for produce).
    #[error("producer {producer_id} epoch {epoch} is older than the current epoch {current}")]
    InvalidProducerEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },

    /// KIP-890: a transactional batch of a producer with no open transaction in this
    /// partition arrived without a current verification (the partition was not added to the
    /// transaction, or the transaction ended while it was being verified). Kafka
    /// INVALID_TXN_STATE.
    #[error(
        "producer {producer_id} has no ongoing transaction on this partition that the \
         transaction coordinator verified; add the partition to the transaction first"
    )]
    InvalidTxnState { producer_id: i64 },

    /// A file in the log directory has a format we cannot read (checkpoint files).
    #[error("malformed file {file}: {message}")]
    MalformedFile { file: String, message: String },
}

impl LogError {
    /// Wraps an I/O error with what was being done and on which file.
    pub(crate) fn io(what: &str, path: &Path, source: io::Error) -> LogError {
        LogError::Io {
            context: format!("{what} {}", path.display()),
            source,
        }
    }

    /// Wraps an I/O error at a file position.
    pub(crate) fn io_at(what: &str, path: &Path, pos: u64, source: io::Error) -> LogError {
        LogError::Io {
            context: format!("{what} {} at position {pos}", path.display()),
            source,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = LogError> = std::result::Result<T, E>;
