//! An in-memory FUSE filesystem that forgets everything not fsynced when "the power goes".
//!
//! Owns: the inode table. Every regular file keeps its current bytes and its *durable* bytes
//! (a copy taken at fsync/fdatasync of that file); every directory keeps its current entries
//! and its durable entries (a copy taken at fsync of that directory). That is the strict
//! POSIX reading that ext4 users are told to program against: a new file, a rename, an unlink,
//! a mkdir or an rmdir survives a power cut only once its *directory* has been fsynced, and a
//! file's bytes only once the *file* has been fsynced. A [`Image`] is the durable state: a
//! new filesystem mounted from it is what the disk holds after the cut.
//!
//! Cuts: [`FsHandle::cut`] takes the durable image at once (a random moment); [`FsHandle::arm`]
//! makes the filesystem cut by itself at a chosen operation (the n-th operation with a given
//! [`Step`] label, then after k more fsyncs). After a cut every operation fails with EIO, so
//! nothing the broker does afterwards can be acknowledged as durable.
//!
//! Thread-safety: all state sits behind one std `Mutex` (no `.await` anywhere; FUSE callbacks
//! run on fuser's session thread); the cut is taken under that lock, so it is atomic with
//! respect to every operation. Inodes are never reused while mounted (an unlinked file may
//! still be named by a durable directory entry).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

/// Attribute/entry cache time given to the kernel. The broker is the only user of the mount
/// and every change goes through the kernel, so its caches stay right; a remount (after a
/// cut) starts with empty caches.
const TTL: Duration = Duration::from_secs(1);

const ROOT: u64 = 1;

/// What an operation touches, for counting and for choosing cut points. Labels come from the
/// file names the broker uses (Kafka's layout), see [`classify`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// A new `.log` file: a segment roll (or a new partition's first segment).
    SegmentRoll,
    /// A rename involving `.cleaned`, `.swap` or `.deleted`: the cleaner's swap protocol
    /// (and segment deletion, which renames to `.deleted` first).
    CleanerSwap,
    /// mkdir in the log dir root: a partition directory, i.e. topic creation.
    TopicCreate,
    /// Rename of a partition directory to `*-delete`, or rmdir: topic deletion.
    TopicDelete,
    /// A write to a `__consumer_offsets` partition: offset commits and group metadata.
    OffsetCommit,
    /// A write to a `__transaction_state` partition or a `.txnindex`: transaction markers.
    TxnMarker,
    /// A rename onto a checkpoint, the topic registry or a producer snapshot.
    Checkpoint,
    /// Any other write to a file (record appends, index entries).
    Write,
    /// fsync/fdatasync of a file.
    FileSync,
    /// fsync of a directory.
    DirSync,
    /// Anything else that changes the tree (create of a non-log file, unlink, truncate).
    Other,
}

impl Step {
    pub const ALL: [Step; 11] = [
        Step::SegmentRoll,
        Step::CleanerSwap,
        Step::TopicCreate,
        Step::TopicDelete,
        Step::OffsetCommit,
        Step::TxnMarker,
        Step::Checkpoint,
        Step::Write,
        Step::FileSync,
        Step::DirSync,
        Step::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Step::SegmentRoll => "segment roll",
            Step::CleanerSwap => "cleaner swap",
            Step::TopicCreate => "topic create",
            Step::TopicDelete => "topic delete",
            Step::OffsetCommit => "offset commit",
            Step::TxnMarker => "txn marker",
            Step::Checkpoint => "checkpoint",
            Step::Write => "write",
            Step::FileSync => "file fsync",
            Step::DirSync => "dir fsync",
            Step::Other => "other",
        }
    }
}

#[derive(Clone)]
enum Node {
    File {
        data: Vec<u8>,
        durable: Arc<Vec<u8>>,
    },
    Dir {
        /// Parent and name, for labels only (kept current across renames).
        parent: u64,
        name: OsString,
        entries: BTreeMap<OsString, u64>,
        durable: BTreeMap<OsString, u64>,
    },
}

#[derive(Clone)]
struct Inode {
    node: Node,
    perm: u16,
    mtime: SystemTime,
}

/// The durable state of a filesystem: what a disk would hold after a power cut.
#[derive(Clone)]
pub struct Image {
    inodes: HashMap<u64, Inode>,
    next_ino: u64,
}

impl Image {
    /// An empty filesystem (just the root directory).
    pub fn empty() -> Image {
        let mut inodes = HashMap::new();
        inodes.insert(
            ROOT,
            Inode {
                node: Node::Dir {
                    parent: ROOT,
                    name: OsString::new(),
                    entries: BTreeMap::new(),
                    durable: BTreeMap::new(),
                },
                perm: 0o755,
                mtime: SystemTime::now(),
            },
        );
        Image {
            inodes,
            next_ino: ROOT + 1,
        }
    }

    /// Paths of every file and directory in the image, for failure messages.
    pub fn list(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.walk(ROOT, String::new(), &mut out);
        out
    }

    fn walk(&self, ino: u64, prefix: String, out: &mut Vec<String>) {
        if let Some(Inode {
            node: Node::Dir { entries, .. },
            ..
        }) = self.inodes.get(&ino)
        {
            for (name, child) in entries {
                let p = format!("{prefix}/{}", name.to_string_lossy());
                match self.inodes.get(child).map(|i| &i.node) {
                    Some(Node::File { data, .. }) => out.push(format!("{p} ({} B)", data.len())),
                    Some(Node::Dir { .. }) => {
                        out.push(format!("{p}/"));
                        self.walk(*child, p, out);
                    }
                    None => out.push(format!("{p} (dangling)")),
                }
            }
        }
    }
}

/// A pending self-triggered cut.
#[derive(Clone, Copy, Debug)]
pub struct Trigger {
    pub step: Step,
    /// Cut at the n-th operation with this label (1 = the first) …
    pub nth: u32,
    /// … and then after this many further fsyncs (file or directory); 0 = at the operation.
    pub then_syncs: u32,
}

/// How a cut happened, for the report.
#[derive(Clone, Debug)]
pub struct CutInfo {
    /// The step that triggered it, or None for a cut at a random moment.
    pub step: Option<Step>,
    pub trigger: Option<Trigger>,
    /// Operation counts per label from mount to the cut.
    pub counts: BTreeMap<Step, u64>,
    pub at: Instant,
}

struct State {
    inodes: HashMap<u64, Inode>,
    next_ino: u64,
    counts: BTreeMap<Step, u64>,
    trigger: Option<Trigger>,
    /// Counts of the triggering label since arming, then fsyncs after it matched.
    trigger_seen: u32,
    trigger_matched: bool,
    cut: Option<(Image, CutInfo)>,
    /// Self-test only: fsyncs of this kind do not make anything durable (see [`Broken`]).
    broken: Broken,
}

/// A deliberately broken filesystem, to show the test catches a missing fsync: with
/// `IgnoreFileSync` file data never becomes durable, with `IgnoreDirSync` directory entries
/// never do. `POWERCUT_BREAK=file|dir` selects it in the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Broken {
    #[default]
    No,
    IgnoreFileSync,
    IgnoreDirSync,
}

struct Shared {
    state: Mutex<State>,
    cut_done: Condvar,
}

/// The filesystem given to fuser.
pub struct MemFs {
    shared: Arc<Shared>,
}

/// The test's handle on a mounted [`MemFs`]: cut, arm, read counts.
#[derive(Clone)]
pub struct FsHandle {
    shared: Arc<Shared>,
}

impl MemFs {
    /// A filesystem whose current and durable states are both `image`.
    pub fn from_image(image: Image, broken: Broken) -> (MemFs, FsHandle) {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                inodes: image.inodes,
                next_ino: image.next_ino,
                counts: BTreeMap::new(),
                trigger: None,
                trigger_seen: 0,
                trigger_matched: false,
                cut: None,
                broken,
            }),
            cut_done: Condvar::new(),
        });
        (
            MemFs {
                shared: shared.clone(),
            },
            FsHandle { shared },
        )
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // A panic in a callback must not wedge the mount: the state is still usable.
    shared.state.lock().unwrap_or_else(|p| p.into_inner())
}

impl FsHandle {
    /// Cuts the power now (unless a cut already happened) and returns the durable image.
    pub fn cut(&self) -> (Image, CutInfo) {
        let mut st = lock(&self.shared);
        if st.cut.is_none() {
            st.do_cut(None);
            self.shared.cut_done.notify_all();
        }
        st.cut
            .clone()
            .unwrap_or_else(|| (Image::empty(), st.info(None)))
    }

    /// Arms a self-triggered cut (replaces any previous trigger) and restarts the counts.
    pub fn arm(&self, t: Trigger) {
        let mut st = lock(&self.shared);
        st.counts.clear();
        st.trigger = Some(t);
        st.trigger_seen = 0;
        st.trigger_matched = false;
    }

    /// Removes the armed trigger, if any.
    pub fn disarm(&self) {
        lock(&self.shared).trigger = None;
    }

    /// Restarts the operation counts (the report shows operations from here to the cut).
    pub fn reset_counts(&self) {
        lock(&self.shared).counts.clear();
    }

    /// Whether the power is already cut.
    pub fn is_cut(&self) -> bool {
        lock(&self.shared).cut.is_some()
    }

    /// Waits up to `limit` for a self-triggered cut.
    pub fn wait_cut(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut st = lock(&self.shared);
        while st.cut.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = match self.shared.cut_done.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        true
    }

    /// Operation counts per label since mount (or the last reset).
    pub fn counts(&self) -> BTreeMap<Step, u64> {
        lock(&self.shared).counts.clone()
    }
}

impl State {
    fn info(&self, step: Option<Step>) -> CutInfo {
        CutInfo {
            step,
            trigger: self.trigger,
            counts: self.counts.clone(),
            at: Instant::now(),
        }
    }

    /// The durable image: durable entries and bytes, restricted to what is reachable from
    /// the root through durable entries.
    fn durable_image(&self) -> Image {
        let mut inodes = HashMap::new();
        let mut stack = vec![ROOT];
        while let Some(ino) = stack.pop() {
            if inodes.contains_key(&ino) {
                continue;
            }
            let Some(i) = self.inodes.get(&ino) else {
                continue;
            };
            let node = match &i.node {
                Node::File { durable, .. } => Node::File {
                    data: durable.as_ref().clone(),
                    durable: durable.clone(),
                },
                Node::Dir {
                    parent,
                    name,
                    durable,
                    ..
                } => {
                    stack.extend(durable.values().copied());
                    Node::Dir {
                        parent: *parent,
                        name: name.clone(),
                        entries: durable.clone(),
                        durable: durable.clone(),
                    }
                }
            };
            inodes.insert(
                ino,
                Inode {
                    node,
                    perm: i.perm,
                    mtime: i.mtime,
                },
            );
        }
        Image {
            inodes,
            next_ino: self.next_ino,
        }
    }

    fn do_cut(&mut self, step: Option<Step>) {
        let image = self.durable_image();
        let info = self.info(step);
        self.cut = Some((image, info));
    }

    /// Counts an operation and fires the trigger. Returns Err(EIO) once the power is cut.
    fn record(&mut self, step: Step) -> Result<(), Errno> {
        if self.cut.is_some() {
            return Err(Errno::EIO);
        }
        *self.counts.entry(step).or_insert(0) += 1;
        Ok(())
    }

    /// Called after an operation was applied: cuts if the armed trigger says so. Returns
    /// whether it cut (the caller notifies waiters).
    fn after(&mut self, step: Step) -> bool {
        let Some(t) = self.trigger else {
            return false;
        };
        if self.cut.is_some() {
            return false;
        }
        if !self.trigger_matched {
            if step == t.step {
                self.trigger_seen += 1;
                if self.trigger_seen >= t.nth {
                    self.trigger_matched = true;
                    self.trigger_seen = 0;
                    if t.then_syncs == 0 {
                        self.do_cut(Some(t.step));
                        return true;
                    }
                }
            }
            return false;
        }
        if matches!(step, Step::FileSync | Step::DirSync) {
            self.trigger_seen += 1;
            if self.trigger_seen >= t.then_syncs {
                self.do_cut(Some(t.step));
                return true;
            }
        }
        false
    }

    fn path_of_dir(&self, mut ino: u64) -> String {
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

    fn attr(&self, ino: u64) -> Result<FileAttr, Errno> {
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

    fn entries(&self, dir: u64) -> Result<&BTreeMap<OsString, u64>, Errno> {
        match self.inodes.get(&dir).map(|i| &i.node) {
            Some(Node::Dir { entries, .. }) => Ok(entries),
            Some(Node::File { .. }) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    fn entries_mut(&mut self, dir: u64) -> Result<&mut BTreeMap<OsString, u64>, Errno> {
        match self.inodes.get_mut(&dir).map(|i| &mut i.node) {
            Some(Node::Dir { entries, .. }) => Ok(entries),
            Some(Node::File { .. }) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    fn file_mut(&mut self, ino: u64) -> Result<&mut Inode, Errno> {
        match self.inodes.get_mut(&ino) {
            Some(i) if matches!(i.node, Node::File { .. }) => Ok(i),
            Some(_) => Err(Errno::EISDIR),
            None => Err(Errno::ENOENT),
        }
    }

    fn is_dir(&self, ino: u64) -> bool {
        matches!(
            self.inodes.get(&ino).map(|i| &i.node),
            Some(Node::Dir { .. })
        )
    }

    fn new_inode(&mut self, node: Node, perm: u16) -> u64 {
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
}

/// Labels an operation by the names it touches (`dir` is the parent directory's path
/// relative to the mount, `name` the entry).
fn classify(op: &str, dir: &str, name: &str, new_name: &str) -> Step {
    let top = dir.split('/').next().unwrap_or("");
    match op {
        "mkdir" if dir.is_empty() => Step::TopicCreate,
        "rmdir" => Step::TopicDelete,
        "rename" => {
            let swap =
                |n: &str| n.contains(".cleaned") || n.contains(".swap") || n.contains(".deleted");
            if swap(name) || swap(new_name) {
                Step::CleanerSwap
            } else if dir.is_empty() && new_name.ends_with("-delete") {
                Step::TopicDelete
            } else if name.ends_with(".tmp") {
                Step::Checkpoint
            } else {
                Step::Other
            }
        }
        "create" if name.ends_with(".log") => Step::SegmentRoll,
        "write" if top.starts_with("__consumer_offsets-") => Step::OffsetCommit,
        "write" if top.starts_with("__transaction_state-") || name.ends_with(".txnindex") => {
            Step::TxnMarker
        }
        "write" => Step::Write,
        _ => Step::Other,
    }
}

fn os(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
}

impl Filesystem for MemFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let st = self.lock();
        let r = st
            .entries(parent.0)
            .and_then(|e| e.get(name).copied().ok_or(Errno::ENOENT))
            .and_then(|ino| st.attr(ino));
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.lock().attr(ino.0) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
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
                st.record(Step::Other)?;
                let f = st.file_mut(ino.0)?;
                if let Node::File { data, .. } = &mut f.node {
                    let len = usize::try_from(size).map_err(|_| Errno::EFBIG)?;
                    data.resize(len, 0);
                }
                f.mtime = SystemTime::now();
                if st.after(Step::Other) {
                    self.shared.cut_done.notify_all();
                }
            }
            if let Some(mode) = mode {
                if let Some(i) = st.inodes.get_mut(&ino.0) {
                    i.perm = (mode & 0o7777) as u16;
                }
            }
            st.attr(ino.0)
        })();
        match r {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
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
        let r = (|| {
            st.record(step)?;
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
        })();
        if r.is_ok() && st.after(step) {
            self.shared.cut_done.notify_all();
        }
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
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
        let r = (|| {
            st.record(step)?;
            let existing = st.entries(parent.0)?.get(name).copied();
            let ino = match existing {
                Some(_) if flags & libc::O_EXCL != 0 => return Err(Errno::EEXIST),
                Some(ino) => {
                    if flags & libc::O_TRUNC != 0 {
                        if let Node::File { data, .. } = &mut st.file_mut(ino)?.node {
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
        })();
        if r.is_ok() && st.after(step) {
            self.shared.cut_done.notify_all();
        }
        match r {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.lock();
        let r = (|| {
            st.record(Step::Other)?;
            let ino = *st.entries(parent.0)?.get(name).ok_or(Errno::ENOENT)?;
            if st.is_dir(ino) {
                return Err(Errno::EISDIR);
            }
            st.entries_mut(parent.0)?.remove(name);
            Ok(())
        })();
        if r.is_ok() && st.after(Step::Other) {
            self.shared.cut_done.notify_all();
        }
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.lock();
        let step = classify("rmdir", &st.path_of_dir(parent.0), &os(name), "");
        let r = (|| {
            st.record(step)?;
            let ino = *st.entries(parent.0)?.get(name).ok_or(Errno::ENOENT)?;
            if !st.entries(ino)?.is_empty() {
                return Err(Errno::ENOTEMPTY);
            }
            st.entries_mut(parent.0)?.remove(name);
            Ok(())
        })();
        if r.is_ok() && st.after(step) {
            self.shared.cut_done.notify_all();
        }
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
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
        let r = (|| {
            st.record(step)?;
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
        })();
        if r.is_ok() && st.after(step) {
            self.shared.cut_done.notify_all();
        }
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let mut st = self.lock();
        if st.cut.is_some() {
            return reply.error(Errno::EIO);
        }
        if flags.0 & libc::O_TRUNC != 0 {
            if let Ok(Inode {
                node: Node::File { data, .. },
                ..
            }) = st.file_mut(ino.0)
            {
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
        let r = (|| {
            st.record(step)?;
            let f = st.file_mut(ino.0)?;
            if let Node::File { data, .. } = &mut f.node {
                let start = usize::try_from(offset).map_err(|_| Errno::EFBIG)?;
                let end = start.checked_add(buf.len()).ok_or(Errno::EFBIG)?;
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[start..end].copy_from_slice(buf);
            }
            f.mtime = SystemTime::now();
            Ok(buf.len() as u32)
        })();
        if r.is_ok() && st.after(step) {
            self.shared.cut_done.notify_all();
        }
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
        let r = (|| {
            st.record(Step::FileSync)?;
            if st.broken == Broken::IgnoreFileSync {
                return Ok(());
            }
            if let Node::File { data, durable } = &mut st.file_mut(ino.0)?.node {
                *durable = Arc::new(data.clone());
            }
            Ok(())
        })();
        if r.is_ok() && st.after(Step::FileSync) {
            self.shared.cut_done.notify_all();
        }
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
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
        let r = (|| {
            st.record(Step::DirSync)?;
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
        })();
        if r.is_ok() && st.after(Step::DirSync) {
            self.shared.cut_done.notify_all();
        }
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
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
        let r = (|| {
            st.record(Step::Other)?;
            if let Node::File { data, .. } = &mut st.file_mut(ino.0)?.node {
                let end =
                    usize::try_from(offset.saturating_add(length)).map_err(|_| Errno::EFBIG)?;
                if data.len() < end {
                    data.resize(end, 0);
                }
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

impl State {
    /// The directory path and name of a file inode (for labels): found by scanning the
    /// directories' current entries; empty strings when unlinked.
    fn locate(&self, ino: u64) -> (String, String) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_kafka_file_names() {
        assert_eq!(classify("mkdir", "", "t-0", ""), Step::TopicCreate);
        assert_eq!(
            classify("rename", "", "t-0", "t-0.abc-delete"),
            Step::TopicDelete
        );
        assert_eq!(
            classify(
                "rename",
                "t-0",
                "00000000000000000000.log.cleaned",
                "x.log.swap"
            ),
            Step::CleanerSwap
        );
        assert_eq!(
            classify("create", "t-0", "00000000000000000100.log", ""),
            Step::SegmentRoll
        );
        assert_eq!(
            classify(
                "write",
                "__consumer_offsets-3",
                "00000000000000000000.log",
                ""
            ),
            Step::OffsetCommit
        );
        assert_eq!(
            classify(
                "rename",
                "",
                "recovery-point-offset-checkpoint.tmp",
                "recovery-point-offset-checkpoint"
            ),
            Step::Checkpoint
        );
    }

    #[test]
    fn image_keeps_only_what_was_synced() {
        let (_fs, h) = MemFs::from_image(Image::empty(), Broken::No);
        {
            let mut st = lock(&h.shared);
            let f = st.new_inode(
                Node::File {
                    data: b"abc".to_vec(),
                    durable: Arc::new(b"a".to_vec()),
                },
                0o644,
            );
            let g = st.new_inode(
                Node::File {
                    data: b"zzz".to_vec(),
                    durable: Arc::new(Vec::new()),
                },
                0o644,
            );
            if let Some(Inode {
                node: Node::Dir {
                    entries, durable, ..
                },
                ..
            }) = st.inodes.get_mut(&ROOT)
            {
                entries.insert("f".into(), f);
                entries.insert("g".into(), g);
                durable.insert("f".into(), f);
            }
        }
        let (img, info) = h.cut();
        assert!(info.step.is_none());
        assert_eq!(img.list(), vec!["/f (1 B)".to_string()]);
    }
}
