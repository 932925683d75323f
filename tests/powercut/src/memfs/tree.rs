//! The inode tree of [`State`]: paths of directories (for labels), attributes, directory
//! entries, files, new inodes, and where a file inode is named. Plain helpers called with the
//! state lock held.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

use fuser::{Errno, FileAttr, FileType, INodeNo};

use super::{Inode, Node, State, ROOT};

impl State {
    pub(super) fn path_of_dir(&self, mut ino: u64) -> String {
        let mut parts = Vec::new();
        for _ in 0..64 {
            if ino == ROOT {
                break;
            }
            match self.inodes.get(&ino).map(|i| &i.node) {
                Some(Node::Dir { parent, name, .. }) => {
                    parts.push(name.to_string_lossy().into_owned());
                    ino = *parent;
                }
                _ => break,
            }
        }
        parts.reverse();
        parts.join("/")
    }

    pub(super) fn attr(&self, ino: u64) -> Result<FileAttr, Errno> {
        let i = self.inodes.get(&ino).ok_or(Errno::ENOENT)?;
        let (kind, size, nlink) = match &i.node {
            Node::File { data, .. } => (FileType::RegularFile, data.len() as u64, 1),
            Node::Dir { .. } => (FileType::Directory, 0, 2),
        };
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: i.mtime,
            mtime: i.mtime,
            ctime: i.mtime,
            crtime: i.mtime,
            kind,
            perm: i.perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    pub(super) fn entries(&self, dir: u64) -> Result<&BTreeMap<OsString, u64>, Errno> {
        match self.inodes.get(&dir).map(|i| &i.node) {
            Some(Node::Dir { entries, .. }) => Ok(entries),
            Some(Node::File { .. }) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    pub(super) fn entries_mut(&mut self, dir: u64) -> Result<&mut BTreeMap<OsString, u64>, Errno> {
        match self.inodes.get_mut(&dir).map(|i| &mut i.node) {
            Some(Node::Dir { entries, .. }) => Ok(entries),
            Some(Node::File { .. }) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    pub(super) fn file_mut(&mut self, ino: u64) -> Result<&mut Inode, Errno> {
        match self.inodes.get_mut(&ino) {
            Some(i) if matches!(i.node, Node::File { .. }) => Ok(i),
            Some(_) => Err(Errno::EISDIR),
            None => Err(Errno::ENOENT),
        }
    }

    pub(super) fn is_dir(&self, ino: u64) -> bool {
        matches!(
            self.inodes.get(&ino).map(|i| &i.node),
            Some(Node::Dir { .. })
        )
    }

    pub(super) fn new_inode(&mut self, node: Node, perm: u16) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(
            ino,
            Inode {
                node,
                perm,
                mtime: SystemTime::now(),
            },
        );
        ino
    }

    /// The directory path and name of a file inode (for labels): found by scanning the
    /// directories' current entries; empty strings when unlinked.
    pub(super) fn locate(&self, ino: u64) -> (String, String) {
        for (dino, i) in &self.inodes {
            if let Node::Dir { entries, .. } = &i.node {
                if let Some((name, _)) = entries.iter().find(|(_, c)| **c == ino) {
                    return (self.path_of_dir(*dino), os(name));
                }
            }
        }
        (String::new(), String::new())
    }
}

pub(super) fn os(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
}
