//! The compaction model test: random produce / tombstone / roll / clock / clean / reopen
//! sequences on a real log with tiny segments and a tiny dedupe map (so passes are partial),
//! checked after every step against the full history of what was produced:
//! - offsets and order never change; every surviving record is exactly the one produced there;
//! - the log end offset is untouched by cleaning and reopening;
//! - reading from 0 yields every key's latest value; a latest tombstone stays readable until a
//!   pass starting at or after its horizon (`T_first + delete.retention.ms`, stamped by the
//!   first pass that kept it and never changed), and is gone after such a pass covers it;
//! - right after a pass, keys below its end offset are unique.
//!
//! Shrunk failures are kept below as named regression tests.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};

use common::{compact_config, Rec, TestLog};
use proptest::prelude::*;
use skiff_records::{BatchHeader, Compression};

const DELETE_RETENTION_MS: i64 = 2_000;
const KEYS: [&[u8]; 6] = [b"", b"a", b"b", b"c", b"\0", b"a "];

#[derive(Clone, Debug)]
enum Val {
    Bytes(u8),
    Empty,
    Tombstone,
}

#[derive(Clone, Debug)]
enum Op {
    Produce(Vec<(usize, Val)>, bool),
    Roll,
    Advance(i64),
    /// A pass with a map of this many slots.
    Clean(u64),
    Reopen(bool),
}

fn op() -> impl Strategy<Value = Op> {
    let val = prop_oneof![
        4 => any::<u8>().prop_map(Val::Bytes),
        1 => Just(Val::Empty),
        2 => Just(Val::Tombstone),
    ];
    prop_oneof![
        6 => (prop::collection::vec((0..KEYS.len(), val), 1..4), any::<bool>())
            .prop_map(|(r, c)| Op::Produce(r, c)),
        2 => Just(Op::Roll),
        2 => (0i64..3_000).prop_map(Op::Advance),
        3 => (2u64..8).prop_map(Op::Clean),
        1 => any::<bool>().prop_map(Op::Reopen),
    ]
}

struct Model {
    history: Vec<Rec>,
    /// Latest offset per key.
    latest: HashMap<Vec<u8>, i64>,
    /// The cleaner checkpoint (first dirty offset), as the pool would keep it.
    checkpoint: Option<i64>,
    /// Horizon of each tombstone once stamped.
    horizon: HashMap<i64, i64>,
    /// Tombstones a pass at or after their horizon has run over: they may be gone.
    removable: HashSet<i64>,
}

impl Model {
    fn new() -> Model {
        Model {
            history: Vec::new(),
            latest: HashMap::new(),
            checkpoint: None,
            horizon: HashMap::new(),
            removable: HashSet::new(),
        }
    }
}

/// Every record with the header of its batch.
fn with_headers(headers: &[BatchHeader], recs: &[Rec]) -> Vec<(BatchHeader, Rec)> {
    let mut out = Vec::new();
    let mut hi = 0;
    for r in recs {
        while headers[hi].last_offset() < r.offset {
            hi += 1;
        }
        assert!(headers[hi].base_offset <= r.offset);
        out.push((headers[hi], r.clone()));
    }
    out
}

/// The invariants that hold after any step. Returns the records read.
fn check(t: &TestLog, m: &Model) -> Vec<(BatchHeader, Rec)> {
    let log = t.log();
    assert_eq!(log.log_end_offset(), m.history.len() as i64, "LEO");
    assert_eq!(log.log_start_offset(), 0);
    let (headers, recs) = t.read_all();
    let mut prev = -1;
    for h in &headers {
        assert!(h.base_offset > prev, "batches out of order");
        prev = h.last_offset();
    }
    let mut prev = -1;
    for r in &recs {
        assert!(r.offset > prev, "offsets not increasing at {}", r.offset);
        prev = r.offset;
        assert_eq!(
            r, &m.history[r.offset as usize],
            "record at {} changed",
            r.offset
        );
    }
    let present: HashSet<i64> = recs.iter().map(|r| r.offset).collect();
    for (key, &o) in &m.latest {
        let rec = &m.history[o as usize];
        if rec.value.is_some() {
            assert!(present.contains(&o), "latest value of {key:?} at {o} lost");
        } else if !present.contains(&o) {
            assert!(
                m.removable.contains(&o),
                "tombstone of {key:?} at {o} removed before its horizon ({:?})",
                m.horizon.get(&o)
            );
        }
    }
    let both = with_headers(&headers, &recs);
    for (h, r) in &both {
        if r.value.is_none() && h.has_delete_horizon() {
            if let Some(&known) = m.horizon.get(&r.offset) {
                assert_eq!(known, h.base_timestamp, "horizon of {} restamped", r.offset);
            }
        }
    }
    both
}

fn apply(t: &mut TestLog, m: &mut Model, op: &Op) {
    match op {
        Op::Produce(recs, compressed) => {
            let recs: Vec<(&[u8], Option<Vec<u8>>)> = recs
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Val::Bytes(b) => Some(vec![*b; 1 + (*b as usize % 7)]),
                        Val::Empty => Some(Vec::new()),
                        Val::Tombstone => None,
                    };
                    (KEYS[*k], v)
                })
                .collect();
            let refs: Vec<(&[u8], Option<&[u8]>)> =
                recs.iter().map(|(k, v)| (*k, v.as_deref())).collect();
            let codec = if *compressed {
                Compression::Lz4
            } else {
                Compression::None
            };
            for r in t.produce(&refs, codec) {
                assert_eq!(r.offset, m.history.len() as i64);
                m.latest.insert(r.key.clone().unwrap(), r.offset);
                m.history.push(r);
            }
        }
        Op::Roll => t.roll(),
        Op::Advance(ms) => t.clock.advance(*ms),
        Op::Reopen(clean) => t.reopen(*clean),
        Op::Clean(slots) => clean(t, m, *slots),
    }
}

fn clean(t: &mut TestLog, m: &mut Model, slots: u64) {
    let now = t.now();
    let view = t.log().cleaner_view();
    // Passes at or after a horizon may remove that tombstone.
    for (&o, &h) in &m.horizon {
        if h <= now {
            m.removable.insert(o);
        }
    }
    let before: BTreeMap<i64, i64> = m
        .horizon
        .iter()
        .filter(|(_, &h)| h <= now)
        .map(|(&o, &h)| (o, h))
        .collect();
    let known_before = m.horizon.clone();
    let stats = t.clean(m.checkpoint, 48 * slots);
    assert_eq!(stats.start_ms, now);
    let first_dirty = stats.first_dirty_offset;
    assert!(stats.end_offset >= first_dirty && stats.end_offset <= stats.first_uncleanable_offset);
    m.checkpoint = Some(stats.end_offset);
    // Everything below the first segment not rewritten went through the filter.
    let rewritten_below = view
        .segments
        .iter()
        .find(|s| s.is_active || s.base_offset >= stats.end_offset)
        .map(|s| s.base_offset)
        .unwrap_or(0);

    let both = check(t, m);
    for (h, r) in &both {
        if r.value.is_some() {
            continue;
        }
        if r.offset < rewritten_below {
            assert!(
                h.has_delete_horizon(),
                "kept tombstone at {} not stamped",
                r.offset
            );
        }
        if h.has_delete_horizon() {
            match known_before.get(&r.offset) {
                Some(&k) => assert_eq!(k, h.base_timestamp, "horizon of {} changed", r.offset),
                None => assert_eq!(
                    h.base_timestamp,
                    now + DELETE_RETENTION_MS,
                    "new horizon of {} is not T + delete.retention.ms",
                    r.offset
                ),
            }
            m.horizon.insert(r.offset, h.base_timestamp);
        }
    }
    // Expired tombstones the map covered are gone.
    let present: HashSet<i64> = both.iter().map(|(_, r)| r.offset).collect();
    for &o in before.keys() {
        if o < stats.end_offset {
            assert!(
                !present.contains(&o),
                "expired tombstone at {o} survived a covering pass"
            );
        }
    }
    // Keys below the end offset are unique.
    let mut seen = HashSet::new();
    for (_, r) in both.iter().filter(|(_, r)| r.offset < stats.end_offset) {
        assert!(
            seen.insert(r.key.clone()),
            "duplicate key {:?} below {}",
            r.key,
            stats.end_offset
        );
    }
}

fn run(ops: &[Op]) {
    let mut t = TestLog::new(compact_config(300, DELETE_RETENTION_MS));
    let mut m = Model::new();
    for op in ops {
        apply(&mut t, &mut m, op);
        check(&t, &m);
    }
    // Finally: everything settles. Roll, then clean until nothing is partial.
    t.roll();
    for _ in 0..200 {
        let s = t.clean(m.checkpoint, 48 * 8);
        m.checkpoint = Some(s.end_offset);
        if !s.partial {
            break;
        }
    }
    let recs = t.read_all().1;
    let mut keys = HashSet::new();
    for r in &recs {
        assert!(keys.insert(r.key.clone()), "duplicate key after settling");
        assert_eq!(
            m.latest.get(r.key.as_ref().unwrap()),
            Some(&r.offset),
            "not the latest"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn compaction_matches_model(ops in prop::collection::vec(op(), 1..60)) {
        run(&ops);
    }
}

fn p(k: usize, v: Val) -> Op {
    Op::Produce(vec![(k, v)], false)
}

#[test]
fn regression_tombstone_stamped_then_expired_across_reopen() {
    run(&[
        p(1, Val::Bytes(1)),
        p(1, Val::Tombstone),
        Op::Roll,
        Op::Clean(4),
        Op::Reopen(false),
        Op::Advance(2_000),
        Op::Clean(4),
        p(1, Val::Bytes(2)),
    ]);
}

#[test]
fn regression_partial_pass_over_empty_keys_and_values() {
    run(&[
        p(0, Val::Empty),
        p(4, Val::Empty),
        p(0, Val::Tombstone),
        p(5, Val::Bytes(9)),
        Op::Roll,
        Op::Clean(2),
        Op::Clean(2),
        Op::Advance(2_500),
        Op::Clean(2),
        Op::Reopen(true),
        Op::Clean(3),
    ]);
}
