//! Labels of filesystem operations ([`Step`]), for counting and for choosing cut points, and
//! [`classify`], which derives them from the file names the broker uses (Kafka's layout).
//! Pure functions; no state.

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

/// Labels an operation by the names it touches (`dir` is the parent directory's path
/// relative to the mount, `name` the entry).
pub(super) fn classify(op: &str, dir: &str, name: &str, new_name: &str) -> Step {
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
