//! Table snapshots (`skiff_cleaner::table_snapshot`, docs/snapshots.md) checked against a
//! model (a map of every key's last value) on random workloads, with a tiny map budget (several
//! slices), with a cleaner pass and retention run between the two scans of a slice, and with
//! transactions under both isolation levels.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use common::{compact_config, marker, txn_append, TestLog};
use skiff_cleaner::table_snapshot::snapshot_partition_with;
use skiff_cleaner::{
    snapshot_partition, SnapshotError, SnapshotLimits, SnapshotStats, TableRecord,
};
use skiff_log::{ControlType, PinnedLog};
use skiff_records::{BatchBuilder, Compression};

type Table = BTreeMap<Vec<u8>, (i64, Vec<u8>)>;

/// A small deterministic generator (xorshift) so failures replay by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn limits(memory_bytes: u64) -> SnapshotLimits {
    SnapshotLimits {
        memory_bytes,
        io_buffer_size: 4096,
    }
}

/// Runs the snapshot of `pinned`, calling `between` between the scans of each slice; returns
/// the records by key (checking each key comes once) and the figures.
fn run(
    pinned: &PinnedLog,
    memory: u64,
    between: &mut dyn FnMut(),
) -> (Table, Vec<TableRecord>, SnapshotStats) {
    let mut out = Vec::new();
    let stats = snapshot_partition(
        pinned,
        &limits(memory),
        &mut |r| {
            out.push(r);
            Ok(())
        },
        between,
    )
    .unwrap();
    let mut table = Table::new();
    for r in &out {
        let old = table.insert(r.key.to_vec(), (r.offset, r.value.to_vec()));
        assert!(old.is_none(), "key {:?} emitted twice", r.key);
    }
    (table, out, stats)
}

/// Random produce/tombstone/roll steps over `keys` keys; returns the model.
fn workload(t: &TestLog, rng: &mut Rng, steps: usize, keys: u64) -> Table {
    let mut model = Table::new();
    for _ in 0..steps {
        let n = 1 + rng.below(5) as usize;
        let batch: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..n)
            .map(|_| {
                let k = format!("key-{}", rng.below(keys)).into_bytes();
                let v = (rng.below(5) != 0).then(|| format!("v{}", rng.next()).into_bytes());
                (k, v)
            })
            .collect();
        let refs: Vec<(&[u8], Option<&[u8]>)> = batch
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        let codec = if rng.below(3) == 0 {
            Compression::Lz4
        } else {
            Compression::None
        };
        for r in t.produce(&refs, codec) {
            let key = r.key.unwrap();
            match r.value {
                Some(v) => model.insert(key, (r.offset, v)),
                None => model.remove(&key),
            };
        }
        if rng.below(10) == 0 {
            t.roll();
        }
    }
    model
}

#[test]
fn random_workloads_match_the_model_whatever_the_budget() {
    for seed in 1..=12u64 {
        let t = TestLog::new(compact_config(1 << 20, 0));
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let model = workload(&t, &mut rng, 200, 40 + seed * 10);
        let pinned = t.log().pin(false);
        assert_eq!(pinned.end_offset(), t.log().log_end_offset());
        let (table, out, stats) = run(&pinned, 32 << 20, &mut || {});
        assert_eq!(table, model, "seed {seed}");
        assert_eq!(stats.slices, 1);
        assert!(
            out.windows(2).all(|w| w[0].offset < w[1].offset),
            "offset order"
        );
        // A tiny map: several slices, the same answer.
        let (small, _, stats) = run(&pinned, 48 * 8, &mut || {});
        assert_eq!(small, model, "seed {seed}, tiny map");
        assert!(stats.slices > 1 && stats.restarts > 0, "{stats:?}");
        // After a cleaner pass, a new snapshot says the same.
        t.roll();
        t.clean(None, 1 << 20);
        let (cleaned, _, _) = run(&t.log().pin(false), 32 << 20, &mut || {});
        assert_eq!(cleaned, model, "seed {seed}, after cleaning");
    }
}

#[test]
fn headers_timestamps_and_keyless_records() {
    let t = TestLog::new(compact_config(1 << 20, 0));
    let recs = t.produce(
        &[(b"k", Some(b"v1")), (b"k2", Some(b"v"))],
        Compression::Zstd,
    );
    // A keyless record (as written before a topic became compacted) is skipped.
    let mut b = BatchBuilder::new(0, Compression::None);
    b.push(t.now(), None, Some(b"no key"), &[]);
    let mut c = t.log().config();
    c.cleanup_policy.compact = false;
    t.log().update_config(c);
    t.log()
        .append(
            &b.build().unwrap(),
            0,
            &skiff_log::AppendValidation { now_ms: t.now() },
        )
        .unwrap();
    let (_, out, _) = run(&t.log().pin(false), 1 << 20, &mut || {});
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].offset, recs[0].offset);
    assert_eq!(out[0].timestamp, recs[0].timestamp);
    assert_eq!(out[0].key.as_ref(), b"k");
    assert_eq!(
        out[0].headers,
        vec![(
            bytes::Bytes::from_static(b"hk"),
            Some(bytes::Bytes::from_static(b"h0"))
        )]
    );
}

#[test]
fn a_cleaner_pass_and_retention_between_the_scans_change_nothing() {
    let t = TestLog::new(compact_config(1 << 20, 0));
    let mut rng = Rng(77);
    let model = workload(&t, &mut rng, 300, 30);
    t.roll();
    let pinned = t.log().pin(false);
    let bases_before = t.log().segment_base_offsets();
    assert!(bases_before.len() > 3);
    let mut ran = 0;
    // Each slice's map is built, then the cleaner rewrites and swaps segments, retention
    // (DeleteRecords) drops the oldest ones and new data arrives before the emit scan.
    let mut between = || {
        ran += 1;
        t.clean(None, 1 << 20);
        let bases = t.log().segment_base_offsets();
        let cut = bases.get(1).copied().unwrap_or(t.log().log_end_offset());
        t.log().delete_records_before(cut).unwrap();
        t.produce(&[(b"key-1", Some(b"after the pin"))], Compression::None);
        t.produce(&[(b"key-2", None)], Compression::None);
    };
    let (table, _, stats) = run(&pinned, 48 * 6, &mut between);
    assert!(stats.slices > 1);
    assert_eq!(ran, stats.slices);
    assert_eq!(table, model, "the answer is the one as of the pin");
    assert_ne!(t.log().segment_base_offsets(), bases_before);
    assert!(t.log().log_start_offset() > 0);
    // A new snapshot sees the new state: the later writes, and the data retention removed gone.
    let (now, _, _) = run(&t.log().pin(false), 1 << 20, &mut || {});
    assert_eq!(now.get(b"key-1".as_slice()).unwrap().1, b"after the pin");
    assert!(!now.contains_key(b"key-2".as_slice()));
}

fn values(table: &Table) -> Vec<(&str, &str)> {
    table
        .iter()
        .map(|(k, (_, v))| {
            (
                std::str::from_utf8(k).unwrap(),
                std::str::from_utf8(v).unwrap(),
            )
        })
        .collect()
}

#[test]
fn read_committed_skips_aborted_and_open_transactions_and_ends_at_the_lso() {
    let t = TestLog::new(compact_config(1 << 20, 0));
    t.produce(&[(b"a", Some(b"plain"))], Compression::None); // 0
    txn_append(&t, 5, 0, b"a", b"aborted"); // 1
    marker(&t, 5, ControlType::Abort); // 2
    txn_append(&t, 6, 0, b"b", b"committed"); // 3
    marker(&t, 6, ControlType::Commit); // 4
    t.roll();
    let open = txn_append(&t, 7, 0, b"c", b"open"); // 5, undecided
    t.produce(&[(b"a", Some(b"after-open"))], Compression::None); // 6
    let committed = t.log().pin(true);
    assert_eq!(committed.end_offset(), open);
    assert_eq!(committed.high_watermark(), 7);
    let (table, _, _) = run(&committed, 1 << 20, &mut || {});
    assert_eq!(values(&table), vec![("a", "plain"), ("b", "committed")]);
    // read_uncommitted: everything up to the high watermark, as such a consumer sees it.
    let uncommitted = t.log().pin(false);
    assert_eq!(uncommitted.end_offset(), 7);
    let (table, _, _) = run(&uncommitted, 1 << 20, &mut || {});
    assert_eq!(
        values(&table),
        vec![("a", "after-open"), ("b", "committed"), ("c", "open")]
    );
    // Consuming (read_committed) from the snapshot's end offset once the transaction
    // commits yields exactly the later records.
    marker(&t, 7, ControlType::Commit); // 7
    let info = t.log().read_isolated(open, 1 << 20, true, true).unwrap();
    let later: Vec<i64> = skiff_records::Batches::new(&info.records)
        .map(|b| b.unwrap().0)
        .filter(|h| !h.is_control())
        .flat_map(|h| h.base_offset..=h.last_offset())
        .collect();
    assert_eq!(later, vec![5, 6]);
}

#[test]
fn consuming_from_the_end_offset_misses_nothing() {
    let t = TestLog::new(compact_config(1 << 20, 0));
    let mut rng = Rng(5);
    workload(&t, &mut rng, 100, 20);
    let pinned = t.log().pin(true);
    let end = pinned.end_offset();
    let (mut table, _, _) = run(&pinned, 1 << 20, &mut || {});
    workload(&t, &mut rng, 50, 20);
    // The client applies every record from `end` on to its table: it then equals a snapshot
    // of the whole history.
    let (_, all) = t.read_all();
    for r in all.into_iter().filter(|r| r.offset >= end) {
        let key = r.key.unwrap();
        match r.value {
            Some(v) => table.insert(key, (r.offset, v)),
            None => table.remove(&key),
        };
    }
    let (fresh, _, _) = run(&t.log().pin(true), 1 << 20, &mut || {});
    assert_eq!(table, fresh);
}

#[test]
fn a_hash_collision_is_reported_not_guessed() {
    fn same(_: &[u8]) -> u128 {
        7
    }
    let t = TestLog::new(compact_config(1 << 20, 0));
    t.produce(&[(b"a", Some(b"1")), (b"b", Some(b"2"))], Compression::None);
    let err = snapshot_partition_with(
        &t.log().pin(false),
        &limits(1 << 20),
        &mut |_| Ok(()),
        &mut || {},
        Some(same),
    )
    .unwrap_err();
    assert!(matches!(err, SnapshotError::HashCollision { .. }), "{err}");
}

#[test]
fn a_cancelled_consumer_stops_the_scan() {
    let t = TestLog::new(compact_config(1 << 20, 0));
    t.produce(&[(b"a", Some(b"1")), (b"b", Some(b"2"))], Compression::None);
    let mut seen = 0;
    let err = snapshot_partition(
        &t.log().pin(false),
        &limits(1 << 20),
        &mut |_| {
            seen += 1;
            Err(SnapshotError::Cancelled("client went away".into()))
        },
        &mut || {},
    )
    .unwrap_err();
    assert!(matches!(err, SnapshotError::Cancelled(_)));
    assert_eq!(seen, 1);
}

/// Rate of a snapshot of 1 M records over 100 k keys, most of them in a dirty (never cleaned)
/// tail. `cargo test -p skiff-cleaner --release --test table_snapshot -- --ignored --nocapture`
#[test]
#[ignore]
fn snapshot_rate_of_a_million_records() {
    let t = TestLog::new(compact_config(64 << 20, 0));
    let value = vec![b'x'; 100];
    let mut n = 0u64;
    while n < 1_000_000 {
        let batch: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..100)
            .map(|i| {
                let k = format!("key-{:06}", (n + i) * 7919 % 100_000).into_bytes();
                (k, Some(value.clone()))
            })
            .collect();
        let refs: Vec<(&[u8], Option<&[u8]>)> = batch
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        t.produce(&refs, Compression::Lz4);
        n += 100;
        if n == 200_000 {
            // A clean head, then 800 k records of dirty tail.
            t.roll();
            t.clean(None, 64 << 20);
        }
    }
    let pinned = t.log().pin(false);
    for memory in [32u64 << 20, 1 << 20] {
        let started = std::time::Instant::now();
        let (table, _, stats) = run(&pinned, memory, &mut || {});
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(table.len(), 100_000);
        println!(
            "memory {memory} B: {} records out of {} view bytes ({:.1} MB), {} slices, {} restarts, \
             {:.1} MB read in {secs:.2} s: {:.1} MB/s of view, {:.1} MB/s read",
            stats.records,
            stats.view_bytes,
            stats.view_bytes as f64 / 1e6,
            stats.slices,
            stats.restarts,
            stats.bytes_read as f64 / 1e6,
            stats.view_bytes as f64 / 1e6 / secs,
            stats.bytes_read as f64 / 1e6 / secs,
        );
    }
}
