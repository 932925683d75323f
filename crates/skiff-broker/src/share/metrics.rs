//! Share-partition counters: records acquired, acknowledged, released, given back by lock
//! expiry, and archived at the delivery limit, broker-wide. In-flight figures per share
//! partition are read at scrape time from [`super::ShareManager::partition_states`].
//!
//! Thread safety: atomics only (`Relaxed`: statistics, not synchronisation).

use std::sync::atomic::{AtomicU64, Ordering};

use skiff_coordinator::share::{Acknowledged, Released};

#[derive(Debug, Default)]
pub struct ShareMetrics {
    pub acquired: AtomicU64,
    pub accepted: AtomicU64,
    pub released: AtomicU64,
    pub rejected: AtomicU64,
    /// Locks that lapsed and put their record back (AVAILABLE).
    pub lock_expiries: AtomicU64,
    /// Records archived because they reached `share.delivery.count.limit`.
    pub archived_at_limit: AtomicU64,
}

impl ShareMetrics {
    pub(super) fn acquired(&self, n: u64) {
        self.acquired.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn acknowledged(&self, a: &Acknowledged) {
        self.accepted.fetch_add(a.accepted, Ordering::Relaxed);
        self.released.fetch_add(a.released, Ordering::Relaxed);
        self.rejected.fetch_add(a.rejected, Ordering::Relaxed);
        self.archived_at_limit
            .fetch_add(a.archived_at_limit, Ordering::Relaxed);
    }

    pub(super) fn expired(&self, r: Released) {
        self.lock_expiries
            .fetch_add(r.made_available + r.archived_at_limit, Ordering::Relaxed);
        self.archived_at_limit
            .fetch_add(r.archived_at_limit, Ordering::Relaxed);
    }

    pub(super) fn released(&self, r: Released) {
        self.released.fetch_add(r.made_available, Ordering::Relaxed);
        self.archived_at_limit
            .fetch_add(r.archived_at_limit, Ordering::Relaxed);
    }

    /// (name, help, value) of each counter, for the Prometheus text.
    pub fn counters(&self) -> [(&'static str, &'static str, u64); 6] {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            (
                "skiff_share_records_acquired_total",
                "Records handed out to share consumers.",
                get(&self.acquired),
            ),
            (
                "skiff_share_records_accepted_total",
                "Records acknowledged ACCEPT.",
                get(&self.accepted),
            ),
            (
                "skiff_share_records_released_total",
                "Records given back for redelivery (RELEASE, member leaving, session closing).",
                get(&self.released),
            ),
            (
                "skiff_share_records_rejected_total",
                "Records acknowledged REJECT.",
                get(&self.rejected),
            ),
            (
                "skiff_share_lock_expiries_total",
                "Acquisition locks that lapsed.",
                get(&self.lock_expiries),
            ),
            (
                "skiff_share_records_archived_at_limit_total",
                "Records archived at share.delivery.count.limit.",
                get(&self.archived_at_limit),
            ),
        ]
    }
}
