//! Compacted topics read as tables through the HTTP API (`skiff.http.listener`,
//! docs/http-api.md, docs/key-index.md, docs/snapshots.md), against the real binary with
//! librdkafka producers and consumers:
//! - every write acknowledged with acks=1 or acks=all is visible to the very next key lookup,
//!   tombstones answer 404, and a compaction pass changes no answer (tombstones it removed
//!   still answer 404);
//! - concurrent writers (acks=1, acks=all, idempotent; bursts acknowledged together) each see
//!   their own last acknowledged write of every key they own at the next lookup;
//! - lookups never flicker (404, stale, error) while compact-now passes swap segments under
//!   a churning writer;
//! - transactions: read_committed lookups see committed data only, read_uncommitted also the
//!   open transaction, nobody an aborted one;
//! - committed, aborted and superseded transactions answer the same in both isolations
//!   before and after compaction passes and after rebuilds (restart, kill -9) over the
//!   cleaned log;
//! - an open transaction cut by kill -9 is rebuilt into the index (read_uncommitted sees it,
//!   read_committed does not) and hidden from both once the timeout abort is written;
//! - a snapshot taken while a producer and the cleaner run, followed by consuming each
//!   partition from the snapshot's end offsets, ends with exactly the last write of every key;
//!   the same with read_committed and transactional producers that commit and abort;
//! - a read_committed snapshot ends at the last stable offset of an open transaction (later
//!   plain writes are left to the tail), a read_uncommitted one at the high watermark;
//! - the index follows `skiff.key.index.enable` switched off and on (writes made while off
//!   count), DeleteRecords (keys below the log start answer 404) and a topic deleted and
//!   created again under the same name (nothing of the old one answers);
//! - cleanup.policy cannot leave compact while the index is on (INVALID_CONFIG); turned off
//!   together and back on, the index is rebuilt over a log with a keyless record;
//! - partitions added with CreatePartitions are indexed, before and after a restart;
//! - a partition whose index outgrows `skiff.key.index.memory.bytes` answers 503 over_budget
//!   while appends, the other partition's lookups and the snapshot keep working;
//! - a snapshot read in many hash slices (tiny `skiff.snapshot.memory.bytes`) holds every live
//!   key once, in both isolations;
//! - binary keys and values: base64 keys in the path (CRC-32 over the raw bytes), flagged
//!   base64 fields in text answers, `encoding=base64` answers and snapshots;
//! - lookups answer any record of gzip/snappy/lz4/zstd batches, headers included;
//! - lookups find keys written with librdkafka's murmur2_random (the route's default
//!   partitioner) and consistent_random (crc32) partitioners, keys that need escaping too;
//! - with SASL/PLAIN and ACLs, a user without READ gets 403 for lookups and snapshots and a
//!   user with READ gets 200; the dry run needs DESCRIBE, compact-now ALTER, a ticket DESCRIBE.
//!
//! Each test owns its broker (Kafka port plus an HTTP port). Every wait is a bounded poll.
//!
//! Layout: tests by theme in `tables_cases/` (lookups, transactions, snapshots, index
//! lifecycle, encodings, ACLs), shared helpers in `tables_support/`.
#![allow(clippy::unwrap_used)]

mod common;
mod tables_cases;
mod tables_support;
