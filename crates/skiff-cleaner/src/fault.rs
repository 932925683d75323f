//! Test-only fault injection: makes the cleaning passes of chosen topics panic, so tests can
//! check that a bug in a pass is contained (the partition is marked uncleanable, the other
//! partitions are still cleaned, nothing waits forever). Compiled only for this crate's unit
//! tests and with the `fault-injection` feature, which only dev-dependencies enable.
//!
//! Thread-safety: a process-wide `Mutex<BTreeSet>` of topic names; tests in one process use
//! distinct topic names so they do not see each other's faults.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

static PANICKING_TOPICS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Every cleaning pass of `topic` panics from now on (until [`stop_panicking`]).
pub fn panic_passes_of(topic: &str) {
    PANICKING_TOPICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(topic.to_string());
}

/// Undoes [`panic_passes_of`].
pub fn stop_panicking(topic: &str) {
    PANICKING_TOPICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(topic);
}

/// Called by the pool at the start of every pass, inside its panic guard.
pub(crate) fn before_pass(topic: &str) {
    let hit = PANICKING_TOPICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(topic);
    if hit {
        panic!("injected fault: cleaning pass of topic {topic} panicked");
    }
}

/// A step of an archiving pass (docs/compaction.md §5.11) where a test can make the pass stop
/// as if the process died there: nothing after the step runs, no cleanup of the archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveStep {
    /// The group's removed records are appended to the archive, not yet fsynced.
    AfterAppend,
    /// The archive is fsynced, the group's cleaned segment not yet swapped in.
    AfterSync,
    /// The group is swapped in; the next group (or the intent's removal) has not started.
    AfterSwap,
}

static ARCHIVE_CRASHES: Mutex<Vec<(String, ArchiveStep, u32)>> = Mutex::new(Vec::new());

/// The `nth` (0-based) time a pass of `topic` reaches `step`, it stops there with an error.
/// One-shot: the fault is then forgotten.
pub fn crash_archive_pass_at(topic: &str, step: ArchiveStep, nth: u32) {
    ARCHIVE_CRASHES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((topic.to_string(), step, nth));
}

/// Called by a pass at each [`ArchiveStep`].
pub(crate) fn archive_step(topic: &str, step: ArchiveStep) -> crate::Result<()> {
    let mut armed = ARCHIVE_CRASHES
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let Some(i) = armed.iter().position(|(t, s, _)| t == topic && *s == step) else {
        return Ok(());
    };
    if armed[i].2 > 0 {
        armed[i].2 -= 1;
        return Ok(());
    }
    armed.remove(i);
    Err(crate::CleanerError::Archive(format!(
        "injected crash of an archiving pass of {topic} at {step:?}"
    )))
}

/// Forgets the archive crashes armed for `topic` that no pass reached.
pub fn clear_archive_crashes(topic: &str) {
    ARCHIVE_CRASHES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|(t, _, _)| t != topic);
}
