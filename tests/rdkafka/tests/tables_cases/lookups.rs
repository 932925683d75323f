//! Lookups against a live writer: every acknowledged write (acks=1, acks=all) is the next
//! lookup and compaction changes no answer; concurrent writers see their own writes; no
//! lookup flickers while compact-now passes swap segments.

use crate::tables_support::*;

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
        let d = send_to(&acks_all, &topic, p, &key, "r").await;
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
    let first = compact_now(&http, &topic);
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
        let again = compact_now(&http, &topic);
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
                    let f = enqueue(&p, &topic, &key, value.as_deref());
                    futs.push((key, value, f));
                }
                let mut last: BTreeMap<String, (i32, i64, Option<String>)> = BTreeMap::new();
                for (key, value, f) in futs {
                    let d = await_delivery(f).await;
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
