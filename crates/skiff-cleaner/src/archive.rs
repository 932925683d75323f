//! History beside state (`skiff.compaction.archive.topic`, docs/compaction.md §5.11): before a
//! pass swaps in segments without some records, it appends those records to an archive topic
//! and fsyncs it, so the archive plus the compacted topic hold every record ever written.
//!
//! Owns: the archive record format, the [`ArchiveSink`] a pass writes through (the broker's
//! logs implement it via [`LogArchive`]), the buffering of removed records into batches, the
//! durable *pass intent* file and the recovery scan that makes archiving exactly once across
//! crashes (the argument is in docs/compaction.md §5.11).
//!
//! Thread-safety: an [`Archiver`] belongs to one pass on one cleaner thread. Several passes
//! (of different source partitions) may append to one archive partition at once: appends are
//! serialized by the archive log itself, and the recovery scan only looks at records whose
//! headers name its own source partition.
//!
//! Disk: `skiff-archive-intent` in the *source* partition's directory, written atomically
//! (temp, fsync, rename, fsync dir): one line `v1 <archive topic> <archive partition> <from>`,
//! where `from` is the archive partition's end offset before the first archive append of the
//! pass that has not finished yet. Removed once a pass has swapped out every record that the
//! unfinished attempts archived.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use skiff_log::{write_atomically, Log};
use skiff_records::{records, BatchBuilder, Batches, Compression};

use crate::error::{CleanerError, Result};

/// Header names on archived records (Skiff's own, values in ASCII decimal or plain text so any
/// client can read them).
pub const HEADER_SOURCE_TOPIC: &str = "skiff.source.topic";
pub const HEADER_SOURCE_PARTITION: &str = "skiff.source.partition";
pub const HEADER_SOURCE_OFFSET: &str = "skiff.source.offset";
pub const HEADER_SOURCE_TIMESTAMP: &str = "skiff.source.timestamp";
pub const HEADER_REASON: &str = "skiff.archive.reason";

/// File holding the pass intent, in the source partition's directory.
pub const INTENT_FILE: &str = "skiff-archive-intent";

/// Archive batches are cut at about this many bytes of record data: large enough that the
/// per-batch overhead is small, well under the 1 MiB default `max.message.bytes`.
const BATCH_TARGET_BYTES: usize = 256 << 10;
/// Read size of the recovery scan.
const SCAN_READ_BYTES: usize = 1 << 20;
/// Cap on a batch's decompressed size while scanning (our batches hold about
/// `BATCH_TARGET_BYTES`; other writers' batches may be larger, as the log's own reads allow).
const SCAN_MAX_DECOMPRESSED: usize = 128 << 20;
/// A pass that archived at least this many records stops after the group that crossed it (the
/// rest is cleaned by the next pass). Bounds the recovery scan's offset set (8 bytes each)
/// to this plus one group's removals.
pub const MAX_RECORDS_PER_PASS: u64 = 1 << 20;

/// Why a record went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveReason {
    /// A later record of the same key exists.
    Superseded,
    /// A tombstone whose delete horizon passed.
    Tombstone,
    /// A record without a key, written before the topic became compacted.
    Keyless,
}

impl ArchiveReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveReason::Superseded => "superseded",
            ArchiveReason::Tombstone => "tombstone",
            ArchiveReason::Keyless => "keyless",
        }
    }
}

/// One record a pass removes, copied out of its batch.
#[derive(Clone, Debug, PartialEq)]
pub struct RemovedRecord {
    pub offset: i64,
    /// The record's absolute timestamp (the batch's max timestamp for LogAppendTime).
    pub timestamp: i64,
    /// `None` only for a keyless record.
    pub key: Option<Bytes>,
    /// `None` for a tombstone.
    pub value: Option<Bytes>,
    pub headers: Vec<(Bytes, Option<Bytes>)>,
    pub reason: ArchiveReason,
}

impl RemovedRecord {
    fn size(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, |v| v.len()) + 8)
            .sum();
        self.key.as_ref().map_or(0, |k| k.len())
            + self.value.as_ref().map_or(0, |v| v.len())
            + headers
            + 96
    }
}

/// Source offsets an interrupted attempt of a pass already archived (sorted, distinct).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArchivedOffsets(Vec<i64>);

impl ArchivedOffsets {
    pub fn from_unsorted(mut offsets: Vec<i64>) -> ArchivedOffsets {
        offsets.sort_unstable();
        offsets.dedup();
        ArchivedOffsets(offsets)
    }

    pub fn contains(&self, offset: i64) -> bool {
        self.0.binary_search(&offset).is_ok()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The highest offset, if any.
    pub fn last(&self) -> Option<i64> {
        self.0.last().copied()
    }
}

/// Where a pass puts removed records: one partition of the archive topic.
pub trait ArchiveSink: Send + Sync {
    /// The archive topic and partition, for the intent file and log lines.
    fn target(&self) -> (&str, i32);
    /// The archive partition's log end offset.
    fn end_offset(&self) -> i64;
    /// Its log start offset (retention may have removed older archive records).
    fn start_offset(&self) -> i64;
    /// Appends one batch (built by [`Archiver`]; offsets are assigned by the archive log).
    fn append(&self, batch: &[u8], now_ms: i64) -> Result<()>;
    /// Makes every append so far durable (fsync).
    fn sync(&self) -> Result<()>;
    /// Whole batches from `offset` (at least one when there is one), for the recovery scan.
    fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes>;
    /// A pass that archived this many records stops after the current group (the rest is
    /// left to the next pass), which bounds what a rerun's recovery scan holds in memory.
    fn max_records_per_pass(&self) -> u64 {
        MAX_RECORDS_PER_PASS
    }
    /// The codec of the archive batches.
    fn codec(&self) -> Compression {
        Compression::None
    }
}

/// A callback run after each fsync of the archive (the broker wakes the partition's parked
/// fetches: the records were appended behind its back).
pub type OnSync = Arc<dyn Fn() + Send + Sync>;

/// [`ArchiveSink`] over a partition [`Log`] of the archive topic.
pub struct LogArchive {
    pub topic: String,
    pub partition: i32,
    pub log: Arc<Log>,
    pub on_sync: Option<OnSync>,
}

impl ArchiveSink for LogArchive {
    fn target(&self) -> (&str, i32) {
        (&self.topic, self.partition)
    }

    fn end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    fn start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    fn append(&self, batch: &[u8], now_ms: i64) -> Result<()> {
        // Internal: the records keep their original (possibly old) timestamps, which client
        // appends would refuse under `message.timestamp.before.max.ms`.
        self.log.append_internal(batch, 0, now_ms)?;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.log.flush()?;
        if let Some(f) = &self.on_sync {
            f();
        }
        Ok(())
    }

    fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes> {
        Ok(self.log.read(offset, max_bytes, true)?.records)
    }

    /// The archive topic's `compression.type` (history is large and compresses well);
    /// uncompressed for `producer`, as the cleaner is the producer here.
    fn codec(&self) -> Compression {
        skiff_log::target_codec(&self.log.config().compression_type).unwrap_or(Compression::None)
    }
}

/// What an unfinished pass recorded before its first archive append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassIntent {
    pub archive_topic: String,
    pub archive_partition: i32,
    /// The archive partition's end offset before that pass's first append.
    pub from_offset: i64,
}

fn intent_path(dir: &Path) -> PathBuf {
    dir.join(INTENT_FILE)
}

/// Reads the intent left by an unfinished pass. An unreadable file is an error: guessing could
/// archive records twice.
pub fn read_intent(dir: &Path) -> Result<Option<PassIntent>> {
    let path = intent_path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CleanerError::Archive(format!(
                "read {} failed: {e}",
                path.display()
            )))
        }
    };
    let bad = || CleanerError::Archive(format!("{}: unreadable archive intent", path.display()));
    let mut parts = text.split_whitespace();
    if parts.next() != Some("v1") {
        return Err(bad());
    }
    let archive_topic = parts.next().ok_or_else(bad)?.to_string();
    let archive_partition = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let from_offset = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    Ok(Some(PassIntent {
        archive_topic,
        archive_partition,
        from_offset,
    }))
}

/// Writes the intent durably (before any archive append of the pass).
pub fn write_intent(dir: &Path, intent: &PassIntent) -> Result<()> {
    let line = format!(
        "v1 {} {} {}\n",
        intent.archive_topic, intent.archive_partition, intent.from_offset
    );
    write_atomically(&intent_path(dir), line.as_bytes())?;
    Ok(())
}

/// Removes the intent once the pass has swapped every group (durably: the directory is synced).
pub fn clear_intent(dir: &Path) -> Result<()> {
    let path = intent_path(dir);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(CleanerError::Archive(format!(
                "remove {} failed: {e}",
                path.display()
            )))
        }
    }
    skiff_log::fsync_dir(dir)?;
    Ok(())
}

/// Scans the archive partition from `from` to its end and returns the source offsets of the
/// records that came from `topic`-`partition`.
pub fn scan_archived(
    sink: &dyn ArchiveSink,
    from: i64,
    topic: &str,
    partition: i32,
) -> Result<ArchivedOffsets> {
    let end = sink.end_offset();
    let mut at = from.max(sink.start_offset());
    let mut found = Vec::new();
    let partition_text = partition.to_string();
    while at < end {
        let bytes = sink.read(at, SCAN_READ_BYTES)?;
        if bytes.is_empty() {
            break;
        }
        let mut next = at;
        for item in Batches::new(&bytes) {
            let (h, batch) = item.map_err(|source| CleanerError::Corrupt { offset: at, source })?;
            next = next.max(h.last_offset() + 1);
            if h.is_control() {
                continue;
            }
            let recs =
                records(batch, SCAN_MAX_DECOMPRESSED).map_err(|source| CleanerError::Corrupt {
                    offset: h.base_offset,
                    source,
                })?;
            for r in recs {
                if let Some(offset) = source_offset(&r.headers, topic, &partition_text) {
                    found.push(offset);
                }
            }
        }
        if next <= at {
            break;
        }
        at = next;
    }
    Ok(ArchivedOffsets::from_unsorted(found))
}

/// The source offset of an archived record when its headers name `topic` and `partition`.
fn source_offset(headers: &[(Bytes, Option<Bytes>)], topic: &str, partition: &str) -> Option<i64> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.as_ref() == name.as_bytes())
            .and_then(|(_, v)| v.as_deref())
    };
    if get(HEADER_SOURCE_TOPIC)? != topic.as_bytes()
        || get(HEADER_SOURCE_PARTITION)? != partition.as_bytes()
    {
        return None;
    }
    std::str::from_utf8(get(HEADER_SOURCE_OFFSET)?)
        .ok()?
        .parse()
        .ok()
}

/// Buffers one pass's removed records and appends them to the sink as batches.
pub struct Archiver<'a> {
    sink: &'a dyn ArchiveSink,
    topic: String,
    partition: String,
    pending: Vec<RemovedRecord>,
    pending_bytes: usize,
    now_ms: i64,
    /// Records appended so far.
    pub records: u64,
    /// Bytes of the batches appended (what the archive log grew by).
    pub batch_bytes: u64,
}

impl<'a> Archiver<'a> {
    pub fn new(sink: &'a dyn ArchiveSink, topic: &str, partition: i32, now_ms: i64) -> Self {
        Archiver {
            sink,
            topic: topic.to_string(),
            partition: partition.to_string(),
            pending: Vec::new(),
            pending_bytes: 0,
            now_ms,
            records: 0,
            batch_bytes: 0,
        }
    }

    /// Queues records (in source offset order); appends a batch once enough is pending.
    pub fn add(&mut self, removed: Vec<RemovedRecord>) -> Result<()> {
        for r in removed {
            self.pending_bytes += r.size();
            self.pending.push(r);
            if self.pending_bytes >= BATCH_TARGET_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Appends whatever is pending as one batch (not synced).
    pub fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut b = BatchBuilder::new(0, self.sink.codec());
        for r in &self.pending {
            let offset = r.offset.to_string();
            let ts = r.timestamp.to_string();
            let mut headers: Vec<(&[u8], Option<&[u8]>)> = r
                .headers
                .iter()
                .map(|(k, v)| (k.as_ref(), v.as_deref()))
                .collect();
            headers.push((HEADER_SOURCE_TOPIC.as_bytes(), Some(self.topic.as_bytes())));
            headers.push((
                HEADER_SOURCE_PARTITION.as_bytes(),
                Some(self.partition.as_bytes()),
            ));
            headers.push((HEADER_SOURCE_OFFSET.as_bytes(), Some(offset.as_bytes())));
            headers.push((HEADER_SOURCE_TIMESTAMP.as_bytes(), Some(ts.as_bytes())));
            headers.push((HEADER_REASON.as_bytes(), Some(r.reason.as_str().as_bytes())));
            b.push(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers);
        }
        let batch = b.build().map_err(|source| CleanerError::Corrupt {
            offset: self.pending.first().map_or(-1, |r| r.offset),
            source,
        })?;
        self.sink.append(&batch, self.now_ms)?;
        self.records += self.pending.len() as u64;
        self.batch_bytes += batch.len() as u64;
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }

    /// The sink's per-pass bound (see [`ArchiveSink::max_records_per_pass`]).
    pub fn max_records_per_pass(&self) -> u64 {
        self.sink.max_records_per_pass()
    }

    /// Appends what is pending and fsyncs the archive partition.
    pub fn flush_and_sync(&mut self) -> Result<()> {
        self.flush()?;
        #[cfg(any(test, feature = "fault-injection"))]
        crate::fault::archive_step(&self.topic, crate::fault::ArchiveStep::AfterAppend)?;
        self.sink.sync()
    }
}

/// The archive partition of `topic`-`partition` under `archive_topic`, among the broker's
/// logs: partition `partition mod (archive partition count)` (a key lives in one source
/// partition, so its history stays in order in one archive partition). `Ok(None)` when
/// archiving is off; `Err(why)` when it is on but impossible, and the pass must not run.
pub fn resolve_target(
    topic: &str,
    partition: i32,
    archive_topic: &str,
    logs: &[(String, i32, Arc<Log>)],
) -> std::result::Result<Option<LogArchive>, String> {
    if archive_topic.is_empty() {
        return Ok(None);
    }
    if archive_topic.starts_with("__") {
        return Err(format!(
            "archive topic {archive_topic} is an internal topic; history goes to an ordinary one"
        ));
    }
    if archive_topic == topic {
        return Err(format!(
            "archive topic {archive_topic} is the topic itself (skiff.compaction.archive.topic)"
        ));
    }
    let parts: Vec<&(String, i32, Arc<Log>)> =
        logs.iter().filter(|(t, _, _)| t == archive_topic).collect();
    let count = parts.iter().map(|(_, p, _)| *p).max().map_or(0, |m| m + 1);
    if count <= 0 {
        return Err(format!(
            "archive topic {archive_topic} does not exist (skiff.compaction.archive.topic); \
             nothing is removed until it does"
        ));
    }
    let target = partition.rem_euclid(count);
    let Some((_, _, log)) = parts.iter().find(|(_, p, _)| *p == target) else {
        return Err(format!(
            "archive partition {archive_topic}-{target} does not exist"
        ));
    };
    if log.is_closed() {
        return Err(format!(
            "archive partition {archive_topic}-{target} is closed"
        ));
    }
    if log.config().cleanup_policy.compact {
        return Err(format!(
            "archive topic {archive_topic} is compacted: it would drop the history it is \
             meant to keep; set its cleanup.policy to delete"
        ));
    }
    Ok(Some(LogArchive {
        topic: archive_topic.to_string(),
        partition: target,
        log: log.clone(),
        on_sync: None,
    }))
}
