//! Key lookups and table snapshots survive kill -9 (docs/key-index.md §5: the index is not
//! written to disk; every start rebuilds it from the log): the real binary, raw Produce
//! frames with acks=-1, the cleaner running, SIGKILL and a restart on the same data
//! directory. After the restart every key answers its latest acknowledged value (retrying
//! while the index is `503 loading`), deleted keys answer `404 key_not_found`, the snapshot
//! holds exactly the model, and a write after the restart is the next lookup. Also: writes
//! made while the index rebuilds (a throttled builder) are in it once ready, and kill -9
//! while compaction passes run (compact-now asked just before) loses nothing.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use common::frames::{s, Conn};
use common::free_port;
use kafka_protocol::messages::*;
use serde_json::Value;
use skiff_records::{BatchBuilder, Compression};
use skiff_testkit::{Broker, Options};

const TOPIC: &str = "table";
const PARTITIONS: i32 = 3;
const KEYS: usize = 90;

/// key → (partition, offset, value; `None` for a tombstone) of its latest acknowledged write.
type Model = BTreeMap<String, (i32, i64, Option<String>)>;

fn start(http: &str, extra: &[(&str, &str)]) -> Broker {
    Broker::start_opts(
        Options::new()
            .bin(env!("CARGO_BIN_EXE_skiff"))
            .set("skiff.http.listener", http)
            // The cleaner runs while the test writes.
            .set("log.cleaner.backoff.ms", "100")
            .set("log.cleaner.threads", "1")
            .sets(extra),
    )
    .unwrap()
}

fn create_topic(conn: &mut Conn, topic: &str) {
    use create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let config = |k: &str, v: &str| {
        CreatableTopicConfig::default()
            .with_name(s(k))
            .with_value(Some(s(v)))
    };
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(topic)))
            .with_num_partitions(PARTITIONS)
            .with_replication_factor(1)
            .with_configs(vec![
                config("cleanup.policy", "compact"),
                config("skiff.key.index.enable", "true"),
                config("segment.ms", "100"),
                config("min.cleanable.dirty.ratio", "0.01"),
                config("file.delete.delay.ms", "0"),
            ])])
        .with_timeout_ms(10_000);
    let r: CreateTopicsResponse = conn.call(ApiKey::CreateTopics, 7, &request);
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Produces one batch of `(key, value)` to `partition` with acks=-1 and, once acknowledged,
/// records each write in `model`.
fn produce(
    conn: &mut Conn,
    topic: &str,
    partition: i32,
    records: &[(String, Option<String>)],
    model: &mut Model,
) {
    use produce_request::{PartitionProduceData, TopicProduceData};
    let mut builder = BatchBuilder::new(0, Compression::None);
    for (k, v) in records {
        builder.push(
            now_ms(),
            Some(k.as_bytes()),
            v.as_ref().map(String::as_bytes),
            &[],
        );
    }
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(Bytes::from(builder.build().unwrap())))])]);
    let r: ProduceResponse = conn.call(ApiKey::Produce, 9, &request);
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "{:?}", p.error_message);
    for (i, (k, v)) in records.iter().enumerate() {
        let offset = p.base_offset + i64::try_from(i).unwrap();
        model.insert(k.clone(), (partition, offset, v.clone()));
    }
}

/// One HTTP/1.1 GET (`Connection: close`); returns the status and the (de-chunked) body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    http_request(addr, "GET", path)
}

/// One HTTP/1.1 request (`Connection: close`); returns the status and the (de-chunked) body.
fn http_request(addr: &str, method: &str, path: &str) -> (u16, String) {
    // Right after a restart the HTTP listener may not be bound yet: retry the connect.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut st = loop {
        match TcpStream::connect(addr) {
            Ok(st) => break st,
            Err(e) => {
                assert!(Instant::now() < deadline, "connect {addr}: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    st.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        st,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    st.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut body = raw[split + 4..].to_vec();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = Vec::new();
        let mut rest = body.as_slice();
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16)
                .unwrap();
            rest = &rest[eol + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        body = out;
    }
    (status, String::from_utf8(body).unwrap())
}

/// GET until the answer is not `503 loading` (the index being rebuilt), bounded.
fn get_ready(addr: &str, path: &str) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = http_get(addr, path);
        let json: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{path}: {status} not JSON ({e}): {body}"));
        if status != 503 || json["error"]["code"] != "loading" {
            return (status, json);
        }
        assert!(
            Instant::now() < deadline,
            "{path}: still loading after 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every key of `model` answers its latest write (or 404 for a tombstone).
fn check_lookups(http: &str, topic: &str, model: &Model, what: &str) {
    for (k, (p, o, v)) in model {
        let (status, j) = get_ready(http, &format!("/v1/topics/{topic}/keys/{k}?partition={p}"));
        match v {
            Some(v) => {
                assert_eq!(status, 200, "{what}: {k}: {j}");
                assert_eq!(
                    (&j["key"], &j["value"], &j["partition"], &j["offset"]),
                    (
                        &Value::from(k.as_str()),
                        &Value::from(v.as_str()),
                        &Value::from(*p),
                        &Value::from(*o)
                    ),
                    "{what}: {k}"
                );
            }
            None => {
                assert_eq!(
                    (status, j["error"]["code"].as_str()),
                    (404, Some("key_not_found")),
                    "{what}: {k}: {j}"
                );
            }
        }
    }
}

/// The snapshot holds exactly the live keys of `model`, each once, at its latest offset.
fn check_snapshot(http: &str, topic: &str, model: &Model, what: &str) {
    let (status, body) = http_get(http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(status, 200, "{what}: {body}");
    let lines: Vec<Value> = body
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (last, rows) = lines.split_last().unwrap();
    assert!(
        last["end_offsets"].is_object(),
        "{what}: no end offsets line"
    );
    let mut got = BTreeMap::new();
    for r in rows {
        let k = r["key"].as_str().unwrap().to_string();
        let row = (
            i32::try_from(r["partition"].as_i64().unwrap()).unwrap(),
            r["offset"].as_i64().unwrap(),
            Some(
                r["value"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{what}: tombstone line {r}"))
                    .to_string(),
            ),
        );
        assert!(got.insert(k.clone(), row).is_none(), "{what}: {k} twice");
    }
    let want: Model = model
        .iter()
        .filter(|(_, v)| v.2.is_some())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(
        got, want,
        "{what}: snapshot differs from the acknowledged writes"
    );
}

/// The partition of key number `j`.
fn partition_of(j: usize) -> i32 {
    i32::try_from(j).unwrap() % PARTITIONS
}

/// A broker with the HTTP API on a free port (`extra` settings too), a connection to it,
/// the indexed topic and an empty model.
fn setup(extra: &[(&str, &str)]) -> (String, Broker, Conn, Model) {
    let http = format!("127.0.0.1:{}", free_port());
    let broker = start(&http, extra);
    let mut conn = Conn::connect(&broker.bootstrap());
    create_topic(&mut conn, TOPIC);
    (http, broker, conn, Model::new())
}

/// One batch per partition over the key numbers of that partition: `write(j)` is `None` to
/// skip key `j`, else its value (`Some(None)` a tombstone).
fn write_round(
    conn: &mut Conn,
    model: &mut Model,
    mut write: impl FnMut(usize) -> Option<Option<String>>,
) {
    for p in 0..PARTITIONS {
        let records: Vec<(String, Option<String>)> = (0..KEYS)
            .filter(|j| partition_of(*j) == p)
            .filter_map(|j| write(j).map(|v| (format!("key-{j}"), v)))
            .collect();
        produce(conn, TOPIC, p, &records, model);
    }
}

/// SIGKILL, drop the old connection, restart on the same data directory, connect again.
fn kill9_and_restart(broker: &mut Broker, conn: Conn) -> Conn {
    broker.kill9().unwrap();
    drop(conn);
    broker.restart().unwrap();
    Conn::connect(&broker.bootstrap())
}

/// Every lookup and the snapshot agree with `model`.
fn check_all(http: &str, model: &Model, what: &str) {
    check_lookups(http, TOPIC, model, what);
    check_snapshot(http, TOPIC, model, what);
}

#[test]
fn lookups_and_snapshot_answer_every_acknowledged_write_after_kill_9() {
    let (http, mut broker, mut conn, mut model) = setup(&[]);

    // Rounds of one batch per partition; segments roll (segment.ms=100) and the cleaner
    // cleans between rounds. Every 7th write is a tombstone.
    let mut n = 0usize;
    for round in 0..30 {
        write_round(&mut conn, &mut model, |j| {
            if (j + round) % 4 != 0 {
                return None;
            }
            n += 1;
            Some((!n.is_multiple_of(7)).then(|| format!("r{round}-{j}")))
        });
        if round % 10 == 9 {
            std::thread::sleep(Duration::from_millis(150));
        }
    }
    assert_eq!(model.len(), KEYS);
    assert!(model.values().any(|v| v.2.is_none()), "no key ends deleted");
    check_lookups(&http, TOPIC, &model, "before the crash");

    let mut conn = kill9_and_restart(&mut broker, conn);
    check_all(&http, &model, "after kill -9 and restart");

    // Writes after the restart are visible to the next lookup.
    for j in (0..KEYS).step_by(5) {
        let records = vec![(format!("key-{j}"), Some(format!("after-{j}")))];
        produce(&mut conn, TOPIC, partition_of(j), &records, &mut model);
    }
    check_all(&http, &model, "after writes following the restart");

    // A second crash right after those writes, while nothing else happens.
    kill9_and_restart(&mut broker, conn);
    check_all(&http, &model, "after the second kill -9");
}

#[test]
fn writes_made_while_the_index_rebuilds_are_in_it_once_ready() {
    // A slow builder (4 KiB steps, 4 a second): after the restart each partition's index
    // takes seconds to load, so the writes below land while it is loading.
    let (http, mut broker, mut conn, mut model) =
        setup(&[("skiff.key.index.build.bytes.per.second", "16384")]);
    let pad = "x".repeat(300);
    for round in 0..8 {
        write_round(&mut conn, &mut model, |j| {
            Some(Some(format!("r{round}-{j}-{pad}")))
        });
    }
    check_lookups(&http, TOPIC, &model, "before the crash");

    // Straight after the restart: overwrite some keys, delete some, add new ones.
    let mut conn = kill9_and_restart(&mut broker, conn);
    for p in 0..PARTITIONS {
        let mut records = Vec::new();
        for j in (0..KEYS).filter(|j| partition_of(*j) == p) {
            match j % 6 {
                0 => records.push((format!("key-{j}"), Some(format!("during-load-{j}")))),
                1 => records.push((format!("key-{j}"), None)),
                _ => {}
            }
        }
        records.push((format!("new-{p}"), Some(format!("new-during-load-{p}"))));
        produce(&mut conn, TOPIC, p, &records, &mut model);
    }
    let loading = (0..PARTITIONS)
        .filter(|p| {
            let (status, body) = http_get(
                &http,
                &format!("/v1/topics/{TOPIC}/keys/key-0?partition={p}"),
            );
            status == 503 && body.contains("\"loading\"")
        })
        .count();
    // Not asserted (it depends on timing), only reported: the rebuild takes seconds here.
    eprintln!("partitions still loading after the writes: {loading} of {PARTITIONS}");
    check_all(&http, &model, "after the rebuild");

    // Once more, killed again while the (slow) rebuild runs.
    let mut conn = kill9_and_restart(&mut broker, conn);
    let records = vec![("key-2".to_string(), Some("second-load".to_string()))];
    produce(&mut conn, TOPIC, partition_of(2), &records, &mut model);
    kill9_and_restart(&mut broker, conn);
    check_all(&http, &model, "after kill -9 during a rebuild");
}

#[test]
fn kill_9_while_compaction_passes_run_loses_no_acknowledged_write() {
    let (http, mut broker, mut conn, mut model) = setup(&[]);
    let mut n = 0usize;
    for cycle in 0..4 {
        for round in 0..6 {
            write_round(&mut conn, &mut model, |j| {
                if (j / 3 + round) % 3 != 0 {
                    return None;
                }
                n += 1;
                Some((!n.is_multiple_of(5)).then(|| format!("c{cycle}-r{round}-{j}")))
            });
            // Past segment.ms: the next round's appends roll the segments.
            std::thread::sleep(Duration::from_millis(110));
        }
        // Ask for a pass on every partition and crash straight away: the passes are
        // queued, running or swapping when the process dies.
        let (status, body) = http_request(&http, "POST", &format!("/v1/topics/{TOPIC}/compaction"));
        assert_eq!(status, 202, "{body}");
        conn = kill9_and_restart(&mut broker, conn);
        let what = format!("after kill -9 during compaction, cycle {cycle}");
        check_all(&http, &model, &what);
    }
    let logs = broker.logs();
    eprintln!(
        "passes finished: {}, swaps: {}",
        logs.matches("cleaned log in").count(),
        logs.matches("swapped in cleaned segment").count()
    );
}
