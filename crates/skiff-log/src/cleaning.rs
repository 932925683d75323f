//! What the log cleaner (crate skiff-cleaner) needs from storage, short of the swap itself
//! (`log/swap.rs`): a planning snapshot ([`CleanerView`]), a chunked reader of one segment's whole
//! batches ([`SegmentBatches`]), a writer of the cleaned replacement segment
//! ([`CleanedSegmentWriter`]) and the free-space probe ([`free_space`]). No compaction logic
//! lives here: which records survive is the cleaner's business.
//!
//! On-disk format: the writer produces `<base>.log.cleaned`, `<base>.index.cleaned` and
//! `<base>.timeindex.cleaned`, byte-for-byte the formats of an ordinary segment (see
//! `segment.rs`, `index.rs`, `time_index.rs`); recovery deletes any `.cleaned` file.
//!
//! The `Log` side of these (`cleaner_view`, `segment_batches`, `cleaned_segment_writer`) is in
//! `log/cleaning.rs`.
//!
//! Thread-safety: `cleaner_view` takes the append lock briefly. `SegmentBatches` holds an
//! `Arc` of one segment and reads it with positioned reads, never taking the log's locks; it
//! keeps working after the segment was swapped out or deleted (the open handle stays valid).
//! A `CleanedSegmentWriter` is owned by one thread and touches only its own files.

use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::file_cache::CachedFile;
use crate::segment::{
    segment_path, BatchMeta, SegState, Segment, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX,
};
use bytes::Bytes;
use skiff_records::{validate_batch, BatchHeader, HEADER_LEN, LOG_OVERHEAD};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Suffix of a cleaned segment's files while it is being written.
pub(crate) const CLEANED_SUFFIX: &str = ".cleaned";

/// A consistent snapshot for planning, taken under the log lock.
#[derive(Clone, Debug)]
pub struct CleanerView {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// Base offset of the active (last) segment — never cleaned.
    pub active_base_offset: i64,
    /// All segments in order, the active one last.
    pub segments: Vec<SegmentInfo>,
    pub config: LogConfig,
}

/// Facts about one segment, as of the view.
#[derive(Clone, Debug)]
pub struct SegmentInfo {
    pub base_offset: i64,
    /// Identity of this segment object, unique within the process: a segment replaced by a
    /// swap, or the log reopened, has another one even at the same base offset.
    pub id: u64,
    /// Last offset + 1 (the base offset when empty). After compaction it may be below the
    /// next segment's base: offsets have gaps.
    pub next_offset: i64,
    /// Bytes of the `.log` file.
    pub size: u64,
    /// Max record timestamp, or the last modification time when there is none (Kafka's rule).
    pub largest_timestamp: i64,
    /// Max timestamp of the segment's first batch (for `max.compaction.lag.ms`).
    pub first_batch_max_timestamp: Option<i64>,
    /// Offset index entries (cleaner groups are bounded by `segment.index.bytes`).
    pub index_entries: usize,
    pub time_index_entries: usize,
    pub is_active: bool,
}

/// Whole batches of one segment; see [`Log::segment_batches`]. Stops (yields `None`) after
/// the first error.
///
/// [`Log::segment_batches`]: crate::Log::segment_batches
pub struct SegmentBatches {
    segment: Arc<Segment>,
    base_offset: i64,
    /// Segment size when the reader was made: bytes below it never change.
    limit: u64,
    buffer_size: usize,
    chunk: Bytes,
    /// File position of `chunk[0]`.
    chunk_start: u64,
    /// Bytes of `chunk` already returned.
    used: usize,
    bytes_read: u64,
    failed: bool,
}

impl SegmentBatches {
    /// A reader of `segment`'s batches as of now (its current size is the limit).
    pub(crate) fn new(segment: Arc<Segment>, buffer_size: usize) -> SegmentBatches {
        let limit = segment.size();
        SegmentBatches::with_limit(segment, buffer_size, limit)
    }

    /// A reader of `segment`'s batches below file position `limit` (a size the segment had).
    pub(crate) fn with_limit(
        segment: Arc<Segment>,
        buffer_size: usize,
        limit: u64,
    ) -> SegmentBatches {
        SegmentBatches {
            base_offset: segment.base_offset,
            segment,
            limit,
            buffer_size: buffer_size.max(HEADER_LEN),
            chunk: Bytes::new(),
            chunk_start: 0,
            used: 0,
            bytes_read: 0,
            failed: false,
        }
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Bytes of whole batches returned so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    fn corrupt(&mut self, pos: u64, what: String) -> Option<Result<(BatchHeader, Bytes)>> {
        self.failed = true;
        Some(Err(LogError::CorruptMessage(format!(
            "{} at position {pos}: {what}",
            self.segment.log_path().display()
        ))))
    }
}

impl Iterator for SegmentBatches {
    type Item = Result<(BatchHeader, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            let pos = self.chunk_start + self.used as u64;
            let avail = self.chunk.get(self.used..).unwrap_or(&[]);
            // Size of the next batch once its length field is in the buffer.
            let total = match avail.get(LOG_OVERHEAD - 4..LOG_OVERHEAD) {
                Some(b) => {
                    let len = <[u8; 4]>::try_from(b).map(i32::from_be_bytes).unwrap_or(-1);
                    match usize::try_from(len) {
                        Ok(l) if l + LOG_OVERHEAD >= HEADER_LEN => Some(l + LOG_OVERHEAD),
                        _ => return self.corrupt(pos, format!("invalid batch length {len}")),
                    }
                }
                None => None,
            };
            if let Some(total) = total {
                if pos + total as u64 > self.limit {
                    return self.corrupt(pos, "batch extends past the segment end".to_string());
                }
                if let Some(head) = avail.get(..HEADER_LEN).filter(|_| avail.len() >= total) {
                    let h = match BatchHeader::parse(head) {
                        Ok(h) => h,
                        Err(e) => return self.corrupt(pos, e.to_string()),
                    };
                    let batch = self.chunk.slice(self.used..self.used + total);
                    self.used += total;
                    self.bytes_read += total as u64;
                    return Some(Ok((h, batch)));
                }
            }
            if pos >= self.limit {
                return None;
            }
            // Refill from `pos`: a whole chunk, or at least the next batch.
            let want = self
                .buffer_size
                .max(total.unwrap_or(0))
                .min(usize::try_from(self.limit - pos).unwrap_or(usize::MAX));
            if total.is_none() && want < LOG_OVERHEAD {
                return self.corrupt(pos, "torn batch at the segment end".to_string());
            }
            match self.segment.read_exact(pos, want) {
                Ok(buf) => {
                    self.chunk = Bytes::from(buf);
                    self.chunk_start = pos;
                    self.used = 0;
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// Writes a cleaned segment; see [`Log::cleaned_segment_writer`]. Dropping it before a swap
/// deletes its files.
///
/// [`Log::cleaned_segment_writer`]: crate::Log::cleaned_segment_writer
pub struct CleanedSegmentWriter {
    pub(crate) dir: PathBuf,
    pub(crate) base_offset: i64,
    pub(crate) config: Arc<LogConfig>,
    now_ms: i64,
    /// The log file and the facts/indexes; taken by the swap.
    parts: Option<(CachedFile, SegState)>,
}

impl CleanedSegmentWriter {
    pub(crate) fn create(
        dir: &Path,
        base_offset: i64,
        config: Arc<LogConfig>,
        now_ms: i64,
    ) -> Result<CleanedSegmentWriter> {
        let log_path = cleaned_path(dir, base_offset, LOG_SUFFIX);
        let file = CachedFile::open_with(
            &log_path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true),
        )
        .map_err(|e| LogError::io("create cleaned segment", &log_path, e))?;
        let mut w = CleanedSegmentWriter {
            dir: dir.to_path_buf(),
            base_offset,
            config: config.clone(),
            now_ms,
            parts: None,
        };
        // From here on Drop removes whatever was created.
        let state = SegState::create_empty(
            &cleaned_path(dir, base_offset, INDEX_SUFFIX),
            &cleaned_path(dir, base_offset, TIME_INDEX_SUFFIX),
            base_offset,
            &config,
            now_ms,
        )?;
        w.parts = Some((file, state));
        Ok(w)
    }

    /// Appends one whole, valid batch (offsets preserved, strictly above the previous batch's
    /// last offset and within 32 bits of the base), indexing it like an ordinary append.
    pub fn append_batch(&mut self, batch: &[u8]) -> Result<()> {
        let base = self.base_offset;
        let interval = u64::try_from(self.config.index_interval_bytes).unwrap_or(0);
        let now = self.now_ms;
        let path = cleaned_path(&self.dir, base, LOG_SUFFIX);
        let Some((file, st)) = self.parts.as_mut() else {
            return Err(LogError::Aborted(format!(
                "{} was already swapped in",
                path.display()
            )));
        };
        let bad = |what: String| LogError::CorruptMessage(format!("{}: {what}", path.display()));
        let h = BatchHeader::parse(batch).map_err(|e| bad(e.to_string()))?;
        if h.total_size() != batch.len() {
            return Err(bad(format!(
                "batch declares {} bytes but {} were given",
                h.total_size(),
                batch.len()
            )));
        }
        validate_batch(batch).map_err(|e| bad(e.to_string()))?;
        let min = if st.size == 0 { base } else { st.next_offset };
        if h.base_offset < min {
            return Err(bad(format!(
                "batch base offset {} is below the expected minimum {min}",
                h.base_offset
            )));
        }
        if h.last_offset() - base > i64::from(i32::MAX) {
            return Err(bad(format!(
                "batch last offset {} does not fit a 32-bit relative offset from {base}",
                h.last_offset()
            )));
        }
        let pos = st.size;
        file.get()
            .and_then(|f| f.write_all_at(batch, pos))
            .map_err(|e| LogError::io_at("append to", &path, pos, e))?;
        st.observe(
            &BatchMeta {
                position: pos,
                size: batch.len() as u64,
                last_offset: h.last_offset(),
                max_timestamp: h.max_timestamp,
            },
            interval,
            now,
        )
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.parts.as_ref().map(|(_, st)| st.size).unwrap_or(0)
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Last offset + 1 of the batches written (the base offset when none).
    pub fn next_offset(&self) -> i64 {
        self.parts
            .as_ref()
            .map(|(_, st)| st.next_offset)
            .unwrap_or(self.base_offset)
    }

    /// Abandons the segment: deletes its `.cleaned` files.
    pub fn abort(mut self) -> Result<()> {
        self.parts = None;
        remove_cleaned_files(&self.dir, self.base_offset)
    }

    /// Hands the file and state to the swap; Drop then deletes nothing.
    pub(crate) fn take_parts(&mut self) -> Option<(CachedFile, SegState)> {
        self.parts.take()
    }
}

impl Drop for CleanedSegmentWriter {
    fn drop(&mut self) {
        if self.parts.take().is_some() {
            if let Err(e) = remove_cleaned_files(&self.dir, self.base_offset) {
                tracing::warn!(error = %e, "could not remove an abandoned cleaned segment");
            }
        }
    }
}

/// `<dir>/<base>.<suffix>.cleaned`
pub(crate) fn cleaned_path(dir: &Path, base: i64, suffix: &str) -> PathBuf {
    let mut p = segment_path(dir, base, suffix).into_os_string();
    p.push(CLEANED_SUFFIX);
    PathBuf::from(p)
}

/// Removes the `.cleaned` files of `base` (missing ones are fine).
pub(crate) fn remove_cleaned_files(dir: &Path, base: i64) -> Result<()> {
    for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
        let p = cleaned_path(dir, base, suffix);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io("remove cleaned file", &p, e)),
        }
    }
    Ok(())
}

/// Bytes available to unprivileged users on the filesystem holding `dir` (statvfs), for the
/// cleaner's "room before work" check.
pub fn free_space(dir: &Path) -> Result<u64> {
    Ok(disk_space(dir)?.available)
}

/// Size of the filesystem holding `dir` and the bytes available on it.
#[derive(Clone, Copy, Debug)]
pub struct DiskSpace {
    pub total: u64,
    pub available: u64,
}

/// statvfs of the filesystem holding `dir` (DescribeLogDirs reports both figures).
pub fn disk_space(dir: &Path) -> Result<DiskSpace> {
    let st = rustix::fs::statvfs(dir)
        .map_err(|e| LogError::io("statvfs", dir, std::io::Error::from(e)))?;
    Ok(DiskSpace {
        total: st.f_blocks.saturating_mul(st.f_frsize),
        available: st.f_bavail.saturating_mul(st.f_frsize),
    })
}
