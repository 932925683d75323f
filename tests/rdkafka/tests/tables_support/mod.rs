//! Shared helpers of the tables tests: broker and indexed-topic setup, sending into a
//! model, lookup assertions, compact-now ticket following, snapshot parsing and reading a
//! partition to its end.
//! It also re-exports the imports the cases share: each case file has one
//! `use crate::tables_support::*;`.

pub(crate) use std::collections::BTreeMap;
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
pub(crate) use std::sync::{Arc, Mutex};
pub(crate) use std::time::{Duration, Instant};

pub(crate) use crate::common;
pub(crate) use crate::common::http::{get, get_ready, post, Json, Reply};
pub(crate) use crate::common::{
    admin, consumer, create_topic, producer, wait_topic_partitions, OP_TIMEOUT,
};
pub(crate) use rdkafka::consumer::{BaseConsumer, Consumer};
pub(crate) use rdkafka::message::{BorrowedMessage, Message};
pub(crate) use rdkafka::producer::future_producer::{Delivery, DeliveryFuture};
pub(crate) use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
pub(crate) use rdkafka::{Offset, TopicPartitionList};
pub(crate) use skiff_e2e::{free_port, unique_topic, Broker};

pub(crate) const T: Duration = Duration::from_secs(30);

/// The cleaner wakes often, so passes run while the tests write.
pub(crate) const CLEANER: &[(&str, &str)] = &[
    ("log.cleaner.backoff.ms", "100"),
    ("log.cleaner.threads", "1"),
];

/// A broker with the HTTP API on a second free loopback port; returns it and that address.
pub(crate) fn start(extra: &[(&str, &str)]) -> (Broker, String) {
    let addr = format!("127.0.0.1:{}", free_port().unwrap());
    let mut props: Vec<(&str, &str)> = vec![("skiff.http.listener", &addr)];
    props.extend_from_slice(extra);
    (Broker::start_with(&props).unwrap(), addr)
}

/// An indexed compacted topic with small, quickly rolling segments.
pub(crate) async fn table_topic(
    b: &Broker,
    prefix: &str,
    partitions: i32,
    extra: &[(&str, &str)],
) -> String {
    let topic = unique_topic(prefix);
    let mut cfg: Vec<(&str, &str)> = vec![
        ("cleanup.policy", "compact"),
        ("skiff.key.index.enable", "true"),
        ("segment.ms", "100"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("file.delete.delay.ms", "0"),
    ];
    cfg.retain(|(k, _)| !extra.iter().any(|(ek, _)| ek == k));
    cfg.extend_from_slice(extra);
    create_topic(&admin(b).unwrap(), &topic, partitions, &cfg)
        .await
        .unwrap();
    let c = consumer(b, &[]).unwrap();
    wait_topic_partitions(&c, &topic, usize::try_from(partitions).unwrap()).unwrap();
    topic
}

/// Sends one record (no partition: librdkafka's consistent_random partitioner picks it) and
/// waits for its delivery report; returns (partition, offset).
pub(crate) async fn send(
    p: &FutureProducer,
    topic: &str,
    key: &str,
    value: Option<&str>,
) -> (i32, i64) {
    let mut rec = FutureRecord::<str, str>::to(topic).key(key);
    if let Some(v) = value {
        rec = rec.payload(v);
    }
    let d = p.send(rec, T).await.map_err(|(e, _)| e).unwrap();
    (d.partition, d.offset)
}

/// The lookup path of `key` (text keys of the tests need no escaping).
pub(crate) fn key_path(topic: &str, key: &str, query: &str) -> String {
    format!("/v1/topics/{topic}/keys/{key}?{query}")
}

/// Asserts a lookup answers `want`: `Some((partition, offset, value))` or `None` (404
/// key_not_found).
pub(crate) fn assert_lookup(r: &Reply, key: &str, want: Option<(i32, i64, &str)>, what: &str) {
    match want {
        Some((p, o, v)) => {
            assert_eq!(r.status, 200, "{what}: {key}: {}", r.body);
            let j = r.json();
            assert_eq!(j.get("key").as_str(), Some(key), "{what}: {}", r.body);
            assert_eq!(
                j.get("value").as_str(),
                Some(v),
                "{what}: {key}: {}",
                r.body
            );
            assert_eq!(
                j.get("partition").as_i64(),
                Some(i64::from(p)),
                "{what}: {}",
                r.body
            );
            assert_eq!(
                j.get("offset").as_i64(),
                Some(o),
                "{what}: {key}: {}",
                r.body
            );
        }
        None => assert_eq!(
            (r.status, r.error_code().as_str()),
            (404, "key_not_found"),
            "{what}: {key}: {}",
            r.body
        ),
    }
}

/// Polls the tickets of a 202 compact-now answer until each ends; returns the end states.
pub(crate) fn follow_tickets(http: &str, accepted: &Reply) -> Vec<Json> {
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let tickets = accepted.json();
    let mut out = Vec::new();
    for t in tickets.get("tickets").as_arr() {
        let url = t.get("url").as_str().unwrap().to_string();
        let deadline = Instant::now() + T;
        loop {
            let r = get(http, &url);
            assert_eq!(r.status, 200, "{url}: {}", r.body);
            let j = r.json();
            match j.get("state").as_str().unwrap() {
                "queued" | "running" => {}
                _ => {
                    out.push(j);
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{url} did not finish: {}",
                r.body
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    out
}

/// Every record of a (compacted, so gapped) partition from its start to the current high
/// watermark.
pub(crate) fn read_compacted(c: &BaseConsumer, topic: &str, partition: i32) -> Vec<common::Rec> {
    let (low, high) = c.fetch_watermarks(topic, partition, T).unwrap();
    let mut out = Vec::new();
    if low == high {
        return out;
    }
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let deadline = Instant::now() + T;
    while out.last().is_none_or(|r: &common::Rec| r.offset < high - 1) {
        assert!(
            Instant::now() < deadline,
            "{topic}/{partition}: read {} records, not up to {high}",
            out.len()
        );
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            out.push(common::detach(&m.unwrap()));
        }
    }
    out
}

/// Sum of a pass figure over finished tickets (tickets without a pass count 0).
pub(crate) fn pass_sum(tickets: &[Json], figure: &str) -> i64 {
    tickets
        .iter()
        .map(|t| t.get("pass").get(figure).as_i64().unwrap_or(0))
        .sum()
}

/// One snapshot line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) value: String,
}

/// Parses a complete NDJSON snapshot: rows by key and the end offsets. Fails on a repeated
/// key, a tombstone line or a missing last line.
pub(crate) fn parse_snapshot(body: &str) -> (BTreeMap<String, Row>, BTreeMap<i32, i64>) {
    let lines: Vec<&str> = body.lines().filter(|l| !l.is_empty()).collect();
    let (last, rows) = lines.split_last().expect("empty snapshot");
    let end = Json::parse(last).unwrap();
    let end_offsets: BTreeMap<i32, i64> = end
        .get("end_offsets")
        .as_obj()
        .unwrap_or_else(|| panic!("last line is not the end offsets: {last}"))
        .iter()
        .map(|(p, o)| (p.parse().unwrap(), o.as_i64().unwrap()))
        .collect();
    let mut table = BTreeMap::new();
    for l in rows {
        let j = Json::parse(l).unwrap();
        assert!(
            j.get("end_offsets").is_null(),
            "end offsets before the last line"
        );
        let key = j.get("key").as_str().unwrap().to_string();
        let value = j
            .get("value")
            .as_str()
            .unwrap_or_else(|| panic!("a tombstone (or non-text value) in the snapshot: {l}"))
            .to_string();
        let row = Row {
            partition: i32::try_from(j.get("partition").as_i64().unwrap()).unwrap(),
            offset: j.get("offset").as_i64().unwrap(),
            value,
        };
        assert!(
            row.offset < end_offsets[&row.partition],
            "a line at or past its partition's end offset: {l}"
        );
        if let Some(prev) = table.insert(key.clone(), row) {
            panic!("key {key} twice in the snapshot (also {prev:?})");
        }
    }
    (table, end_offsets)
}

/// Applies every record from `ends` (per partition) to the current high watermark to
/// `table` (tombstones delete); the partitions' producers have stopped.
pub(crate) fn follow_to_end(
    b: &Broker,
    topic: &str,
    mut table: BTreeMap<String, Row>,
    ends: &BTreeMap<i32, i64>,
) -> BTreeMap<String, Row> {
    let c = consumer(b, &[]).unwrap();
    let mut tpl = TopicPartitionList::new();
    let mut highs = BTreeMap::new();
    for (p, o) in ends {
        tpl.add_partition_offset(topic, *p, Offset::Offset(*o))
            .unwrap();
        highs.insert(*p, c.fetch_watermarks(topic, *p, OP_TIMEOUT).unwrap().1);
    }
    c.assign(&tpl).unwrap();
    let mut next = ends.clone();
    let deadline = Instant::now() + Duration::from_secs(60);
    while next.iter().any(|(p, o)| *o < highs[p]) {
        assert!(
            Instant::now() < deadline,
            "tail stopped at {next:?} of {highs:?}"
        );
        let Some(m) = c.poll(Duration::from_millis(200)) else {
            continue;
        };
        let m = m.unwrap();
        next.insert(m.partition(), m.offset() + 1);
        apply_message(&mut table, &m);
    }
    table
}

/// Percent-encodes every byte outside RFC 3986's unreserved set.
pub(crate) fn pct(key: &str) -> String {
    key.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// key → (partition, offset, value or tombstone) of the last acknowledged write.
pub(crate) type Model = BTreeMap<String, (i32, i64, Option<String>)>;

/// Queues one record (no partition: the producer's partitioner picks it; `None` is a
/// tombstone) without waiting; await the returned future with [`await_delivery`].
pub(crate) fn enqueue(
    p: &FutureProducer,
    topic: &str,
    key: &str,
    value: Option<&str>,
) -> DeliveryFuture {
    let mut rec = FutureRecord::<str, str>::to(topic).key(key);
    if let Some(v) = value {
        rec = rec.payload(v);
    }
    p.send_result(rec).map_err(|(e, _)| e).unwrap()
}

/// Waits (bounded) for a queued record's delivery report; fails on a delivery error.
pub(crate) async fn await_delivery(f: DeliveryFuture) -> Delivery {
    tokio::time::timeout(T, f)
        .await
        .unwrap()
        .unwrap()
        .map_err(|(e, _)| e)
        .unwrap()
}

/// The rows a snapshot should hold for `model`: every key whose last write is not a
/// tombstone.
pub(crate) fn live_rows(model: &Model) -> BTreeMap<String, Row> {
    model
        .iter()
        .filter_map(|(k, (p, o, v))| {
            v.as_ref().map(|v| {
                let row = Row {
                    partition: *p,
                    offset: *o,
                    value: v.clone(),
                };
                (k.clone(), row)
            })
        })
        .collect()
}

/// Applies one consumed record to a table built from a snapshot: a tombstone removes the
/// key, a value replaces its row.
pub(crate) fn apply_message(table: &mut BTreeMap<String, Row>, m: &BorrowedMessage<'_>) {
    let key = String::from_utf8(m.key().unwrap().to_vec()).unwrap();
    match m.payload() {
        None => {
            table.remove(&key);
        }
        Some(v) => {
            let row = Row {
                partition: m.partition(),
                offset: m.offset(),
                value: String::from_utf8(v.to_vec()).unwrap(),
            };
            table.insert(key, row);
        }
    }
}

/// Both isolations of lookups and snapshots.
pub(crate) const ISOLATIONS: [&str; 2] = ["read_committed", "read_uncommitted"];

/// Looks `key` up in partition 0 with `isolation` and asserts the answer is `want`:
/// `Some((offset, value))` or `None` (404).
pub(crate) fn expect_p0(
    http: &str,
    topic: &str,
    key: &str,
    isolation: &str,
    want: Option<(i64, &str)>,
    what: &str,
) {
    let path = key_path(topic, key, &format!("partition=0&isolation={isolation}"));
    let r = get_ready(http, &path, None);
    assert_lookup(&r, key, want.map(|(o, v)| (0, o, v)), what);
}

/// [`expect_p0`] in both isolations; `what` gets the isolation appended.
pub(crate) fn expect_p0_both(
    http: &str,
    topic: &str,
    key: &str,
    want: Option<(i64, &str)>,
    what: &str,
) {
    for iso in ISOLATIONS {
        expect_p0(http, topic, key, iso, want, &format!("{what}, {iso}"));
    }
}

/// A transactional producer (`linger.ms=1`, plus `extra`) with its transactions initialised.
pub(crate) fn tx_producer(b: &Broker, id: &str, extra: &[(&str, &str)]) -> FutureProducer {
    let mut cfg: Vec<(&str, &str)> = vec![("transactional.id", id), ("linger.ms", "1")];
    cfg.extend_from_slice(extra);
    let p = producer(b, &cfg).unwrap();
    p.init_transactions(T).unwrap();
    p
}

/// Runs one compact-now over every partition of `topic` and returns the tickets' end states.
pub(crate) fn compact_now(http: &str, topic: &str) -> Vec<Json> {
    follow_tickets(http, &post(http, &format!("/v1/topics/{topic}/compaction")))
}

/// Sends one text record to an explicit partition and waits for its delivery report.
pub(crate) async fn send_to(
    p: &FutureProducer,
    topic: &str,
    partition: i32,
    key: &str,
    value: &str,
) -> Delivery {
    let rec = FutureRecord::to(topic)
        .partition(partition)
        .key(key)
        .payload(value);
    p.send(rec, T).await.map_err(|(e, _)| e).unwrap()
}

/// Asserts a table rebuilt from a snapshot and its tail equals the live rows of the model.
pub(crate) fn assert_same_table(table: &BTreeMap<String, Row>, want: &BTreeMap<String, Row>) {
    let missing: Vec<_> = want.keys().filter(|k| !table.contains_key(*k)).collect();
    let extra: Vec<_> = table.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "snapshot + tail lost {missing:?} and kept deleted {extra:?}"
    );
    for (k, row) in want {
        assert_eq!(&table[k], row, "{k}");
    }
}
