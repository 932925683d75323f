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
//! Thread-safety: snapshots are encoded under the append lock (cheap, in memory) and queued in
//! `Log::pending_snapshots`; files are written (fsync'd) by whoever next calls
//! `write_pending_snapshots` without the append lock held, as the style rules require. A
//! snapshot that never reaches the disk only means a longer replay.

use crate::error::{LogError, Result};
use crate::fsutil::write_atomically;
use crate::log::{Inner, Log};
use crate::producer_state::{
    BatchMetadata, ProducerEntry, ProducerStateManager, BATCHES_TO_RETAIN,
};
use crate::recovery::{dir_files, parse_segment_name};
use crate::txn_index::{parse_marker, AbortedTxn};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

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

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io("remove snapshot", path, e)),
    }
}

impl Log {
    /// At open, before the log is shared: snapshots above the log end (a crash cut the data
    /// they describe) go; the newest readable one at or below the log end is loaded, then the
    /// batch headers after it are replayed.
    pub(crate) fn load_producer_state(&self) -> Result<()> {
        let mut inner = self.lock();
        let leo = inner.leo;
        let mut loaded: Option<(i64, Vec<ProducerEntry>)> = None;
        for (offset, path) in list_snapshots(&self.dir)?.into_iter().rev() {
            if offset > leo || loaded.is_some() {
                if offset > leo {
                    tracing::info!(snapshot = %path.display(), log_end = leo,
                        "removing producer snapshot beyond the log end");
                    remove(&path)?;
                }
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| LogError::io("read", &path, e))?;
            match decode(&bytes) {
                Ok(entries) => loaded = Some((offset, entries)),
                Err(why) => {
                    tracing::warn!(snapshot = %path.display(), reason = %why,
                        "removing unreadable producer snapshot");
                    remove(&path)?;
                }
            }
        }
        let (from, entries) = loaded.unwrap_or((0, Vec::new()));
        let mut state = ProducerStateManager::from_entries(entries, from);
        let mut replayed = 0usize;
        let mut aborted = Vec::new();
        for seg in inner.segments.iter() {
            if seg.next_offset() <= from {
                continue;
            }
            let limit = seg.size();
            let Some((mut pos, _)) = seg.find_position(from, limit)? else {
                continue;
            };
            while let Some(h) = seg.header_at(pos, limit)? {
                let marker = if h.is_control() {
                    parse_marker(&seg.read_exact(pos, h.total_size())?)
                } else {
                    None
                };
                if let Some(done) = state.replay(&h, marker).filter(|c| c.aborted) {
                    aborted.push(AbortedTxn {
                        producer_id: done.producer_id,
                        first_offset: done.first_offset,
                        last_offset: done.last_offset,
                        last_stable_offset: state
                            .first_unstable_offset()
                            .unwrap_or(h.next_offset())
                            .min(h.next_offset()),
                    });
                }
                replayed += 1;
                pos += h.total_size() as u64;
            }
        }
        if replayed > 0 || state.len() > 0 {
            // One per partition at start-up: DEBUG (the broker summarises the load at INFO).
            tracing::debug!(dir = %self.dir.display(), snapshot_offset = from,
                replayed_batches = replayed, producers = state.len(), "producer state loaded");
        }
        inner.producers = state;
        self.load_txn_index(&mut inner, from, aborted)?;
        self.publish(&inner);
        Ok(())
    }

    /// Queues a snapshot of the current producer state. Caller holds the append lock.
    pub(crate) fn queue_producer_snapshot(&self, inner: &Inner) {
        let offset = inner.producers.map_end_offset();
        let bytes = encode(&inner.producers.entries());
        self.pending_snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((offset, bytes));
    }

    /// Writes queued snapshots. Must not be called with the append lock held (fsync).
    pub(crate) fn write_pending_snapshots(&self) -> Result<()> {
        // A snapshot must not describe aborted transactions whose index entry could be lost.
        self.sync_txn_index()?;
        let pending = std::mem::take(
            &mut *self
                .pending_snapshots
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (offset, bytes) in pending {
            write_atomically(&snapshot_path(&self.dir, offset), &bytes)?;
        }
        Ok(())
    }

    /// Removes snapshot files below the first segment's base offset (after retention): the
    /// newest of the kept ones covers everything that is still in the log.
    pub(crate) fn delete_old_snapshots(&self) -> Result<()> {
        let first_base = self.snapshot().segments.first().map(|s| s.base_offset);
        let Some(first_base) = first_base else {
            return Ok(());
        };
        let snapshots = list_snapshots(&self.dir)?;
        let newest = snapshots.last().map(|(o, _)| *o);
        for (offset, path) in snapshots {
            if offset < first_base && Some(offset) != newest {
                remove(&path)?;
            }
        }
        Ok(())
    }

    /// `producer.id.expiration.ms`: forgets producers whose last batch is at least
    /// `expiration_ms` old by the log's clock. Returns how many were removed.
    pub fn remove_expired_producers(&self, expiration_ms: i64) -> usize {
        let now = self.clock.now_ms();
        let removed = self.lock().producers.remove_expired(now, expiration_ms);
        self.remove_stale_guards(now, expiration_ms);
        if removed > 0 {
            tracing::debug!(dir = %self.dir.display(), removed, "expired idle producer ids");
        }
        removed
    }

    /// The producers this partition knows, by producer id (DescribeProducers, tests).
    pub fn producer_entries(&self) -> Vec<ProducerEntry> {
        self.lock().producers.entries()
    }

    /// Offsets of the snapshot files on disk (tests and tools).
    pub fn producer_snapshot_offsets(&self) -> Result<Vec<i64>> {
        Ok(list_snapshots(&self.dir)?
            .into_iter()
            .map(|(o, _)| o)
            .collect())
    }
}
