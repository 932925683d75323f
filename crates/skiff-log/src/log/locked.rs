//! The append lock as a type. [`AppendLocked`] is the only handle on a log's `Inner` state:
//! `Log::lock` is the only way to make one, and the functions that used to say "caller holds
//! the append lock" are methods of the guard or take it as a parameter, so the compiler refuses
//! a call made without the lock. The guard also remembers which log it locks, so a function
//! can not be handed another log's state.
//!
//! The opposite contract ("never fsync while holding the append lock") can not be stated in a
//! type; [`assert_unlocked`] checks it at the log's fsync paths in debug builds (every test),
//! with a per-thread count of held append locks (the guard is not `Send`, so it is dropped on
//! the thread that took it).
//!
//! Thread-safety: a guard lives on one thread for the span of one critical section; it holds
//! the `std` Mutex guard of `Inner` (no `.await` ever happens under it: this crate has none).

use super::{Inner, Log, Snapshot};
use crate::error::{LogError, Result};
use crate::segment::{write_guard, Segment};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A log's append lock: the Mutex around its `Inner` state. Its field is private to this
/// file, so the only way to lock it is [`AppendLocked::new`] (through `Log::lock`).
pub(super) struct AppendLock(Mutex<Inner>);

impl AppendLock {
    pub(super) fn new(inner: Inner) -> AppendLock {
        AppendLock(Mutex::new(inner))
    }
}

/// The append lock of one log, held. Dereferences to the state it guards.
///
/// ```text
/// let mut locked = log.lock();          // the only way to get one
/// locked.roll(leo, &config, now)?;      // needs the lock: a method of the guard
/// locked.publish();                     // readers see the change
/// drop(locked);                         // release before any fsync
/// log.write_pending_snapshots()?;       // asserts (debug) that no append lock is held
/// ```
pub(crate) struct AppendLocked<'a> {
    log: &'a Log,
    inner: MutexGuard<'a, Inner>,
}

impl<'a> AppendLocked<'a> {
    /// Takes `log`'s append lock (a poisoned lock is taken over: the state stays usable, and
    /// a failed write has already taken the log offline).
    pub(super) fn new(log: &'a Log) -> AppendLocked<'a> {
        let inner = log.inner.0.lock().unwrap_or_else(PoisonError::into_inner);
        held::acquired();
        AppendLocked { log, inner }
    }

    /// The log this guard locks.
    pub(super) fn log(&self) -> &'a Log {
        self.log
    }

    /// Publishes the guarded state to readers.
    pub(super) fn publish(&self) {
        let inner = &*self.inner;
        *write_guard(&self.log.snapshot) = Arc::new(Snapshot {
            segments: inner.segments.clone(),
            log_start: inner.log_start,
            leo: inner.leo,
            first_unstable: inner.producers.first_unstable_offset(),
            aborted: inner.aborted.clone(),
        });
    }

    /// The active (last) segment.
    pub(super) fn active(&self) -> Result<Arc<Segment>> {
        self.inner
            .segments
            .last()
            .cloned()
            .ok_or_else(|| LogError::Offline(format!("{} has no segment", self.log.dir.display())))
    }
}

impl Deref for AppendLocked<'_> {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.inner
    }
}

impl DerefMut for AppendLocked<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.inner
    }
}

impl Drop for AppendLocked<'_> {
    fn drop(&mut self) {
        held::released();
    }
}

/// Debug builds: panics when this thread holds an append lock. Called first thing by every
/// log function that fsyncs (`what` names it).
pub(crate) fn assert_unlocked(what: &str) {
    held::assert_none(what);
}

#[cfg(debug_assertions)]
mod held {
    use std::cell::Cell;

    thread_local! {
        /// Append locks this thread holds.
        static HELD: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn acquired() {
        HELD.with(|h| h.set(h.get() + 1));
    }

    pub(super) fn released() {
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
    }

    pub(super) fn assert_none(what: &str) {
        let held = HELD.with(Cell::get);
        assert!(
            held == 0,
            "{what} fsyncs, but this thread holds {held} append lock(s)"
        );
    }
}

#[cfg(not(debug_assertions))]
mod held {
    pub(super) fn acquired() {}
    pub(super) fn released() {}
    pub(super) fn assert_none(_what: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LogConfig;
    use crate::producer_state::{CompletedTxn, ProducerEntry};
    use crate::recovery::Recovery;
    use crate::segment::BatchMeta;
    use crate::txn_index::{AbortedTxn, VerificationGuard};
    use crate::ManualClock;
    use skiff_records::BatchHeader;
    use std::sync::mpsc;

    /// The type contract, checked by the compiler: each line compiles only while the function
    /// takes the append lock's guard (a `&`/`&mut AppendLocked`, or is a method of it). A
    /// guard exists only while the lock is held (`AppendLocked::new` locks, `Drop` unlocks)
    /// and `AppendLock`'s Mutex is private to this file, so none of these can run unlocked.
    #[allow(clippy::type_complexity)]
    fn guarded_signatures() {
        let _: fn(&AppendLocked<'static>) = AppendLocked::publish;
        let _: fn(&AppendLocked<'static>) -> Result<Arc<Segment>> = AppendLocked::active;
        let _: fn(&mut AppendLocked<'static>, i64, &LogConfig, i64) -> Result<()> =
            AppendLocked::roll;
        let _: fn(&AppendLocked<'static>) = AppendLocked::queue_producer_snapshot;
        let _: fn(&mut AppendLocked<'static>, &[CompletedTxn]) = AppendLocked::record_completed;
        let _: fn(&AppendLocked<'static>, &[BatchHeader], Option<VerificationGuard>) -> Result<()> =
            AppendLocked::check_verified;
        let _: fn(&mut AppendLocked<'static>, i64, Vec<AbortedTxn>) -> Result<()> =
            AppendLocked::load_txn_index;
        let _: fn(&Segment, &AppendLocked<'static>, &[u8], &[BatchMeta], i64) -> Result<()> =
            Segment::append;
        let _: fn(&mut AppendLocked<'static>, &[u8], &[BatchMeta], &LogConfig) -> Result<()> =
            AppendLocked::write_batches;
        let _: fn(
            &AppendLocked<'static>,
            &[u8],
            &[(BatchHeader, usize)],
            i64,
        ) -> Result<(Vec<ProducerEntry>, Vec<CompletedTxn>)> = AppendLocked::check_markers;
        let _: fn(
            &mut AppendLocked<'static>,
            usize,
            &LogConfig,
            i64,
            &mut super::super::RetentionOutcome,
        ) -> Result<()> = AppendLocked::delete_oldest;
    }

    #[test]
    fn functions_that_need_the_append_lock_take_its_guard() {
        guarded_signatures();
    }

    fn open(dir: &std::path::Path) -> Log {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        Log::open(dir, LogConfig::default(), clock, Recovery::Clean).unwrap()
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "append lock")]
    fn an_fsync_path_called_under_the_append_lock_panics_in_debug_builds() {
        let dir = tempfile::tempdir().unwrap();
        let log = open(dir.path());
        let _locked = log.lock();
        // Writing snapshots fsyncs but does not take the append lock itself: without the check
        // this call would succeed and the test fail.
        let _ = log.write_pending_snapshots();
    }

    #[test]
    fn the_check_is_per_thread_and_ends_with_the_guard() {
        let dir = tempfile::tempdir().unwrap();
        let log = open(dir.path());
        drop(log.lock());
        log.flush().unwrap();
        // Another thread holding the lock does not make this thread's fsync a violation.
        let (locked_tx, locked_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let log = &log;
            s.spawn(move || {
                let _locked = log.lock();
                locked_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            });
            locked_rx.recv().unwrap();
            log.write_pending_snapshots().unwrap();
            log.sync_txn_index().unwrap();
            done_tx.send(()).unwrap();
        });
        log.close().unwrap();
    }
}
