//! Which partitions the cleaner may touch: the one place that records, per partition, whether a
//! pass is running on it, has been told to stop, or is held off, with the legal moves between
//! those states as methods. The words are Kafka's `LogCleanerManager` ones.
//!
//! | state \ call | `begin_pass` | `end_pass` | `abort_and_pause` | `pause`     | `resume`       |
//! |--------------|--------------|------------|-------------------|-------------|----------------|
//! | idle         | in progress  | error      | paused(1)         | paused(1)   | error          |
//! | in progress  | error        | idle       | aborted(1) [^1]   | error       | error          |
//! | aborted(n)   | error        | paused(n)  | aborted(n+1)      | error       | error          |
//! | paused(n)    | error        | error      | paused(n+1)       | paused(n+1) | n-1, idle at 0 |
//!
//! [^1]: the running pass's abort flag is raised; the caller waits until the pass ends.
//!
//! An absent partition is *idle*. Pauses are counted: every `abort_and_pause` / `pause` needs
//! its own `resume`, so two callers holding a partition off at once (a topic deletion and a
//! config change) do not release each other's hold. Unlike Kafka, a second `abort_and_pause`
//! while a pass is still stopping is legal and counted (`Aborted(n)`), because two broker
//! requests may do that concurrently. *Uncleanable* (a pass or its planning panicked) is
//! orthogonal, as in Kafka's separate `uncleanablePartitions` set: the partition is never
//! picked again until [`CleaningStates::forget`] (topic deleted) or a restart.
//!
//! Thread-safety: plain data; the pool keeps it under its state mutex, so every transition is
//! atomic with respect to the others. Waiting for an aborted pass to end is the caller's job
//! (the pool's condvar): [`CleaningStates::abort_and_pause`] says whether there is something
//! to wait for, [`CleaningStates::is_cleaning`] whether it is still running.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A partition: topic and index.
pub type Partition = (String, i32);

/// The state of a partition the cleaner is not free to pick. Idle partitions have none.
#[derive(Clone, Debug)]
pub enum CleaningState {
    /// A cleaner thread is running a pass; it polls `abort` between batches.
    InProgress { abort: Arc<AtomicBool> },
    /// The running pass was told to stop; when it ends the partition becomes `Paused(pauses)`.
    Aborted { abort: Arc<AtomicBool>, pauses: u32 },
    /// Not picked until as many `resume` calls as the count.
    Paused(u32),
}

impl CleaningState {
    /// The state's name, for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            CleaningState::InProgress { .. } => "in progress",
            CleaningState::Aborted { .. } => "aborted",
            CleaningState::Paused(_) => "paused",
        }
    }
}

/// A transition that is not legal from the partition's current state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("cleaning of {topic}-{partition} cannot {action}: it is {state}")]
    Illegal {
        topic: String,
        partition: i32,
        action: &'static str,
        /// "idle", "in progress", "aborted", "paused" or "uncleanable".
        state: &'static str,
    },
}

/// What [`CleaningStates::abort_and_pause`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortOutcome {
    /// Nothing was running: the partition is paused already.
    Paused,
    /// A pass was running and has been told to stop; wait until it is no longer cleaning.
    MustWait,
}

/// Every partition's cleaning state and uncleanable mark. See the module docs.
#[derive(Debug, Default)]
pub struct CleaningStates {
    states: HashMap<Partition, CleaningState>,
    /// Partitions whose pass or planning panicked, with the panic's message.
    uncleanable: HashMap<Partition, String>,
}

impl CleaningStates {
    /// The partition's state; `None` = idle.
    pub fn state(&self, key: &Partition) -> Option<&CleaningState> {
        self.states.get(key)
    }

    /// A pass is running on it (in progress or aborted but not yet ended).
    pub fn is_cleaning(&self, key: &Partition) -> bool {
        matches!(
            self.states.get(key),
            Some(CleaningState::InProgress { .. } | CleaningState::Aborted { .. })
        )
    }

    /// Held off by pauses (`Paused`, or `Aborted` and about to be).
    pub fn is_paused(&self, key: &Partition) -> bool {
        matches!(
            self.states.get(key),
            Some(CleaningState::Paused(_) | CleaningState::Aborted { .. })
        )
    }

    /// The panic message when the partition is marked uncleanable.
    pub fn uncleanable(&self, key: &Partition) -> Option<&str> {
        self.uncleanable.get(key).map(String::as_str)
    }

    /// The pool may pick it: idle and not uncleanable.
    pub fn can_begin(&self, key: &Partition) -> bool {
        !self.states.contains_key(key) && !self.uncleanable.contains_key(key)
    }

    /// idle → in progress. Returns the abort flag the pass must poll.
    pub fn begin_pass(&mut self, key: &Partition) -> Result<Arc<AtomicBool>, StateError> {
        if let Some(state) = self.states.get(key) {
            return Err(illegal(key, "begin a pass", state.name()));
        }
        if self.uncleanable.contains_key(key) {
            return Err(illegal(key, "begin a pass", "uncleanable"));
        }
        let abort = Arc::new(AtomicBool::new(false));
        self.states.insert(
            key.clone(),
            CleaningState::InProgress {
                abort: abort.clone(),
            },
        );
        Ok(abort)
    }

    /// The pass ended (done, failed, interrupted or panicked): in progress → idle, aborted(n)
    /// → paused(n).
    pub fn end_pass(&mut self, key: &Partition) -> Result<(), StateError> {
        match self.states.get(key) {
            Some(CleaningState::InProgress { .. }) => {
                self.states.remove(key);
                Ok(())
            }
            Some(CleaningState::Aborted { pauses, .. }) => {
                let pauses = *pauses;
                self.states
                    .insert(key.clone(), CleaningState::Paused(pauses));
                Ok(())
            }
            Some(CleaningState::Paused(_)) => Err(illegal(key, "end a pass", "paused")),
            None => Err(illegal(key, "end a pass", "idle")),
        }
    }

    /// Kafka's `abortAndPauseCleaning`: idle → paused(1); paused(n) → paused(n+1); in progress
    /// → aborted(1) with the pass's abort flag raised; aborted(n) → aborted(n+1). Always legal.
    pub fn abort_and_pause(&mut self, key: &Partition) -> AbortOutcome {
        let next = match self.states.remove(key) {
            None => CleaningState::Paused(1),
            Some(CleaningState::Paused(n)) => CleaningState::Paused(n.saturating_add(1)),
            Some(CleaningState::InProgress { abort }) => {
                abort.store(true, Ordering::Release);
                CleaningState::Aborted { abort, pauses: 1 }
            }
            Some(CleaningState::Aborted { abort, pauses }) => {
                abort.store(true, Ordering::Release);
                CleaningState::Aborted {
                    abort,
                    pauses: pauses.saturating_add(1),
                }
            }
        };
        let outcome = match next {
            CleaningState::Paused(_) => AbortOutcome::Paused,
            _ => AbortOutcome::MustWait,
        };
        self.states.insert(key.clone(), next);
        outcome
    }

    /// Holds off a partition that is not being cleaned: idle → paused(1), paused(n) →
    /// paused(n+1). A running pass must be stopped with `abort_and_pause` instead.
    pub fn pause(&mut self, key: &Partition) -> Result<(), StateError> {
        let next = match self.states.get(key) {
            None => CleaningState::Paused(1),
            Some(CleaningState::Paused(n)) => CleaningState::Paused(n.saturating_add(1)),
            Some(other) => return Err(illegal(key, "be paused", other.name())),
        };
        self.states.insert(key.clone(), next);
        Ok(())
    }

    /// Undoes one pause: paused(1) → idle, paused(n) → paused(n-1). Anything else is an error
    /// (Kafka: "cannot be resumed since it is not paused").
    pub fn resume(&mut self, key: &Partition) -> Result<(), StateError> {
        match self.states.get(key) {
            Some(CleaningState::Paused(n)) if *n > 1 => {
                let n = n - 1;
                self.states.insert(key.clone(), CleaningState::Paused(n));
                Ok(())
            }
            Some(CleaningState::Paused(_)) => {
                self.states.remove(key);
                Ok(())
            }
            Some(other) => Err(illegal(key, "be resumed", other.name())),
            None => Err(illegal(key, "be resumed", "idle")),
        }
    }

    /// Marks the partition uncleanable (Kafka's `markPartitionUncleanable`); the first message
    /// is kept. Returns false when it already was.
    pub fn mark_uncleanable(&mut self, key: &Partition, message: String) -> bool {
        if self.uncleanable.contains_key(key) {
            return false;
        }
        self.uncleanable.insert(key.clone(), message);
        true
    }

    /// Drops a deleted partition's pauses and uncleanable mark so a re-created topic starts
    /// afresh. A running pass (on a log created since) is left alone: returns false.
    pub fn forget(&mut self, key: &Partition) -> bool {
        if self.is_cleaning(key) {
            return false;
        }
        self.states.remove(key);
        self.uncleanable.remove(key);
        true
    }

    /// Drops the uncleanable marks of partitions no longer compacted or listed (as the pool's
    /// per-partition entries are dropped), so a log that comes back is judged afresh. Running
    /// passes and pauses are kept: their owners will end or resume them.
    pub fn retain_uncleanable(&mut self, keep: impl Fn(&Partition) -> bool) {
        self.uncleanable.retain(|k, _| keep(k));
    }

    /// Raises the abort flag of every running pass (pool shutdown). States are unchanged: each
    /// pass still ends through [`CleaningStates::end_pass`].
    pub fn abort_all(&self) {
        for state in self.states.values() {
            if let CleaningState::InProgress { abort } | CleaningState::Aborted { abort, .. } =
                state
            {
                abort.store(true, Ordering::Release);
            }
        }
    }
}

fn illegal(key: &Partition, action: &'static str, state: &'static str) -> StateError {
    StateError::Illegal {
        topic: key.0.clone(),
        partition: key.1,
        action,
        state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> Partition {
        ("t".to_string(), 0)
    }

    fn paused_count(s: &CleaningStates) -> Option<u32> {
        match s.state(&p()) {
            Some(CleaningState::Paused(n)) => Some(*n),
            _ => None,
        }
    }

    #[test]
    fn a_pass_begins_and_ends() {
        let mut s = CleaningStates::default();
        assert!(s.can_begin(&p()));
        let abort = s.begin_pass(&p()).unwrap();
        assert!(s.is_cleaning(&p()));
        assert!(!s.can_begin(&p()));
        assert!(!abort.load(Ordering::Acquire));
        s.end_pass(&p()).unwrap();
        assert!(s.state(&p()).is_none());
        assert!(s.can_begin(&p()));
    }

    #[test]
    fn a_second_pass_cannot_begin() {
        let mut s = CleaningStates::default();
        s.begin_pass(&p()).unwrap();
        let err = s.begin_pass(&p()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cleaning of t-0 cannot begin a pass: it is in progress"
        );
    }

    #[test]
    fn aborting_an_idle_partition_pauses_it_directly() {
        let mut s = CleaningStates::default();
        assert_eq!(s.abort_and_pause(&p()), AbortOutcome::Paused);
        assert_eq!(paused_count(&s), Some(1));
        assert!(!s.can_begin(&p()));
        assert!(s.begin_pass(&p()).is_err());
        s.resume(&p()).unwrap();
        assert!(s.can_begin(&p()));
    }

    #[test]
    fn aborting_a_running_pass_raises_its_flag_and_pauses_when_it_ends() {
        let mut s = CleaningStates::default();
        let abort = s.begin_pass(&p()).unwrap();
        assert_eq!(s.abort_and_pause(&p()), AbortOutcome::MustWait);
        assert!(abort.load(Ordering::Acquire));
        assert!(s.is_cleaning(&p()), "still running until the pass sees it");
        assert!(s.is_paused(&p()));
        // A second caller while the pass is stopping: counted.
        assert_eq!(s.abort_and_pause(&p()), AbortOutcome::MustWait);
        s.end_pass(&p()).unwrap();
        assert!(!s.is_cleaning(&p()));
        assert_eq!(paused_count(&s), Some(2));
        s.resume(&p()).unwrap();
        assert_eq!(paused_count(&s), Some(1));
        assert!(!s.can_begin(&p()));
        s.resume(&p()).unwrap();
        assert!(s.can_begin(&p()));
    }

    #[test]
    fn pauses_are_counted() {
        let mut s = CleaningStates::default();
        s.pause(&p()).unwrap();
        assert_eq!(s.abort_and_pause(&p()), AbortOutcome::Paused);
        s.pause(&p()).unwrap();
        assert_eq!(paused_count(&s), Some(3));
        for left in [2, 1] {
            s.resume(&p()).unwrap();
            assert_eq!(paused_count(&s), Some(left));
        }
        s.resume(&p()).unwrap();
        assert!(s.state(&p()).is_none());
    }

    #[test]
    fn resume_when_not_paused_is_an_error() {
        let mut s = CleaningStates::default();
        let err = s.resume(&p()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cleaning of t-0 cannot be resumed: it is idle"
        );
        s.begin_pass(&p()).unwrap();
        assert!(s.resume(&p()).is_err());
        s.abort_and_pause(&p());
        let err = s.resume(&p()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cleaning of t-0 cannot be resumed: it is aborted"
        );
    }

    #[test]
    fn pause_of_a_running_pass_is_an_error() {
        let mut s = CleaningStates::default();
        s.begin_pass(&p()).unwrap();
        assert!(s.pause(&p()).is_err());
        s.abort_and_pause(&p());
        assert!(s.pause(&p()).is_err());
    }

    #[test]
    fn end_pass_without_a_pass_is_an_error() {
        let mut s = CleaningStates::default();
        assert!(s.end_pass(&p()).is_err());
        s.pause(&p()).unwrap();
        assert!(s.end_pass(&p()).is_err());
        assert_eq!(paused_count(&s), Some(1), "the error changed nothing");
    }

    #[test]
    fn uncleanable_is_never_picked_until_forgotten() {
        let mut s = CleaningStates::default();
        s.begin_pass(&p()).unwrap();
        assert!(s.mark_uncleanable(&p(), "boom".into()));
        assert!(!s.mark_uncleanable(&p(), "again".into()));
        s.end_pass(&p()).unwrap();
        assert_eq!(s.uncleanable(&p()), Some("boom"));
        assert!(!s.can_begin(&p()));
        assert!(s.begin_pass(&p()).is_err());
        // Pausing is independent of the mark.
        s.pause(&p()).unwrap();
        s.resume(&p()).unwrap();
        assert!(!s.can_begin(&p()));
        assert!(s.forget(&p()));
        assert!(s.can_begin(&p()));
    }

    #[test]
    fn forget_leaves_a_running_pass_alone() {
        let mut s = CleaningStates::default();
        s.begin_pass(&p()).unwrap();
        s.mark_uncleanable(&p(), "x".into());
        assert!(!s.forget(&p()));
        assert!(s.is_cleaning(&p()));
        assert_eq!(s.uncleanable(&p()), Some("x"));
        s.end_pass(&p()).unwrap();
        s.abort_and_pause(&p());
        assert!(
            s.forget(&p()),
            "a paused partition is forgotten with its pauses"
        );
        assert!(s.state(&p()).is_none());
    }

    #[test]
    fn abort_all_raises_every_running_flag() {
        let mut s = CleaningStates::default();
        let a = s.begin_pass(&p()).unwrap();
        let b = s.begin_pass(&("u".to_string(), 1)).unwrap();
        s.abort_all();
        assert!(a.load(Ordering::Acquire) && b.load(Ordering::Acquire));
        assert!(s.is_cleaning(&p()), "ending is still the pass's job");
    }

    #[test]
    fn retain_uncleanable_drops_marks_of_absent_partitions_only() {
        let mut s = CleaningStates::default();
        let gone = ("gone".to_string(), 0);
        s.mark_uncleanable(&p(), "a".into());
        s.mark_uncleanable(&gone, "b".into());
        s.pause(&gone).unwrap();
        s.retain_uncleanable(|k| *k == p());
        assert_eq!(s.uncleanable(&p()), Some("a"));
        assert_eq!(s.uncleanable(&gone), None);
        assert!(s.is_paused(&gone), "pauses belong to their callers");
    }
}
