//! One log segment: `<base>.log` (batches exactly as appended) plus its offset and time
//! indexes, and the in-memory facts the log needs about it (size, next offset, max timestamp,
//! roll base). File names are the base offset zero-padded to 20 digits, as in Kafka.
//!
//! Thread-safety: a `Segment` is shared as `Arc<Segment>` between the log (which mutates it
//! only while holding the partition's append lock) and readers. Mutable facts live behind the
//! `state` RwLock, held only briefly; file reads and writes are positioned (`pread`/`pwrite`),
//! so readers never wait for an append's I/O. Bytes below `state.size` are immutable.
//!
//! Files: the three files are [`CachedFile`]s, open only while the process-wide cache keeps
//! them, so idle segments hold no descriptors (see `file_cache`).

use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::file_cache::CachedFile;
use crate::index::OffsetIndex;
use crate::log::AppendLocked;
use crate::time_index::TimeIndex;
use skiff_records::{BatchHeader, HEADER_LEN, LOG_OVERHEAD};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub(crate) const LOG_SUFFIX: &str = "log";

/// Source of [`Segment::id`]: only uniqueness matters, hence `Relaxed`.
static NEXT_SEGMENT_ID: AtomicU64 = AtomicU64::new(1);
pub(crate) const INDEX_SUFFIX: &str = "index";
pub(crate) const TIME_INDEX_SUFFIX: &str = "timeindex";
pub(crate) const DELETED_SUFFIX: &str = ".deleted";

/// `<dir>/<20-digit base>.<suffix>`
pub(crate) fn segment_path(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}.{suffix}"))
}

pub(crate) fn read_guard<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn write_guard<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// What the log needs to know about one appended (or recovered) batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchMeta {
    pub position: u64,
    pub size: u64,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

/// Mutable facts about a segment. Changed only under the log's append lock.
pub(crate) struct SegState {
    pub size: u64,
    /// Last offset + 1 of the last batch; the base offset when empty.
    pub next_offset: i64,
    /// Largest batch max timestamp so far, -1 if none.
    pub max_timestamp: i64,
    /// Last offset of the first batch that reached `max_timestamp`.
    pub offset_of_max_timestamp: i64,
    /// Max timestamp of the first batch (Kafka's roll base); None when empty.
    pub rolling_base_ts: Option<i64>,
    /// Wall time of the last append (stand-in for file mtime when there are no timestamps).
    pub last_modified_ms: i64,
    pub bytes_since_index: u64,
    pub index: OffsetIndex,
    pub time_index: TimeIndex,
}

impl SegState {
    /// State of a segment with no data yet, creating its empty offset and time indexes.
    pub fn create_empty(
        index_path: &Path,
        time_index_path: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<SegState> {
        let index = OffsetIndex::create(
            index_path,
            base_offset,
            config.segment_index_bytes,
            Vec::new(),
        )?;
        let time_index = TimeIndex::create(
            time_index_path,
            base_offset,
            config.segment_index_bytes,
            Vec::new(),
        )?;
        Ok(SegState {
            size: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            rolling_base_ts: None,
            last_modified_ms: now_ms,
            bytes_since_index: 0,
            index,
            time_index,
        })
    }

    /// Folds one batch into the facts and the indexes, as Kafka's `LogSegment.append` does:
    /// an index entry when more than `index.interval.bytes` were appended since the last one.
    pub fn observe(&mut self, b: &BatchMeta, index_interval: u64, now_ms: i64) -> Result<()> {
        if self.rolling_base_ts.is_none() {
            self.rolling_base_ts = Some(b.max_timestamp);
        }
        if b.max_timestamp > self.max_timestamp {
            self.max_timestamp = b.max_timestamp;
            self.offset_of_max_timestamp = b.last_offset;
        }
        self.size = self.size.max(b.position + b.size);
        self.next_offset = b.last_offset + 1;
        self.last_modified_ms = now_ms;
        if self.bytes_since_index > index_interval {
            self.index.append(b.last_offset, b.position)?;
            self.time_index.maybe_append(
                self.max_timestamp,
                self.offset_of_max_timestamp,
                false,
            )?;
            self.bytes_since_index = 0;
        }
        self.bytes_since_index += b.size;
        Ok(())
    }
}

pub(crate) struct Segment {
    pub base_offset: i64,
    /// Unique within the process: a segment swapped in, rolled or reopened gets a new one, so
    /// facts kept about a segment elsewhere (the cleaner's summaries) can tell it apart.
    pub id: u64,
    log_path: PathBuf,
    file: CachedFile,
    created_ms: i64,
    /// Random part subtracted from `segment.ms` for this segment.
    jitter_ms: i64,
    /// `index.interval.bytes` captured when the segment was created or loaded.
    index_interval: u64,
    pub state: RwLock<SegState>,
}

impl Segment {
    /// Creates a new, empty segment (fails if its log file already exists).
    pub fn create(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Segment> {
        let log_path = segment_path(dir, base_offset, LOG_SUFFIX);
        let file = CachedFile::open_with(
            &log_path,
            OpenOptions::new().read(true).write(true).create_new(true),
        )
        .map_err(|e| LogError::io("create segment", &log_path, e))?;
        let state = SegState::create_empty(
            &segment_path(dir, base_offset, INDEX_SUFFIX),
            &segment_path(dir, base_offset, TIME_INDEX_SUFFIX),
            base_offset,
            config,
            now_ms,
        )?;
        Ok(Segment::from_parts(
            base_offset,
            log_path,
            file,
            config,
            now_ms,
            state,
        ))
    }

    /// Wraps an already recovered segment.
    pub fn from_parts(
        base_offset: i64,
        log_path: PathBuf,
        file: CachedFile,
        config: &LogConfig,
        now_ms: i64,
        state: SegState,
    ) -> Segment {
        Segment {
            base_offset,
            id: NEXT_SEGMENT_ID.fetch_add(1, Ordering::Relaxed),
            log_path,
            file,
            created_ms: now_ms,
            jitter_ms: draw_jitter(config),
            index_interval: u64::try_from(config.index_interval_bytes).unwrap_or(0),
            state: RwLock::new(state),
        }
    }

    pub fn size(&self) -> u64 {
        read_guard(&self.state).size
    }

    pub fn next_offset(&self) -> i64 {
        read_guard(&self.state).next_offset
    }

    pub fn max_timestamp(&self) -> i64 {
        read_guard(&self.state).max_timestamp
    }

    /// Kafka's `largestTimestamp`: max record timestamp, else the last modification time.
    pub fn largest_timestamp(&self) -> i64 {
        let st = read_guard(&self.state);
        if st.max_timestamp >= 0 {
            st.max_timestamp
        } else {
            st.last_modified_ms
        }
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Writes `bytes` (whole stamped batches described by `metas`, positions already relative
    /// to this file) at the current end, then updates facts and indexes. Only under the log's
    /// append lock, whose guard it takes.
    pub fn append(
        &self,
        _locked: &AppendLocked<'_>,
        bytes: &[u8],
        metas: &[BatchMeta],
        now_ms: i64,
    ) -> Result<()> {
        let pos = self.size();
        self.file
            .get()
            .and_then(|f| f.write_all_at(bytes, pos))
            .map_err(|e| LogError::io_at("append to", &self.log_path, pos, e))?;
        let mut st = write_guard(&self.state);
        for m in metas {
            st.observe(m, self.index_interval, now_ms)?;
        }
        Ok(())
    }

    /// Kafka's `LogSegment.shouldRoll`, checked before writing a batch of `incoming_size` bytes
    /// whose last offset is `last_offset` and whose max timestamp is `incoming_ts`.
    /// An empty segment never rolls (its replacement would have the same name).
    pub fn should_roll(
        &self,
        incoming_size: u64,
        incoming_ts: i64,
        last_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> bool {
        let st = read_guard(&self.state);
        if st.size == 0 {
            return false;
        }
        let segment_bytes = u64::try_from(config.segment_bytes).unwrap_or(0);
        st.size + incoming_size > segment_bytes
            || self.time_roll_due(&st, incoming_ts, config, now_ms)
            || st.index.is_full()
            || st.time_index.is_full()
            || last_offset - self.base_offset > i64::from(i32::MAX)
    }

    /// Wall-clock roll check for an idle active segment (Skiff's timer).
    pub fn roll_due_at(&self, config: &LogConfig, now_ms: i64) -> bool {
        let st = read_guard(&self.state);
        st.size > 0 && self.time_roll_due(&st, now_ms, config, now_ms)
    }

    fn time_roll_due(
        &self,
        st: &SegState,
        incoming_ts: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> bool {
        if st.size == 0 {
            return false;
        }
        let max_segment_ms = if config.cleanup_policy.compact {
            config.segment_ms.min(config.max_compaction_lag_ms)
        } else {
            config.segment_ms
        };
        let waited = match st.rolling_base_ts {
            Some(base) if base >= 0 => incoming_ts.saturating_sub(base),
            _ => now_ms.saturating_sub(self.created_ms),
        };
        waited > max_segment_ms.saturating_sub(self.jitter_ms)
    }

    /// Called when the segment stops being the active one: records the final maximum in the
    /// time index, as Kafka's `onBecomeInactiveSegment` does.
    pub fn seal(&self) -> Result<()> {
        let mut st = write_guard(&self.state);
        let (ts, off) = (st.max_timestamp, st.offset_of_max_timestamp);
        st.time_index.maybe_append(ts, off, true)
    }

    /// fsyncs the log data (and the indexes when `with_indexes`).
    pub fn sync(&self, with_indexes: bool) -> Result<()> {
        self.file
            .get()
            .and_then(|f| f.sync_data())
            .map_err(|e| LogError::io("fsync segment", &self.log_path, e))?;
        if with_indexes {
            let st = read_guard(&self.state);
            st.index.sync()?;
            st.time_index.sync()?;
        }
        Ok(())
    }

    /// The open log file, for a reader that sends a range of it as it is (sendfile). The
    /// handle stays valid after the segment is deleted, as reads through `read_exact` do.
    pub fn log_file(&self) -> Result<Arc<fs::File>> {
        self.file
            .get()
            .map_err(|e| LogError::io("open", &self.log_path, e))
    }

    /// Reads exactly `len` bytes at `pos`.
    pub fn read_exact(&self, pos: u64, len: usize) -> Result<Vec<u8>> {
        self.file
            .get()
            .and_then(|f| read_exact_at(&f, pos, len))
            .map_err(|e| LogError::io_at("read", &self.log_path, pos, e))
    }

    /// Header of the batch at `pos`, if a whole header lies below `limit`.
    pub fn header_at(&self, pos: u64, limit: u64) -> Result<Option<BatchHeader>> {
        if pos + HEADER_LEN as u64 > limit {
            return Ok(None);
        }
        let buf = self.read_exact(pos, HEADER_LEN)?;
        let h = BatchHeader::parse(&buf).map_err(|e| {
            LogError::CorruptMessage(format!(
                "{} at position {pos}: {e}",
                self.log_path.display()
            ))
        })?;
        if h.batch_length < (HEADER_LEN - LOG_OVERHEAD) as i32 {
            return Err(LogError::CorruptMessage(format!(
                "{} at position {pos}: batch length {} too small",
                self.log_path.display(),
                h.batch_length
            )));
        }
        Ok(Some(h))
    }

    /// Position of the first batch whose last offset is >= `offset`, scanning forward from the
    /// offset index's floor entry; None if no such batch lies below `limit`.
    pub fn find_position(&self, offset: i64, limit: u64) -> Result<Option<(u64, BatchHeader)>> {
        let mut pos = read_guard(&self.state).index.lookup(offset);
        while let Some(h) = self.header_at(pos, limit)? {
            if h.last_offset() >= offset {
                return Ok(Some((pos, h)));
            }
            pos += h.total_size() as u64;
        }
        Ok(None)
    }

    /// Renames the files to `*.deleted` and removes them. Readers holding this segment keep
    /// reading through their open handle (POSIX unlink semantics).
    pub fn delete_files(&self) -> Result<()> {
        for deleted in self.rename_to_deleted()? {
            fs::remove_file(&deleted).map_err(|e| LogError::io("remove", &deleted, e))?;
        }
        Ok(())
    }

    /// Renames the log and index files to `*.deleted` (files already missing are skipped);
    /// returns the new paths. The files are kept open first, so readers still holding this
    /// segment keep reading them after the unlink.
    pub fn rename_to_deleted(&self) -> Result<Vec<PathBuf>> {
        let st = read_guard(&self.state);
        let keep = |p: &Path, r: std::io::Result<()>| match r {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(LogError::io("open before deletion", p, e))
            }
            _ => Ok(()),
        };
        keep(&self.log_path, self.file.keep_open())?;
        keep(&st.index.path(), st.index.keep_open())?;
        keep(&st.time_index.path(), st.time_index.keep_open())?;
        let mut out = Vec::with_capacity(3);
        let log_path = self.file.path();
        let index_path = st.index.path();
        let time_path = st.time_index.path();
        for (p, which) in [(&log_path, 0), (&index_path, 1), (&time_path, 2)] {
            let mut name = p.as_os_str().to_os_string();
            name.push(DELETED_SUFFIX);
            let deleted = PathBuf::from(name);
            match fs::rename(p, &deleted) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(LogError::io("rename for deletion", p, e)),
            }
            match which {
                0 => self.file.set_path(&deleted),
                1 => st.index.set_path(&deleted),
                _ => st.time_index.set_path(&deleted),
            }
            out.push(deleted);
        }
        Ok(out)
    }
}

/// Kafka's per-segment jitter: uniform in `[0, min(segment.jitter.ms, segment.ms))`.
fn draw_jitter(config: &LogConfig) -> i64 {
    let bound = config.segment_jitter_ms.min(config.segment_ms);
    if bound <= 0 {
        0
    } else {
        use rand::Rng;
        rand::thread_rng().gen_range(0..bound)
    }
}

/// `len` bytes at `pos`, read into fresh memory that is not zeroed first (a fetch reads
/// megabytes at a time; zeroing them cost as much as a tenth of the broker's time).
fn read_exact_at(file: &fs::File, pos: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf: Vec<u8> = Vec::with_capacity(len);
    while buf.len() < len {
        let at = pos + buf.len() as u64;
        let n = rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), at)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    buf.truncate(len);
    Ok(buf)
}
