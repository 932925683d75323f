//! skiff-records: a zero-copy view of Kafka RecordBatch v2 (magic 2).
//!
//! Owns the batch format: header parsing ([`BatchHeader`]), iteration over batches stored back
//! to back ([`Batches`]), validation including CRC32C ([`validate_batch`]), record decoding with
//! capped decompression ([`records`]), in-place stamping at append time, and encoding
//! ([`BatchHeader`]'s counterpart [`BatchBuilder`]). No I/O, no async, no shared state: every
//! function is pure over the bytes it is given and safe to call from any thread.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod batches;
mod builder;
mod compression;
mod error;
mod header;
mod record;
mod stamp;
mod varint;

pub use batches::{crc_of, validate_batch, validate_produce_batch, Batches};
pub use builder::{BatchBuilder, NO_TIMESTAMP};
pub use error::RecordsError;
pub use header::{BatchHeader, Compression, TimestampType, HEADER_LEN, LOG_OVERHEAD, MAGIC_V2};
pub use record::{record_at, records, walk_record_keys, walk_records, Record, RecordSummary};
pub use stamp::{stamp_base_offset, stamp_leader_epoch, stamp_log_append_time};
