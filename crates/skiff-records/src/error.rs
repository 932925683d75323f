//! The crate's error type: every way a RecordBatch can be rejected.
//!
//! Pure data, `Send + Sync`. Messages say what was wrong with the bytes so that a broker log line
//! is actionable on its own; the broker maps variants to Kafka error codes (CORRUPT_MESSAGE,
//! INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE, ...).

use thiserror::Error;

/// Why a batch (or a buffer of batches) could not be parsed, validated, decoded or built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecordsError {
    /// The buffer ends before a fixed-size structure does.
    #[error("record batch too short: needed {needed} bytes, have {have}")]
    TooShort { needed: usize, have: usize },

    /// Only magic 2 (RecordBatch v2, Kafka >= 0.11) is supported.
    #[error("unsupported record batch magic {0} (only magic 2 is supported)")]
    UnsupportedMagic(i8),

    /// A declared batch length is impossible or disagrees with the bytes present.
    #[error("corrupt record batch length: {0}")]
    CorruptLength(String),

    /// The stored CRC32C does not match the bytes from the attributes field to the end.
    #[error("record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },

    /// Batch-level fields contradict each other (record count, offset range, ...).
    #[error("invalid record batch: {0}")]
    InvalidBatch(String),

    /// A record inside the batch is malformed (bad varint, length past the end, count mismatch).
    #[error("invalid record: {0}")]
    InvalidRecord(String),

    /// The codec failed to compress or decompress the records section.
    #[error("compression error: {0}")]
    Compression(String),

    /// The attributes name a codec id that Kafka does not define (5..=7).
    #[error("unknown compression codec id {0} in batch attributes")]
    UnknownCodec(i16),

    /// Decompressed output would exceed the caller's cap (protects against decompression bombs).
    #[error("decompressed records exceed the limit of {0} bytes")]
    DecompressedTooLarge(usize),

    /// A batch being built does not fit Kafka's 32-bit length fields.
    #[error("record batch too large to encode: {0}")]
    TooLarge(String),
}
