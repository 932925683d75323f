//! The log directory root (`log.dirs`, one directory): an exclusive `.lock` so two brokers
//! never share it, the clean-shutdown marker `.kafka_cleanshutdown`, the
//! `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` and
//! `cleaner-offset-checkpoint` files (all in the same text format), and the
//! `<topic>-<partition>` partition directories (leftover `*-delete` directories are removed).
//!
//! Thread-safety: `LogDir` is `Send + Sync`; checkpoint writes are serialised by a mutex.
//! The lock is held for the life of the value (released when it is dropped).

use crate::checkpoint::{self, Offsets};
use crate::clock::Clock;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::fsutil::{fsync_dir, write_atomically};
use crate::log::Log;
use crate::recovery::Recovery;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub(crate) const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
pub(crate) const LOCK_FILE: &str = ".lock";
pub(crate) const RECOVERY_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub(crate) const LOG_START_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// Kafka's name: the first dirty offset of each compacted partition.
pub(crate) const CLEANER_CHECKPOINT: &str = "cleaner-offset-checkpoint";

pub struct LogDir {
    root: PathBuf,
    /// Holds the exclusive lock on `.lock` for as long as this value lives.
    _lock: File,
    recovery_points: Offsets,
    log_starts: Offsets,
    /// Serialises checkpoint writers (they share temp file names).
    write_lock: Mutex<()>,
}

impl LogDir {
    /// Opens (creating if needed) the root, locks it, reads and removes the clean-shutdown
    /// marker, and reads the checkpoints. Returns whether the last shutdown was clean.
    pub fn open(root: &Path) -> Result<(LogDir, bool)> {
        fs::create_dir_all(root).map_err(|e| LogError::io("create log directory", root, e))?;
        let lock_path = root.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| LogError::io("open lock file", &lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LogError::DirLocked(root.display().to_string()))
            }
            Err(TryLockError::Error(e)) => return Err(LogError::io("lock", &lock_path, e)),
        }
        let marker = root.join(CLEAN_SHUTDOWN_FILE);
        let clean = marker.exists();
        if clean {
            fs::remove_file(&marker).map_err(|e| LogError::io("remove", &marker, e))?;
            fsync_dir(root)?;
        }
        let recovery_points = checkpoint::read(&root.join(RECOVERY_CHECKPOINT))?;
        let log_starts = checkpoint::read(&root.join(LOG_START_CHECKPOINT))?;
        Ok((
            LogDir {
                root: root.to_path_buf(),
                _lock: lock,
                recovery_points,
                log_starts,
                write_lock: Mutex::new(()),
            },
            clean,
        ))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn partition_dir(&self, topic: &str, partition: i32) -> PathBuf {
        self.root.join(format!("{topic}-{partition}"))
    }

    /// Clean shutdown: trust the files. Otherwise recover from the checkpointed recovery
    /// point (0 when the partition has none).
    pub fn recovery_for(&self, topic: &str, partition: i32, clean: bool) -> Recovery {
        if clean {
            Recovery::Clean
        } else {
            let rp = self
                .recovery_points
                .get(&(topic.to_string(), partition))
                .copied()
                .unwrap_or(0);
            Recovery::FromOffset(rp)
        }
    }

    /// The checkpointed log start offset of a partition, if any.
    pub fn log_start_for(&self, topic: &str, partition: i32) -> Option<i64> {
        self.log_starts
            .get(&(topic.to_string(), partition))
            .copied()
    }

    /// Opens a partition's log with the right recovery mode and checkpointed log start.
    pub fn open_log(
        &self,
        topic: &str,
        partition: i32,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        clean: bool,
    ) -> Result<Log> {
        Log::open_with_log_start(
            &self.partition_dir(topic, partition),
            config,
            clock,
            self.recovery_for(topic, partition, clean),
            self.log_start_for(topic, partition),
        )
    }

    /// Partition directories as (topic, partition, path). Topic names may contain '-': the
    /// partition is after the last one. Leftover `*-delete` directories are removed.
    pub fn list_partition_dirs(&self) -> Result<Vec<(String, i32, PathBuf)>> {
        let rd = fs::read_dir(&self.root).map_err(|e| LogError::io("list", &self.root, e))?;
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| LogError::io("list", &self.root, e))?;
            if !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let path = entry.path();
            if name.ends_with("-delete") {
                tracing::info!(dir = %path.display(), "removing deleted partition directory");
                fs::remove_dir_all(&path).map_err(|e| LogError::io("remove", &path, e))?;
                continue;
            }
            if let Some((topic, partition)) = parse_partition_dir(&name) {
                out.push((topic.to_string(), partition, path));
            }
        }
        out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        Ok(out)
    }

    /// Writes both checkpoint files (each atomically) for the given logs.
    pub fn write_checkpoints(&self, logs: &[(String, i32, &Log)]) -> Result<()> {
        let _guard = self
            .write_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let rps: Vec<(String, i32, i64)> = logs
            .iter()
            .map(|(t, p, l)| (t.clone(), *p, l.flushed_offset()))
            .collect();
        let starts: Vec<(String, i32, i64)> = logs
            .iter()
            .map(|(t, p, l)| (t.clone(), *p, l.log_start_offset()))
            .collect();
        checkpoint::write(&self.root.join(RECOVERY_CHECKPOINT), &rps)?;
        checkpoint::write(&self.root.join(LOG_START_CHECKPOINT), &starts)
    }

    /// The log cleaner's checkpoint (first dirty offset per partition); empty when missing.
    pub fn read_cleaner_checkpoint(&self) -> Result<BTreeMap<(String, i32), i64>> {
        let _guard = self
            .write_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(checkpoint::read(&self.root.join(CLEANER_CHECKPOINT))?
            .into_iter()
            .collect())
    }

    /// Replaces the cleaner checkpoint atomically (temp file, fsync, rename, directory fsync).
    pub fn write_cleaner_checkpoint(&self, entries: &BTreeMap<(String, i32), i64>) -> Result<()> {
        let _guard = self
            .write_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let rows: Vec<(String, i32, i64)> = entries
            .iter()
            .map(|((t, p), o)| (t.clone(), *p, *o))
            .collect();
        checkpoint::write(&self.root.join(CLEANER_CHECKPOINT), &rows)
    }

    /// Writes the clean-shutdown marker; call after every log is closed and checkpointed.
    pub fn mark_clean_shutdown(&self) -> Result<()> {
        write_atomically(&self.root.join(CLEAN_SHUTDOWN_FILE), b"")
    }
}

/// `my-topic-3` -> ("my-topic", 3).
fn parse_partition_dir(name: &str) -> Option<(&str, i32)> {
    let (topic, partition) = name.rsplit_once('-')?;
    if topic.is_empty() || partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((topic, partition.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaner_checkpoint_round_trip() {
        let root = tempfile::tempdir().unwrap();
        let (dir, _) = LogDir::open(root.path()).unwrap();
        assert!(dir.read_cleaner_checkpoint().unwrap().is_empty());
        let mut m = BTreeMap::new();
        m.insert(("compacted-topic".to_string(), 2), 1234i64);
        m.insert(("a".to_string(), 0), 0i64);
        dir.write_cleaner_checkpoint(&m).unwrap();
        let text = fs::read_to_string(root.path().join(CLEANER_CHECKPOINT)).unwrap();
        assert_eq!(text, "0\n2\na 0 0\ncompacted-topic 2 1234\n");
        assert_eq!(dir.read_cleaner_checkpoint().unwrap(), m);
        m.remove(&("a".to_string(), 0));
        dir.write_cleaner_checkpoint(&m).unwrap();
        assert_eq!(dir.read_cleaner_checkpoint().unwrap(), m);
        assert!(!root.path().join("cleaner-offset-checkpoint.tmp").exists());
        fs::write(root.path().join(CLEANER_CHECKPOINT), "0\n3\nx 0 1\n").unwrap();
        assert!(matches!(
            dir.read_cleaner_checkpoint(),
            Err(LogError::MalformedFile { .. })
        ));
    }

    #[test]
    fn partition_dir_names() {
        assert_eq!(parse_partition_dir("a-b-c-12"), Some(("a-b-c", 12)));
        assert_eq!(parse_partition_dir("topic-0"), Some(("topic", 0)));
        assert_eq!(parse_partition_dir("-0"), None);
        assert_eq!(parse_partition_dir("topic-"), None);
        assert_eq!(parse_partition_dir("topic-x"), None);
        assert_eq!(parse_partition_dir("nodash"), None);
    }
}
