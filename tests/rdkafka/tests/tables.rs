//! Compacted topics read as tables through the HTTP API (`skiff.http.listener`,
//! docs/http-api.md, docs/key-index.md, docs/snapshots.md), against the real binary with
//! librdkafka producers and consumers:
//! - every write acknowledged with acks=1 or acks=all is visible to the very next key lookup,
//!   tombstones answer 404, and a compaction pass changes no answer (tombstones it removed
//!   still answer 404);
//! - concurrent writers (acks=1, acks=all, idempotent; bursts acknowledged together) each see
//!   their own last acknowledged write of every key they own at the next lookup;
//! - lookups never flicker (404, stale, error) while compact-now passes swap segments under
//!   a churning writer;
//! - transactions: read_committed lookups see committed data only, read_uncommitted also the
//!   open transaction, nobody an aborted one;
//! - committed, aborted and superseded transactions answer the same in both isolations
//!   before and after compaction passes and after rebuilds (restart, kill -9) over the
//!   cleaned log;
//! - an open transaction cut by kill -9 is rebuilt into the index (read_uncommitted sees it,
//!   read_committed does not) and hidden from both once the timeout abort is written;
//! - a snapshot taken while a producer and the cleaner run, followed by consuming each
//!   partition from the snapshot's end offsets, ends with exactly the last write of every key;
//!   the same with read_committed and transactional producers that commit and abort;
//! - a read_committed snapshot ends at the last stable offset of an open transaction (later
//!   plain writes are left to the tail), a read_uncommitted one at the high watermark;
//! - the index follows `skiff.key.index.enable` switched off and on (writes made while off
//!   count), DeleteRecords (keys below the log start answer 404) and a topic deleted and
//!   created again under the same name (nothing of the old one answers);
//! - cleanup.policy cannot leave compact while the index is on (INVALID_CONFIG); turned off
//!   together and back on, the index is rebuilt over a log with a keyless record;
//! - partitions added with CreatePartitions are indexed, before and after a restart;
//! - a partition whose index outgrows `skiff.key.index.memory.bytes` answers 503 over_budget
//!   while appends, the other partition's lookups and the snapshot keep working;
//! - a snapshot read in many hash slices (tiny `skiff.snapshot.memory.bytes`) holds every live
//!   key once, in both isolations;
//! - binary keys and values: base64 keys in the path (CRC-32 over the raw bytes), flagged
//!   base64 fields in text answers, `encoding=base64` answers and snapshots;
//! - lookups answer any record of gzip/snappy/lz4/zstd batches, headers included;
//! - lookups find keys written with librdkafka's murmur2_random (the route's default
//!   partitioner) and consistent_random (crc32) partitioners, keys that need escaping too;
//! - with SASL/PLAIN and ACLs, a user without READ gets 403 for lookups and snapshots and a
//!   user with READ gets 200; the dry run needs DESCRIBE, compact-now ALTER, a ticket DESCRIBE.
//!
//! Each test owns its broker (Kafka port plus an HTTP port). Every wait is a bounded poll.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http::{get, get_ready, post, Json, Reply};
use common::{admin, consumer, create_topic, producer, wait_topic_partitions, OP_TIMEOUT};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::{free_port, unique_topic, Broker};

const T: Duration = Duration::from_secs(30);

/// The cleaner wakes often, so passes run while the tests write.
const CLEANER: &[(&str, &str)] = &[
    ("log.cleaner.backoff.ms", "100"),
    ("log.cleaner.threads", "1"),
];

/// A broker with the HTTP API on a second free loopback port; returns it and that address.
fn start(extra: &[(&str, &str)]) -> (Broker, String) {
    let addr = format!("127.0.0.1:{}", free_port().unwrap());
    let mut props: Vec<(&str, &str)> = vec![("skiff.http.listener", &addr)];
    props.extend_from_slice(extra);
    (Broker::start_with(&props).unwrap(), addr)
}

/// An indexed compacted topic with small, quickly rolling segments.
async fn table_topic(b: &Broker, prefix: &str, partitions: i32, extra: &[(&str, &str)]) -> String {
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
async fn send(p: &FutureProducer, topic: &str, key: &str, value: Option<&str>) -> (i32, i64) {
    let mut rec = FutureRecord::<str, str>::to(topic).key(key);
    if let Some(v) = value {
        rec = rec.payload(v);
    }
    let d = p.send(rec, T).await.map_err(|(e, _)| e).unwrap();
    (d.partition, d.offset)
}

/// The lookup path of `key` (text keys of the tests need no escaping).
fn key_path(topic: &str, key: &str, query: &str) -> String {
    format!("/v1/topics/{topic}/keys/{key}?{query}")
}

/// Asserts a lookup answers `want`: `Some((partition, offset, value))` or `None` (404
/// key_not_found).
fn assert_lookup(r: &Reply, key: &str, want: Option<(i32, i64, &str)>, what: &str) {
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
fn follow_tickets(http: &str, accepted: &Reply) -> Vec<Json> {
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
fn read_compacted(c: &BaseConsumer, topic: &str, partition: i32) -> Vec<common::Rec> {
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
fn pass_sum(tickets: &[Json], figure: &str) -> i64 {
    tickets
        .iter()
        .map(|t| t.get("pass").get(figure).as_i64().unwrap_or(0))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_is_the_next_lookup_and_compaction_changes_no_answer() {
    // The periodic cleaner stays away: the passes are the test's compact-now calls.
    let (b, http) = start(&[("log.cleaner.backoff.ms", "3600000")]);
    let topic = table_topic(&b, "tables-acks", 3, &[("delete.retention.ms", "0")]).await;
    let acks1 = producer(&b, &[("acks", "1")]).unwrap();
    let acks_all = producer(&b, &[("acks", "all")]).unwrap();

    const KEYS: usize = 24;
    const WRITES: usize = 360;
    // key → (partition, offset, value or tombstone)
    let mut model: BTreeMap<String, (i32, i64, Option<String>)> = BTreeMap::new();
    let mut partitions_seen = std::collections::BTreeSet::new();
    for i in 0..WRITES {
        let key = format!("user-{}", (i * 7) % KEYS);
        let value = format!("v{i}");
        // Every 9th write deletes; the last write of keys 0..3 deletes too.
        let tombstone = i % 9 == 4 || (i >= WRITES - KEYS && (i * 7) % KEYS < 4);
        let p = if i % 2 == 0 { &acks1 } else { &acks_all };
        let val = (!tombstone).then_some(value.as_str());
        let (part, off) = send(p, &topic, &key, val).await;
        partitions_seen.insert(part);
        let r = get_ready(
            &http,
            &key_path(&topic, &key, "partitioner=consistent_random"),
            None,
        );
        let what = format!(
            "write {i} ({})",
            if i % 2 == 0 { "acks=1" } else { "acks=all" }
        );
        assert_lookup(&r, &key, val.map(|v| (part, off, v)), &what);
        model.insert(key, (part, off, val.map(str::to_string)));
    }
    assert_eq!(
        partitions_seen.len(),
        3,
        "the keys should span every partition"
    );
    let deleted: Vec<String> = model
        .iter()
        .filter(|(_, v)| v.2.is_none())
        .map(|(k, _)| k.clone())
        .collect();
    assert!(!deleted.is_empty());

    // Roll every partition's active segment (segment.ms=100 rolls at the next append), so
    // the cleaner may clean all the writes above.
    std::thread::sleep(Duration::from_millis(150));
    for p in 0..3 {
        let key = format!("~roll-{p}");
        let d = acks_all
            .send(
                FutureRecord::to(&topic).partition(p).key(&key).payload("r"),
                T,
            )
            .await
            .map_err(|(e, _)| e)
            .unwrap();
        model.insert(key, (d.partition, d.offset, Some("r".into())));
    }

    let check_all = |what: &str| {
        for (k, (p, o, v)) in &model {
            let r = get_ready(&http, &key_path(&topic, k, &format!("partition={p}")), None);
            assert_lookup(&r, k, v.as_deref().map(|v| (*p, *o, v)), what);
        }
    };
    check_all("before compaction");

    // The dry run predicts removals; the first pass does them.
    let dry = get(&http, &format!("/v1/topics/{topic}/compaction/dry-run"));
    assert_eq!(dry.status, 200, "{}", dry.body);
    let predicted: i64 = dry
        .json()
        .get("partitions")
        .as_arr()
        .iter()
        .map(|p| p.get("figures").get("records_removed").as_i64().unwrap())
        .sum();
    assert!(predicted > 0, "dry run predicts nothing: {}", dry.body);
    let first = follow_tickets(
        &http,
        &post(&http, &format!("/v1/topics/{topic}/compaction")),
    );
    assert!(
        first
            .iter()
            .all(|t| t.get("state").as_str() == Some("done")),
        "{first:?}"
    );
    let removed = pass_sum(&first, "records_removed");
    assert!(removed > 0, "the pass removed nothing: {first:?}");
    check_all("after the first pass");

    // delete.retention.ms=0: the first pass stamped the kept tombstones' horizon, a later
    // pass drops them. Ask until one did (bounded).
    let deadline = Instant::now() + T;
    let mut tombstones_removed = pass_sum(&first, "tombstones_removed");
    while tombstones_removed == 0 {
        assert!(Instant::now() < deadline, "no pass removed a tombstone");
        std::thread::sleep(Duration::from_millis(50));
        let again = follow_tickets(
            &http,
            &post(&http, &format!("/v1/topics/{topic}/compaction")),
        );
        tombstones_removed += pass_sum(&again, "tombstones_removed");
    }
    check_all("after tombstones were removed");
    // The removed tombstones are gone from the log, and the keys still answer 404.
    let c = consumer(&b, &[]).unwrap();
    let mut in_log = 0usize;
    for p in 0..3 {
        for r in read_compacted(&c, &topic, p) {
            in_log += 1;
            if r.value.is_none() {
                let k = String::from_utf8(r.key.unwrap()).unwrap();
                assert!(deleted.contains(&k), "a tombstone of a live key: {k}");
            }
        }
    }
    assert!(
        in_log < WRITES + 3,
        "nothing left the log: {in_log} records"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_follow_transaction_isolation() {
    let (mut b, http) = start(CLEANER);
    let topic = table_topic(&b, "tables-txn", 1, &[]).await;
    let plain = producer(&b, &[("acks", "all")]).unwrap();
    let (_, old_off) = send(&plain, &topic, "k", Some("old")).await;

    let txp = producer(
        &b,
        &[("transactional.id", "tables-txn"), ("linger.ms", "1")],
    )
    .unwrap();
    txp.init_transactions(T).unwrap();
    let committed = |iso: &str| key_path(&topic, "k", &format!("partition=0&isolation={iso}"));

    txp.begin_transaction().unwrap();
    let (_, txn_off) = send(&txp, &topic, "k", Some("txn")).await;
    let (_, only_off) = send(&txp, &topic, "only-txn", Some("x")).await;
    assert_lookup(
        &get_ready(&http, &committed("read_committed"), None),
        "k",
        Some((0, old_off, "old")),
        "open transaction, read_committed",
    );
    assert_lookup(
        &get_ready(&http, &committed("read_uncommitted"), None),
        "k",
        Some((0, txn_off, "txn")),
        "open transaction, read_uncommitted",
    );
    let only = |iso: &str| key_path(&topic, "only-txn", &format!("partition=0&isolation={iso}"));
    assert_lookup(
        &get_ready(&http, &only("read_committed"), None),
        "only-txn",
        None,
        "open transaction, read_committed",
    );
    // The default isolation is read_committed.
    assert_lookup(
        &get_ready(&http, &key_path(&topic, "only-txn", "partition=0"), None),
        "only-txn",
        None,
        "open transaction, default isolation",
    );
    assert_lookup(
        &get_ready(&http, &only("read_uncommitted"), None),
        "only-txn",
        Some((0, only_off, "x")),
        "open transaction, read_uncommitted",
    );
    txp.commit_transaction(T).unwrap();
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &committed(iso), None),
            "k",
            Some((0, txn_off, "txn")),
            &format!("committed, {iso}"),
        );
        assert_lookup(
            &get_ready(&http, &only(iso), None),
            "only-txn",
            Some((0, only_off, "x")),
            &format!("committed, {iso}"),
        );
    }

    // An aborted transaction: its value is never the answer once aborted, for either
    // isolation, and a key written only in it does not exist.
    txp.begin_transaction().unwrap();
    send(&txp, &topic, "k", Some("aborted")).await;
    send(&txp, &topic, "only-aborted", Some("y")).await;
    assert_lookup(
        &get_ready(&http, &committed("read_committed"), None),
        "k",
        Some((0, txn_off, "txn")),
        "aborting transaction, read_committed",
    );
    txp.abort_transaction(T).unwrap();
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &committed(iso), None),
            "k",
            Some((0, txn_off, "txn")),
            &format!("aborted, {iso}"),
        );
        assert_lookup(
            &get_ready(
                &http,
                &key_path(
                    &topic,
                    "only-aborted",
                    &format!("partition=0&isolation={iso}"),
                ),
                None,
            ),
            "only-aborted",
            None,
            &format!("aborted, {iso}"),
        );
    }
    // A plain write during an open transaction is visible at once to both isolations (the
    // index does not stop at the last stable offset), and the transaction committing later
    // does not bring back its older value: latest is by offset.
    txp.begin_transaction().unwrap();
    let (_, older_off) = send(&txp, &topic, "k", Some("txn-older")).await;
    let (_, plain_off) = send(&plain, &topic, "k", Some("plain-newer")).await;
    assert!(plain_off > older_off);
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &committed(iso), None),
            "k",
            Some((0, plain_off, "plain-newer")),
            &format!("plain write during an open transaction, {iso}"),
        );
    }
    txp.commit_transaction(T).unwrap();
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &committed(iso), None),
            "k",
            Some((0, plain_off, "plain-newer")),
            &format!("older transactional write committed, {iso}"),
        );
    }
    // The same after a rebuild from the log (restart).
    b.restart().unwrap();
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &committed(iso), None),
            "k",
            Some((0, plain_off, "plain-newer")),
            &format!("after a restart, {iso}"),
        );
    }

    // A later plain write wins over everything.
    let (_, new_off) = send(&plain, &topic, "k", Some("new")).await;
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &committed(iso), None),
            "k",
            Some((0, new_off, "new")),
            &format!("after a plain write, {iso}"),
        );
    }
}

/// One snapshot line.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    partition: i32,
    offset: i64,
    value: String,
}

/// Parses a complete NDJSON snapshot: rows by key and the end offsets. Fails on a repeated
/// key, a tombstone line or a missing last line.
fn parse_snapshot(body: &str) -> (BTreeMap<String, Row>, BTreeMap<i32, i64>) {
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
fn follow_to_end(
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
    table
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_then_tail_equals_the_last_write_of_every_key() {
    const PARTS: i32 = 4;
    const RECORDS: usize = 6000;
    const KEYS: usize = 300;
    let (b, http) = start(CLEANER);
    // Tombstones stay (delete.retention.ms, 1 day by default) long enough for the tail
    // reader to see them, as Kafka promises a consumer that keeps up.
    let topic = table_topic(&b, "tables-snap", PARTS, &[]).await;
    let p = producer(&b, &[("acks", "all"), ("linger.ms", "2")]).unwrap();

    // key → (partition, offset, value) of its latest acknowledged write.
    type Model = BTreeMap<String, (i32, i64, Option<String>)>;
    let model: Arc<Mutex<Model>> = Arc::default();
    let delivered = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));

    let writer = {
        let (model, delivered, done, topic) = (
            model.clone(),
            delivered.clone(),
            done.clone(),
            topic.clone(),
        );
        tokio::spawn(async move {
            let mut i = 0;
            while i < RECORDS {
                let mut batch = Vec::new();
                for j in i..(i + 50).min(RECORDS) {
                    // Half the writes go to keys written only once, so losing any one
                    // record (at a snapshot boundary too) changes the table.
                    let (key, value) = if j % 2 == 0 {
                        (format!("u{j}"), Some(format!("v{j}")))
                    } else {
                        let key = format!("k{}", (j * 7919) % KEYS);
                        (key, (j % 11 != 3).then(|| format!("v{j}")))
                    };
                    let mut rec = FutureRecord::<str, str>::to(&topic).key(&key);
                    if let Some(v) = &value {
                        rec = rec.payload(v);
                    }
                    let f = p.send_result(rec).map_err(|(e, _)| e).unwrap();
                    batch.push((key, value, f));
                }
                for (key, value, f) in batch {
                    let d = tokio::time::timeout(T, f)
                        .await
                        .unwrap()
                        .unwrap()
                        .map_err(|(e, _)| e)
                        .unwrap();
                    let (part, off) = (d.partition, d.offset);
                    let mut m = model.lock().unwrap();
                    let newer = m.get(&key).is_none_or(|(_, o, _)| *o < off);
                    if newer {
                        m.insert(key, (part, off, value));
                    }
                    delivered.fetch_add(1, Ordering::SeqCst);
                }
                i += 50;
                // Spread the writes over a few seconds so segments roll and passes run.
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    // Compact-now requests throughout the run, besides the periodic cleaner.
    let compactor = {
        let (http, topic, done) = (http.clone(), topic.clone(), done.clone());
        std::thread::spawn(move || {
            // Records the compact-now passes removed while the producer ran.
            let mut removed = 0;
            let deadline = Instant::now() + Duration::from_secs(120);
            while !done.load(Ordering::SeqCst) && Instant::now() < deadline {
                let r = post(&http, &format!("/v1/topics/{topic}/compaction"));
                removed += pass_sum(&follow_tickets(&http, &r), "records_removed");
                std::thread::sleep(Duration::from_millis(100));
            }
            removed
        })
    };

    let deadline = Instant::now() + Duration::from_secs(60);
    while delivered.load(Ordering::SeqCst) < RECORDS / 4 {
        assert!(Instant::now() < deadline, "the producer stalled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // An early snapshot, followed only after the run (the cleaner has compacted its tail by
    // then: a reader that keeps up with tombstones still ends with the table).
    let early = get(&http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(early.status, 200, "{}", early.body);
    let early = parse_snapshot(&early.body);
    while delivered.load(Ordering::SeqCst) < RECORDS / 2 {
        assert!(Instant::now() < deadline, "the producer stalled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let snap = get(&http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (mut table, end_offsets) = parse_snapshot(&snap.body);
    assert_eq!(end_offsets.len(), usize::try_from(PARTS).unwrap());
    let header: BTreeMap<i32, i64> = snap
        .header("skiff-end-offsets")
        .unwrap()
        .split(',')
        .map(|kv| {
            let (p, o) = kv.split_once('=').unwrap();
            (p.parse().unwrap(), o.parse().unwrap())
        })
        .collect();
    assert_eq!(header, end_offsets, "header and last line disagree");
    assert!(
        !done.load(Ordering::SeqCst),
        "the snapshot should be taken mid-run"
    );

    // Follow each partition from exactly its end offset.
    let c = consumer(&b, &[]).unwrap();
    let mut tpl = TopicPartitionList::new();
    for (p, o) in &end_offsets {
        tpl.add_partition_offset(&topic, *p, Offset::Offset(*o))
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut next: BTreeMap<i32, i64> = end_offsets.clone();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut tail = 0usize;
    loop {
        while let Some(m) = c.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            let key = String::from_utf8(m.key().unwrap().to_vec()).unwrap();
            assert!(m.offset() >= next[&m.partition()], "offsets went back");
            next.insert(m.partition(), m.offset() + 1);
            tail += 1;
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
        if done.load(Ordering::SeqCst) {
            // Caught up once the position passed the high watermark of every partition.
            let mut caught_up = true;
            for p in 0..PARTS {
                let (_, high) = c.fetch_watermarks(&topic, p, OP_TIMEOUT).unwrap();
                if next[&p] < high {
                    caught_up = false;
                }
            }
            if caught_up {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the tail reader did not catch up: {next:?}"
        );
    }
    writer.await.unwrap();
    let removed = compactor.join().unwrap();
    assert!(
        removed > 0,
        "no compact-now pass removed anything during the run"
    );
    assert!(tail > 0, "nothing was read after the snapshot");

    let model = model.lock().unwrap();
    assert_eq!(delivered.load(Ordering::SeqCst), RECORDS);
    let want: BTreeMap<String, Row> = model
        .iter()
        .filter_map(|(k, (p, o, v))| {
            v.as_ref().map(|v| {
                (
                    k.clone(),
                    Row {
                        partition: *p,
                        offset: *o,
                        value: v.clone(),
                    },
                )
            })
        })
        .collect();
    let missing: Vec<_> = want.keys().filter(|k| !table.contains_key(*k)).collect();
    let extra: Vec<_> = table.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "snapshot + tail lost {missing:?} and kept deleted {extra:?}"
    );
    for (k, row) in &want {
        assert_eq!(&table[k], row, "{k}");
    }
    let (early_table, early_ends) = early;
    assert!(early_ends.iter().all(|(p, o)| *o <= end_offsets[p]));
    let early_table = follow_to_end(&b, &topic, early_table, &early_ends);
    assert!(
        early_table == want,
        "early snapshot + tail differs from the model"
    );
    // Some keys ended deleted and some passes really ran.
    assert!(want.len() < model.len(), "no key ended as a tombstone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_snapshot_then_tail_with_transactions_equals_the_committed_writes() {
    const PARTS: i32 = 3;
    const PLAIN: usize = 1500;
    const TXNS: usize = 30;
    const PER_TXN: usize = 20;
    const KEYS: usize = 150;
    type Model = BTreeMap<String, (i32, i64, Option<String>)>;
    fn apply(m: &mut Model, key: String, part: i32, off: i64, value: Option<String>) {
        if m.get(&key).is_none_or(|(_, o, _)| *o < off) {
            m.insert(key, (part, off, value));
        }
    }
    let (b, http) = start(CLEANER);
    let topic = table_topic(&b, "tables-snap-txn", PARTS, &[]).await;
    let model: Arc<Mutex<Model>> = Arc::default();
    let plain_done = Arc::new(AtomicUsize::new(0));

    // Plain writes, one in 13 a tombstone.
    let plain = {
        let (model, plain_done, topic) = (model.clone(), plain_done.clone(), topic.clone());
        let p = producer(&b, &[("acks", "all")]).unwrap();
        tokio::spawn(async move {
            for i in 0..PLAIN {
                // Half to keys written once: losing any record changes the table.
                let (key, value) = if i % 2 == 0 {
                    (format!("u{i}"), Some(format!("plain-{i}")))
                } else {
                    let key = format!("k{}", (i * 31) % KEYS);
                    (key, (i % 13 != 5).then(|| format!("plain-{i}")))
                };
                let (part, off) = send(&p, &topic, &key, value.as_deref()).await;
                apply(&mut model.lock().unwrap(), key, part, off, value);
                plain_done.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    // Transactions over the same keys; every third one aborts.
    let txns = {
        let (model, topic) = (model.clone(), topic.clone());
        let p = producer(
            &b,
            &[("transactional.id", "tables-snap-txn"), ("linger.ms", "1")],
        )
        .unwrap();
        tokio::spawn(async move {
            tokio::task::block_in_place(|| p.init_transactions(T)).unwrap();
            for t in 0..TXNS {
                p.begin_transaction().unwrap();
                let mut written = Vec::new();
                for j in 0..PER_TXN {
                    // Even j: keys the plain producer writes too; odd j: keys only
                    // transactions write (one per aborted transaction is only in it).
                    let key = match j % 2 {
                        0 => format!("k{}", (t * 17 + j * 7) % KEYS),
                        _ if j == 1 && t % 3 == 1 => format!("only-aborted-{t}"),
                        _ => format!("t{}", (t * 5 + j) % 40),
                    };
                    let value = format!("txn-{t}-{j}");
                    let (part, off) = send(&p, &topic, &key, Some(&value)).await;
                    written.push((key, part, off, value));
                }
                if t % 3 == 1 {
                    tokio::task::block_in_place(|| p.abort_transaction(T)).unwrap();
                } else {
                    tokio::task::block_in_place(|| p.commit_transaction(T)).unwrap();
                    let mut m = model.lock().unwrap();
                    for (key, part, off, value) in written {
                        apply(&mut m, key, part, off, Some(value));
                    }
                }
            }
        })
    };

    let deadline = Instant::now() + Duration::from_secs(60);
    while plain_done.load(Ordering::SeqCst) < PLAIN / 2 {
        assert!(Instant::now() < deadline, "the plain producer stalled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let snap = get(
        &http,
        &format!("/v1/topics/{topic}/snapshot?isolation=read_committed"),
    );
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (mut table, end_offsets) = parse_snapshot(&snap.body);
    let aborted = |v: &str| {
        v.strip_prefix("txn-")
            .and_then(|r| r.split('-').next())
            .is_some_and(|t| t.parse::<usize>().unwrap() % 3 == 1)
    };
    assert!(
        !table.values().any(|r| aborted(&r.value)),
        "an aborted value in the snapshot"
    );
    plain.await.unwrap();
    txns.await.unwrap();
    // A last plain write per partition marks the end of the tail.
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let mut sentinels = BTreeMap::new();
    for part in 0..PARTS {
        let key = format!("~end-{part}");
        let d = p
            .send(
                FutureRecord::to(&topic)
                    .partition(part)
                    .key(&key)
                    .payload("end"),
                T,
            )
            .await
            .map_err(|(e, _)| e)
            .unwrap();
        apply(
            &mut model.lock().unwrap(),
            key,
            d.partition,
            d.offset,
            Some("end".into()),
        );
        sentinels.insert(part, d.offset);
    }

    let c = consumer(&b, &[("isolation.level", "read_committed")]).unwrap();
    let mut tpl = TopicPartitionList::new();
    for (part, o) in &end_offsets {
        tpl.add_partition_offset(&topic, *part, Offset::Offset(*o))
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    let mut reached = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while reached.len() < sentinels.len() {
        assert!(
            Instant::now() < deadline,
            "the tail stopped short: {reached:?}"
        );
        let Some(m) = c.poll(Duration::from_millis(200)) else {
            continue;
        };
        let m = m.unwrap();
        assert!(m.offset() >= end_offsets[&m.partition()]);
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
        if sentinels.get(&m.partition()) == Some(&m.offset()) {
            reached.insert(m.partition());
        }
    }
    let want: BTreeMap<String, Row> = model
        .lock()
        .unwrap()
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
        .collect();
    let missing: Vec<_> = want.keys().filter(|k| !table.contains_key(*k)).collect();
    let extra: Vec<_> = table.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "snapshot + tail lost {missing:?} and kept {extra:?}"
    );
    for (k, row) in &want {
        assert_eq!(&table[k], row, "{k}");
    }
    assert!(want.values().any(|r| r.value.starts_with("txn-")));
    // Lookups agree with the table (read_committed, CRC-32 as librdkafka partitioned).
    for (k, row) in &want {
        let r = get_ready(
            &http,
            &key_path(&topic, &pct(k), &format!("partition={}", row.partition)),
            None,
        );
        assert_lookup(
            &r,
            k,
            Some((row.partition, row.offset, &row.value)),
            "lookup after the run",
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_transaction_is_rebuilt_after_kill_9_and_hidden_once_aborted() {
    let (mut b, http) = start(&[(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "200",
    )]);
    let topic = table_topic(&b, "tables-txn-kill", 1, &[]).await;
    let plain = producer(&b, &[("acks", "all")]).unwrap();
    let (_, old_off) = send(&plain, &topic, "k", Some("old")).await;
    let committer = producer(
        &b,
        &[("transactional.id", "tables-kill-c"), ("linger.ms", "1")],
    )
    .unwrap();
    committer.init_transactions(T).unwrap();
    committer.begin_transaction().unwrap();
    let (_, k2_off) = send(&committer, &topic, "k2", Some("committed")).await;
    committer.commit_transaction(T).unwrap();
    drop(committer);
    let (doomed_off, high_before) = {
        let p = producer(
            &b,
            &[
                ("transactional.id", "tables-kill-d"),
                ("linger.ms", "1"),
                ("transaction.timeout.ms", "5000"),
                ("message.timeout.ms", "3000"),
                ("socket.timeout.ms", "3000"),
            ],
        )
        .unwrap();
        p.init_transactions(T).unwrap();
        p.begin_transaction().unwrap();
        let (_, doomed_off) = send(&p, &topic, "k", Some("doomed")).await;
        send(&p, &topic, "only-doomed", Some("x")).await;
        let c = consumer(&b, &[]).unwrap();
        let (_, high) = c.fetch_watermarks(&topic, 0, T).unwrap();
        b.kill9().unwrap();
        // Dropping a producer with an open transaction must not block on the dead broker.
        std::mem::forget(p);
        (doomed_off, high)
    };
    b.restart().unwrap();
    let path =
        |key: &str, iso: &str| key_path(&topic, key, &format!("partition=0&isolation={iso}"));
    let c = consumer(&b, &[]).unwrap();
    let high = || c.fetch_watermarks(&topic, 0, T).unwrap().1;

    // Until the timeout abort writes its marker, the rebuilt index holds the open
    // transaction: read_uncommitted sees it, read_committed does not.
    let h1 = high();
    let uncommitted = get_ready(&http, &path("k", "read_uncommitted"), None);
    let h2 = high();
    if h1 == high_before && h2 == high_before {
        assert_lookup(
            &uncommitted,
            "k",
            Some((0, doomed_off, "doomed")),
            "open transaction after kill -9, read_uncommitted",
        );
    } else {
        eprintln!("the timeout abort came before the first lookup ({high_before} -> {h1}/{h2})");
    }
    assert_lookup(
        &get_ready(&http, &path("k", "read_committed"), None),
        "k",
        Some((0, old_off, "old")),
        "open transaction after kill -9, read_committed",
    );
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &path("k2", iso), None),
            "k2",
            Some((0, k2_off, "committed")),
            &format!("committed before kill -9, {iso}"),
        );
    }
    // The timeout abort (transaction.timeout.ms=5000) hides it from both.
    let deadline = Instant::now() + Duration::from_secs(60);
    while high() == high_before {
        assert!(
            Instant::now() < deadline,
            "the open transaction was never aborted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &path("k", iso), None),
            "k",
            Some((0, old_off, "old")),
            &format!("after the timeout abort, {iso}"),
        );
        assert_lookup(
            &get_ready(&http, &path("only-doomed", iso), None),
            "only-doomed",
            None,
            &format!("after the timeout abort, {iso}"),
        );
    }
    // And again after a clean restart (the index is rebuilt over the abort marker).
    b.restart().unwrap();
    for iso in ["read_committed", "read_uncommitted"] {
        assert_lookup(
            &get_ready(&http, &path("k", iso), None),
            "k",
            Some((0, old_off, "old")),
            &format!("after the abort and a restart, {iso}"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_follows_config_toggles_delete_records_and_topic_recreation() {
    let (b, http) = start(&[]);
    let topic = table_topic(
        &b,
        "tables-life",
        1,
        &[("cleanup.policy", "compact,delete")],
    )
    .await;
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let at = |key: &str| key_path(&topic, key, "partition=0");
    let mut raw = skiff_e2e::raw::RawClient::connect(&b.bootstrap()).unwrap();

    let (_, a0) = send(&p, &topic, "a", Some("a0")).await;
    let (_, b0) = send(&p, &topic, "b", Some("b0")).await;
    assert_lookup(
        &get_ready(&http, &at("a"), None),
        "a",
        Some((0, a0, "a0")),
        "indexed",
    );

    // Switched off: 409 index_disabled; writes go on meanwhile.
    let (err, msg) = raw
        .alter_topic(&topic, &[("skiff.key.index.enable", Some("false"))])
        .unwrap();
    assert_eq!(err, 0, "{msg:?}");
    let r = get(&http, &at("a"));
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (409, "index_disabled"),
        "{}",
        r.body
    );
    let (_, a1) = send(&p, &topic, "a", Some("a1")).await;
    send(&p, &topic, "c", Some("c0")).await;
    let (_, c1) = send(&p, &topic, "c", None).await;
    // Switched on again: built from the log, so the writes made while it was off count.
    let (err, msg) = raw
        .alter_topic(&topic, &[("skiff.key.index.enable", Some("true"))])
        .unwrap();
    assert_eq!(err, 0, "{msg:?}");
    assert_lookup(
        &get_ready(&http, &at("a"), None),
        "a",
        Some((0, a1, "a1")),
        "re-enabled",
    );
    assert_lookup(
        &get_ready(&http, &at("b"), None),
        "b",
        Some((0, b0, "b0")),
        "re-enabled",
    );
    assert_lookup(&get_ready(&http, &at("c"), None), "c", None, "re-enabled");
    assert!(c1 > b0);

    // DeleteRecords past b's only record: b is gone, a (later) stays.
    let (err, low) = raw.delete_records(&topic, 0, b0 + 1).unwrap();
    assert_eq!((err, low), (0, b0 + 1));
    assert_lookup(
        &get_ready(&http, &at("b"), None),
        "b",
        None,
        "below the log start",
    );
    assert_lookup(
        &get_ready(&http, &at("a"), None),
        "a",
        Some((0, a1, "a1")),
        "above the log start",
    );

    // Deleted and created again under the same name: nothing of the old topic answers.
    let adm = admin(&b).unwrap();
    for r in adm
        .delete_topics(&[topic.as_str()], &common::admin_opts())
        .await
        .unwrap()
    {
        r.unwrap();
    }
    let deadline = Instant::now() + T;
    loop {
        let r = get(&http, &at("a"));
        if r.status == 404 && r.error_code() == "unknown_topic" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "deleted topic still answers: {}",
            r.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let deadline = Instant::now() + T;
    loop {
        let res = create_topic(
            &adm,
            &topic,
            1,
            &[
                ("cleanup.policy", "compact"),
                ("skiff.key.index.enable", "true"),
            ],
        )
        .await;
        match res {
            Ok(()) => break,
            Err(e) => assert!(Instant::now() < deadline, "recreate: {e:#}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for key in ["a", "b", "c"] {
        assert_lookup(
            &get_ready(&http, &at(key), None),
            key,
            None,
            "recreated topic",
        );
    }
    let (_, a_new) = send(&p, &topic, "a", Some("fresh")).await;
    assert_eq!(a_new, 0);
    assert_lookup(
        &get_ready(&http, &at("a"), None),
        "a",
        Some((0, 0, "fresh")),
        "recreated topic",
    );
    let snap = get(&http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (rows, ends) = parse_snapshot(&snap.body);
    assert_eq!(rows.len(), 1, "{}", snap.body);
    assert_eq!(ends[&0], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_each_see_their_acknowledged_writes() {
    const WRITERS: usize = 4;
    const ROUNDS: usize = 100;
    const BURST: usize = 8;
    let (b, http) = start(CLEANER);
    let topic = table_topic(&b, "tables-conc", 3, &[]).await;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let acks = if w == 0 { "1" } else { "all" };
        // Writers 2 and 3 are idempotent: librdkafka batches them per partition too.
        let idem = if w >= 2 { "true" } else { "false" };
        let p = producer(
            &b,
            &[
                ("acks", acks),
                ("enable.idempotence", idem),
                ("linger.ms", "3"),
            ],
        )
        .unwrap();
        let (http, topic) = (http.clone(), topic.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                // A burst of writes to this writer's own keys, acknowledged together (many
                // land in one batch), then one lookup per key: exactly that write.
                let mut futs = Vec::new();
                for j in 0..BURST {
                    let key = format!("w{w}-k{}", (round * 3 + j) % 12);
                    let value = (j != 5).then(|| format!("w{w}-r{round}-j{j}"));
                    let mut rec = FutureRecord::<str, str>::to(&topic).key(&key);
                    if let Some(v) = &value {
                        rec = rec.payload(v);
                    }
                    let f = p.send_result(rec).map_err(|(e, _)| e).unwrap();
                    futs.push((key, value, f));
                }
                let mut last: BTreeMap<String, (i32, i64, Option<String>)> = BTreeMap::new();
                for (key, value, f) in futs {
                    let d = tokio::time::timeout(T, f)
                        .await
                        .unwrap()
                        .unwrap()
                        .map_err(|(e, _)| e)
                        .unwrap();
                    let newer = last.get(&key).is_none_or(|(_, o, _)| *o < d.offset);
                    if newer {
                        last.insert(key, (d.partition, d.offset, value));
                    }
                }
                tokio::task::block_in_place(|| {
                    for (key, (p, o, v)) in &last {
                        let r = get_ready(
                            &http,
                            &key_path(&topic, key, "partitioner=consistent_random"),
                            None,
                        );
                        let what =
                            format!("writer {w} (acks={acks}, idempotent={idem}) round {round}");
                        assert_lookup(&r, key, v.as_deref().map(|v| (*p, *o, v)), &what);
                    }
                });
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_over_the_memory_budget_answers_over_budget_and_nothing_else_breaks() {
    let (b, http) = start(&[("skiff.key.index.memory.bytes", "16384")]);
    let topic = table_topic(&b, "tables-budget", 2, &[]).await;
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let (_, small_off) = p
        .send(
            FutureRecord::to(&topic)
                .partition(1)
                .key("small")
                .payload("s"),
            T,
        )
        .await
        .map(|d| (d.partition, d.offset))
        .map_err(|(e, _)| e)
        .unwrap();
    assert_lookup(
        &get_ready(&http, &key_path(&topic, "small", "partition=1"), None),
        "small",
        Some((1, small_off, "s")),
        "within the budget",
    );
    // Thousands of keys into partition 0: its table outgrows 16 KiB and is dropped.
    const N: usize = 3000;
    let offsets = common::produce_n(&p, &topic, 0, N, |i| {
        (format!("big-{i}").into_bytes(), b"v".to_vec())
    })
    .await
    .unwrap();
    assert_eq!(offsets.len(), N, "appends are not affected");
    let r = get_ready(&http, &key_path(&topic, "big-7", "partition=0"), None);
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (503, "over_budget"),
        "{}",
        r.body
    );
    // The other partition keeps its index; the snapshot does not need one.
    assert_lookup(
        &get_ready(&http, &key_path(&topic, "small", "partition=1"), None),
        "small",
        Some((1, small_off, "s")),
        "the other partition",
    );
    let snap = get(&http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (rows, ends) = parse_snapshot(&snap.body);
    assert_eq!(rows.len(), N + 1);
    assert_eq!(ends[&0], i64::try_from(N).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_answers_survive_cleaning_and_rebuilds_over_the_cleaned_log() {
    let (mut b, http) = start(&[("log.cleaner.backoff.ms", "3600000")]);
    let topic = table_topic(&b, "tables-txn-clean", 1, &[("delete.retention.ms", "0")]).await;
    let plain = producer(&b, &[("acks", "all")]).unwrap();
    let txp = producer(
        &b,
        &[("transactional.id", "tables-txn-clean"), ("linger.ms", "1")],
    )
    .unwrap();
    txp.init_transactions(T).unwrap();
    // key → (offset, value) of the latest committed or plain write.
    let mut model: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
    let put =
        |m: &mut BTreeMap<String, (i64, Option<String>)>, k: &str, o: i64, v: Option<&str>| {
            m.insert(k.to_string(), (o, v.map(str::to_string)));
        };
    for round in 0..6 {
        for k in ["p1", "p2", "shared"] {
            let v = format!("plain-{round}-{k}");
            let (_, o) = send(&plain, &topic, k, Some(&v)).await;
            put(&mut model, k, o, Some(&v));
        }
        // A committed transaction: some of its keys are overwritten later, some not.
        txp.begin_transaction().unwrap();
        let mut written = Vec::new();
        for k in ["shared", &format!("c{round}"), "c-all", "c-later"] {
            let v = format!("commit-{round}-{k}");
            let (_, o) = send(&txp, &topic, k, Some(&v)).await;
            written.push((k.to_string(), o, v));
        }
        txp.commit_transaction(T).unwrap();
        for (k, o, v) in written {
            put(&mut model, &k, o, Some(&v));
        }
        // An aborted one over the same keys and its own.
        txp.begin_transaction().unwrap();
        for k in ["shared", "c-all", "p1", &format!("a{round}")] {
            send(&txp, &topic, k, Some(&format!("aborted-{round}"))).await;
        }
        txp.abort_transaction(T).unwrap();
        // c-later is overwritten by a plain write, then deleted on even rounds.
        let v = format!("plain-later-{round}");
        let (_, o) = send(&plain, &topic, "c-later", Some(&v)).await;
        put(&mut model, "c-later", o, Some(&v));
        if round % 2 == 0 {
            let (_, o) = send(&plain, &topic, "c-later", None).await;
            put(&mut model, "c-later", o, None);
        }
        // Let segments roll between rounds (segment.ms=100).
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    let (_, o) = send(&plain, &topic, "~roll", Some("r")).await;
    put(&mut model, "~roll", o, Some("r"));
    for round in 0..6 {
        model.entry(format!("a{round}")).or_insert((-1, None));
    }

    let check = |what: &str| {
        for iso in ["read_committed", "read_uncommitted"] {
            for (k, (o, v)) in &model {
                let r = get_ready(
                    &http,
                    &key_path(&topic, k, &format!("partition=0&isolation={iso}")),
                    None,
                );
                assert_lookup(
                    &r,
                    k,
                    v.as_deref().map(|v| (0, *o, v)),
                    &format!("{what}, {iso}"),
                );
            }
        }
    };
    check("before cleaning");
    let mut removed = 0;
    for _ in 0..4 {
        let t = follow_tickets(
            &http,
            &post(&http, &format!("/v1/topics/{topic}/compaction")),
        );
        removed += pass_sum(&t, "records_removed");
        check("after a pass");
    }
    assert!(removed > 0, "the passes removed nothing");
    b.restart().unwrap();
    check("after a restart over the cleaned log");
    b.kill9().unwrap();
    b.restart().unwrap();
    check("after kill -9 over the cleaned log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_decode_any_record_of_compressed_batches_with_headers() {
    use rdkafka::message::{Header, OwnedHeaders};
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-codecs", 1, &[]).await;
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let p = producer(
            &b,
            &[
                ("acks", "all"),
                ("compression.type", codec),
                ("linger.ms", "50"),
                ("batch.num.messages", "1000"),
            ],
        )
        .unwrap();
        // 40 records sent together, so they share a (compressed) batch or a few; values
        // long and repetitive enough to compress.
        let mut futs = Vec::new();
        for i in 0..40 {
            let key = format!("{codec}-{i}");
            let value = format!("{codec}-value-{i}-{}", "abc".repeat(20 + i));
            let headers = OwnedHeaders::new()
                .insert(Header {
                    key: "i",
                    value: Some(&i.to_string()),
                })
                .insert(Header::<&str> {
                    key: "none",
                    value: None,
                });
            let rec = FutureRecord::to(&topic)
                .partition(0)
                .key(&key)
                .payload(&value)
                .headers(headers);
            let f = p.send_result(rec).map_err(|(e, _)| e).unwrap();
            futs.push((key, value, i, f));
        }
        for (key, value, i, f) in futs {
            let d = tokio::time::timeout(T, f)
                .await
                .unwrap()
                .unwrap()
                .map_err(|(e, _)| e)
                .unwrap();
            let r = get_ready(&http, &key_path(&topic, &key, "partition=0"), None);
            assert_lookup(&r, &key, Some((0, d.offset, &value)), codec);
            let h = r.json().get("headers").clone();
            assert_eq!(h.as_arr().len(), 2, "{codec}: {}", r.body);
            assert_eq!(h.at(0).get("key").as_str(), Some("i"));
            assert_eq!(h.at(0).get("value").as_str(), Some(i.to_string().as_str()));
            assert_eq!(h.at(1).get("key").as_str(), Some("none"));
            assert!(h.at(1).get("value").is_null(), "{codec}: {}", r.body);
        }
    }
    // The snapshot holds the same 200 records.
    let snap = get(&http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (rows, _) = parse_snapshot(&snap.body);
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|(k, r)| r
        .value
        .starts_with(&format!("{}-value-", k.split('-').next().unwrap()))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_read_in_many_hash_slices_holds_every_live_key_once() {
    // A tiny key map: each partition's keys are read in many slices.
    let (b, http) = start(&[("skiff.snapshot.memory.bytes", "2048")]);
    let topic = table_topic(&b, "tables-slices", 2, &[]).await;
    let p = producer(&b, &[("acks", "all"), ("linger.ms", "20")]).unwrap();
    const KEYS: usize = 1500;
    let mut model: BTreeMap<String, (i32, i64, Option<String>)> = BTreeMap::new();
    for pass in 0..3 {
        let mut futs = Vec::new();
        for i in 0..KEYS {
            let key = format!("key-{i}");
            let value = (!(pass == 2 && i % 5 == 0)).then(|| format!("p{pass}-{i}"));
            let mut rec = FutureRecord::<str, str>::to(&topic).key(&key);
            if let Some(v) = &value {
                rec = rec.payload(v);
            }
            let f = p.send_result(rec).map_err(|(e, _)| e).unwrap();
            futs.push((key, value, f));
        }
        for (key, value, f) in futs {
            let d = tokio::time::timeout(T, f)
                .await
                .unwrap()
                .unwrap()
                .map_err(|(e, _)| e)
                .unwrap();
            model.insert(key, (d.partition, d.offset, value));
        }
    }
    let want: BTreeMap<String, Row> = model
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
        .collect();
    assert_eq!(want.len(), KEYS - KEYS / 5);
    for iso in ["read_committed", "read_uncommitted"] {
        let snap = get(
            &http,
            &format!("/v1/topics/{topic}/snapshot?isolation={iso}"),
        );
        assert_eq!(snap.status, 200, "{}", snap.body);
        let (rows, ends) = parse_snapshot(&snap.body);
        let missing: Vec<_> = want.keys().filter(|k| !rows.contains_key(*k)).collect();
        let extra: Vec<_> = rows.keys().filter(|k| !want.contains_key(*k)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{iso}: missing {missing:?}, extra {extra:?}"
        );
        assert_eq!(rows, want, "{iso}");
        let total: i64 = ends.values().sum();
        assert_eq!(total, i64::try_from(3 * KEYS).unwrap(), "{iso}: {ends:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_added_to_an_indexed_topic_are_indexed() {
    use rdkafka::admin::NewPartitions;
    let (mut b, http) = start(&[]);
    let topic = table_topic(&b, "tables-grow", 1, &[]).await;
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let (_, o0) = p
        .send(
            FutureRecord::to(&topic).partition(0).key("a").payload("a0"),
            T,
        )
        .await
        .map(|d| (d.partition, d.offset))
        .map_err(|(e, _)| e)
        .unwrap();
    let adm = admin(&b).unwrap();
    for r in adm
        .create_partitions(&[NewPartitions::new(&topic, 3)], &common::admin_opts())
        .await
        .unwrap()
    {
        r.unwrap();
    }
    let c = consumer(&b, &[]).unwrap();
    wait_topic_partitions(&c, &topic, 3).unwrap();
    // A new producer: the first one's metadata still says 1 partition.
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let mut want = vec![("a".to_string(), 0, o0, "a0".to_string())];
    for part in 1..3 {
        let key = format!("new-{part}");
        let value = format!("v{part}");
        let d = p
            .send(
                FutureRecord::to(&topic)
                    .partition(part)
                    .key(&key)
                    .payload(&value),
                T,
            )
            .await
            .map_err(|(e, _)| e)
            .unwrap();
        let r = get_ready(
            &http,
            &key_path(&topic, &key, &format!("partition={part}")),
            None,
        );
        assert_lookup(&r, &key, Some((part, d.offset, &value)), "added partition");
        want.push((key, part, d.offset, value));
    }
    // Also after a restart (the added partitions' indexes are rebuilt like the others).
    b.restart().unwrap();
    for (key, part, off, value) in &want {
        let r = get_ready(
            &http,
            &key_path(&topic, key, &format!("partition={part}")),
            None,
        );
        assert_lookup(
            &r,
            key,
            Some((*part, *off, value)),
            "added partition after a restart",
        );
    }
    let snap = get(&http, &format!("/v1/topics/{topic}/snapshot"));
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (rows, ends) = parse_snapshot(&snap.body);
    assert_eq!(rows.len(), 3);
    assert_eq!(ends.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_topic_cannot_stop_being_compacted_without_dropping_its_index() {
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-policy", 1, &[]).await;
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let at = key_path(&topic, "k", "partition=0");
    let (_, v0) = send(&p, &topic, "k", Some("v0")).await;
    let mut raw = skiff_e2e::raw::RawClient::connect(&b.bootstrap()).unwrap();
    // Setting cleanup.policy=delete, or deleting it (back to the default, delete), is
    // refused with INVALID_CONFIG while the index is on; lookups are unaffected.
    for change in [Some("delete"), None] {
        let (err, msg) = raw
            .alter_topic(&topic, &[("cleanup.policy", change)])
            .unwrap();
        assert_eq!(err, 40, "cleanup.policy {change:?}: {msg:?}");
        assert_lookup(
            &get_ready(&http, &at, None),
            "k",
            Some((0, v0, "v0")),
            "after a refusal",
        );
    }
    // Both in one request: accepted; the topic is then neither indexed nor compacted.
    let (err, msg) = raw
        .alter_topic(
            &topic,
            &[
                ("skiff.key.index.enable", Some("false")),
                ("cleanup.policy", Some("delete")),
            ],
        )
        .unwrap();
    assert_eq!(err, 0, "{msg:?}");
    let r = get(&http, &at);
    assert_eq!(r.status, 409, "{}", r.body);
    // Writes while not compacted, a keyless one too (allowed under delete), then back.
    let (_, v1) = send(&p, &topic, "k", Some("v1")).await;
    p.send(
        FutureRecord::<str, str>::to(&topic)
            .partition(0)
            .payload("keyless"),
        T,
    )
    .await
    .map_err(|(e, _)| e)
    .unwrap();
    send(&p, &topic, "gone", Some("x")).await;
    send(&p, &topic, "gone", None).await;
    let (err, msg) = raw
        .alter_topic(
            &topic,
            &[
                ("cleanup.policy", Some("compact")),
                ("skiff.key.index.enable", Some("true")),
            ],
        )
        .unwrap();
    assert_eq!(err, 0, "{msg:?}");
    assert_lookup(
        &get_ready(&http, &at, None),
        "k",
        Some((0, v1, "v1")),
        "compacted again",
    );
    let r = get_ready(&http, &key_path(&topic, "gone", "partition=0"), None);
    assert_lookup(&r, "gone", None, "compacted again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_never_flicker_while_passes_swap_segments() {
    const STABLE: usize = 30;
    const WRITES: usize = 1500;
    let (b, http) = start(CLEANER);
    let topic = table_topic(&b, "tables-swap", 1, &[]).await;
    let p = producer(&b, &[("acks", "all"), ("linger.ms", "1")]).unwrap();
    // Keys written once and never again: every lookup must answer them, whatever the
    // cleaner is doing.
    let mut stable = Vec::new();
    for i in 0..STABLE {
        let key = format!("stable-{i}");
        let (_, o) = send(&p, &topic, &key, Some(&format!("s{i}"))).await;
        stable.push((key, o, format!("s{i}")));
    }
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (http, topic, done, stable) =
            (http.clone(), topic.clone(), done.clone(), stable.clone());
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !done.load(Ordering::SeqCst) {
                for (k, o, v) in &stable {
                    let r = get_ready(&http, &key_path(&topic, k, "partition=0"), None);
                    assert_lookup(&r, k, Some((0, *o, v)), "stable key during passes");
                    n += 1;
                }
            }
            n
        })
    };
    let compactor = {
        let (http, topic, done) = (http.clone(), topic.clone(), done.clone());
        std::thread::spawn(move || {
            let mut removed = 0;
            while !done.load(Ordering::SeqCst) {
                let r = post(&http, &format!("/v1/topics/{topic}/compaction"));
                removed += pass_sum(&follow_tickets(&http, &r), "records_removed");
            }
            removed
        })
    };
    // Churn: a few hot keys rewritten over and over (segments roll every 100 ms), each
    // acknowledged write checked at once.
    let deadline = Instant::now() + Duration::from_secs(120);
    for i in 0..WRITES {
        assert!(Instant::now() < deadline, "churn too slow");
        let key = format!("hot-{}", i % 5);
        let value = format!("h{i}");
        let (_, o) = send(&p, &topic, &key, Some(&value)).await;
        let r = tokio::task::block_in_place(|| {
            get_ready(&http, &key_path(&topic, &key, "partition=0"), None)
        });
        assert_lookup(&r, &key, Some((0, o, &value)), "hot key during passes");
        if i % 100 == 99 {
            // Let the active segment reach segment.ms now and then.
            tokio::time::sleep(Duration::from_millis(110)).await;
        }
    }
    done.store(true, Ordering::SeqCst);
    let reads = reader.join().unwrap();
    let removed = compactor.join().unwrap();
    assert!(reads > 0);
    assert!(removed > 0, "no pass removed anything during the churn");
}

/// Standard base64 with padding (RFC 4648 §4).
fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_keys_and_values_round_trip_in_base64() {
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-binary", 4, &[]).await;
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let mut seen_parts = std::collections::BTreeSet::new();
    for i in 0u8..24 {
        let key = vec![0xfb, 0xff, 0x00, i, 0x80];
        let value = vec![0xff, 0x00, i, 0xc3];
        let d = p
            .send(
                FutureRecord::<[u8], [u8]>::to(&topic)
                    .key(&key[..])
                    .payload(&value[..]),
                T,
            )
            .await
            .map_err(|(e, _)| e)
            .unwrap();
        seen_parts.insert(d.partition);
        // URL-safe, unpadded key in the path; CRC-32 over the raw bytes finds the partition.
        let url_key = b64(&key)
            .replace('+', "-")
            .replace('/', "_")
            .replace('=', "");
        let path = format!(
            "/v1/topics/{topic}/keys/{url_key}?key_encoding=base64&partitioner=consistent_random"
        );
        // Text answers flag fields that are not UTF-8 and give them in base64.
        let r = get_ready(&http, &path, None);
        assert_eq!(r.status, 200, "{}", r.body);
        let j = r.json();
        assert_eq!(j.get("offset").as_i64(), Some(d.offset));
        assert_eq!(j.get("partition").as_i64(), Some(i64::from(d.partition)));
        assert_eq!(
            j.get("key").as_str(),
            Some(b64(&key).as_str()),
            "{}",
            r.body
        );
        assert_eq!(j.get("key_encoding").as_str(), Some("base64"), "{}", r.body);
        assert_eq!(
            j.get("value").as_str(),
            Some(b64(&value).as_str()),
            "{}",
            r.body
        );
        assert_eq!(
            j.get("value_encoding").as_str(),
            Some("base64"),
            "{}",
            r.body
        );
        // The standard alphabet, padded, percent-encoded ('+', '/', '=') works too.
        let std_path = format!(
            "/v1/topics/{topic}/keys/{}?key_encoding=base64&partition={}",
            pct(&b64(&key)),
            d.partition
        );
        let r = get_ready(&http, &std_path, None);
        assert_eq!(r.status, 200, "{std_path}: {}", r.body);
        assert_eq!(r.json().get("offset").as_i64(), Some(d.offset));
        // encoding=base64: always base64, never flagged.
        let r = get_ready(&http, &format!("{path}&encoding=base64"), None);
        assert_eq!(r.status, 200, "{}", r.body);
        let j = r.json();
        assert_eq!(
            j.get("value").as_str(),
            Some(b64(&value).as_str()),
            "{}",
            r.body
        );
        assert!(j.get("value_encoding").is_null(), "{}", r.body);
    }
    assert!(seen_parts.len() > 1);
    let snap = get(
        &http,
        &format!("/v1/topics/{topic}/snapshot?encoding=base64"),
    );
    assert_eq!(snap.status, 200, "{}", snap.body);
    let (rows, _) = parse_snapshot(&snap.body);
    assert_eq!(rows.len(), 24);
    for i in 0u8..24 {
        let row = &rows[&b64(&[0xfb, 0xff, 0x00, i, 0x80])];
        assert_eq!(row.value, b64(&[0xff, 0x00, i, 0xc3]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_end_offsets_stop_at_the_last_stable_offset_for_read_committed() {
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-lso", 1, &[]).await;
    let plain = producer(&b, &[("acks", "all")]).unwrap();
    let txp = producer(
        &b,
        &[("transactional.id", "tables-lso"), ("linger.ms", "1")],
    )
    .unwrap();
    txp.init_transactions(T).unwrap();
    let (_, a) = send(&plain, &topic, "a", Some("1")).await;
    txp.begin_transaction().unwrap();
    let (_, bo) = send(&txp, &topic, "b", Some("2")).await;
    let (_, c) = send(&plain, &topic, "c", Some("3")).await;
    assert_eq!((a, bo, c), (0, 1, 2));
    let snapshot = |iso: &str| {
        let r = get(
            &http,
            &format!("/v1/topics/{topic}/snapshot?isolation={iso}"),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let (rows, ends) = parse_snapshot(&r.body);
        let mut keys: Vec<String> = rows.keys().cloned().collect();
        keys.sort();
        (keys, ends[&0])
    };
    // read_committed stops at the open transaction's first offset (the LSO): c, written
    // after it, is left to the tail; read_uncommitted goes to the high watermark.
    assert_eq!(snapshot("read_committed"), (vec!["a".to_string()], 1));
    assert_eq!(
        snapshot("read_uncommitted"),
        (vec!["a".to_string(), "b".to_string(), "c".to_string()], 3)
    );
    // The lookup does not stop at the LSO (docs/key-index.md §3).
    assert_lookup(
        &get_ready(&http, &key_path(&topic, "c", "partition=0"), None),
        "c",
        Some((0, c, "3")),
        "read_committed lookup past the LSO",
    );
    txp.commit_transaction(T).unwrap();
    // After the commit marker (offset 3): everything, to 4.
    assert_eq!(
        snapshot("read_committed"),
        (vec!["a".to_string(), "b".to_string(), "c".to_string()], 4)
    );
    // A read_committed consumer from the first snapshot's end offset (1) reads b and c.
    let cons = consumer(&b, &[("isolation.level", "read_committed")]).unwrap();
    let recs = common::consume_n(&cons, &topic, 0, Offset::Offset(1), 2, T).unwrap();
    let keys: Vec<_> = recs.iter().map(|r| r.key.clone().unwrap()).collect();
    assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
}

/// Percent-encodes every byte outside RFC 3986's unreserved set.
fn pct(key: &str) -> String {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_find_keys_of_both_client_partitioners_and_escaped_keys() {
    let (b, http) = start(&[]);
    let topic = table_topic(&b, "tables-parts", 5, &[]).await;
    // librdkafka's murmur2_random is the Java client's partitioner: the route's default.
    let java_like = producer(&b, &[("acks", "all"), ("partitioner", "murmur2_random")]).unwrap();
    let rdkafka_default = producer(&b, &[("acks", "all")]).unwrap();
    let mut murmur_parts = std::collections::BTreeSet::new();
    for i in 0..60 {
        let key = format!("murmur-{i}");
        let (p, o) = send(&java_like, &topic, &key, Some("m")).await;
        murmur_parts.insert(p);
        let r = get_ready(&http, &key_path(&topic, &key, ""), None);
        assert_lookup(&r, &key, Some((p, o, "m")), "murmur2 (default partitioner)");
        let r = get_ready(&http, &key_path(&topic, &key, "partitioner=murmur2"), None);
        assert_lookup(&r, &key, Some((p, o, "m")), "partitioner=murmur2");
    }
    assert_eq!(murmur_parts.len(), 5);
    // Keys that need escaping in a path, written by librdkafka's default (CRC-32) partitioner.
    for key in [
        "with space",
        "slash/inside",
        "q?x=1&y",
        "100%",
        "ünïcödé ✓",
        "hash#frag",
        "plus+sign",
        "..",
    ] {
        let (p, o) = send(&rdkafka_default, &topic, key, Some("e")).await;
        for partitioner in ["consistent_random", "consistent", "crc32"] {
            let path = format!(
                "/v1/topics/{topic}/keys/{}?partitioner={partitioner}",
                pct(key)
            );
            let r = get_ready(&http, &path, None);
            assert_lookup(
                &r,
                key,
                Some((p, o, "e")),
                &format!("escaped key, {partitioner}"),
            );
        }
    }
}

/// Kafka's ACL codes (CreateAcls): resource types, pattern, operations, permission.
const ACL_TOPIC: i8 = 2;
const ACL_GROUP: i8 = 3;
const ACL_LITERAL: i8 = 3;
const ACL_READ: i8 = 3;
const ACL_DESCRIBE: i8 = 8;
const ACL_ALLOW: i8 = 3;
const ACL_ALTER: i8 = 7;

/// `Authorization: Basic` values of base64("alice:alice-secret") and base64("bob:bob-secret").
const ALICE: &str = "Basic YWxpY2U6YWxpY2Utc2VjcmV0";
const BOB: &str = "Basic Ym9iOmJvYi1zZWNyZXQ=";
/// base64("eve:eve-secret"): a user without any ACL.
const EVE: &str = "Basic ZXZlOmV2ZS1zZWNyZXQ=";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_kafka_reads_obey_the_same_acls() {
    use kafka_protocol::messages::create_acls_request::AclCreation;
    use kafka_protocol::messages::{ApiKey, CreateAclsRequest, CreateAclsResponse};
    use kafka_protocol::protocol::StrBytes;
    use rdkafka::config::ClientConfig;

    let plain = format!("127.0.0.1:{}", free_port().unwrap());
    let sasl = format!("127.0.0.1:{}", free_port().unwrap());
    let http = format!("127.0.0.1:{}", free_port().unwrap());
    let listeners = format!("PLAINTEXT://{plain},SASL_PLAINTEXT://{sasl}");
    // PLAINTEXT callers are User:ANONYMOUS, the super user that sets things up; alice and
    // bob log in with SASL/PLAIN on Kafka and with Basic (same passwords) over HTTP.
    let _b = Broker::start_opts(
        skiff_e2e::Options::new()
            .set("listeners", &listeners)
            .set("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
            .set("super.users", "User:ANONYMOUS")
            .set("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN")
            .set(
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\" user_bob=\"bob-secret\" user_eve=\"eve-secret\";",
            )
            .set("skiff.http.listener", &http)
            .set("skiff.http.authentication", "basic")
            .set("connection.failed.authentication.delay.ms", "0")
            .ready(skiff_e2e::Ready::LogLine("skiff is ready".into())),
    )
    .unwrap();
    let client = |extra: &[(&str, &str)]| {
        let mut c = ClientConfig::new();
        c.set("socket.timeout.ms", "10000")
            .set("message.timeout.ms", "10000");
        for (k, v) in extra {
            c.set(*k, *v);
        }
        c
    };
    let super_cfg = client(&[("bootstrap.servers", &plain)]);
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        super_cfg.create().unwrap();
    let topic = unique_topic("tables-acl");
    create_topic(
        &admin,
        &topic,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("skiff.key.index.enable", "true"),
        ],
    )
    .await
    .unwrap();
    let p: FutureProducer = super_cfg.create().unwrap();
    let (_, off) = send(&p, &topic, "acct", Some("balance=7")).await;

    // alice may read the topic (READ implies DESCRIBE); bob may only describe it. Both may
    // use the consumer group the Kafka consumers below name.
    let group = format!("{topic}-g");
    let acl = |rt: i8, name: &str, who: &str, op: i8| {
        AclCreation::default()
            .with_resource_type(rt)
            .with_resource_name(StrBytes::from_string(name.to_string()))
            .with_resource_pattern_type(ACL_LITERAL)
            .with_principal(StrBytes::from_string(who.to_string()))
            .with_host(StrBytes::from_static_str("*"))
            .with_operation(op)
            .with_permission_type(ACL_ALLOW)
    };
    let req = CreateAclsRequest::default().with_creations(vec![
        acl(ACL_TOPIC, &topic, "User:alice", ACL_READ),
        acl(ACL_TOPIC, &topic, "User:bob", ACL_DESCRIBE),
        acl(ACL_GROUP, &group, "User:alice", ACL_READ),
        acl(ACL_GROUP, &group, "User:bob", ACL_READ),
    ]);
    let mut raw = skiff_e2e::raw::RawClient::connect(&plain).unwrap();
    let r: CreateAclsResponse = raw.call(ApiKey::CreateAcls, 3, &req).unwrap();
    let codes: Vec<i16> = r.results.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, vec![0, 0, 0, 0]);

    let lookup = format!("/v1/topics/{topic}/keys/acct?partition=0");
    let snapshot = format!("/v1/topics/{topic}/snapshot");
    // No credentials: 401 on both routes.
    for path in [&lookup, &snapshot] {
        let r = get(&http, path);
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (401, "unauthenticated"),
            "{path}"
        );
    }
    // alice: 200 on both, with the record.
    let r = get_ready(&http, &lookup, Some(ALICE));
    assert_lookup(&r, "acct", Some((0, off, "balance=7")), "alice");
    let r = common::http::request(&http, "GET", &snapshot, Some(ALICE)).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let (rows, _) = parse_snapshot(&r.body);
    assert_eq!(rows["acct"].value, "balance=7");
    // bob: 403 on both, and the same 403 for a topic that does not exist.
    for path in [
        lookup.clone(),
        snapshot.clone(),
        "/v1/topics/no-such-topic/keys/acct".to_string(),
        "/v1/topics/no-such-topic/snapshot".to_string(),
    ] {
        let r = common::http::request(&http, "GET", &path, Some(BOB)).unwrap();
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (403, "topic_authorization_failed"),
            "bob {path}: {}",
            r.body
        );
    }

    // The same ACLs on Kafka: alice's consumer reads the record, bob's is refused.
    let sasl_consumer = |user: &str, pass: &str| -> rdkafka::consumer::BaseConsumer {
        client(&[
            ("bootstrap.servers", &sasl),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", user),
            ("sasl.password", pass),
            ("group.id", &group),
            ("enable.auto.commit", "false"),
            ("fetch.wait.max.ms", "100"),
        ])
        .create()
        .unwrap()
    };
    let assign = |c: &BaseConsumer| {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, Offset::Beginning)
            .unwrap();
        c.assign(&tpl).unwrap();
    };
    let alice = sasl_consumer("alice", "alice-secret");
    assign(&alice);
    let deadline = Instant::now() + T;
    let got = loop {
        assert!(Instant::now() < deadline, "alice read nothing");
        if let Some(m) = alice.poll(Duration::from_millis(200)) {
            break m.unwrap().payload().map(<[u8]>::to_vec);
        }
    };
    assert_eq!(got.as_deref(), Some(&b"balance=7"[..]));
    let bob = sasl_consumer("bob", "bob-secret");
    assign(&bob);
    let deadline = Instant::now() + T;
    let err = loop {
        assert!(Instant::now() < deadline, "bob's consumer got no error");
        match bob.poll(Duration::from_millis(200)) {
            None => {}
            Some(Ok(m)) => panic!("bob read offset {} without READ", m.offset()),
            Some(Err(e)) => break e,
        }
    };
    assert_eq!(
        err.rdkafka_error_code(),
        Some(rdkafka::types::RDKafkaErrorCode::TopicAuthorizationFailed),
        "{err}"
    );

    // The compaction routes (docs/http-api.md §2): the dry run needs DESCRIBE (bob has it),
    // compact-now ALTER (nobody yet), a ticket DESCRIBE on its topic (eve has nothing).
    let dry_run = format!("/v1/topics/{topic}/compaction/dry-run");
    let compact = format!("/v1/topics/{topic}/compaction");
    let r = common::http::request(&http, "GET", &dry_run, Some(BOB)).unwrap();
    assert_eq!(r.status, 200, "bob dry run: {}", r.body);
    for who in [ALICE, BOB] {
        let r = common::http::request(&http, "POST", &compact, Some(who)).unwrap();
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (403, "topic_authorization_failed"),
            "compact-now without ALTER: {}",
            r.body
        );
    }
    let r = common::http::request(&http, "GET", &dry_run, Some(EVE)).unwrap();
    assert_eq!(r.status, 403, "eve dry run: {}", r.body);
    let req = CreateAclsRequest::default()
        .with_creations(vec![acl(ACL_TOPIC, &topic, "User:bob", ACL_ALTER)]);
    let r: CreateAclsResponse = raw.call(ApiKey::CreateAcls, 3, &req).unwrap();
    assert_eq!(r.results[0].error_code, 0);
    let r = common::http::request(&http, "POST", &compact, Some(BOB)).unwrap();
    assert_eq!(r.status, 202, "bob compact-now with ALTER: {}", r.body);
    let ticket = r
        .json()
        .get("tickets")
        .at(0)
        .get("url")
        .as_str()
        .unwrap()
        .to_string();
    let r = common::http::request(&http, "GET", &ticket, Some(ALICE)).unwrap();
    assert_eq!(r.status, 200, "alice ticket: {}", r.body);
    let r = common::http::request(&http, "GET", &ticket, Some(EVE)).unwrap();
    assert_eq!(r.status, 403, "eve ticket: {}", r.body);
    // ALTER does not give READ: bob's lookups are still refused.
    let r = common::http::request(&http, "GET", &lookup, Some(BOB)).unwrap();
    assert_eq!(r.status, 403, "{}", r.body);
}
