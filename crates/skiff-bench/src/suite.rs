//! Runs the `compare` mode from start to end and writes its report: physical limits, the
//! throughput matrix, the TLS rows, the fixed-rate latency phases, the start-up figures, the
//! share-group rows, the table rows (issue 16), then the printed table, `compare.md` (header,
//! table, limits, targets) and `compare.png` in the output dir.
//!
//! Owns: the order of the sections and the report text. Thread-safety: main thread only.
//! On-disk: the report files (overwritten) plus whatever the phases use (temp dirs).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::compaction;
use crate::compare::{self, Args, Contender, COLUMNS, KAFKA, SKIFF};
use crate::limits;
use crate::matrix::{fmt_num, Matrix};
use crate::plot;
use crate::procfs;
use crate::sharerows;
use crate::startup;
use crate::stats::{summarize, Table};
use crate::tablerows;
use crate::targets::{self, Limits};
use crate::tls;

/// Everything the `compare` mode needs from the command line.
pub struct Invocation<'a> {
    pub args: &'a Args,
    /// The compaction mode's flags (workload size, segment size, back-off, buffer).
    pub compaction: &'a compaction::Args,
    pub runs: u32,
    pub smoke: bool,
    pub producers: usize,
    pub skiff_bin: &'a Path,
    pub workspace: &'a Path,
    pub command: String,
}

pub fn run(inv: &Invocation<'_>) -> Result<()> {
    let started = Instant::now();
    let plan = compare::plan(inv.args, inv.runs, inv.smoke, inv.producers, inv.workspace)?;
    let (clk_tck, _) = procfs::clk_tck();
    let load_start = procfs::load_average();
    let mut m = Matrix::new(&COLUMNS, SKIFF);
    let contenders = compare::contenders(inv.args, inv.skiff_bin, inv.workspace, inv.smoke, &mut m);
    // Every contender must at least start: a Skiff that cannot is a hard error.
    contenders[0].kind.check()?;

    // --tls-only, --share-only, --tables-only and --startup-only each run their own section
    // and nothing else.
    let a = inv.args;
    let all = !a.tls_only && !a.share_only && !a.tables_only && !a.startup_only;
    let tls = !a.no_tls && !a.share_only && !a.tables_only && !a.startup_only;
    let share = !a.no_share && !a.tls_only && !a.tables_only && !a.startup_only;
    let tables = !a.no_tables && !a.tls_only && !a.share_only && !a.startup_only;
    let startup = all || a.startup_only;
    let (mut lo, mut disk) = (Vec::new(), Vec::new());
    if all {
        eprintln!("physical limits ({} run(s))", plan.runs);
        let scratch = tempfile::Builder::new()
            .prefix("skiff-bench-limits-")
            .tempdir()
            .context("creating a temp dir for the disk test")?;
        for _ in 0..plan.runs {
            lo.push(limits::loopback_mb_per_sec(plan.limits_bytes)?);
            disk.push(limits::disk_write_fsync_mb_per_sec(
                scratch.path(),
                plan.limits_bytes,
            )?);
        }
        drop(scratch);

        for run in 1..=plan.runs {
            for c in &contenders {
                eprintln!("throughput run {run}/{}: {}", plan.runs, c.label);
                compare::throughput_run(c, &plan, clk_tck, &mut m);
            }
        }
    }
    if tls {
        let certs = tls::dev_certs(inv.skiff_bin)?;
        for run in 1..=plan.runs {
            for c in contenders.iter().filter(|c| tls::applies_to(c)) {
                eprintln!("tls run {run}/{}: {}", plan.runs, c.label);
                tls::run(c, &plan, &certs, run, clk_tck, &mut m);
            }
        }
    }
    let rate = if all {
        compare::fixed_rate(&plan, &m)
    } else {
        None
    };
    if let Some(rate) = rate {
        for run in 1..=plan.runs {
            for c in &contenders {
                eprintln!(
                    "latency run {run}/{} at {rate:.0}/s: {}",
                    plan.runs, c.label
                );
                compare::latency_run(c, &plan, rate, &mut m);
            }
        }
    }
    for run in (1..=plan.runs).filter(|_| startup) {
        for c in contenders.iter().filter(|c| !c.acks_all_only) {
            eprintln!("start-up run {run}/{}: {}", plan.runs, c.label);
            startup::run(c, &plan, clk_tck, &mut m);
        }
    }

    for run in (1..=plan.runs).filter(|_| share) {
        for c in contenders.iter().filter(|c| sharerows::applies_to(c)) {
            eprintln!("share run {run}/{}: {}", plan.runs, c.label);
            sharerows::run(c, &plan, run, clk_tck, &mut m);
        }
    }

    for run in (1..=plan.runs).filter(|_| tables) {
        for c in contenders.iter().filter(|c| tablerows::applies_to(c)) {
            eprintln!("table read run {run}/{}: {}", plan.runs, c.label);
            tablerows::read_run(c, &plan, &mut m);
        }
        for c in contenders.iter().filter(|c| c.label == SKIFF) {
            eprintln!("key lookup run {run}/{}: {}", plan.runs, c.label);
            tablerows::lookup_run(c, &plan, clk_tck, &mut m);
        }
    }

    if all && !inv.args.no_compaction {
        compaction_section(inv, &plan, &contenders, clk_tck, &mut m)?;
    }

    let limits = Limits {
        loopback: summarize(&lo).map(|s| s.median),
        disk: summarize(&disk).map(|s| s.median),
    };
    let latency_label = rate.map(|r| format!("latency 1 KiB @ {r:.0}/s acks=1"));
    let outcomes = targets::evaluate(&m, limits, latency_label.as_deref());
    let elapsed = started.elapsed().as_secs_f64();

    let mut head = String::new();
    let _ = writeln!(head, "command: `{}`", inv.command);
    let _ = writeln!(head, "machine: {}", procfs::machine_facts());
    let _ = writeln!(
        head,
        "load average (1/5/15 min): {load_start} at start, {} at end; wall time {:.0} s",
        procfs::load_average(),
        elapsed
    );
    let _ = writeln!(
        head,
        "skiff: {}; kafka: Apache Kafka 4.4.0 via tests/kafka (KRaft, 1 node, JVM -Xmx1g, \
         data in the same temp dir tree as Skiff's); tansu: 0.6.0 with memory:// storage \
         (nothing persists, nothing is written to disk)",
        crate::paths::Shown::here(inv.workspace).path(inv.skiff_bin)
    );
    if all {
        let _ = writeln!(
        head,
        "load: produce phases {} MB each, {} producer thread(s) (one librdkafka client each, \
         linger.ms 5, ~1 MB batches, no compression), catch-up {} MB, latency {} s per phase \
         (linger.ms 1, consumer fetch.wait.max.ms 10, first 10% dropped), restart data {} MB; \
         {} run(s), medians with (min–max); each broker fresh per run, throughput runs start \
         with an untimed warm-up of one phase (1 KiB, acks=1), latency runs with up to 3 s at the fixed rate",
        plan.phase_bytes / 1_000_000,
        plan.producers,
        plan.catchup_bytes / 1_000_000,
        plan.latency_secs,
        plan.restart_bytes / 1_000_000,
        plan.runs
    );
        let _ = writeln!(
        head,
        "durability: skiff fsyncs before answering acks=all (group commit) and has no switch to \
         turn that off (its acks=1 rows are the no-fsync path); kafka default never fsyncs on \
         produce; 'kafka flush=1' = log.flush.interval.messages=1 (fsync per append), acks=all \
         rows only; tansu keeps everything in memory"
    );
    }
    let _ = writeln!(
        head,
        "notes: MB = 10^6 payload bytes; CPU s/GB = broker process utime+stime (all threads, \
         /proc) per 10^9 payload bytes; ratio columns are skiff's median over the peer's, \
         inverted for lower-is-better metrics, so > 1x means skiff leads; start-up = spawn to \
         the first answered ApiVersions (kafka: from running start.sh)"
    );
    if tls {
        let _ = writeln!(
            head,
            "tls: skiff and kafka (default configuration) with a PLAINTEXT and an SSL listener on \
             one fresh broker per run, server-only TLS (certificate from `skiff dev-certs`, \
             ECDSA P-256, PEM keystore; broker defaults otherwise, TLSv1.3 negotiated), clients \
             librdkafka with OpenSSL; per run the same load over each listener in alternating \
             order: produce {} MB of 1 KiB records (p1, acks=1, after an untimed warm-up over \
             both), then one consumer reading {} MB from 0 (fetch.wait default); '{}' = the \
             broker's SSL MB/s over its PLAINTEXT MB/s in the same run",
            plan.phase_bytes / 1_000_000,
            plan.catchup_bytes / 1_000_000,
            tls::COST
        );
    }
    if share {
        let _ = writeln!(
            head,
            "share groups (KIP-932): skiff and kafka (default configuration), one fresh broker \
             per run; skiff-bench's own share consumer (kafka-protocol over one TCP connection: \
             ShareGroupHeartbeat v1, ShareFetch v1 with MaxRecords {mr}, BatchSize {mr}, \
             MaxWaitMs 500, MinBytes 1; the group's share.auto.offset.reset=earliest set first); \
             per run {n} records of 1 KiB (p1, produced untimed with acks=1) are share-consumed \
             by a fresh group, each fetch carrying the ACCEPT of the previous one's records \
             (time = first ShareFetch -> last ACCEPT confirmed), after an untimed warm-up of \
             {w} records; then {a} records acknowledged with one ShareAcknowledge v1 each \
             ('µs per ack' = the acknowledge round trips' total time / records)",
            mr = 500,
            n = plan.share_records,
            w = (plan.share_records / 10).max(100),
            a = plan.share_ack_records
        );
    }
    if tables {
        let _ = writeln!(
            head,
            "tables (issue 16): skiff and kafka (default configuration), one fresh broker per \
             run; table read: one compacted partition (cleanup.policy=compact, \
             min.cleanable.dirty.ratio=1, default segment.bytes, so nothing is cleaned: the \
             whole log is dirty) holding {r} records over {k} keys ({rb} B records, rdkafka \
             acks=1, linger.ms 5, no compression, the same producer and data on both); skiff \
             row = GET /v1/topics/t/snapshot over HTTP (connect to last byte; the body's key \
             lines and final end_offsets line are checked), kafka row = an rdkafka consumer \
             from offset 0 to the high watermark filling a HashMap key -> value (assign to last \
             record; the map must end with {k} keys), which is how a Kafka user rebuilds the \
             table; the same consumer on skiff is the 'rdkafka consumer' row; 'seconds' ratio = \
             kafka consumer time / skiff snapshot time; MB/s = the partition's .log bytes / \
             time. key lookup: skiff only (Kafka has no point read: it needs the full consume \
             above): {lk} keys of {lb} B on one partition, skiff.key.index.enable=true set by \
             AlterConfigs after the writes ('index build s' = AlterConfigs to the first 200), \
             'index MiB (gauge)' = skiff_key_index_memory_bytes, RSS = VmRSS before enabling \
             and its growth when the index is built; then {n} sequential GET \
             /v1/topics/t/keys/k?partition=0 of spread keys, a new TCP connection each (the API \
             answers one request per connection), each checked to return the key's last \
             offset, then {nm} of keys never written (404 from the index, no log read); \
             latency = connect to the server's close",
            r = plan.table_records / plan.table_keys * plan.table_keys,
            k = plan.table_keys,
            rb = crate::keyed::Workload::key_len() + tablerows::READ_VALUE,
            lk = plan.lookup_keys,
            lb = crate::keyed::Workload::key_len() + tablerows::LOOKUP_VALUE,
            n = plan.lookups,
            nm = (plan.lookups / 10).max(1)
        );
    }
    if all && !inv.args.no_compaction {
        let _ = writeln!(
            head,
            "compaction: the `compaction --deferred --threads 1` workload (size in the row \
             label; full: 1 GiB over 100k keys, 10% live, 64 MiB segments, \
             min.cleanable.dirty.ratio 0.5, back-off 1 s) on skiff and kafka; cleaner MB/s = closed-segment bytes at the last write \
             / summed pass seconds of each cleaner's own report; peak RSS = whole broker \
             process (Kafka: the JVM); each run ends with a read from 0 that checks every \
             key's latest value"
        );
    }
    if all {
        let _ = writeln!(
            head,
            "physical limits: loopback TCP {} MB/s, sequential write + fsync of the data disk \
             {} MB/s ({} MB each, median of {})",
            limits.loopback.map_or("—".into(), fmt_num),
            limits.disk.map_or("—".into(), fmt_num),
            plan.limits_bytes / 1_000_000,
            plan.runs
        );
    } else if a.startup_only {
        let _ = writeln!(
            head,
            "--startup-only: {} run(s), medians with (min–max); per run each broker starts on \
             an empty dir, is stopped and started again (the 'empty' row), is filled with {} MB \
             of 1 KiB records on one partition (acks=1), killed with SIGKILL at once and \
             started (the 'kill -9 right after writing' row), stopped cleanly and started (the \
             'clean stop' row), then killed with SIGKILL and started (the 'kill -9 after a \
             clean start' row); every restart must serve the full high watermark; no limits, \
             produce matrix, latency, compaction or targets",
            plan.runs,
            plan.restart_bytes / 1_000_000
        );
    } else {
        let _ = writeln!(
            head,
            "{}: {} run(s), medians with (min–max); no limits, produce matrix, latency, \
             start-up, compaction or targets",
            if a.tls_only {
                "--tls-only"
            } else if a.share_only {
                "--share-only"
            } else {
                "--tables-only"
            },
            plan.runs
        );
    }
    // Only the full run has a plot and issue-7 targets to judge.
    let outcomes = if all { outcomes } else { Vec::new() };

    let mut text = String::new();
    let _ = writeln!(text, "\nskiff-bench compare\n{head}");
    text.push_str(&m.render_text());
    if all {
        let _ = writeln!(text, "\ntargets (issue 7):");
    }
    for o in &outcomes {
        let _ = writeln!(
            text,
            "  [{}] {} — {}",
            o.verdict.label(),
            o.target,
            o.evidence
        );
    }
    print!("{text}");

    fs::create_dir_all(&plan.out).with_context(|| format!("creating {}", plan.out.display()))?;
    let png = plan.out.join("compare.png");
    let title = format!(
        "skiff vs kafka 4.4.0 vs tansu 0.6.0 - {} - {} run(s)",
        procfs::machine_facts().split(" (").next().unwrap_or(""),
        plan.runs
    );
    if all {
        plot::render(&m, &title, &png)?;
    }
    let mut md = String::new();
    for l in head.lines() {
        let _ = writeln!(md, "- {l}");
    }
    md.push('\n');
    md.push_str(&m.render_markdown());
    if all {
        let _ = writeln!(md, "\nTargets of issue 7:\n");
        let _ = writeln!(md, "| target | measured | verdict |\n|---|---|---|");
    }
    for o in &outcomes {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            o.target,
            o.evidence,
            o.verdict.label()
        );
    }
    let md_path = plan.out.join("compare.md");
    fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    if all {
        println!("\nwrote {} and {}", md_path.display(), png.display());
    } else {
        println!("\nwrote {}", md_path.display());
    }
    // Peers may be missing; Skiff failing a phase must fail the command (CI runs --smoke).
    let failed = m.not_run_for(SKIFF);
    if !failed.is_empty() {
        anyhow::bail!("skiff did not complete every phase: {}", failed.join("; "));
    }
    Ok(())
}

/// The compaction comparison: the same keyed workload on Skiff and on Kafka (not the
/// flush=1 variant, not Tansu, which has no log cleaner), cleaning deferred until the last
/// write, one cleaner thread unless --threads says otherwise. A failed Skiff run is recorded
/// as not run (so the command fails at the end); a failed Kafka run likewise for Kafka.
fn compaction_section(
    inv: &Invocation<'_>,
    plan: &compare::Plan,
    contenders: &[Contender],
    clk_tck: f64,
    m: &mut crate::matrix::Matrix,
) -> Result<()> {
    let mut args = inv.compaction.clone();
    args.deferred = true;
    args.threads = Some(args.threads.unwrap_or(1));
    let cplan = compaction::plan(&args, plan.runs, inv.smoke)?;
    let kinds: Vec<_> = contenders
        .iter()
        .filter(|c| c.label == SKIFF || c.label == KAFKA)
        .map(|c| c.kind.clone())
        .collect();
    let mut table = Table::default();
    if let Err(e) = compaction::run(&kinds, &cplan, clk_tck, &mut table, m) {
        eprintln!("  {SKIFF}: compaction failed: {e:#}");
        m.not_run(
            SKIFF,
            &format!("compaction failed: {}", compare::first_line(&e)),
        );
    }
    Ok(())
}
