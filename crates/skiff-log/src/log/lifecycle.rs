//! Durability and the end of a log: flush (fsync up to the log end, advancing the recovery
//! point), close and DeleteTopics' directory removal.
//!
//! Thread-safety: flush takes the append lock only to copy the segment handles it must sync,
//! then fsyncs without it. `close` syncs the sealed active segment under the lock before
//! refusing further appends (the one fsync under the append lock outside `open`, kept as it
//! was: the log is shutting down).

use super::{Log, CLOSED};
use crate::error::{LogError, Result};
use crate::fsutil::fsync_dir;
use crate::segment::Segment;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Log {
    /// fsyncs every segment holding data above the recovery point, without holding the append
    /// lock during the fsyncs. Returns the new recovery point (exclusive).
    pub fn flush(&self) -> Result<i64> {
        super::locked::assert_unlocked("Log::flush");
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

    /// Flushes, records the final time index entry and syncs the indexes, then refuses
    /// further appends.
    pub fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        self.flush()?;
        let mut inner = self.lock();
        if inner.offline.as_deref() == Some(CLOSED) {
            return Ok(());
        }
        let active = inner.active()?;
        if self.settled_at_open.get() == Some(&(inner.leo, active.base_offset)) {
            // Nothing appended or rolled since an open that found everything written.
            if inner.offline.is_none() {
                inner.offline = Some(CLOSED.to_string());
            }
            return Ok(());
        }
        active.seal()?;
        active.sync(true)?;
        if inner.offline.is_none() {
            inner.offline = Some(CLOSED.to_string());
        }
        // The state at the log end, so the next open needs no replay.
        inner.queue_producer_snapshot();
        drop(inner);
        self.write_pending_snapshots()
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
