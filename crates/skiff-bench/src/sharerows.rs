//! The share-group rows of the `compare` mode (KIP-932): share consume throughput with the
//! ACCEPTs piggybacked on ShareFetch, and the cost of one ShareAcknowledge per record, on
//! Skiff and on Kafka (the default configuration only: the flush=1 variant changes nothing a
//! share consumer does, and Tansu has no share groups).
//!
//! Owns: the rows' labels and one run of them for one contender (see [`run`]). The consumer
//! itself is [`crate::share`]; the records are produced beforehand, untimed, with the same
//! rdkafka producer as the throughput rows.
//!
//! Thread-safety: main thread only. On-disk: nothing beyond the broker's temp root.

use anyhow::{Context, Result};

use crate::compare::{self, Contender, Plan, KAFKA, SKIFF};
use crate::matrix::{Better, Matrix};
use crate::measure;
use crate::produce::{self, Acks};
use crate::share::{self, AckMode, ShareSpec};

/// Value size of the share rows' records (the throughput rows' main size).
pub const SIZE: usize = 1024;

/// Whether `c` gets the share rows.
pub fn applies_to(c: &Contender) -> bool {
    c.label == SKIFF || c.label == KAFKA
}

pub fn throughput_label(records: u64) -> String {
    format!("share consume {records} x 1 KiB, ack piggybacked")
}

pub fn ack_label(records: u64) -> String {
    format!("share ack per record ({records} x 1 KiB)")
}

/// One run of the share rows on a fresh broker of `c`: an untimed warm-up share consume (a
/// tenth of the load, at least 100 records), the throughput row, the per-record ack row.
pub fn run(c: &Contender, plan: &Plan, run: u32, clk_tck: f64, m: &mut Matrix) {
    compare::with_broker(c, m, "share", |b, m| {
        let warm = (plan.share_records / 10).max(100);
        phase(b, plan, clk_tck, "warm", run, warm, AckMode::Piggyback).context("warm-up")?;

        let n = plan.share_records;
        let label = throughput_label(n);
        let mm = phase(b, plan, clk_tck, "tput", run, n, AckMode::Piggyback)
            .with_context(|| label.clone())?;
        eprintln!(
            "  {}: {label}: {:.0} records/s, {:.1} MB/s",
            c.label,
            mm.records_per_sec(),
            mm.mb_per_sec()
        );
        m.add(
            &label,
            "records/s",
            Better::Higher,
            c.label,
            mm.records_per_sec(),
        );
        m.add(&label, "MB/s", Better::Higher, c.label, mm.mb_per_sec());
        m.add(
            &label,
            "broker CPU s/GB",
            Better::Lower,
            c.label,
            mm.cpu_secs_per_gb(),
        );

        let n = plan.share_ack_records;
        let label = ack_label(n);
        let mm = phase(b, plan, clk_tck, "ack", run, n, AckMode::PerRecord)
            .with_context(|| label.clone())?;
        let us = if mm.records == 0 {
            0.0
        } else {
            mm.secs * 1e6 / mm.records as f64
        };
        eprintln!("  {}: {label}: {us:.1} µs per ack", c.label);
        m.add(&label, "µs per ack", Better::Lower, c.label, us);
        Ok(())
    });
}

/// Produces `records` to a fresh topic (untimed) and share-consumes them in a fresh group;
/// the measurement covers the share consumer only.
fn phase(
    b: &crate::broker::RunningBroker,
    plan: &Plan,
    clk_tck: f64,
    name: &str,
    run: u32,
    records: u64,
    ack: AckMode,
) -> Result<crate::stats::Measurement> {
    let topic = format!("bench-share-{name}");
    produce::create_topic(&b.bootstrap(), &topic, 1)?;
    compare::produce_n(b, plan, clk_tck, &topic, SIZE, 1, Acks::Leader, records)
        .with_context(|| format!("producing {records} records to {topic}"))?;
    let spec = ShareSpec {
        bootstrap: b.bootstrap(),
        topic: topic.clone(),
        group: format!("skiff-bench-share-{name}-{run}"),
        expected: records,
        value_size: SIZE,
        ack,
        // Generous: set-up waits on Kafka's asynchronous config and share-partition start.
        timeout: std::time::Duration::from_secs(120 + records / 2_000),
    };
    measure(b, clk_tck, || {
        let r = share::run(&spec)?;
        Ok((r.records, r.bytes, r.secs))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use crate::compare::{plan, Args};

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }

    fn args(v: &[&str]) -> Result<Args, clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("t").chain(v.iter().copied())).map(|c| c.a)
    }

    #[test]
    fn share_flags_size_the_share_rows() {
        let w = Path::new("/w");
        let p = plan(&args(&[]).unwrap(), 3, true, 2, w).unwrap();
        assert_eq!((p.share_records, p.share_ack_records), (500, 50));
        let p = plan(&args(&[]).unwrap(), 3, false, 2, w).unwrap();
        assert_eq!((p.share_records, p.share_ack_records), (100_000, 3_000));
        let a = args(&[
            "--share-only",
            "--share-records",
            "7",
            "--share-ack-records",
            "3",
        ]);
        let p = plan(&a.unwrap(), 1, false, 2, w).unwrap();
        assert_eq!((p.share_records, p.share_ack_records), (7, 3));
        assert!(plan(&args(&["--share-records", "0"]).unwrap(), 1, false, 2, w).is_err());
        assert!(args(&["--share-only", "--tls-only"]).is_err());
        assert!(args(&["--share-only", "--no-share"]).is_err());
    }
}
