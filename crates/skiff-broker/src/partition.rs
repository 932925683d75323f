//! One partition as the broker sees it: its [`Log`], the wake-up list of parked fetches and
//! its traffic counters (atomics, so produces and fetches share no lock across partitions).
//!
//! Thread safety: `Log` synchronises itself; the waiter list is a std `Mutex` held only to
//! push or drain (never across `.await`).

use std::sync::{Arc, Mutex, Weak};

use skiff_log::Log;
use tokio::sync::Notify;

use crate::metrics::PartitionCounters;

pub struct Partition {
    pub topic: String,
    pub index: i32,
    /// Shared with the cleaner threads, which read and swap sealed segments.
    pub log: Arc<Log>,
    /// Fetch requests parked until data arrives; each holds a `Notify` shared by all the
    /// partitions it waits on. Weak so that a finished fetch costs nothing here.
    waiters: Mutex<Vec<Weak<Notify>>>,
    /// Bytes and records produced and fetched, for `/metrics`.
    pub counters: PartitionCounters,
}

impl Partition {
    pub fn new(topic: String, index: i32, log: Log) -> Self {
        Partition {
            topic,
            index,
            log: Arc::new(log),
            waiters: Mutex::new(Vec::new()),
            counters: PartitionCounters::default(),
        }
    }

    /// Register a parked fetch; it is woken by the next append (or [`Self::wake_all`]).
    pub fn park(&self, waiter: &Arc<Notify>) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        waiters.retain(|w| w.strong_count() > 0);
        waiters.push(Arc::downgrade(waiter));
    }

    /// Wake every fetch parked on this partition (called after an append).
    pub fn wake_all(&self) {
        let drained: Vec<Weak<Notify>> = {
            let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut *waiters)
        };
        for waiter in drained.iter().filter_map(Weak::upgrade) {
            // notify_one stores a permit when the fetch is not yet awaiting: no lost wake-up.
            waiter.notify_one();
        }
    }
}
