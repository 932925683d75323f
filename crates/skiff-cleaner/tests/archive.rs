//! History beside state (docs/compaction.md §5.11): every record a pass removes is first in
//! the archive topic, exactly once, in per-key order, also when the pass is stopped at each
//! step of archiving and both logs are reopened from disk as after `kill -9`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use common::{compact_config, Bounded, Rec, TestLog};
use skiff_cleaner::archive::{
    resolve_target, HEADER_REASON, HEADER_SOURCE_OFFSET, HEADER_SOURCE_PARTITION,
    HEADER_SOURCE_TIMESTAMP, HEADER_SOURCE_TOPIC, INTENT_FILE,
};
use skiff_cleaner::fault::{crash_archive_pass_at, ArchiveStep};
use skiff_cleaner::{
    dry_run_pass, plan, ArchiveSink, LogArchive, OffsetMap, PassContext, PassStats, Throttler,
};
use skiff_log::{Log, LogConfig, Recovery};
use skiff_records::{records, Batches, Compression};

const MAP: u64 = 1 << 20;
const RETENTION: i64 = 1_000;

/// The archive topic's one partition, on its own temp dir, sharing the source's clock.
struct ArchiveLog {
    /// The source topic's name in this test (faults are armed per topic name, and tests run
    /// in parallel).
    topic: &'static str,
    dir: tempfile::TempDir,
    log: Option<Arc<Log>>,
}

impl ArchiveLog {
    fn new(t: &TestLog, topic: &'static str) -> ArchiveLog {
        let mut a = ArchiveLog {
            topic,
            dir: tempfile::tempdir().unwrap(),
            log: None,
        };
        a.open(t, true);
        a
    }

    fn open(&mut self, t: &TestLog, clean: bool) {
        let recovery = if clean {
            Recovery::Clean
        } else {
            Recovery::FromOffset(0)
        };
        let log = Log::open(
            &self.dir.path().join("hist-0"),
            LogConfig::default(),
            t.clock.clone(),
            recovery,
        )
        .unwrap();
        self.log = Some(Arc::new(log));
    }

    /// Drops the log without closing it, as a crash would, and recovers it.
    fn crash_and_reopen(&mut self, t: &TestLog) {
        self.log = None;
        self.open(t, false);
    }

    fn sink(&self) -> LogArchive {
        LogArchive {
            topic: "hist".into(),
            partition: 0,
            log: self.log.clone().unwrap(),
            on_sync: None,
        }
    }

    /// Every archived record: (source offset, reason, the record as it was in the source).
    fn read(&self) -> Vec<(i64, String, Rec)> {
        let log = self.log.as_ref().unwrap();
        let mut out = Vec::new();
        let mut at = log.log_start_offset();
        while at < log.log_end_offset() {
            let info = log.read(at, 1 << 20, true).unwrap();
            for item in Batches::new(&info.records) {
                let (h, bytes) = item.unwrap();
                skiff_records::validate_batch(bytes).unwrap();
                for r in records(bytes, 1 << 26).unwrap() {
                    let mut own = BTreeMap::new();
                    let mut headers = Vec::new();
                    for (k, v) in r.headers {
                        let name = String::from_utf8(k.to_vec()).unwrap();
                        if name.starts_with("skiff.") {
                            own.insert(name, String::from_utf8(v.unwrap().to_vec()).unwrap());
                        } else {
                            headers.push((k.to_vec(), v.map(|v| v.to_vec())));
                        }
                    }
                    let timestamp = h.base_timestamp + r.timestamp_delta;
                    assert_eq!(own[HEADER_SOURCE_TOPIC], self.topic);
                    assert_eq!(own[HEADER_SOURCE_PARTITION], "0");
                    assert_eq!(own[HEADER_SOURCE_TIMESTAMP], timestamp.to_string());
                    out.push((
                        own[HEADER_SOURCE_OFFSET].parse().unwrap(),
                        own[HEADER_REASON].clone(),
                        Rec {
                            offset: own[HEADER_SOURCE_OFFSET].parse().unwrap(),
                            timestamp,
                            key: r.key.map(|k| k.to_vec()),
                            value: r.value.map(|v| v.to_vec()),
                            headers,
                        },
                    ));
                }
                at = h.next_offset();
            }
        }
        out
    }
}

/// A small deterministic workload: 8 keys, about one tombstone in six, several batches per
/// segment and several segments (so a pass has several groups).
fn write_history(t: &TestLog, seed: &mut u64, n: usize, history: &mut Vec<Rec>) {
    for _ in 0..n {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = format!("key{}", (*seed >> 33) % 8);
        let value = format!(
            "value-{}-{}",
            history.len(),
            "x".repeat(((*seed >> 40) % 40) as usize)
        );
        let tombstone = (*seed >> 20).is_multiple_of(6);
        let v = (!tombstone).then_some(value.as_bytes());
        history.extend(t.produce(&[(key.as_bytes(), v)], Compression::None));
        if (*seed >> 50).is_multiple_of(17) {
            t.clock.advance(3);
        }
    }
}

fn clean(
    t: &TestLog,
    a: &ArchiveLog,
    checkpoint: &mut Option<i64>,
) -> skiff_cleaner::Result<PassStats> {
    let sink = a.sink();
    let s = t.try_clean_archiving(
        a.topic,
        *checkpoint,
        MAP,
        &AtomicBool::new(false),
        Some(&sink),
    )?;
    *checkpoint = Some(s.end_offset);
    Ok(s)
}

/// Archive ∪ log == history, disjoint, nothing archived twice, every archived record exactly
/// as written, and each key's archived records in offset order, before its live record.
fn check(t: &TestLog, a: &ArchiveLog, history: &[Rec]) {
    let archived = a.read();
    let live = t.read_all().1;
    let by_offset: BTreeMap<i64, &Rec> = history.iter().map(|r| (r.offset, r)).collect();
    let mut seen = BTreeSet::new();
    let mut last_per_key: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    for (offset, reason, rec) in &archived {
        assert!(seen.insert(*offset), "offset {offset} archived twice");
        assert_eq!(
            &rec, &by_offset[offset],
            "archived record at {offset} differs"
        );
        match reason.as_str() {
            "tombstone" => assert_eq!(rec.value, None, "{offset}"),
            "superseded" => assert!(superseded(history, rec), "{offset}"),
            "keyless" => assert_eq!(rec.key, None, "{offset}"),
            other => panic!("reason {other}"),
        }
        let key = rec.key.clone().unwrap();
        if let Some(prev) = last_per_key.insert(key, *offset) {
            assert!(
                prev < *offset,
                "key order broken in the archive at {offset}"
            );
        }
    }
    for r in &live {
        assert!(
            !seen.contains(&r.offset),
            "offset {} both live and archived",
            r.offset
        );
        assert_eq!(&r, &by_offset[&r.offset]);
        if let Some(&a) = last_per_key.get(r.key.as_ref().unwrap()) {
            assert!(
                a < r.offset,
                "an archived record is newer than the live one"
            );
        }
    }
    let all: BTreeSet<i64> = seen
        .iter()
        .copied()
        .chain(live.iter().map(|r| r.offset))
        .collect();
    assert_eq!(
        all,
        by_offset.keys().copied().collect::<BTreeSet<_>>(),
        "records lost"
    );
    assert_eq!(archived.len() + live.len(), history.len());
}

fn superseded(history: &[Rec], rec: &Rec) -> bool {
    history
        .iter()
        .any(|h| h.key == rec.key && h.offset > rec.offset)
}

fn config() -> LogConfig {
    compact_config(2048, RETENTION)
}

/// Cleans until a pass changes nothing, moving the clock past the tombstone horizons.
fn clean_until_stable(t: &TestLog, a: &ArchiveLog, checkpoint: &mut Option<i64>) {
    for _ in 0..4 {
        clean(t, a, checkpoint).unwrap();
        t.clock.advance(RETENTION + 1);
    }
}

#[test]
fn removed_records_are_archived_before_they_go() {
    let t = TestLog::new(config());
    let a = ArchiveLog::new(&t, "topic-a");
    // The archive batches take the archive topic's codec.
    let archive_log = a.log.clone().unwrap();
    archive_log.update_config(LogConfig {
        compression_type: "zstd".into(),
        ..LogConfig::default()
    });
    let (mut seed, mut history, mut checkpoint) = (7, Vec::new(), None);
    write_history(&t, &mut seed, 300, &mut history);
    t.roll();
    let s = clean(&t, &a, &mut checkpoint).unwrap();
    assert!(s.groups > 1, "several groups: {}", s.groups);
    assert!(s.records_archived > 0);
    assert_eq!(s.records_archived, s.records_read - s.records_kept);
    assert!(s.bytes_archived > 0);
    check(&t, &a, &history);
    t.clock.advance(RETENTION + 1);
    write_history(&t, &mut seed, 100, &mut history);
    t.roll();
    clean_until_stable(&t, &a, &mut checkpoint);
    check(&t, &a, &history);
    let info = archive_log.read(0, 1 << 20, true).unwrap();
    for item in Batches::new(&info.records) {
        assert_eq!(item.unwrap().0.compression().unwrap(), Compression::Zstd);
    }
    let reasons: BTreeSet<String> = a.read().into_iter().map(|x| x.1).collect();
    assert_eq!(reasons.len(), 2, "both reasons seen: {reasons:?}");
    // Only one record per key is left, and the intent is gone.
    assert!(t.read_all().1.len() <= 8);
    assert!(!t.path().join(INTENT_FILE).exists());
}

#[test]
fn a_pass_stopped_at_any_archiving_step_loses_and_repeats_nothing() {
    for step in [
        ArchiveStep::AfterAppend,
        ArchiveStep::AfterSync,
        ArchiveStep::AfterSwap,
    ] {
        for nth in 0..3 {
            let mut t = TestLog::new(config());
            let mut a = ArchiveLog::new(&t, "topic-c");
            let (mut seed, mut history, mut checkpoint) = (11 + nth as u64, Vec::new(), None);
            write_history(&t, &mut seed, 300, &mut history);
            t.roll();
            // Tombstones get their horizon in this first pass, so the next ones remove some.
            clean(&t, &a, &mut checkpoint).unwrap();
            t.clock.advance(RETENTION + 1);
            write_history(&t, &mut seed, 200, &mut history);
            t.roll();

            crash_archive_pass_at(a.topic, step, nth);
            let before = checkpoint;
            let err = clean(&t, &a, &mut checkpoint).unwrap_err();
            assert!(err.to_string().contains("injected crash"), "{err}");
            checkpoint = before;
            assert!(t.path().join(INTENT_FILE).exists(), "{step:?} {nth}");
            // kill -9: neither log is closed; both recover from their files.
            t.reopen(false);
            a.crash_and_reopen(&t);
            // Until the rerun, a record may be both archived and live, but none is lost.
            let kept: BTreeSet<i64> = a
                .read()
                .iter()
                .map(|x| x.0)
                .chain(t.read_all().1.iter().map(|r| r.offset))
                .collect();
            assert_eq!(kept.len(), history.len(), "{step:?} {nth}: records lost");

            // The rerun sees more data and later tombstone decisions than the stopped pass.
            t.clock.advance(RETENTION + 1);
            write_history(&t, &mut seed, 50, &mut history);
            t.roll();
            let s = clean(&t, &a, &mut checkpoint).unwrap();
            if step != ArchiveStep::AfterAppend || nth > 0 {
                assert!(s.records_already_archived > 0, "{step:?} {nth}: {s:?}");
            }
            check(&t, &a, &history);
            assert!(!t.path().join(INTENT_FILE).exists());
            clean_until_stable(&t, &a, &mut checkpoint);
            check(&t, &a, &history);
        }
    }
}

#[test]
fn a_rerun_stopped_again_still_archives_exactly_once() {
    let mut t = TestLog::new(config());
    let mut a = ArchiveLog::new(&t, "topic-b");
    let (mut seed, mut history, checkpoint) = (99, Vec::new(), None);
    write_history(&t, &mut seed, 400, &mut history);
    t.roll();
    for (step, nth) in [
        (ArchiveStep::AfterSync, 1),
        (ArchiveStep::AfterAppend, 2),
        (ArchiveStep::AfterSwap, 0),
    ] {
        crash_archive_pass_at("topic-b", step, nth);
        let sink = a.sink();
        let r = t.try_clean_archiving(
            "topic-b",
            checkpoint,
            MAP,
            &AtomicBool::new(false),
            Some(&sink),
        );
        assert!(r.is_err(), "{step:?}");
        t.reopen(false);
        a.crash_and_reopen(&t);
        write_history(&t, &mut seed, 40, &mut history);
        t.roll();
    }
    let sink = a.sink();
    let s = t
        .try_clean_archiving(
            "topic-b",
            checkpoint,
            MAP,
            &AtomicBool::new(false),
            Some(&sink),
        )
        .unwrap();
    assert!(s.records_already_archived > 0);
    let archived = a.read_as("topic-b");
    let distinct: BTreeSet<i64> = archived.iter().copied().collect();
    assert_eq!(distinct.len(), archived.len(), "duplicates in the archive");
    let live: BTreeSet<i64> = t.read_all().1.iter().map(|r| r.offset).collect();
    assert!(distinct.is_disjoint(&live));
    let all: BTreeSet<i64> = distinct.union(&live).copied().collect();
    assert_eq!(
        all,
        history.iter().map(|r| r.offset).collect::<BTreeSet<_>>()
    );
}

impl ArchiveLog {
    /// Source offsets of the archived records that name `topic`, in archive order.
    fn read_as(&self, topic: &str) -> Vec<i64> {
        let log = self.log.as_ref().unwrap();
        let mut out = Vec::new();
        let mut at = log.log_start_offset();
        while at < log.log_end_offset() {
            let info = log.read(at, 1 << 20, true).unwrap();
            for item in Batches::new(&info.records) {
                let (h, bytes) = item.unwrap();
                for r in records(bytes, 1 << 26).unwrap() {
                    let get = |n: &str| {
                        r.headers
                            .iter()
                            .find(|(k, _)| k.as_ref() == n.as_bytes())
                            .map(|(_, v)| String::from_utf8(v.clone().unwrap().to_vec()).unwrap())
                    };
                    assert_eq!(get(HEADER_SOURCE_TOPIC).as_deref(), Some(topic));
                    out.push(get(HEADER_SOURCE_OFFSET).unwrap().parse().unwrap());
                }
                at = h.next_offset();
            }
        }
        out
    }
}

#[test]
fn a_dry_run_archives_nothing() {
    let t = TestLog::new(config());
    let a = ArchiveLog::new(&t, "topic-d");
    let (mut seed, mut history) = (3, Vec::new());
    write_history(&t, &mut seed, 200, &mut history);
    t.roll();
    let log = t.log();
    let view = log.cleaner_view();
    let p = plan(&view, None, t.now(), log.last_stable_offset());
    let mut map = OffsetMap::new(MAP, 0.9);
    let throttler = Throttler::new(f64::MAX);
    let never = AtomicBool::new(false);
    let sink = a.sink();
    let ctx = PassContext {
        topic: a.topic,
        partition: 0,
        now_ms: t.now(),
        io_buffer_size: 256,
        abort: &never,
        throttler: &throttler,
        consumer_hold: None,
        archive: Some(&sink),
        summaries: None,
    };
    let s = dry_run_pass(log, &view, &p, &mut map, &ctx).unwrap();
    assert!(
        s.records_read > s.records_kept,
        "the dry run would remove records"
    );
    assert_eq!((s.records_archived, s.bytes_archived), (0, 0));
    assert_eq!(sink.end_offset(), 0);
    assert!(!t.path().join(INTENT_FILE).exists());
    assert_eq!(t.read_all().1, history);
}

#[test]
fn an_impossible_archive_is_refused_with_a_reason() {
    let t = TestLog::new(config());
    let a = ArchiveLog::new(&t, "topic-e");
    let hist = a.log.clone().unwrap();
    let src: Arc<Log> = Arc::new(
        Log::open(
            &t.dir.path().join("other-0"),
            config(),
            t.clock.clone(),
            Recovery::Clean,
        )
        .unwrap(),
    );
    let logs = vec![
        ("src".to_string(), 0, src.clone()),
        ("src".to_string(), 1, src.clone()),
        ("hist".to_string(), 0, hist.clone()),
    ];
    assert!(resolve_target("src", 1, "", &logs).unwrap().is_none());
    let why = resolve_target("src", 1, "missing", &logs).err().unwrap();
    assert!(why.contains("does not exist"), "{why}");
    let why = resolve_target("src", 1, "__consumer_offsets", &logs)
        .err()
        .unwrap();
    assert!(why.contains("internal"), "{why}");
    let why = resolve_target("src", 1, "src", &logs).err().unwrap();
    assert!(why.contains("the topic itself"), "{why}");
    let target = resolve_target("src", 1, "hist", &logs).unwrap().unwrap();
    assert_eq!(target.target(), ("hist", 0));
    // A compacted archive would drop history.
    let compacted = vec![("hist".to_string(), 0, src)];
    let why = resolve_target("x", 0, "hist", &compacted).err().unwrap();
    assert!(why.contains("compacted"), "{why}");
}

/// The logs a test pool sees (the archive topic can be added later), and the partitions it
/// was told were appended to.
struct Logs(
    std::sync::Mutex<Vec<(String, i32, Arc<Log>)>>,
    std::sync::Mutex<Vec<(String, i32)>>,
);

impl skiff_cleaner::LogSource for Logs {
    fn logs(&self) -> Vec<(String, i32, Arc<Log>)> {
        self.0.lock().unwrap().clone()
    }

    fn appended(&self, topic: &str, partition: i32) {
        self.1.lock().unwrap().push((topic.to_string(), partition));
    }
}

#[test]
fn the_pool_cleans_nothing_until_the_archive_exists_then_archives() {
    use std::time::{Duration, Instant};
    let root = tempfile::tempdir().unwrap();
    let (log_dir, _) = skiff_log::LogDir::open(root.path()).unwrap();
    let log_dir = Arc::new(log_dir);
    let clock = Arc::new(skiff_log::ManualClock::new(common::T0));
    let mut cfg = config();
    cfg.archive_topic = "orders-history".into();
    let src = Arc::new(
        Log::open(
            &log_dir.partition_dir("orders", 3),
            cfg,
            clock.clone(),
            Recovery::Clean,
        )
        .unwrap(),
    );
    for i in 0..60 {
        let mut b = skiff_records::BatchBuilder::new(0, Compression::None);
        b.push(
            common::T0,
            Some(format!("k{}", i % 4).as_bytes()),
            Some(b"v"),
            &[],
        );
        src.append(
            &b.build().unwrap(),
            0,
            &skiff_log::AppendValidation { now_ms: common::T0 },
        )
        .unwrap();
    }
    clock.advance(20_000);
    src.roll_if_due().unwrap();
    let before = src.size_bytes();
    let logs = Arc::new(Logs(
        std::sync::Mutex::new(vec![("orders".to_string(), 3, src.clone())]),
        std::sync::Mutex::default(),
    ));
    let pool = skiff_cleaner::CleanerPool::start(
        skiff_cleaner::CleanerConfig {
            backoff_ms: 20,
            dedupe_buffer_size: 4 << 20,
            ..skiff_cleaner::CleanerConfig::default()
        },
        logs.clone(),
        log_dir.clone(),
        clock.clone(),
    );
    let wait = |what: &str, ok: &dyn Fn(&skiff_cleaner::CompactionStatus) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            pool.wake();
            if let Some(s) = pool.status("orders", 3).filter(|s| ok(s)) {
                return s;
            }
            assert!(Instant::now() < deadline, "{what}: {:?}", pool.statuses());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let s = wait("blocked", &|s| s.archive_blocked.is_some());
    assert!(s.archive_blocked.unwrap().contains("does not exist"));
    assert!(s.last_pass.is_none());
    assert_eq!(src.size_bytes(), before, "nothing removed");

    // Two archive partitions: source partition 3 goes to 3 mod 2 = 1.
    let mut hist = Vec::new();
    for p in 0..2 {
        let log = Log::open(
            &log_dir.partition_dir("orders-history", p),
            LogConfig::default(),
            clock.clone(),
            Recovery::Clean,
        )
        .unwrap();
        hist.push(Arc::new(log));
        logs.0
            .lock()
            .unwrap()
            .push(("orders-history".to_string(), p, hist[p as usize].clone()));
    }
    let s = wait("archived", &|s| s.last_pass.is_some());
    assert_eq!(s.archive_blocked, None);
    let pass = s.last_pass.unwrap();
    assert_eq!(
        pass.records_archived, 56,
        "60 records over 4 keys: 56 superseded"
    );
    assert_eq!(s.totals.records_archived, 56);
    assert_eq!(hist[0].log_end_offset(), 0);
    assert_eq!(hist[1].log_end_offset(), 56);
    pool.stop();
    // Each fsync of the archive woke its partition's readers.
    let woken = logs.1.lock().unwrap().clone();
    assert!(!woken.is_empty());
    assert!(woken
        .iter()
        .all(|w| w == &("orders-history".to_string(), 1)));
}

#[test]
fn a_pass_that_archived_its_bound_stops_at_a_group_and_the_next_goes_on() {
    let mut t = TestLog::new(config());
    let mut a = ArchiveLog::new(&t, "topic-f");
    let (mut seed, mut history) = (5, Vec::new());
    write_history(&t, &mut seed, 400, &mut history);
    t.roll();
    let mut checkpoint = None;
    let mut partial = 0;
    for i in 0..40 {
        if i == 3 {
            // A crash inside a bounded pass changes nothing either.
            crash_archive_pass_at(a.topic, ArchiveStep::AfterSync, 1);
            let sink = Bounded(a.sink(), 20);
            let r = t.try_clean_archiving(
                a.topic,
                checkpoint,
                MAP,
                &AtomicBool::new(false),
                Some(&sink),
            );
            assert!(r.is_err());
            t.reopen(false);
            a.crash_and_reopen(&t);
        }
        let sink = Bounded(a.sink(), 20);
        let s = t
            .try_clean_archiving(
                a.topic,
                checkpoint,
                MAP,
                &AtomicBool::new(false),
                Some(&sink),
            )
            .unwrap();
        assert!(
            s.end_offset >= checkpoint.unwrap_or(0),
            "the checkpoint never goes back"
        );
        checkpoint = Some(s.end_offset);
        if s.partial {
            partial += 1;
        } else if s.records_archived == 0 && i > 3 {
            break;
        }
        t.clock.advance(RETENTION + 1);
    }
    assert!(partial > 2, "the bound split the work: {partial}");
    check(&t, &a, &history);
    let live = t.read_all().1;
    let keys: BTreeSet<_> = live.iter().map(|r| r.key.clone()).collect();
    assert_eq!(keys.len(), live.len(), "one record per key at the end");
}

#[test]
fn an_intent_whose_records_retention_removed_is_cleared() {
    let mut c = config();
    c.cleanup_policy.delete = true;
    let mut t = TestLog::new(c);
    let mut a = ArchiveLog::new(&t, "topic-g");
    let (mut seed, mut history, mut checkpoint) = (21, Vec::new(), None);
    write_history(&t, &mut seed, 300, &mut history);
    t.roll();
    crash_archive_pass_at(a.topic, ArchiveStep::AfterSync, 1);
    assert!(clean(&t, &a, &mut checkpoint).is_err());
    checkpoint = None;
    t.reopen(false);
    a.crash_and_reopen(&t);
    assert!(t.path().join(INTENT_FILE).exists());
    // DeleteRecords and retention take every sealed segment away.
    let active = *t.log().segment_base_offsets().last().unwrap();
    t.log().delete_records_before(active).unwrap();
    t.log().apply_retention().unwrap();
    assert_eq!(t.log().segment_count(), 1);
    let s = clean(&t, &a, &mut checkpoint).unwrap();
    assert!(s.records_already_archived > 0);
    assert!(
        !t.path().join(INTENT_FILE).exists(),
        "nothing left to protect"
    );
    let archived: Vec<i64> = a.read().iter().map(|x| x.0).collect();
    let distinct: BTreeSet<i64> = archived.iter().copied().collect();
    assert_eq!(distinct.len(), archived.len());
}
