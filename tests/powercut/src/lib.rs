//! Power-cut test support: an in-memory FUSE filesystem that keeps only what was fsynced
//! ([`memfs`]) and a mount guard that always unmounts ([`Mount`]).
//!
//! Why `fuser`: it is the maintained pure-Rust FUSE crate (no libfuse C library needed; as
//! root it mounts with mount(2) on `/dev/fuse`), so the test needs nothing installed.
//!
//! Thread-safety: a [`Mount`] is owned by one test; the filesystem runs on fuser's session
//! thread and is reached through its [`memfs::FsHandle`].

pub mod memfs;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use memfs::{Broken, FsHandle, Image, MemFs};

/// Whether this machine can run the test: root and `/dev/fuse` present.
pub fn fuse_available() -> Result<(), String> {
    if !Path::new("/dev/fuse").exists() {
        return Err("no /dev/fuse".into());
    }
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if uid != "0" {
        return Err(format!(
            "not root (uid {uid}): mounting FUSE needs mount(2)"
        ));
    }
    Ok(())
}

/// A mounted [`MemFs`]. Dropping it unmounts (lazily as a last resort), so a failing test
/// never leaves a stale mount behind.
pub struct Mount {
    path: PathBuf,
    session: Option<fuser::BackgroundSession>,
    handle: FsHandle,
}

impl Mount {
    /// Mounts a filesystem holding `image` at `path` (an existing empty directory).
    pub fn new(path: &Path, image: Image, broken: Broken) -> Result<Mount> {
        let (fs, handle) = MemFs::from_image(image, broken);
        let mut cfg = fuser::Config::default();
        cfg.mount_options = vec![
            fuser::MountOption::FSName("skiff-powercut".into()),
            fuser::MountOption::RW,
        ];
        let session = fuser::spawn_mount(fs, path, &cfg)
            .with_context(|| format!("mounting the power-cut filesystem at {}", path.display()))?;
        Ok(Mount {
            path: path.to_path_buf(),
            session: Some(session),
            handle,
        })
    }

    pub fn handle(&self) -> &FsHandle {
        &self.handle
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unmounts now; the caller must have stopped every process using the mount.
    pub fn unmount(mut self) -> Result<()> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> Result<()> {
        let Some(s) = self.session.take() else {
            return Ok(());
        };
        match s.umount_and_join() {
            Ok(()) => Ok(()),
            Err(e) => {
                lazy_unmount(&self.path);
                Err(e).with_context(|| format!("unmounting {}", self.path.display()))
            }
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount_inner() {
            eprintln!("power-cut mount: {e:#}");
        }
        // Belt and braces: if the kernel still lists the mount, detach it.
        if is_mounted(&self.path) {
            lazy_unmount(&self.path);
        }
    }
}

fn lazy_unmount(path: &Path) {
    let _ = Command::new("umount").arg("-l").arg(path).status();
}

fn is_mounted(path: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    let p = path.to_string_lossy();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(p.as_ref()))
}
