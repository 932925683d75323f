//! The bounded cache of open segment files. A segment has three files (log, offset index,
//! time index); holding all of them open would make the process's open-file limit a limit
//! on partitions (about 6,600 at 20,000 open files). Instead each file is a [`CachedFile`]:
//! its path plus, while it is in the cache, an open handle. At most [`capacity`] handles are
//! kept; opening one more closes the least recently used other one (a clock sweep), and a
//! closed file is opened again on its next use.
//!
//! Why closing is safe:
//! - Data written through a handle stays in the inode's page cache when the handle closes,
//!   and an fsync through a handle opened later writes it out (Linux keeps dirty pages per
//!   inode, not per descriptor). So the flusher's fsync-before-acknowledge holds.
//! - Users get an `Arc<File>`; eviction only drops the cache's reference, so a read or write
//!   in flight finishes on its handle. Actual descriptors can exceed the capacity by the
//!   operations in flight.
//! - A segment that is deleted (retention, or swapped out by the cleaner) while readers may
//!   still hold it has its files *kept open* first: opened and never closed by the cache while
//!   the segment lives, as reopening by path would find nothing there. Files renamed for
//!   other reasons (a cleaned segment moving into place) are not used between the rename and
//!   the recording of their new path.
//!
//! The cache is process-wide, as the limit it protects is.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, Weak};

/// Handles kept when nothing set the capacity and the open-file limit is unknown.
const FALLBACK_CAPACITY: usize = 1024;
/// The smallest capacity accepted: a few partitions' worth, so progress is always possible.
pub const MIN_CAPACITY: usize = 16;

static CACHE: LazyLock<FileCache> = LazyLock::new(|| FileCache {
    capacity: AtomicUsize::new(default_capacity()),
    open: AtomicUsize::new(0),
    ring: Mutex::new(VecDeque::new()),
});

/// Sets how many segment files the process keeps open (at least [`MIN_CAPACITY`]); closes
/// the least recently used ones at once when lowered.
pub fn set_capacity(files: usize) {
    let cache = &*CACHE;
    cache
        .capacity
        .store(files.max(MIN_CAPACITY), Ordering::Relaxed);
    cache.shrink(&mut lock(&cache.ring));
}

/// How many segment files the process keeps open at most.
pub fn capacity() -> usize {
    CACHE.capacity.load(Ordering::Relaxed)
}

/// Segment files open in the cache now.
pub fn open_files() -> usize {
    CACHE.open.load(Ordering::Relaxed)
}

/// The process's soft open-file limit, `None` when unlimited.
pub fn open_file_limit() -> Option<usize> {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit.current.and_then(|n| usize::try_from(n).ok())
}

/// Half the open-file limit: the other half is left for connections, the cleaner's inputs,
/// snapshots and everything else.
pub fn default_capacity() -> usize {
    open_file_limit()
        .map(|n| n / 2)
        .unwrap_or(FALLBACK_CAPACITY)
        .max(MIN_CAPACITY)
}

struct FileCache {
    capacity: AtomicUsize,
    /// Slots holding a handle now.
    open: AtomicUsize,
    /// Clock order of the slots that were given a handle; stale entries (closed or dropped
    /// slots) are skipped when the hand reaches them.
    ring: Mutex<VecDeque<Weak<Slot>>>,
}

impl FileCache {
    /// Records a slot that was just given a handle, then closes others while over capacity.
    fn admit(&self, slot: &Arc<Slot>) {
        let mut ring = lock(&self.ring);
        ring.push_back(Arc::downgrade(slot));
        let cap = self.capacity.load(Ordering::Relaxed);
        if ring.len() > cap.saturating_mul(2).saturating_add(1024) {
            ring.retain(|w| w.upgrade().is_some_and(|s| s.is_open()));
        }
        self.shrink(&mut ring);
    }

    /// The clock sweep: a slot used since the hand last passed gets a second chance; files
    /// kept open and busy slots are passed over. Gives up after two turns of the ring, so a
    /// cache full of files kept open runs over its capacity instead of spinning.
    fn shrink(&self, ring: &mut VecDeque<Weak<Slot>>) {
        let cap = self.capacity.load(Ordering::Relaxed);
        let mut budget = ring.len().saturating_mul(2);
        while self.open.load(Ordering::Relaxed) > cap && budget > 0 {
            budget -= 1;
            let Some(weak) = ring.pop_front() else { break };
            let Some(slot) = weak.upgrade() else { continue };
            if slot.kept_open.load(Ordering::Relaxed) || slot.used.swap(false, Ordering::Relaxed) {
                ring.push_back(weak);
                continue;
            }
            let closed = match slot.state.try_lock() {
                Ok(mut st) => Some(st.file.take()),
                // In use right now: as good as recently used.
                Err(_) => None,
            };
            match closed {
                Some(Some(_)) => {
                    self.open.fetch_sub(1, Ordering::Relaxed);
                }
                Some(None) => {}
                None => ring.push_back(weak),
            }
        }
    }
}

struct SlotState {
    path: PathBuf,
    file: Option<Arc<File>>,
}

struct Slot {
    state: Mutex<SlotState>,
    /// Set on every use, cleared by the clock hand.
    used: AtomicBool,
    kept_open: AtomicBool,
}

impl Slot {
    fn is_open(&self) -> bool {
        lock(&self.state).file.is_some()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if st.file.take().is_some() {
            CACHE.open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// One segment file, open while it is in the cache. Reopened read-write (never created or
/// truncated) when used after being closed.
pub(crate) struct CachedFile {
    slot: Arc<Slot>,
}

impl CachedFile {
    /// Opens `path` with `options` now and puts the handle in the cache.
    pub fn open_with(path: &Path, options: &OpenOptions) -> io::Result<CachedFile> {
        let file = options.open(path)?;
        Ok(CachedFile::adopt(path, file))
    }

    /// Wraps a handle the caller opened (recovery reads through it first).
    pub fn adopt(path: &Path, file: File) -> CachedFile {
        let cached = CachedFile::closed(path);
        lock(&cached.slot.state).file = Some(Arc::new(file));
        CACHE.open.fetch_add(1, Ordering::Relaxed);
        CACHE.admit(&cached.slot);
        cached
    }

    /// A file not opened until its first use (a loaded index is read whole, then only
    /// needed again to append or sync).
    pub fn closed(path: &Path) -> CachedFile {
        CachedFile {
            slot: Arc::new(Slot {
                state: Mutex::new(SlotState {
                    path: path.to_path_buf(),
                    file: None,
                }),
                used: AtomicBool::new(true),
                kept_open: AtomicBool::new(false),
            }),
        }
    }

    /// The open handle, opening the file again if the cache had closed it.
    pub fn get(&self) -> io::Result<Arc<File>> {
        self.slot.used.store(true, Ordering::Relaxed);
        let mut st = lock(&self.slot.state);
        if let Some(f) = &st.file {
            return Ok(f.clone());
        }
        let file = Arc::new(OpenOptions::new().read(true).write(true).open(&st.path)?);
        st.file = Some(file.clone());
        drop(st);
        CACHE.open.fetch_add(1, Ordering::Relaxed);
        CACHE.admit(&self.slot);
        Ok(file)
    }

    /// Opens the file if needed and keeps it open until this file is dropped: done before
    /// it is renamed away or unlinked while readers may still use it.
    pub fn keep_open(&self) -> io::Result<()> {
        self.slot.kept_open.store(true, Ordering::Relaxed);
        self.get().map(drop)
    }

    pub fn path(&self) -> PathBuf {
        lock(&self.slot.state).path.clone()
    }

    /// Records that the file was renamed, so a reopen finds it.
    pub fn set_path(&self, path: &Path) {
        lock(&self.slot.state).path = path.to_path_buf();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn rw_create() -> OpenOptions {
        let mut o = OpenOptions::new();
        o.read(true).write(true).create(true).truncate(true);
        o
    }

    /// The cache is process-wide: these tests shrink it to its minimum, which also runs the
    /// rest of this crate's tests under heavy eviction churn.
    #[test]
    fn an_evicted_file_reopens_with_its_data_and_renames_are_followed() {
        set_capacity(MIN_CAPACITY);
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<CachedFile> = (0..3 * MIN_CAPACITY)
            .map(|i| {
                let p = dir.path().join(format!("{i}.log"));
                let f = CachedFile::open_with(&p, &rw_create()).unwrap();
                f.get().unwrap().write_all_at(&[i as u8; 4], 0).unwrap();
                f
            })
            .collect();
        let renamed = dir.path().join("0.log.moved");
        std::fs::rename(files[0].path(), &renamed).unwrap();
        files[0].set_path(&renamed);
        for (i, f) in files.iter().enumerate() {
            let mut buf = [0u8; 4];
            f.get().unwrap().read_exact_at(&mut buf, 0).unwrap();
            assert_eq!(buf, [i as u8; 4]);
        }
    }

    #[test]
    fn a_file_kept_open_survives_the_unlink_of_its_path() {
        set_capacity(MIN_CAPACITY);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("doomed.log");
        let doomed = CachedFile::open_with(&p, &rw_create()).unwrap();
        doomed.get().unwrap().write_all_at(b"kept", 0).unwrap();
        doomed.keep_open().unwrap();
        std::fs::remove_file(&p).unwrap();
        // Pressure on the cache: far more files than it holds.
        let others: Vec<CachedFile> = (0..4 * MIN_CAPACITY)
            .map(|i| {
                let q = dir.path().join(format!("{i}.other"));
                CachedFile::open_with(&q, &rw_create()).unwrap()
            })
            .collect();
        let mut buf = [0u8; 4];
        doomed.get().unwrap().read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"kept");
        drop(others);
    }
}
