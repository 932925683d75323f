//! The "compacted topics as tables" rows of the `compare` mode (issue 16), on Skiff and,
//! where Kafka has an equivalent, on Kafka (default configuration only: the flush=1 variant
//! changes nothing a reader does, and Tansu has no log cleaner).
//!
//! - Table read: one compacted partition filled with the keyed workload (`keyed`: every key
//!   written round after round, so most of the log is superseded values) with cleaning held
//!   off (`min.cleanable.dirty.ratio=1`, and everything is in the active segment anyway), the
//!   same data on both brokers. Skiff reads it with `GET /v1/topics/{t}/snapshot`; Kafka has
//!   no such request, so its row is what a Kafka user does: an rdkafka consumer from offset
//!   0 to the high watermark into a `HashMap`. The same consumer also runs on Skiff, for a
//!   same-broker comparison. MB/s are of the partition's log on disk (its `.log` files).
//! - Key lookup (Skiff only; Kafka would need the full consume above): a topic with one
//!   record per key, then `skiff.key.index.enable=true` by AlterConfigs; the time until the
//!   index answers, its memory (the broker's own gauge and the RSS growth), then sequential
//!   lookups over HTTP, one new connection each (the API closes every connection after one
//!   answer), with their latency quantiles, and a tenth as many lookups of keys never
//!   written (answered from memory, no log read: the HTTP round trip alone).
//!
//! Owns: the rows' labels, their sizes' defaults, and one run of them per contender.
//! Thread-safety: main thread only. On-disk: nothing beyond the broker's temp root.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::compare::{self, Contender, Plan, KAFKA, SKIFF};
use crate::http;
use crate::keyed::{self, Workload};
use crate::matrix::{Better, Matrix};
use crate::produce::{alter_topic_configs, create_topic_with};
use crate::tables;

/// Value bytes of the table-read workload: 14-byte keys, 200-byte records.
pub const READ_VALUE: usize = 186;
/// Value bytes of the lookup workload: 114-byte records.
pub const LOOKUP_VALUE: usize = 100;
const READ_TOPIC: &str = "bench-table";
const LOOKUP_TOPIC: &str = "bench-table-lookup";
const MIB: f64 = 1024.0 * 1024.0;

/// Whether `c` gets the table-read rows (the lookup rows are Skiff's alone).
pub fn applies_to(c: &Contender) -> bool {
    c.label == SKIFF || c.label == KAFKA
}

pub fn read_label(records: u64, keys: u64) -> String {
    format!(
        "table read {records} records / {keys} keys ({} B): skiff HTTP snapshot vs kafka consumer",
        Workload::key_len() + READ_VALUE
    )
}

pub fn consumer_label(records: u64, keys: u64) -> String {
    format!("table rebuild {records} records / {keys} keys: rdkafka consumer into a HashMap")
}

pub fn same_broker_label() -> String {
    "table read on skiff: consumer time / snapshot time".to_string()
}

pub fn lookup_label(keys: u64) -> String {
    format!(
        "key lookup over HTTP, {keys} keys ({} B), new connection each (kafka: no equivalent)",
        Workload::key_len() + LOOKUP_VALUE
    )
}

/// `c` with Skiff's HTTP listener on a free loopback port (and room for the key index).
fn with_http(c: &Contender, index_budget: u64) -> Result<(Contender, Option<SocketAddr>)> {
    let mut c = c.clone();
    if c.label != SKIFF {
        return Ok((c, None));
    }
    let addr = SocketAddr::from(([127, 0, 0, 1], skiff_testkit::free_port()?));
    c.launch
        .settings
        .push(format!("skiff.http.listener={addr}"));
    c.launch
        .settings
        .push(format!("skiff.key.index.memory.bytes={index_budget}"));
    Ok((c, Some(addr)))
}

/// Topic configs of both workloads: compacted, cleaning held off.
fn topic_configs(index: bool) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("cleanup.policy", "compact".to_string()),
        ("min.cleanable.dirty.ratio", "1".to_string()),
    ];
    if index {
        v.push(("skiff.key.index.enable", "true".to_string()));
    }
    v
}

/// One run of the table-read rows on a fresh broker of `c`.
pub fn read_run(c: &Contender, plan: &Plan, m: &mut Matrix) {
    let (c, addr) = match with_http(c, 64 << 20) {
        Ok(x) => x,
        Err(e) => {
            m.not_run(c.label, &format!("tables: {}", compare::first_line(&e)));
            return;
        }
    };
    let label = c.label;
    compare::with_broker(&c, m, "table read", |b, m| {
        let keys = plan.table_keys;
        let rounds = (plan.table_records / keys).max(1) as u32;
        let w = Workload::new(keys, rounds, READ_VALUE);
        let records = keys * u64::from(rounds);
        create_topic_with(&b.bootstrap(), READ_TOPIC, 1, &topic_configs(false))?;
        let timeout = Duration::from_secs(60 + w.total_bytes() / 5_000_000);
        keyed::produce(&b.bootstrap(), READ_TOPIC, &w, Instant::now() + timeout)
            .context("producing the table workload")?;
        let log = tables::log_bytes(&b.data_dir(), READ_TOPIC)? as f64;
        let rlabel = read_label(records, keys);
        let clabel = consumer_label(records, keys);
        m.add(&rlabel, "log MB", Better::Lower, label, log / 1e6);
        let snap = match addr {
            Some(addr) => {
                http::wait_listening(addr, Duration::from_secs(10))?;
                let end = i64::try_from(records).context("offset")?;
                let s = tables::read_snapshot(addr, READ_TOPIC, keys, end, timeout)
                    .context("HTTP snapshot")?;
                eprintln!(
                    "  {label}: snapshot: {:.3} s, {:.1} MB/s of log, {:.0} keys/s, {:.1} MB body",
                    s.secs,
                    log / 1e6 / s.secs,
                    s.keys as f64 / s.secs,
                    s.bytes as f64 / 1e6
                );
                Some(s)
            }
            None => None,
        };
        let r = tables::rebuild_with_consumer(&b.bootstrap(), READ_TOPIC, keys, timeout)
            .context("table consumer")?;
        eprintln!(
            "  {label}: consumer into a HashMap: {:.3} s, {:.1} MB/s of log",
            r.secs,
            log / 1e6 / r.secs
        );
        // Skiff's row of the read label is its snapshot; Kafka's is its consumer.
        let shown = snap.unwrap_or(r);
        m.add(&rlabel, "seconds", Better::Lower, label, shown.secs);
        m.add(
            &rlabel,
            "MB/s of log",
            Better::Higher,
            label,
            log / 1e6 / shown.secs,
        );
        m.add(
            &rlabel,
            "live keys/s",
            Better::Higher,
            label,
            shown.keys as f64 / shown.secs,
        );
        m.add(&clabel, "seconds", Better::Lower, label, r.secs);
        m.add(
            &clabel,
            "MB/s of log",
            Better::Higher,
            label,
            log / 1e6 / r.secs,
        );
        if let Some(s) = snap {
            m.add(
                &same_broker_label(),
                "x",
                Better::Higher,
                label,
                r.secs / s.secs,
            );
        }
        Ok(())
    });
}

/// One run of the lookup rows on a fresh Skiff broker (`c` must be Skiff).
pub fn lookup_run(c: &Contender, plan: &Plan, clk_tck: f64, m: &mut Matrix) {
    let keys = plan.lookup_keys;
    // ~52 B per key measured at 1 M keys (docs/key-index.md), doubled for growth.
    let budget = (keys * 128).max(64 << 20);
    let (c, addr) = match with_http(c, budget) {
        Ok((c, Some(a))) => (c, a),
        Ok(_) => return,
        Err(e) => {
            m.not_run(c.label, &format!("lookups: {}", compare::first_line(&e)));
            return;
        }
    };
    let label = c.label;
    compare::with_broker(&c, m, "key lookups", |b, m| {
        let w = Workload::new(keys, 1, LOOKUP_VALUE);
        create_topic_with(&b.bootstrap(), LOOKUP_TOPIC, 1, &topic_configs(false))?;
        let timeout = Duration::from_secs(60 + w.total_bytes() / 5_000_000);
        let produced = keyed::produce(&b.bootstrap(), LOOKUP_TOPIC, &w, Instant::now() + timeout)
            .context("producing the lookup workload")?;
        http::wait_listening(addr, Duration::from_secs(10))?;
        let before = b.sample(clk_tck)?.rss_bytes;
        alter_topic_configs(&b.bootstrap(), LOOKUP_TOPIC, &topic_configs(true))
            .context("enabling skiff.key.index.enable")?;
        let built = tables::wait_index_ready(addr, LOOKUP_TOPIC, timeout)?;
        let after = b.sample(clk_tck)?.rss_bytes;
        let gauge = tables::index_memory_bytes(addr)?;
        let lk = tables::lookups(
            addr,
            LOOKUP_TOPIC,
            &produced.latest,
            plan.lookups,
            Duration::from_secs(60 + plan.lookups / 100),
        )?;
        let miss = tables::misses(
            addr,
            LOOKUP_TOPIC,
            keys,
            (plan.lookups / 10).max(1),
            Duration::from_secs(60 + plan.lookups / 1000),
        )?;
        let q = |p| tables::quantile(&lk.micros, p);
        eprintln!(
            "  {label}: index built in {:.2} s, {:.1} MiB (gauge), RSS {:.1} -> {:.1} MiB; \
             {} lookups: p50 {:.0} µs, p99 {:.0} µs; absent keys p50 {:.0} µs",
            built.as_secs_f64(),
            gauge as f64 / MIB,
            before as f64 / MIB,
            after as f64 / MIB,
            plan.lookups,
            q(0.5),
            q(0.99),
            tables::quantile(&miss.micros, 0.5)
        );
        let l = lookup_label(keys);
        m.add(&l, "p50 µs", Better::Lower, label, q(0.5));
        m.add(&l, "p99 µs", Better::Lower, label, q(0.99));
        m.add(&l, "p99.9 µs", Better::Lower, label, q(0.999));
        m.add(
            &l,
            "lookups/s",
            Better::Higher,
            label,
            plan.lookups as f64 / lk.secs,
        );
        m.add(
            &l,
            "absent key p50 µs",
            Better::Lower,
            label,
            tables::quantile(&miss.micros, 0.5),
        );
        m.add(
            &l,
            "absent key p99 µs",
            Better::Lower,
            label,
            tables::quantile(&miss.micros, 0.99),
        );
        m.add(
            &l,
            "index build s",
            Better::Lower,
            label,
            built.as_secs_f64(),
        );
        m.add(
            &l,
            "index MiB (gauge)",
            Better::Lower,
            label,
            gauge as f64 / MIB,
        );
        m.add(
            &l,
            "RSS before enabling MiB",
            Better::Lower,
            label,
            before as f64 / MIB,
        );
        m.add(
            &l,
            "RSS growth on enabling MiB",
            Better::Lower,
            label,
            (after as f64 - before as f64) / MIB,
        );
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_sizes() {
        assert!(read_label(1_000_000, 100_000).contains("1000000 records / 100000 keys (200 B)"));
        assert!(lookup_label(1_000_000).contains("1000000 keys (114 B)"));
    }
}
