//! Renders every Skiff metric as Prometheus text on scrape: gathers the figures from the
//! partitions' counters and logs, [`super::BrokerMetrics`] and the cleaner's per-partition
//! status into plain [`Facts`], then writes them family by family.
//!
//! Thread safety: reading takes each log's snapshot and the cleaner's status lock briefly,
//! one at a time; run it off the async workers. No I/O, nothing on disk.

use crate::quotas::manager::ThrottleStats;
use skiff_cleaner::CompactionStatus;

use super::histogram::HistogramSnapshot;
use super::text::{Exposition, Kind};
use super::{FsyncSite, TrafficSnapshot};
use crate::broker::Broker;

/// One partition's traffic and log figures.
#[derive(Clone, Debug, Default)]
pub struct PartitionFacts {
    pub topic: String,
    pub partition: i32,
    pub traffic: TrafficSnapshot,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub size_bytes: u64,
}

/// Everything one scrape shows, copied out of the broker.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub partitions: Vec<PartitionFacts>,
    /// `(api key, requests received, latency)`.
    pub apis: Vec<(i16, u64, HistogramSnapshot)>,
    pub connections_open: i64,
    pub connections_accepted: u64,
    pub fsync: Vec<(FsyncSite, HistogramSnapshot)>,
    pub group_commit_rounds: u64,
    /// Compacted partitions the cleaner has planned, sorted by topic and partition.
    pub compaction: Vec<(String, i32, CompactionStatus)>,
    /// Client quota throttles per quota, user and client id (see `crate::quotas`).
    pub quota_throttles: Vec<ThrottleStats>,
    /// Broker-wide share counters `(name, help, value)`; empty until share groups are used.
    pub share_counters: Vec<(&'static str, &'static str, u64)>,
    /// Loaded share partitions (see `crate::share`).
    pub share_partitions: Vec<crate::share::SharePartitionFacts>,
    /// Key indexes (`skiff.key.index.enable`), sorted by topic and partition.
    pub key_indexes: Vec<(String, i32, skiff_log::KeyIndexStatus)>,
    /// `skiff.key.index.memory.bytes`: (charged, limit).
    pub key_index_budget: (u64, u64),
}

/// Values of the `reason` label of `skiff_compaction_uncleanable`.
pub const REASON_FAILED: &str = "cleaning_failed";
/// A pass panicked: the log is skipped until the topic is deleted or the broker restarts.
pub const REASON_PANICKED: &str = "marked_uncleanable";
pub const REASON_DISK_SPACE: &str = "insufficient_disk_space";
/// `skiff.compaction.archive.topic` names a topic that cannot take records (docs/compaction.md
/// §5.11): nothing is removed until it can.
pub const REASON_ARCHIVE: &str = "archive_unavailable";

pub fn collect(broker: &Broker) -> Facts {
    let mut partitions: Vec<PartitionFacts> = broker
        .topics
        .all_partitions()
        .iter()
        .map(|p| PartitionFacts {
            topic: p.topic.clone(),
            partition: p.index,
            traffic: p.counters.snapshot(),
            log_start_offset: p.log.log_start_offset(),
            log_end_offset: p.log.log_end_offset(),
            size_bytes: p.log.size_bytes(),
        })
        .collect();
    partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let mut key_indexes: Vec<(String, i32, skiff_log::KeyIndexStatus)> = broker
        .topics
        .all_partitions()
        .iter()
        .filter_map(|p| Some((p.topic.clone(), p.index, p.log.key_index_status()?)))
        .collect();
    key_indexes.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let budget = broker.topics.key_indexes.budget();
    let m = &broker.metrics;
    Facts {
        partitions,
        apis: m.api_stats(),
        connections_open: m.connections_open(),
        connections_accepted: m.connections_accepted(),
        fsync: FsyncSite::ALL
            .iter()
            .map(|s| (*s, m.fsync_snapshot(*s)))
            .collect(),
        group_commit_rounds: m.group_commit_rounds(),
        compaction: broker.compaction_statuses(),
        quota_throttles: broker.quotas.throttle_stats(),
        share_counters: if broker.share.store_is_open() {
            broker.share.metrics.counters().to_vec()
        } else {
            Vec::new()
        },
        share_partitions: broker.share.partition_facts(),
        key_indexes,
        key_index_budget: (budget.used(), budget.limit()),
    }
}

pub fn render(broker: &Broker) -> String {
    write(&collect(broker))
}

/// Whether the cleaner would pick this log now if a thread were free (Kafka's eligibility).
pub fn waiting_to_clean(s: &CompactionStatus) -> bool {
    let overdue = s.max_compaction_delay_ms.is_some_and(|d| d > 0) && s.cleanable_bytes > 0;
    !s.in_progress && s.uncleanable.is_none() && (overdue || s.dirty_ratio > s.min_cleanable_ratio)
}

/// Why a log cannot be cleaned right now, if it cannot.
pub fn uncleanable_reason(s: &CompactionStatus) -> Option<&'static str> {
    if s.uncleanable.is_some() {
        Some(REASON_PANICKED)
    } else if s.consecutive_failures > 0 {
        Some(REASON_FAILED)
    } else if s.archive_blocked.is_some() {
        Some(REASON_ARCHIVE)
    } else if s.waiting_for.is_some() {
        Some(REASON_DISK_SPACE)
    } else {
        None
    }
}

fn api_name(key: i16) -> String {
    skiff_protocol::Api::from_key(key).map_or_else(|| format!("api_{key}"), |api| api.name())
}

pub fn write(f: &Facts) -> String {
    let mut e = Exposition::default();
    write_partitions(&mut e, f);
    write_requests(&mut e, f);
    write_compaction(&mut e, &f.compaction);
    write_quota_throttles(&mut e, &f.quota_throttles);
    write_share(&mut e, f);
    write_key_indexes(&mut e, f);
    e.finish()
}

/// Key indexes (docs/key-index.md): the shared budget, and per indexed partition its keys,
/// its memory and its phase (one sample of 1 with a `state` label).
fn write_key_indexes(e: &mut Exposition, f: &Facts) {
    let (used, limit) = f.key_index_budget;
    e.family(
        "skiff_key_index_memory_bytes",
        Kind::Gauge,
        "Memory charged by all key indexes to skiff.key.index.memory.bytes.",
    );
    e.sample_int("skiff_key_index_memory_bytes", &[], used.into());
    e.family(
        "skiff_key_index_memory_limit_bytes",
        Kind::Gauge,
        "skiff.key.index.memory.bytes: the bound shared by all key indexes.",
    );
    e.sample_int("skiff_key_index_memory_limit_bytes", &[], limit.into());
    e.family(
        "skiff_key_index_keys",
        Kind::Gauge,
        "Distinct keys a partition's key index holds (tombstoned ones until pruned).",
    );
    for (topic, partition, s) in &f.key_indexes {
        let part = partition.to_string();
        let keys = i128::try_from(s.keys).unwrap_or(i128::MAX);
        e.sample_int(
            "skiff_key_index_keys",
            &[("topic", topic), ("partition", &part)],
            keys,
        );
    }
    e.family(
        "skiff_key_index_state",
        Kind::Gauge,
        "1 for the phase a partition's key index is in: loading, ready or over_budget.",
    );
    for (topic, partition, s) in &f.key_indexes {
        let part = partition.to_string();
        let state = match s.phase {
            skiff_log::KeyIndexPhase::Loading => "loading",
            skiff_log::KeyIndexPhase::Ready => "ready",
            skiff_log::KeyIndexPhase::OverBudget => "over_budget",
        };
        e.sample_int(
            "skiff_key_index_state",
            &[("topic", topic), ("partition", &part), ("state", state)],
            1,
        );
    }
}

/// Share groups: broker-wide counters, then per share partition (group, topic id,
/// partition) its in-flight span and its own counters. Nothing until share groups are used.
fn write_share(e: &mut Exposition, f: &Facts) {
    for (name, help, value) in &f.share_counters {
        e.family(name, Kind::Counter, help);
        e.sample_int(name, &[], (*value).into());
    }
    if f.share_partitions.is_empty() {
        return;
    }
    let labels = |p: &crate::share::SharePartitionFacts| {
        (
            p.group.clone(),
            p.topic_id.to_string(),
            p.partition.to_string(),
        )
    };
    type Value = fn(&crate::share::SharePartitionFacts) -> u64;
    let gauges: [(&str, &str, Value); 2] = [
        (
            "skiff_share_partition_in_flight_records",
            "Offsets between the share-partition start and end offsets.",
            |p| p.in_flight,
        ),
        (
            "skiff_share_partition_acquired_records",
            "Records held by a share consumer now.",
            |p| p.acquired,
        ),
    ];
    for (gauge, help, value) in gauges {
        e.family(gauge, Kind::Gauge, help);
        for p in &f.share_partitions {
            let (g, t, i) = labels(p);
            let l = [
                ("group", g.as_str()),
                ("topic_id", t.as_str()),
                ("partition", i.as_str()),
            ];
            e.sample_int(gauge, &l, value(p).into());
        }
    }
    let gauge = "skiff_share_partition_unfinished_records";
    e.family(
        gauge,
        Kind::Gauge,
        "Records not yet acknowledged or archived, by how many times each was delivered.",
    );
    for p in &f.share_partitions {
        let (g, t, i) = labels(p);
        for (count, n) in &p.by_delivery_count {
            let c = count.to_string();
            let l = [
                ("group", g.as_str()),
                ("topic_id", t.as_str()),
                ("partition", i.as_str()),
                ("delivery_count", c.as_str()),
            ];
            e.sample_int(gauge, &l, (*n).into());
        }
    }
    let Some(first) = f.share_partitions.first() else {
        return;
    };
    for (k, (name, help, _)) in first.counters.iter().enumerate() {
        let name = name.replace("skiff_share_", "skiff_share_partition_");
        e.family(&name, Kind::Counter, help);
        for p in &f.share_partitions {
            let (g, t, i) = labels(p);
            let l = [
                ("group", g.as_str()),
                ("topic_id", t.as_str()),
                ("partition", i.as_str()),
            ];
            let v = p.counters.get(k).map_or(0, |c| c.2);
            e.sample_int(&name, &l, v.into());
        }
    }
}

/// Kafka's per-client `throttle-time` as counters: responses throttled by each client quota
/// and their throttle times, labelled with the quota key and the user / client id the quota
/// measures ("" when the quota's level does not include it). Only clients that were
/// throttled, and only while their quota sensor is kept (see `crate::quotas::manager`).
fn write_quota_throttles(e: &mut Exposition, stats: &[ThrottleStats]) {
    type Get = fn(&ThrottleStats) -> u64;
    let families: [(&str, &str, Get); 2] = [
        (
            "skiff_client_quota_throttled_total",
            "Responses throttled by a client quota.",
            |s| s.throttled,
        ),
        (
            "skiff_client_quota_throttle_time_ms_total",
            "Throttle time given by a client quota, in milliseconds.",
            |s| s.throttle_ms_total,
        ),
    ];
    for (name, help, get) in families {
        e.family(name, Kind::Counter, help);
        for s in stats {
            let labels = [
                ("quota", s.quota),
                ("user", s.user.as_str()),
                ("client_id", s.client_id.as_str()),
            ];
            e.sample_int(name, &labels, get(s).into());
        }
    }
}

fn write_partitions(e: &mut Exposition, f: &Facts) {
    type Get = fn(&PartitionFacts) -> i128;
    let families: [(&str, Kind, &str, Get); 7] = [
        (
            "skiff_partition_produced_bytes_total",
            Kind::Counter,
            "Record-batch bytes appended by Produce requests.",
            |p| p.traffic.bytes_in.into(),
        ),
        (
            "skiff_partition_produced_records_total",
            Kind::Counter,
            "Records appended by Produce requests.",
            |p| p.traffic.records_in.into(),
        ),
        (
            "skiff_partition_fetched_bytes_total",
            Kind::Counter,
            "Record-batch bytes returned by Fetch responses.",
            |p| p.traffic.bytes_out.into(),
        ),
        (
            "skiff_partition_fetched_records_total",
            Kind::Counter,
            "Records in the batches returned by Fetch responses.",
            |p| p.traffic.records_out.into(),
        ),
        (
            "skiff_log_start_offset",
            Kind::Gauge,
            "First offset still in the log.",
            |p| p.log_start_offset.into(),
        ),
        (
            "skiff_log_end_offset",
            Kind::Gauge,
            "Offset the next appended record gets.",
            |p| p.log_end_offset.into(),
        ),
        (
            "skiff_log_size_bytes",
            Kind::Gauge,
            "Bytes in all segments of the log.",
            |p| p.size_bytes.into(),
        ),
    ];
    for (name, kind, help, get) in families {
        e.family(name, kind, help);
        for p in &f.partitions {
            let part = p.partition.to_string();
            e.sample_int(name, &[("topic", &p.topic), ("partition", &part)], get(p));
        }
    }
}

fn write_requests(e: &mut Exposition, f: &Facts) {
    let names: Vec<String> = f.apis.iter().map(|(k, _, _)| api_name(*k)).collect();
    e.family(
        "skiff_requests_total",
        Kind::Counter,
        "Kafka requests received, per API.",
    );
    for ((_, received, _), name) in f.apis.iter().zip(&names) {
        e.sample_int("skiff_requests_total", &[("api", name)], (*received).into());
    }
    let name = "skiff_request_duration_seconds";
    e.family(name, Kind::Histogram,
        "Time from a request's arrival to its response being written (including acks=all and long-poll waits).");
    for ((_, _, h), api) in f.apis.iter().zip(&names) {
        e.histogram(name, &[("api", api)], h);
    }
    e.family(
        "skiff_connections_open",
        Kind::Gauge,
        "Open Kafka client connections.",
    );
    e.sample_int("skiff_connections_open", &[], f.connections_open.into());
    e.family(
        "skiff_connections_accepted_total",
        Kind::Counter,
        "Kafka client connections accepted.",
    );
    e.sample_int(
        "skiff_connections_accepted_total",
        &[],
        f.connections_accepted.into(),
    );
    let name = "skiff_fsync_duration_seconds";
    e.family(
        name,
        Kind::Histogram,
        "Duration of log flushes (fsync of segments, indexes and directory), per call site.",
    );
    for (site, h) in &f.fsync {
        e.histogram(name, &[("site", site.as_str())], h);
    }
    let name = "skiff_group_commit_rounds_total";
    e.family(
        name,
        Kind::Counter,
        "Group-commit rounds: each fsyncs every partition that acks=all produces wait for, once.",
    );
    e.sample_int(name, &[], f.group_commit_rounds.into());
}

fn write_compaction(e: &mut Exposition, all: &[(String, i32, CompactionStatus)]) {
    type Get = fn(&CompactionStatus) -> Option<f64>;
    let gauges: [(&str, Kind, &str, Get); 17] = [
        (
            "skiff_compaction_dirty_ratio",
            Kind::Gauge,
            "Cleanable bytes / (clean + cleanable bytes) of a compacted log.",
            |s| Some(s.dirty_ratio),
        ),
        (
            "skiff_compaction_min_cleanable_dirty_ratio",
            Kind::Gauge,
            "The topic's min.cleanable.dirty.ratio.",
            |s| Some(s.min_cleanable_ratio),
        ),
        (
            "skiff_compaction_cleanable_bytes",
            Kind::Gauge,
            "Bytes the next pass may clean.",
            |s| Some(s.cleanable_bytes as f64),
        ),
        (
            "skiff_compaction_clean_bytes",
            Kind::Gauge,
            "Bytes already cleaned (below the first dirty offset).",
            |s| Some(s.clean_bytes as f64),
        ),
        (
            "skiff_compaction_first_dirty_offset",
            Kind::Gauge,
            "Where the next pass starts.",
            |s| Some(s.first_dirty_offset as f64),
        ),
        (
            "skiff_compaction_last_clean_start_timestamp_seconds",
            Kind::Gauge,
            "Unix time the last successful pass started.",
            |s| s.last_pass.as_ref().map(|p| p.start_ms as f64 / 1000.0),
        ),
        (
            "skiff_compaction_last_clean_duration_seconds",
            Kind::Gauge,
            "Duration of the last successful pass.",
            |s| s.last_pass.as_ref().map(|p| p.duration.as_secs_f64()),
        ),
        (
            "skiff_compaction_passes_total",
            Kind::Counter,
            "Successful cleaning passes since start-up.",
            |s| Some(s.totals.passes as f64),
        ),
        (
            "skiff_compaction_failures_total",
            Kind::Counter,
            "Failed cleaning passes since start-up.",
            |s| Some(s.totals.failures as f64),
        ),
        (
            "skiff_compaction_read_bytes_total",
            Kind::Counter,
            "Bytes read by cleaning passes since start-up.",
            |s| Some(s.totals.bytes_read as f64),
        ),
        (
            "skiff_compaction_skipped_bytes_total",
            Kind::Counter,
            "Bytes of clean segments cleaning passes left unread since start-up (their key \
             summary proved the pass would not change them).",
            |s| Some(s.totals.bytes_skipped as f64),
        ),
        (
            "skiff_compaction_written_bytes_total",
            Kind::Counter,
            "Bytes written by cleaning passes since start-up.",
            |s| Some(s.totals.bytes_written as f64),
        ),
        (
            "skiff_compaction_records_removed_total",
            Kind::Counter,
            "Records removed by cleaning since start-up (superseded values, tombstones, keyless).",
            |s| Some(s.totals.records_removed as f64),
        ),
        (
            "skiff_compaction_tombstones_removed_total",
            Kind::Counter,
            "Tombstones removed by cleaning since start-up.",
            |s| Some(s.totals.tombstones_removed as f64),
        ),
        (
            "skiff_compaction_archived_records_total",
            Kind::Counter,
            "Records compaction appended to the topic's archive topic before removing them.",
            |s| Some(s.totals.records_archived as f64),
        ),
        (
            "skiff_compaction_archived_bytes_total",
            Kind::Counter,
            "Bytes of the batches compaction appended to the topic's archive topic.",
            |s| Some(s.totals.bytes_archived as f64),
        ),
        (
            "skiff_compaction_in_progress",
            Kind::Gauge,
            "1 while a pass is cleaning the log.",
            |s| Some(if s.in_progress { 1.0 } else { 0.0 }),
        ),
    ];
    for (name, kind, help, get) in gauges {
        e.family(name, kind, help);
        for (topic, partition, s) in all {
            if let Some(v) = get(s) {
                let part = partition.to_string();
                e.sample(name, &[("topic", topic), ("partition", &part)], v);
            }
        }
    }
    let name = "skiff_compaction_first_uncleanable_offset";
    e.family(
        name,
        Kind::Gauge,
        "End of what may be cleaned now; `limit` says what stops cleaning there.",
    );
    for (topic, partition, s) in all {
        let limit = s.uncleanable_reason.map_or("none", |r| match r {
            skiff_cleaner::UncleanableReason::ActiveSegment => "active_segment",
            skiff_cleaner::UncleanableReason::MinCompactionLag => "min_compaction_lag",
            skiff_cleaner::UncleanableReason::LastStableOffset => "last_stable_offset",
        });
        let part = partition.to_string();
        e.sample_int(
            name,
            &[("topic", topic), ("partition", &part), ("limit", limit)],
            s.first_uncleanable_offset.into(),
        );
    }
    let name = "skiff_compaction_uncleanable";
    e.family(name, Kind::Gauge,
        "1 for a compacted log that cannot be cleaned now, with the reason (cleaning_failed: retried with back-off; marked_uncleanable: a pass panicked, skipped until the topic is deleted or the broker restarts; insufficient_disk_space; archive_unavailable: the archive topic is missing, compacted or the topic itself).");
    for (topic, partition, s) in all {
        if let Some(reason) = uncleanable_reason(s) {
            let part = partition.to_string();
            e.sample_int(
                name,
                &[("topic", topic), ("partition", &part), ("reason", reason)],
                1,
            );
        }
    }
    write_held_tombstones(e, all);
    let uncleanable = all
        .iter()
        .filter(|(_, _, s)| s.uncleanable.is_some())
        .count();
    e.family(
        "skiff_log_cleaner_uncleanable_partitions",
        Kind::Gauge,
        "Compacted logs marked uncleanable after a pass panicked (Kafka's uncleanable-partitions-count).",
    );
    e.sample_int(
        "skiff_log_cleaner_uncleanable_partitions",
        &[],
        uncleanable as i128,
    );
    let backlog = all.iter().filter(|(_, _, s)| waiting_to_clean(s)).count();
    e.family(
        "skiff_log_cleaner_backlog_partitions",
        Kind::Gauge,
        "Compacted logs dirty enough to clean that no cleaner thread is cleaning yet.",
    );
    e.sample_int("skiff_log_cleaner_backlog_partitions", &[], backlog as i128);
}

/// Tombstones kept for consumer groups (`skiff.tombstone.wait.for.consumers`): the total per
/// partition, and per holding group for at most `skiff_cleaner::consumers::TOP_HOLDERS` groups
/// a partition (the ones holding most), so label cardinality stays bounded.
fn write_held_tombstones(e: &mut Exposition, all: &[(String, i32, CompactionStatus)]) {
    let name = "skiff_compaction_tombstones_held_for_consumers";
    e.family(
        name,
        Kind::Gauge,
        "Tombstones past delete.retention.ms that the last pass kept because consumer groups have not read them yet.",
    );
    for (topic, partition, s) in all {
        let part = partition.to_string();
        e.sample_int(
            name,
            &[("topic", topic), ("partition", &part)],
            s.tombstones_held_for_consumers.into(),
        );
    }
    let name = "skiff_compaction_tombstones_held_by_group";
    e.family(
        name,
        Kind::Gauge,
        "Tombstones a consumer group holds back (its committed offset is at or below them); only the groups holding most, a few per partition.",
    );
    for (topic, partition, s) in all {
        let part = partition.to_string();
        for (group, n) in &s.holding_groups {
            e.sample_int(
                name,
                &[("topic", topic), ("partition", &part), ("group", group)],
                (*n).into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use skiff_cleaner::{PassStats, UncleanableReason};

    fn facts() -> Facts {
        let mut done = CompactionStatus {
            dirty_ratio: 0.0,
            min_cleanable_ratio: 0.5,
            first_uncleanable_offset: 10,
            uncleanable_reason: Some(UncleanableReason::ActiveSegment),
            ..CompactionStatus::default()
        };
        let pass = PassStats {
            start_ms: 1_500,
            duration: Duration::from_millis(250),
            bytes_read: 1000,
            bytes_written: 300,
            records_read: 10,
            records_kept: 3,
            tombstones_removed: 1,
            records_archived: 6,
            bytes_archived: 512,
            ..PassStats::default()
        };
        let mut pass = pass;
        pass.held_for_consumers.add(&["slow"]);
        pass.held_for_consumers.add(&["slow", "fast"]);
        done.record_pass(&pass, 1_750);
        let mut failing = CompactionStatus {
            dirty_ratio: 0.9,
            min_cleanable_ratio: 0.5,
            cleanable_bytes: 4096,
            ..CompactionStatus::default()
        };
        failing.record_failure("disk on fire".into(), 0, 100);
        let mut panicked = CompactionStatus {
            dirty_ratio: 0.9,
            min_cleanable_ratio: 0.5,
            cleanable_bytes: 4096,
            ..CompactionStatus::default()
        };
        panicked.record_panic("cleaning pass panicked: bug".into());
        Facts {
            partitions: vec![PartitionFacts {
                topic: "t".into(),
                partition: 0,
                traffic: TrafficSnapshot {
                    bytes_in: 10,
                    records_in: 2,
                    bytes_out: 20,
                    records_out: 4,
                },
                log_start_offset: 0,
                log_end_offset: 2,
                size_bytes: 10,
            }],
            apis: vec![(
                0,
                3,
                HistogramSnapshot {
                    cumulative: vec![(1.0, 3)],
                    count: 3,
                    sum_seconds: 0.5,
                },
            )],
            connections_open: 1,
            connections_accepted: 5,
            fsync: vec![(
                FsyncSite::GroupCommit,
                HistogramSnapshot {
                    cumulative: vec![(1.0, 1)],
                    count: 1,
                    sum_seconds: 0.01,
                },
            )],
            group_commit_rounds: 1,
            compaction: vec![
                ("c".into(), 0, done),
                ("c".into(), 1, failing),
                ("c".into(), 2, panicked),
            ],
            quota_throttles: vec![ThrottleStats {
                quota: "producer_byte_rate",
                user: "alice".into(),
                client_id: String::new(),
                throttled: 2,
                throttle_ms_total: 1500,
            }],
            share_counters: Vec::new(),
            share_partitions: Vec::new(),
            key_indexes: vec![(
                "c".into(),
                0,
                skiff_log::KeyIndexStatus {
                    phase: skiff_log::KeyIndexPhase::Ready,
                    keys: 42,
                    bytes: 1000,
                    next_offset: 10,
                },
            )],
            key_index_budget: (1000, 4096),
        }
    }

    #[test]
    fn renders_every_family_with_labels() {
        let text = write(&facts());
        for line in [
            "skiff_partition_produced_bytes_total{topic=\"t\",partition=\"0\"} 10",
            "skiff_partition_produced_records_total{topic=\"t\",partition=\"0\"} 2",
            "skiff_partition_fetched_bytes_total{topic=\"t\",partition=\"0\"} 20",
            "skiff_partition_fetched_records_total{topic=\"t\",partition=\"0\"} 4",
            "skiff_log_end_offset{topic=\"t\",partition=\"0\"} 2",
            "skiff_requests_total{api=\"Produce\"} 3",
            "skiff_request_duration_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 3",
            "skiff_connections_open 1",
            "skiff_connections_accepted_total 5",
            "skiff_fsync_duration_seconds_count{site=\"group_commit\"} 1",
            "skiff_group_commit_rounds_total 1",
            "skiff_compaction_read_bytes_total{topic=\"c\",partition=\"0\"} 1000",
            "skiff_compaction_written_bytes_total{topic=\"c\",partition=\"0\"} 300",
            "skiff_compaction_records_removed_total{topic=\"c\",partition=\"0\"} 7",
            "skiff_compaction_tombstones_removed_total{topic=\"c\",partition=\"0\"} 1",
            "skiff_compaction_archived_records_total{topic=\"c\",partition=\"0\"} 6",
            "skiff_compaction_archived_bytes_total{topic=\"c\",partition=\"0\"} 512",
            "skiff_compaction_last_clean_start_timestamp_seconds{topic=\"c\",partition=\"0\"} 1.5",
            "skiff_compaction_last_clean_duration_seconds{topic=\"c\",partition=\"0\"} 0.25",
            "skiff_compaction_first_uncleanable_offset{topic=\"c\",partition=\"0\",limit=\"active_segment\"} 10",
            "skiff_compaction_uncleanable{topic=\"c\",partition=\"1\",reason=\"cleaning_failed\"} 1",
            "skiff_compaction_failures_total{topic=\"c\",partition=\"1\"} 1",
            "skiff_log_cleaner_backlog_partitions 1",
            "skiff_key_index_memory_bytes 1000",
            "skiff_key_index_memory_limit_bytes 4096",
            "skiff_key_index_keys{topic=\"c\",partition=\"0\"} 42",
            "skiff_key_index_state{topic=\"c\",partition=\"0\",state=\"ready\"} 1",
            "skiff_compaction_uncleanable{topic=\"c\",partition=\"2\",reason=\"marked_uncleanable\"} 1",
            "skiff_compaction_failures_total{topic=\"c\",partition=\"2\"} 1",
            "skiff_log_cleaner_uncleanable_partitions 1",
            "skiff_compaction_tombstones_held_for_consumers{topic=\"c\",partition=\"0\"} 2",
            "skiff_compaction_tombstones_held_by_group{topic=\"c\",partition=\"0\",group=\"slow\"} 2",
            "skiff_compaction_tombstones_held_by_group{topic=\"c\",partition=\"0\",group=\"fast\"} 1",
            "skiff_client_quota_throttled_total{quota=\"producer_byte_rate\",user=\"alice\",client_id=\"\"} 2",
            "skiff_client_quota_throttle_time_ms_total{quota=\"producer_byte_rate\",user=\"alice\",client_id=\"\"} 1500",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        // No last-clean sample for a log never cleaned; no uncleanable sample for a healthy one.
        assert!(!text
            .contains("skiff_compaction_last_clean_duration_seconds{topic=\"c\",partition=\"1\"}"));
        assert!(!text.contains("skiff_compaction_uncleanable{topic=\"c\",partition=\"0\""));
        // Each family's TYPE line appears exactly once.
        let types = text
            .lines()
            .filter(|l| l.starts_with("# TYPE skiff_compaction_dirty_ratio "))
            .count();
        assert_eq!(types, 1);
    }
}
