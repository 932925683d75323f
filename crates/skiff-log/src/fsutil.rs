//! Durable file helpers: atomic replace (write temp → fsync → rename → fsync directory) and
//! directory fsync. Used for checkpoints here and reusable by the broker (topic registry).
//!
//! Stateless functions; callers serialise writers of the same path themselves.

use crate::error::{LogError, Result};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` so that after a crash the file holds either the old or the new
/// content, never a mix: writes `<path>.tmp`, fsyncs it, renames over `path`, fsyncs the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| LogError::io("create", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| LogError::io("write", &tmp, e))?;
        f.sync_all().map_err(|e| LogError::io("fsync", &tmp, e))?;
    }
    fs::rename(&tmp, path).map_err(|e| LogError::io("rename into place", path, e))?;
    if let Some(dir) = path.parent() {
        fsync_dir(dir)?;
    }
    Ok(())
}

/// Makes renames and file creations inside `dir` durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).map_err(|e| LogError::io("open directory", dir, e))?;
    d.sync_all()
        .map_err(|e| LogError::io("fsync directory", dir, e))
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("registry");
        write_atomically(&p, b"one").unwrap();
        write_atomically(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert!(!dir.path().join("registry.tmp").exists());
    }
}
