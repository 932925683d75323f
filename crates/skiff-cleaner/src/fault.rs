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
