//! Durability of producer state: `<offset>.snapshot` files (Kafka's name: the 20-digit offset
//! the state is complete up to) written at segment rolls and at close, loaded at open and
//! completed by replaying the batch headers after them, so a producer retrying across a
//! restart or a crash still gets no duplicates. Also expiry (`producer.id.expiration.ms`).
//!
//! On-disk format (Skiff's own, big-endian; Kafka's keeps only the last batch per producer,
//! this keeps the five that duplicate detection uses):
//! `version: i16 (=1) | crc32c of everything after this field: u32 | count: i32 |`
//! `count × (producer_id i64 | epoch i16 | last_timestamp i64 | coordinator_epoch i32 |`
//! `txn_first_offset i64 (-1 = none) | batch_count i8 | batch_count × (first_seq i32 |`
//! `last_seq i32 | first_offset i64 | last_offset i64 | timestamp i64))`.
//! A snapshot that fails its CRC or bounds checks is deleted and an older one (or a full
//! replay) is used instead.
//!
//! This file: the format and the snapshot files. The `Log` side (load at open, queue under
//! the append lock, write after it, expiry) is `log/producers.rs`.
//!
//! Thread-safety: snapshots are encoded under the append lock (cheap, in memory) and queued in
//! `Log::pending_snapshots`; files are written (fsync'd) by whoever next calls
//! `write_pending_snapshots` without the append lock held, as the style rules require. A
//! snapshot that never reaches the disk only means a longer replay.

use crate::error::{LogError, Result};
use crate::producer_state::{BatchMetadata, ProducerEntry, BATCHES_TO_RETAIN};
use crate::recovery::{dir_files, parse_segment_name};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

pub(crate) const SNAPSHOT_SUFFIX: &str = "snapshot";
const VERSION: i16 = 1;
const ENTRY_LEN: usize = 8 + 2 + 8 + 4 + 8 + 1;
const BATCH_LEN: usize = 4 + 4 + 8 + 8 + 8;

pub(crate) fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}.{SNAPSHOT_SUFFIX}"))
}

/// Serialises producer entries in the snapshot format.
pub(crate) fn encode(entries: &[ProducerEntry]) -> Vec<u8> {
    let mut body = Vec::with_capacity(4 + entries.len() * (ENTRY_LEN + 2 * BATCH_LEN));
    body.extend_from_slice(
        &i32::try_from(entries.len())
            .unwrap_or(i32::MAX)
            .to_be_bytes(),
    );
    for e in entries.iter().take(i32::MAX as usize) {
        body.extend_from_slice(&e.producer_id.to_be_bytes());
        body.extend_from_slice(&e.epoch.to_be_bytes());
        body.extend_from_slice(&e.last_timestamp.to_be_bytes());
        body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        body.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
        let batches: Vec<&BatchMetadata> = e.batches.iter().take(BATCHES_TO_RETAIN).collect();
        body.push(batches.len() as u8);
        for b in batches {
            body.extend_from_slice(&b.first_seq.to_be_bytes());
            body.extend_from_slice(&b.last_seq.to_be_bytes());
            body.extend_from_slice(&b.first_offset.to_be_bytes());
            body.extend_from_slice(&b.last_offset.to_be_bytes());
            body.extend_from_slice(&b.timestamp.to_be_bytes());
        }
    }
    let mut out = Vec::with_capacity(6 + body.len());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Bounds-checked reader over a snapshot body.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        let bytes = self
            .buf
            .get(self.pos..self.pos + N)
            .and_then(|b| <[u8; N]>::try_from(b).ok())
            .ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        self.pos += N;
        Ok(bytes)
    }
    fn i8(&mut self) -> std::result::Result<i8, String> {
        self.take::<1>().map(i8::from_be_bytes)
    }
    fn i16(&mut self) -> std::result::Result<i16, String> {
        self.take::<2>().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> std::result::Result<i32, String> {
        self.take::<4>().map(i32::from_be_bytes)
    }
    fn i64(&mut self) -> std::result::Result<i64, String> {
        self.take::<8>().map(i64::from_be_bytes)
    }
}

/// Parses a snapshot file's bytes; the message says what is wrong.
pub(crate) fn decode(bytes: &[u8]) -> std::result::Result<Vec<ProducerEntry>, String> {
    let mut head = Reader { buf: bytes, pos: 0 };
    let version = head.i16()?;
    if version != VERSION {
        return Err(format!("unknown snapshot version {version}"));
    }
    let crc = u32::from_be_bytes(head.take::<4>()?);
    let body = bytes.get(6..).unwrap_or(&[]);
    if crc32c::crc32c(body) != crc {
        return Err("CRC mismatch".to_string());
    }
    let mut r = Reader { buf: body, pos: 0 };
    let count = r.i32()?;
    let count = usize::try_from(count).map_err(|_| format!("negative entry count {count}"))?;
    if count > body.len() / ENTRY_LEN {
        return Err(format!("entry count {count} exceeds the file size"));
    }
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let producer_id = r.i64()?;
        let epoch = r.i16()?;
        let last_timestamp = r.i64()?;
        let coordinator_epoch = r.i32()?;
        let txn = r.i64()?;
        let n = r.i8()?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= BATCHES_TO_RETAIN)
            .ok_or_else(|| format!("invalid batch count {n} for producer {producer_id}"))?;
        let mut batches = VecDeque::with_capacity(n);
        for _ in 0..n {
            batches.push_back(BatchMetadata {
                first_seq: r.i32()?,
                last_seq: r.i32()?,
                first_offset: r.i64()?,
                last_offset: r.i64()?,
                timestamp: r.i64()?,
            });
        }
        entries.push(ProducerEntry {
            producer_id,
            epoch,
            batches,
            last_timestamp,
            coordinator_epoch,
            current_txn_first_offset: (txn >= 0).then_some(txn),
        });
    }
    if r.pos != body.len() {
        return Err(format!("{} trailing bytes", body.len() - r.pos));
    }
    Ok(entries)
}

/// `(offset, path)` of every snapshot file in `dir`, oldest first; leftover temp files of an
/// interrupted snapshot write are removed.
pub(crate) fn list_snapshots(dir: &Path) -> Result<Vec<(i64, PathBuf)>> {
    let mut out = Vec::new();
    for (path, name) in dir_files(dir)? {
        match parse_segment_name(&name) {
            Some((offset, SNAPSHOT_SUFFIX)) => out.push((offset, path)),
            Some((_, "snapshot.tmp")) => remove(&path)?,
            _ => {}
        }
    }
    out.sort();
    Ok(out)
}

/// Removes a snapshot file (a missing one is fine).
pub(crate) fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io("remove snapshot", path, e)),
    }
}
