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
//!
//! Layout: this module holds the state, the durable image and the cut logic; `step.rs` the
//! operation labels, `tree.rs` the inode-tree helpers, `ops.rs` the FUSE operations
//! (`impl Filesystem`), `tests.rs` the unit tests.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use fuser::Errno;

mod ops;
mod step;
mod tree;

pub use step::Step;

/// Attribute/entry cache time given to the kernel. The broker is the only user of the mount
/// and every change goes through the kernel, so its caches stay right; a remount (after a
/// cut) starts with empty caches.
const TTL: Duration = Duration::from_secs(1);

const ROOT: u64 = 1;

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
}

#[cfg(test)]
mod tests;
