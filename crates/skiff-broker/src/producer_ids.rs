//! Producer id allocation for InitProducerId (Kafka's `ProducerIdManager`): ids only grow and
//! are never handed out twice, even across restarts and crashes. They come from blocks of
//! [`BLOCK_SIZE`]; before the first id of a block is handed out, the block's end is written to
//! `<log dir>/producer-ids` (atomically: temp file, fsync, rename). After a restart allocation
//! resumes at the recorded end, so at most the unused rest of one block is skipped.
//!
//! On-disk format, text: `version=1\nnext.block.start=<n>\n`.
//!
//! Thread-safety: one `Mutex` around the counters; a reservation fsyncs under it (once per
//! block), so callers run allocation on a blocking thread.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use skiff_log::{write_atomically, LogError};

/// Ids reserved per file write: Kafka's block size, so a restart wastes at most this many.
pub const BLOCK_SIZE: i64 = 1000;
const FILE_NAME: &str = "producer-ids";

struct Counters {
    next: i64,
    /// First id not yet reserved on disk.
    block_end: i64,
}

pub struct ProducerIds {
    path: PathBuf,
    counters: Mutex<Counters>,
}

impl ProducerIds {
    /// Reads `producer-ids` under `root` (a missing file means no id was ever handed out).
    pub fn open(root: &Path) -> Result<ProducerIds, LogError> {
        let path = root.join(FILE_NAME);
        let start = match std::fs::read_to_string(&path) {
            Ok(text) => parse(&text).ok_or_else(|| LogError::MalformedFile {
                file: path.display().to_string(),
                message: "expected `version=1` and `next.block.start=<non-negative id>`".into(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => {
                return Err(LogError::Io {
                    context: format!("read {}", path.display()),
                    source: e,
                })
            }
        };
        Ok(ProducerIds {
            path,
            counters: Mutex::new(Counters {
                next: start,
                block_end: start,
            }),
        })
    }

    /// A new producer id, reserving (and persisting) a new block when the current one is used
    /// up. Blocks on an fsync once per block.
    pub fn allocate(&self) -> Result<i64, LogError> {
        let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        if c.next >= c.block_end {
            let end = c
                .next
                .checked_add(BLOCK_SIZE)
                .ok_or_else(|| LogError::MalformedFile {
                    file: self.path.display().to_string(),
                    message: "producer ids exhausted".into(),
                })?;
            let text = format!("version=1\nnext.block.start={end}\n");
            write_atomically(&self.path, text.as_bytes())?;
            c.block_end = end;
        }
        let id = c.next;
        c.next += 1;
        Ok(id)
    }
}

fn parse(text: &str) -> Option<i64> {
    let mut version = None;
    let mut start = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("version", v)) => version = v.trim().parse::<i32>().ok(),
            Some(("next.block.start", v)) => start = v.trim().parse::<i64>().ok(),
            _ => {}
        }
    }
    (version == Some(1)).then_some(start?).filter(|s| *s >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_grow_and_survive_reopen_without_reuse() {
        let dir = tempfile::tempdir().unwrap();
        let ids = ProducerIds::open(dir.path()).unwrap();
        let first: Vec<i64> = (0..3).map(|_| ids.allocate().unwrap()).collect();
        assert_eq!(first, vec![0, 1, 2]);
        drop(ids);
        let ids = ProducerIds::open(dir.path()).unwrap();
        assert_eq!(ids.allocate().unwrap(), BLOCK_SIZE);
        for _ in 0..BLOCK_SIZE {
            ids.allocate().unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(text.contains(&format!("next.block.start={}", 3 * BLOCK_SIZE)));
        assert_eq!(ids.allocate().unwrap(), 2 * BLOCK_SIZE + 1);
    }

    #[test]
    fn malformed_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "next.block.start=-5\n").unwrap();
        assert!(matches!(
            ProducerIds::open(dir.path()),
            Err(LogError::MalformedFile { .. })
        ));
    }
}
