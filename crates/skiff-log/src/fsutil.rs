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
    replace(path, bytes, None)
}

/// [`write_atomically`] for a file that holds secrets (credentials, dynamic passwords): on
/// Unix it is readable and writable by its owner only (mode 600), from the first byte.
pub fn write_private_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, Some(0o600))
}

fn replace(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let tmp = tmp_path(path);
    {
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(mode);
            // A temp file left by an earlier crash keeps its mode on open: set it again.
            if tmp.exists() {
                fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
                    .map_err(|e| LogError::io("chmod", &tmp, e))?;
            }
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut f = options
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

    #[cfg(unix)]
    #[test]
    fn private_files_are_owner_only_even_over_a_readable_one() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secrets.json");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        // A temp file left readable by an earlier crash.
        fs::write(dir.path().join("secrets.json.tmp"), b"half").unwrap();
        fs::set_permissions(
            dir.path().join("secrets.json.tmp"),
            fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        write_private_atomically(&p, b"new").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
