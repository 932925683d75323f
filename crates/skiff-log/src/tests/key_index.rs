//! The key index (`key_index`, `log/key_index.rs`) against a model of the log's history:
//! random appends with tombstones and transactions, rolls, DeleteRecords, retention, a
//! compaction-like swap, a rebuild after reopen, and the memory budget.

use super::*;
use crate::{ControlType, KeyIndexBudget, KeyIndexPhase, KeyLookup};
use std::collections::HashMap;

/// A tiny deterministic generator (xorshift64*): reproducible failures, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A batch of (key, value) records; `pid >= 0` with `txn` makes it transactional.
fn keyed(pid: i64, seq: i32, txn: bool, recs: &[(String, Option<String>)]) -> Vec<u8> {
    keyed_with(Compression::None, pid, seq, txn, recs)
}

fn keyed_with(
    codec: Compression,
    pid: i64,
    seq: i32,
    txn: bool,
    recs: &[(String, Option<String>)],
) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, codec);
    if pid >= 0 {
        b = b
            .producer_id(pid)
            .producer_epoch(0)
            .base_sequence(seq)
            .transactional(txn);
    }
    for (i, (k, v)) in recs.iter().enumerate() {
        b.push(
            T0 + i as i64,
            Some(k.as_bytes()),
            v.as_deref().map(str::as_bytes),
            &[(b"h".as_slice(), Some(b"1".as_slice()))],
        );
    }
    b.build().unwrap()
}

fn compacted() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        ..config()
    }
}

fn budget() -> Arc<KeyIndexBudget> {
    Arc::new(KeyIndexBudget::new(64 << 20))
}

/// Enables the index and builds it to the end, as the broker's background builder does.
fn build(log: &Log, budget: &Arc<KeyIndexBudget>) {
    assert!(log.enable_key_index(budget));
    assert_eq!(log.lookup_key(b"any", true).unwrap(), KeyLookup::Loading);
    let mut steps = 0;
    // Small steps: a build is resumable at any batch.
    while !log.build_key_index(200).unwrap() {
        steps += 1;
        assert!(steps < 100_000);
    }
    assert_eq!(log.key_index_status().unwrap().phase, KeyIndexPhase::Ready);
}

/// (offset, value) the log should answer for `key`, or None.
fn found(log: &Log, key: &str, read_committed: bool) -> Option<(i64, String)> {
    match log.lookup_key(key.as_bytes(), read_committed).unwrap() {
        KeyLookup::Found(r) => {
            assert_eq!(r.key.as_ref(), key.as_bytes());
            Some((r.offset, String::from_utf8(r.value.to_vec()).unwrap()))
        }
        KeyLookup::NotFound => None,
        other => panic!("lookup of {key}: {other:?}"),
    }
}

/// The history: per key its committed records, and open transactions per producer.
#[derive(Default)]
struct Model {
    committed: HashMap<String, (i64, Option<String>)>,
    open: HashMap<i64, Vec<(String, i64, Option<String>)>>,
    log_start: i64,
}

impl Model {
    fn put(map: &mut HashMap<String, (i64, Option<String>)>, k: &str, o: i64, v: Option<String>) {
        let e = map.entry(k.to_string()).or_insert((o, v.clone()));
        if e.0 <= o {
            *e = (o, v);
        }
    }

    fn expect(&self, key: &str, read_committed: bool) -> Option<(i64, String)> {
        let mut best = self.committed.get(key).cloned();
        if !read_committed {
            for recs in self.open.values() {
                for (k, o, v) in recs {
                    if k == key && best.as_ref().is_none_or(|b| b.0 < *o) {
                        best = Some((*o, v.clone()));
                    }
                }
            }
        }
        best.filter(|b| b.0 >= self.log_start)
            .and_then(|(o, v)| v.map(|v| (o, v)))
    }
}

const KEYS: u64 = 40;

fn check_all(log: &Log, model: &Model) {
    for k in 0..KEYS {
        let key = format!("k{k}");
        for rc in [true, false] {
            assert_eq!(
                found(log, &key, rc),
                model.expect(&key, rc),
                "{key} rc={rc} committed={:?} open={:?} log_start={}",
                model.committed.get(&key),
                model.open,
                model.log_start
            );
        }
    }
}

/// Random appends, tombstones, transactions and DeleteRecords, checked after every step
/// against the model; then a reopen whose rebuilt index must answer exactly the same.
fn model_run(seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 700,
        ..compacted()
    };
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    let budget = budget();
    build(&log, &budget);
    let mut rng = Rng(seed);
    let mut model = Model::default();
    let mut seqs: HashMap<i64, i32> = HashMap::new();
    let mut value_n = 0;
    for _step in 0..300 {
        let op = rng.below(20);
        if op < 2 {
            // Close a transaction of producer 1 or 2.
            let pid = 1 + rng.below(2) as i64;
            if let Some(recs) = model.open.remove(&pid) {
                let commit = rng.below(2) == 0;
                let control = if commit {
                    ControlType::Commit
                } else {
                    ControlType::Abort
                };
                log.write_txn_marker(pid, 0, 0, control, 0, T0).unwrap();
                if commit {
                    for (k, o, v) in recs {
                        Model::put(&mut model.committed, &k, o, v);
                    }
                }
            }
        } else if op == 2 && rng.below(4) == 0 {
            // DeleteRecords somewhere in the recent past.
            let leo = log.log_end_offset();
            let to = (leo - rng.below(20) as i64).max(model.log_start);
            log.delete_records_before(to).unwrap();
            model.log_start = log.log_start_offset();
        } else {
            let txn_pid = if op < 6 { 1 + rng.below(2) as i64 } else { -1 };
            let n = 1 + rng.below(4) as usize;
            let recs: Vec<(String, Option<String>)> = (0..n)
                .map(|_| {
                    value_n += 1;
                    let v = (rng.below(5) != 0).then(|| format!("v{value_n}"));
                    (format!("k{}", rng.below(KEYS)), v)
                })
                .collect();
            let seq = seqs.entry(txn_pid).or_insert(0);
            // Compressed batches too: the index decodes what producers send.
            let codec =
                [Compression::None, Compression::Lz4, Compression::Zstd][rng.below(3) as usize];
            let b = keyed_with(codec, txn_pid, *seq, txn_pid >= 0, &recs);
            *seq += n as i32;
            let first = log.append(&b, 0, &v(&c)).unwrap().first_offset;
            for (i, (k, v)) in recs.into_iter().enumerate() {
                let o = first + i as i64;
                if txn_pid >= 0 {
                    model.open.entry(txn_pid).or_default().push((k, o, v));
                } else {
                    Model::put(&mut model.committed, &k, o, v);
                }
            }
        }
        check_all(&log, &model);
    }
    assert!(
        log.segment_base_offsets().last().copied().unwrap_or(0) > 0 && model.log_start > 0,
        "the run should roll segments and delete records"
    );
    let live = log.key_index_status().unwrap();
    drop(log);
    // The broker passes the log start from its checkpoint; so does this reopen.
    let log = Log::open_with_log_start(
        dir.path(),
        cfg,
        c.clone(),
        Recovery::Clean,
        Some(model.log_start),
    )
    .unwrap();
    build(&log, &budget);
    let rebuilt = log.key_index_status().unwrap();
    assert_eq!(rebuilt.next_offset, live.next_offset);
    check_all(&log, &model);
}

#[test]
fn lookups_match_the_model_through_appends_transactions_delete_records_and_reopen() {
    for seed in [1, 2, 3, 0x5eed, 0xdead_beef] {
        model_run(seed);
    }
}

#[test]
fn appends_are_visible_at_once_and_tombstones_answer_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), compacted(), &c, Recovery::Clean);
    assert_eq!(log.lookup_key(b"a", true).unwrap(), KeyLookup::Disabled);
    let budget = budget();
    build(&log, &budget);
    let one = |k: &str, v: Option<&str>| keyed(-1, 0, false, &[(k.into(), v.map(Into::into))]);
    log.append(&one("a", Some("1")), 0, &v(&c)).unwrap();
    let KeyLookup::Found(r) = log.lookup_key(b"a", true).unwrap() else {
        panic!("a missing");
    };
    assert_eq!(
        (r.offset, r.timestamp, r.value.as_ref()),
        (0, T0, b"1".as_slice())
    );
    assert_eq!(
        r.headers,
        vec![(
            bytes::Bytes::from_static(b"h"),
            Some(bytes::Bytes::from_static(b"1"))
        )]
    );
    log.append(&one("a", None), 0, &v(&c)).unwrap();
    assert_eq!(log.lookup_key(b"a", true).unwrap(), KeyLookup::NotFound);
    assert_eq!(
        log.lookup_key(b"never", false).unwrap(),
        KeyLookup::NotFound
    );
    log.append(&one("a", Some("2")), 0, &v(&c)).unwrap();
    assert_eq!(found(&log, "a", true), Some((2, "2".into())));
    // Disabling gives the memory back.
    assert!(budget.used() > 0);
    log.disable_key_index();
    assert_eq!(budget.used(), 0);
    assert_eq!(log.lookup_key(b"a", true).unwrap(), KeyLookup::Disabled);
}

#[test]
fn retention_of_whole_segments_hides_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let b = keyed(-1, 0, false, &[("a".into(), Some("1".into()))]);
    let cfg = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: true,
            compact: true,
        },
        segment_bytes: (b.len() * 2) as i32,
        retention_ms: 1000,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    build(&log, &budget());
    log.append(&b, 0, &v(&c)).unwrap();
    log.append(
        &keyed(-1, 0, false, &[("b".into(), Some("1".into()))]),
        0,
        &v(&c),
    )
    .unwrap();
    c.set(T0 + 500);
    let late = BatchBuilder::new(0, Compression::None);
    let mut late = late;
    late.push(T0 + 500, Some(b"c"), Some(b"1"), &[]);
    log.append(&late.build().unwrap(), 0, &v(&c)).unwrap();
    assert_eq!(found(&log, "a", true), Some((0, "1".into())));
    c.set(T0 + 1001);
    assert_eq!(log.apply_retention().unwrap().deleted_segments, 1);
    assert_eq!(log.log_start_offset(), 2);
    assert_eq!(found(&log, "a", true), None);
    assert_eq!(found(&log, "b", true), None);
    assert_eq!(found(&log, "c", true), Some((2, "1".into())));
}

#[test]
fn a_compaction_swap_keeps_answers_and_removed_tombstones_stay_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 400,
        ..compacted()
    };
    let log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
    let budget = budget();
    build(&log, &budget);
    // 60 single-record batches over 6 keys; key k5's last record is a tombstone.
    let mut latest: HashMap<String, i64> = HashMap::new();
    for i in 0..60i64 {
        let k = format!("k{}", i % 6);
        let v = (!(k == "k5" && i >= 54)).then(|| format!("v{i}"));
        let o = log
            .append(&keyed(-1, 0, false, &[(k.clone(), v)]), 0, &v_of(&c))
            .unwrap();
        latest.insert(k, o.first_offset);
    }
    let bases = log.segment_base_offsets();
    let sealed = &bases[..bases.len() - 1];
    // What a cleaner pass does: keep each key's latest record only, drop the tombstone.
    let mut w = log.cleaned_segment_writer(sealed[0]).unwrap();
    for &b in sealed {
        for item in log.segment_batches(b, 4096).unwrap() {
            let (h, bytes) = item.unwrap();
            let keep =
                latest.values().any(|o| *o == h.base_offset) && h.base_offset != latest["k5"];
            if keep {
                w.append_batch(&bytes).unwrap();
            }
        }
    }
    log.replace_segments(sealed, w).unwrap();
    for k in 0..5 {
        let key = format!("k{k}");
        let o = latest[&key];
        assert_eq!(found(&log, &key, true), Some((o, format!("v{o}"))));
    }
    assert_eq!(found(&log, "k5", true), None);
    // A rebuild over the cleaned log agrees.
    drop(log);
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    build(&log, &budget);
    for k in 0..5 {
        let key = format!("k{k}");
        let o = latest[&key];
        assert_eq!(found(&log, &key, true), Some((o, format!("v{o}"))));
    }
    assert_eq!(found(&log, "k5", true), None);
}

fn v_of(c: &ManualClock) -> AppendValidation {
    v(c)
}

#[test]
fn an_index_over_the_budget_is_dropped_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), compacted(), &c, Recovery::Clean);
    let small = Arc::new(KeyIndexBudget::new(16 << 10));
    build(&log, &small);
    for i in 0..100 {
        let recs: Vec<(String, Option<String>)> = (0..50)
            .map(|j| (format!("k{i}-{j}"), Some("v".into())))
            .collect();
        log.append(&keyed(-1, 0, false, &recs), 0, &v(&c)).unwrap();
    }
    assert_eq!(
        log.lookup_key(b"k0-0", true).unwrap(),
        KeyLookup::OverBudget {
            limit_bytes: 16 << 10
        }
    );
    assert_eq!(
        log.key_index_status().unwrap().phase,
        KeyIndexPhase::OverBudget
    );
    assert_eq!(small.used(), 0, "a dropped index holds no memory");
    // Appends still work; re-enabling with a larger budget rebuilds.
    log.append(
        &keyed(-1, 0, false, &[("z".into(), Some("1".into()))]),
        0,
        &v(&c),
    )
    .unwrap();
    log.disable_key_index();
    build(&log, &budget());
    assert_eq!(found(&log, "k0-0", true), Some((0, "v".into())));
    assert_eq!(log.key_index_status().unwrap().keys, 5001);
}

#[test]
fn a_build_catches_up_with_appends_made_while_loading() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let log = open(dir.path(), compacted(), &c, Recovery::Clean);
    for i in 0..20 {
        log.append(
            &keyed(-1, 0, false, &[(format!("k{i}"), Some("old".into()))]),
            0,
            &v(&c),
        )
        .unwrap();
    }
    assert!(log.enable_key_index(&budget()));
    assert!(!log.build_key_index(100).unwrap());
    // Written while loading: the appends skip the index, the build picks them up.
    log.append(
        &keyed(-1, 0, false, &[("k0".into(), Some("new".into()))]),
        0,
        &v(&c),
    )
    .unwrap();
    assert_eq!(log.lookup_key(b"k0", true).unwrap(), KeyLookup::Loading);
    while !log.build_key_index(100).unwrap() {}
    assert_eq!(found(&log, "k0", true), Some((20, "new".into())));
    assert_eq!(found(&log, "k19", true), Some((19, "old".into())));
}

#[test]
fn concurrent_appenders_each_see_their_acknowledged_write_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 4096,
        ..compacted()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    build(&log, &budget());
    let now = v(&c);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (log, now) = (&log, &now);
            s.spawn(move || {
                for i in 0..200 {
                    // Each thread owns its keys; a shared one sees everyone's writes.
                    let own = format!("t{t}-k{}", i % 7);
                    let recs = [
                        (own.clone(), Some(format!("{i}"))),
                        ("shared".to_string(), Some(format!("t{t}-{i}"))),
                    ];
                    let first = log
                        .append(&keyed(-1, 0, false, &recs), 0, now)
                        .unwrap()
                        .first_offset;
                    assert_eq!(found(log, &own, true), Some((first, format!("{i}"))));
                    let (o, _) = found(log, "shared", true).unwrap();
                    assert!(o > first, "shared key behind an acknowledged write");
                }
            });
        }
    });
    let leo = log.log_end_offset();
    assert_eq!(found(&log, "shared", true).unwrap().0, leo - 1);
    assert_eq!(log.key_index_status().unwrap().next_offset, leo);
}
