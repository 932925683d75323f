//! A small document kept whole in one file of the data directory (SCRAM credentials, client
//! quotas): read at start, replaced as a whole by `skiff_log::write_private_atomically` (temp
//! file of mode 600, fsync, rename, fsync of the directory) before a change is made visible, so an acknowledged
//! change survives a crash and a failed one leaves nothing behind. A missing file is an empty
//! document; an unreadable one stops the start (its contents would otherwise be lost on the
//! next write).
//!
//! Thread safety: readers take a snapshot (`Arc`) under a short `RwLock`; writers serialise on
//! `update` (a std `Mutex`, held across validation, the file write and the swap, never across
//! an `.await`), so two changes cannot interleave their read-modify-write.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::broker::StartError;

pub struct DocumentFile<T> {
    path: PathBuf,
    update: Mutex<()>,
    current: RwLock<Arc<T>>,
}

impl<T: Default> DocumentFile<T> {
    /// Reads `root/file` with `parse` (whose errors must not quote secrets).
    pub fn open(
        root: &Path,
        file: &str,
        parse: impl FnOnce(&[u8]) -> Result<T, String>,
    ) -> Result<Self, StartError> {
        let path = root.join(file);
        let document = match std::fs::read(&path) {
            Ok(bytes) => parse(&bytes)
                .map_err(|e| StartError::Config(format!("{} is not valid: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => T::default(),
            Err(e) => {
                return Err(StartError::Io {
                    context: format!("reading {}", path.display()),
                    source: e,
                })
            }
        };
        Ok(DocumentFile {
            path,
            update: Mutex::new(()),
            current: RwLock::new(Arc::new(document)),
        })
    }
}

impl<T> DocumentFile<T> {
    /// The document in force.
    pub fn snapshot(&self) -> Arc<T> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Held by whoever changes the document, from validating against the current one to
    /// applying the new one.
    pub fn lock_updates(&self) -> MutexGuard<'_, ()> {
        self.update.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `bytes` (the rendering of `next`) durably, then makes `next` current. The caller
    /// holds [`Self::lock_updates`]. Blocking (fsync): call from a blocking thread.
    pub fn replace(&self, next: T, bytes: &[u8]) -> Result<(), skiff_log::LogError> {
        skiff_log::write_private_atomically(&self.path, bytes)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        Ok(())
    }
}
