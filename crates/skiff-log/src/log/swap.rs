//! Swapping a cleaned segment in for the segments it replaces (Kafka's
//! `LocalLog.replaceSegments`), and finishing or rolling back an interrupted swap at startup
//! (`swap_recovery.rs`, Kafka's `LogLoader`). Offsets never change: the log end and log start
//! stay as they are.
//!
//! Protocol, in order (each step is a crash point, tested one by one):
//! 1. under the append lock: check that the old segments are still there, consecutive and
//!    sealed, and *pin* them so retention leaves them alone until the swap ends (the log start
//!    may still move; the next retention pass removes what fell below it);
//! 2. final time-index entry; mtime of the last source segment; fsync the three `.cleaned`
//!    files;
//! 3. rename `.index.cleaned`/`.timeindex.cleaned` → `.swap`, then `.log.cleaned` → `.log.swap`
//!    and fsync the directory: **the commit point** (before it, recovery deletes the cleaned
//!    files; after it, recovery completes the swap);
//! 4. under the append lock: rename each old segment's files to `.deleted`, then `.swap` →
//!    final names, and publish the new segment list (readers holding the old list keep
//!    reading the old open files, which stay valid after rename and unlink);
//! 5. fsync the directory, then unlink the `.deleted` files at once (open handles keep
//!    working, so Kafka's `file.delete.delay.ms` grace is not needed on POSIX systems).
//!
//! After the commit point a failure takes the log offline until a restart recovers the swap
//! (`swap_recovery.rs`).
//!
//! Thread-safety: `replace_segments` may run on a cleaner thread while the log serves appends
//! and reads; it holds the append lock only for checks, renames and the publish (the steps that
//! need it take its guard), never for an fsync. One swap at a time per log (the cleaner
//! cleans a log from one thread).

use super::Log;
use crate::cleaning::{cleaned_path, remove_cleaned_files, CleanedSegmentWriter};
use crate::error::{LogError, Result};
use crate::file_cache::CachedFile;
use crate::fsutil::fsync_dir;
use crate::segment::{
    segment_path, SegState, Segment, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX,
};
use crate::swap_recovery::{rename, swap_path};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// How a swap attempt ended; tests stop it after a given number of steps as if the process
/// died there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SwapEnd {
    Done,
    Crashed,
}

/// Counts the steps of a swap and says when a test wants it to stop.
struct Steps {
    left: usize,
}

impl Steps {
    fn crash_here(&mut self) -> bool {
        if self.left == 0 {
            return true;
        }
        self.left -= 1;
        false
    }
}

impl Log {
    /// Crash-safe swap of `old_bases` (consecutive sealed segments) for the finished cleaned
    /// segment, whose base must be `old_bases[0]`. `SegmentGone` (and the cleaned files
    /// deleted, the log untouched) when one of them no longer exists. See the module docs.
    pub fn replace_segments(&self, old_bases: &[i64], cleaned: CleanedSegmentWriter) -> Result<()> {
        self.replace_segments_steps(old_bases, cleaned, usize::MAX)?;
        // The merged segments' transaction index entries now belong to the cleaned one.
        self.reconcile_txn_index()
    }

    /// [`Log::replace_segments`], stopping dead (no cleanup) after `crash_after` steps.
    pub(crate) fn replace_segments_steps(
        &self,
        old_bases: &[i64],
        mut cleaned: CleanedSegmentWriter,
        crash_after: usize,
    ) -> Result<SwapEnd> {
        let mut steps = Steps { left: crash_after };
        let base = cleaned.base_offset;
        let dir = cleaned.dir.clone();
        let Some((file, state)) = cleaned.take_parts() else {
            return Err(LogError::Aborted(format!(
                "cleaned segment {base} in {} was already swapped in",
                dir.display()
            )));
        };
        if steps.crash_here() {
            return Ok(SwapEnd::Crashed);
        }
        let last_modified = match self.check_and_pin(old_bases, base, state.next_offset) {
            Ok(m) => m,
            Err(e) => {
                remove_cleaned_files(&dir, base)?;
                return Err(e);
            }
        };
        let result = self.swap_pinned(old_bases, base, file, state, last_modified, &mut steps);
        let mut inner = self.lock();
        if let Some(i) = inner.pins.iter().position(|&p| p == base) {
            inner.pins.swap_remove(i);
        }
        result
    }

    /// Checks the old segments under the lock and pins them; returns the last one's
    /// modification time (the cleaned segment takes it, as in Kafka).
    fn check_and_pin(&self, old_bases: &[i64], base: i64, cleaned_next: i64) -> Result<i64> {
        let mut inner = self.lock();
        if self.is_closed() {
            return Err(LogError::Aborted(format!(
                "{} is closed",
                self.dir.display()
            )));
        }
        let Some(&first) = old_bases.first() else {
            return Err(LogError::Aborted("no segment to replace".to_string()));
        };
        if first != base {
            return Err(LogError::Aborted(format!(
                "cleaned segment base {base} differs from the first replaced segment {first}"
            )));
        }
        let segs = &inner.segments;
        let gone = |b: i64| {
            LogError::SegmentGone(format!(
                "{} has no segment with base offset {b} any more",
                self.dir.display()
            ))
        };
        let start = segs
            .iter()
            .position(|s| s.base_offset == first)
            .ok_or_else(|| gone(first))?;
        for (k, &b) in old_bases.iter().enumerate() {
            match segs.get(start + k) {
                Some(s) if s.base_offset == b => {}
                _ if segs.iter().all(|s| s.base_offset != b) => return Err(gone(b)),
                _ => {
                    return Err(LogError::Aborted(format!(
                        "segments {old_bases:?} are not consecutive in {}",
                        self.dir.display()
                    )))
                }
            }
        }
        let end = start + old_bases.len();
        if end >= segs.len() {
            return Err(LogError::Aborted(format!(
                "the active segment of {} cannot be replaced",
                self.dir.display()
            )));
        }
        let last = segs.get(end - 1).ok_or_else(|| gone(first))?;
        let last_next = last.next_offset();
        if cleaned_next > last_next {
            return Err(LogError::Aborted(format!(
                "cleaned segment {base} reaches offset {cleaned_next}, beyond the replaced \
                 segments' end {last_next}"
            )));
        }
        let last_modified = crate::segment::read_guard(&last.state).last_modified_ms;
        inner.pins.push(base);
        Ok(last_modified)
    }

    /// Steps 2 to 5 of the protocol, with the old segments pinned.
    fn swap_pinned(
        &self,
        old_bases: &[i64],
        base: i64,
        file: CachedFile,
        mut state: SegState,
        last_modified: i64,
        steps: &mut Steps,
    ) -> Result<SwapEnd> {
        super::locked::assert_unlocked("segment swap");
        let dir = self.dir.clone();
        let config = self.config();
        let sealed = finish_cleaned(&dir, base, &file, &mut state, last_modified);
        if let Err(e) = sealed {
            remove_cleaned_files(&dir, base)?;
            return Err(e);
        }
        if steps.crash_here() {
            return Ok(SwapEnd::Crashed);
        }
        // Indexes first: the log file's rename is the commit point.
        for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX] {
            if let Err(e) = rename(
                &cleaned_path(&dir, base, suffix),
                &swap_path(&dir, base, suffix),
            ) {
                self.remove_uncommitted(base);
                return Err(e);
            }
            if steps.crash_here() {
                return Ok(SwapEnd::Crashed);
            }
        }
        if let Err(e) = fsync_dir(&dir) {
            return Err(self.take_offline(e));
        }
        if steps.crash_here() {
            return Ok(SwapEnd::Crashed);
        }
        let mut deleted: Vec<PathBuf> = Vec::new();
        {
            let mut inner = self.lock();
            let start = inner.segments.iter().position(|s| s.base_offset == base);
            let (Some(start), Some(end)) =
                (start, start.and_then(|s| s.checked_add(old_bases.len())))
            else {
                drop(inner);
                return Err(self.take_offline(LogError::SegmentGone(format!(
                    "pinned segment {base} of {} vanished during a swap",
                    dir.display()
                ))));
            };
            let olds: Vec<Arc<Segment>> = inner
                .segments
                .get(start..end)
                .map(<[Arc<Segment>]>::to_vec)
                .unwrap_or_default();
            for old in &olds {
                match old.rename_to_deleted() {
                    Ok(paths) => deleted.extend(paths),
                    Err(e) => {
                        drop(inner);
                        return Err(self.take_offline(e));
                    }
                }
                if steps.crash_here() {
                    return Ok(SwapEnd::Crashed);
                }
            }
            for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
                let to = segment_path(&dir, base, suffix);
                if let Err(e) = rename(&swap_path(&dir, base, suffix), &to) {
                    drop(inner);
                    return Err(self.take_offline(e));
                }
                if steps.crash_here() {
                    return Ok(SwapEnd::Crashed);
                }
            }
            let (index_path, time_path) = (
                segment_path(&dir, base, INDEX_SUFFIX),
                segment_path(&dir, base, TIME_INDEX_SUFFIX),
            );
            state.index.set_path(&index_path);
            state.time_index.set_path(&time_path);
            file.set_path(&segment_path(&dir, base, LOG_SUFFIX));
            let seg = Arc::new(Segment::from_parts(
                base,
                segment_path(&dir, base, LOG_SUFFIX),
                file,
                &config,
                self.clock.now_ms(),
                state,
            ));
            let mut list: Vec<Arc<Segment>> = inner.segments.get(..start).unwrap_or(&[]).to_vec();
            list.push(seg);
            list.extend(inner.segments.get(end..).unwrap_or(&[]).iter().cloned());
            inner.segments = Arc::new(list);
            inner.publish();
        }
        if steps.crash_here() {
            return Ok(SwapEnd::Crashed);
        }
        if let Err(e) = fsync_dir(&dir) {
            return Err(self.take_offline(e));
        }
        if steps.crash_here() {
            return Ok(SwapEnd::Crashed);
        }
        for p in deleted {
            if let Err(e) = fs::remove_file(&p) {
                // Harmless: recovery removes `.deleted` files at the next start.
                tracing::warn!(file = %p.display(), error = %e, "could not remove a swapped-out file");
            }
            if steps.crash_here() {
                return Ok(SwapEnd::Crashed);
            }
        }
        tracing::info!(dir = %dir.display(), base_offset = base, replaced = old_bases.len(),
            "swapped in cleaned segment");
        Ok(SwapEnd::Done)
    }

    /// Before the commit point: back to the state before the swap.
    fn remove_uncommitted(&self, base: i64) {
        for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX] {
            for p in [
                cleaned_path(&self.dir, base, suffix),
                swap_path(&self.dir, base, suffix),
            ] {
                if let Err(e) = fs::remove_file(&p) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(file = %p.display(), error = %e,
                            "could not remove an uncommitted cleaned file");
                    }
                }
            }
        }
    }

    /// After the commit point the files and the segment list may disagree: refuse writes
    /// until a restart recovers the swap.
    fn take_offline(&self, e: LogError) -> LogError {
        tracing::error!(dir = %self.dir.display(), error = %e,
            "segment swap failed after its commit point; log taken offline");
        self.lock().offline = Some(e.to_string());
        e
    }
}

/// Final time-index entry, mtime of the last source segment, fsync of the three files.
fn finish_cleaned(
    dir: &Path,
    base: i64,
    file: &CachedFile,
    state: &mut SegState,
    last_modified: i64,
) -> Result<()> {
    let (ts, off) = (state.max_timestamp, state.offset_of_max_timestamp);
    state.time_index.maybe_append(ts, off, true)?;
    state.last_modified_ms = last_modified;
    let log_path = cleaned_path(dir, base, LOG_SUFFIX);
    let file = file
        .get()
        .map_err(|e| LogError::io("open cleaned segment", &log_path, e))?;
    if let Ok(ms) = u64::try_from(last_modified) {
        file.set_modified(UNIX_EPOCH + Duration::from_millis(ms))
            .map_err(|e| LogError::io("set mtime of", &log_path, e))?;
    }
    file.sync_all()
        .map_err(|e| LogError::io("fsync cleaned segment", &log_path, e))?;
    state.index.sync()?;
    state.time_index.sync()
}
