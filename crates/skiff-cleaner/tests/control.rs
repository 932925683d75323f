//! The pool's operator controls on real logs with a manual clock: dry run (same figures as the
//! pass that follows, nothing changed on disk), compact-now tickets (below the dirty ratio,
//! still bounded by `min.compaction.lag.ms`), and tombstones that wait for consumer groups.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{compact_config, T0};
use skiff_cleaner::{
    CleanerConfig, CleanerHandle, CleanerPool, GroupOffsetsSource, LogSource, TicketState,
    TicketStatus, UncleanableReason,
};
use skiff_log::{AppendValidation, Clock, Log, LogConfig, LogDir, ManualClock, Recovery};
use skiff_records::{BatchBuilder, Batches, Compression};

const MAP: u64 = 1 << 20;

struct Fixture {
    _root: tempfile::TempDir,
    log_dir: Arc<LogDir>,
    clock: Arc<ManualClock>,
    log: Arc<Log>,
    config: LogConfig,
}

struct OneLog(Arc<Log>);

impl LogSource for OneLog {
    fn logs(&self) -> Vec<(String, i32, Arc<Log>)> {
        vec![("t".to_string(), 0, self.0.clone())]
    }
}

/// Committed offsets set by the test.
#[derive(Default)]
struct Groups(Mutex<Vec<(String, i64)>>);

impl Groups {
    fn set(&self, list: &[(&str, i64)]) {
        *self.0.lock().unwrap() = list.iter().map(|(g, o)| (g.to_string(), *o)).collect();
    }
}

impl GroupOffsetsSource for Groups {
    fn committed(&self, topic: &str, partition: i32) -> Option<Vec<(String, i64)>> {
        assert_eq!((topic, partition), ("t", 0));
        Some(self.0.lock().unwrap().clone())
    }
}

impl Fixture {
    /// A compacted log `t`-0 that the pool never picks by itself (ratio 1.0).
    fn new(adjust: impl FnOnce(&mut LogConfig)) -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let (log_dir, _) = LogDir::open(root.path()).unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let mut config = compact_config(1 << 20, 1_000);
        config.min_cleanable_dirty_ratio = 1.0;
        adjust(&mut config);
        let log = Log::open(
            &log_dir.partition_dir("t", 0),
            config.clone(),
            clock.clone(),
            Recovery::Clean,
        )
        .unwrap();
        Fixture {
            _root: root,
            log_dir: Arc::new(log_dir),
            clock,
            log: Arc::new(log),
            config,
        }
    }

    fn produce(&self, key: &str, value: Option<&str>) -> i64 {
        let now = self.clock.now_ms();
        let mut b = BatchBuilder::new(0, Compression::None);
        b.push(now, Some(key.as_bytes()), value.map(str::as_bytes), &[]);
        let info = self
            .log
            .append(&b.build().unwrap(), 0, &AppendValidation { now_ms: now })
            .unwrap();
        info.first_offset
    }

    fn roll(&self) {
        self.clock.advance(self.config.segment_ms + 1);
        self.log.roll_if_due().unwrap();
    }

    fn pool(&self, threads: usize) -> CleanerPool {
        CleanerPool::start(
            CleanerConfig {
                enable: threads > 0,
                threads: threads.max(1),
                backoff_ms: 60_000,
                dedupe_buffer_size: MAP * threads.max(1) as u64,
                ..CleanerConfig::default()
            },
            Arc::new(OneLog(self.log.clone())),
            self.log_dir.clone(),
            self.clock.clone(),
        )
    }

    /// Every (offset, key, value) a consumer reads from 0.
    fn read(&self) -> Vec<(i64, String, Option<String>)> {
        let info = self.log.read(0, 1 << 20, true).unwrap();
        let mut out = Vec::new();
        for b in Batches::new(&info.records) {
            let (h, bytes) = b.unwrap();
            for r in skiff_records::records(bytes, 1 << 20).unwrap() {
                out.push((
                    h.base_offset + i64::from(r.offset_delta),
                    String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
                    r.value.map(|v| String::from_utf8(v.to_vec()).unwrap()),
                ));
            }
        }
        out
    }

    /// Name and bytes of every file under the data dir.
    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &std::path::Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.display().to_string(), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self._root.path(), &mut out);
        out
    }
}

fn wait_ticket(h: &CleanerHandle, id: u64) -> TicketStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = h.ticket_status(id).unwrap();
        if s.state.is_finished() {
            return s;
        }
        assert!(Instant::now() < deadline, "ticket never finished: {s:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn done(s: &TicketStatus) -> &skiff_cleaner::PassStats {
    match &s.state {
        TicketState::Done(stats) => stats,
        other => panic!("ticket not done: {other:?}"),
    }
}

/// 30 records over 3 keys, a tombstone for one of them, a tombstone for a key deleted for
/// good, then a roll: the sealed segment has plenty to remove.
fn dirty(f: &Fixture) {
    for i in 0..30 {
        f.produce(&format!("k{}", i % 3), Some(&format!("v{i}")));
    }
    f.produce("gone", Some("x"));
    f.produce("gone", None);
    f.produce("k0", None);
    f.roll();
    f.produce("active", Some("a"));
}

#[test]
fn dry_run_changes_nothing_and_predicts_the_pass() {
    let f = Fixture::new(|_| {});
    dirty(&f);
    // Pass 1 stamps the tombstones; the dry run is checked on pass 2, which removes them.
    let pool = f.pool(0);
    let h = pool.handle();
    let before = f.files();
    let dry = h.dry_run("t", 0).unwrap();
    assert_eq!(f.files(), before, "a dry run writes nothing");
    assert!(f.log_dir.read_cleaner_checkpoint().unwrap().is_empty());
    assert_eq!(dry.uncleanable_reason, UncleanableReason::ActiveSegment);
    assert_eq!(
        (dry.first_dirty_offset, dry.first_uncleanable_offset),
        (0, 33)
    );
    assert_eq!(dry.records_read, 33);
    // Both tombstones are their key's latest record: kept (and stamped) by a first pass.
    assert_eq!((dry.tombstones_removed, dry.tombstones_kept), (0, 2));
    assert_eq!(
        dry.records_removed,
        33 - 4,
        "kept: k1, k2 and the two tombstones"
    );
    assert!(!dry.eligible_now, "ratio 1.0: never by itself");
    pool.stop();

    // The real pass removes exactly what the dry run announced.
    let pool = f.pool(1);
    let h = pool.handle();
    let t = h.compact_now("t", 0).unwrap();
    let stats = done(&wait_ticket(&h, t.id)).clone();
    assert_eq!(stats.records_read, dry.records_read);
    assert_eq!(stats.records_kept, dry.records_read - dry.records_removed);
    assert_eq!(stats.tombstones_removed, dry.tombstones_removed);
    assert_eq!(stats.tombstones_kept, dry.tombstones_kept);
    assert_eq!(stats.bytes_before, dry.bytes_before);
    assert_eq!(stats.bytes_written, dry.bytes_after);
    assert_eq!(stats.end_offset, dry.end_offset);

    // Past the delete horizon: the next dry run announces the tombstones' removal, and the
    // pass after it does just that.
    f.clock.advance(1_000);
    let before = f.files();
    let dry = h.dry_run("t", 0).unwrap();
    assert_eq!(f.files(), before);
    assert_eq!(dry.tombstones_removed, 2);
    assert_eq!(dry.tombstones_kept, 0);
    let t = h.compact_now("t", 0).unwrap();
    let stats = done(&wait_ticket(&h, t.id)).clone();
    assert_eq!(stats.tombstones_removed, 2);
    assert_eq!(stats.records_read - stats.records_kept, dry.records_removed);
    assert_eq!(stats.bytes_written, dry.bytes_after);
    pool.stop();
    let keys: Vec<String> = f.read().into_iter().map(|r| r.1).collect();
    assert_eq!(keys, vec!["k1", "k2", "active"]);
}

#[test]
fn compact_now_cleans_below_the_dirty_ratio() {
    let f = Fixture::new(|_| {});
    dirty(&f);
    let pool = f.pool(1);
    let h = pool.handle();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        h.status("t", 0).and_then(|s| s.last_pass).is_none(),
        "ratio 1.0: not picked by itself"
    );
    let t = h.compact_now("t", 0).unwrap();
    assert_eq!(t.topic, "t");
    let s = wait_ticket(&h, t.id);
    let stats = done(&s);
    assert!(stats.records_read - stats.records_kept >= 28);
    assert!(s.finished_ms.is_some());
    assert_eq!(
        f.log_dir
            .read_cleaner_checkpoint()
            .unwrap()
            .get(&("t".into(), 0)),
        Some(&33)
    );
    // A topic-wide request covers its one partition.
    let all = h.compact_topic_now("t").unwrap();
    assert_eq!(all.len(), 1);
    wait_ticket(&h, all[0].id);
    assert!(h.compact_now("t", 7).is_err());
    assert!(h.compact_topic_now("nope").is_err());
    pool.stop();
}

#[test]
fn compact_now_still_honours_min_compaction_lag() {
    let f = Fixture::new(|c| c.min_compaction_lag_ms = 3_600_000);
    dirty(&f);
    let pool = f.pool(1);
    let h = pool.handle();
    let dry = h.dry_run("t", 0).unwrap();
    assert_eq!(dry.uncleanable_reason, UncleanableReason::MinCompactionLag);
    assert_eq!(dry.records_removed, 0);
    let before = f.read();
    let t = h.compact_now("t", 0).unwrap();
    let s = wait_ticket(&h, t.id);
    let stats = done(&s);
    assert_eq!(stats.first_uncleanable_offset, 0);
    assert_eq!(stats.records_read, stats.records_kept);
    assert_eq!(f.read(), before, "nothing younger than the lag is cleaned");
    pool.stop();
}

#[test]
fn compact_now_on_a_log_with_only_its_active_segment_has_nothing_to_clean() {
    let f = Fixture::new(|_| {});
    f.produce("k", Some("v"));
    let pool = f.pool(1);
    let h = pool.handle();
    let t = h.compact_now("t", 0).unwrap();
    assert_eq!(wait_ticket(&h, t.id).state, TicketState::NothingToClean);
    pool.stop();
    let disabled = f.pool(0);
    assert!(disabled.handle().compact_now("t", 0).is_err());
    disabled.stop();
}

/// A tombstone for `k` at offset 1 between two values of other keys, rolled, then one pass
/// that stamps its horizon; the clock is then moved past the horizon.
fn tombstone_past_horizon(f: &Fixture, h: &CleanerHandle) -> i64 {
    f.produce("k", Some("v"));
    let tomb = f.produce("k", None);
    f.produce("other", Some("o"));
    f.roll();
    f.produce("active", Some("a"));
    let t = h.compact_now("t", 0).unwrap();
    assert_eq!(done(&wait_ticket(h, t.id)).tombstones_kept, 1);
    f.clock.advance(1_000);
    tomb
}

fn has_tombstone(f: &Fixture, offset: i64) -> bool {
    f.read().iter().any(|r| r.0 == offset && r.2.is_none())
}

#[test]
fn tombstones_wait_for_the_slow_group_then_go() {
    let f = Fixture::new(|c| {
        c.tombstone_wait_for_consumers = true;
        c.tombstone_wait_max_ms = 1_000_000;
    });
    let groups = Arc::new(Groups::default());
    let pool = f.pool(1);
    let h = pool.handle();
    h.set_group_offsets(groups.clone());
    let tomb = tombstone_past_horizon(&f, &h);

    // fast has read it (committed the next offset), slow has not.
    groups.set(&[("fast", tomb + 1), ("slow", tomb)]);
    let dry = h.dry_run("t", 0).unwrap();
    assert_eq!(dry.tombstones_removed, 0);
    assert_eq!(dry.tombstones_held_for_consumers, 1);
    assert_eq!(dry.holding_groups, vec![("slow".to_string(), 1)]);
    let t = h.compact_now("t", 0).unwrap();
    let stats = done(&wait_ticket(&h, t.id)).clone();
    assert_eq!(stats.tombstones_removed, 0);
    assert!(has_tombstone(&f, tomb));
    let s = h.status("t", 0).unwrap();
    assert_eq!(s.tombstones_held_for_consumers, 1);
    assert_eq!(s.holding_groups, vec![("slow".to_string(), 1)]);

    // slow commits past it: the next pass removes it.
    groups.set(&[("fast", tomb + 1), ("slow", tomb + 2)]);
    let t = h.compact_now("t", 0).unwrap();
    wait_ticket(&h, t.id);
    assert!(!has_tombstone(&f, tomb));
    let s = h.status("t", 0).unwrap();
    assert_eq!(s.tombstones_held_for_consumers, 0);
    assert!(s.holding_groups.is_empty());
    pool.stop();
}

#[test]
fn a_dead_group_holds_tombstones_only_up_to_the_bound() {
    let f = Fixture::new(|c| {
        c.tombstone_wait_for_consumers = true;
        c.tombstone_wait_max_ms = 5_000;
    });
    let groups = Arc::new(Groups::default());
    groups.set(&[("dead", 0)]);
    let pool = f.pool(1);
    let h = pool.handle();
    h.set_group_offsets(groups.clone());
    let tomb = tombstone_past_horizon(&f, &h);
    let t = h.compact_now("t", 0).unwrap();
    wait_ticket(&h, t.id);
    assert!(has_tombstone(&f, tomb), "held by the dead group");
    let s = h.status("t", 0).unwrap();
    assert_eq!(s.holding_groups, vec![("dead".to_string(), 1)]);

    f.clock.advance(5_000);
    let t = h.compact_now("t", 0).unwrap();
    wait_ticket(&h, t.id);
    assert!(!has_tombstone(&f, tomb), "the bound removes it regardless");
    pool.stop();
}

#[test]
fn without_the_topic_config_groups_are_ignored() {
    let f = Fixture::new(|_| {});
    let groups = Arc::new(Groups::default());
    groups.set(&[("slow", 0)]);
    let pool = f.pool(1);
    let h = pool.handle();
    h.set_group_offsets(groups);
    let tomb = tombstone_past_horizon(&f, &h);
    let t = h.compact_now("t", 0).unwrap();
    wait_ticket(&h, t.id);
    assert!(!has_tombstone(&f, tomb));
    pool.stop();
}

#[test]
fn a_dry_run_skips_the_segments_the_pass_would_skip() {
    let f = Fixture::new(|_| {});
    // Three cold segments of over half a segment.bytes each (no two are merged).
    let value = "v".repeat(20_000);
    for s in 0..3 {
        for k in 0..30 {
            f.produce(&format!("cold-{s}-{k}"), Some(&value));
        }
        f.roll();
    }
    f.produce("hot", Some("0"));
    f.roll();
    let pool = f.pool(1);
    let h = pool.handle();
    let first = done(&wait_ticket(&h, h.compact_now("t", 0).unwrap().id)).clone();
    assert_eq!(
        first.segments_skipped, 0,
        "no summaries before the first pass"
    );
    f.produce("hot", Some("1"));
    f.roll();
    // The first two cold segments hold none of the map's keys (the third is merged with the
    // small hot segments after it): the dry run and the pass leave them unread.
    let dry = h.dry_run("t", 0).unwrap();
    assert_eq!(dry.stats.segments_skipped, 2, "{:?}", dry.stats);
    assert!(dry.stats.bytes_skipped > 2 * 512 * 1024);
    let second = done(&wait_ticket(&h, h.compact_now("t", 0).unwrap().id)).clone();
    assert_eq!(
        (second.segments_skipped, second.bytes_skipped),
        (dry.stats.segments_skipped, dry.stats.bytes_skipped)
    );
    // The pass also reads the unchanged start of a rewritten group again to copy it.
    assert!(second.bytes_read >= dry.stats.bytes_read);
    assert_eq!(second.bytes_written, dry.stats.bytes_written);
    // Status totals count what was left unread.
    let status = h.status("t", 0).unwrap();
    assert_eq!(status.totals.bytes_skipped, second.bytes_skipped);
    pool.stop();
}
