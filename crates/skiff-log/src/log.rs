//! One partition's log: the ordered segments, log start/end offsets, appends (validate, stamp,
//! roll, write, index), flush, close. Reads and timestamp lookups live in `read.rs`,
//! retention and DeleteRecords in `retention.rs`.
//!
//! Thread-safety: `Log` is `Send + Sync`. `inner` (a Mutex) is the append lock: appends, rolls,
//! retention and segment-list changes hold it. After each change a new immutable `Snapshot`
//! (Arc'd segment list + offsets) is published; readers clone the current snapshot and read
//! the files with positioned reads without taking the append lock. fsync never happens under
//! the append lock (flush clones the segment handles, then syncs). Lock order:
//! `inner` → `snapshot` → a segment's `state`.

use crate::clock::Clock;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::fsutil::fsync_dir;
use crate::producer_state::{CompletedTxn, ProducerCheck, ProducerStateManager};
use crate::recompress::recompress_for_topic;
use crate::recovery::{load_segments, Recovery};
use crate::segment::{read_guard, write_guard, BatchMeta, Segment};
use crate::txn_index::{check_verified, parse_marker, AbortedTxn, Verify};
use crate::validate::{validate_append, Origin};
use skiff_records::{stamp_base_offset, stamp_leader_epoch, stamp_log_append_time, TimestampType};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

/// Per-append inputs the broker supplies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendValidation {
    /// Broker time used for timestamp bounds and LogAppendTime stamping.
    pub now_ms: i64,
}

/// Result of a successful append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    /// The stamped time when the topic uses LogAppendTime.
    pub log_append_time: Option<i64>,
    pub log_start_offset: i64,
    /// Largest batch max timestamp among the appended batches.
    pub max_timestamp: i64,
    /// Bytes written.
    pub bytes: usize,
    /// The batch is an idempotent producer's retry of one already in the log: nothing was
    /// written, and the offsets above are those of the original append (Kafka answers such a
    /// retry with success and the original base offset).
    pub duplicate: bool,
}

/// Result of a read: whole batches, never a partial one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadInfo {
    pub records: bytes::Bytes,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The read stopped here when it was a read_committed one.
    pub last_stable_offset: i64,
}

/// State guarded by the append lock.
pub(crate) struct Inner {
    pub segments: Arc<Vec<Arc<Segment>>>,
    pub log_start: i64,
    pub leo: i64,
    /// Set after an I/O error on the write path or after close: appends are refused.
    pub offline: Option<String>,
    /// First base offsets of segment groups a swap is replacing: retention leaves segments
    /// from the lowest pin on alone until the swap is done (the log start may still move).
    pub pins: Vec<i64>,
    /// Idempotent producers of this partition (`producer_state.rs`).
    pub producers: ProducerStateManager,
    /// Aborted transactions by marker offset (`txn_index.rs`).
    pub aborted: Arc<Vec<AbortedTxn>>,
    /// KIP-890 verification guards by producer id (`txn_index.rs`): (guard, created at ms).
    pub verification: HashMap<i64, (u64, i64)>,
    /// The next guard value: guards are never reused, so a stale verification can not match.
    pub next_guard: u64,
}

/// What readers see: immutable, replaced wholesale under the append lock.
pub(crate) struct Snapshot {
    pub segments: Arc<Vec<Arc<Segment>>>,
    pub log_start: i64,
    pub leo: i64,
    /// First offset of the oldest open transaction.
    pub first_unstable: Option<i64>,
    pub aborted: Arc<Vec<AbortedTxn>>,
}

/// One partition's log. See the module docs for the locking contract.
pub struct Log {
    pub(crate) dir: PathBuf,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) inner: Mutex<Inner>,
    snapshot: RwLock<Arc<Snapshot>>,
    config: RwLock<Arc<LogConfig>>,
    /// Recovery point: every offset below it is on disk.
    flushed: AtomicI64,
    /// A segment file was created since the last directory fsync.
    dir_dirty: AtomicBool,
    /// Set by close and delete_dir, so a running cleaner pass can stop early.
    closed: AtomicBool,
    /// Appends refused because the log was already closed: a shutdown that stops every
    /// writer before closing the logs keeps this at 0 (checked by the broker's tests).
    appends_after_close: AtomicU64,
    /// Producer-state snapshots encoded under the append lock, written (with fsync) after it
    /// is released: `(offset, bytes)`.
    pub(crate) pending_snapshots: Mutex<Vec<(i64, Vec<u8>)>>,
    /// Segments whose `.txnindex` was appended to since the last fsync.
    pub(crate) txn_dirty: Mutex<BTreeSet<i64>>,
    /// Serialises rewrites of `.txnindex` files.
    pub(crate) txn_files: Mutex<()>,
}

impl Log {
    /// Opens (creating if needed) the partition directory `dir`.
    pub fn open(
        dir: &Path,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        recovery: Recovery,
    ) -> Result<Log> {
        Log::open_with_log_start(dir, config, clock, recovery, None)
    }

    /// Like [`Log::open`], with the log start offset from `log-start-offset-checkpoint`:
    /// the start becomes max(checkpoint, first segment base), at most the log end.
    pub fn open_with_log_start(
        dir: &Path,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        recovery: Recovery,
        log_start_checkpoint: Option<i64>,
    ) -> Result<Log> {
        std::fs::create_dir_all(dir).map_err(|e| LogError::io("create log directory", dir, e))?;
        let now = clock.now_ms();
        let mut segments = load_segments(dir, &config, now, recovery)?;
        if segments.is_empty() {
            let base = log_start_checkpoint.unwrap_or(0).max(0);
            segments.push(Segment::create(dir, base, &config, now)?);
        }
        let count = segments.len();
        for s in segments.iter().take(count.saturating_sub(1)) {
            s.seal()?;
        }
        let segments: Vec<Arc<Segment>> = segments.into_iter().map(Arc::new).collect();
        let first_base = segments.first().map(|s| s.base_offset).unwrap_or(0);
        let leo = segments.last().map(|s| s.next_offset()).unwrap_or(0);
        let log_start = log_start_checkpoint.unwrap_or(0).max(first_base).min(leo);
        fsync_dir(dir)?;
        let segments = Arc::new(segments);
        // One per partition: DEBUG. The broker logs one INFO summary of the whole load.
        tracing::debug!(dir = %dir.display(), log_start, log_end = leo,
            segments = segments.len(), "log loaded");
        let log = Log {
            dir: dir.to_path_buf(),
            clock,
            snapshot: RwLock::new(Arc::new(Snapshot {
                segments: segments.clone(),
                log_start,
                leo,
                first_unstable: None,
                aborted: Arc::new(Vec::new()),
            })),
            inner: Mutex::new(Inner {
                segments,
                log_start,
                leo,
                offline: None,
                pins: Vec::new(),
                producers: ProducerStateManager::new(0),
                aborted: Arc::new(Vec::new()),
                verification: HashMap::new(),
                next_guard: 1,
            }),
            config: RwLock::new(Arc::new(config)),
            flushed: AtomicI64::new(leo),
            dir_dirty: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            appends_after_close: AtomicU64::new(0),
            pending_snapshots: Mutex::new(Vec::new()),
            txn_dirty: Mutex::new(BTreeSet::new()),
            txn_files: Mutex::new(()),
        };
        log.load_producer_state()?;
        Ok(log)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        read_guard(&self.snapshot).clone()
    }

    /// Publishes the state in `inner` to readers. Caller holds the append lock.
    pub(crate) fn publish(&self, inner: &Inner) {
        *write_guard(&self.snapshot) = Arc::new(Snapshot {
            segments: inner.segments.clone(),
            log_start: inner.log_start,
            leo: inner.leo,
            first_unstable: inner.producers.first_unstable_offset(),
            aborted: inner.aborted.clone(),
        });
    }

    pub fn config(&self) -> LogConfig {
        (**read_guard(&self.config)).clone()
    }

    pub(crate) fn config_arc(&self) -> Arc<LogConfig> {
        read_guard(&self.config).clone()
    }

    /// Takes effect for the next append/roll/retention check (index sizes and intervals of
    /// existing segments keep the values they were created with, as in Kafka).
    pub fn update_config(&self, config: LogConfig) {
        *write_guard(&self.config) = Arc::new(config);
    }

    /// Validates `batches` (a produce payload of whole batches), stamps offsets, leader epoch
    /// and LogAppendTime, and writes them. Nothing is written when any batch is rejected.
    pub fn append(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        validation: &AppendValidation,
    ) -> Result<AppendInfo> {
        self.append_with_origin(
            batches,
            leader_epoch,
            validation.now_ms,
            Origin::Client,
            Verify::No,
        )
    }

    /// Appends batches written by the broker itself (group/offset records, transaction
    /// markers): framing, CRC and sizes are checked, but not the client-only rules (base
    /// offset 0, no control batches, keys on compacted topics, timestamp bounds). A marker
    /// (control batch) closes its producer's transaction; an older producer epoch is refused.
    pub fn append_internal(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        self.append_with_origin(batches, leader_epoch, now_ms, Origin::Internal, Verify::No)
    }

    pub(crate) fn append_with_origin(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        now: i64,
        origin: Origin,
        verify: Verify,
    ) -> Result<AppendInfo> {
        let config = self.config_arc();
        let validated = validate_append(batches, &config, now, origin)?;
        let (mut buf, validated) = match origin {
            Origin::Client => match recompress_for_topic(batches, &validated, &config)? {
                // Sizes and CRCs of the rebuilt batches are checked again (Kafka does too).
                Some(rebuilt) => {
                    let checked = validate_append(&rebuilt, &config, now, Origin::Internal)?;
                    (rebuilt, checked)
                }
                None => (batches.to_vec(), validated),
            },
            Origin::Internal => (batches.to_vec(), validated),
        };
        let log_append_time = config.message_timestamp_type == TimestampType::LogAppendTime;

        let mut inner = self.lock();
        if let Some(why) = &inner.offline {
            if why == CLOSED {
                self.appends_after_close.fetch_add(1, Ordering::Relaxed);
            }
            return Err(LogError::Offline(why.clone()));
        }
        let first_offset = inner.leo;
        let producer_updates = match origin {
            Origin::Client => {
                let headers: Vec<_> = validated.iter().map(|(h, _)| *h).collect();
                let stored_ts = |h: &skiff_records::BatchHeader| {
                    if log_append_time {
                        now
                    } else {
                        h.max_timestamp
                    }
                };
                match inner
                    .producers
                    .check_append(&headers, first_offset, stored_ts)?
                {
                    ProducerCheck::Append(updates) => {
                        if let Verify::Required(guard) = verify {
                            check_verified(&inner, &headers, guard)?;
                        }
                        updates
                    }
                    ProducerCheck::Duplicate(dup) => {
                        return Ok(AppendInfo {
                            first_offset: dup.first_offset,
                            last_offset: dup.last_offset,
                            log_append_time: None,
                            log_start_offset: inner.log_start,
                            max_timestamp: dup.timestamp,
                            bytes: 0,
                            duplicate: true,
                        });
                    }
                }
            }
            Origin::Internal => Vec::new(),
        };
        let (producer_updates, completed) = match origin {
            Origin::Client => (producer_updates, Vec::new()),
            Origin::Internal => self.check_markers(&inner, &buf, &validated, first_offset)?,
        };
        let mut next = first_offset;
        let mut metas = Vec::with_capacity(validated.len());
        let mut pos = 0usize;
        let mut max_timestamp = -1i64;
        for (h, len) in &validated {
            let Some(batch) = buf.get_mut(pos..pos + len) else {
                return Err(LogError::CorruptMessage("batch bounds changed".to_string()));
            };
            stamp_base_offset(batch, next);
            stamp_leader_epoch(batch, leader_epoch);
            let ts = if log_append_time {
                stamp_log_append_time(batch, now);
                now
            } else {
                h.max_timestamp
            };
            max_timestamp = max_timestamp.max(ts);
            let last = next + i64::from(h.last_offset_delta);
            metas.push(BatchMeta {
                position: pos as u64,
                size: *len as u64,
                last_offset: last,
                max_timestamp: ts,
            });
            pos += len;
            next = last + 1;
        }
        if let Err(e) = self.write_batches(&mut inner, &buf, &metas, &config) {
            if matches!(e, LogError::Io { .. }) {
                tracing::error!(dir = %self.dir.display(), error = %e,
                    "write failed; log taken offline");
                inner.offline = Some(e.to_string());
            }
            return Err(e);
        }
        inner.leo = next;
        inner.producers.commit(producer_updates, next);
        if !inner.verification.is_empty() {
            // A data batch opened the transaction, a marker closed it: either way the guard
            // has served (Kafka's `updateProducers`).
            for (h, _) in &validated {
                if h.is_transactional() {
                    inner.verification.remove(&h.producer_id);
                }
            }
        }
        self.record_completed(&mut inner, &completed);
        self.publish(&inner);
        let log_start_offset = inner.log_start;
        drop(inner);
        self.write_pending_snapshots()?;

        if next - self.flushed.load(Ordering::Acquire) >= config.flush_messages {
            self.flush()?;
        }
        Ok(AppendInfo {
            first_offset,
            last_offset: next - 1,
            log_append_time: log_append_time.then_some(now),
            log_start_offset,
            max_timestamp,
            bytes: buf.len(),
            duplicate: false,
        })
    }

    /// Producer-state effects of the markers among broker-written batches that would start at
    /// `first_offset`: the updated entries and the transactions they close.
    fn check_markers(
        &self,
        inner: &Inner,
        buf: &[u8],
        validated: &[(skiff_records::BatchHeader, usize)],
        first_offset: i64,
    ) -> Result<(Vec<crate::ProducerEntry>, Vec<CompletedTxn>)> {
        if !validated.iter().any(|(h, _)| h.is_control()) {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut state = inner.producers.clone();
        let mut entries = Vec::new();
        let mut completed = Vec::new();
        let (mut pos, mut next) = (0usize, first_offset);
        for (h, len) in validated {
            let offset = next;
            next += i64::from(h.last_offset_delta) + 1;
            let batch = buf.get(pos..pos + len).unwrap_or(&[]);
            pos += len;
            if !h.is_control() || h.producer_id < 0 {
                continue;
            }
            let Some((control, coordinator_epoch)) = parse_marker(batch) else {
                continue;
            };
            let (entry, closed) = state.check_marker(h, control, coordinator_epoch, offset)?;
            state.commit(vec![entry.clone()], next);
            entries.push(entry);
            completed.extend(closed);
        }
        Ok((entries, completed))
    }

    /// Writes stamped batches to the active segment, rolling before any batch that would
    /// break a roll rule. Consecutive batches going to one segment are written at once.
    fn write_batches(
        &self,
        inner: &mut Inner,
        buf: &[u8],
        metas: &[BatchMeta],
        config: &LogConfig,
    ) -> Result<()> {
        let now = self.clock.now_ms();
        let segment_bytes = u64::try_from(config.segment_bytes).unwrap_or(0);
        let mut group_start = 0usize; // first batch not yet written
        let mut active = self.active(inner)?;
        let mut base_pos = active.size();
        for (i, m) in metas.iter().enumerate() {
            let must_roll = if group_start == i {
                active.should_roll(m.size, m.max_timestamp, m.last_offset, config, now)
            } else {
                // Later batches of the same append: only the size and offset-range rules can
                // force a split (Kafka checks once per append; we never exceed its limits).
                let pending: u64 = metas[group_start..i].iter().map(|p| p.size).sum();
                let split = base_pos + pending + m.size > segment_bytes
                    || m.last_offset - active.base_offset > i64::from(i32::MAX);
                if split {
                    self.write_group(&active, buf, &metas[group_start..i], base_pos, now)?;
                    group_start = i;
                }
                split
            };
            if must_roll {
                let new_base = self.batch_base(buf, m);
                self.roll_locked(inner, new_base, config, now)?;
                active = self.active(inner)?;
                base_pos = active.size();
            }
        }
        self.write_group(&active, buf, &metas[group_start..], base_pos, now)
    }

    fn batch_base(&self, buf: &[u8], m: &BatchMeta) -> i64 {
        let at = usize::try_from(m.position).unwrap_or(usize::MAX);
        buf.get(at..at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(i64::from_be_bytes)
            .unwrap_or(m.last_offset)
    }

    fn write_group(
        &self,
        active: &Segment,
        buf: &[u8],
        group: &[BatchMeta],
        base_pos: u64,
        now: i64,
    ) -> Result<()> {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            return Ok(());
        };
        let start = usize::try_from(first.position).unwrap_or(usize::MAX);
        let end = usize::try_from(last.position + last.size).unwrap_or(usize::MAX);
        let Some(bytes) = buf.get(start..end) else {
            return Ok(());
        };
        let metas: Vec<BatchMeta> = group
            .iter()
            .map(|m| BatchMeta {
                position: base_pos + (m.position - first.position),
                ..*m
            })
            .collect();
        active.append(bytes, &metas, now)
    }

    pub(crate) fn active(&self, inner: &Inner) -> Result<Arc<Segment>> {
        inner
            .segments
            .last()
            .cloned()
            .ok_or_else(|| LogError::Offline(format!("{} has no segment", self.dir.display())))
    }

    /// Seals the active segment and starts a new one at `new_base`, queueing a producer-state
    /// snapshot (as Kafka takes one at every roll; written once the lock is released). Caller
    /// holds the lock and publishes afterwards.
    pub(crate) fn roll_locked(
        &self,
        inner: &mut Inner,
        new_base: i64,
        config: &LogConfig,
        now: i64,
    ) -> Result<()> {
        let active = self.active(inner)?;
        active.seal()?;
        self.queue_producer_snapshot(inner);
        let seg = Arc::new(Segment::create(&self.dir, new_base, config, now)?);
        let mut list: Vec<Arc<Segment>> = inner.segments.as_ref().clone();
        list.push(seg);
        inner.segments = Arc::new(list);
        self.dir_dirty.store(true, Ordering::Release);
        tracing::debug!(dir = %self.dir.display(), base_offset = new_base, "rolled segment");
        Ok(())
    }

    /// Rolls a non-empty active segment whose age exceeds `segment.ms` (minus jitter) by the
    /// wall clock. Returns whether it rolled.
    pub fn roll_if_due(&self) -> Result<bool> {
        let config = self.config_arc();
        let now = self.clock.now_ms();
        let mut inner = self.lock();
        if let Some(why) = &inner.offline {
            return Err(LogError::Offline(why.clone()));
        }
        let active = self.active(&inner)?;
        if !active.roll_due_at(&config, now) {
            return Ok(false);
        }
        let leo = inner.leo;
        self.roll_locked(&mut inner, leo, &config, now)?;
        self.publish(&inner);
        drop(inner);
        self.write_pending_snapshots()?;
        Ok(true)
    }

    /// fsyncs every segment holding data above the recovery point, without holding the append
    /// lock during the fsyncs. Returns the new recovery point (exclusive).
    pub fn flush(&self) -> Result<i64> {
        self.sync_txn_index()?;
        self.write_pending_snapshots()?;
        let (segments, leo) = {
            let inner = self.lock();
            let flushed = self.flushed.load(Ordering::Acquire);
            if inner.leo <= flushed && !self.dir_dirty.load(Ordering::Acquire) {
                return Ok(flushed);
            }
            let list = inner.segments.clone();
            let from = list
                .partition_point(|s| s.base_offset <= flushed)
                .saturating_sub(1);
            let count = list.len();
            let dirty: Vec<(Arc<Segment>, bool)> = list
                .iter()
                .enumerate()
                .skip(from)
                .map(|(i, s)| (s.clone(), i + 1 < count))
                .collect();
            (dirty, inner.leo)
        };
        let result = (|| {
            if self.dir_dirty.swap(false, Ordering::AcqRel) {
                if let Err(e) = fsync_dir(&self.dir) {
                    self.dir_dirty.store(true, Ordering::Release);
                    return Err(e);
                }
            }
            for (seg, sealed) in &segments {
                seg.sync(*sealed)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            tracing::error!(dir = %self.dir.display(), error = %e, "fsync failed; log taken offline");
            self.lock().offline = Some(e.to_string());
            return Err(e);
        }
        let prev = self.flushed.fetch_max(leo, Ordering::AcqRel);
        Ok(prev.max(leo))
    }

    /// Recovery point: every offset below it is durable.
    pub fn flushed_offset(&self) -> i64 {
        self.flushed.load(Ordering::Acquire)
    }

    pub fn log_start_offset(&self) -> i64 {
        self.snapshot().log_start
    }

    pub fn log_end_offset(&self) -> i64 {
        self.snapshot().leo
    }

    /// Equal to the log end offset on a single node (no followers).
    pub fn high_watermark(&self) -> i64 {
        self.snapshot().leo
    }

    /// Bytes in all segments.
    pub fn size_bytes(&self) -> u64 {
        self.snapshot().segments.iter().map(|s| s.size()).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.snapshot().segments.len()
    }

    /// Base offsets of the segments, oldest first (for tools and tests).
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.snapshot()
            .segments
            .iter()
            .map(|s| s.base_offset)
            .collect()
    }

    /// Flushes, records the final time index entry and syncs the indexes, then refuses
    /// further appends.
    pub fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        self.flush()?;
        let mut inner = self.lock();
        if inner.offline.as_deref() == Some(CLOSED) {
            return Ok(());
        }
        let active = self.active(&inner)?;
        active.seal()?;
        active.sync(true)?;
        if inner.offline.is_none() {
            inner.offline = Some(CLOSED.to_string());
        }
        // The state at the log end, so the next open needs no replay.
        self.queue_producer_snapshot(&inner);
        drop(inner);
        self.write_pending_snapshots()
    }

    /// How many appends were refused because the log had been closed.
    pub fn appends_after_close(&self) -> u64 {
        self.appends_after_close.load(Ordering::Relaxed)
    }

    /// True once [`Log::close`] or [`Log::delete_dir`] started: a cleaner pass should stop.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// DeleteTopics: closes the log and removes its directory (renamed `*-delete` first so an
    /// interrupted removal is finished at the next startup).
    pub fn delete_dir(self) -> Result<()> {
        // Data is going away: no need to flush it, only to stop writers.
        self.closed.store(true, Ordering::Release);
        self.lock().offline = Some(CLOSED.to_string());
        let name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let nonce: u64 = rand::random();
        let doomed = self
            .dir
            .with_file_name(format!("{name}.{nonce:016x}-delete"));
        std::fs::rename(&self.dir, &doomed)
            .map_err(|e| LogError::io("rename for deletion", &self.dir, e))?;
        if let Some(parent) = doomed.parent() {
            fsync_dir(parent)?;
        }
        std::fs::remove_dir_all(&doomed).map_err(|e| LogError::io("remove", &doomed, e))
    }
}

const CLOSED: &str = "log closed";
