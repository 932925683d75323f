//! The key index over a topic's life: config toggles, DeleteRecords, recreation, leaving
//! compact, added partitions, the index memory budget and snapshots read in hash slices.

use crate::tables_support::*;
use skiff_e2e::raw::RawClient;

/// Alters topic configs over the raw client and asserts the broker accepted them.
fn alter_ok(raw: &mut RawClient, topic: &str, configs: &[(&str, Option<&str>)]) {
    let (err, msg) = raw.alter_topic(topic, configs).unwrap();
    assert_eq!(err, 0, "{msg:?}");
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
    let mut raw = RawClient::connect(&b.bootstrap()).unwrap();

    let (_, a0) = send(&p, &topic, "a", Some("a0")).await;
    let (_, b0) = send(&p, &topic, "b", Some("b0")).await;
    assert_lookup(
        &get_ready(&http, &at("a"), None),
        "a",
        Some((0, a0, "a0")),
        "indexed",
    );

    // Switched off: 409 index_disabled; writes go on meanwhile.
    alter_ok(
        &mut raw,
        &topic,
        &[("skiff.key.index.enable", Some("false"))],
    );
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
    alter_ok(
        &mut raw,
        &topic,
        &[("skiff.key.index.enable", Some("true"))],
    );
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
async fn an_index_over_the_memory_budget_answers_over_budget_and_nothing_else_breaks() {
    let (b, http) = start(&[("skiff.key.index.memory.bytes", "16384")]);
    let topic = table_topic(&b, "tables-budget", 2, &[]).await;
    let p = producer(&b, &[("acks", "all")]).unwrap();
    let small_off = send_to(&p, &topic, 1, "small", "s").await.offset;
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
            let f = enqueue(&p, &topic, &key, value.as_deref());
            futs.push((key, value, f));
        }
        for (key, value, f) in futs {
            let d = await_delivery(f).await;
            model.insert(key, (d.partition, d.offset, value));
        }
    }
    let want = live_rows(&model);
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
    let o0 = send_to(&p, &topic, 0, "a", "a0").await.offset;
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
        let d = send_to(&p, &topic, part, &key, &value).await;
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
    let mut raw = RawClient::connect(&b.bootstrap()).unwrap();
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
    alter_ok(
        &mut raw,
        &topic,
        &[
            ("skiff.key.index.enable", Some("false")),
            ("cleanup.policy", Some("delete")),
        ],
    );
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
    alter_ok(
        &mut raw,
        &topic,
        &[
            ("cleanup.policy", Some("compact")),
            ("skiff.key.index.enable", Some("true")),
        ],
    );
    assert_lookup(
        &get_ready(&http, &at, None),
        "k",
        Some((0, v1, "v1")),
        "compacted again",
    );
    let r = get_ready(&http, &key_path(&topic, "gone", "partition=0"), None);
    assert_lookup(&r, "gone", None, "compacted again");
}
