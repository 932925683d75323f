//! Snapshots: a snapshot followed by the tail from its end offsets equals the last write
//! of every key (plain and transactional producers, under the cleaner), and read_committed
//! snapshots end at the last stable offset.

use crate::tables_support::*;

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
                    let f = enqueue(&p, &topic, &key, value.as_deref());
                    batch.push((key, value, f));
                }
                for (key, value, f) in batch {
                    let d = await_delivery(f).await;
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
            assert!(m.offset() >= next[&m.partition()], "offsets went back");
            next.insert(m.partition(), m.offset() + 1);
            tail += 1;
            apply_message(&mut table, &m);
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
    let want = live_rows(&model);
    assert_same_table(&table, &want);
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
        let d = send_to(&p, &topic, part, &key, "end").await;
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
        apply_message(&mut table, &m);
        if sentinels.get(&m.partition()) == Some(&m.offset()) {
            reached.insert(m.partition());
        }
    }
    let want = live_rows(&model.lock().unwrap());
    assert_same_table(&table, &want);
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
