//! `skiff compact` against the real binary's HTTP API: a compacted topic with 50 records
//! over 5 keys in a sealed segment; `--dry-run` prints the figures without changing
//! anything, then compact-now waits for its ticket and prints the pass; Basic authentication
//! with the password in SKIFF_HTTP_PASSWORD; a clear error for a topic that is missing; and
//! https with `skiff dev-certs` certificates and `--ca-file`.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::frames::{s, Conn};
use common::{dev_certs, free_port, run, skiff};
use kafka_protocol::messages::*;
use skiff_records::{BatchBuilder, Compression};

/// Creates `topic` (one partition, compacted, segments rolled after 100 ms).
fn create_compacted(conn: &mut Conn, topic: &str) {
    use create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let config = |k: &str, v: &str| {
        CreatableTopicConfig::default()
            .with_name(s(k))
            .with_value(Some(s(v)))
    };
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(topic)))
            .with_num_partitions(1)
            .with_replication_factor(1)
            .with_configs(vec![
                config("cleanup.policy", "compact"),
                config("segment.ms", "100"),
            ])])
        .with_timeout_ms(10_000);
    let r: CreateTopicsResponse = conn.call(ApiKey::CreateTopics, 7, &request);
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
}

/// Produces one batch of `(key, value)` records to partition 0.
fn produce(conn: &mut Conn, topic: &str, records: &[(String, String)]) {
    use produce_request::{PartitionProduceData, TopicProduceData};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut builder = BatchBuilder::new(0, Compression::None);
    for (k, v) in records {
        builder.push(now, Some(k.as_bytes()), Some(v.as_bytes()), &[]);
    }
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(builder.build().unwrap())))])]);
    let r: ProduceResponse = conn.call(ApiKey::Produce, 9, &request);
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "{:?}", p.error_message);
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "skiff compact failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The cells of the first table row (after the title and header lines `skip`).
fn row(text: &str, skip: usize) -> Vec<String> {
    text.lines()
        .nth(skip)
        .unwrap_or_else(|| panic!("no row: {text}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn dry_run_then_compact_now_through_the_http_api() {
    let http = format!("127.0.0.1:{}", free_port());
    let plain = format!("127.0.0.1:{}", free_port());
    let sasl = format!("127.0.0.1:{}", free_port());
    // PLAIN users for Basic come from a SASL listener that enables PLAIN.
    let _broker = skiff_testkit::Broker::start_opts(
        skiff_testkit::Options::new()
            .set(
                "listeners",
                &format!("PLAINTEXT://{plain},SASL_PLAINTEXT://{sasl}"),
            )
            .set("skiff.http.listener", &http)
            .set("skiff.http.authentication", "basic")
            .set("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN")
            .set(
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_ops=\"ops-secret\";",
            )
            .set("sasl.scram.users", "SCRAM-SHA-256=[name=ops2,password=ops2-secret]")
            // The cleaner only runs when asked: its periodic check is an hour away.
            .set("log.cleaner.backoff.ms", "3600000")
            .ready(skiff_testkit::Ready::LogLine(
                skiff_testkit::READY_LINE.to_string(),
            )),
    )
    .unwrap();
    let mut conn = Conn::connect(&plain);
    create_compacted(&mut conn, "table");
    let records: Vec<(String, String)> = (0..50)
        .map(|i| (format!("k{}", i % 5), format!("v{i}")))
        .collect();
    produce(&mut conn, "table", &records);
    // Past segment.ms, the next append rolls: the 50 records are in a sealed segment.
    std::thread::sleep(Duration::from_millis(250));
    produce(
        &mut conn,
        "table",
        &[("~roll".to_string(), "x".to_string())],
    );

    let compact = |extra: &[&str], user: &str, password: &str| {
        let mut cmd = skiff();
        cmd.args(["compact", "--http", &http, "--topic"])
            .args(extra)
            .args(["--user", user])
            .env("SKIFF_HTTP_PASSWORD", password);
        run(&mut cmd, None)
    };

    let out = stdout(&compact(&["table", "--dry-run"], "ops", "ops-secret"));
    assert!(out.contains("nothing was changed"), "{out}");
    let cells = row(&out, 2);
    // partition, range, limited_by, dirty/min, eligible, keys, read, removed, ...
    assert_eq!(cells[0], "0", "{out}");
    assert_eq!(cells[1], "0..50", "{out}");
    assert_eq!(
        (cells[5].as_str(), cells[6].as_str(), cells[7].as_str()),
        ("5", "50", "45"),
        "{out}"
    );
    // Still dirty: a second dry run reports the same.
    let again = stdout(&compact(
        &["table", "--dry-run", "--partition", "0"],
        "ops2",
        "ops2-secret",
    ));
    assert_eq!(row(&again, 2)[7], "45", "{again}");

    let out = stdout(&compact(&["table"], "ops", "ops-secret"));
    let cells = row(&out, 1);
    // partition, ticket, state, read, removed, ...
    assert_eq!(
        (cells[0].as_str(), cells[2].as_str()),
        ("0", "done"),
        "{out}"
    );
    assert_eq!(cells[4], "45", "{out}");
    // Cleaned: nothing left to remove.
    let after = stdout(&compact(&["table", "--dry-run"], "ops", "ops-secret"));
    assert_eq!(row(&after, 2)[7], "0", "{after}");

    // Errors are one line with the API's code.
    let out = compact(&["nope", "--dry-run"], "ops", "ops-secret");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("404 unknown_topic_or_partition"), "{err}");
    let out = compact(&["table", "--dry-run"], "ops", "wrong");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401 unauthenticated"), "{err}");
}

#[test]
fn https_with_a_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    dev_certs(&certs);
    let c = |f: &str| certs.join(f).display().to_string();
    let http = format!("127.0.0.1:{}", free_port());
    let broker = skiff_testkit::Broker::start_opts(
        skiff_testkit::Options::new()
            .set("skiff.http.listener", &http)
            .set("skiff.http.ssl.enabled", "true")
            .set("ssl.keystore.type", "PEM")
            .set("ssl.keystore.location", &c("server.pem")),
    )
    .unwrap();
    let mut conn = Conn::connect(&broker.bootstrap());
    create_compacted(&mut conn, "table");
    produce(&mut conn, "table", &[("k".to_string(), "v".to_string())]);

    let compact = |extra: &[&str]| {
        let mut cmd = skiff();
        cmd.args(["compact", "--topic", "table", "--dry-run", "--http"])
            .args(extra);
        run(&mut cmd, None)
    };
    let out = stdout(&compact(&[&http, "--ca-file", &c("ca.pem")]));
    assert_eq!(row(&out, 2)[0], "0", "{out}");
    // Plain HTTP to the TLS port, and a CA that did not sign the certificate, both fail.
    let out = compact(&[&http]);
    assert!(!out.status.success());
    let other = dir.path().join("other");
    dev_certs(&other);
    let out = compact(&[
        &http,
        "--ca-file",
        &other.join("ca.pem").display().to_string(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TLS") || err.contains("certificate"), "{err}");
}
