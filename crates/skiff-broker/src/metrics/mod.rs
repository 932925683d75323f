//! Broker metrics: lock-free counters and histograms updated on the hot paths, rendered as
//! Prometheus text only when scraped (served by `crate::http`, on `metrics.listener` and the
//! HTTP API).
//!
//! Owns: [`BrokerMetrics`] (requests per API key, connections, fsync latency; one per
//! broker) and [`PartitionCounters`] (bytes and records in and out; one per partition, held
//! by the partition itself so produces and fetches on different partitions share nothing).
//! Log offsets and sizes and the compaction figures are read from the logs and the cleaner at
//! scrape time ([`render`]).
//!
//! Thread safety: atomics only (`Relaxed`: these are statistics, not synchronisation).
//! Nothing on disk.

pub mod histogram;
pub mod render;
pub mod text;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use histogram::Histogram;

/// Slots for API keys 0..128: Kafka 4's keys stop below 100; a key outside is not counted
/// (the codec would not have decoded it anyway).
pub const API_KEY_SLOTS: usize = 128;

/// Where an fsync happened, as the `site` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncSite {
    /// The group-commit flusher answering `acks=all` produces.
    GroupCommit,
    /// The housekeeper's `flush.ms` flushes.
    Scheduled,
    /// Recovery-point and log-start checkpoint files.
    Checkpoint,
}

impl FsyncSite {
    pub const ALL: [FsyncSite; 3] = [
        FsyncSite::GroupCommit,
        FsyncSite::Scheduled,
        FsyncSite::Checkpoint,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FsyncSite::GroupCommit => "group_commit",
            FsyncSite::Scheduled => "scheduled",
            FsyncSite::Checkpoint => "checkpoint",
        }
    }

    fn slot(self) -> usize {
        match self {
            FsyncSite::GroupCommit => 0,
            FsyncSite::Scheduled => 1,
            FsyncSite::Checkpoint => 2,
        }
    }
}

#[derive(Default)]
struct ApiStats {
    /// Requests decoded (incremented on arrival, so in-flight ones count).
    received: AtomicU64,
    /// Arrival to response written (or dropped, for acks=0).
    latency: Histogram,
}

/// Broker-wide metrics. See the module docs.
pub struct BrokerMetrics {
    apis: Vec<ApiStats>,
    connections_open: Arc<AtomicI64>,
    connections_accepted: AtomicU64,
    fsync: [Histogram; 3],
    /// Rounds of the acks=all flusher (each syncs every partition its waiters wait for).
    group_commit_rounds: AtomicU64,
}

impl Default for BrokerMetrics {
    fn default() -> Self {
        BrokerMetrics {
            apis: (0..API_KEY_SLOTS).map(|_| ApiStats::default()).collect(),
            connections_open: Arc::default(),
            connections_accepted: AtomicU64::new(0),
            fsync: Default::default(),
            group_commit_rounds: AtomicU64::new(0),
        }
    }
}

impl BrokerMetrics {
    /// A request with this API key was decoded.
    pub fn request_received(&self, api_key: i16) {
        if let Some(s) = self.api(api_key) {
            s.received.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request with this API key was answered `elapsed` after it arrived.
    pub fn request_done(&self, api_key: i16, elapsed: Duration) {
        if let Some(s) = self.api(api_key) {
            s.latency.observe(elapsed);
        }
    }

    fn api(&self, api_key: i16) -> Option<&ApiStats> {
        usize::try_from(api_key).ok().and_then(|k| self.apis.get(k))
    }

    /// A connection was accepted; the guard counts it as open until dropped.
    pub fn connection_opened(&self) -> ConnectionGuard {
        self.connections_accepted.fetch_add(1, Ordering::Relaxed);
        self.connections_open.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard(self.connections_open.clone())
    }

    pub fn record_fsync(&self, site: FsyncSite, elapsed: Duration) {
        if let Some(h) = self.fsync.get(site.slot()) {
            h.observe(elapsed);
        }
    }

    /// The flusher ran a group-commit round.
    pub fn group_commit_round(&self) {
        self.group_commit_rounds.fetch_add(1, Ordering::Relaxed);
    }

    pub fn group_commit_rounds(&self) -> u64 {
        self.group_commit_rounds.load(Ordering::Relaxed)
    }

    /// `(api key, received, latency)` of every API key that saw a request.
    pub fn api_stats(&self) -> Vec<(i16, u64, histogram::HistogramSnapshot)> {
        self.apis
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                let received = s.received.load(Ordering::Relaxed);
                let key = i16::try_from(k).ok()?;
                (received > 0 || !s.latency.is_empty())
                    .then(|| (key, received, s.latency.snapshot()))
            })
            .collect()
    }

    pub fn connections_open(&self) -> i64 {
        self.connections_open.load(Ordering::Relaxed)
    }

    pub fn connections_accepted(&self) -> u64 {
        self.connections_accepted.load(Ordering::Relaxed)
    }

    pub fn fsync_snapshot(&self, site: FsyncSite) -> histogram::HistogramSnapshot {
        self.fsync
            .get(site.slot())
            .map(Histogram::snapshot)
            .unwrap_or_else(|| Histogram::default().snapshot())
    }
}

/// Decrements the open-connection gauge when the connection ends.
pub struct ConnectionGuard(Arc<AtomicI64>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Traffic of one partition, owned by the partition (no lock shared across partitions).
#[derive(Default)]
pub struct PartitionCounters {
    bytes_in: AtomicU64,
    records_in: AtomicU64,
    bytes_out: AtomicU64,
    records_out: AtomicU64,
}

/// A copy of [`PartitionCounters`] for rendering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrafficSnapshot {
    pub bytes_in: u64,
    pub records_in: u64,
    pub bytes_out: u64,
    pub records_out: u64,
}

impl PartitionCounters {
    /// A produced batch of `bytes` holding `records` records was appended.
    pub fn produced(&self, bytes: u64, records: u64) {
        self.bytes_in.fetch_add(bytes, Ordering::Relaxed);
        self.records_in.fetch_add(records, Ordering::Relaxed);
    }

    /// A fetch response carried these record-batch bytes of this partition.
    pub fn fetched(&self, batches: &[u8]) {
        if batches.is_empty() {
            return;
        }
        self.fetched_counted(batches.len() as u64, record_count(batches));
    }

    /// A fetch response carried `bytes` of this partition's batches holding `records` records
    /// (counted by the read, for batches sent from their files).
    pub fn fetched_counted(&self, bytes: u64, records: u64) {
        self.bytes_out.fetch_add(bytes, Ordering::Relaxed);
        self.records_out.fetch_add(records, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> TrafficSnapshot {
        TrafficSnapshot {
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            records_in: self.records_in.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            records_out: self.records_out.load(Ordering::Relaxed),
        }
    }
}

/// Records in the whole batches of `buf`, from each batch header's record count (no
/// decompression). A torn tail or a bad header ends the count.
pub fn record_count(buf: &[u8]) -> u64 {
    skiff_records::Batches::new(buf)
        .map_while(Result::ok)
        .map(|(h, _)| u64::try_from(h.record_count).unwrap_or(0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_records::{BatchBuilder, Compression};

    fn batch(n: usize) -> Vec<u8> {
        let mut b = BatchBuilder::new(0, Compression::None);
        for i in 0..n {
            let k = format!("k{i}");
            b.push(1, Some(k.as_bytes()), Some(b"v"), &[]);
        }
        b.build().unwrap()
    }

    #[test]
    fn partition_counters_count_whole_batches() {
        let c = PartitionCounters::default();
        let one = batch(3);
        c.produced(one.len() as u64, 3);
        let mut two = batch(2);
        two.extend_from_slice(&batch(4));
        let torn_len = two.len() + 10;
        let mut torn = two.clone();
        torn.extend_from_slice(&batch(5)[..10]);
        c.fetched(&torn);
        let s = c.snapshot();
        assert_eq!((s.bytes_in, s.records_in), (one.len() as u64, 3));
        assert_eq!((s.bytes_out, s.records_out), (torn_len as u64, 6));
        assert_eq!(record_count(&[]), 0);
    }

    #[test]
    fn api_and_connection_figures() {
        let m = BrokerMetrics::default();
        m.request_received(0);
        m.request_done(0, Duration::from_millis(2));
        m.request_received(-1);
        m.request_received(500);
        let stats = m.api_stats();
        assert_eq!(stats.len(), 1);
        assert_eq!((stats[0].0, stats[0].1, stats[0].2.count), (0, 1, 1));
        let g = m.connection_opened();
        let g2 = m.connection_opened();
        assert_eq!(m.connections_open(), 2);
        drop(g);
        assert_eq!((m.connections_open(), m.connections_accepted()), (1, 2));
        drop(g2);
        m.record_fsync(FsyncSite::Checkpoint, Duration::from_millis(1));
        assert_eq!(m.fsync_snapshot(FsyncSite::Checkpoint).count, 1);
        assert_eq!(m.fsync_snapshot(FsyncSite::GroupCommit).count, 0);
    }
}
