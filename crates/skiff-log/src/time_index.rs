//! Time index of one segment (`<base>.timeindex`), in Kafka's format: 12-byte big-endian
//! entries `timestamp i64 | relative offset u32`. An entry is only added when the segment's
//! maximum timestamp grows; its offset is the last offset of the batch holding that maximum,
//! so every record at or before that offset has a timestamp <= the entry's timestamp.
//!
//! Not preallocated; entries are mirrored in memory. Not internally synchronised: the owning
//! segment guards it with its state lock.

use crate::error::{LogError, Result};
use crate::file_cache::CachedFile;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Size of one time index entry on disk.
pub(crate) const TIME_ENTRY_LEN: usize = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeEntry {
    pub timestamp: i64,
    pub relative_offset: u32,
}

pub(crate) struct TimeIndex {
    file: CachedFile,
    base_offset: i64,
    entries: Vec<TimeEntry>,
    max_entries: usize,
}

impl TimeIndex {
    /// Creates (or truncates) the file and writes `entries` to it.
    pub fn create(
        path: &Path,
        base_offset: i64,
        max_index_bytes: i32,
        entries: Vec<TimeEntry>,
    ) -> Result<TimeIndex> {
        let file = CachedFile::open_with(
            path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true),
        )
        .map_err(|e| LogError::io("create time index", path, e))?;
        let mut buf = Vec::with_capacity(entries.len() * TIME_ENTRY_LEN);
        for e in &entries {
            buf.extend_from_slice(&e.timestamp.to_be_bytes());
            buf.extend_from_slice(&e.relative_offset.to_be_bytes());
        }
        file.get()
            .and_then(|f| f.write_all_at(&buf, 0))
            .map_err(|e| LogError::io("write time index", path, e))?;
        Ok(TimeIndex {
            file,
            base_offset,
            entries,
            max_entries: max_entries(max_index_bytes),
        })
    }

    /// Loads an existing time index; `Ok(None)` when missing or not sane (length, strictly
    /// ascending timestamps, non-decreasing offsets below `next_offset`), so it gets rebuilt.
    pub fn load(
        path: &Path,
        base_offset: i64,
        max_index_bytes: i32,
        next_offset: i64,
    ) -> Result<Option<TimeIndex>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io("read time index", path, e)),
        };
        if bytes.len() % TIME_ENTRY_LEN != 0 {
            return Ok(None);
        }
        let mut entries: Vec<TimeEntry> = Vec::with_capacity(bytes.len() / TIME_ENTRY_LEN);
        for chunk in bytes.chunks_exact(TIME_ENTRY_LEN) {
            let (ts, rel) = chunk.split_at(8);
            let (Ok(ts), Ok(rel)) = (<[u8; 8]>::try_from(ts), <[u8; 4]>::try_from(rel)) else {
                return Ok(None);
            };
            let e = TimeEntry {
                timestamp: i64::from_be_bytes(ts),
                relative_offset: u32::from_be_bytes(rel),
            };
            let ordered = entries.last().is_none_or(|l| {
                e.timestamp > l.timestamp && e.relative_offset >= l.relative_offset
            });
            if !ordered || base_offset + i64::from(e.relative_offset) >= next_offset {
                return Ok(None);
            }
            entries.push(e);
        }
        // Opened on first use: a loaded index is only written again when its segment is
        // the active one.
        let file = CachedFile::closed(path);
        Ok(Some(TimeIndex {
            file,
            base_offset,
            entries,
            max_entries: max_entries(max_index_bytes),
        }))
    }

    /// Appends `(timestamp, offset)` if the timestamp is larger than the last entry's.
    /// `force` skips the full check (sealing a segment always records its maximum).
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64, force: bool) -> Result<()> {
        let Ok(rel) = u32::try_from(offset - self.base_offset) else {
            return Ok(());
        };
        if timestamp < 0
            || (!force && self.is_full())
            || self
                .entries
                .last()
                .is_some_and(|l| timestamp <= l.timestamp || rel < l.relative_offset)
        {
            return Ok(());
        }
        let mut buf = [0u8; TIME_ENTRY_LEN];
        buf[..8].copy_from_slice(&timestamp.to_be_bytes());
        buf[8..].copy_from_slice(&rel.to_be_bytes());
        let at = (self.entries.len() * TIME_ENTRY_LEN) as u64;
        self.file
            .get()
            .and_then(|f| f.write_all_at(&buf, at))
            .map_err(|e| LogError::io_at("append to time index", &self.file.path(), at, e))?;
        self.entries.push(TimeEntry {
            timestamp,
            relative_offset: rel,
        });
        Ok(())
    }

    /// Offset of the last entry whose timestamp is strictly below `target`: no record at or
    /// before it can have a timestamp >= `target`. The base offset when there is none.
    pub fn start_offset_for(&self, target: i64) -> i64 {
        let n = self.entries.partition_point(|e| e.timestamp < target);
        n.checked_sub(1)
            .and_then(|i| self.entries.get(i))
            .map(|e| self.base_offset + i64::from(e.relative_offset))
            .unwrap_or(self.base_offset)
    }

    /// The last entry as (timestamp, absolute offset).
    pub fn last(&self) -> Option<(i64, i64)> {
        self.entries
            .last()
            .map(|e| (e.timestamp, self.base_offset + i64::from(e.relative_offset)))
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    pub fn sync(&self) -> Result<()> {
        self.file
            .get()
            .and_then(|f| f.sync_all())
            .map_err(|e| LogError::io("fsync time index", &self.file.path(), e))
    }

    pub fn path(&self) -> PathBuf {
        self.file.path()
    }

    /// Records that the file was renamed, so a reopen finds it.
    pub fn set_path(&self, path: &Path) {
        self.file.set_path(path);
    }

    /// Keeps the file open until the index is dropped (before a rename or an unlink under
    /// readers); see [`CachedFile::keep_open`].
    pub fn keep_open(&self) -> std::io::Result<()> {
        self.file.keep_open()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

fn max_entries(max_index_bytes: i32) -> usize {
    usize::try_from(max_index_bytes).unwrap_or(0) / TIME_ENTRY_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_growing_timestamps_are_indexed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("00000000000000000010.timeindex");
        let mut t = TimeIndex::create(&p, 10, 1200, Vec::new()).unwrap();
        t.maybe_append(1000, 12, false).unwrap();
        t.maybe_append(1000, 14, false).unwrap(); // not larger: ignored
        t.maybe_append(3000, 20, false).unwrap();
        assert_eq!(t.start_offset_for(500), 10);
        assert_eq!(t.start_offset_for(1000), 10);
        assert_eq!(t.start_offset_for(1001), 12);
        assert_eq!(t.start_offset_for(9999), 20);
        let re = TimeIndex::load(&p, 10, 1200, 21).unwrap().unwrap();
        assert_eq!(re.last(), Some((3000, 20)));
        assert!(TimeIndex::load(&p, 10, 1200, 20).unwrap().is_none());
    }
}
