//! The `compaction` mode: how fast and how leanly the broker compacts one partition.
//!
//! Owns: the mode's flags ([`Args`]) and their validation ([`plan`]), and the run loop. One
//! run = a fresh broker with `log.cleaner.threads=N` and INFO logs for `skiff_cleaner` →
//! a topic with `cleanup.policy=compact` (1 partition) → the keyed workload (every key
//! written `1/live` times, round by round) → wait until the cleaner is done → read the
//! partition from 0 and check every key's latest value → SIGTERM.
//!
//! "Done" ([`Settled`]): a pass reached the active segment (at most one record per key below
//! it: "clean"), or what is left dirty is at or below `min.cleanable.dirty.ratio`, held for
//! two back-offs without a new pass, so the broker will not clean it (Kafka's rule; with
//! concurrent cleaning that is the usual end state). Cleaning throughput is the sum of the
//! bytes the passes' summary lines report over the sum of their durations.
//!
//! Peers: the same run works on Apache Kafka ([`BrokerKind::Kafka`], `--kafka`): the same
//! topic configs and broker properties (`log.cleaner.threads`, `log.cleaner.backoff.ms`,
//! `log.cleaner.dedupe.buffer.size`), the same producer and verifier; its passes come from
//! the cleaner's own report (see `kafkaclean`), its memory is the JVM's peak RSS plus the
//! report's "Buffer utilization". Every run's figures also go to a [`Matrix`] (one column
//! per broker) for the side-by-side table and the issue 7 target.
//!
//! Thread-safety: runs on the bench's main thread. On-disk: only the broker's temp data dir.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::broker::{BrokerKind, Launch, RunningBroker};
use crate::cleanlog::{parse_summary, segments, settled, LogTail, PassSummary, Settled};
use crate::kafkaclean::KafkaReports;
use crate::keyed::{self, Workload, MIN_VALUE};
use crate::matrix::{Better, Matrix};
use crate::produce::{alter_topic_configs, create_topic_with};
use crate::stats::Table;

const TOPIC: &str = "bench-compact";
/// The archive topic of the `--archive` runs (delete policy, no retention).
const ARCHIVE_TOPIC: &str = "bench-compact-history";
const MIB: u64 = 1024 * 1024;
/// Largest record librdkafka sends with its default message.max.bytes.
const MAX_VALUE: usize = 900_000;
/// How often the settle loop looks at the broker log and the data dir.
const POLL: Duration = Duration::from_millis(100);

/// Flags of the `compaction` mode (ignored by the other modes).
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Bytes (keys + values) to write, e.g. 512M, 1G (binary units) [default: 1G; smoke 2M].
    #[arg(long, value_parser = parse_size)]
    pub bytes: Option<u64>,
    /// Distinct keys [default: 100000; smoke 1000].
    #[arg(long)]
    pub keys: Option<u64>,
    /// Fraction of the data that stays live: every key is written round(1/live) times.
    #[arg(long, default_value_t = 0.1)]
    pub live: f64,
    /// `log.cleaner.threads`; omitted: one series with 1 and one with 2.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Topic `min.cleanable.dirty.ratio`.
    #[arg(long, default_value_t = 0.5)]
    pub dirty_ratio: f64,
    /// Topic `segment.bytes` (at least 1M) [default: 64M; smoke 1M].
    #[arg(long, value_parser = parse_size)]
    pub segment_bytes: Option<u64>,
    /// Broker `log.cleaner.backoff.ms` (Kafka's default is 15000) [default: 1000; smoke 200].
    #[arg(long)]
    pub backoff_ms: Option<u64>,
    /// Broker `log.cleaner.dedupe.buffer.size`, e.g. 16M [default: the broker's].
    #[arg(long, value_parser = parse_size)]
    pub dedupe_buffer: Option<u64>,
    /// Hold cleaning until everything is written (the topic starts with
    /// min.cleanable.dirty.ratio=1, set to --dirty-ratio by AlterConfigs after the last
    /// write), so one cleaning of the whole log is measured.
    #[arg(long)]
    pub deferred: bool,
    /// Run every Skiff series twice: as is, and with `skiff.compaction.archive.topic` set to a
    /// second topic (docs/compaction.md §5.11), so the cost of archiving shows side by side.
    #[arg(long)]
    pub archive: bool,
    /// After the keyed workload, write only the first N keys again (`--hot-rounds` times): a
    /// few hot keys over a large cold table, where a pass has little to change (not counted
    /// in --bytes).
    #[arg(long, default_value_t = 0)]
    pub hot_keys: u64,
    /// Rounds over the `--hot-keys` keys.
    #[arg(long, default_value_t = 0)]
    pub hot_rounds: u32,
    /// Pause after each hot round, in ms: a steady stream of updates that the cleaner follows
    /// pass by pass, instead of one burst.
    #[arg(long, default_value_t = 0)]
    pub hot_pause_ms: u64,
    /// Also run the same workload on Apache Kafka 4.4.0 (tests/kafka, see --kafka-scripts),
    /// interleaved with Skiff's runs, and report Skiff's ratios to it.
    #[arg(long)]
    pub kafka: bool,
}

/// A validated compaction benchmark.
#[derive(Debug, Clone)]
pub struct Plan {
    pub workload: Workload,
    pub threads: Vec<usize>,
    pub runs: u32,
    pub dirty_ratio: f64,
    pub segment_bytes: u64,
    pub backoff_ms: u64,
    pub dedupe_buffer: Option<u64>,
    pub deferred: bool,
    /// Also run each Skiff series with an archive topic.
    pub archive: bool,
    pub produce_timeout: Duration,
    pub settle_timeout: Duration,
}

/// `123`, `64K`, `64M`, `1G` (optionally followed by `B` or `iB`); suffixes are powers of 1024.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mul) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 4096, 64M or 1G"))?;
    n.checked_mul(mul)
        .ok_or_else(|| format!("{s} is too large"))
}

/// Validates the flags; `smoke` shrinks the defaults so a run takes seconds.
pub fn plan(a: &Args, runs: u32, smoke: bool) -> Result<Plan> {
    let (d_bytes, d_keys, d_seg, d_backoff) = if smoke {
        (2 * MIB, 1_000, MIB, 200)
    } else {
        (1024 * MIB, 100_000, 64 * MIB, 1_000)
    };
    let bytes = a.bytes.unwrap_or(d_bytes);
    let keys = a.keys.unwrap_or(d_keys);
    if !(1..=10_000_000).contains(&keys) {
        bail!("--keys must be 1..=10000000, got {keys}");
    }
    if !(a.live > 0.0 && a.live <= 1.0) {
        bail!("--live must be in (0, 1], got {}", a.live);
    }
    let rounds = (1.0 / a.live).round().clamp(1.0, 1000.0) as u32;
    if bytes > 8_000_000_000 {
        bail!("--bytes is limited to 8 GB, got {bytes}");
    }
    let per_record = bytes / (keys * u64::from(rounds));
    let value = (per_record as usize).saturating_sub(Workload::key_len());
    if !(MIN_VALUE..=MAX_VALUE).contains(&value) {
        bail!(
            "--bytes {bytes} over {keys} keys x {rounds} writes gives {value}-byte values; \
             they must be {MIN_VALUE}..={MAX_VALUE} bytes"
        );
    }
    let threads = match a.threads {
        Some(t) if (1..=16).contains(&t) => vec![t],
        Some(t) => bail!("--threads must be 1..=16, got {t}"),
        None => vec![1, 2],
    };
    if !(0.0..=1.0).contains(&a.dirty_ratio) {
        bail!("--dirty-ratio must be in [0, 1], got {}", a.dirty_ratio);
    }
    let segment_bytes = a.segment_bytes.unwrap_or(d_seg);
    if !(MIB..=i32::MAX as u64).contains(&segment_bytes) {
        bail!("--segment-bytes must be 1M..=2G-1 (Kafka's range), got {segment_bytes}");
    }
    let backoff_ms = a.backoff_ms.unwrap_or(d_backoff);
    if !(1..=120_000).contains(&backoff_ms) {
        bail!("--backoff-ms must be 1..=120000, got {backoff_ms}");
    }
    let runs = if smoke { 1 } else { runs };
    if !(1..=20).contains(&runs) {
        bail!("--runs must be 1..=20, got {runs}");
    }
    if a.hot_keys > keys || (a.hot_keys == 0) != (a.hot_rounds == 0) {
        bail!(
            "--hot-keys (at most --keys) and --hot-rounds go together, got {} and {}",
            a.hot_keys,
            a.hot_rounds
        );
    }
    if a.hot_rounds > 100_000 {
        bail!("--hot-rounds must be at most 100000, got {}", a.hot_rounds);
    }
    if a.hot_pause_ms > 10_000 {
        bail!(
            "--hot-pause-ms must be at most 10000, got {}",
            a.hot_pause_ms
        );
    }
    let workload = Workload::new(keys, rounds, value)
        .with_hot(a.hot_keys, a.hot_rounds)
        .with_hot_pause(Duration::from_millis(a.hot_pause_ms));
    let total = workload.total_bytes();
    let paused = workload.hot_pause * workload.hot_rounds;
    Ok(Plan {
        workload,
        threads,
        runs,
        dirty_ratio: a.dirty_ratio,
        segment_bytes,
        backoff_ms,
        dedupe_buffer: a.dedupe_buffer,
        deferred: a.deferred,
        archive: a.archive,
        // Generous but finite: 60 s plus 5 MB/s.
        produce_timeout: Duration::from_secs(60 + total / 5_000_000) + paused,
        settle_timeout: Duration::from_secs(60 + 3 * backoff_ms / 1000 + total / 5_000_000),
    })
}

/// Matrix scenario label of a series, e.g. "compaction 1074 MB, 100000 keys, 10% live, t=1
/// deferred" (the target evaluation looks for the "compaction " prefix).
pub fn scenario(plan: &Plan, threads: usize) -> String {
    let w = &plan.workload;
    let hot = if w.hot_rounds > 0 {
        format!(
            ", then {} hot keys x {} every {} ms",
            w.hot_keys,
            w.hot_rounds,
            w.hot_pause.as_millis()
        )
    } else {
        String::new()
    };
    format!(
        "compaction {:.0} MB, {} keys, {:.0}% live{hot}, t={threads}{}",
        w.total_bytes() as f64 / 1e6,
        w.keys,
        100.0 / f64::from(w.rounds),
        if plan.deferred { " deferred" } else { "" }
    )
}

/// The `--archive` variants of a series: without, then (Skiff only) with the archive topic.
fn variants(plan: &Plan, kind: &BrokerKind) -> &'static [bool] {
    match kind {
        BrokerKind::Skiff { .. } if plan.archive => &[false, true],
        _ => &[false],
    }
}

/// Runs every series (thread count) `plan.runs` times for every broker in `kinds` (runs
/// interleaved: run 1 of each broker, then run 2, ...), each on a fresh broker. Records the
/// figures in `table` under "[name ]compaction t=N[ deferred]" and in `m` under
/// [`scenario`] with the broker's name as column. A failed Skiff run is an error; a failed
/// peer run is reported in `m` and the bench goes on.
pub fn run(
    kinds: &[BrokerKind],
    plan: &Plan,
    clk_tck: f64,
    table: &mut Table,
    m: &mut Matrix,
) -> Result<()> {
    for &threads in &plan.threads {
        for run in 1..=plan.runs {
            for (kind, archive) in kinds
                .iter()
                .flat_map(|k| variants(plan, k).iter().map(move |a| (k, *a)))
            {
                let name = kind.name();
                let with = if archive {
                    " with an archive topic"
                } else {
                    ""
                };
                eprintln!(
                    "compaction threads={threads} run {run}/{}: starting {name}{with}",
                    plan.runs
                );
                match run_once(kind, plan, threads, clk_tck, archive) {
                    Ok(f) if archive => {
                        let deferred = if plan.deferred { " deferred" } else { "" };
                        f.record(&format!("compaction t={threads}{deferred} archive"), table);
                        f.record_matrix(&format!("{} archive", scenario(plan, threads)), name, m);
                    }
                    Ok(f) => {
                        let deferred = if plan.deferred { " deferred" } else { "" };
                        let prefix = match kind {
                            BrokerKind::Skiff { .. } => String::new(),
                            _ => format!("{name} "),
                        };
                        f.record(&format!("{prefix}compaction t={threads}{deferred}"), table);
                        f.record_matrix(&scenario(plan, threads), name, m);
                    }
                    Err(e) if matches!(kind, BrokerKind::Skiff { .. }) => {
                        return Err(e.context(format!("compaction threads={threads} run {run}")))
                    }
                    Err(e) => {
                        eprintln!("  {name}: compaction threads={threads} run {run} failed: {e:#}");
                        m.not_run(
                            name,
                            &format!(
                                "compaction t={threads} run {run} failed: {}",
                                crate::compare::first_line(&e)
                            ),
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

/// One run on a fresh broker, stopped afterwards; errors carry the broker's log tail. A peer
/// that fails to *start* gets one more try (tests/kafka/start.sh can fail on its random
/// cluster id, e.g. one starting with '-'); the failure is printed, never hidden.
fn run_once(
    kind: &BrokerKind,
    plan: &Plan,
    threads: usize,
    clk_tck: f64,
    archive: bool,
) -> Result<Figures> {
    let opts = launch_options(plan, threads);
    let mut b = match kind.launch_with(&opts) {
        Ok(b) => b,
        Err(e) if !matches!(kind, BrokerKind::Skiff { .. }) => {
            eprintln!(
                "  {}: start failed, trying once more: {}",
                kind.name(),
                crate::compare::first_line(&e)
            );
            kind.launch_with(&opts)?
        }
        Err(e) => return Err(e),
    };
    let result = one_run(&b, plan, clk_tck, archive);
    let stopped = b.stop();
    let f = result.map_err(|e| anyhow::anyhow!("{e:#}\nbroker log tail:\n{}", b.log_tail(30)))?;
    stopped?;
    Ok(f)
}

fn launch_options(plan: &Plan, threads: usize) -> Launch {
    let mut settings = vec![
        format!("log.cleaner.threads={threads}"),
        format!("log.cleaner.backoff.ms={}", plan.backoff_ms),
    ];
    if let Some(d) = plan.dedupe_buffer {
        settings.push(format!("log.cleaner.dedupe.buffer.size={d}"));
    }
    Launch {
        settings,
        // The cleaner's per-pass summary lines are INFO; everything else stays quiet.
        log_filter: "warn,skiff_cleaner=info".to_string(),
        ssl_keystore: None,
    }
}

/// What one run measured.
struct Figures {
    produce_mb_s: f64,
    secs_to_settle: f64,
    settled: Settled,
    passes: usize,
    passes_after_last_write: usize,
    read_bytes: u64,
    written_bytes: u64,
    /// Bytes the passes appended to the archive topic (`--archive` runs).
    archived_bytes: u64,
    /// Bytes of clean segments the passes left unread (Skiff's segment summaries).
    skipped_bytes: u64,
    /// Medians over the passes of one run: MB read, MB written, seconds.
    median_read_mb: f64,
    median_written_mb: f64,
    median_pass_secs: f64,
    /// With `--hot-keys`: the passes that started in the hot writes (first dirty offset at or
    /// after the first hot write): their count and the same three medians.
    hot: Option<(usize, f64, f64, f64)>,
    pass_secs: f64,
    cleaner_cpu_secs: f64,
    broker_cpu_secs: f64,
    rss_at_last_write: u64,
    rss_at_end: u64,
    partition_bytes: u64,
    live_bytes: u64,
    /// Bytes of the closed segments at the last write (all dirty in deferred mode).
    closed_bytes: u64,
    deferred: bool,
    /// Kafka only: the highest "Buffer utilization" of a pass (share of the dedupe buffer).
    buffer_utilization: Option<f64>,
}

impl Figures {
    fn record(&self, phase: &str, t: &mut Table) {
        let mb = |b: u64| b as f64 / 1e6;
        let mib = |b: u64| b as f64 / MIB as f64;
        let (clean, ratio_left) = match self.settled {
            Settled::Clean => (1.0, 0.0),
            Settled::BelowRatio { dirty_ratio, .. } => (0.0, dirty_ratio),
        };
        let rows = [
            ("produce MB/s", self.produce_mb_s),
            ("s last write -> settled", self.secs_to_settle),
            ("clean below active (1=yes)", clean),
            ("dirty ratio left", ratio_left),
            ("cleaner passes", self.passes as f64),
            (
                "passes after last write",
                self.passes_after_last_write as f64,
            ),
            ("log MB closed @last write", mb(self.closed_bytes)),
            ("cleaner read MB", mb(self.read_bytes)),
            ("cleaner wrote MB", mb(self.written_bytes)),
            (
                "cleaner read MB/s",
                mb(self.read_bytes) / self.pass_secs.max(1e-9),
            ),
            (
                "cleaner write MB/s",
                mb(self.written_bytes) / self.pass_secs.max(1e-9),
            ),
            ("cleaner pass s (sum)", self.pass_secs),
            ("read MB per pass (median)", self.median_read_mb),
            ("wrote MB per pass (median)", self.median_written_mb),
            ("pass s (median)", self.median_pass_secs),
            ("skipped unread MB (sum)", mb(self.skipped_bytes)),
            ("cleaner threads CPU s", self.cleaner_cpu_secs),
            ("broker CPU s (whole run)", self.broker_cpu_secs),
            ("peak RSS MiB @last write", mib(self.rss_at_last_write)),
            ("peak RSS MiB @settled", mib(self.rss_at_end)),
            ("partition MB @settled", mb(self.partition_bytes)),
            ("live MB (keys x record)", mb(self.live_bytes)),
        ];
        for (label, v) in rows {
            t.record_value(phase, label, v);
        }
        if let Some(u) = self.buffer_utilization {
            t.record_value(phase, "dedupe buffer utilization %", 100.0 * u);
        }
        if let Some((n, read, wrote, secs)) = self.hot {
            t.record_value(phase, "hot passes", n as f64);
            t.record_value(phase, "read MB per hot pass (median)", read);
            t.record_value(phase, "wrote MB per hot pass (median)", wrote);
            t.record_value(phase, "hot pass s (median)", secs);
        }
        if self.archived_bytes > 0 {
            t.record_value(phase, "archived MB", mb(self.archived_bytes));
        }
    }

    /// The figures of the side-by-side table (and the issue 7 target).
    fn record_matrix(&self, scenario: &str, broker: &str, m: &mut Matrix) {
        let mib = |b: u64| b as f64 / MIB as f64;
        let (h, l) = (Better::Higher, Better::Lower);
        let per_pass_sec = |bytes: u64| bytes as f64 / 1e6 / self.pass_secs.max(1e-9);
        // The brokers count "read" differently (Skiff: the offset-map scan and the copy
        // scan; Kafka's "MB of log processed": the copy scan only), so the compared figure
        // is the log the cleaning had to process over the time it took: every closed segment
        // at the last write. Exact for deferred mode (one cleaning of the whole log).
        if self.deferred {
            m.add(
                scenario,
                METRIC_READ_MB_S,
                h,
                broker,
                per_pass_sec(self.closed_bytes),
            );
        }
        m.add(
            scenario,
            "own report: read MB/s",
            h,
            broker,
            per_pass_sec(self.read_bytes),
        );
        m.add(scenario, "cleaner pass s (sum)", l, broker, self.pass_secs);
        m.add(
            scenario,
            "read MB per pass (median)",
            l,
            broker,
            self.median_read_mb,
        );
        m.add(
            scenario,
            "wrote MB per pass (median)",
            l,
            broker,
            self.median_written_mb,
        );
        m.add(
            scenario,
            "pass s (median)",
            l,
            broker,
            self.median_pass_secs,
        );
        if let Some((_, read, wrote, secs)) = self.hot {
            m.add(scenario, "read MB per hot pass (median)", l, broker, read);
            m.add(scenario, "wrote MB per hot pass (median)", l, broker, wrote);
            m.add(scenario, "hot pass s (median)", l, broker, secs);
        }
        m.add(
            scenario,
            "s last write -> clean",
            l,
            broker,
            self.secs_to_settle,
        );
        m.add(
            scenario,
            "cleaner threads CPU s",
            l,
            broker,
            self.cleaner_cpu_secs,
        );
        m.add(scenario, METRIC_PEAK_RSS, l, broker, mib(self.rss_at_end));
        m.add(
            scenario,
            "partition MB after",
            l,
            broker,
            self.partition_bytes as f64 / 1e6,
        );
        if let Some(u) = self.buffer_utilization {
            m.add(
                scenario,
                "dedupe buffer utilization %",
                l,
                broker,
                100.0 * u,
            );
        }
    }
}

/// Matrix metric names the target evaluation reads.
pub const METRIC_READ_MB_S: &str = "cleaner MB/s (closed log / pass s)";
pub const METRIC_PEAK_RSS: &str = "peak RSS MiB (whole broker)";

fn one_run(b: &RunningBroker, plan: &Plan, clk_tck: f64, archive: bool) -> Result<Figures> {
    let w = &plan.workload;
    let configs = |ratio: f64| {
        let mut c = vec![
            ("cleanup.policy", "compact".to_string()),
            ("segment.bytes", plan.segment_bytes.to_string()),
            ("min.cleanable.dirty.ratio", ratio.to_string()),
        ];
        if archive {
            c.push(("skiff.compaction.archive.topic", ARCHIVE_TOPIC.to_string()));
        }
        c
    };
    if archive {
        let history = [
            ("cleanup.policy", "delete".to_string()),
            ("retention.ms", "-1".to_string()),
            ("segment.bytes", plan.segment_bytes.to_string()),
        ];
        create_topic_with(&b.bootstrap(), ARCHIVE_TOPIC, 1, &history)?;
    }
    // A log is cleaned when its dirty ratio is *above* the threshold: at 1 it never is.
    let initial_ratio = if plan.deferred { 1.0 } else { plan.dirty_ratio };
    create_topic_with(&b.bootstrap(), TOPIC, 1, &configs(initial_ratio))?;
    let start = b.sample(clk_tck)?;
    let produce_deadline = Instant::now() + plan.produce_timeout;
    let produced = keyed::produce(&b.bootstrap(), TOPIC, w, produce_deadline).context("produce")?;
    let last_write_unix = unix_now() - produced.last_write.elapsed().as_secs_f64();
    let at_last_write = b.sample(clk_tck)?;
    let part_dir = b.data_dir().join(format!("{TOPIC}-0"));
    // What a single cleaning of the whole log must process: every closed segment.
    let closed = segments(&part_dir)?;
    let closed_bytes: u64 = closed.iter().rev().skip(1).map(|s| s.bytes).sum();
    if plan.deferred {
        alter_topic_configs(&b.bootstrap(), TOPIC, &configs(plan.dirty_ratio))
            .context("releasing the cleaner")?;
    }
    let produce_mb_s = produced.bytes as f64 / 1e6 / produced.secs.max(1e-9);
    eprintln!(
        "  produced {} records, {:.1} MB in {:.1} s ({produce_mb_s:.1} MB/s)",
        produced.records,
        produced.bytes as f64 / 1e6,
        produced.secs
    );

    let mut tail = LogTail::new(b.log_path());
    let is_kafka = matches!(b.kind(), BrokerKind::Kafka { .. });
    let mut kafka_reports = KafkaReports::default();
    let mut buffer_utilization: Option<f64> = None;
    let mut passes: Vec<(PassSummary, Instant)> = Vec::new();
    let confirm = Duration::from_millis(2 * plan.backoff_ms + 1000);
    let deadline = Instant::now() + plan.settle_timeout;
    let mut candidate: Option<Instant> = None;
    let (state, settled_at, segs) = loop {
        let now = Instant::now();
        let mut new_pass = false;
        for line in tail.new_lines()? {
            let pass = if is_kafka {
                kafka_reports.feed(&line).map(|k| {
                    let u = buffer_utilization
                        .map_or(k.buffer_utilization, |u| u.max(k.buffer_utilization));
                    buffer_utilization = Some(u);
                    k.summary
                })
            } else {
                parse_summary(&line)
            };
            if let Some(p) = pass.filter(|p| p.topic == TOPIC && p.partition == 0) {
                passes.push((p, now));
                new_pass = true;
            }
        }
        let upto = passes.iter().map(|(p, _)| p.end_offset).max().unwrap_or(0);
        let segs = segments(&part_dir)?;
        match settled(&segs, upto, plan.dirty_ratio) {
            Some(Settled::Clean) => break (Settled::Clean, now, segs),
            Some(s @ Settled::BelowRatio { .. }) => {
                let since = match candidate {
                    Some(t) if !new_pass => t,
                    _ => now,
                };
                candidate = Some(since);
                if now.duration_since(since) >= confirm {
                    break (s, since, segs);
                }
            }
            None => candidate = None,
        }
        if now > deadline {
            bail!(
                "the cleaner did not settle within {:?} of the last write: cleaned up to \
                 offset {upto}, {} passes, segments {segs:?}",
                plan.settle_timeout,
                passes.len()
            );
        }
        std::thread::sleep(POLL);
    };
    let end = b.sample(clk_tck)?;
    // Linux truncates thread names to 15 bytes: Kafka's "kafka-log-cleaner-thread-0"
    // shows as "kafka-log-clean".
    let cleaner_threads = if is_kafka {
        "kafka-log-clean"
    } else {
        "skiff-cleaner"
    };
    let cleaner_cpu_secs = b.threads_cpu_secs(cleaner_threads, clk_tck)?;
    // The end of the last pass, by the broker's log timestamp, is when the cleaner finished;
    // without timestamps, when the bench saw the log settle (within POLL).
    let last_pass_end = passes
        .iter()
        .filter_map(|(p, _)| p.logged_at)
        .reduce(f64::max);
    let secs_to_settle = match last_pass_end {
        Some(t) if passes.iter().all(|(p, _)| p.logged_at.is_some()) => {
            (t - last_write_unix).max(0.0)
        }
        _ => settled_at
            .saturating_duration_since(produced.last_write)
            .as_secs_f64(),
    };
    let after_last_write = |p: &PassSummary, seen: Instant| match p.logged_at {
        Some(t) => t > last_write_unix,
        None => seen > produced.last_write,
    };
    let active_base = segs.last().map_or(0, |s| s.base);
    eprintln!(
        "  settled {secs_to_settle:.1} s after the last write: {state:?}; {} passes; {} segments",
        passes.len(),
        segs.len()
    );

    let verify_deadline = Instant::now() + plan.produce_timeout;
    let v = keyed::verify(
        &b.bootstrap(),
        TOPIC,
        w,
        &produced,
        active_base,
        verify_deadline,
    )
    .context("verify")?;
    if state == Settled::Clean && v.max_copies_below_active > 1 {
        bail!(
            "verify: the log was reported clean below offset {active_base}, but a key has {} \
             records there",
            v.max_copies_below_active
        );
    }
    eprintln!(
        "  verified: {} records read, every key ends with its last write",
        v.records_read
    );
    Ok(Figures {
        produce_mb_s,
        secs_to_settle,
        settled: state,
        passes: passes.len(),
        passes_after_last_write: passes
            .iter()
            .filter(|(p, seen)| after_last_write(p, *seen))
            .count(),
        read_bytes: passes.iter().map(|(p, _)| p.read_bytes).sum(),
        written_bytes: passes.iter().map(|(p, _)| p.written_bytes).sum(),
        archived_bytes: passes.iter().map(|(p, _)| p.archived_bytes).sum(),
        skipped_bytes: passes.iter().map(|(p, _)| p.skipped_bytes).sum(),
        median_read_mb: median(passes.iter().map(|(p, _)| p.read_bytes as f64 / 1e6)),
        median_written_mb: median(passes.iter().map(|(p, _)| p.written_bytes as f64 / 1e6)),
        median_pass_secs: median(passes.iter().map(|(p, _)| p.secs)),
        hot: (w.hot_rounds > 0).then(|| {
            // Offsets are assigned in send order on one partition (acks=1, no retries in
            // practice): the hot writes start after keys x rounds records.
            let first_hot = (w.keys * u64::from(w.rounds)) as i64;
            let hot: Vec<&PassSummary> = passes
                .iter()
                .map(|(p, _)| p)
                .filter(|p| p.first_dirty >= first_hot)
                .collect();
            (
                hot.len(),
                median(hot.iter().map(|p| p.read_bytes as f64 / 1e6)),
                median(hot.iter().map(|p| p.written_bytes as f64 / 1e6)),
                median(hot.iter().map(|p| p.secs)),
            )
        }),
        pass_secs: passes.iter().map(|(p, _)| p.secs).sum(),
        cleaner_cpu_secs,
        broker_cpu_secs: (end.cpu_secs - start.cpu_secs).max(0.0),
        rss_at_last_write: at_last_write.peak_rss_bytes,
        rss_at_end: end.peak_rss_bytes,
        partition_bytes: segs.iter().map(|s| s.bytes).sum(),
        live_bytes: w.live_bytes(),
        closed_bytes,
        deferred: plan.deferred,
        buffer_utilization,
    })
}

/// The median of `values` (the mean of the two middle ones for an even count; 0 when empty).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Wall-clock seconds since the Unix epoch (the broker's log timestamps are wall-clock).
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args() -> Args {
        Args {
            bytes: None,
            keys: None,
            live: 0.1,
            threads: None,
            dirty_ratio: 0.5,
            segment_bytes: None,
            backoff_ms: None,
            dedupe_buffer: None,
            deferred: false,
            archive: false,
            hot_keys: 0,
            hot_rounds: 0,
            hot_pause_ms: 0,
            kafka: false,
        }
    }

    #[test]
    fn archive_runs_skiff_with_and_without_and_peers_without() {
        let mut a = args();
        a.archive = true;
        let p = plan(&a, 1, true).unwrap();
        let skiff = BrokerKind::Skiff {
            bin: "skiff".into(),
        };
        let kafka = BrokerKind::Kafka {
            scripts: "k".into(),
        };
        assert_eq!(variants(&p, &skiff), &[false, true]);
        assert_eq!(variants(&p, &kafka), &[false]);
        let p = plan(&args(), 1, true).unwrap();
        assert_eq!(variants(&p, &skiff), &[false]);
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("16kB"), Ok(16 << 10));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999G").is_err());
    }

    #[test]
    fn default_plan_is_1_gib_over_100k_keys_written_10_times() {
        let p = plan(&args(), 3, false).unwrap();
        assert_eq!((p.workload.keys, p.workload.rounds), (100_000, 10));
        // 1 GiB / 1M records = 1073 B per record, 14 of them key.
        assert_eq!(p.workload.record_bytes(), 1073);
        assert_eq!((p.threads.clone(), p.runs), (vec![1, 2], 3));
        assert_eq!((p.segment_bytes, p.backoff_ms), (64 << 20, 1000));
    }

    #[test]
    fn smoke_is_tiny_and_runs_once() {
        let p = plan(&args(), 3, true).unwrap();
        assert_eq!(p.workload.keys, 1_000);
        assert!(p.workload.total_bytes() <= 2 << 20);
        assert_eq!((p.runs, p.segment_bytes), (1, 1 << 20));
    }

    #[test]
    fn bad_flags_are_rejected() {
        let bad = |f: fn(&mut Args)| {
            let mut a = args();
            f(&mut a);
            plan(&a, 1, false).is_err()
        };
        assert!(bad(|a| a.live = 0.0));
        assert!(bad(|a| a.live = 1.5));
        assert!(bad(|a| a.keys = Some(0)));
        assert!(bad(|a| a.threads = Some(0)));
        assert!(bad(|a| a.dirty_ratio = 1.1));
        assert!(bad(|a| a.segment_bytes = Some(1000)));
        // 1000 keys x 10 writes in 100 KB: 10-byte records cannot hold a key and a value.
        assert!(bad(|a| {
            a.bytes = Some(100_000);
            a.keys = Some(1000);
        }));
        assert!(plan(&args(), 0, false).is_err());
        // Hot keys and rounds go together, at most --keys keys.
        assert!(bad(|a| a.hot_keys = 10));
        assert!(bad(|a| a.hot_rounds = 10));
        assert!(bad(|a| {
            a.hot_keys = 200_000;
            a.hot_rounds = 10;
        }));
        assert!(bad(|a| {
            a.hot_keys = 10;
            a.hot_rounds = 10;
            a.hot_pause_ms = 20_000;
        }));
        let mut a = args();
        (a.hot_keys, a.hot_rounds, a.hot_pause_ms) = (100, 50, 5);
        let p = plan(&a, 1, false).unwrap();
        assert_eq!((p.workload.hot_keys, p.workload.hot_rounds), (100, 50));
        assert!(scenario(&p, 1).contains("then 100 hot keys x 50 every 5 ms"));
    }
}
