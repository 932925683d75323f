//! `skiff-bench`: throughput and resource benchmark of the release `skiff` binary, driven by
//! librdkafka through the rdkafka crate.
//!
//! Owns: the CLI, the plan of one run (fresh broker → produce acks=1 → produce acks=all →
//! consume with the default `fetch.wait.max.ms` and with 1 ms → SIGTERM), the per-phase
//! broker CPU/RSS sampling around each phase, and printing the summary table. The
//! `compaction` mode has its own plan and run loop in [`compaction`]; the `compare` mode
//! (Skiff side by side with Apache Kafka and Tansu, issue 7) lives in [`suite`] and
//! [`compare`].
//!
//! Thread-safety: the main thread drives everything; produce phases spawn their own threads
//! and join them before returning. On-disk: only the broker's temp data dir (removed after
//! each run). Every wait is bounded by a deadline; the process stops itself.

mod broker;
mod canvas;
mod cleanlog;
mod compaction;
mod compare;
mod connections;
mod console;
mod consume;
mod http;
mod kafkaclean;
mod keyed;
mod latency;
mod limits;
mod matrix;
mod partitions;
mod paths;
mod perftest;
mod plot;
mod probe;
mod procfs;
mod produce;
mod rawconn;
mod scale_plot;
mod sessions;
mod share;
mod sharerows;
mod startup;
mod stats;
mod suite;
mod tablerows;
mod tables;
mod targets;
mod tls;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};

use broker::{BrokerKind, RunningBroker};
use produce::Acks;
use stats::{Measurement, Table};

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Produce with acks=1 and with acks=all.
    Produce,
    /// Consume from offset 0 (the data is produced first with acks=1, not reported).
    Consume,
    /// Both.
    All,
    /// Log compaction: a keyed workload on a compacted topic, time until the cleaner is done,
    /// cleaning throughput, then a check of every key's latest value.
    Compaction,
    /// Side by side with Apache Kafka 4.4.0 and Tansu 0.6.0 (issue 7): produce matrix,
    /// catch-up consume, fixed-rate latency, start-up, idle RSS, physical limits, share
    /// groups (see `sharerows`), compacted topics as tables (see `tablerows`); writes
    /// compare.md and compare.png. With --smoke: seconds, Skiff only (for CI).
    Compare,
    /// The web console's cost (issue 17): RSS with the console on and off, and the time to
    /// serve each page (see `console`).
    Console,
    /// Idle connections (issue 18): RSS, open files and an active producer's latency with up
    /// to --connections idle clients connected, Skiff beside Kafka (see `connections`).
    Connections,
    /// Idle partitions (issue 18): create time, RSS, open files, a hot producer's latency and
    /// restart times with 1 to --max-partitions partitions, Skiff beside Kafka (see
    /// `partitions`).
    Partitions,
    /// acks=1 and acks=all through Kafka's own ProducerPerformance (the Java client, 1 KiB):
    /// the broker's CPU per GB and MB/s, Skiff beside Kafka (issue 18, see `perftest`), on
    /// --partitions partitions; with --out, also written to <out>/perftest.md (perftest-pN.md).
    PerfTest,
    /// A consumer of --partitions partitions (default here 2,000), few with data: broker CPU
    /// and bytes per fetch with full fetches and with an incremental fetch session (KIP-227),
    /// Skiff beside Kafka (issue 19, see `sessions`); --records is the fetches per way.
    FetchSessions,
}

/// Throughput benchmark for the skiff broker (release binary; the bench never builds it).
#[derive(Debug, Parser)]
#[command(name = "skiff-bench")]
struct Cli {
    #[arg(value_enum, default_value = "all")]
    mode: Mode,
    /// Records per produce phase [default: 1 GiB worth of --size, clamped to 1000..=4000000].
    #[arg(long)]
    records: Option<u64>,
    /// Value size in bytes.
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// How many times to repeat every measurement (each run on a fresh broker).
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Partitions per topic.
    #[arg(long, default_value_t = 1)]
    partitions: i32,
    /// Producer threads (each its own librdkafka client and connection).
    #[arg(long, default_value_t = 2)]
    producers: usize,
    /// Broker binary [default: $CARGO_TARGET_DIR/release/skiff, else <workspace>/target/release/skiff].
    #[arg(long)]
    broker_bin: Option<PathBuf>,
    /// Tiny load, one run (for CI; well under 20 s, compaction well under 30 s).
    #[arg(long)]
    smoke: bool,
    /// Idle connections at the last step of `connections`.
    #[arg(long, default_value_t = 10_000)]
    connections: usize,
    /// Partitions at the last step of `partitions`.
    #[arg(long, default_value_t = 100_000)]
    max_partitions: i32,
    /// `partitions` and `connections`: also draw cost against size (log scales) to this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    compaction: compaction::Args,
    #[command(flatten)]
    compare: compare::Args,
}

/// Default payload per produce phase: large enough that a phase takes seconds rather than a
/// fraction of one (256 MiB took 0.5-2 s on 2 cores), small enough that one run's two topics
/// (2 GiB, deleted after the run) fit comfortably in a CI machine's temp dir.
const DEFAULT_PHASE_BYTES: u64 = 1024 * 1024 * 1024;
/// Bounds that keep a mistyped flag from filling the disk or running for hours.
const MAX_RECORDS: u64 = 20_000_000;
const MAX_PHASE_BYTES: u64 = 8_000_000_000;
/// librdkafka's default message.max.bytes is 1000000; bigger values need client tuning.
const MAX_SIZE: usize = 1_000_000;
const SMOKE_RECORDS: u64 = 2_000;

/// Everything a run needs, validated.
struct Plan {
    mode: Mode,
    records: u64,
    size: usize,
    runs: u32,
    partitions: i32,
    producers: usize,
    /// Per-phase deadline: generous, but finite.
    phase_timeout: Duration,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = real_main(cli) {
        eprintln!("skiff-bench: error: {e:#}");
        std::process::exit(1);
    }
}

/// Apache Kafka through the repo's scripts, unless --no-kafka.
fn kafka_kind(cli: &Cli) -> Option<BrokerKind> {
    (!cli.compare.no_kafka).then(|| BrokerKind::Kafka {
        scripts: cli
            .compare
            .kafka_scripts
            .clone()
            .unwrap_or_else(|| workspace_root().join("tests").join("kafka")),
    })
}

fn real_main(cli: Cli) -> Result<()> {
    let plan = plan(&cli)?;
    let bin = cli.broker_bin.clone().unwrap_or_else(default_broker_bin);
    if cli.mode == Mode::Compare {
        let workspace = workspace_root();
        let command = paths::Shown::here(&workspace).command(std::env::args());
        return suite::run(&suite::Invocation {
            args: &cli.compare,
            compaction: &cli.compaction,
            runs: cli.runs,
            smoke: cli.smoke,
            producers: cli.producers,
            skiff_bin: &bin,
            workspace: &workspace,
            command,
        });
    }
    let kind = BrokerKind::Skiff { bin: bin.clone() };
    kind.check()?;
    let (clk_tck, clk_src) = procfs::clk_tck();

    if plan.mode == Mode::Compaction {
        return compaction_main(&cli, &kind, &bin, clk_tck);
    }
    if plan.mode == Mode::Console {
        return console::run(&bin, plan.runs, clk_tck);
    }
    if plan.mode == Mode::Connections {
        return connections::run(
            &bin,
            kafka_kind(&cli),
            cli.connections,
            plan.runs,
            clk_tck,
            cli.plot.as_deref(),
        );
    }
    if plan.mode == Mode::Partitions {
        return partitions::run(
            &bin,
            kafka_kind(&cli),
            cli.max_partitions,
            plan.runs,
            clk_tck,
            cli.plot.as_deref(),
        );
    }
    if plan.mode == Mode::FetchSessions {
        // --partitions defaults to 1 for the produce modes; a session is about many.
        let partitions = if cli.partitions == 1 {
            2_000
        } else {
            cli.partitions
        };
        return sessions::run(
            &bin,
            kafka_kind(&cli),
            partitions,
            cli.records.unwrap_or(2_000),
            plan.runs,
            clk_tck,
        );
    }
    if plan.mode == Mode::PerfTest {
        let workspace = workspace_root();
        let markdown = perftest::run(
            &bin,
            kafka_kind(&cli),
            &perftest::tool_script(&workspace),
            cli.records.unwrap_or(1_000_000),
            cli.partitions,
            plan.runs,
            clk_tck,
        )?;
        if let Some(dir) = &cli.compare.out {
            let command = paths::Shown::here(&workspace).command(std::env::args());
            std::fs::create_dir_all(dir)?;
            let path = match cli.partitions {
                1 => dir.join("perftest.md"),
                n => dir.join(format!("perftest-p{n}.md")),
            };
            std::fs::write(
                &path,
                format!(
                    "# skiff-bench perf-test\n\n- command: `{command}`\n- machine: {}\n\n{markdown}",
                    procfs::machine_facts()
                ),
            )?;
            println!("wrote {}", path.display());
        }
        return Ok(());
    }
    let mut table = Table::default();
    for run in 1..=plan.runs {
        eprintln!("run {run}/{}: starting {}", plan.runs, kind.name());
        let mut b = kind.launch()?;
        let result = one_run(&b, &plan, clk_tck, &mut table);
        let stopped = b.stop();
        if let Err(e) = result {
            bail!(
                "run {run} failed: {e:#}\nbroker log tail:\n{}",
                b.log_tail(30)
            );
        }
        stopped?;
    }

    println!();
    println!("skiff-bench: {} ({})", kind.name(), bin.display());
    println!("machine: {}", procfs::machine_facts());
    println!(
        "load: {} records x {} B per phase ({:.1} MB), {} partition(s), {} producer thread(s), \
         {} run(s), fresh broker + data dir per run",
        plan.records,
        plan.size,
        (plan.records * plan.size as u64) as f64 / 1e6,
        plan.partitions,
        plan.producers,
        plan.runs
    );
    println!(
        "notes: MB = 10^6 payload bytes; produce time = first send -> last delivery report; \
         consume time = assign() -> last record;\n       broker CPU = utime+stime during the \
         phase (CLK_TCK {clk_tck} from {clk_src}); peak RSS = VmHWM since broker start;\n       \
         clients run on the same machine and share its cores."
    );
    println!();
    print!("{}", table.render());
    Ok(())
}

/// The `compaction` mode: its own plan, runs and header.
fn compaction_main(cli: &Cli, kind: &BrokerKind, bin: &Path, clk_tck: f64) -> Result<()> {
    let plan = compaction::plan(&cli.compaction, cli.runs, cli.smoke)?;
    let load_before = procfs::load_average();
    let mut table = Table::default();
    let mut kinds = vec![kind.clone()];
    if cli.compaction.kafka {
        let scripts = cli
            .compare
            .kafka_scripts
            .clone()
            .unwrap_or_else(|| workspace_root().join("tests").join("kafka"));
        let k = BrokerKind::Kafka { scripts };
        k.check()?;
        kinds.push(k);
    }
    let mut m = matrix::Matrix::new(&[compare::SKIFF, compare::KAFKA], compare::SKIFF);
    compaction::run(&kinds, &plan, clk_tck, &mut table, &mut m)?;
    let w = &plan.workload;
    println!();
    println!(
        "skiff-bench compaction: {} ({})",
        kind.name(),
        bin.display()
    );
    println!("machine: {}", procfs::machine_facts());
    println!(
        "load average (1/5/15 min): {load_before} at start, {} at end",
        procfs::load_average()
    );
    println!(
        "load: 1 partition, {} keys x {} writes{} of {} B (key {} + value {}) = {:.1} MB, \
         live {:.1} MB;\n      segment.bytes {}, min.cleanable.dirty.ratio {}, \
         log.cleaner.backoff.ms {}, dedupe buffer {};\n      cleaning {}; {} run(s) per \
         thread count",
        w.keys,
        w.rounds,
        if w.hot_rounds > 0 {
            format!(
                ", then {} hot keys x {} writes ({} ms apart)",
                w.hot_keys,
                w.hot_rounds,
                w.hot_pause.as_millis()
            )
        } else {
            String::new()
        },
        w.record_bytes(),
        keyed::Workload::key_len(),
        w.value_size,
        w.total_bytes() as f64 / 1e6,
        w.live_bytes() as f64 / 1e6,
        plan.segment_bytes,
        plan.dirty_ratio,
        plan.backoff_ms,
        plan.dedupe_buffer
            .map_or("broker default".to_string(), |d| d.to_string()),
        if plan.deferred {
            "deferred until the last write (ratio 1 -> AlterConfigs)"
        } else {
            "concurrent with the writes"
        },
        plan.runs
    );
    println!(
        "notes: MB = 10^6 bytes; cleaner figures are sums over the passes' summary lines \
         (read/write MB/s = bytes / pass time);\n       settled = a pass reached the active \
         segment (clean below it), or the dirty share left stayed <= min.cleanable.dirty.ratio \
         for 2 back-offs;\n       cleaner CPU = skiff-cleaner-* threads (CLK_TCK {clk_tck}); \
         peak RSS = VmHWM since broker start;\n       every run ends with a full read from \
         offset 0 verifying each key's latest value; clients share the machine's cores."
    );
    println!();
    print!("{}", table.render());
    if cli.compaction.kafka {
        compaction_report(cli, &plan, &m, &load_before)?;
    }
    Ok(())
}

/// Side by side with Kafka: the table with ratios, the issue 7 target, and (unless --smoke)
/// `compaction.md` in the results dir (or --out).
fn compaction_report(
    cli: &Cli,
    plan: &compaction::Plan,
    m: &matrix::Matrix,
    load_before: &str,
) -> Result<()> {
    let outcome = targets::compaction(m, plan.dedupe_buffer);
    println!("\nside by side (medians, min–max; ratio > 1x = skiff leads):");
    print!("{}", m.render_text());
    println!(
        "target: [{}] {} — {}",
        outcome.verdict.label(),
        outcome.target,
        outcome.evidence
    );
    if cli.smoke {
        return Ok(());
    }
    let out = cli.compare.out.clone().unwrap_or_else(|| {
        workspace_root()
            .join("crates")
            .join("skiff-bench")
            .join("results")
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let w = &plan.workload;
    let md = format!(
        "- command: `{}`\n- machine: {}\n- load average (1/5/15 min): {load_before} at start, {} \
         at end\n- workload: 1 partition, {} keys x {} writes of {} B = {:.1} MB ({:.1} MB \
         live), segment.bytes {}, min.cleanable.dirty.ratio {}, log.cleaner.backoff.ms {}, \
         dedupe buffer {} on both brokers; {}; the same rdkafka producer (acks=1) and verifier \
         (read from 0: every key ends with its last acknowledged write) on both\n- kafka: \
         Apache Kafka 4.4.0 via tests/kafka (JVM -Xmx1g); its figures are from the cleaner's own \
         report (\"Log cleaner thread N cleaned log ...\", in kafka.out with the repo's log4j \
         config); peak RSS is the whole process (skiff broker / Kafka JVM); {} run(s), \
         interleaved, fresh broker each\n\n{}\n| target | measured | verdict |\n|---|---|---|\n\
         | {} | {} | {} |\n",
        paths::Shown::here(&workspace_root()).command(std::env::args()),
        procfs::machine_facts(),
        procfs::load_average(),
        w.keys,
        w.rounds,
        w.record_bytes(),
        w.total_bytes() as f64 / 1e6,
        w.live_bytes() as f64 / 1e6,
        plan.segment_bytes,
        plan.dirty_ratio,
        plan.backoff_ms,
        plan.dedupe_buffer
            .map_or("default".to_string(), |d| format!("{} MiB", d >> 20)),
        if plan.deferred {
            "cleaning deferred until the last write (min.cleanable.dirty.ratio 1 -> AlterConfigs)"
        } else {
            "cleaning concurrent with the writes"
        },
        plan.runs,
        m.render_markdown(),
        outcome.target,
        outcome.evidence,
        outcome.verdict.label()
    );
    let path = out.join("compaction.md");
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

fn plan(cli: &Cli) -> Result<Plan> {
    if cli.size == 0 || cli.size > MAX_SIZE {
        bail!("--size must be 1..={MAX_SIZE} bytes, got {}", cli.size);
    }
    if !(1..=1024).contains(&cli.partitions) {
        bail!("--partitions must be 1..=1024, got {}", cli.partitions);
    }
    if !(1..=16).contains(&cli.producers) {
        bail!("--producers must be 1..=16, got {}", cli.producers);
    }
    let (records, runs) = if cli.smoke {
        (cli.records.unwrap_or(SMOKE_RECORDS).min(SMOKE_RECORDS), 1)
    } else {
        let default = (DEFAULT_PHASE_BYTES / cli.size as u64).clamp(1_000, 4_000_000);
        (cli.records.unwrap_or(default), cli.runs)
    };
    if records == 0 || records > MAX_RECORDS {
        bail!("--records must be 1..={MAX_RECORDS}, got {records}");
    }
    let phase_bytes = records.saturating_mul(cli.size as u64);
    if phase_bytes > MAX_PHASE_BYTES {
        bail!("--records x --size = {phase_bytes} bytes per phase; the limit is {MAX_PHASE_BYTES}");
    }
    if !(1..=20).contains(&runs) {
        bail!("--runs must be 1..=20, got {runs}");
    }
    // 60 s of slack plus 10 MB/s: far below anything a working broker does on loopback.
    let phase_timeout = Duration::from_secs(60 + phase_bytes / 10_000_000);
    Ok(Plan {
        mode: cli.mode,
        records,
        size: cli.size,
        runs,
        partitions: cli.partitions,
        producers: cli.producers,
        phase_timeout,
    })
}

/// `$CARGO_TARGET_DIR/release/skiff` when that is set (as under `cargo run`), else the
/// workspace's `target/release/skiff`.
fn default_broker_bin() -> PathBuf {
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return Path::new(&t).join("release").join("skiff");
    }
    workspace_root()
        .join("target")
        .join("release")
        .join("skiff")
}

/// The workspace this crate was built in (for `tests/kafka` and the results dir).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// One run on a fresh broker: the phases the mode asks for, each recorded in `table`.
fn one_run(b: &RunningBroker, plan: &Plan, clk_tck: f64, table: &mut Table) -> Result<()> {
    let topic_one = "bench-acks1";
    produce::create_topic(&b.bootstrap(), topic_one, plan.partitions)?;
    let produced = produce_phase(b, plan, clk_tck, topic_one, Acks::Leader)?;
    if plan.mode != Mode::Consume {
        table.record("produce acks=1", produced);
    }
    if plan.mode != Mode::Consume {
        let topic_all = "bench-acksall";
        produce::create_topic(&b.bootstrap(), topic_all, plan.partitions)?;
        let m = produce_phase(b, plan, clk_tck, topic_all, Acks::All)?;
        table.record("produce acks=all", m);
    }
    if plan.mode != Mode::Produce {
        for (label, wait) in [
            ("consume fetch.wait=default", None),
            ("consume fetch.wait=1ms", Some(1)),
        ] {
            let spec = consume::ConsumeSpec {
                bootstrap: b.bootstrap(),
                topic: topic_one.to_string(),
                partitions: plan.partitions,
                expected: produced.records,
                fetch_wait_ms: wait,
                timeout: plan.phase_timeout,
                ssl_ca: None,
            };
            let m = measure(b, clk_tck, || {
                let r = consume::run(&spec)?;
                Ok((r.records, r.bytes, r.secs))
            })
            .with_context(|| label.to_string())?;
            eprintln!("  {label}: {:.1} MB/s", m.mb_per_sec());
            table.record(label, m);
        }
    }
    Ok(())
}

fn produce_phase(
    b: &RunningBroker,
    plan: &Plan,
    clk_tck: f64,
    topic: &str,
    acks: Acks,
) -> Result<Measurement> {
    let spec = produce::ProduceSpec {
        bootstrap: b.bootstrap(),
        topic: topic.to_string(),
        partitions: plan.partitions,
        records: plan.records,
        size: plan.size,
        acks,
        producers: plan.producers,
        timeout: plan.phase_timeout,
        ssl_ca: None,
    };
    let m = measure(b, clk_tck, || {
        let r = produce::run(&spec)?;
        Ok((r.records, r.bytes, r.secs))
    })
    .with_context(|| format!("produce {}", acks.label()))?;
    eprintln!("  produce {}: {:.1} MB/s", acks.label(), m.mb_per_sec());
    Ok(m)
}

/// Runs `phase` between two `/proc` samples of the broker; the phase returns
/// (records, payload bytes, seconds).
fn measure(
    b: &RunningBroker,
    clk_tck: f64,
    phase: impl FnOnce() -> Result<(u64, u64, f64)>,
) -> Result<Measurement> {
    let before = b.sample(clk_tck)?;
    let (records, bytes, secs) = phase()?;
    let after = b.sample(clk_tck)?;
    Ok(Measurement {
        records,
        bytes,
        secs,
        broker_cpu_secs: (after.cpu_secs - before.cpu_secs).max(0.0),
        broker_peak_rss_bytes: after.peak_rss_bytes,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("skiff-bench").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn defaults_size_a_phase_to_1_gib() {
        let p = plan(&cli(&[])).unwrap();
        assert_eq!(p.mode, Mode::All);
        assert_eq!(p.records, 1_048_576);
        let p = plan(&cli(&["--size", "10"])).unwrap();
        assert_eq!(p.records, 4_000_000);
        assert_eq!(p.runs, 3);
    }

    #[test]
    fn smoke_is_tiny_and_runs_once() {
        let p = plan(&cli(&["produce", "--smoke", "--runs", "9"])).unwrap();
        assert_eq!(
            (p.mode, p.records, p.runs),
            (Mode::Produce, SMOKE_RECORDS, 1)
        );
    }

    #[test]
    fn compaction_mode_and_its_flags_parse() {
        let c = cli(&[
            "compaction",
            "--bytes",
            "512M",
            "--keys",
            "5000",
            "--threads",
            "2",
            "--live",
            "0.2",
        ]);
        assert_eq!(c.mode, Mode::Compaction);
        let p = compaction::plan(&c.compaction, c.runs, c.smoke).unwrap();
        assert_eq!((p.workload.keys, p.workload.rounds), (5000, 5));
        assert_eq!(p.threads, vec![2]);
    }

    #[test]
    fn out_of_bounds_flags_are_rejected() {
        assert!(plan(&cli(&["--size", "0"])).is_err());
        assert!(plan(&cli(&["--records", "0"])).is_err());
        assert!(plan(&cli(&["--runs", "0"])).is_err());
        assert!(plan(&cli(&["--partitions", "0"])).is_err());
        assert!(plan(&cli(&["--records", "20000000", "--size", "1000"])).is_err());
    }
}
