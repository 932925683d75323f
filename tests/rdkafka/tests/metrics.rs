//! The metrics listener (`metrics.listener`) and `skiff compaction-status` against the real
//! binary: exact record and byte counts after a known produce/fetch workload (raw wire client
//! and librdkafka), request/connection/fsync figures, HTTP status codes, compaction figures
//! that move after a clean, and the status subcommand's table and errors.
//!
//! Each test owns its broker (Kafka port plus a second free port for metrics). Every wait is
//! a bounded poll. No files of its own.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{admin, consume_n, consumer, create_topic, produce_n, producer};
use rdkafka::Offset;
use skiff_e2e::raw::RawClient;
use skiff_e2e::{free_port, skiff_bin, unique_topic, Broker};
use skiff_records::{BatchBuilder, Compression};

/// A broker with a metrics listener; returns it and the metrics address.
fn start(extra: &[(&str, &str)]) -> (Broker, String) {
    let addr = format!("127.0.0.1:{}", free_port().unwrap());
    let mut props: Vec<(&str, &str)> = vec![("metrics.listener", &addr)];
    props.extend_from_slice(extra);
    (Broker::start_with(&props).unwrap(), addr)
}

/// One HTTP/1.1 request; returns (status code, body).
fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, body.to_string())
}

fn scrape(addr: &str) -> String {
    let (code, body) = http(addr, "GET", "/metrics");
    assert_eq!(code, 200, "{body}");
    body
}

/// The value of the sample `name{labels}` (labels in rendering order), if present.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    let prefix = if labels.is_empty() {
        format!("{name} ")
    } else {
        format!("{name}{{{}}} ", labels.join(","))
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().parse().unwrap())
}

fn part(text: &str, name: &str, topic: &str) -> f64 {
    value(text, name, &[("topic", topic), ("partition", "0")])
        .unwrap_or_else(|| panic!("no {name} for {topic}/0 in:\n{text}"))
}

fn batch(first_key: usize, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, Compression::None);
    for i in first_key..first_key + n {
        let k = format!("key-{i}");
        b.push(1_700_000_000_000, Some(k.as_bytes()), Some(b"value"), &[]);
    }
    b.build().unwrap()
}

#[test]
fn raw_workload_gives_exact_counts() {
    let (b, m) = start(&[]);
    let mut raw = RawClient::connect(&b.bootstrap()).unwrap();
    let topic = unique_topic("metrics-raw");
    assert_eq!(raw.create_topic(&topic, 1, &[]).unwrap().0, 0);
    let mut bytes = 0usize;
    let mut records = 0usize;
    for n in 1..=5 {
        let bt = batch(records, n);
        bytes += bt.len();
        records += n;
        raw.produce_ok(&topic, 0, bt).unwrap();
    }
    let text = scrape(&m);
    assert_eq!(
        part(&text, "skiff_partition_produced_bytes_total", &topic),
        bytes as f64
    );
    assert_eq!(
        part(&text, "skiff_partition_produced_records_total", &topic),
        15.0
    );
    assert_eq!(
        part(&text, "skiff_partition_fetched_records_total", &topic),
        0.0
    );
    assert_eq!(part(&text, "skiff_log_start_offset", &topic), 0.0);
    assert_eq!(part(&text, "skiff_log_end_offset", &topic), 15.0);
    assert_eq!(part(&text, "skiff_log_size_bytes", &topic), bytes as f64);
    // acks=-1 produces wait for the group commit: at least one timed fsync.
    let fsyncs = value(
        &text,
        "skiff_fsync_duration_seconds_count",
        &[("site", "group_commit")],
    );
    assert!(fsyncs.unwrap() >= 1.0, "{text}");

    let fetched = raw.fetch(&topic, 0, 0).unwrap();
    let fetched_bytes: usize = fetched.batches.iter().map(|b| b.size).sum();
    assert_eq!(fetched_bytes, bytes);
    // The connection's writer times a request once its response is written, so the client
    // can read the answer just before the Fetch is counted: scrape until it is.
    let fetch_timed = |text: &str| {
        value(
            text,
            "skiff_request_duration_seconds_count",
            &[("api", "Fetch")],
        )
        .is_some_and(|n| n >= 1.0)
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut text = scrape(&m);
    while !fetch_timed(&text) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        text = scrape(&m);
    }
    assert_eq!(
        part(&text, "skiff_partition_fetched_bytes_total", &topic),
        bytes as f64
    );
    assert_eq!(
        part(&text, "skiff_partition_fetched_records_total", &topic),
        15.0
    );
    // CreateTopics + 5 Produce + 1 Fetch on this connection, each counted and timed.
    assert_eq!(
        value(&text, "skiff_requests_total", &[("api", "Produce")]),
        Some(5.0)
    );
    assert_eq!(
        value(&text, "skiff_requests_total", &[("api", "Fetch")]),
        Some(1.0)
    );
    assert_eq!(
        value(
            &text,
            "skiff_request_duration_seconds_count",
            &[("api", "Produce")]
        ),
        Some(5.0)
    );
    assert_eq!(
        value(
            &text,
            "skiff_request_duration_seconds_bucket",
            &[("api", "Fetch"), ("le", "+Inf")]
        ),
        Some(1.0)
    );
    assert_eq!(value(&text, "skiff_connections_open", &[]), Some(1.0));
    assert!(value(&text, "skiff_connections_accepted_total", &[]).unwrap() >= 1.0);
    drop(raw);
    let deadline = Instant::now() + Duration::from_secs(5);
    while value(&scrape(&m), "skiff_connections_open", &[]) != Some(0.0) {
        assert!(Instant::now() < deadline, "connection still counted open");
        sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdkafka_workload_gives_exact_counts() {
    let (b, m) = start(&[]);
    let topic = unique_topic("metrics-rd");
    create_topic(&admin(&b).unwrap(), &topic, 1, &[])
        .await
        .unwrap();
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let n = 250;
    produce_n(&p, &topic, 0, n, |i| {
        (
            format!("k{i}").into_bytes(),
            format!("value-{i}").into_bytes(),
        )
    })
    .await
    .unwrap();
    let c = consumer(&b, &[]).unwrap();
    let recs = consume_n(&c, &topic, 0, Offset::Beginning, n, Duration::from_secs(20)).unwrap();
    assert_eq!(recs.len(), n);
    let text = scrape(&m);
    let size = part(&text, "skiff_log_size_bytes", &topic);
    assert!(size > 0.0);
    assert_eq!(
        part(&text, "skiff_partition_produced_records_total", &topic),
        n as f64
    );
    assert_eq!(
        part(&text, "skiff_partition_produced_bytes_total", &topic),
        size
    );
    assert_eq!(part(&text, "skiff_log_end_offset", &topic), n as f64);
    // The consumer read every batch exactly once.
    assert_eq!(
        part(&text, "skiff_partition_fetched_records_total", &topic),
        n as f64
    );
    assert_eq!(
        part(&text, "skiff_partition_fetched_bytes_total", &topic),
        size
    );
}

#[test]
fn http_status_codes() {
    let (_b, m) = start(&[]);
    assert_eq!(http(&m, "GET", "/").0, 404);
    assert_eq!(http(&m, "GET", "/metricsx").0, 404);
    assert_eq!(http(&m, "POST", "/metrics").0, 405);
    assert_eq!(http(&m, "GET", "/metrics?x=1").0, 200);
    // A head over the 8 KiB limit is refused, not buffered.
    let mut s = TcpStream::connect(&m).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let big = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(10_000));
    let _ = s.write_all(big.as_bytes());
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    assert!(raw.starts_with("HTTP/1.1 431 "), "{raw}");
}

/// Compacted topic as the compaction suite sets it up (docs/compaction.md §6 profile).
const COMPACT: &[(&str, &str)] = &[
    ("cleanup.policy", "compact"),
    ("segment.ms", "100"),
    ("min.cleanable.dirty.ratio", "0.01"),
    ("delete.retention.ms", "1000"),
    ("file.delete.delay.ms", "0"),
];

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn put(raw: &mut RawClient, topic: &str, key: &str, value: Option<&[u8]>) {
    let mut b = BatchBuilder::new(0, Compression::None);
    b.push(now_ms(), Some(key.as_bytes()), value, &[]);
    raw.produce_ok(topic, 0, b.build().unwrap()).unwrap();
}

/// Polls the metrics until `ok` holds for `topic`/0 or 20 s pass.
fn await_metrics(m: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = scrape(m);
        if ok(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{text}"
        );
        sleep(Duration::from_millis(100));
    }
}

#[test]
fn compaction_figures_move_after_a_clean_and_status_shows_them() {
    let (b, m) = start(&[
        ("log.cleaner.backoff.ms", "100"),
        ("log.cleaner.threads", "1"),
    ]);
    let mut raw = RawClient::connect(&b.bootstrap()).unwrap();
    let topic = unique_topic("metrics-compact");
    assert_eq!(raw.create_topic(&topic, 1, COMPACT).unwrap().0, 0);
    let before = scrape(&m);
    assert_eq!(
        value(
            &before,
            "skiff_compaction_passes_total",
            &[("topic", &topic), ("partition", "0")]
        )
        .unwrap_or(0.0),
        0.0
    );
    // 10 keys × 3 values, then a tombstone for k0: 21 superseded values + 1 tombstone.
    for round in 0..3 {
        for k in 0..10 {
            put(
                &mut raw,
                &topic,
                &format!("k{k}"),
                Some(format!("v{round}").as_bytes()),
            );
        }
    }
    put(&mut raw, &topic, "k0", None);
    sleep(Duration::from_millis(150));
    put(&mut raw, &topic, "~roll", Some(b"r")); // seals the segment above

    // Segments roll every 100 ms, so the cleaner may already run while we produce: wait for
    // the cumulative figure rather than for the first pass.
    let text = await_metrics(&m, "21 superseded values to be removed", |t| {
        value(
            t,
            "skiff_compaction_records_removed_total",
            &[("topic", &topic), ("partition", "0")],
        )
        .is_some_and(|v| v >= 21.0)
    });
    let f = |name: &str| part(&text, name, &topic);
    assert!(f("skiff_compaction_passes_total") >= 1.0, "{text}");
    let read = f("skiff_compaction_read_bytes_total");
    let written = f("skiff_compaction_written_bytes_total");
    assert!(
        read > 0.0 && written > 0.0 && written < read,
        "read {read} written {written}"
    );
    let started = f("skiff_compaction_last_clean_start_timestamp_seconds");
    let now_s = now_ms() as f64 / 1000.0;
    assert!(
        started > now_s - 60.0 && started <= now_s + 1.0,
        "{started} vs {now_s}"
    );
    assert!(f("skiff_compaction_last_clean_duration_seconds") >= 0.0);
    assert_eq!(f("skiff_compaction_min_cleanable_dirty_ratio"), 0.01);
    assert!(text.lines().any(|l| l.starts_with(&format!(
        "skiff_compaction_first_uncleanable_offset{{topic=\"{topic}\",partition=\"0\",limit=\""
    ))));
    assert!(value(&text, "skiff_log_cleaner_backlog_partitions", &[]).is_some());

    // The tombstone leaves once delete.retention.ms has passed (a later pass).
    sleep(Duration::from_millis(1100));
    put(&mut raw, &topic, "~roll", Some(b"r"));
    sleep(Duration::from_millis(150));
    put(&mut raw, &topic, "~roll", Some(b"r"));
    await_metrics(&m, "the tombstone to be removed", |t| {
        value(
            t,
            "skiff_compaction_tombstones_removed_total",
            &[("topic", &topic), ("partition", "0")],
        )
        .is_some_and(|v| v >= 1.0)
    });

    // The status subcommand prints this partition's row from the same figures.
    let out = Command::new(skiff_bin())
        .args(["compaction-status", "--metrics", &m, "--topic", &topic])
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("TOPIC") && lines[0].contains("STATE"),
        "{stdout}"
    );
    assert_eq!(lines.len(), 3, "{stdout}");
    let row = lines[1];
    assert!(row.starts_with(&format!("{topic}  0 ")), "{row}");
    assert!(
        row.contains("ago") && row.contains(" tomb") && row.contains("/0.01"),
        "{row}"
    );
    assert!(!row.contains("never"), "{row}");
    assert!(lines[2].starts_with("cleaner backlog: "), "{stdout}");
}

#[test]
fn status_subcommand_errors_are_clear() {
    let (b, _m) = start(&[]);
    let run = |addr: &str| {
        let out = Command::new(skiff_bin())
            .args(["compaction-status", "--metrics", addr])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // The Kafka port is not the metrics port.
    let e = run(&b.bootstrap());
    assert!(e.contains("not the metrics listener"), "{e}");
    // Nothing listening.
    let e = run(&format!("127.0.0.1:{}", free_port().unwrap()));
    assert!(e.contains("cannot reach the metrics listener"), "{e}");
    assert!(e.contains("metrics.listener"), "{e}");
}
