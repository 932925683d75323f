//! The archive model test (docs/compaction.md §5.11): random produce / tombstone / roll /
//! clock / clean / crashed clean / reopen sequences on a real log with tiny segments and a
//! tiny dedupe map (partial passes), with an archive log beside it. A crashed clean stops the
//! pass at a random archiving step and group, then both logs are dropped and recovered from
//! their files, as after `kill -9`. Checked after every step:
//! - nothing is lost: every record produced is in the log or in the archive;
//! - once no pass is unfinished (no intent left): no record is in both, none is archived twice, each archived
//!   record is exactly the one produced (key, value, headers, timestamp), and each key's
//!   archived records are in offset order.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use common::{compact_config, Bounded, Rec, TestLog};
use proptest::prelude::*;
use skiff_cleaner::archive::{HEADER_SOURCE_OFFSET, INTENT_FILE};
use skiff_cleaner::fault::{clear_archive_crashes, crash_archive_pass_at, ArchiveStep};
use skiff_cleaner::LogArchive;
use skiff_log::{Log, LogConfig, Recovery};
use skiff_records::{records, Batches, Compression};

const DELETE_RETENTION_MS: i64 = 2_000;
const KEYS: [&[u8]; 4] = [b"", b"a", b"b", b"\0"];
const STEPS: [ArchiveStep; 3] = [
    ArchiveStep::AfterAppend,
    ArchiveStep::AfterSync,
    ArchiveStep::AfterSwap,
];

#[derive(Clone, Debug)]
enum Op {
    /// Records: (key index, value byte or tombstone); compressed or not.
    Produce(Vec<(usize, Option<u8>)>, bool),
    Roll,
    Advance(i64),
    /// A pass with a map of this many slots, stopping after the group in which it archived
    /// `.1` records (the per-pass bound).
    Clean(u64, u64),
    /// A pass stopped at archiving step `.1` of its group `.2`, then a crash; bound `.3`.
    CrashClean(u64, usize, u32, u64),
    Reopen(bool),
}

fn bound() -> impl Strategy<Value = u64> {
    prop_oneof![2 => Just(1u64 << 20), 1 => 1u64..4]
}

fn op() -> impl Strategy<Value = Op> {
    let val = prop_oneof![3 => any::<u8>().prop_map(Some), 1 => Just(None)];
    prop_oneof![
        6 => (prop::collection::vec((0..KEYS.len(), val), 1..4), any::<bool>())
            .prop_map(|(r, c)| Op::Produce(r, c)),
        2 => Just(Op::Roll),
        2 => (0i64..3_000).prop_map(Op::Advance),
        3 => (2u64..8, bound()).prop_map(|(s, b)| Op::Clean(s, b)),
        3 => (2u64..8, 0..STEPS.len(), 0u32..3, bound())
            .prop_map(|(s, st, n, b)| Op::CrashClean(s, st, n, b)),
        1 => any::<bool>().prop_map(Op::Reopen),
    ]
}

struct World {
    /// The source topic's name: faults are armed per name, and tests run in parallel.
    topic: &'static str,
    t: TestLog,
    archive_dir: tempfile::TempDir,
    archive: Arc<Log>,
    history: Vec<Rec>,
    checkpoint: Option<i64>,
}

impl World {
    fn new(topic: &'static str) -> World {
        let t = TestLog::new(compact_config(300, DELETE_RETENTION_MS));
        let archive_dir = tempfile::tempdir().unwrap();
        let archive = open_archive(&t, &archive_dir, true);
        World {
            topic,
            t,
            archive_dir,
            archive,
            history: Vec::new(),
            checkpoint: None,
        }
    }

    fn intent_pending(&self) -> bool {
        self.t.path().join(INTENT_FILE).exists()
    }

    fn sink(&self) -> LogArchive {
        LogArchive {
            topic: "history".into(),
            partition: 0,
            log: self.archive.clone(),
            on_sync: None,
        }
    }

    fn clean(&mut self, slots: u64, bound: u64) -> skiff_cleaner::Result<()> {
        let sink = Bounded(self.sink(), bound);
        let s = self.t.try_clean_archiving(
            self.topic,
            self.checkpoint,
            48 * slots,
            &AtomicBool::new(false),
            Some(&sink),
        )?;
        self.checkpoint = Some(s.end_offset);
        Ok(())
    }

    /// (source offset, record) of every archived record, in archive order.
    fn archived(&self) -> Vec<(i64, Rec)> {
        let log = &self.archive;
        let mut out = Vec::new();
        let mut at = log.log_start_offset();
        while at < log.log_end_offset() {
            let info = log.read(at, 1 << 20, true).unwrap();
            for item in Batches::new(&info.records) {
                let (h, bytes) = item.unwrap();
                for r in records(bytes, 1 << 26).unwrap() {
                    let mut offset = None;
                    let mut headers = Vec::new();
                    for (k, v) in r.headers {
                        if k.as_ref() == HEADER_SOURCE_OFFSET.as_bytes() {
                            let v = String::from_utf8(v.unwrap().to_vec()).unwrap();
                            offset = Some(v.parse::<i64>().unwrap());
                        } else if !k.starts_with(b"skiff.") {
                            headers.push((k.to_vec(), v.map(|v| v.to_vec())));
                        }
                    }
                    let offset = offset.unwrap();
                    out.push((
                        offset,
                        Rec {
                            offset,
                            timestamp: h.base_timestamp + r.timestamp_delta,
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

    /// Nothing lost; with `exact`, also nothing twice and per-key order.
    fn check(&self, exact: bool) {
        let archived = self.archived();
        let live = self.t.read_all().1;
        let mut covered = BTreeSet::new();
        for (o, r) in &archived {
            assert_eq!(
                r, &self.history[*o as usize],
                "archived record at {o} differs"
            );
            let fresh = covered.insert(*o);
            assert!(fresh || !exact, "offset {o} archived twice");
        }
        for r in &live {
            assert_eq!(r, &self.history[r.offset as usize]);
            let fresh = covered.insert(r.offset);
            assert!(
                fresh || !exact,
                "offset {} both live and archived",
                r.offset
            );
        }
        assert_eq!(covered.len(), self.history.len(), "records lost");
        if exact {
            let mut last: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
            for (o, r) in &archived {
                if let Some(prev) = last.insert(r.key.clone().unwrap(), *o) {
                    assert!(prev < *o, "key order broken at {o}");
                }
            }
        }
    }
}

fn open_archive(t: &TestLog, dir: &tempfile::TempDir, clean: bool) -> Arc<Log> {
    let recovery = if clean {
        Recovery::Clean
    } else {
        Recovery::FromOffset(0)
    };
    Arc::new(
        Log::open(
            &dir.path().join("history-0"),
            LogConfig::default(),
            t.clock.clone(),
            recovery,
        )
        .unwrap(),
    )
}

/// Applies `op`; whether the state is now exact (no pass was left unfinished).
fn apply(w: &mut World, op: &Op, exact: bool) -> bool {
    match op {
        Op::Produce(recs, compressed) => {
            let values: Vec<Option<Vec<u8>>> = recs
                .iter()
                .map(|(_, v)| v.map(|b| vec![b; 1 + b as usize % 5]))
                .collect();
            let refs: Vec<(&[u8], Option<&[u8]>)> = recs
                .iter()
                .zip(&values)
                .map(|((k, _), v)| (KEYS[*k], v.as_deref()))
                .collect();
            let codec = if *compressed {
                Compression::Lz4
            } else {
                Compression::None
            };
            let out = w.t.produce(&refs, codec);
            w.history.extend(out);
            exact
        }
        Op::Roll => {
            w.t.roll();
            exact
        }
        Op::Advance(ms) => {
            w.t.clock.advance(*ms);
            exact
        }
        Op::Reopen(clean) => {
            w.t.reopen(*clean);
            exact
        }
        Op::Clean(slots, bound) => {
            w.clean(*slots, *bound).unwrap();
            // Exact once no pass is left unfinished (a bounded pass may keep the intent).
            !w.intent_pending()
        }
        Op::CrashClean(slots, step, nth, bound) => {
            crash_archive_pass_at(w.topic, STEPS[*step], *nth);
            let r = w.clean(*slots, *bound);
            clear_archive_crashes(w.topic);
            match r {
                Ok(()) => !w.intent_pending(),
                Err(e) => {
                    assert!(e.to_string().contains("injected crash"), "{e}");
                    w.t.reopen(false);
                    w.archive = open_archive(&w.t, &w.archive_dir, false);
                    false
                }
            }
        }
    }
}

fn run(topic: &'static str, ops: &[Op]) {
    let mut w = World::new(topic);
    let mut exact = true;
    for op in ops {
        exact = apply(&mut w, op, exact);
        w.check(exact);
    }
    // Finally a pass that finishes makes the state exact again.
    w.t.roll();
    for _ in 0..200 {
        let sink = w.sink();
        let s =
            w.t.try_clean_archiving(
                w.topic,
                w.checkpoint,
                48 * 8,
                &AtomicBool::new(false),
                Some(&sink),
            )
            .unwrap();
        w.checkpoint = Some(s.end_offset);
        if !s.partial && !w.intent_pending() {
            break;
        }
    }
    w.check(true);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn archive_matches_history(ops in prop::collection::vec(op(), 1..50)) {
        run("archive-model", &ops);
    }
}

fn p(k: usize, v: u8, compressed: bool) -> Op {
    Op::Produce(vec![(k, Some(v))], compressed)
}

/// The rerun had a smaller map than the stopped pass, so its range ended before records the
/// stopped pass had archived: they must still leave the log, and only once.
#[test]
fn regression_rerun_with_a_smaller_map_than_the_stopped_pass() {
    run(
        "archive-model-r1",
        &[
            p(0, 0, true),
            Op::Produce(vec![(0, Some(0)), (0, Some(0))], true),
            p(1, 0, true),
            Op::Produce(vec![(1, Some(0)), (1, Some(0)), (1, Some(0))], false),
            p(0, 0, true),
            Op::CrashClean(3, 0, 1, 1 << 20),
            Op::Clean(2, 1 << 20),
        ],
    );
}
