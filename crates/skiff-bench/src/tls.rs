//! The TLS rows of the `compare` mode (issue 14): produce and consume throughput over an
//! `SSL` listener, Skiff against Apache Kafka in the same invocation, and the TLS cost of
//! each broker (its SSL figure over its PLAINTEXT figure).
//!
//! Owns: the certificates of one invocation ([`Certs`], written by the Skiff binary's own
//! `skiff dev-certs` and given to both brokers) and the TLS run of one contender ([`run`]).
//!
//! Method: each run starts one fresh broker with a PLAINTEXT and an SSL listener (server-only
//! authentication, PEM keystore, every other `ssl.*` setting at the broker's default, so
//! TLSv1.3 is negotiated). The same broker instance serves the same load over both
//! listeners, one after the other, so the SSL/PLAINTEXT ratio of a run is free of the
//! run-to-run noise of a shared machine; the order of the two flips from run to run. The
//! clients are the same librdkafka ones as the other rows, built with OpenSSL (the rdkafka
//! crate's `ssl` feature against the system libssl), so both brokers face the same client
//! TLS stack. Produce: 1 KiB records, 1 partition, acks=1, one phase's size per listener.
//! Consume: a partition filled over PLAINTEXT, read from offset 0 by one consumer over each
//! listener (`fetch.wait.max.ms` at its default).
//!
//! Thread-safety: main thread only (phases spawn and join their own threads). On-disk: the
//! certificate temp dir (removed on drop) and the broker's temp root.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tempfile::TempDir;

use crate::compare::{self, Contender, Over, Plan};
use crate::consume;
use crate::matrix::{Better, Matrix};
use crate::produce::{self, Acks};
use crate::stats::Measurement;

/// Report label of the produce row.
pub const PRODUCE_ROW: &str = "tls: produce 1 KiB p1 acks=1";

/// Report label of the consume row for `mb` MB.
pub fn consume_row(mb: u64) -> String {
    format!("tls: consume {mb} MB from 0")
}

/// Metric of the TLS cost: the broker's SSL throughput over its PLAINTEXT throughput in the
/// same run (1.00 = TLS costs nothing; higher is better).
pub const COST: &str = "SSL / PLAINTEXT";

/// Development certificates for one invocation, shared by every broker.
pub struct Certs {
    _dir: TempDir,
    /// `server.pem`: the unencrypted PKCS#8 key followed by the certificate chain.
    pub keystore: PathBuf,
    /// `ca.pem`: the CA the clients trust.
    pub ca: PathBuf,
}

/// Writes a throwaway CA and a server certificate for 127.0.0.1 with `skiff dev-certs`.
pub fn dev_certs(skiff_bin: &Path) -> Result<Certs> {
    let dir = tempfile::Builder::new()
        .prefix("skiff-bench-certs-")
        .tempdir()
        .context("creating the temp dir for the certificates")?;
    let out = skiff_testkit::command(skiff_bin)
        .arg("dev-certs")
        .arg("--dir")
        .arg(dir.path())
        .args(["--host", "127.0.0.1", "--host", "localhost"])
        .stdin(Stdio::null())
        .output()
        .context("running skiff dev-certs")?;
    if !out.status.success() {
        bail!(
            "skiff dev-certs failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(Certs {
        keystore: dir.path().join("server.pem"),
        ca: dir.path().join("ca.pem"),
        _dir: dir,
    })
}

/// Whether a contender gets TLS rows: Skiff and Kafka in their default configuration (not
/// the fsync variant, and not Tansu, which the bench runs without TLS).
pub fn applies_to(c: &Contender) -> bool {
    c.label == compare::SKIFF || c.label == compare::KAFKA
}

/// Run number `run` (1-based) of the TLS rows for `c`.
pub fn run(c: &Contender, plan: &Plan, certs: &Certs, run: u32, clk_tck: f64, m: &mut Matrix) {
    let mut with_ssl = c.clone();
    with_ssl.launch.ssl_keystore = Some(certs.keystore.clone());
    compare::with_broker(&with_ssl, m, "tls", |b, m| {
        let plain = Over::Plaintext;
        let ssl = Over::Ssl(&certs.ca);
        let order = if run % 2 == 1 {
            [plain, ssl]
        } else {
            [ssl, plain]
        };
        // Untimed warm-up over both listeners (JIT and both code paths, caches).
        let warm = (plan.phase_bytes.max(1_000_000) / 1024 / 2).max(100);
        produce::create_topic(&b.bootstrap(), "tls-warmup", 1)?;
        for over in order {
            produce_1k(b, plan, clk_tck, "tls-warmup", warm, over).context("tls warm-up")?;
        }

        let records = (plan.phase_bytes / 1024).clamp(100, 4_000_000);
        let mut produced = Pair::default();
        for over in order {
            let topic = format!("tls-produce-{}", name(over));
            produce::create_topic(&b.bootstrap(), &topic, 1)?;
            let mm = produce_1k(b, plan, clk_tck, &topic, records, over)
                .with_context(|| format!("{PRODUCE_ROW} over {}", name(over)))?;
            produced.set(over, mm);
        }
        produced.record(PRODUCE_ROW, c.label, m);

        let topic = "tls-catchup";
        produce::create_topic(&b.bootstrap(), topic, 1)?;
        let fill = plan.catchup_bytes / 1024;
        produce_1k(b, plan, clk_tck, topic, fill, plain).context("tls catch-up fill")?;
        let row = consume_row(plan.catchup_bytes / 1_000_000);
        let mut consumed = Pair::default();
        for over in order {
            let (bootstrap, ssl_ca) = over.endpoint(b)?;
            let spec = consume::ConsumeSpec {
                bootstrap,
                topic: topic.to_string(),
                partitions: 1,
                expected: fill,
                fetch_wait_ms: None,
                timeout: Duration::from_secs(120 + plan.catchup_bytes / 2_000_000),
                ssl_ca,
            };
            let mm = crate::measure(b, clk_tck, || {
                let r = consume::run(&spec)?;
                Ok((r.records, r.bytes, r.secs))
            })
            .with_context(|| format!("{row} over {}", name(over)))?;
            consumed.set(over, mm);
        }
        consumed.record(&row, c.label, m);
        Ok(())
    });
}

fn produce_1k(
    b: &crate::broker::RunningBroker,
    plan: &Plan,
    clk_tck: f64,
    topic: &str,
    records: u64,
    over: Over<'_>,
) -> Result<Measurement> {
    compare::produce_n_over(
        b,
        plan,
        clk_tck,
        topic,
        1024,
        1,
        Acks::Leader,
        records,
        over,
    )
}

fn name(over: Over<'_>) -> &'static str {
    match over {
        Over::Plaintext => "plaintext",
        Over::Ssl(_) => "ssl",
    }
}

/// The two measurements of one row in one run.
#[derive(Default)]
struct Pair {
    plaintext: Option<Measurement>,
    ssl: Option<Measurement>,
}

impl Pair {
    fn set(&mut self, over: Over<'_>, mm: Measurement) {
        match over {
            Over::Plaintext => self.plaintext = Some(mm),
            Over::Ssl(_) => self.ssl = Some(mm),
        }
    }

    fn record(&self, row: &str, broker: &str, m: &mut Matrix) {
        let (Some(plain), Some(ssl)) = (&self.plaintext, &self.ssl) else {
            return;
        };
        eprintln!(
            "  {broker}: {row}: SSL {:.1} MB/s, PLAINTEXT {:.1} MB/s",
            ssl.mb_per_sec(),
            plain.mb_per_sec()
        );
        let hi = Better::Higher;
        m.add(row, "SSL MB/s", hi, broker, ssl.mb_per_sec());
        m.add(row, "PLAINTEXT MB/s", hi, broker, plain.mb_per_sec());
        if plain.mb_per_sec() > 0.0 {
            m.add(row, COST, hi, broker, ssl.mb_per_sec() / plain.mb_per_sec());
        }
        let lo = Better::Lower;
        m.add(
            row,
            "broker CPU s/GB, SSL",
            lo,
            broker,
            ssl.cpu_secs_per_gb(),
        );
        m.add(
            row,
            "broker CPU s/GB, PLAINTEXT",
            lo,
            broker,
            plain.cpu_secs_per_gb(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_ssl_over_plaintext_of_the_same_run() {
        let mut m = Matrix::new(&[compare::SKIFF, compare::KAFKA], compare::SKIFF);
        let mm = |mb: f64| Measurement {
            records: 1,
            bytes: (mb * 1e6) as u64,
            secs: 1.0,
            broker_cpu_secs: 1.0,
            broker_peak_rss_bytes: 0,
        };
        let pair = Pair {
            plaintext: Some(mm(400.0)),
            ssl: Some(mm(300.0)),
        };
        pair.record(PRODUCE_ROW, compare::SKIFF, &mut m);
        let cost = m.median(PRODUCE_ROW, COST, compare::SKIFF);
        assert!(cost.is_some_and(|c| (c - 0.75).abs() < 1e-9), "{cost:?}");
        let half = Pair {
            plaintext: None,
            ssl: Some(mm(1.0)),
        };
        half.record("tls: other", compare::SKIFF, &mut m);
        assert_eq!(m.median("tls: other", COST, compare::SKIFF), None);
    }
}
