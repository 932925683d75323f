//! One partition's log: every operation on [`Log`] lives in this module tree, one job per
//! file, and `Log`'s fields are private to it.
//!
//! - this file: the `Log` struct, the state behind its append lock (`Inner`) and the state
//!   readers see (`Snapshot`), open, configuration and the offset/size accessors;
//! - `locked`: the append lock as a type, [`AppendLocked`], and what needs it to publish;
//! - `append`: appends (validate, stamp, roll, write, index) and time-based rolls;
//! - `lifecycle`: flush, close, delete;
//! - `read`: lock-free fetches and timestamp lookups;
//! - `retention`: retention and DeleteRecords;
//! - `pinned`: a frozen view for long reads (table snapshots), [`PinnedLog`];
//! - `cleaning`: what the log cleaner reads and writes through the log;
//! - `swap`: swapping a cleaned segment in for the segments it replaces;
//! - `producers`: producer state (load, snapshots, expiry);
//! - `txn`: transactions (markers, the aborted-transaction index, LSO, KIP-890 guards);
//! - `key_index`: the optional key index of a compacted partition (kept current, lookups).
//!
//! Thread-safety: `Log` is `Send + Sync`. `inner` (an `AppendLock`, a Mutex only `locked.rs`
//! can lock) is the append lock: appends, rolls, retention and segment-list changes hold it.
//! The only way to take it is `Log::lock`, which returns an [`AppendLocked`] guard; every
//! function that must run under the lock is a method of that guard (or takes it), so calling
//! one without the lock does not compile. After each change a new immutable `Snapshot` (Arc'd
//! segment list + offsets) is published; readers clone the current snapshot and read the files
//! with positioned reads without taking the append lock. fsync never happens under the append
//! lock (flush clones the segment handles, then syncs); the log's fsync paths check it in debug
//! builds (`locked::assert_unlocked`). Two exceptions, both outside normal serving: `open`
//! rewrites the transaction index files before the log is shared, and `close` syncs the
//! sealed active segment under the lock (appends waiting for it are then refused).
//! Lock order: `txn_files` → `inner` → `snapshot` → a segment's `state`; `pending_snapshots`
//! and `txn_dirty` are taken last and briefly; `key_index` (the slot) briefly with no
//! other lock, and the key index's own mutex is never held while taking the append lock. `snapshot_writes` is taken with no other log
//! lock held (only `pending_snapshots`, briefly, under it).

mod append;
mod cleaning;
mod key_index;
mod lifecycle;
mod locked;
mod pinned;
mod producers;
mod read;
mod retention;
mod swap;
mod txn;

use locked::AppendLock;
pub(crate) use locked::AppendLocked;
pub use pinned::{PinnedBatches, PinnedLog};
pub use read::{FileRange, FileRecords};
pub use retention::RetentionOutcome;
#[cfg(test)]
pub(crate) use swap::SwapEnd;

use crate::clock::Clock;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::fsutil::fsync_dir;
use crate::producer_state::ProducerStateManager;
use crate::recovery::{load_segments, Recovery};
use crate::segment::{read_guard, write_guard, Segment};
use crate::txn_index::AbortedTxn;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

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

/// State guarded by the append lock; reached only through an [`AppendLocked`] guard.
pub(crate) struct Inner {
    segments: Arc<Vec<Arc<Segment>>>,
    log_start: i64,
    leo: i64,
    /// Set after an I/O error on the write path or after close: appends are refused.
    offline: Option<String>,
    /// First base offsets of segment groups a swap is replacing: retention leaves segments
    /// from the lowest pin on alone until the swap is done (the log start may still move).
    pins: Vec<i64>,
    /// Idempotent producers of this partition (`producer_state.rs`).
    producers: ProducerStateManager,
    /// Aborted transactions by marker offset (`txn.rs`).
    aborted: Arc<Vec<AbortedTxn>>,
    /// KIP-890 verification guards by producer id (`txn.rs`): (guard, created at ms).
    verification: HashMap<i64, (u64, i64)>,
    /// The next guard value: guards are never reused, so a stale verification can not match.
    next_guard: u64,
}

/// What readers see: immutable, replaced wholesale under the append lock.
struct Snapshot {
    segments: Arc<Vec<Arc<Segment>>>,
    log_start: i64,
    leo: i64,
    /// First offset of the oldest open transaction.
    first_unstable: Option<i64>,
    aborted: Arc<Vec<AbortedTxn>>,
}

/// One partition's log. See the module docs for the locking contract.
pub struct Log {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    /// The append lock: taken only through [`Log::lock`].
    inner: AppendLock,
    snapshot: RwLock<Arc<Snapshot>>,
    config: RwLock<Arc<LogConfig>>,
    /// Recovery point: every offset below it is on disk.
    flushed: AtomicI64,
    /// Crash recovery validated segments without fsyncing them; cleared by
    /// [`Log::take_recovered_unsynced`].
    recovered_unsynced: AtomicBool,
    /// A segment file was created since the last directory fsync.
    dir_dirty: AtomicBool,
    /// Set by close and delete_dir, so a running cleaner pass can stop early.
    closed: AtomicBool,
    /// Appends refused because the log was already closed: a shutdown that stops every
    /// writer before closing the logs keeps this at 0 (checked by the broker's tests).
    appends_after_close: AtomicU64,
    /// (log end, active segment base) when the files on disk already held everything a close
    /// writes (synced indexes, a producer snapshot at the log end): a close that finds the
    /// log still there has nothing to write, which keeps stopping many idle partitions cheap.
    settled_at_open: std::sync::OnceLock<(i64, i64)>,
    /// Producer-state snapshots encoded under the append lock, written (with fsync) after it
    /// is released: `(offset, bytes)`.
    pending_snapshots: Mutex<Vec<(i64, Vec<u8>)>>,
    /// Serialises the snapshot files' writers and listers: listing removes the temp files of
    /// interrupted writes, so retention's listing could delete a temp file another thread
    /// (the produce path) is about to rename into place. Held across the writes' fsyncs;
    /// nothing waits on it but another snapshot writer or lister, and no other log lock is
    /// held while it is.
    snapshot_writes: Mutex<()>,
    /// Segments whose `.txnindex` was appended to since the last fsync.
    txn_dirty: Mutex<BTreeSet<i64>>,
    /// Serialises rewrites of `.txnindex` files.
    txn_files: Mutex<()>,
    /// The key index, when enabled (`skiff.key.index.enable`); taken briefly to clone the Arc.
    key_index: RwLock<Option<Arc<crate::key_index::KeyIndex>>>,
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
        let existed = dir.is_dir();
        if !existed {
            std::fs::create_dir_all(dir)
                .map_err(|e| LogError::io("create log directory", dir, e))?;
        }
        let now = clock.now_ms();
        let loaded = load_segments(dir, &config, now, recovery)?;
        let mut segments = loaded.segments;
        // An open that changed no directory entry needs no directory fsync: skipping it
        // matters when a broker with many partitions starts, after a crash too.
        let changed = !existed || segments.is_empty() || loaded.dir_changed;
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
        if changed {
            fsync_dir(dir)?;
        }
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
            inner: AppendLock::new(Inner {
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
            flushed: AtomicI64::new(loaded.unsynced_from.map_or(leo, |base| base.min(leo))),
            recovered_unsynced: AtomicBool::new(loaded.unsynced_from.is_some()),
            dir_dirty: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            appends_after_close: AtomicU64::new(0),
            settled_at_open: std::sync::OnceLock::new(),
            pending_snapshots: Mutex::new(Vec::new()),
            snapshot_writes: Mutex::new(()),
            txn_dirty: Mutex::new(BTreeSet::new()),
            txn_files: Mutex::new(()),
            key_index: RwLock::new(None),
        };
        log.load_producer_state()?;
        Ok(log)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the append lock.
    fn lock(&self) -> AppendLocked<'_> {
        AppendLocked::new(self)
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        read_guard(&self.snapshot).clone()
    }

    pub fn config(&self) -> LogConfig {
        (**read_guard(&self.config)).clone()
    }

    fn config_arc(&self) -> Arc<LogConfig> {
        read_guard(&self.config).clone()
    }

    /// Takes effect for the next append/roll/retention check (index sizes and intervals of
    /// existing segments keep the values they were created with, as in Kafka).
    pub fn update_config(&self, config: LogConfig) {
        *write_guard(&self.config) = Arc::new(config);
    }

    /// Recovery point: every offset below it is durable.
    pub fn flushed_offset(&self) -> i64 {
        self.flushed.load(Ordering::Acquire)
    }

    /// True once, for a log whose open validated segments after a crash without fsyncing
    /// them: the caller should [`Log::flush`] it soon, off the path to the first request.
    pub fn take_recovered_unsynced(&self) -> bool {
        self.recovered_unsynced.swap(false, Ordering::AcqRel)
    }

    pub fn log_start_offset(&self) -> i64 {
        self.snapshot().log_start
    }

    pub fn log_end_offset(&self) -> i64 {
        self.snapshot().leo
    }

    /// Whether appending `bytes` now is expected to only copy them into the page cache: no
    /// roll of the active segment (by size, time, full index or offset range) and no
    /// `flush.messages` fsync. A guess from the published snapshot, without the append lock:
    /// the broker uses it to choose the thread an append runs on, never for correctness.
    pub fn append_is_light(&self, bytes: usize) -> bool {
        let config = self.config_arc();
        if config.flush_messages != i64::MAX {
            return false;
        }
        let snapshot = self.snapshot();
        let Some(active) = snapshot.segments.last() else {
            return false;
        };
        let now = self.clock.now_ms();
        // Offsets of a batch are at most its byte count past the log end.
        let last_offset = snapshot
            .leo
            .saturating_add(i64::try_from(bytes).unwrap_or(i64::MAX));
        !active.should_roll(bytes as u64, now, last_offset, &config, now)
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

    /// How many appends were refused because the log had been closed.
    pub fn appends_after_close(&self) -> u64 {
        self.appends_after_close.load(Ordering::Relaxed)
    }

    /// True once [`Log::close`] or [`Log::delete_dir`] started: a cleaner pass should stop.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Test hook: pins segments from `base` on, as a running swap does.
    #[cfg(test)]
    pub(crate) fn pin_for_test(&self, base: i64) {
        self.lock().pins.push(base);
    }

    /// Test hook: drops every pin.
    #[cfg(test)]
    pub(crate) fn clear_pins_for_test(&self) {
        self.lock().pins.clear();
    }
}

/// `Inner::offline` of a closed log.
const CLOSED: &str = "log closed";
