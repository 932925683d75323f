//! The log cleaner seen from outside the broker: its per-pass summary lines (target
//! `skiff_cleaner::pass`, "cleaned log in X s: read A MB ..., wrote C MB ...") read from the
//! broker's log file, and a partition's segment files on disk.
//!
//! Owns: [`parse_summary`] (one log line → [`PassSummary`]), [`LogTail`] (incremental reads
//! of a growing log file), [`segments`] (base offset and size of every `NNN….log` segment of a
//! partition directory) and [`settled`], which decides from those whether the cleaner has
//! nothing left to do.
//!
//! Thread-safety: plain values, used by the bench's main thread. On-disk: reads only; the
//! segment naming (`{base_offset:020}.log` in `<log.dirs>/<topic>-<partition>`) is skiff-log's.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The cleaner prints sizes in MB of 2^20 bytes.
const CLEANER_MB: f64 = 1024.0 * 1024.0;

/// One completed cleaning pass, as the cleaner's summary line reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct PassSummary {
    pub topic: String,
    pub partition: i32,
    pub secs: f64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    /// The pass cleaned `[first_dirty, end_offset)`; `end_offset` is the new first dirty offset.
    pub first_dirty: i64,
    pub end_offset: i64,
    /// The offset map filled before the end of the cleanable range.
    pub partial: bool,
    /// Bytes appended to the archive topic (`bytes_archived`, docs/compaction.md §5.11); 0
    /// when the line has no such field.
    pub archived_bytes: u64,
    /// Bytes of clean segments the pass left unread (`bytes_skipped`, Skiff's segment
    /// summaries, docs/compaction.md §5.3); 0 when the line has no such field.
    pub skipped_bytes: u64,
    /// When the line was logged (the pass's end), in seconds since the Unix epoch; `None`
    /// when the line has no leading RFC 3339 UTC timestamp.
    pub logged_at: Option<f64>,
}

/// Parses a cleaner summary line; `None` for any other line or a malformed one. Accepts the
/// text format of `tracing-subscriber` whatever the order of message and fields, with string
/// fields quoted or not.
pub fn parse_summary(line: &str) -> Option<PassSummary> {
    let at = line.find("cleaned log in ")?;
    let msg = &line[at..];
    let secs = number_after(msg, "cleaned log in ")?;
    let read_mb = number_after(msg, "s: read ")?;
    let wrote_mb = number_after(msg, ", wrote ")?;
    let field = |key: &str| -> Option<&str> {
        line.split_whitespace()
            .filter_map(|tok| tok.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.trim_matches('"'))
    };
    Some(PassSummary {
        topic: field("topic")?.to_string(),
        partition: field("partition")?.parse().ok()?,
        secs,
        read_bytes: (read_mb * CLEANER_MB).round() as u64,
        written_bytes: (wrote_mb * CLEANER_MB).round() as u64,
        first_dirty: field("first_dirty")?.parse().ok()?,
        end_offset: field("end_offset")?.parse().ok()?,
        partial: field("partial")?.parse().ok()?,
        archived_bytes: field("bytes_archived")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        skipped_bytes: field("bytes_skipped")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        logged_at: line_time(line),
    })
}

/// Seconds since the Unix epoch of a line that starts with a UTC timestamp the way
/// `tracing-subscriber` prints it (`2026-05-01T14:30:00.123456Z`).
fn line_time(line: &str) -> Option<f64> {
    let ts = line.split_whitespace().next()?.strip_suffix('Z')?;
    let (date, time) = ts.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.splitn(3, ':');
    let h: i64 = t.next()?.parse().ok()?;
    let mi: i64 = t.next()?.parse().ok()?;
    let sec: f64 = t.next()?.parse().ok()?;
    let valid = (1..=12).contains(&m)
        && (1..=31).contains(&day)
        && (0..=23).contains(&h)
        && (0..=59).contains(&mi)
        && (0.0..61.0).contains(&sec);
    valid.then(|| (days_from_civil(y, m, day) * 86_400 + h * 3600 + mi * 60) as f64 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The number right after the first occurrence of `prefix` in `s`.
fn number_after(s: &str, prefix: &str) -> Option<f64> {
    let rest = &s[s.find(prefix)? + prefix.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let v: f64 = rest[..end].parse().ok()?;
    v.is_finite().then_some(v)
}

/// Reads the lines appended to a file since the previous call; a line still being written
/// (no newline yet) is kept back until it is complete.
pub struct LogTail {
    path: PathBuf,
    pos: u64,
    partial: String,
}

impl LogTail {
    pub fn new(path: PathBuf) -> LogTail {
        LogTail {
            path,
            pos: 0,
            partial: String::new(),
        }
    }

    /// Complete lines appended since the last call.
    pub fn new_lines(&mut self) -> Result<Vec<String>> {
        let mut f =
            File::open(&self.path).with_context(|| format!("opening {}", self.path.display()))?;
        f.seek(SeekFrom::Start(self.pos))
            .with_context(|| format!("seeking in {}", self.path.display()))?;
        let mut buf = Vec::new();
        let n = f
            .read_to_end(&mut buf)
            .with_context(|| format!("reading {}", self.path.display()))?;
        self.pos += n as u64;
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        let Some(last_nl) = self.partial.rfind('\n') else {
            return Ok(Vec::new());
        };
        let rest = self.partial.split_off(last_nl + 1);
        let done = std::mem::replace(&mut self.partial, rest);
        Ok(done.lines().map(str::to_string).collect())
    }
}

/// A segment file: base offset and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub base: i64,
    pub bytes: u64,
}

/// The `.log` segments of `dir`, oldest first. Files being swapped (`.cleaned`, `.swap`,
/// `.deleted`) and anything else not named `<20 digits>.log` are ignored; a file that
/// vanishes between listing and stat is skipped.
pub fn segments(dir: &Path) -> Result<Vec<Segment>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(base) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".log"))
            .filter(|b| b.len() == 20 && b.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|b| b.parse::<i64>().ok())
        else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        out.push(Segment {
            base,
            bytes: meta.len(),
        });
    }
    out.sort_by_key(|s| s.base);
    Ok(out)
}

/// Whether the cleaner is done with a log it has cleaned up to `cleaned_upto` (its first
/// dirty offset: the highest `end_offset` of any pass, 0 before the first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Settled {
    /// Everything below the active segment has been cleaned: at most one record per key
    /// remains there.
    Clean,
    /// Dirty segments remain, but their share of the cleanable bytes is at or below
    /// `min.cleanable.dirty.ratio`, so the broker will not clean them (Kafka's rule).
    BelowRatio { dirty_ratio: f64, dirty_bytes: u64 },
}

/// Decides [`Settled`] from the segment list (oldest first; the last one is the active
/// segment, never cleaned) or `None` while the dirty ratio is above `min_ratio`.
pub fn settled(segs: &[Segment], cleaned_upto: i64, min_ratio: f64) -> Option<Settled> {
    let Some(active) = segs.last() else {
        return Some(Settled::Clean);
    };
    if cleaned_upto >= active.base {
        return Some(Settled::Clean);
    }
    let below_active = &segs[..segs.len() - 1];
    let clean: u64 = below_active
        .iter()
        .filter(|s| s.base < cleaned_upto)
        .map(|s| s.bytes)
        .sum();
    let dirty: u64 = below_active
        .iter()
        .filter(|s| s.base >= cleaned_upto)
        .map(|s| s.bytes)
        .sum();
    if dirty == 0 {
        return Some(Settled::Clean);
    }
    let ratio = dirty as f64 / (clean + dirty) as f64;
    (ratio <= min_ratio).then_some(Settled::BelowRatio {
        dirty_ratio: ratio,
        dirty_bytes: dirty,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const LINE: &str = "2025-06-01T10:00:00.123456Z  INFO skiff_cleaner::pass: cleaned log in \
        2.500 s: read 100.00 MB (40.00 MB/s), wrote 10.50 MB (4.20 MB/s), 89.5% size \
        reduction of 3 segments in 1 groups; kept 10/100 records, removed 0 tombstones; map \
        100 keys, 1.0% full topic=\"bench-compact\" partition=0 first_dirty=0 \
        end_offset=95000 first_uncleanable=95000 partial=false";

    #[test]
    fn summary_line_is_parsed() {
        let s = parse_summary(LINE).unwrap();
        assert_eq!(s.topic, "bench-compact");
        assert_eq!(s.partition, 0);
        assert_eq!(s.secs, 2.5);
        assert_eq!(s.read_bytes, 100 * 1024 * 1024);
        assert_eq!(s.written_bytes, (10.5 * 1024.0 * 1024.0) as u64);
        assert_eq!((s.first_dirty, s.end_offset, s.partial), (0, 95000, false));
        assert_eq!(s.archived_bytes, 0);
        let archived = format!("{LINE} records_archived=9 bytes_archived=4096");
        assert_eq!(parse_summary(&archived).unwrap().archived_bytes, 4096);
        assert_eq!(s.skipped_bytes, 0);
        let skipped = format!("{LINE} segments_skipped=2 bytes_skipped=8192");
        assert_eq!(parse_summary(&skipped).unwrap().skipped_bytes, 8192);
        // 2025-06-01 is day 20240 of the Unix epoch.
        let want = 20_240.0 * 86_400.0 + 10.0 * 3600.0 + 0.123_456;
        assert!(
            (s.logged_at.unwrap() - want).abs() < 1e-6,
            "{:?}",
            s.logged_at
        );
    }

    #[test]
    fn timestamps_convert_to_unix_seconds() {
        assert_eq!(line_time("1970-01-01T00:00:00Z x"), Some(0.0));
        assert_eq!(
            line_time("2000-03-01T00:00:01.5Z"),
            Some(11_017.0 * 86_400.0 + 1.5)
        );
        assert_eq!(line_time("2024-02-29T23:59:59Z"), Some(1_709_251_199.0));
        assert_eq!(line_time("INFO no time"), None);
        assert_eq!(line_time("2024-13-01T00:00:00Z"), None);
    }

    #[test]
    fn fields_before_the_message_and_unquoted_strings_are_accepted() {
        let line = "INFO skiff_cleaner::pass: topic=t partition=3 first_dirty=5 end_offset=9 \
                    partial=true cleaned log in 0.010 s: read 1.00 MB (100.00 MB/s), wrote \
                    0.00 MB (0.00 MB/s), 100.0% size reduction";
        let s = parse_summary(line).unwrap();
        assert_eq!((s.topic.as_str(), s.partition, s.partial), ("t", 3, true));
        assert_eq!((s.first_dirty, s.end_offset, s.written_bytes), (5, 9, 0));
        assert_eq!(s.logged_at, None);
    }

    #[test]
    fn other_and_broken_lines_are_ignored() {
        assert_eq!(parse_summary("INFO skiff: skiff is ready addr=1"), None);
        assert_eq!(parse_summary(&LINE.replace("read 100.00", "read x")), None);
        assert_eq!(parse_summary(&LINE.replace("end_offset=95000", "")), None);
        assert_eq!(
            parse_summary(&LINE.replace("partial=false", "partial=maybe")),
            None
        );
    }

    fn seg(base: i64, bytes: u64) -> Segment {
        Segment { base, bytes }
    }

    #[test]
    fn clean_when_the_cleaner_reached_the_active_segment() {
        let segs = [seg(0, 10), seg(100, 64), seg(200, 5)];
        assert_eq!(settled(&segs, 200, 0.5), Some(Settled::Clean));
        assert_eq!(settled(&[seg(0, 5)], 0, 0.5), Some(Settled::Clean));
        assert_eq!(settled(&[], 0, 0.5), Some(Settled::Clean));
    }

    #[test]
    fn dirty_ratio_decides_otherwise() {
        // 10 clean bytes, 64 dirty: ratio 0.86 > 0.5, the cleaner still has work.
        let segs = [seg(0, 10), seg(100, 64), seg(200, 5)];
        assert_eq!(settled(&segs, 100, 0.5), None);
        assert_eq!(settled(&segs, 0, 0.5), None);
        // 100 clean, 50 dirty: 0.33 ≤ 0.5, nothing more will be cleaned.
        let segs = [seg(0, 100), seg(100, 50), seg(200, 5)];
        match settled(&segs, 100, 0.5) {
            Some(Settled::BelowRatio {
                dirty_ratio,
                dirty_bytes,
            }) => {
                assert!((dirty_ratio - 1.0 / 3.0).abs() < 1e-9);
                assert_eq!(dirty_bytes, 50);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn segments_lists_only_log_files_in_offset_order() {
        let dir = tempfile::tempdir().unwrap();
        for (name, len) in [
            ("00000000000000000100.log", 3),
            ("00000000000000000000.log", 7),
            ("00000000000000000000.index", 1),
            ("00000000000000000200.log.cleaned", 1),
            ("00000000000000000300.log.deleted", 1),
            ("leader-epoch-checkpoint", 1),
        ] {
            fs::write(dir.path().join(name), vec![0u8; len]).unwrap();
        }
        assert_eq!(segments(dir.path()).unwrap(), vec![seg(0, 7), seg(100, 3)]);
    }

    #[test]
    fn log_tail_returns_only_complete_new_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.log");
        fs::write(&path, "one\ntw").unwrap();
        let mut t = LogTail::new(path.clone());
        assert_eq!(t.new_lines().unwrap(), vec!["one"]);
        assert!(t.new_lines().unwrap().is_empty());
        fs::write(&path, "one\ntwo\nthree\n").unwrap();
        assert_eq!(t.new_lines().unwrap(), vec!["two", "three"]);
    }
}
