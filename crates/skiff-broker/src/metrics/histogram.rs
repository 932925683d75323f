//! A lock-free latency histogram with fixed bucket bounds, recorded on hot paths and read
//! on scrape.
//!
//! Thread safety: every field is an atomic updated with `Relaxed` ordering; a snapshot taken
//! while others record may be off by the in-flight observations, which Prometheus tolerates.
//! The snapshot's count is the sum of its buckets, so `+Inf` and `_count` always agree.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds in seconds: 100 µs (a page-cache fetch) to 10 s (a long poll or a slow disk),
/// roughly ×2.5 apart so a dozen buckets cover five decades.
pub const BOUNDS_SECONDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Bucket counts (not cumulative; the last slot is above every bound), sum in nanoseconds.
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS_SECONDS.len() + 1],
    sum_nanos: AtomicU64,
}

/// A point-in-time copy, with cumulative bucket counts as the exposition format wants them.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound, observations <= bound)` for each finite bound.
    pub cumulative: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let slot = BOUNDS_SECONDS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BOUNDS_SECONDS.len());
        if let Some(bucket) = self.buckets.get(slot) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0u64;
        let mut cumulative = Vec::with_capacity(BOUNDS_SECONDS.len());
        for (bound, bucket) in BOUNDS_SECONDS.iter().zip(&self.buckets) {
            running = running.saturating_add(bucket.load(Ordering::Relaxed));
            cumulative.push((*bound, running));
        }
        let above = self.buckets.last().map_or(0, |b| b.load(Ordering::Relaxed));
        HistogramSnapshot {
            cumulative,
            count: running.saturating_add(above),
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }

    /// Whether anything was ever observed (empty label sets are not rendered).
    pub fn is_empty(&self) -> bool {
        self.buckets.iter().all(|b| b.load(Ordering::Relaxed) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_count_includes_overflow() {
        let h = Histogram::default();
        assert!(h.is_empty());
        h.observe(Duration::from_micros(50)); // <= 0.0001
        h.observe(Duration::from_millis(1)); // exactly a bound: counted in it
        h.observe(Duration::from_secs(60)); // above every bound
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert_eq!(s.cumulative[0], (0.0001, 1));
        let at_1ms = s.cumulative.iter().find(|(b, _)| *b == 0.001).unwrap();
        assert_eq!(at_1ms.1, 2);
        assert_eq!(s.cumulative.last().unwrap(), &(10.0, 2));
        assert!((s.sum_seconds - 60.00105).abs() < 1e-9, "{}", s.sum_seconds);
    }
}
