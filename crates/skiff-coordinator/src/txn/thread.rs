//! The coordinator's thread: it replays `__transaction_state` at start, then runs the
//! periodic pass (timed-out transactions aborted, unfinished Prepare* states completed,
//! expired transactional ids removed) on the injected clock.
//!
//! Thread safety: the thread holds only a `Weak` of the broker between passes, so it never
//! keeps a stopped broker alive; it ends on `TxnCoordinator::stop` or when the broker goes.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tracing::info;

use super::{store, TxnHost, TXN_STATE_TOPIC};
use crate::cadence::Every;

/// Starts the coordinator's thread: replays `__transaction_state` (once the group
/// coordinator has loaded, so offsets of prepared transactions are known), then aborts
/// timed-out transactions every `transaction.abort.timed.out.transaction.cleanup.interval.ms`
/// and removes expired transactional ids every
/// `transaction.remove.expired.transaction.cleanup.interval.ms`, both timed on the injected
/// clock (the thread wakes at least every 100 ms of real time to look);
/// [`TxnCoordinator::tick_now`] runs a pass at once.
pub fn spawn<H: TxnHost>(broker: &Arc<H>) -> std::io::Result<()> {
    let weak: Weak<H> = Arc::downgrade(broker);
    let (tx, ticks) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("skiff-txn".into())
        .spawn(move || run(&weak, &ticks))?;
    *broker.txn().ticks.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
    *broker
        .txn()
        .thread
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(thread);
    Ok(())
}

/// `0` or negative: the default; at least 1 ms.
pub(super) fn interval_ms(configured: i64, default: i64) -> i64 {
    if configured > 0 {
        configured
    } else if configured == 0 {
        1
    } else {
        default
    }
}

fn run<H: TxnHost>(weak: &Weak<H>, ticks: &mpsc::Receiver<mpsc::SyncSender<()>>) {
    let started = std::time::Instant::now();
    loop {
        let Some(b) = weak.upgrade() else { return };
        if b.txn().stopping() {
            return;
        }
        if b.groups().is_loaded() {
            break;
        }
        drop(b);
        std::thread::sleep(Duration::from_millis(10));
    }
    let Some(b) = weak.upgrade() else { return };
    let t = b.txn();
    let (loaded, records) = store::replay(t.state.existing());
    let count = loaded.len();
    {
        let mut txns = t.lock();
        for m in loaded {
            txns.insert(m.transactional_id.clone(), m);
        }
    }
    t.loaded.store(true, Ordering::Release);
    info!(
        records,
        transactional_ids = count,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "transaction coordinator loaded {TXN_STATE_TOPIC}"
    );
    let mut abort = Every::due_at_once(t.abort_interval_ms, t.now());
    let mut expiry = Every::starting(t.expiry_interval_ms, t.now());
    let expiration_ms = t.expiration_ms;
    drop(b);
    // `tick_now` callers, answered at the end of the pass after their request.
    let mut asked: Vec<mpsc::SyncSender<()>> = Vec::new();
    loop {
        let Some(b) = weak.upgrade() else { return };
        let t = b.txn();
        if t.stopping() {
            return;
        }
        let now = t.now();
        if abort.due(now) {
            t.housekeeping(&*b);
        }
        if expiry.due(now) {
            t.expire_transactional_ids(expiration_ms);
        }
        for done in asked.drain(..) {
            let _ = done.send(());
        }
        // Wake when the next job is due on the clock, and at least every 100 ms of real
        // time (so a moved clock, a stop or a broker going away is seen promptly).
        let now = t.now();
        let wait = abort
            .remaining_ms(now)
            .min(expiry.remaining_ms(now))
            .clamp(0, 100);
        drop(b);
        match ticks.recv_timeout(Duration::from_millis(u64::try_from(wait).unwrap_or(0))) {
            Ok(done) => asked.push(done),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if weak.strong_count() == 0 {
            return;
        }
    }
}
