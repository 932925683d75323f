//! Crash recovery of segment swaps (the swap itself, and its protocol with one crash point per
//! step, is `log/swap.rs`), and the `.swap` file names both use.
//!
//! Recovery ([`recover_swaps`], before segments are loaded, as Kafka's `LogLoader` does):
//! `*.cleaned` and `*.deleted` → delete; an index `.swap` → delete (a committed swap's indexes are rebuilt from its log);
//! `<base>.log.swap` → delete every segment whose base lies in `[base, swap next offset)`
//! (its old files), rename the swap into place and fully rescan it. As in Kafka, an old
//! segment starting at or above the cleaned segment's next offset (every record of it was
//! superseded) survives a crash right after the commit point; the log is then the cleaned
//! data followed by that old data, which keeps every compaction guarantee, and the next pass
//! removes it.
//!
//! Thread-safety: runs at open, before the log exists; nothing else touches the directory.

use crate::error::{LogError, Result};
use crate::fsutil::fsync_dir;
use crate::recovery::{dir_files, parse_segment_name, scan_batches};
use crate::segment::{segment_path, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

pub(crate) const SWAP_SUFFIX: &str = ".swap";

/// `<dir>/<base>.<suffix>.swap`
pub(crate) fn swap_path(dir: &Path, base: i64, suffix: &str) -> PathBuf {
    let mut p = segment_path(dir, base, suffix).into_os_string();
    p.push(SWAP_SUFFIX);
    PathBuf::from(p)
}

/// Renames `from` to `to`; the error names both.
pub(crate) fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| LogError::io(&format!("rename to {}", to.display()), from, e))
}

/// Finishes or rolls back interrupted swaps in `dir` (see the module docs); returns the base
/// offsets of swapped-in segments, which the loader must scan fully.
pub(crate) fn recover_swaps(dir: &Path) -> Result<BTreeSet<i64>> {
    let mut log_swaps: Vec<(i64, PathBuf)> = Vec::new();
    let mut changed = false;
    let remove = |p: &Path| fs::remove_file(p).map_err(|e| LogError::io("remove leftover", p, e));
    for (path, name) in dir_files(dir)? {
        if name.ends_with(DELETED_SUFFIX) || name.ends_with(crate::cleaning::CLEANED_SUFFIX) {
            remove(&path)?;
            changed = true;
        } else if let Some(target) = name.strip_suffix(SWAP_SUFFIX) {
            match parse_segment_name(target) {
                Some((base, LOG_SUFFIX)) => log_swaps.push((base, path)),
                _ => {
                    remove(&path)?;
                    changed = true;
                }
            }
        }
    }
    log_swaps.sort();
    let mut swapped = BTreeSet::new();
    for (base, path) in log_swaps {
        let end = swap_next_offset(&path, base)?.max(base + 1);
        for (p, name) in dir_files(dir)? {
            if let Some((b, suffix)) = parse_segment_name(&name) {
                let segment_file = matches!(suffix, LOG_SUFFIX | INDEX_SUFFIX | TIME_INDEX_SUFFIX);
                if segment_file && b >= base && b < end {
                    tracing::info!(file = %p.display(), "removing a segment replaced by a swap");
                    remove(&p)?;
                }
            }
        }
        rename(&path, &segment_path(dir, base, LOG_SUFFIX))?;
        tracing::info!(dir = %dir.display(), base_offset = base, "completed an interrupted swap");
        swapped.insert(base);
        changed = true;
    }
    if changed {
        fsync_dir(dir)?;
    }
    Ok(swapped)
}

/// Last offset + 1 of the valid batches of a swap file (its base when it has none).
fn swap_next_offset(path: &Path, base: i64) -> Result<i64> {
    let file = File::open(path).map_err(|e| LogError::io("open swap file", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| LogError::io("stat swap file", path, e))?
        .len();
    let mut next = base;
    scan_batches(&file, path, base, 0, len, |m| {
        next = m.last_offset + 1;
        Ok(())
    })?;
    Ok(next)
}
