//! Power-cut durability (issue 12): the real broker runs on a FUSE filesystem that keeps
//! only what was fsynced; the power is cut at random moments and at chosen filesystem
//! operations (segment roll, cleaner swap, topic create/delete, offset commit, transaction
//! marker, checkpoint, fsyncs); the broker is killed with SIGKILL, the filesystem remounted
//! from its durable image, the broker restarted, and every acknowledged record, commit,
//! transaction outcome and topic operation must be there, in order, with the indexes right.
//!
//! `POWERCUT_CUTS` (default 10) sets the number of cuts, `POWERCUT_SEED` the random seed
//! (printed, so a failure can be replayed). Skipped, with a message, without root or
//! `/dev/fuse`. The binary is `E2E_SKIFF_BIN` (see skiff-e2e).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use skiff_powercut::memfs::{Broken, Image, Step, Trigger};
use skiff_powercut::{fuse_available, Mount};
use skiff_testkit::Broker;
use support::check::{verify, Model};
use support::workload::{Workload, COMPACT, PLAIN, PLAIN_PARTITIONS, TXN};

const DEFAULT_CUTS: u32 = 10;
/// Longest a round waits for its chosen operation before cutting at a random moment instead.
const ROUND_LIMIT: Duration = Duration::from_secs(8);

/// How long a startup cut may take to fire (recovery of these small logs takes well under
/// a second; the margin is for a loaded machine).
const STARTUP_CUT_WAIT: Duration = Duration::from_secs(3);

/// Broker settings: few internal partitions (fewer files to recover), a quick cleaner.
const BROKER_PROPS: &[(&str, &str)] = &[
    ("offsets.topic.num.partitions", "2"),
    ("transaction.state.log.num.partitions", "2"),
    ("log.cleaner.backoff.ms", "100"),
    ("auto.create.topics.enable", "false"),
];

/// Cut plans, taken in turn (the random seed picks n-th and fsyncs-after).
const PLANS: &[Option<Step>] = &[
    None,
    Some(Step::SegmentRoll),
    Some(Step::CleanerSwap),
    Some(Step::OffsetCommit),
    Some(Step::TxnMarker),
    Some(Step::TopicCreate),
    Some(Step::TopicDelete),
    Some(Step::Checkpoint),
    Some(Step::FileSync),
    Some(Step::DirSync),
];

struct Row {
    round: u32,
    planned: String,
    fired: String,
    after_ms: u128,
    acked: usize,
    /// Operations counted from arming (or from workload start for a random cut).
    counts: BTreeMap<Step, u64>,
}

#[test]
fn power_cuts_lose_nothing_acknowledged() {
    if let Err(why) = fuse_available() {
        println!("skipped: {why}");
        return;
    }
    let cuts: u32 = std::env::var("POWERCUT_CUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CUTS);
    let seed: u64 = std::env::var("POWERCUT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    println!("power cut: {cuts} cuts, POWERCUT_SEED={seed}");
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("skiff-powercut-")
        .tempdir()
        .unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let rows = run(&mnt, cuts, seed).unwrap_or_else(|e| panic!("{e:#}\n(POWERCUT_SEED={seed})"));
    print_report(&rows, started.elapsed());
}

fn run(mnt: &std::path::Path, cuts: u32, seed: u64) -> Result<Vec<Row>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let broken = match std::env::var("POWERCUT_BREAK").as_deref() {
        Ok("file") => Broken::IgnoreFileSync,
        Ok("dir") => Broken::IgnoreDirSync,
        _ => Broken::No,
    };
    if broken != Broken::No {
        println!("SELF-TEST: the filesystem ignores some fsyncs ({broken:?}); this run must fail");
    }
    let mut image = Image::empty();
    let mut model = Model::default();
    let mut rows = Vec::new();
    let mut next_plan = 0usize;
    for round in 0..=cuts {
        let mount = Mount::new(mnt, image.clone(), broken)?;
        // Every fifth cut strikes while the broker recovers from the previous one (torn
        // tails truncated, indexes rebuilt, swaps finished, snapshots rewritten).
        let startup_cut = round % 5 == 4 && round < cuts;
        let t0 = Instant::now();
        if startup_cut {
            mount.handle().arm(Trigger {
                step: if rng.gen_bool(0.5) {
                    Step::FileSync
                } else {
                    Step::DirSync
                },
                nth: rng.gen_range(1..=4),
                then_syncs: 0,
            });
        }
        let started = Broker::start_on(mnt, BROKER_PROPS);
        if startup_cut {
            if mount.handle().wait_cut(STARTUP_CUT_WAIT) {
                let (img, info) = mount.handle().cut();
                if let Ok(mut b) = started {
                    b.kill9()?;
                }
                mount.unmount()?;
                image = img;
                let t = info.trigger;
                let planned = t
                    .map(|t| format!("startup: {} #{}", t.step.name(), t.nth))
                    .unwrap_or_default();
                println!("round {round}: cut planned {planned}, fired during startup");
                rows.push(Row {
                    round,
                    planned,
                    fired: "startup/recovery".into(),
                    after_ms: info.at.duration_since(t0).as_millis(),
                    acked: 0,
                    counts: info.counts,
                });
                continue;
            }
            mount.handle().disarm();
        }
        let mut broker =
            started.with_context(|| format!("round {round}: broker start after the cut"))?;
        let bootstrap = broker.bootstrap();
        if round == 0 {
            create_base_topics(&rt, &bootstrap, &mut model)?;
        } else {
            let mut seek = |n: i64| rng.gen_range(0..n);
            let checked = verify(&bootstrap, &mut model, &mut seek).map_err(|e| {
                anyhow!(
                    "round {round}: check after cut {} ({}) failed: {e:#}\nbroker log:\n{}\nfiles:\n{}",
                    round,
                    rows.last().map(|r: &Row| r.fired.clone()).unwrap_or_default(),
                    broker.log_tail(40),
                    image.list().join("\n")
                )
            })?;
            println!("round {round}: after restart checked {checked:?}");
        }
        if round == cuts {
            broker.stop()?;
            mount.unmount()?;
            break;
        }

        // Startup cuts take their own rounds: count workload rounds so every plan gets its turn.
        let plan = PLANS[next_plan % PLANS.len()];
        next_plan += 1;
        let trigger = plan.map(|step| Trigger {
            step,
            // One topic is created and about one deleted per round: their first operation.
            nth: if matches!(step, Step::TopicCreate | Step::TopicDelete) {
                1
            } else {
                rng.gen_range(1..=2)
            },
            then_syncs: rng.gen_range(0..=2),
        });
        // Let the clients get going (so there is something acknowledged to lose), then arm
        // the trigger and create/delete topics while the rest runs.
        mount.handle().reset_counts();
        let t0 = Instant::now();
        let work = Workload::start(&bootstrap, round);
        std::thread::sleep(Duration::from_millis(rng.gen_range(500..2500)));
        if let Some(t) = trigger {
            mount.handle().arm(t);
        }
        topic_churn(&rt, &bootstrap, round, &mut model);
        let fired = match trigger {
            Some(_) => mount.handle().wait_cut(ROUND_LIMIT),
            None => {
                std::thread::sleep(Duration::from_millis(rng.gen_range(300..5000)));
                false
            }
        };
        let (img, info) = mount.handle().cut();
        broker.kill9()?;
        let acked = work.stop();
        mount.unmount()?;
        image = img;
        let n_acked = acked.records.lock().map(|r| r.len()).unwrap_or(0);
        model.absorb(&acked);
        let planned = match trigger {
            Some(t) => format!("{} #{} +{} fsyncs", t.step.name(), t.nth, t.then_syncs),
            None => "random moment".into(),
        };
        let fired = match (trigger, fired) {
            (Some(t), true) => t.step.name().to_string(),
            (Some(_), false) => "not reached: random".to_string(),
            (None, _) => "random".to_string(),
        };
        println!(
            "round {round}: cut planned {planned}, fired {fired}, {n_acked} records acknowledged"
        );
        rows.push(Row {
            round,
            planned,
            fired,
            after_ms: info.at.duration_since(t0).as_millis(),
            acked: n_acked,
            counts: info.counts,
        });
    }
    Ok(rows)
}

fn admin(bootstrap: &str) -> Result<AdminClient<DefaultClientContext>> {
    support::workload::client_config(bootstrap)
        .create()
        .context("creating the admin client")
}

fn opts() -> AdminOptions {
    AdminOptions::new().request_timeout(Some(Duration::from_secs(10)))
}

fn create_base_topics(
    rt: &tokio::runtime::Runtime,
    bootstrap: &str,
    model: &mut Model,
) -> Result<()> {
    let a = admin(bootstrap)?;
    let plain = NewTopic::new(PLAIN, PLAIN_PARTITIONS, TopicReplication::Fixed(1))
        .set("segment.ms", "1500");
    let compact = NewTopic::new(COMPACT, 1, TopicReplication::Fixed(1))
        .set("cleanup.policy", "compact")
        .set("segment.ms", "1000")
        .set("min.cleanable.dirty.ratio", "0.01")
        .set("min.compaction.lag.ms", "0");
    let txn = NewTopic::new(TXN, 1, TopicReplication::Fixed(1)).set("segment.ms", "2000");
    let res = rt.block_on(a.create_topics([&plain, &compact, &txn], &opts()))?;
    for r in res {
        let name = r.map_err(|(t, e)| anyhow!("CreateTopics {t}: {e}"))?;
        model.topics.insert(name, true);
    }
    Ok(())
}

/// Creates `tmp-<round>` and deletes a topic created two rounds ago (if it exists), and
/// records what the broker acknowledged.
fn topic_churn(rt: &tokio::runtime::Runtime, bootstrap: &str, round: u32, model: &mut Model) {
    let Ok(a) = admin(bootstrap) else { return };
    let name = format!("tmp-{round}");
    let t = NewTopic::new(&name, 1, TopicReplication::Fixed(1));
    if let Ok(res) = rt.block_on(a.create_topics([&t], &opts())) {
        if res.iter().all(|r| r.is_ok()) {
            model.topics.insert(name, true);
        }
    }
    let old: Vec<String> = model
        .topics
        .iter()
        .filter(|(t, exists)| **exists && t.starts_with("tmp-") && **t != format!("tmp-{round}"))
        .map(|(t, _)| t.clone())
        .collect();
    for t in old {
        // Until the deletion is acknowledged the topic may or may not survive a cut.
        model.topics.remove(&t);
        if let Ok(res) = rt.block_on(a.delete_topics(&[t.as_str()], &opts())) {
            if res.iter().all(|r| r.is_ok()) {
                model.topics.insert(t, false);
            }
        }
    }
}

fn print_report(rows: &[Row], took: Duration) {
    println!(
        "\n==== power cuts: {} tried in {:.0?} ====",
        rows.len(),
        took
    );
    println!(
        "{:>5}  {:<32} {:<22} {:>7} {:>7}  ops from arming to the cut",
        "round", "planned", "fired", "ms", "acked"
    );
    for r in rows {
        let ops: Vec<String> = r
            .counts
            .iter()
            .filter(|(s, _)| !matches!(s, Step::Write | Step::Other))
            .map(|(s, n)| format!("{}={n}", s.name()))
            .collect();
        println!(
            "{:>5}  {:<32} {:<22} {:>7} {:>7}  {}",
            r.round,
            r.planned,
            r.fired,
            r.after_ms,
            r.acked,
            ops.join(" ")
        );
    }
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows {
        *per.entry(r.fired.clone()).or_insert(0) += 1;
    }
    println!("cuts per step:");
    for (s, n) in per {
        println!("  {s:<24} {n}");
    }
}
