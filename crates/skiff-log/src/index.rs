//! Sparse offset index of one segment (`<base>.index`), in Kafka's format so `kafka-dump-log`
//! reads it: 8-byte big-endian entries `relative offset u32 | file position u32`, where the
//! relative offset is the *last* offset of the batch starting at that position.
//!
//! The file is not preallocated: it always holds exactly the entries written, appended one
//! entry at a time. Entries are also kept in memory for lookups. Not internally synchronised:
//! the owning segment guards it with its state lock (writers hold the log's append lock too).

use crate::error::{LogError, Result};
use crate::file_cache::CachedFile;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Size of one offset index entry on disk.
pub(crate) const OFFSET_ENTRY_LEN: usize = 8;

/// One index entry: offsets are relative to the segment's base offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffsetEntry {
    pub relative_offset: u32,
    pub position: u32,
}

pub(crate) struct OffsetIndex {
    file: CachedFile,
    base_offset: i64,
    entries: Vec<OffsetEntry>,
    max_entries: usize,
}

impl OffsetIndex {
    /// Creates (or truncates) the file and writes `entries` to it.
    pub fn create(
        path: &Path,
        base_offset: i64,
        max_index_bytes: i32,
        entries: Vec<OffsetEntry>,
    ) -> Result<OffsetIndex> {
        let file = CachedFile::open_with(
            path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true),
        )
        .map_err(|e| LogError::io("create offset index", path, e))?;
        let mut buf = Vec::with_capacity(entries.len() * OFFSET_ENTRY_LEN);
        for e in &entries {
            buf.extend_from_slice(&e.relative_offset.to_be_bytes());
            buf.extend_from_slice(&e.position.to_be_bytes());
        }
        file.get()
            .and_then(|f| f.write_all_at(&buf, 0))
            .map_err(|e| LogError::io("write offset index", path, e))?;
        Ok(OffsetIndex {
            file,
            base_offset,
            entries,
            max_entries: max_entries(max_index_bytes),
        })
    }

    /// Loads an existing index. Returns `Ok(None)` when the file is missing or fails the sanity
    /// checks (length, ascending offsets and positions, positions inside the log), so the
    /// caller rebuilds it.
    pub fn load(
        path: &Path,
        base_offset: i64,
        max_index_bytes: i32,
        log_size: u64,
    ) -> Result<Option<OffsetIndex>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io("read offset index", path, e)),
        };
        if bytes.len() % OFFSET_ENTRY_LEN != 0 {
            return Ok(None);
        }
        let mut entries: Vec<OffsetEntry> = Vec::with_capacity(bytes.len() / OFFSET_ENTRY_LEN);
        for chunk in bytes.chunks_exact(OFFSET_ENTRY_LEN) {
            let (rel, pos) = chunk.split_at(4);
            let (Ok(rel), Ok(pos)) = (<[u8; 4]>::try_from(rel), <[u8; 4]>::try_from(pos)) else {
                return Ok(None);
            };
            let e = OffsetEntry {
                relative_offset: u32::from_be_bytes(rel),
                position: u32::from_be_bytes(pos),
            };
            let ascending = entries.last().is_none_or(|last| {
                e.relative_offset > last.relative_offset && e.position > last.position
            });
            if !ascending
                || u64::from(e.position) >= log_size
                || e.relative_offset > i32::MAX as u32
            {
                return Ok(None);
            }
            entries.push(e);
        }
        // Opened on first use: a loaded index is only written again when its segment is
        // the active one.
        let file = CachedFile::closed(path);
        Ok(Some(OffsetIndex {
            file,
            base_offset,
            entries,
            max_entries: max_entries(max_index_bytes),
        }))
    }

    /// Adds an entry for the batch whose last offset is `last_offset`, starting at `position`.
    /// Ignored when full or not ascending (the roll check keeps that from happening on append).
    pub fn append(&mut self, last_offset: i64, position: u64) -> Result<()> {
        let (Ok(rel), Ok(pos)) = (
            u32::try_from(last_offset - self.base_offset),
            u32::try_from(position),
        ) else {
            return Ok(());
        };
        if self.is_full()
            || self
                .entries
                .last()
                .is_some_and(|l| rel <= l.relative_offset || pos <= l.position)
        {
            return Ok(());
        }
        let mut buf = [0u8; OFFSET_ENTRY_LEN];
        buf[..4].copy_from_slice(&rel.to_be_bytes());
        buf[4..].copy_from_slice(&pos.to_be_bytes());
        let at = (self.entries.len() * OFFSET_ENTRY_LEN) as u64;
        self.file
            .get()
            .and_then(|f| f.write_all_at(&buf, at))
            .map_err(|e| LogError::io_at("append to offset index", &self.file.path(), at, e))?;
        self.entries.push(OffsetEntry {
            relative_offset: rel,
            position: pos,
        });
        Ok(())
    }

    /// File position of the last indexed batch whose last offset is <= `offset`, or 0: a
    /// safe place to start scanning for `offset`.
    pub fn lookup(&self, offset: i64) -> u64 {
        let rel = offset - self.base_offset;
        if rel < 0 {
            return 0;
        }
        let n = self
            .entries
            .partition_point(|e| i64::from(e.relative_offset) <= rel);
        n.checked_sub(1)
            .and_then(|i| self.entries.get(i))
            .map(|e| u64::from(e.position))
            .unwrap_or(0)
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The last entry as (absolute last offset, position).
    pub fn last(&self) -> Option<(i64, u64)> {
        self.entries.last().map(|e| {
            (
                self.base_offset + i64::from(e.relative_offset),
                u64::from(e.position),
            )
        })
    }

    pub fn sync(&self) -> Result<()> {
        self.file
            .get()
            .and_then(|f| f.sync_all())
            .map_err(|e| LogError::io("fsync offset index", &self.file.path(), e))
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
}

fn max_entries(max_index_bytes: i32) -> usize {
    usize::try_from(max_index_bytes).unwrap_or(0) / OFFSET_ENTRY_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_floor_entry_and_persists() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("00000000000000000100.index");
        let mut idx = OffsetIndex::create(&p, 100, 1024, Vec::new()).unwrap();
        idx.append(109, 500).unwrap();
        idx.append(119, 1000).unwrap();
        idx.append(115, 1200).unwrap(); // not ascending: ignored
        assert_eq!(idx.lookup(100), 0);
        assert_eq!(idx.lookup(109), 500);
        assert_eq!(idx.lookup(118), 500);
        assert_eq!(idx.lookup(500), 1000);
        let re = OffsetIndex::load(&p, 100, 1024, 2000).unwrap().unwrap();
        assert_eq!(re.len(), 2);
        assert_eq!(re.last(), Some((119, 1000)));
        // Position beyond the log end: corrupt, must be rebuilt.
        assert!(OffsetIndex::load(&p, 100, 1024, 900).unwrap().is_none());
        std::fs::write(&p, [1u8, 2, 3]).unwrap();
        assert!(OffsetIndex::load(&p, 100, 1024, 2000).unwrap().is_none());
    }

    #[test]
    fn full_index_rejects_entries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.index");
        let mut idx = OffsetIndex::create(&p, 0, 16, Vec::new()).unwrap();
        idx.append(1, 10).unwrap();
        assert!(!idx.is_full());
        idx.append(2, 20).unwrap();
        assert!(idx.is_full());
        idx.append(3, 30).unwrap();
        assert_eq!(idx.len(), 2);
    }
}
