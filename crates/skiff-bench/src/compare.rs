//! The `compare` mode: Skiff side by side with Apache Kafka and Tansu on this machine, in one
//! invocation (issue 7): produce throughput matrix, catch-up consume, latency at a fixed
//! rate, start-up and idle RSS (see `startup`), physical limits (see `limits`); the report
//! and plot are written by `report`.
//!
//! Owns: the mode's flags ([`Args`]), the contenders (broker configurations) and the run
//! loops. Runs are interleaved (run 1 of every contender, then run 2, ...) so that a change
//! in machine load hits every broker alike. Every broker starts fresh per run.
//!
//! Thread-safety: the main thread drives everything; phases spawn and join their own
//! threads. On-disk: only the brokers' temp roots (see `broker`) and the report files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::broker::{BrokerKind, Launch, RunningBroker};
use crate::latency::{self, LatencySpec};
use crate::matrix::{Better, Matrix};
use crate::produce::{self, Acks};
use crate::stats::Measurement;
use crate::{consume, measure};

/// Flags of the `compare` mode (ignored by the other modes). The group id differs from
/// `compaction::Args`'s: clap's debug builds reject two flattened groups with one name.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "compare_args")]
pub struct Args {
    /// Directory with Kafka's install.sh/start.sh/stop.sh [default: <workspace>/tests/kafka].
    #[arg(long, env = "SKIFF_BENCH_KAFKA_SCRIPTS")]
    pub kafka_scripts: Option<PathBuf>,
    /// Tansu 0.6.0 binary (built with `--features dynostore`) [default: `tansu` on PATH].
    #[arg(long, env = "TANSU_BIN")]
    pub tansu_bin: Option<PathBuf>,
    /// Leave Apache Kafka out.
    #[arg(long)]
    pub no_kafka: bool,
    /// Leave Tansu out.
    #[arg(long)]
    pub no_tansu: bool,
    /// Leave the compaction comparison out (it runs `compaction --deferred --threads 1`
    /// with the compaction flags, on Skiff and Kafka).
    #[arg(long)]
    pub no_compaction: bool,
    /// Leave the TLS rows out (produce and consume over SSL vs PLAINTEXT, Skiff and Kafka).
    #[arg(long, conflicts_with = "tls_only")]
    pub no_tls: bool,
    /// Run only the TLS rows (no limits, produce matrix, latency, start-up or compaction).
    #[arg(long)]
    pub tls_only: bool,
    /// Leave the share-group rows out (share consume throughput, per-record ack cost).
    #[arg(long, conflicts_with = "share_only")]
    pub no_share: bool,
    /// Run only the share-group rows (no limits, produce matrix, TLS, latency, start-up or
    /// compaction).
    #[arg(long, conflicts_with = "tls_only")]
    pub share_only: bool,
    /// Records (1 KiB) the share consumer accepts per throughput phase [default: 100000;
    /// smoke 500].
    #[arg(long)]
    pub share_records: Option<u64>,
    /// Records acknowledged one ShareAcknowledge each in the per-record ack phase [default:
    /// 3000; smoke 50].
    #[arg(long)]
    pub share_ack_records: Option<u64>,
    /// Leave the table rows out (issue 16: HTTP snapshot vs a consumer rebuilding the
    /// table, key lookups over HTTP).
    #[arg(long, conflicts_with = "tables_only")]
    pub no_tables: bool,
    /// Run only the table rows (no limits, produce matrix, TLS, latency, start-up, share or
    /// compaction).
    #[arg(long, conflicts_with_all = ["tls_only", "share_only"])]
    pub tables_only: bool,
    /// Run only the start-up rows (idle RSS, empty start, and with --restart-mb of data the
    /// restarts after kill -9 right after writing, after a clean stop and after kill -9 of a
    /// clean start), e.g. `--restart-mb 10000` for the 10 GB recovery rows.
    #[arg(long, conflicts_with_all = ["tls_only", "share_only", "tables_only"])]
    pub startup_only: bool,
    /// Records of the table-read workload (200 B each, every key written records/keys
    /// times, nothing cleaned yet) [default: 1000000; smoke 2000].
    #[arg(long)]
    pub table_records: Option<u64>,
    /// Distinct keys of the table-read workload [default: 100000; smoke 200].
    #[arg(long)]
    pub table_keys: Option<u64>,
    /// Keys (one 114 B record each) of the key-lookup topic; 10000000 is the large size
    /// [default: 1000000; smoke 1000].
    #[arg(long)]
    pub lookup_keys: Option<u64>,
    /// Sequential HTTP key lookups per run [default: 20000; smoke 200].
    #[arg(long)]
    pub lookups: Option<u64>,
    /// MB (10^6 bytes) per produce phase [default: 256; smoke 2].
    #[arg(long)]
    pub phase_mb: Option<u64>,
    /// MB in the catch-up consume partition [default: 2000; smoke 4].
    #[arg(long)]
    pub catchup_mb: Option<u64>,
    /// Seconds per fixed-rate latency phase [default: 10; smoke 2].
    #[arg(long)]
    pub latency_secs: Option<f64>,
    /// Fixed rate in records/s [default: 50% of the slowest broker's 1 KiB, 1 partition,
    /// acks=1 throughput in this invocation].
    #[arg(long)]
    pub rate: Option<f64>,
    /// MB of data for the restart figures (clean stop, kill -9) [default: 1000; smoke 4].
    #[arg(long)]
    pub restart_mb: Option<u64>,
    /// MB for the loopback and disk limit tests [default: 1000; smoke 16].
    #[arg(long)]
    pub limits_mb: Option<u64>,
    /// Where the report (compare.md) and plot (compare.png) go [default:
    /// crates/skiff-bench/results; smoke: a temp dir].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One broker configuration measured as its own column.
#[derive(Debug, Clone)]
pub struct Contender {
    pub label: &'static str,
    pub kind: BrokerKind,
    pub launch: Launch,
    /// A durability variant: only the acks=all figures are measured.
    pub acks_all_only: bool,
}

/// A validated comparison.
#[derive(Debug, Clone)]
pub struct Plan {
    pub runs: u32,
    pub phase_bytes: u64,
    pub catchup_bytes: u64,
    pub latency_secs: f64,
    pub rate: Option<f64>,
    pub restart_bytes: u64,
    pub limits_bytes: u64,
    pub producers: usize,
    /// Records of the share consume throughput phase.
    pub share_records: u64,
    /// Records of the per-record ShareAcknowledge phase.
    pub share_ack_records: u64,
    /// Records and distinct keys of the table-read workload.
    pub table_records: u64,
    pub table_keys: u64,
    /// Keys of the lookup topic and lookups per run.
    pub lookup_keys: u64,
    pub lookups: u64,
    pub out: PathBuf,
}

pub const SKIFF: &str = "skiff";
pub const KAFKA: &str = "kafka";
pub const KAFKA_FLUSH: &str = "kafka flush=1";
pub const TANSU: &str = "tansu (memory)";
/// Column order of the report.
pub const COLUMNS: [&str; 4] = [SKIFF, KAFKA, KAFKA_FLUSH, TANSU];

/// The produce matrix: record size, partitions, acks.
pub const SCENARIOS: [(usize, i32, Acks); 8] = [
    (1024, 1, Acks::Leader),
    (1024, 1, Acks::All),
    (1024, 12, Acks::Leader),
    (1024, 12, Acks::All),
    (100, 1, Acks::Leader),
    (100, 1, Acks::All),
    (100, 12, Acks::Leader),
    (100, 12, Acks::All),
];

/// Report label of a produce scenario, e.g. "produce 1 KiB x12 acks=all".
pub fn scenario_label(size: usize, partitions: i32, acks: Acks) -> String {
    let size = if size == 1024 {
        "1 KiB".to_string()
    } else {
        format!("{size} B")
    };
    format!("produce {size} p{partitions} {}", acks.label())
}

pub fn plan(a: &Args, runs: u32, smoke: bool, producers: usize, workspace: &Path) -> Result<Plan> {
    let mb = |v: Option<u64>, full: u64, small: u64| {
        v.unwrap_or(if smoke { small } else { full })
            .saturating_mul(1_000_000)
    };
    let plan = Plan {
        runs: if smoke { 1 } else { runs },
        phase_bytes: mb(a.phase_mb, 256, 2),
        catchup_bytes: mb(a.catchup_mb, 2000, 4),
        latency_secs: a.latency_secs.unwrap_or(if smoke { 2.0 } else { 10.0 }),
        rate: a.rate,
        restart_bytes: mb(a.restart_mb, 1000, 4),
        limits_bytes: mb(a.limits_mb, 1000, 16),
        producers,
        share_records: a.share_records.unwrap_or(if smoke { 500 } else { 100_000 }),
        share_ack_records: a
            .share_ack_records
            .unwrap_or(if smoke { 50 } else { 3_000 }),
        table_records: a
            .table_records
            .unwrap_or(if smoke { 2_000 } else { 1_000_000 }),
        table_keys: a.table_keys.unwrap_or(if smoke { 200 } else { 100_000 }),
        lookup_keys: a
            .lookup_keys
            .unwrap_or(if smoke { 1_000 } else { 1_000_000 }),
        lookups: a.lookups.unwrap_or(if smoke { 200 } else { 20_000 }),
        out: match &a.out {
            Some(o) => o.clone(),
            None if smoke => std::env::temp_dir().join("skiff-bench-smoke"),
            None => workspace.join("crates").join("skiff-bench").join("results"),
        },
    };
    let limit = 20_000_000_000;
    for (name, v) in [
        ("--phase-mb", plan.phase_bytes),
        ("--catchup-mb", plan.catchup_bytes),
        ("--restart-mb", plan.restart_bytes),
        ("--limits-mb", plan.limits_bytes),
    ] {
        if v == 0 || v > limit {
            anyhow::bail!("{name} must be 1..=20000");
        }
    }
    // 4M 1 KiB records is 4 GB; per-record acks are one round trip each, so far fewer.
    if !(1..=4_000_000).contains(&plan.share_records) {
        anyhow::bail!("--share-records must be 1..=4000000");
    }
    if !(1..=1_000_000).contains(&plan.share_ack_records) {
        anyhow::bail!("--share-ack-records must be 1..=1000000");
    }
    if !(1..=10_000_000).contains(&plan.table_keys)
        || !(plan.table_keys..=20_000_000).contains(&plan.table_records)
    {
        anyhow::bail!("--table-keys must be 1..=10000000 and --table-records keys..=20000000");
    }
    if !(1..=10_000_000).contains(&plan.lookup_keys) || !(1..=1_000_000).contains(&plan.lookups) {
        anyhow::bail!("--lookup-keys must be 1..=10000000 and --lookups 1..=1000000");
    }
    if !(0.5..=600.0).contains(&plan.latency_secs) {
        anyhow::bail!("--latency-secs must be 0.5..=600");
    }
    if !(1..=20).contains(&plan.runs) {
        anyhow::bail!("--runs must be 1..=20");
    }
    Ok(plan)
}

/// The contenders that can run here; peers that cannot are recorded as "not run" in `m`.
pub fn contenders(
    a: &Args,
    skiff_bin: &Path,
    workspace: &Path,
    smoke: bool,
    m: &mut Matrix,
) -> Vec<Contender> {
    let mut out = vec![Contender {
        label: SKIFF,
        kind: BrokerKind::Skiff {
            bin: skiff_bin.to_path_buf(),
        },
        launch: Launch::default(),
        acks_all_only: false,
    }];
    if smoke {
        for peer in [KAFKA, KAFKA_FLUSH, TANSU] {
            m.not_run(peer, "smoke mode measures Skiff only");
        }
        return out;
    }
    if a.no_kafka {
        m.not_run(KAFKA, "--no-kafka");
        m.not_run(KAFKA_FLUSH, "--no-kafka");
    } else {
        let scripts = a
            .kafka_scripts
            .clone()
            .unwrap_or_else(|| workspace.join("tests").join("kafka"));
        let kind = BrokerKind::Kafka { scripts };
        match kind.check() {
            Ok(()) => {
                out.push(Contender {
                    label: KAFKA,
                    kind: kind.clone(),
                    launch: Launch::default(),
                    acks_all_only: false,
                });
                out.push(Contender {
                    label: KAFKA_FLUSH,
                    kind,
                    launch: Launch {
                        settings: vec!["log.flush.interval.messages=1".to_string()],
                        log_filter: String::new(),
                        ssl_keystore: None,
                    },
                    acks_all_only: true,
                });
            }
            Err(e) => {
                m.not_run(KAFKA, &format!("{e:#}"));
                m.not_run(KAFKA_FLUSH, "Kafka is not available");
            }
        }
    }
    if a.no_tansu {
        m.not_run(TANSU, "--no-tansu");
    } else {
        let bin = a.tansu_bin.clone().or_else(|| which("tansu"));
        match bin {
            None => m.not_run(
                TANSU,
                &format!(
                    "no tansu binary (--tansu-bin or TANSU_BIN); install with {}",
                    crate::broker::TANSU_INSTALL
                ),
            ),
            Some(bin) => {
                let kind = BrokerKind::Tansu { bin };
                match kind.check() {
                    Ok(()) => out.push(Contender {
                        label: TANSU,
                        kind,
                        launch: Launch::default(),
                        acks_all_only: false,
                    }),
                    Err(e) => m.not_run(TANSU, &format!("{e:#}")),
                }
            }
        }
    }
    out
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs `f` on a fresh broker of `c`, stopping it afterwards; a failure is reported with
/// the broker's log tail and recorded as a failed run, not an abort of the whole comparison.
pub fn with_broker(
    c: &Contender,
    m: &mut Matrix,
    what: &str,
    f: impl FnOnce(&RunningBroker, &mut Matrix) -> Result<()>,
) {
    let mut b = match c.kind.launch_with(&c.launch) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("  {}: {what}: start failed: {e:#}", c.label);
            m.not_run(
                c.label,
                &format!("{what}: start failed: {}", first_line(&e)),
            );
            return;
        }
    };
    let r = f(&b, m);
    if let Err(e) = &r {
        eprintln!("  {}: {what} failed: {e:#}\n{}", c.label, b.log_tail(20));
        m.not_run(
            c.label,
            &format!("{what} failed in one run: {}", first_line(e)),
        );
    }
    if let Err(e) = b.stop() {
        eprintln!("  {}: stop: {e:#}", c.label);
    }
}

pub fn first_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// One run of the throughput matrix and the catch-up consume for one contender.
pub fn throughput_run(c: &Contender, plan: &Plan, clk_tck: f64, m: &mut Matrix) {
    with_broker(c, m, "throughput", |b, m| {
        // Untimed warm-up (JIT for Kafka's JVM, page cache and allocator for everyone).
        let warm = plan.phase_bytes.max(1_000_000) / 1024;
        produce::create_topic(&b.bootstrap(), "bench-warmup", 1)?;
        produce_n(
            b,
            plan,
            clk_tck,
            "bench-warmup",
            1024,
            1,
            Acks::Leader,
            warm,
        )
        .context("warm-up")?;
        for (i, &(size, partitions, acks)) in SCENARIOS.iter().enumerate() {
            if c.acks_all_only && acks != Acks::All {
                continue;
            }
            let label = scenario_label(size, partitions, acks);
            let topic = format!("bench-{i}");
            produce::create_topic(&b.bootstrap(), &topic, partitions)
                .with_context(|| format!("{label}: create topic"))?;
            let mm = produce_measured(b, plan, clk_tck, &topic, size, partitions, acks)
                .with_context(|| label.clone())?;
            eprintln!("  {}: {label}: {:.1} MB/s", c.label, mm.mb_per_sec());
            m.add(&label, "MB/s", Better::Higher, c.label, mm.mb_per_sec());
            m.add(
                &label,
                "records/s",
                Better::Higher,
                c.label,
                mm.records_per_sec(),
            );
            m.add(
                &label,
                "broker CPU s/GB",
                Better::Lower,
                c.label,
                mm.cpu_secs_per_gb(),
            );
        }
        if !c.acks_all_only {
            catchup(b, c, plan, clk_tck, m)?;
        }
        let s = b.sample(clk_tck)?;
        m.add(
            "resources",
            "peak RSS MiB (whole run)",
            Better::Lower,
            c.label,
            s.peak_rss_bytes as f64 / (1024.0 * 1024.0),
        );
        Ok(())
    });
}

#[allow(clippy::too_many_arguments)]
pub fn produce_measured(
    b: &RunningBroker,
    plan: &Plan,
    clk_tck: f64,
    topic: &str,
    size: usize,
    partitions: i32,
    acks: Acks,
) -> Result<Measurement> {
    let records = (plan.phase_bytes / size as u64).clamp(100, 4_000_000);
    produce_n(b, plan, clk_tck, topic, size, partitions, acks, records)
}

#[allow(clippy::too_many_arguments)]
pub fn produce_n(
    b: &RunningBroker,
    plan: &Plan,
    clk_tck: f64,
    topic: &str,
    size: usize,
    partitions: i32,
    acks: Acks,
    records: u64,
) -> Result<Measurement> {
    let over = Over::Plaintext;
    produce_n_over(
        b, plan, clk_tck, topic, size, partitions, acks, records, over,
    )
}

/// Which listener a phase's clients use.
#[derive(Debug, Clone, Copy)]
pub enum Over<'a> {
    Plaintext,
    /// The broker's SSL listener, trusting this CA file.
    Ssl(&'a Path),
}

impl Over<'_> {
    /// Bootstrap address and CA file for the clients of a phase.
    pub fn endpoint(self, b: &RunningBroker) -> Result<(String, Option<PathBuf>)> {
        match self {
            Over::Plaintext => Ok((b.bootstrap(), None)),
            Over::Ssl(ca) => {
                let addr = b
                    .ssl_bootstrap()
                    .context("the broker was started without an SSL listener")?;
                Ok((addr, Some(ca.to_path_buf())))
            }
        }
    }
}

/// [`produce_n`] over the given listener.
#[allow(clippy::too_many_arguments)]
pub fn produce_n_over(
    b: &RunningBroker,
    plan: &Plan,
    clk_tck: f64,
    topic: &str,
    size: usize,
    partitions: i32,
    acks: Acks,
    records: u64,
    over: Over<'_>,
) -> Result<Measurement> {
    let (bootstrap, ssl_ca) = over.endpoint(b)?;
    let spec = produce::ProduceSpec {
        bootstrap,
        ssl_ca,
        topic: topic.to_string(),
        partitions,
        records,
        size,
        acks,
        producers: plan.producers,
        timeout: Duration::from_secs(120 + records * size as u64 / 5_000_000),
    };
    measure(b, clk_tck, || {
        let r = produce::run(&spec)?;
        Ok((r.records, r.bytes, r.secs))
    })
}

fn catchup(
    b: &RunningBroker,
    c: &Contender,
    plan: &Plan,
    clk_tck: f64,
    m: &mut Matrix,
) -> Result<()> {
    let topic = "bench-catchup";
    produce::create_topic(&b.bootstrap(), topic, 1)?;
    let records = plan.catchup_bytes / 1024;
    produce_n(b, plan, clk_tck, topic, 1024, 1, Acks::Leader, records).context("catch-up fill")?;
    let mb = plan.catchup_bytes / 1_000_000;
    for (label, wait) in [
        (format!("consume {mb} MB from 0, fetch.wait default"), None),
        (format!("consume {mb} MB from 0, fetch.wait=1ms"), Some(1)),
    ] {
        let spec = consume::ConsumeSpec {
            bootstrap: b.bootstrap(),
            topic: topic.to_string(),
            partitions: 1,
            expected: records,
            fetch_wait_ms: wait,
            timeout: Duration::from_secs(120 + plan.catchup_bytes / 5_000_000),
            ssl_ca: None,
        };
        let mm = measure(b, clk_tck, || {
            let r = consume::run(&spec)?;
            Ok((r.records, r.bytes, r.secs))
        })
        .with_context(|| label.clone())?;
        eprintln!("  {}: {label}: {:.1} MB/s", c.label, mm.mb_per_sec());
        m.add(&label, "MB/s", Better::Higher, c.label, mm.mb_per_sec());
        m.add(
            &label,
            "broker CPU s/GB",
            Better::Lower,
            c.label,
            mm.cpu_secs_per_gb(),
        );
    }
    Ok(())
}

/// The fixed rate: the flag, else half the slowest contender's 1 KiB p1 acks=1 records/s.
pub fn fixed_rate(plan: &Plan, m: &Matrix) -> Option<f64> {
    if plan.rate.is_some() {
        return plan.rate;
    }
    let label = scenario_label(1024, 1, Acks::Leader);
    [SKIFF, KAFKA, TANSU]
        .iter()
        .filter_map(|b| m.median(&label, "records/s", b))
        .min_by(f64::total_cmp)
        .map(|r| (r * 0.5).max(100.0))
}

/// One run of the fixed-rate latency phases for one contender (acks=1 unless it is a
/// durability variant, and acks=all).
pub fn latency_run(c: &Contender, plan: &Plan, rate: f64, m: &mut Matrix) {
    with_broker(c, m, "latency", |b, m| {
        // Untimed warm-up at the same rate, so the first measured phase does not pay for a
        // cold JVM (Kafka) or cold caches.
        produce::create_topic(&b.bootstrap(), "bench-latency-warmup", 1)?;
        latency::run(&LatencySpec {
            bootstrap: b.bootstrap(),
            topic: "bench-latency-warmup".to_string(),
            rate,
            secs: plan.latency_secs.min(3.0),
            size: 1024,
            acks: Acks::Leader,
        })
        .context("latency warm-up")?;
        for acks in [Acks::Leader, Acks::All] {
            if c.acks_all_only && acks != Acks::All {
                continue;
            }
            let topic = format!("bench-latency-{}", acks.label().replace('=', "-"));
            produce::create_topic(&b.bootstrap(), &topic, 1)?;
            let spec = LatencySpec {
                bootstrap: b.bootstrap(),
                topic,
                rate,
                secs: plan.latency_secs,
                size: 1024,
                acks,
            };
            let r = latency::run(&spec).with_context(|| format!("latency {}", acks.label()))?;
            let label = format!("latency 1 KiB @ {rate:.0}/s {}", acks.label());
            eprintln!(
                "  {}: {label}: produce p99 {:.2} ms, e2e p99 {:.2} ms",
                c.label, r.produce.p99, r.e2e.p99
            );
            let l = Better::Lower;
            m.add(&label, "produce p50 ms", l, c.label, r.produce.p50);
            m.add(&label, "produce p99 ms", l, c.label, r.produce.p99);
            m.add(&label, "produce p99.9 ms", l, c.label, r.produce.p999);
            m.add(&label, "end-to-end p50 ms", l, c.label, r.e2e.p50);
            m.add(&label, "end-to-end p99 ms", l, c.label, r.e2e.p99);
            m.add(
                &label,
                "achieved rate/s",
                Better::Higher,
                c.label,
                r.achieved_rate,
            );
        }
        Ok(())
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_rate() {
        assert_eq!(
            scenario_label(1024, 12, Acks::All),
            "produce 1 KiB p12 acks=all"
        );
        assert_eq!(
            scenario_label(100, 1, Acks::Leader),
            "produce 100 B p1 acks=1"
        );
        let mut m = Matrix::new(&COLUMNS, SKIFF);
        let label = scenario_label(1024, 1, Acks::Leader);
        m.add(&label, "records/s", Better::Higher, SKIFF, 400_000.0);
        m.add(&label, "records/s", Better::Higher, KAFKA, 100_000.0);
        let p = Plan {
            runs: 1,
            phase_bytes: 1,
            catchup_bytes: 1,
            latency_secs: 1.0,
            rate: None,
            restart_bytes: 1,
            limits_bytes: 1,
            producers: 1,
            share_records: 1,
            share_ack_records: 1,
            table_records: 1,
            table_keys: 1,
            lookup_keys: 1,
            lookups: 1,
            out: PathBuf::new(),
        };
        assert_eq!(fixed_rate(&p, &m), Some(50_000.0));
        let p = Plan {
            rate: Some(7.0),
            ..p
        };
        assert_eq!(fixed_rate(&p, &m), Some(7.0));
    }
}
