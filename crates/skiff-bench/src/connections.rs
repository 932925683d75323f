//! `skiff-bench connections` (issue 18): what idle client connections cost, Skiff beside
//! Apache Kafka 4.4 in one run. Each run starts one fresh broker per contender and opens idle
//! connections in steps up to `--connections` (default 10,000); every connection does one
//! ApiVersions round trip, so the broker has accepted it and set it up, then stays open
//! without traffic. At each step: the broker's RSS and open files, and the produce latency
//! (p50, p99; acks=1, 1 KiB, a fixed rate, see `latency`) of one active librdkafka producer
//! while the idle ones stay connected. Bytes per idle connection is the RSS growth from one
//! idle connection to the largest step, divided by the connections added (from one, not
//! zero: the first step's producer and consumer make the broker create
//! `__consumer_offsets`, which is not a connection's cost).
//!
//! Owns: [`run`]. Thread-safety: main thread only (the latency phase runs its own consumer
//! thread). On-disk: the brokers' temp roots. Every connection is to 127.0.0.1 and is closed
//! when its step's broker is stopped; the steps are bounded by `--connections`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::broker::{BrokerKind, RunningBroker};
use crate::latency::{self, LatencySpec};
use crate::matrix::{Better, Matrix};
use crate::produce::{self, Acks};

/// Most idle connections a run may ask for (the bench holds one file per connection too).
pub const MAX_CONNECTIONS: usize = 15_000;
/// The active producer's rate and duration at each step.
const RATE: f64 = 500.0;
const SECS: f64 = 4.0;
/// ApiVersions v0 answers are a few hundred bytes.
const MAX_ANSWER: usize = 64 * 1024;

/// `runs` runs of each contender (Skiff, and Kafka when `kafka` is given); prints the matrix.
pub fn run(
    skiff: &std::path::Path,
    kafka: Option<BrokerKind>,
    max: usize,
    runs: u32,
    clk_tck: f64,
    plot: Option<&std::path::Path>,
) -> Result<()> {
    if max == 0 || max > MAX_CONNECTIONS {
        bail!("--connections must be 1..={MAX_CONNECTIONS}");
    }
    let contenders = crate::broker::skiff_and_kafka(skiff, kafka);
    let labels: Vec<&str> = contenders.iter().map(|(l, _)| *l).collect();
    let mut m = Matrix::new(&labels, "skiff");
    let steps = steps(max);
    for run in 1..=runs {
        for (label, kind) in &contenders {
            eprintln!("run {run}/{runs}: {label}");
            if let Err(e) = kind.with_fresh(|b| measure(b, label, &steps, clk_tck, &mut m)) {
                eprintln!("  {label}: {e:#}");
                m.not_run(label, &format!("failed in run {run}: {e}"));
            }
        }
    }
    println!();
    println!(
        "skiff-bench connections: up to {max} idle connections ({runs} runs; medians, min-max)"
    );
    print!("{}", m.render_text());
    if let Some(path) = plot {
        crate::scale_plot::render(
            &m,
            "skiff-bench connections: cost against idle connections",
            &["RSS MiB", "open files", "produce p50 ms", "produce p99 ms"],
            path,
        )?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// 0, then 1, 10, 100, … below `max`, then `max`.
fn steps(max: usize) -> Vec<usize> {
    let mut s = vec![0];
    let mut n = 1;
    while n < max {
        s.push(n);
        n *= 10;
    }
    s.push(max);
    s
}

fn measure(
    b: &RunningBroker,
    label: &str,
    steps: &[usize],
    clk_tck: f64,
    m: &mut Matrix,
) -> Result<()> {
    let addr = b.bootstrap();
    let mut idle: Vec<TcpStream> = Vec::new();
    let mut rss_at_one = None;
    let max = steps.last().copied().unwrap_or(0);
    for &n in steps {
        while idle.len() < n {
            idle.push(
                open_idle(&addr).with_context(|| format!("idle connection {}", idle.len() + 1))?,
            );
        }
        // Let the broker settle (buffers freed, lazily mapped pages touched) before sampling.
        std::thread::sleep(Duration::from_millis(500));
        let rss = b.sample(clk_tck)?.rss_bytes as f64;
        let scenario = format!("{n} idle");
        m.add(
            &scenario,
            "RSS MiB",
            Better::Lower,
            label,
            rss / (1024.0 * 1024.0),
        );
        m.add(
            &scenario,
            "open files",
            Better::Lower,
            label,
            b.open_files()? as f64,
        );
        // A topic per step, so the phase's consumer reads only its own records.
        let topic = format!("bench-connections-{n}");
        produce::create_topic(&addr, &topic, 1)?;
        let lat = latency::run(&LatencySpec {
            bootstrap: addr.clone(),
            topic,
            rate: RATE,
            secs: SECS,
            size: 1024,
            acks: Acks::Leader,
        })?;
        m.add(
            &scenario,
            "produce p50 ms",
            Better::Lower,
            label,
            lat.produce.p50,
        );
        m.add(
            &scenario,
            "produce p99 ms",
            Better::Lower,
            label,
            lat.produce.p99,
        );
        if n == 1 {
            rss_at_one = Some(rss);
        } else if n == max {
            if let Some(one) = rss_at_one {
                let per = (rss - one).max(0.0) / (n - 1) as f64;
                m.add(
                    "per idle connection",
                    "RSS bytes",
                    Better::Lower,
                    label,
                    per,
                );
            }
        }
    }
    // Every idle connection must still be open and answering: a broker that dropped them
    // would look cheap.
    for (i, s) in idle.iter_mut().enumerate().step_by(97) {
        api_versions(s).with_context(|| format!("idle connection {} after the steps", i + 1))?;
    }
    Ok(())
}

/// A connection that has done one ApiVersions round trip.
fn open_idle(addr: &str) -> Result<TcpStream> {
    let mut s = TcpStream::connect(addr).context("connect")?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    api_versions(&mut s)?;
    Ok(s)
}

/// ApiVersions v0 on `s`: the answer's error code must be 0.
fn api_versions(s: &mut TcpStream) -> Result<()> {
    let client = b"skiff-bench";
    let mut body = Vec::with_capacity(32);
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&7i32.to_be_bytes());
    body.extend_from_slice(&(client.len() as i16).to_be_bytes());
    body.extend_from_slice(client);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    s.write_all(&frame).context("sending ApiVersions")?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size)
        .context("reading the answer's size")?;
    let size = usize::try_from(i32::from_be_bytes(size)).unwrap_or(usize::MAX);
    if !(6..=MAX_ANSWER).contains(&size) {
        bail!("ApiVersions answer of {size} bytes");
    }
    let mut answer = vec![0u8; size];
    s.read_exact(&mut answer).context("reading the answer")?;
    let correlation = i32::from_be_bytes([answer[0], answer[1], answer[2], answer[3]]);
    let error = i16::from_be_bytes([answer[4], answer[5]]);
    if correlation != 7 || error != 0 {
        bail!("ApiVersions answered correlation {correlation}, error {error}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::steps;

    #[test]
    fn steps_go_by_powers_of_ten_and_end_at_the_maximum() {
        assert_eq!(steps(1), vec![0, 1]);
        assert_eq!(steps(10_000), vec![0, 1, 10, 100, 1_000, 10_000]);
        assert_eq!(steps(2_500), vec![0, 1, 10, 100, 1_000, 2_500]);
    }
}
