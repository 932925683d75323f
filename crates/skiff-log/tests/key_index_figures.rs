//! Figures for docs/key-index.md §8: an indexed partition with N distinct keys, built in
//! process; build time, index memory (its own accounting and the process's RSS growth) and
//! lookup latency (p50/p99 of hits and misses), medians over runs. Ignored by default:
//!
//! `cargo test -p skiff-log --release --test key_index_figures -- --ignored --nocapture`
//!
//! `KEY_INDEX_FIGURES_KEYS` (default `1000000,10000000`), `KEY_INDEX_FIGURES_RUNS` (3),
//! `KEY_INDEX_FIGURES_BATCH` (records per batch, 100).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use skiff_log::{
    AppendValidation, CleanupPolicy, KeyIndexBudget, KeyLookup, Log, LogConfig, ManualClock,
    Recovery,
};
use skiff_records::{BatchBuilder, Compression};

const T0: i64 = 1_700_000_000_000;
const LOOKUPS: usize = 100_000;
const VALUE: &[u8] = b"value-of-32-bytes-for-each-key..";

fn env_list(name: &str, default: &str) -> Vec<u64> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect()
}

fn key(i: u64) -> String {
    format!("key-{i:012}")
}

/// Resident set size of this process, from /proc/self/status (kB → bytes).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(sorted_ns: &[u64], p: f64) -> f64 {
    let i = ((sorted_ns.len() as f64 - 1.0) * p).round() as usize;
    sorted_ns[i] as f64 / 1000.0
}

/// Times `LOOKUPS` lookups of keys drawn by `pick`; returns sorted latencies (ns).
fn time_lookups(
    log: &Log,
    rng: &mut Rng,
    pick: impl Fn(&mut Rng) -> String,
    hit: bool,
) -> Vec<u64> {
    let mut ns = Vec::with_capacity(LOOKUPS);
    for _ in 0..LOOKUPS {
        let k = pick(rng);
        let t = Instant::now();
        let r = log.lookup_key(k.as_bytes(), true).unwrap();
        ns.push(t.elapsed().as_nanos() as u64);
        assert_eq!(matches!(r, KeyLookup::Found(_)), hit, "{k}: {r:?}");
    }
    ns.sort_unstable();
    ns
}

#[test]
#[ignore = "figures: run in release with --ignored --nocapture"]
fn key_index_figures() {
    let keys = env_list("KEY_INDEX_FIGURES_KEYS", "1000000,10000000");
    let runs = env_list("KEY_INDEX_FIGURES_RUNS", "3")[0] as usize;
    let per_batch = env_list("KEY_INDEX_FIGURES_BATCH", "100")[0];
    println!(
        "keys | log MB | build s | index MiB (own) | RSS growth MiB (1st build) | B/key | hit p50 us | hit p99 us | miss p50 us | miss p99 us"
    );
    for n in keys {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let config = LogConfig {
            cleanup_policy: CleanupPolicy {
                delete: false,
                compact: true,
            },
            ..LogConfig::default()
        };
        let log = Log::open(dir.path(), config, clock, Recovery::Clean).unwrap();
        let v = AppendValidation { now_ms: T0 };
        let mut i = 0;
        while i < n {
            let mut b = BatchBuilder::new(0, Compression::None);
            for j in i..(i + per_batch).min(n) {
                b.push(T0, Some(key(j).as_bytes()), Some(VALUE), &[]);
            }
            log.append(&b.build().unwrap(), 0, &v).unwrap();
            i += per_batch;
        }
        let budget = Arc::new(KeyIndexBudget::new(4 << 30));
        let (mut build, mut own, mut grown, mut hp50, mut hp99, mut mp50, mut mp99) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            log.disable_key_index();
            let before = rss();
            let t = Instant::now();
            assert!(log.enable_key_index(&budget));
            while !log.build_key_index(usize::MAX).unwrap() {}
            build.push(t.elapsed().as_secs_f64());
            grown.push(rss().saturating_sub(before) as f64);
            let status = log.key_index_status().unwrap();
            assert_eq!(status.keys as u64, n);
            own.push(status.bytes as f64);
            let mut rng = Rng(0x5eed);
            let hits = time_lookups(&log, &mut rng, |r| key(r.below(n)), true);
            let misses = time_lookups(&log, &mut rng, |r| format!("absent-{}", r.below(n)), false);
            hp50.push(percentile(&hits, 0.5));
            hp99.push(percentile(&hits, 0.99));
            mp50.push(percentile(&misses, 0.5));
            mp99.push(percentile(&misses, 0.99));
        }
        let own_b = median(&mut own);
        println!(
            "{n} | {:.0} | {:.2} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2}",
            log.size_bytes() as f64 / 1e6,
            median(&mut build),
            own_b / 1048576.0,
            grown[0] / 1048576.0,
            own_b / n as f64,
            median(&mut hp50),
            median(&mut hp99),
            median(&mut mp50),
            median(&mut mp99),
        );
    }
}
