//! The figures of the last minutes that the console's charts draw, sampled every
//! [`INTERVAL`] by one task and kept for [`KEEP`] samples (15 minutes): the broker's traffic
//! counters, open connections and mean request time, and per-name series (a topic's size and
//! produced-records counter, a group's lag). Memory is bounded: [`KEEP`] points per series and at most [`MAX_SERIES`]
//! named series; a series whose topic or group is gone is dropped at the next sample.
//!
//! Thread safety: one mutex, held to push a sample or copy a series out.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use crate::Broker;

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_secs(5);
/// Samples kept per series: 15 minutes.
pub const KEEP: usize = 180;
/// Named series kept at most (topics plus groups); past it new names are not charted.
pub const MAX_SERIES: usize = 5_000;

/// The broker-wide counters at one sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub t_ms: i64,
    pub bytes_in: u64,
    pub records_in: u64,
    pub bytes_out: u64,
    pub records_out: u64,
    pub connections: i64,
    pub requests: u64,
    pub request_seconds: f64,
}

/// Rates between two consecutive samples, at the later one's time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rates {
    pub t_ms: i64,
    pub produce_bytes: f64,
    pub produce_records: f64,
    pub fetch_bytes: f64,
    pub fetch_records: f64,
    pub connections: f64,
    /// Mean time to answer a request in the interval, in milliseconds.
    pub request_ms: f64,
}

/// One point of a named series.
pub type Point = (i64, f64);

#[derive(Default)]
pub struct History {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    totals: VecDeque<Totals>,
    series: HashMap<String, VecDeque<Point>>,
}

impl History {
    /// The lock; a sampler that panicked mid-push leaves whole samples, so a poisoned lock is
    /// still usable.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds one sample: the broker totals and the value of every named series now. A name
    /// missing from `named` (its topic or group is gone) loses its series.
    pub fn push(&self, totals: Totals, named: Vec<(String, f64)>) {
        let mut inner = self.lock();
        if inner.totals.len() == KEEP + 1 {
            inner.totals.pop_front();
        }
        inner.totals.push_back(totals);
        let t = totals.t_ms;
        let mut fresh: HashMap<String, VecDeque<Point>> = HashMap::with_capacity(named.len());
        for (name, value) in named {
            let mut points = match inner.series.remove(&name) {
                Some(p) => p,
                None if fresh.len() < MAX_SERIES => VecDeque::new(),
                None => continue,
            };
            if points.len() == KEEP {
                points.pop_front();
            }
            points.push_back((t, value));
            fresh.insert(name, points);
        }
        inner.series = fresh;
    }

    /// The rates between consecutive samples, oldest first.
    pub fn rates(&self) -> Vec<Rates> {
        let inner = self.lock();
        inner
            .totals
            .iter()
            .zip(inner.totals.iter().skip(1))
            .filter_map(|(a, b)| rates_between(a, b))
            .collect()
    }

    /// The points of the series `name`, oldest first (empty when there is none).
    pub fn series(&self, name: &str) -> Vec<Point> {
        self.lock()
            .series
            .get(name)
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default()
    }
}

fn rates_between(a: &Totals, b: &Totals) -> Option<Rates> {
    let seconds = (b.t_ms - a.t_ms) as f64 / 1000.0;
    if seconds <= 0.0 {
        return None;
    }
    let per_s = |x: u64, y: u64| y.saturating_sub(x) as f64 / seconds;
    let requests = b.requests.saturating_sub(a.requests);
    let request_ms = if requests == 0 {
        0.0
    } else {
        (b.request_seconds - a.request_seconds).max(0.0) * 1000.0 / requests as f64
    };
    Some(Rates {
        t_ms: b.t_ms,
        produce_bytes: per_s(a.bytes_in, b.bytes_in),
        produce_records: per_s(a.records_in, b.records_in),
        fetch_bytes: per_s(a.bytes_out, b.bytes_out),
        fetch_records: per_s(a.records_out, b.records_out),
        connections: b.connections as f64,
        request_ms,
    })
}

/// The name of a topic's size series.
pub fn topic_size_series(topic: &str) -> String {
    format!("topic-size/{topic}")
}

/// The name of a consumer group's total lag series.
pub fn group_lag_series(group: &str) -> String {
    format!("group-lag/{group}")
}

/// The broker-wide totals now.
pub fn totals(broker: &Broker) -> Totals {
    let mut t = Totals {
        t_ms: broker.clock.now_ms(),
        connections: broker.metrics.connections_open(),
        ..Totals::default()
    };
    for p in broker.topics.all_partitions() {
        let s = p.counters.snapshot();
        t.bytes_in += s.bytes_in;
        t.records_in += s.records_in;
        t.bytes_out += s.bytes_out;
        t.records_out += s.records_out;
    }
    for (_, _, latency) in broker.metrics.api_stats() {
        t.requests += latency.count;
        t.request_seconds += latency.sum_seconds;
    }
    t
}

/// The name of a topic's produced-records counter series (a rate between two points).
pub fn topic_records_series(topic: &str) -> String {
    format!("topic-records/{topic}")
}

/// Records per second produced to `topic` over the last sample interval, once two samples
/// exist.
pub fn topic_record_rate(history: &History, topic: &str) -> Option<f64> {
    let points = history.series(&topic_records_series(topic));
    let [.., (t0, a), (t1, b)] = points.as_slice() else {
        return None;
    };
    let seconds = (t1 - t0) as f64 / 1000.0;
    (seconds > 0.0).then(|| (b - a).max(0.0) / seconds)
}

/// Every topic's size in bytes and produced-records counter now.
fn topic_figures(broker: &Broker) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for topic in broker.topics.list() {
        let (mut size, mut records) = (0u64, 0u64);
        for p in topic.partitions() {
            size += p.log.size_bytes();
            records += p.counters.snapshot().records_in;
        }
        out.push((topic_size_series(&topic.name), size as f64));
        out.push((topic_records_series(&topic.name), records as f64));
    }
    out
}

/// Samples every [`INTERVAL`] until the broker is dropped.
pub fn spawn_sampler(broker: Weak<Broker>, history: Arc<History>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(b) = broker.upgrade() else { return };
            let history = history.clone();
            // Walks every partition (and the groups' offsets): off the runtime's workers.
            let sampled = tokio::task::spawn_blocking(move || {
                let totals = totals(&b);
                let mut named = topic_figures(&b);
                named.extend(
                    super::groups::total_lags(&b)
                        .into_iter()
                        .map(|(g, lag)| (group_lag_series(&g), lag as f64)),
                );
                history.push(totals, named);
            })
            .await;
            if let Err(e) = sampled {
                tracing::warn!(error = %e, "console history sample failed");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals_at(t_ms: i64, bytes_in: u64) -> Totals {
        Totals {
            t_ms,
            bytes_in,
            ..Totals::default()
        }
    }

    #[test]
    fn rates_come_from_consecutive_samples_and_history_is_bounded() {
        let h = History::default();
        for i in 0..(KEEP as i64 + 50) {
            h.push(
                totals_at(i * 5000, (i as u64) * 10_000),
                vec![("topic-size/a".into(), i as f64)],
            );
        }
        let rates = h.rates();
        assert_eq!(rates.len(), KEEP);
        assert!(rates
            .iter()
            .all(|r| (r.produce_bytes - 2000.0).abs() < 1e-9));
        let series = h.series("topic-size/a");
        assert_eq!(series.len(), KEEP);
        assert_eq!(series.last().map(|p| p.1), Some((KEEP as f64) + 49.0));
    }

    #[test]
    fn a_topic_rate_comes_from_its_last_two_counter_points() {
        let h = History::default();
        assert_eq!(topic_record_rate(&h, "t"), None);
        h.push(totals_at(0, 0), vec![(topic_records_series("t"), 100.0)]);
        assert_eq!(topic_record_rate(&h, "t"), None);
        h.push(totals_at(5000, 0), vec![(topic_records_series("t"), 600.0)]);
        assert_eq!(topic_record_rate(&h, "t"), Some(100.0));
    }

    #[test]
    fn a_name_missing_from_a_sample_loses_its_series() {
        let h = History::default();
        h.push(totals_at(0, 0), vec![("a".into(), 1.0), ("b".into(), 2.0)]);
        h.push(totals_at(5000, 0), vec![("a".into(), 3.0)]);
        assert_eq!(h.series("a"), vec![(0, 1.0), (5000, 3.0)]);
        assert!(h.series("b").is_empty());
    }
}
