//! The lock-expiry timer: one tokio task, started on the first share fetch, that sleeps until
//! the earliest lock deadline of any share partition (at most [`MAX_SLEEP`], and woken early
//! when an acquisition may have set an earlier one), then expires the lapsed locks on the
//! blocking pool, writes the new states, waits for them to be durable and wakes the fetches
//! waiting for records. Stopped with the broker ([`super::ShareManager::stop`]).
//!
//! Deadlines are in the broker clock's milliseconds; the sleep is real time, so with a manual
//! clock a test moves the clock and waits at most [`MAX_SLEEP`] (or calls
//! `ShareManager::expire_locks` itself).
//!
//! Thread safety: the handle is a std `Mutex` around the task's stop signal and a `Notify`;
//! the task reads deadlines from atomics and never takes a share-partition lock on a runtime
//! thread.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use super::ShareManager;

/// The longest the timer sleeps without looking again: bounds how late an expiry can be after
/// a clock jump, and how long a stop waits. Locks last 15 s at least in Kafka's group config
/// bounds (1 s for the broker default's range), so a second is well within one lock.
pub const MAX_SLEEP: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct TimerHandle {
    stop: Mutex<Option<watch::Sender<bool>>>,
    kick: Notify,
}

impl TimerHandle {
    /// Wakes the timer to look at the deadlines again.
    pub fn kick(&self) {
        self.kick.notify_one();
    }
}

impl ShareManager {
    /// Starts the expiry timer unless it runs already. Needs a tokio runtime.
    pub fn ensure_timer(self: &Arc<Self>) {
        let mut stop = self.timer.stop.lock().unwrap_or_else(|e| e.into_inner());
        if stop.is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (tx, rx) = watch::channel(false);
        *stop = Some(tx);
        runtime.spawn(run(Arc::downgrade(self), rx));
    }

    /// Stops the expiry timer (broker shutdown).
    pub fn stop(&self) {
        let stop = self
            .timer
            .stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(tx) = stop {
            let _ = tx.send(true);
        }
    }
}

async fn run(manager: std::sync::Weak<ShareManager>, mut stop: watch::Receiver<bool>) {
    loop {
        let Some(me) = manager.upgrade() else { return };
        let now = me.now_ms();
        let sleep = match me.next_lock_deadline() {
            Some(deadline) if deadline <= now => Duration::ZERO,
            Some(deadline) => {
                Duration::from_millis(u64::try_from(deadline - now).unwrap_or(0)).min(MAX_SLEEP)
            }
            None => MAX_SLEEP,
        };
        if sleep.is_zero() {
            let worker = me.clone();
            let pending = tokio::task::spawn_blocking(move || worker.expire_locks()).await;
            if let Ok(pending) = pending {
                let _ = me.wait_durable(pending).await;
            }
            // Yield so a stop is seen even when deadlines keep lapsing.
            if *stop.borrow() {
                return;
            }
            continue;
        }
        let kicked = async { me.timer.kick.notified().await };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = kicked => {}
            _ = stop.changed() => return,
        }
        drop(me);
        if *stop.borrow() {
            return;
        }
    }
}
