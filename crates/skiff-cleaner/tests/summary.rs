//! Segment summaries (docs/compaction.md §5.3): a pass leaves a clean segment unread only when
//! the filter would have copied it as it is. Every test runs *twins*: the same steps on two
//! logs, one whose passes use summaries and one whose passes read every segment (as before
//! summaries existed), and checks that their segment files stay byte for byte the same while
//! the first reads less. A proptest does the same over random steps, transactions and
//! producer expiry included.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use common::{compact_config, marker, txn_append, TestLog};
use proptest::prelude::*;
use skiff_cleaner::PassStats;
use skiff_log::LogConfig;
use skiff_records::Compression;

const MAP: u64 = 1 << 20;
const RETENTION: i64 = 60_000;

/// One log cleaned with summaries, one without.
struct Twins {
    with: TestLog,
    without: TestLog,
    checkpoint: Option<i64>,
    /// Next sequence of the transactional producer.
    seq: i32,
}

impl Twins {
    fn new(config: LogConfig) -> Twins {
        let with = TestLog::new(config.clone());
        let mut without = TestLog::new(config);
        without.summaries = None;
        Twins {
            with,
            without,
            checkpoint: None,
            seq: 0,
        }
    }

    fn both(&mut self, f: impl Fn(&mut TestLog)) {
        f(&mut self.with);
        f(&mut self.without);
    }

    fn produce(&mut self, key: &str, value: Option<&str>) {
        self.both(|t| {
            t.produce(
                &[(key.as_bytes(), value.map(str::as_bytes))],
                Compression::None,
            );
        });
    }

    /// A pass on both from the shared checkpoint: the logs must stay identical, and the
    /// figures must only differ by what was skipped. Returns the summarized twin's figures.
    fn clean(&mut self, map: u64) -> PassStats {
        let a = self.with.clean(self.checkpoint, map);
        let b = self.without.clean(self.checkpoint, map);
        assert_eq!(b.segments_skipped, 0);
        assert_eq!(a.end_offset, b.end_offset);
        assert_eq!(
            (
                a.segments_rewritten,
                a.groups,
                a.bytes_written,
                a.bytes_before
            ),
            (
                b.segments_rewritten,
                b.groups,
                b.bytes_written,
                b.bytes_before
            )
        );
        assert_eq!(
            a.segments_unchanged + a.segments_skipped,
            b.segments_unchanged
        );
        assert_eq!(a.bytes_read + a.bytes_skipped, b.bytes_read, "{a:?}\n{b:?}");
        assert_eq!(a.tombstones_removed, b.tombstones_removed);
        assert_eq!(a.next_delete_horizon_ms, b.next_delete_horizon_ms);
        assert_eq!(segment_files(&self.with), segment_files(&self.without));
        self.checkpoint = Some(a.end_offset);
        a
    }
}

/// Every `.log` file of the log's directory and its bytes.
fn segment_files(t: &TestLog) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Bytes of the sealed segments wholly within `[from, to)`.
fn sealed_bytes(t: &TestLog, from: i64, to: i64) -> u64 {
    t.log()
        .cleaner_view()
        .segments
        .iter()
        .filter(|s| !s.is_active && s.base_offset >= from && s.next_offset <= to)
        .map(|s| s.size)
        .sum()
}

/// Segments of 40 cold keys each (each over half of segment.bytes, so no two are merged),
/// then `passes` passes that each follow new values of two hot keys. The small hot segments
/// are merged into the last cold segment by every pass (`group_segments`), so that one is
/// rewritten each time; the cold segments before it are the ones a summary can skip.
fn cold_then_hot(t: &mut Twins, cold_segments: usize, passes: usize) -> Vec<PassStats> {
    let value = "v".repeat(100);
    for s in 0..cold_segments {
        for k in 0..40 {
            t.produce(&format!("cold-{s}-{k}"), Some(&value));
        }
        t.both(|t| t.roll());
    }
    let mut stats = Vec::new();
    for round in 0..passes {
        for hot in ["hot-a", "hot-b"] {
            t.produce(hot, Some(&format!("{round}")));
        }
        t.both(|t| t.roll());
        stats.push(t.clean(MAP));
    }
    stats
}

#[test]
fn clean_segments_without_a_dirty_key_are_not_read() {
    let mut t = Twins::new(compact_config(8 << 10, RETENTION));
    let stats = cold_then_hot(&mut t, 4, 4);
    // Pass 1 reads everything (no summaries yet); from pass 2 on, the first three cold
    // segments are skipped unread (the fourth is merged with the hot ones after it).
    assert_eq!(stats[0].segments_skipped, 0);
    let cold = sealed_bytes(&t.with, 0, 120);
    assert!(cold > 3 * 4096);
    for s in &stats[1..] {
        assert_eq!(s.segments_skipped, 3, "{s:?}");
        assert_eq!(s.bytes_skipped, cold);
        assert!(s.bytes_read < cold, "{s:?}");
    }
    // The hot keys' latest values survive, once each.
    let recs = t.with.read_all().1;
    let hot: Vec<_> = recs
        .iter()
        .filter(|r| r.key.as_deref().is_some_and(|k| k.starts_with(b"hot")))
        .map(|r| r.value.clone().unwrap())
        .collect();
    assert_eq!(hot, vec![b"3".to_vec(), b"3".to_vec()]);
    assert_eq!(recs.len(), 4 * 40 + 2);
}

#[test]
fn a_clean_segment_holding_an_updated_key_is_read_and_cleaned() {
    let mut t = Twins::new(compact_config(8 << 10, RETENTION));
    cold_then_hot(&mut t, 4, 2);
    // A new value of a key of the third cold segment: the summary says "maybe", so that
    // segment is read and rewritten without its old value; the two before it stay unread.
    t.produce("cold-2-7", Some("new"));
    t.both(|t| t.roll());
    let s = t.clean(MAP);
    assert_eq!(s.segments_skipped, 2, "{s:?}");
    assert_eq!(s.bytes_skipped, sealed_bytes(&t.with, 0, 80));
    assert!(s.segments_rewritten >= 1);
    let recs = t.with.read_all().1;
    let of_key: Vec<_> = recs
        .iter()
        .filter(|r| r.key.as_deref() == Some(b"cold-2-7"))
        .map(|r| r.value.clone().unwrap())
        .collect();
    assert_eq!(of_key, vec![b"new".to_vec()]);
    // The rewritten segment got its summary as it was written: the next pass skips it too.
    t.produce("hot-a", Some("later"));
    t.both(|t| t.roll());
    let s = t.clean(MAP);
    assert_eq!(s.segments_skipped, 3, "{s:?}");
    assert_eq!(s.bytes_skipped, sealed_bytes(&t.with, 0, 120));
}

#[test]
fn tombstones_in_a_skipped_segment_still_go_after_their_horizon() {
    let mut t = Twins::new(compact_config(8 << 10, RETENTION));
    let value = "v".repeat(100);
    for k in 0..40 {
        t.produce(&format!("old-{k}"), Some(&value));
    }
    t.produce("old-3", None);
    t.produce("old-4", None);
    t.both(|t| t.roll());
    // A second cold segment takes the merge with the small hot segments that follow.
    for k in 0..40 {
        t.produce(&format!("cold-{k}"), Some(&value));
    }
    t.both(|t| t.roll());
    // Pass 1 removes the values the tombstones replaced and stamps their horizon.
    let first = t.clean(MAP);
    let horizon = first.next_delete_horizon_ms.unwrap();
    assert_eq!(horizon, t.with.now() + RETENTION);
    // Before the horizon the segment is skipped, and the horizon is still reported (§5.2).
    for round in 0..2 {
        t.produce("hot", Some(&format!("{round}")));
        t.both(|t| t.roll());
        let s = t.clean(MAP);
        assert_eq!(s.segments_skipped, 1, "{s:?}");
        assert_eq!(s.next_delete_horizon_ms, Some(horizon));
    }
    // At the horizon it is read again and the tombstones go.
    t.both(|t| t.clock.advance(RETENTION));
    t.produce("hot", Some("last"));
    t.both(|t| t.roll());
    let s = t.clean(MAP);
    assert_eq!(s.segments_skipped, 0, "{s:?}");
    assert_eq!(s.tombstones_removed, 2);
    assert!(t.with.read_all().1.iter().all(|r| r.value.is_some()));
}

#[test]
fn segments_with_transactions_are_never_skipped_and_markers_still_go() {
    let mut t = Twins::new(compact_config(8 << 10, 1_000));
    let value = "v".repeat(100);
    for k in 0..30 {
        t.produce(&format!("old-{k}"), Some(&value));
    }
    t.both(|t| {
        txn_append(t, 5, 0, b"txn-key", b"committed");
        marker(t, 5, skiff_log::ControlType::Commit);
        txn_append(t, 5, 1, b"txn-key", b"newer");
        marker(t, 5, skiff_log::ControlType::Commit);
        t.roll();
    });
    for round in 0..4 {
        t.produce("hot", Some(&format!("{round}")));
        t.both(|t| t.roll());
        let s = t.clean(MAP);
        assert_eq!(s.segments_skipped, 0, "{s:?}");
        t.both(|t| t.clock.advance(1_001));
    }
    // The first marker lost its data in pass 1, got a horizon in pass 2 and went after it.
    let controls = t
        .with
        .read_all()
        .0
        .iter()
        .filter(|h| h.is_control())
        .count();
    assert_eq!(controls, 1);
}

#[test]
fn a_reopened_log_is_read_again_before_its_segments_are_skipped() {
    let mut t = Twins::new(compact_config(8 << 10, RETENTION));
    cold_then_hot(&mut t, 3, 2);
    t.both(|t| t.reopen(true));
    // New segment objects: the old summaries match none of them.
    t.produce("hot-a", Some("x"));
    t.both(|t| t.roll());
    assert_eq!(t.clean(MAP).segments_skipped, 0);
    t.produce("hot-a", Some("y"));
    t.both(|t| t.roll());
    assert_eq!(t.clean(MAP).segments_skipped, 2);
}

#[derive(Clone, Debug)]
enum Op {
    /// Key index (0..3 hot, the rest cold) and a value (`None`: tombstone).
    Produce(usize, Option<u8>),
    /// Several cold keys in one batch.
    Fill(u8),
    Roll,
    Advance(i64),
    /// A transactional record of the key, committed or aborted.
    Txn(usize, bool),
    ExpireProducers,
    Clean(u64),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..12, prop::option::weighted(0.85, any::<u8>()))
            .prop_map(|(k, v)| Op::Produce(k, v)),
        2 => any::<u8>().prop_map(Op::Fill),
        3 => Just(Op::Roll),
        2 => (0i64..2_000).prop_map(Op::Advance),
        1 => (0usize..12, any::<bool>()).prop_map(|(k, c)| Op::Txn(k, c)),
        1 => Just(Op::ExpireProducers),
        4 => (4u64..64).prop_map(Op::Clean),
        1 => Just(Op::Reopen),
    ]
}

fn key(k: usize) -> String {
    format!("key-{k}")
}

fn apply(t: &mut Twins, op: &Op) {
    match op {
        Op::Produce(k, v) => {
            let value = v.map(|b| format!("{b:03}").repeat(1 + usize::from(b % 20)));
            t.produce(&key(*k), value.as_deref());
        }
        Op::Fill(seed) => {
            let keys: Vec<String> = (0..8)
                .map(|i| key(3 + (usize::from(*seed) + i) % 9))
                .collect();
            let value = [*seed; 40];
            t.both(|t| {
                let recs: Vec<(&[u8], Option<&[u8]>)> = keys
                    .iter()
                    .map(|k| (k.as_bytes(), Some(&value[..])))
                    .collect();
                t.produce(&recs, Compression::Lz4);
            });
        }
        Op::Roll => t.both(|t| t.roll()),
        Op::Advance(ms) => t.both(|t| t.clock.advance(*ms)),
        Op::Txn(k, commit) => {
            let seq = t.seq;
            t.seq += 1;
            let control = if *commit {
                skiff_log::ControlType::Commit
            } else {
                skiff_log::ControlType::Abort
            };
            t.both(|t| {
                txn_append(t, 9, seq, key(*k).as_bytes(), b"txn");
                marker(t, 9, control);
            });
        }
        Op::ExpireProducers => {
            t.both(|t| {
                t.log().remove_expired_producers(1_000);
            });
        }
        Op::Clean(slots) => {
            t.clean(48 * slots);
        }
        Op::Reopen => t.both(|t| t.reopen(true)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn passes_with_summaries_leave_the_log_as_passes_without(
        ops in prop::collection::vec(op(), 1..80)
    ) {
        let mut t = Twins::new(compact_config(1 << 10, 1_500));
        for op in &ops {
            apply(&mut t, op);
        }
        t.both(|t| t.roll());
        t.clean(48 * 64);
        t.clean(48 * 64);
    }
}
