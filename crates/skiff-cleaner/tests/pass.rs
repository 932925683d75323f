//! Cleaning passes on real logs: latest value per key, order, tombstone timing, partial passes,
//! aborts and crashes that leave the log unchanged, and the pool end to end.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{compact_config, marker, txn_append, Rec, TestLog};
use skiff_cleaner::{CleanerConfig, CleanerError, CleanerPool, LogSource, UncleanableReason};
use skiff_log::{Log, LogDir};
use skiff_records::Compression;

const MAP: u64 = 1 << 20;

fn kv(recs: &[Rec]) -> Vec<(i64, Vec<u8>, Option<Vec<u8>>)> {
    recs.iter()
        .map(|r| (r.offset, r.key.clone().unwrap(), r.value.clone()))
        .collect()
}

fn cleaned_files(t: &TestLog) -> Vec<String> {
    std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap"))
        .collect()
}

#[test]
fn latest_value_per_key_at_original_offsets() {
    let t = TestLog::new(compact_config(1 << 20, 60_000));
    let mut produced = Vec::new();
    for round in 0..10 {
        for k in 0..10 {
            let v = format!("{k}:{round}");
            produced.extend(t.produce(
                &[(format!("k{k}").as_bytes(), Some(v.as_bytes()))],
                Compression::None,
            ));
        }
    }
    t.roll();
    let before_size = t.log().size_bytes();
    let leo = t.log().log_end_offset();
    let stats = t.clean(None, MAP);
    assert_eq!(stats.end_offset, 100);
    assert!(!stats.partial);
    let (_, recs) = t.read_all();
    assert_eq!(
        recs,
        produced[90..].to_vec(),
        "exact records, offsets 90..99"
    );
    assert_eq!(t.log().log_end_offset(), leo);
    assert_eq!(t.log().log_start_offset(), 0);
    assert!(t.log().size_bytes() < before_size);
    // Idempotent: another pass with nothing new changes nothing.
    t.clean(Some(stats.end_offset), MAP);
    assert_eq!(t.read_all().1, produced[90..].to_vec());
}

#[test]
fn interleaved_order_kept() {
    let t = TestLog::new(compact_config(1 << 20, 60_000));
    for (k, v) in [("a", "1"), ("b", "1"), ("a", "2"), ("c", "1"), ("b", "2")] {
        t.produce(&[(k.as_bytes(), Some(v.as_bytes()))], Compression::None);
    }
    t.roll();
    t.clean(None, MAP);
    let got: Vec<(i64, Vec<u8>, Option<Vec<u8>>)> = kv(&t.read_all().1);
    assert_eq!(
        got,
        vec![
            (2, b"a".to_vec(), Some(b"2".to_vec())),
            (3, b"c".to_vec(), Some(b"1".to_vec())),
            (4, b"b".to_vec(), Some(b"2".to_vec())),
        ]
    );
}

#[test]
fn active_segment_never_cleaned() {
    let t = TestLog::new(compact_config(1 << 20, 60_000));
    for i in 0..5 {
        t.produce(
            &[(b"k", Some(format!("{i}").as_bytes()))],
            Compression::None,
        );
    }
    let stats = t.clean(None, MAP);
    assert_eq!(stats.first_uncleanable_offset, 0);
    assert_eq!(stats.segments_rewritten, 0);
    assert_eq!(t.read_all().1.len(), 5);
    let view = t.log().cleaner_view();
    let p = skiff_cleaner::plan(&view, None, t.now(), t.log().high_watermark());
    assert_eq!(p.uncleanable_reason, UncleanableReason::ActiveSegment);
}

#[test]
fn tombstone_kept_for_delete_retention_then_removed() {
    let t = TestLog::new(compact_config(1 << 20, 5_000));
    t.produce(&[(b"k", Some(b"v1"))], Compression::None);
    t.produce(&[(b"k", None)], Compression::None);
    t.produce(&[(b"other", Some(b"x"))], Compression::None);
    t.roll();
    let s1 = t.clean(None, MAP);
    assert_eq!(s1.tombstones_kept, 1);
    assert_eq!(s1.next_delete_horizon_ms, Some(s1.start_ms + 5_000));
    let recs = t.read_all().1;
    assert_eq!(
        kv(&recs),
        vec![
            (1, b"k".to_vec(), None),
            (2, b"other".to_vec(), Some(b"x".to_vec()))
        ]
    );
    // Just before the horizon: still there.
    t.clock.advance(4_999);
    t.clean(Some(s1.end_offset), MAP);
    assert_eq!(t.read_all().1.len(), 2);
    // At the horizon: gone, the other key stays.
    t.clock.advance(1);
    let s3 = t.clean(Some(s1.end_offset), MAP);
    assert_eq!(s3.tombstones_removed, 1);
    assert_eq!(
        kv(&t.read_all().1),
        vec![(2, b"other".to_vec(), Some(b"x".to_vec()))]
    );
    assert_eq!(t.log().log_end_offset(), 3);
}

#[test]
fn tombstone_horizon_counts_from_first_pass_not_timestamp() {
    let t = TestLog::new(compact_config(1 << 20, 5_000));
    // The tombstone's timestamp is a day old by the time of the first pass.
    t.produce(&[(b"k", None)], Compression::None);
    t.roll();
    t.clock.advance(86_400_000);
    let s = t.clean(None, MAP);
    assert_eq!(t.read_all().1.len(), 1);
    t.clock.advance(4_000);
    t.clean(Some(s.end_offset), MAP);
    assert_eq!(
        t.read_all().1.len(),
        1,
        "horizon is T + delete.retention.ms"
    );
}

#[test]
fn partial_passes_with_tiny_map_converge() {
    let t = TestLog::new(compact_config(1 << 20, 60_000));
    let mut last = BTreeMap::new();
    for round in 0..2 {
        for k in 0..20 {
            let r = t.produce(
                &[(
                    format!("key{k}").as_bytes(),
                    Some(format!("{round}").as_bytes()),
                )],
                Compression::Lz4,
            );
            last.insert(k, r[0].clone());
        }
    }
    t.roll();
    let leo = t.log().log_end_offset();
    let mut checkpoint = None;
    let mut passes = 0;
    loop {
        let s = t.clean(checkpoint, 48 * 4); // 4 slots: 3 keys per pass
        passes += 1;
        assert!(s.map_keys <= 3);
        checkpoint = Some(s.end_offset);
        if !s.partial {
            break;
        }
        assert!(passes < 100, "no progress");
    }
    assert!(passes > 5, "the map forced several passes ({passes})");
    let recs = t.read_all().1;
    assert_eq!(recs, last.values().cloned().collect::<Vec<_>>());
    assert_eq!(t.log().log_end_offset(), leo);
}

#[test]
fn abandoned_writer_leaves_log_unchanged() {
    let mut t = TestLog::new(compact_config(1 << 20, 60_000));
    for i in 0..6 {
        t.produce(
            &[(b"k", Some(format!("{i}").as_bytes()))],
            Compression::None,
        );
    }
    t.roll();
    let before = t.read_all();
    let bases = t.log().segment_base_offsets();
    {
        // A pass that dies after writing part of its output, before the swap.
        let mut w = t.log().cleaned_segment_writer(bases[0]).unwrap();
        for item in t.log().segment_batches(bases[0], 128).unwrap().take(2) {
            w.append_batch(&item.unwrap().1).unwrap();
        }
        assert!(!cleaned_files(&t).is_empty());
        drop(w);
    }
    assert!(cleaned_files(&t).is_empty());
    assert_eq!(t.read_all(), before);
    t.reopen(false);
    assert_eq!(t.read_all(), before);
    // The next pass still works.
    t.clean(None, MAP);
    assert_eq!(t.read_all().1.len(), 1);
}

#[test]
fn crash_with_cleaned_files_on_disk_recovers_to_before() {
    let mut t = TestLog::new(compact_config(1 << 20, 60_000));
    for i in 0..6 {
        t.produce(
            &[(b"k", Some(format!("{i}").as_bytes()))],
            Compression::None,
        );
    }
    t.roll();
    let before = t.read_all();
    let bases = t.log().segment_base_offsets();
    let mut w = t.log().cleaned_segment_writer(bases[0]).unwrap();
    for item in t.log().segment_batches(bases[0], 128).unwrap().skip(5) {
        w.append_batch(&item.unwrap().1).unwrap();
    }
    // kill -9: the writer's destructor never runs.
    std::mem::forget(w);
    t.reopen(false);
    assert_eq!(t.read_all(), before);
    assert!(
        cleaned_files(&t).is_empty(),
        "recovery deletes .cleaned files"
    );
}

#[test]
fn abort_flag_stops_the_pass_without_changes() {
    let t = TestLog::new(compact_config(1 << 20, 60_000));
    for i in 0..6 {
        t.produce(
            &[(b"k", Some(format!("{i}").as_bytes()))],
            Compression::None,
        );
    }
    t.roll();
    let before = t.read_all();
    let abort = AtomicBool::new(true);
    let err = t.try_clean(None, MAP, &abort).unwrap_err();
    assert!(matches!(err, CleanerError::Aborted(_)), "{err}");
    assert!(err.is_interruption());
    assert_eq!(t.read_all(), before);
    assert!(cleaned_files(&t).is_empty());
}

#[test]
fn empty_last_batch_of_round_kept() {
    let t = TestLog::new(compact_config(1 << 20, 1_000));
    t.produce(&[(b"a", Some(b"1"))], Compression::None);
    t.produce(&[(b"b", Some(b"1")), (b"a", None)], Compression::Snappy);
    t.roll();
    let s1 = t.clean(None, MAP);
    assert_eq!(s1.first_uncleanable_offset, 3);
    t.clock.advance(1_000);
    t.clean(Some(s1.end_offset), MAP);
    let (headers, recs) = t.read_all();
    assert_eq!(kv(&recs), vec![(1, b"b".to_vec(), Some(b"1".to_vec()))]);
    // Now b's record is superseded and the batch [1,2] is the last of the round: kept empty.
    t.produce(&[(b"b", Some(b"2"))], Compression::None);
    t.roll();
    let s3 = t.clean(Some(3), MAP);
    assert_eq!(s3.first_uncleanable_offset, 4);
    let (headers2, recs2) = t.read_all();
    assert_eq!(kv(&recs2), vec![(3, b"b".to_vec(), Some(b"2".to_vec()))]);
    assert!(
        headers2.iter().all(|h| h.base_offset != 1),
        "[1,2] is no longer last: dropped"
    );
    // In the earlier state the final batch of the round had lost only its tombstone.
    assert_eq!(
        headers.last().map(|h| (h.base_offset, h.last_offset())),
        Some((1, 2))
    );
}

#[test]
fn fully_removed_final_batch_kept_empty() {
    let t = TestLog::new(compact_config(1 << 20, 0));
    t.produce(&[(b"a", Some(b"1"))], Compression::None);
    t.produce(&[(b"a", None)], Compression::Gzip);
    t.roll();
    let s1 = t.clean(None, MAP);
    t.clean(Some(s1.end_offset), MAP);
    let (headers, recs) = t.read_all();
    assert!(recs.is_empty());
    assert_eq!(headers.len(), 1);
    let h = headers[0];
    assert_eq!((h.base_offset, h.last_offset(), h.record_count), (1, 1, 0));
    assert_eq!(t.log().log_end_offset(), 2);
}

struct OneLog(String, Arc<Log>);

impl LogSource for OneLog {
    fn logs(&self) -> Vec<(String, i32, Arc<Log>)> {
        vec![(self.0.clone(), 0, self.1.clone())]
    }
}

/// A compacted log `t`-0 with 50 records over 5 keys in a sealed segment and one record in the
/// active one; returns it with the sealed segment's end offset.
fn dirty_log(log_dir: &LogDir, clock: Arc<skiff_log::SystemClock>) -> (Arc<Log>, i64) {
    let log = Arc::new(
        Log::open(
            &log_dir.partition_dir("t", 0),
            compact_config(1 << 20, 60_000),
            clock.clone(),
            skiff_log::Recovery::Clean,
        )
        .unwrap(),
    );
    let now = skiff_log::Clock::now_ms(&skiff_log::SystemClock);
    for i in 0..50 {
        let mut b = skiff_records::BatchBuilder::new(0, Compression::None);
        b.push(now, Some(format!("k{}", i % 5).as_bytes()), Some(b"v"), &[]);
        log.append(
            &b.build().unwrap(),
            0,
            &skiff_log::AppendValidation { now_ms: now },
        )
        .unwrap();
    }
    let leo = log.log_end_offset();
    // Roll by appending after segment.ms of record time.
    let mut b = skiff_records::BatchBuilder::new(0, Compression::None);
    b.push(now + 20_000, Some(b"~roll"), Some(b"r"), &[]);
    log.append(
        &b.build().unwrap(),
        0,
        &skiff_log::AppendValidation { now_ms: now },
    )
    .unwrap();
    assert_eq!(log.segment_count(), 2);
    (log, leo)
}

#[test]
fn pool_cleans_checkpoints_and_reports_status() {
    let root = tempfile::tempdir().unwrap();
    let (log_dir, _) = LogDir::open(root.path()).unwrap();
    let log_dir = Arc::new(log_dir);
    let clock = Arc::new(skiff_log::SystemClock);
    let (log, leo) = dirty_log(&log_dir, clock.clone());

    let config = CleanerConfig {
        threads: 2,
        backoff_ms: 20,
        dedupe_buffer_size: 4 << 20,
        ..CleanerConfig::default()
    };
    let pool = CleanerPool::start(
        config,
        Arc::new(OneLog("t".into(), log.clone())),
        log_dir.clone(),
        clock,
    );
    assert_eq!(pool.thread_count(), 2);
    pool.wake();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = pool.status("t", 0).filter(|s| s.last_pass.is_some()) {
            break s;
        }
        assert!(Instant::now() < deadline, "no pass: {:?}", pool.statuses());
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.first_dirty_offset, leo);
    assert_eq!(status.last_error, None);
    let ckpt = log_dir.read_cleaner_checkpoint().unwrap();
    assert_eq!(ckpt.get(&("t".to_string(), 0)), Some(&leo));
    pool.abort_and_wait("t", 0);
    assert_eq!(pool.statuses().len(), 1);
    pool.stop();
    // 5 keys survive below the active segment.
    let info = log.read(0, 1 << 20, true).unwrap();
    let n: usize = skiff_records::Batches::new(&info.records)
        .map(|b| skiff_records::records(b.unwrap().1, 1 << 20).unwrap().len())
        .sum();
    assert_eq!(n, 6);
}

/// One log, listed only once the flag is set.
struct Gated(AtomicBool, String, Arc<Log>);

impl LogSource for Gated {
    fn logs(&self) -> Vec<(String, i32, Arc<Log>)> {
        if self.0.load(Ordering::Acquire) {
            vec![(self.1.clone(), 0, self.2.clone())]
        } else {
            Vec::new()
        }
    }
}

#[test]
fn a_paused_partition_is_planned_but_not_cleaned_until_resumed() {
    let root = tempfile::tempdir().unwrap();
    let (log_dir, _) = LogDir::open(root.path()).unwrap();
    let log_dir = Arc::new(log_dir);
    let clock = Arc::new(skiff_log::SystemClock);
    let (log, leo) = dirty_log(&log_dir, clock.clone());
    let config = CleanerConfig {
        threads: 1,
        backoff_ms: 20,
        dedupe_buffer_size: 4 << 20,
        ..CleanerConfig::default()
    };
    // The log is listed only once paused, so no pass can start before the pause: pausing a
    // partition the pool has not seen yet is legal (idle → paused) and is kept.
    let source = Arc::new(Gated(AtomicBool::new(false), "t".into(), log.clone()));
    let pool = CleanerPool::start(config, source.clone(), log_dir, clock);
    let handle = pool.handle();
    handle.abort_and_pause("t", 0);
    handle.abort_and_pause("t", 0);
    source.0.store(true, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(20);
    let wait = |what: &str, done: &dyn Fn(&skiff_cleaner::CompactionStatus) -> bool| loop {
        if let Some(s) = pool.status("t", 0).filter(|s| done(s)) {
            return s;
        }
        assert!(Instant::now() < deadline, "{what}: {:?}", pool.statuses());
        pool.wake();
        std::thread::sleep(Duration::from_millis(20));
    };
    // Planned (dirty, eligible by ratio) yet never picked while paused, over several rounds.
    for _ in 0..5 {
        let s = wait("planned", &|s| s.cleanable_bytes > 0);
        assert_eq!((s.last_pass.is_some(), s.in_progress), (false, false));
    }
    // One resume of two: still paused.
    handle.resume("t", 0);
    let s = wait("planned", &|s| s.cleanable_bytes > 0);
    assert!(s.last_pass.is_none());
    handle.resume("t", 0);
    let s = wait("cleaned once resumed", &|s| s.last_pass.is_some());
    assert_eq!(s.first_dirty_offset, leo);
    pool.stop();
}

#[test]
fn pool_removes_tombstones_on_an_idle_log_when_the_horizon_passes() {
    let root = tempfile::tempdir().unwrap();
    let (log_dir, _) = LogDir::open(root.path()).unwrap();
    let log_dir = Arc::new(log_dir);
    let clock = Arc::new(skiff_log::SystemClock);
    let mut config = compact_config(1 << 20, 300);
    config.min_cleanable_dirty_ratio = 0.5;
    let log = Arc::new(
        Log::open(
            &log_dir.partition_dir("t", 0),
            config,
            clock.clone(),
            skiff_log::Recovery::Clean,
        )
        .unwrap(),
    );
    let now = skiff_log::Clock::now_ms(&skiff_log::SystemClock);
    let append = |ts: i64, k: &[u8], v: Option<&[u8]>| {
        let mut b = skiff_records::BatchBuilder::new(0, Compression::None);
        b.push(ts, Some(k), v, &[]);
        log.append(
            &b.build().unwrap(),
            0,
            &skiff_log::AppendValidation { now_ms: now },
        )
        .unwrap();
    };
    append(now, b"k", Some(b"v"));
    append(now, b"k", None);
    append(now + 20_000, b"~roll", Some(b"r")); // rolls: record time passed segment.ms
    let pool = CleanerPool::start(
        CleanerConfig {
            backoff_ms: 60_000,
            ..CleanerConfig::default()
        },
        Arc::new(OneLog("t".into(), log.clone())),
        log_dir,
        clock,
    );
    pool.wake();
    // First pass (ratio 1 > 0.5) keeps and stamps the tombstone; nothing else is written, the
    // ratio is then 0, and the backoff is a minute: only the horizon can trigger pass two.
    let deadline = Instant::now() + Duration::from_secs(20);
    let keys = || {
        let info = log.read(0, 1 << 20, true).unwrap();
        skiff_records::Batches::new(&info.records)
            .flat_map(|b| skiff_records::records(b.unwrap().1, 1 << 20).unwrap())
            .map(|r| (r.key.unwrap().to_vec(), r.value.map(|v| v.to_vec())))
            .collect::<Vec<_>>()
    };
    loop {
        let s = pool.status("t", 0);
        if s.as_ref()
            .and_then(|s| s.last_pass.as_ref())
            .is_some_and(|p| p.tombstones_removed == 1)
        {
            break;
        }
        assert!(Instant::now() < deadline, "tombstone not removed: {s:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(keys(), vec![(b"~roll".to_vec(), Some(b"r".to_vec()))]);
    let s = pool.status("t", 0).unwrap();
    assert_eq!(s.next_delete_horizon_ms, None);
    pool.stop();
}

#[test]
fn aborted_data_removed_committed_kept_and_open_transactions_not_cleaned() {
    let t = TestLog::new(compact_config(1 << 20, 60_000));
    t.produce(&[(b"a", Some(b"plain"))], Compression::None); // 0
    txn_append(&t, 5, 0, b"a", b"aborted"); // 1
    marker(&t, 5, skiff_log::ControlType::Abort); // 2
    txn_append(&t, 6, 0, b"b", b"committed"); // 3
    marker(&t, 6, skiff_log::ControlType::Commit); // 4
    t.roll();
    let open = txn_append(&t, 7, 0, b"c", b"open"); // 5, undecided
    t.produce(&[(b"a", Some(b"after-open"))], Compression::None); // 6
    t.roll();
    assert_eq!(t.log().last_stable_offset(), open);
    let stats = t.clean(None, MAP);
    assert_eq!(stats.first_uncleanable_offset, open, "never past the LSO");
    let (headers, recs) = t.read_all();
    let data: Vec<(i64, Vec<u8>)> = recs
        .iter()
        .filter_map(|r| {
            let h = headers
                .iter()
                .find(|h| h.base_offset <= r.offset && r.offset <= h.last_offset())
                .unwrap();
            (!h.is_control()).then(|| (r.offset, r.value.clone().unwrap()))
        })
        .collect();
    assert_eq!(
        data,
        vec![
            (0, b"plain".to_vec()),
            (3, b"committed".to_vec()),
            (5, b"open".to_vec()),
            (6, b"after-open".to_vec()),
        ],
        "the aborted value is gone and did not shadow the committed one before it"
    );
    // Both markers stay, so the transaction index keeps matching the log.
    assert_eq!(headers.iter().filter(|h| h.is_control()).count(), 2);
    // The aborted batch is producer 5's last data batch in its producer state: its records
    // went, its header stays (§2.8, §2.9; Kafka keeps the producer's last data batch, not its
    // marker).
    let p5: Vec<(i64, bool, i32)> = headers
        .iter()
        .filter(|h| h.producer_id == 5)
        .map(|h| (h.base_offset, h.is_control(), h.record_count))
        .collect();
    assert_eq!(p5, vec![(1, false, 0), (2, true, 1)]);
}

#[test]
fn markers_get_a_horizon_once_their_data_is_gone_then_go_with_their_index_entries() {
    use skiff_log::ControlType::{Abort, Commit};
    let mut t = TestLog::new(compact_config(1 << 20, 60_000));
    txn_append(&t, 5, 0, b"a", b"aborted"); // 0
    marker(&t, 5, Abort); // 1
    txn_append(&t, 6, 0, b"b", b"committed"); // 2
    marker(&t, 6, Commit); // 3
    t.produce(&[(b"b", Some(b"newer"))], Compression::None); // 4
    t.roll();
    txn_append(&t, 5, 1, b"c", b"later"); // 5
    marker(&t, 5, Commit); // 6
    t.roll();
    let control_at = |t: &TestLog| -> Vec<(i64, i32, bool)> {
        t.read_all()
            .0
            .iter()
            .filter(|h| h.is_control())
            .map(|h| (h.base_offset, h.record_count, h.has_delete_horizon()))
            .collect()
    };
    assert_eq!(t.log().aborted_transactions(0, 100), vec![(5, 0)]);

    // Pass 1 removes the aborted data and the shadowed committed value; the markers met
    // their transactions' data in this pass, so they stay untouched.
    t.clean(None, MAP);
    assert_eq!(
        control_at(&t),
        vec![(1, 1, false), (3, 1, false), (6, 1, false)]
    );
    // Pass 2: the ABORT marker has no data left: it gets a delete horizon. Producer 6's
    // committed batch lost its record but is its last data batch, so its header stays
    // (§2.9), and with it the COMMIT marker's transaction still has a batch: kept as is.
    let stats = t.clean(None, MAP);
    assert_eq!(
        control_at(&t),
        vec![(1, 1, true), (3, 1, false), (6, 1, false)]
    );
    let empty_at = |t: &TestLog| -> Vec<i64> {
        t.read_all()
            .0
            .iter()
            .filter(|h| !h.is_control() && h.record_count == 0)
            .map(|h| h.base_offset)
            .collect()
    };
    assert_eq!(empty_at(&t), vec![2]);
    assert!(stats.next_delete_horizon_ms.is_some());
    assert_eq!(t.log().aborted_transactions(0, 100), vec![(5, 0)]);
    // Pass 3 after the horizon: the ABORT marker goes with its index entry.
    t.clock.advance(60_001);
    t.clean(None, MAP);
    assert_eq!(control_at(&t), vec![(3, 1, false), (6, 1, false)]);
    assert!(t.log().aborted_transactions(0, 100).is_empty());
    // Nothing comes back after a restart (files were rewritten before the swap).
    t.reopen(true);
    assert!(t.log().aborted_transactions(0, 100).is_empty());
    t.reopen(false);
    assert!(t.log().aborted_transactions(0, 100).is_empty());
    // Producer 5 keeps its state through the COMMIT marker it still has.
    assert!(t
        .log()
        .producer_entries()
        .iter()
        .any(|e| e.producer_id == 5));

    // Once the producers expire (producer.id.expiration.ms), nothing protects producer 6's
    // empty batch: it goes, then its COMMIT marker has no data left, gets a horizon and goes.
    t.clock.advance(1);
    assert_eq!(t.log().remove_expired_producers(1), 2);
    t.clean(None, MAP);
    assert_eq!(empty_at(&t), Vec::<i64>::new());
    assert_eq!(control_at(&t), vec![(3, 1, false), (6, 1, false)]);
    t.clean(None, MAP);
    assert_eq!(control_at(&t), vec![(3, 1, true), (6, 1, false)]);
    t.clock.advance(60_001);
    t.clean(None, MAP);
    assert_eq!(control_at(&t), vec![(6, 1, false)]);
}

/// Inode of every segment's `.log` file by base offset.
fn segment_inodes(t: &TestLog) -> BTreeMap<i64, u64> {
    use std::os::unix::fs::MetadataExt;
    t.log()
        .cleaner_view()
        .segments
        .iter()
        .map(|s| {
            let path = t.path().join(format!("{:020}.log", s.base_offset));
            (s.base_offset, std::fs::metadata(path).unwrap().ino())
        })
        .collect()
}

#[test]
fn segments_the_pass_would_not_change_are_not_rewritten() {
    // Each segment is over half of segment.bytes, so no two share a group.
    let t = TestLog::new(compact_config(4096, 60_000));
    let value = vec![b'v'; 250];
    let mut produced = Vec::new();
    for prefix in ["a", "b"] {
        for i in 0..10 {
            let key = format!("{prefix}{i}");
            produced.extend(t.produce(&[(key.as_bytes(), Some(&value))], Compression::None));
        }
        t.roll();
    }
    let before = segment_inodes(&t);
    // Every key is unique: nothing changes, nothing is written.
    let first = t.clean(None, MAP);
    assert_eq!(first.end_offset, 20);
    assert_eq!((first.segments_rewritten, first.segments_unchanged), (0, 2));
    assert_eq!((first.bytes_before, first.bytes_written), (0, 0));
    assert_eq!(segment_inodes(&t), before);
    assert_eq!(t.read_all().1, produced);

    // A new value of a5 (in a segment of new keys as large) changes only the first segment,
    // from its sixth batch: the five before are copied as they were.
    let mut update = t.produce(&[(b"a5", Some(&value))], Compression::None);
    for i in 0..9 {
        let key = format!("c{i}");
        update.extend(t.produce(&[(key.as_bytes(), Some(&value))], Compression::None));
    }
    t.roll();
    let second = t.clean(Some(first.end_offset), MAP);
    assert_eq!(second.end_offset, 30);
    // The segment of b keys is clean and its summary (made by the first pass) holds none of
    // the map's keys: it is not even read. The dirty segment of c keys is read, unchanged.
    assert_eq!(
        (
            second.segments_rewritten,
            second.segments_unchanged,
            second.segments_skipped
        ),
        (1, 1, 1)
    );
    let after = segment_inodes(&t);
    assert_ne!(
        after[&0], before[&0],
        "the segment holding a5 was rewritten"
    );
    assert_eq!(
        after[&10], before[&10],
        "the segment of b keys was left alone"
    );
    assert!(second.bytes_written < second.bytes_before);
    let mut expected = produced.clone();
    expected.remove(5);
    expected.extend(update);
    assert_eq!(t.read_all().1, expected);
}
