//! `skiff-bench console`: what the web console (issue 17) costs. The same Skiff release
//! binary with the HTTP listener, once with `skiff.console.enable=true` and once `false`,
//! the same data (topics written and consumer groups committed with librdkafka), then:
//! RSS one second after start, RSS with the data, and RSS after the same number of HTTP
//! requests (every console page reachable from `/console`, found by following its links; the
//! console-off broker answers `/metrics` instead, the only page it has); and with the console
//! on, the time to serve each kind of page (median of its loads). Printed as a matrix with
//! console-on / console-off ratios.
//!
//! Owns: [`run`]. Every page load checks its status (200), so a fast error page cannot pass
//! for a figure.
//!
//! Thread-safety: main thread only. On-disk: the brokers' temp roots.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use crate::broker::{BrokerKind, Launch, RunningBroker};
use crate::http;
use crate::matrix::{Better, Matrix};
use crate::produce;

const ON: &str = "console on";
const OFF: &str = "console off";
/// Topics, partitions each, records each, and consumer groups of the data set.
const TOPICS: usize = 20;
const PARTITIONS: i32 = 3;
const RECORDS: usize = 2_000;
const GROUPS: usize = 5;
/// Page loads per run (the crawl's pages repeated until this many).
const LOADS: usize = 300;
/// Most distinct pages the crawl follows.
const MAX_PAGES: usize = 60;

/// `runs` runs of each configuration; prints the matrix.
pub fn run(bin: &std::path::Path, runs: u32, clk_tck: f64) -> Result<()> {
    let kind = BrokerKind::Skiff {
        bin: bin.to_path_buf(),
    };
    kind.check()?;
    let mut m = Matrix::new(&[ON, OFF], ON);
    for run in 1..=runs {
        for (label, enabled) in [(ON, true), (OFF, false)] {
            eprintln!("run {run}/{runs}: {label}");
            one(&kind, label, enabled, clk_tck, &mut m)
                .with_context(|| format!("run {run}, {label}"))?;
        }
    }
    println!();
    println!(
        "skiff-bench console: {} ({runs} runs; medians, min-max)",
        bin.display()
    );
    print!("{}", m.render_text());
    Ok(())
}

fn one(kind: &BrokerKind, label: &str, enabled: bool, clk_tck: f64, m: &mut Matrix) -> Result<()> {
    let port = skiff_testkit::free_port()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let launch = Launch {
        settings: vec![
            format!("skiff.http.listener={addr}"),
            format!("skiff.console.enable={enabled}"),
        ],
        ..Launch::default()
    };
    let mut b = kind.launch_with(&launch)?;
    http::wait_listening(addr, Duration::from_secs(10))?;
    std::thread::sleep(Duration::from_secs(1));
    let mib = |b: &RunningBroker| -> Result<f64> {
        Ok(b.sample(clk_tck)?.rss_bytes as f64 / (1024.0 * 1024.0))
    };
    m.add(
        "idle",
        "RSS MiB 1 s after start",
        Better::Lower,
        label,
        mib(&b)?,
    );
    write_data(&b.bootstrap())?;
    m.add(
        "with data",
        &format!("RSS MiB ({TOPICS} topics, {GROUPS} groups)"),
        Better::Lower,
        label,
        mib(&b)?,
    );
    let deadline = Instant::now() + Duration::from_secs(300);
    if enabled {
        let pages = crawl(addr, deadline)?;
        let mut times: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for path in pages.iter().cycle().take(LOADS) {
            let t = Instant::now();
            let (status, _) = http::get(addr, path, deadline)?;
            if status != 200 {
                bail!("GET {path}: status {status}");
            }
            times
                .entry(kind_of(path))
                .or_default()
                .push(t.elapsed().as_secs_f64() * 1000.0);
        }
        for (page, mut ms) in times {
            ms.sort_by(f64::total_cmp);
            m.add(
                "page time",
                &format!("{page} p50 ms"),
                Better::Lower,
                label,
                ms[ms.len() / 2],
            );
        }
    } else {
        for _ in 0..LOADS {
            let (status, _) = http::get(addr, "/metrics", deadline)?;
            if status != 200 {
                bail!("GET /metrics: status {status}");
            }
        }
    }
    m.add(
        "after browsing",
        &format!("RSS MiB after {LOADS} requests"),
        Better::Lower,
        label,
        mib(&b)?,
    );
    b.stop()
}

/// The kind of a console page, for grouping its loads: its path with topic and group names
/// replaced (`/console/topics/{name}/messages`).
fn kind_of(path: &str) -> String {
    let path = path.split('?').next().unwrap_or(path);
    let parts: Vec<&str> = path.split('/').collect();
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 3 && matches!(parts.get(2), Some(&"topics") | Some(&"groups")) {
                "{name}"
            } else {
                p
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every console page reachable from `/console` by `href="/console..."` links (no assets,
/// no downloads), at most [`MAX_PAGES`], each answered 200.
fn crawl(addr: SocketAddr, deadline: Instant) -> Result<Vec<String>> {
    let mut seen = vec!["/console".to_string()];
    let mut next = 0;
    while next < seen.len() && seen.len() < MAX_PAGES {
        let path = seen[next].clone();
        next += 1;
        let (status, body) = http::get(addr, &path, deadline)?;
        if status != 200 {
            bail!("GET {path}: status {status}");
        }
        let html = String::from_utf8_lossy(&body);
        for link in html.split("href=\"").skip(1) {
            let Some(end) = link.find('"') else { continue };
            let href = link[..end].replace("&amp;", "&");
            if href.starts_with("/console")
                && !href.starts_with("/console/assets/")
                && !seen.contains(&href)
                && seen.len() < MAX_PAGES
            {
                seen.push(href);
            }
        }
    }
    Ok(seen)
}

/// The data set: [`TOPICS`] topics of [`PARTITIONS`] partitions with [`RECORDS`] keyed
/// records each (one compacted), and [`GROUPS`] groups that committed half of each topic.
fn write_data(bootstrap: &str) -> Result<()> {
    for t in 0..TOPICS {
        let compacted = t == 0;
        let configs: Vec<(&str, String)> = if compacted {
            vec![("cleanup.policy", "compact".to_string())]
        } else {
            Vec::new()
        };
        produce::create_topic_with(
            bootstrap,
            &format!("console-bench-{t}"),
            PARTITIONS,
            &configs,
        )?;
    }
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .create()
        .context("producer")?;
    for t in 0..TOPICS {
        let topic = format!("console-bench-{t}");
        for i in 0..RECORDS {
            let key = format!("key-{}", i % 200);
            let value = format!("{{\"n\":{i}}}");
            let mut record = BaseRecord::to(&topic).key(&key).payload(&value);
            loop {
                match p.send(record) {
                    Ok(()) => break,
                    Err((_, r)) => {
                        record = r;
                        p.poll(Duration::from_millis(10));
                    }
                }
            }
        }
    }
    p.flush(Duration::from_secs(60)).context("flushing")?;
    for g in 0..GROUPS {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", format!("console-bench-group-{g}"))
            .create()
            .context("consumer")?;
        let mut tpl = TopicPartitionList::new();
        for t in 0..TOPICS {
            for part in 0..PARTITIONS {
                let half = i64::try_from(RECORDS).unwrap_or(0) / i64::from(PARTITIONS) / 2;
                tpl.add_partition_offset(
                    &format!("console-bench-{t}"),
                    part,
                    Offset::Offset(half),
                )?;
            }
        }
        c.commit(&tpl, CommitMode::Sync).context("committing")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_group_by_kind() {
        assert_eq!(
            kind_of("/console/topics/a-1/messages?partition=0"),
            "/console/topics/{name}/messages"
        );
        assert_eq!(kind_of("/console/groups/g"), "/console/groups/{name}");
        assert_eq!(kind_of("/console/topics"), "/console/topics");
        assert_eq!(kind_of("/console"), "/console");
    }
}
