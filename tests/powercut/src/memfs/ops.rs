//! The FUSE operations of [`MemFs`] (`impl Filesystem`).
//!
//! Every operation that changes the tree or a file has the same shape, written once in
//! [`MemFs::change`]: count it under its label (EIO once the power is cut), apply it under the
//! state lock, then let an armed trigger cut right after a successful one (waking
//! [`super::FsHandle::wait_cut`]). The `answer_*` helpers turn a result into the FUSE reply.
//! Read-only operations (lookup, getattr, read, readdir) are not counted and are still served
//! after a cut; `open` is refused after a cut but not counted.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use super::step::{classify, Step};
use super::tree::os;
use super::{Broken, Inode, MemFs, Node, State, ROOT, TTL};

impl MemFs {
    /// Runs one counted operation labelled `step` on the locked state `st`: refuses it with
    /// EIO after a cut, applies `op`, and when it succeeded lets an armed trigger cut now.
    fn change<T>(
        &self,
        st: &mut State,
        step: Step,
        op: impl FnOnce(&mut State) -> Result<T, Errno>,
    ) -> Result<T, Errno> {
        st.record(step)?;
        let r = op(st);
        if r.is_ok() && st.after(step) {
            self.shared.cut_done.notify_all();
        }
        r
    }
}

fn answer_empty(reply: ReplyEmpty, r: Result<(), Errno>) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn answer_attr(reply: ReplyAttr, r: Result<FileAttr, Errno>) {
    match r {
        Ok(a) => reply.attr(&TTL, &a),
        Err(e) => reply.error(e),
    }
}

fn answer_entry(reply: ReplyEntry, r: Result<FileAttr, Errno>) {
    match r {
        Ok(a) => reply.entry(&TTL, &a, Generation(0)),
        Err(e) => reply.error(e),
    }
}

/// The file `ino`'s bytes, or None for a directory (operations on those leave them alone).
fn file_data(st: &mut State, ino: u64) -> Result<Option<&mut Vec<u8>>, Errno> {
    Ok(match &mut st.file_mut(ino)?.node {
        Node::File { data, .. } => Some(data),
        Node::Dir { .. } => None,
    })
}

impl Filesystem for MemFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let st = self.lock();
        let r = st
            .entries(parent.0)
            .and_then(|e| e.get(name).copied().ok_or(Errno::ENOENT))
            .and_then(|ino| st.attr(ino));
        answer_entry(reply, r);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        answer_attr(reply, self.lock().attr(ino.0));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut st = self.lock();
        let r = (|| {
            if let Some(size) = size {
                // A truncate changes the file; a mode change alone is not counted.
                self.change(&mut st, Step::Other, |st| {
                    if let Some(data) = file_data(st, ino.0)? {
                        let len = usize::try_from(size).map_err(|_| Errno::EFBIG)?;
                        data.resize(len, 0);
                    }
                    st.file_mut(ino.0)?.mtime = SystemTime::now();
                    Ok(())
                })?;
            }
            if let Some(mode) = mode {
                if let Some(i) = st.inodes.get_mut(&ino.0) {
                    i.perm = (mode & 0o7777) as u16;
                }
            }
            st.attr(ino.0)
        })();
        answer_attr(reply, r);
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let mut st = self.lock();
        let step = classify("mkdir", &st.path_of_dir(parent.0), &os(name), "");
        let r = self.change(&mut st, step, |st| {
            if st.entries(parent.0)?.contains_key(name) {
                return Err(Errno::EEXIST);
            }
            let ino = st.new_inode(
                Node::Dir {
                    parent: parent.0,
                    name: name.to_os_string(),
                    entries: BTreeMap::new(),
                    durable: BTreeMap::new(),
                },
                (mode & 0o7777) as u16,
            );
            st.entries_mut(parent.0)?.insert(name.to_os_string(), ino);
            st.attr(ino)
        });
        answer_entry(reply, r);
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut st = self.lock();
        let step = classify("create", &st.path_of_dir(parent.0), &os(name), "");
        let r = self.change(&mut st, step, |st| {
            let existing = st.entries(parent.0)?.get(name).copied();
            let ino = match existing {
                Some(_) if flags & libc::O_EXCL != 0 => return Err(Errno::EEXIST),
                Some(ino) => {
                    if flags & libc::O_TRUNC != 0 {
                        if let Some(data) = file_data(st, ino)? {
                            data.clear();
                        }
                    }
                    ino
                }
                None => {
                    let ino = st.new_inode(
                        Node::File {
                            data: Vec::new(),
                            durable: Arc::new(Vec::new()),
                        },
                        (mode & 0o7777) as u16,
                    );
                    st.entries_mut(parent.0)?.insert(name.to_os_string(), ino);
                    ino
                }
            };
            st.attr(ino)
        });
        match r {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.lock();
        let r = self.change(&mut st, Step::Other, |st| {
            let ino = *st.entries(parent.0)?.get(name).ok_or(Errno::ENOENT)?;
            if st.is_dir(ino) {
                return Err(Errno::EISDIR);
            }
            st.entries_mut(parent.0)?.remove(name);
            Ok(())
        });
        answer_empty(reply, r);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.lock();
        let step = classify("rmdir", &st.path_of_dir(parent.0), &os(name), "");
        let r = self.change(&mut st, step, |st| {
            let ino = *st.entries(parent.0)?.get(name).ok_or(Errno::ENOENT)?;
            if !st.entries(ino)?.is_empty() {
                return Err(Errno::ENOTEMPTY);
            }
            st.entries_mut(parent.0)?.remove(name);
            Ok(())
        });
        answer_empty(reply, r);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let mut st = self.lock();
        let step = classify("rename", &st.path_of_dir(parent.0), &os(name), &os(newname));
        let r = self.change(&mut st, step, |st| {
            if flags.contains(RenameFlags::RENAME_EXCHANGE)
                || flags.contains(RenameFlags::RENAME_WHITEOUT)
            {
                return Err(Errno::EINVAL);
            }
            let ino = *st.entries(parent.0)?.get(name).ok_or(Errno::ENOENT)?;
            if let Some(&target) = st.entries(newparent.0)?.get(newname) {
                if flags.contains(RenameFlags::RENAME_NOREPLACE) {
                    return Err(Errno::EEXIST);
                }
                if target == ino {
                    return Ok(());
                }
                match (st.is_dir(ino), st.is_dir(target)) {
                    (true, true) if !st.entries(target)?.is_empty() => {
                        return Err(Errno::ENOTEMPTY)
                    }
                    (true, false) => return Err(Errno::ENOTDIR),
                    (false, true) => return Err(Errno::EISDIR),
                    _ => {}
                }
            }
            st.entries_mut(parent.0)?.remove(name);
            st.entries_mut(newparent.0)?
                .insert(newname.to_os_string(), ino);
            if let Some(Inode {
                node: Node::Dir {
                    parent: p, name: n, ..
                },
                ..
            }) = st.inodes.get_mut(&ino)
            {
                *p = newparent.0;
                *n = newname.to_os_string();
            }
            Ok(())
        });
        answer_empty(reply, r);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let mut st = self.lock();
        if st.cut.is_some() {
            return reply.error(Errno::EIO);
        }
        if flags.0 & libc::O_TRUNC != 0 {
            if let Ok(Some(data)) = file_data(&mut st, ino.0) {
                data.clear();
            }
        }
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let st = self.lock();
        match st.inodes.get(&ino.0).map(|i| &i.node) {
            Some(Node::File { data, .. }) => {
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let end = start.saturating_add(size as usize).min(data.len());
                reply.data(&data[start..end]);
            }
            Some(Node::Dir { .. }) => reply.error(Errno::EISDIR),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        buf: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut st = self.lock();
        let (dir, name) = st.locate(ino.0);
        let step = classify("write", &dir, &name, "");
        let r = self.change(&mut st, step, |st| {
            if let Some(data) = file_data(st, ino.0)? {
                let start = usize::try_from(offset).map_err(|_| Errno::EFBIG)?;
                let end = start.checked_add(buf.len()).ok_or(Errno::EFBIG)?;
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[start..end].copy_from_slice(buf);
            }
            st.file_mut(ino.0)?.mtime = SystemTime::now();
            Ok(buf.len() as u32)
        });
        match r {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let mut st = self.lock();
        let r = self.change(&mut st, Step::FileSync, |st| {
            if st.broken == Broken::IgnoreFileSync {
                return Ok(());
            }
            if let Node::File { data, durable } = &mut st.file_mut(ino.0)?.node {
                *durable = Arc::new(data.clone());
            }
            Ok(())
        });
        answer_empty(reply, r);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let st = self.lock();
        let entries = match st.entries(ino.0) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        let parent = match st.inodes.get(&ino.0).map(|i| &i.node) {
            Some(Node::Dir { parent, .. }) => *parent,
            _ => ROOT,
        };
        let mut all: Vec<(u64, FileType, OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (parent, FileType::Directory, "..".into()),
        ];
        for (name, child) in entries {
            let kind = if st.is_dir(*child) {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            all.push((*child, kind, name.clone()));
        }
        for (i, (child, kind, name)) in all.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*child), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let mut st = self.lock();
        let r = self.change(&mut st, Step::DirSync, |st| {
            if st.broken == Broken::IgnoreDirSync {
                return Ok(());
            }
            match st.inodes.get_mut(&ino.0).map(|i| &mut i.node) {
                Some(Node::Dir {
                    entries, durable, ..
                }) => {
                    *durable = entries.clone();
                    Ok(())
                }
                Some(Node::File { .. }) => Err(Errno::ENOTDIR),
                None => Err(Errno::ENOENT),
            }
        });
        answer_empty(reply, r);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // Plenty of room: the broker waits for free space before cleaning.
        reply.statfs(1 << 24, 1 << 23, 1 << 23, 1 << 20, 1 << 19, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if mode != 0 {
            return reply.error(Errno::EOPNOTSUPP);
        }
        let mut st = self.lock();
        let r = self.change(&mut st, Step::Other, |st| {
            if let Some(data) = file_data(st, ino.0)? {
                let end =
                    usize::try_from(offset.saturating_add(length)).map_err(|_| Errno::EFBIG)?;
                if data.len() < end {
                    data.resize(end, 0);
                }
            }
            Ok(())
        });
        answer_empty(reply, r);
    }
}
