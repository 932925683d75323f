//! Loading a partition directory at startup: removes leftovers of interrupted file operations,
//! then opens every segment either trusting its files (clean shutdown, or data below the
//! recovery point) or scanning and validating every batch (data that may not have reached the
//! disk), truncating at the first torn or invalid batch and rebuilding the indexes.
//!
//! Leftovers of interrupted swaps (`*.cleaned`, `*.swap`, `*.deleted`) are handled first by
//! `swap::recover_swaps`; index files without a `.log` are removed. Offsets must increase
//! strictly within and across segments but need not be contiguous (compaction leaves gaps).
//!
//! Runs before the `Log` is shared; the segments of one directory may be loaded on several
//! threads (see [`load_segments`]).

use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::file_cache::CachedFile;
use crate::index::OffsetIndex;
use crate::segment::{
    segment_path, BatchMeta, SegState, Segment, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX,
};
use crate::time_index::TimeIndex;
use skiff_records::{validate_batch, Batches, LOG_OVERHEAD};
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::UNIX_EPOCH;

/// How much of the log to distrust when opening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The broker shut down cleanly: trust files, check the tails cheaply, rebuild only
    /// missing or corrupt indexes.
    Clean,
    /// After a crash: every batch at or above this offset (the last flushed offset) is
    /// validated and the log is truncated at the first bad one.
    FromOffset(i64),
}

/// Read size while scanning segments: large enough to amortise syscalls, small enough to keep
/// startup memory flat.
const SCAN_CHUNK: usize = 1 << 20;

/// The segments of a log directory, and whether opening them changed or rewrote anything
/// in it (a recovered swap, a removed file, a segment checked after a crash): only then does
/// the directory need an fsync.
pub(crate) struct Loaded {
    pub segments: Vec<Segment>,
    pub dir_changed: bool,
    /// Base of the first segment that was validated after a crash but not fsynced: the
    /// recovery point stays there until the log is next flushed.
    pub unsynced_from: Option<i64>,
}

/// Opens all segments of `dir` in base-offset order. Segments to validate batch by batch are
/// scanned on up to one thread per core when there are several (one partition can hold
/// gigabytes of unflushed data after a crash).
pub(crate) fn load_segments(
    dir: &Path,
    config: &LogConfig,
    now_ms: i64,
    recovery: Recovery,
) -> Result<Loaded> {
    let swapped = crate::swap_recovery::recover_swaps(dir)?;
    let (bases, orphans) = list_segment_files(dir)?;
    let mut dir_changed = !swapped.is_empty() || !orphans.is_empty();
    for orphan in orphans {
        fs::remove_file(&orphan).map_err(|e| LogError::io("remove orphan index", &orphan, e))?;
    }
    let bases: Vec<i64> = bases.into_iter().collect();
    let jobs: Vec<(i64, bool)> = bases
        .iter()
        .enumerate()
        .map(|(i, &base)| {
            let is_last = i + 1 == bases.len();
            let full = swapped.contains(&base)
                || match recovery {
                    Recovery::Clean => false,
                    Recovery::FromOffset(rp) => {
                        is_last || bases.get(i + 1).is_some_and(|&n| n > rp)
                    }
                };
            (base, full)
        })
        .collect();
    let scans = jobs.iter().filter(|(_, full)| *full).count();
    let threads = if scans > 1 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    let opened =
        crate::parallel::map_in_parallel(&jobs, threads, "skiff-recovery", |&(base, full)| {
            load_segment(dir, base, config, full, now_ms)
        });
    let mut segments: Vec<(Segment, Checked)> = Vec::with_capacity(bases.len());
    let mut opened = opened.into_iter().zip(&bases);
    while let Some((result, &base)) = opened.next() {
        let (seg, checked) = result.ok_or_else(|| {
            LogError::io(
                "load segment",
                &segment_path(dir, base, LOG_SUFFIX),
                std::io::Error::other("the recovery thread loading it panicked"),
            )
        })??;
        dir_changed |= checked != Checked::Trusted;
        segments.push((seg, checked));
        if checked == Checked::Truncated {
            // Everything after a corrupt point is unflushed garbage: Kafka drops it too.
            for (later, &later_base) in opened.by_ref() {
                drop(later);
                tracing::warn!(dir = %dir.display(), base_offset = later_base,
                    "removing segment after a truncated one");
                remove_segment_files(dir, later_base)?;
            }
        }
    }
    // Offsets only grow from one segment to the next (with gaps after compaction). A segment
    // starting below its predecessor's end is an old segment whose swap-out was lost in a
    // crash while the cleaned segment replacing it survived: it goes.
    let mut kept: Vec<Segment> = Vec::with_capacity(segments.len());
    let mut unsynced_from = None;
    for (s, checked) in segments {
        if kept
            .last()
            .is_some_and(|prev| s.base_offset < prev.next_offset())
        {
            tracing::warn!(dir = %dir.display(), base_offset = s.base_offset,
                "removing a segment overlapped by the cleaned segment before it");
            s.delete_files()?;
            dir_changed = true;
        } else {
            if checked == Checked::Unsynced && unsynced_from.is_none() {
                unsynced_from = Some(s.base_offset);
            }
            kept.push(s);
        }
    }
    Ok(Loaded {
        segments: kept,
        dir_changed,
        unsynced_from,
    })
}

/// How [`load_segment`] came by a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Checked {
    /// Its files were taken as they are; nothing was written.
    Trusted,
    /// Every batch was validated and its indexes rebuilt; nothing was wrong, so nothing is
    /// synced now. The data is as safe as before the crash (it is in the page cache): it
    /// stays above the recovery point, so another crash scans it again, and the next flush
    /// makes it durable. Not waiting for the writeback of gigabytes is what keeps recovery
    /// after a crash fast.
    Unsynced,
    /// Validated, and its log cut at the first invalid batch: synced at once, so the cut and
    /// the rebuilt indexes are on disk before anything is appended after them.
    Truncated,
}

/// Base offsets with a `.log` file, and index files that have none.
fn list_segment_files(dir: &Path) -> Result<(BTreeSet<i64>, Vec<std::path::PathBuf>)> {
    let files = dir_files(dir)?;
    let bases: BTreeSet<i64> = files
        .iter()
        .filter_map(|(_, n)| parse_segment_name(n))
        .filter(|(_, s)| *s == LOG_SUFFIX)
        .map(|(b, _)| b)
        .collect();
    let orphans = files
        .into_iter()
        .filter(|(_, n)| {
            parse_segment_name(n).is_some_and(|(b, s)| {
                (s == INDEX_SUFFIX || s == TIME_INDEX_SUFFIX) && !bases.contains(&b)
            })
        })
        .map(|(p, _)| p)
        .collect();
    Ok((bases, orphans))
}

pub(crate) fn dir_files(dir: &Path) -> Result<Vec<(std::path::PathBuf, String)>> {
    let rd = fs::read_dir(dir).map_err(|e| LogError::io("list", dir, e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| LogError::io("list", dir, e))?;
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if let (true, Some(name)) = (is_file, entry.file_name().to_str()) {
            out.push((entry.path(), name.to_string()));
        }
    }
    Ok(out)
}

/// `00000000000000000042.log` -> (42, "log").
pub(crate) fn parse_segment_name(name: &str) -> Option<(i64, &str)> {
    let (stem, suffix) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem.parse().ok()?, suffix))
}

fn remove_segment_files(dir: &Path, base: i64) -> Result<()> {
    for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
        let p = segment_path(dir, base, suffix);
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io("remove", &p, e)),
        }
    }
    Ok(())
}

/// Opens one segment; returns it and how it was checked.
fn load_segment(
    dir: &Path,
    base: i64,
    config: &LogConfig,
    full: bool,
    now_ms: i64,
) -> Result<(Segment, Checked)> {
    let log_path = segment_path(dir, base, LOG_SUFFIX);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&log_path)
        .map_err(|e| LogError::io("open segment", &log_path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| LogError::io("stat segment", &log_path, e))?;
    let file_len = meta.len();
    let mtime_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok())
        .unwrap_or(now_ms);
    // An empty log has nothing to distrust: after a crash too, its indexes only need to be
    // empty (checked by the trusted load), and nothing needs rewriting or syncing.
    if !full || file_len == 0 {
        if let Some(state) = load_trusted(dir, &file, base, file_len, config, mtime_ms)? {
            let file = CachedFile::adopt(&log_path, file);
            let seg = Segment::from_parts(base, log_path, file, config, now_ms, state);
            return Ok((seg, Checked::Trusted));
        }
        tracing::info!(segment = %log_path.display(), "index missing or inconsistent; rebuilding");
    }
    let mut state = empty_state(dir, base, config, mtime_ms)?;
    let interval = u64::try_from(config.index_interval_bytes).unwrap_or(0);
    let end = scan_batches(&file, &log_path, base, 0, file_len, |m| {
        state.observe(&m, interval, mtime_ms)
    })?;
    let truncated = end.valid_end < file_len;
    if truncated {
        tracing::warn!(segment = %log_path.display(), position = end.valid_end,
            dropped_bytes = file_len - end.valid_end,
            reason = end.problem.as_deref().unwrap_or("torn batch"),
            "truncating segment at the first invalid batch");
        file.set_len(end.valid_end)
            .map_err(|e| LogError::io_at("truncate", &log_path, end.valid_end, e))?;
    }
    let checked = if truncated {
        file.sync_all()
            .map_err(|e| LogError::io("fsync truncated segment", &log_path, e))?;
        state.index.sync()?;
        state.time_index.sync()?;
        Checked::Truncated
    } else {
        Checked::Unsynced
    };
    let file = CachedFile::adopt(&log_path, file);
    Ok((
        Segment::from_parts(base, log_path, file, config, now_ms, state),
        checked,
    ))
}

fn empty_state(dir: &Path, base: i64, config: &LogConfig, mtime_ms: i64) -> Result<SegState> {
    Ok(SegState {
        size: 0,
        next_offset: base,
        max_timestamp: -1,
        offset_of_max_timestamp: base,
        rolling_base_ts: None,
        last_modified_ms: mtime_ms,
        bytes_since_index: 0,
        index: OffsetIndex::create(
            &segment_path(dir, base, INDEX_SUFFIX),
            base,
            config.segment_index_bytes,
            Vec::new(),
        )?,
        time_index: TimeIndex::create(
            &segment_path(dir, base, TIME_INDEX_SUFFIX),
            base,
            config.segment_index_bytes,
            Vec::new(),
        )?,
    })
}

/// Trusts the indexes and validates only the batches after the last offset index entry.
/// `Ok(None)` when anything looks wrong, so the caller falls back to a full scan.
fn load_trusted(
    dir: &Path,
    file: &File,
    base: i64,
    file_len: u64,
    config: &LogConfig,
    mtime_ms: i64,
) -> Result<Option<SegState>> {
    let index_path = segment_path(dir, base, INDEX_SUFFIX);
    let Some(index) = OffsetIndex::load(&index_path, base, config.segment_index_bytes, file_len)?
    else {
        return Ok(None);
    };
    let time_path = segment_path(dir, base, TIME_INDEX_SUFFIX);
    let Some(time_index) = TimeIndex::load(&time_path, base, config.segment_index_bytes, i64::MAX)?
    else {
        return Ok(None);
    };
    let log_path = segment_path(dir, base, LOG_SUFFIX);
    let start = index.last().map(|(_, pos)| pos).unwrap_or(0);
    let rolling_base_ts = if file_len >= skiff_records::HEADER_LEN as u64 {
        let mut buf = [0u8; skiff_records::HEADER_LEN];
        file.read_exact_at(&mut buf, 0)
            .map_err(|e| LogError::io_at("read", &log_path, 0, e))?;
        match skiff_records::BatchHeader::parse(&buf) {
            Ok(h) => Some(h.max_timestamp),
            Err(_) => return Ok(None),
        }
    } else {
        None
    };
    let (max_timestamp, offset_of_max_timestamp) = time_index.last().unwrap_or((-1, base));
    let mut state = SegState {
        size: start,
        next_offset: base,
        max_timestamp,
        offset_of_max_timestamp,
        rolling_base_ts,
        last_modified_ms: mtime_ms,
        bytes_since_index: 0,
        index,
        time_index,
    };
    let interval = u64::try_from(config.index_interval_bytes).unwrap_or(0);
    let expected_first = state.index.last().map(|(off, _)| off).unwrap_or(base);
    let mut first_ok = true;
    let end = scan_batches(file, &log_path, base, start, file_len, |m| {
        if state.next_offset == base && m.last_offset < expected_first {
            first_ok = false;
        }
        state.observe(&m, interval, mtime_ms)
    })?;
    let time_ok = state
        .time_index
        .last()
        .is_none_or(|(_, off)| off < state.next_offset);
    if end.valid_end < file_len || !first_ok || !time_ok {
        return Ok(None);
    }
    state.last_modified_ms = mtime_ms;
    Ok(Some(state))
}

/// Where a scan stopped: `valid_end` is the end of the last good batch.
pub(crate) struct ScanEnd {
    pub valid_end: u64,
    pub problem: Option<String>,
}

/// Walks the batches of a segment file from `from`, validating each (framing, CRC, offsets
/// increasing and within 32 bits of the base), calling `on_batch` for each good one.
pub(crate) fn scan_batches(
    file: &File,
    path: &Path,
    base: i64,
    from: u64,
    file_len: u64,
    mut on_batch: impl FnMut(BatchMeta) -> Result<()>,
) -> Result<ScanEnd> {
    let mut pos = from;
    let mut chunk = SCAN_CHUNK;
    let mut min_next = base;
    let mut buf = Vec::new();
    loop {
        let remaining = file_len.saturating_sub(pos);
        if remaining == 0 {
            return Ok(ScanEnd {
                valid_end: pos,
                problem: None,
            });
        }
        let want = usize::try_from(remaining).unwrap_or(usize::MAX).min(chunk);
        // One buffer for the whole scan: zeroing a fresh megabyte per read costs as much as
        // checking its CRCs.
        buf.resize(want, 0);
        file.read_exact_at(&mut buf, pos)
            .map_err(|e| LogError::io_at("read", path, pos, e))?;
        let mut it = Batches::new(&buf);
        let consumed = loop {
            let at = it.position();
            let problem = match it.next() {
                None => break at,
                Some(Err(e)) => e.to_string(),
                Some(Ok((h, bytes))) => match validate_batch(bytes) {
                    Err(e) => e.to_string(),
                    Ok(_) if h.base_offset < min_next => format!(
                        "batch base offset {} is below the expected minimum {min_next}",
                        h.base_offset
                    ),
                    Ok(_) if h.last_offset() - base > i64::from(i32::MAX) => format!(
                        "batch last offset {} does not fit a 32-bit relative offset",
                        h.last_offset()
                    ),
                    Ok(_) => {
                        on_batch(BatchMeta {
                            position: pos + at as u64,
                            size: bytes.len() as u64,
                            last_offset: h.last_offset(),
                            max_timestamp: h.max_timestamp,
                        })?;
                        min_next = h.last_offset() + 1;
                        continue;
                    }
                },
            };
            return Ok(ScanEnd {
                valid_end: pos + at as u64,
                problem: Some(format!(
                    "{} at position {}: {problem}",
                    path.display(),
                    pos + at as u64
                )),
            });
        };
        if consumed == 0 {
            if want as u64 == remaining {
                return Ok(ScanEnd {
                    valid_end: pos,
                    problem: Some(format!(
                        "{} at position {pos}: batch extends past the end of the file",
                        path.display()
                    )),
                });
            }
            // The next batch is larger than the chunk: read exactly that batch next time.
            let len = buf
                .get(LOG_OVERHEAD - 4..LOG_OVERHEAD)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(i32::from_be_bytes)
                .unwrap_or(-1);
            chunk = usize::try_from(len).unwrap_or(0) + LOG_OVERHEAD;
            continue;
        }
        chunk = SCAN_CHUNK;
        pos += consumed as u64;
    }
}
