//! Transactions and lookups: read_committed sees committed data only, read_uncommitted
//! the open transaction too, nobody an aborted one; the answers survive cleaning, restarts,
//! kill -9, and an open transaction cut by kill -9 is rebuilt and then hidden once aborted.

use crate::tables_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_follow_transaction_isolation() {
    let (mut b, http) = start(CLEANER);
    let topic = table_topic(&b, "tables-txn", 1, &[]).await;
    let plain = producer(&b, &[("acks", "all")]).unwrap();
    let (_, old_off) = send(&plain, &topic, "k", Some("old")).await;

    let txp = tx_producer(&b, "tables-txn", &[]);
    let [rc, ru] = ISOLATIONS;

    txp.begin_transaction().unwrap();
    let (_, txn_off) = send(&txp, &topic, "k", Some("txn")).await;
    let (_, only_off) = send(&txp, &topic, "only-txn", Some("x")).await;
    let open = "open transaction";
    expect_p0(
        &http,
        &topic,
        "k",
        rc,
        Some((old_off, "old")),
        &format!("{open}, {rc}"),
    );
    expect_p0(
        &http,
        &topic,
        "k",
        ru,
        Some((txn_off, "txn")),
        &format!("{open}, {ru}"),
    );
    expect_p0(
        &http,
        &topic,
        "only-txn",
        rc,
        None,
        &format!("{open}, {rc}"),
    );
    // The default isolation is read_committed.
    assert_lookup(
        &get_ready(&http, &key_path(&topic, "only-txn", "partition=0"), None),
        "only-txn",
        None,
        "open transaction, default isolation",
    );
    let only = Some((only_off, "x"));
    expect_p0(
        &http,
        &topic,
        "only-txn",
        ru,
        only,
        &format!("{open}, {ru}"),
    );
    txp.commit_transaction(T).unwrap();
    expect_p0_both(&http, &topic, "k", Some((txn_off, "txn")), "committed");
    expect_p0_both(&http, &topic, "only-txn", only, "committed");

    // An aborted transaction: its value is never the answer once aborted, for either
    // isolation, and a key written only in it does not exist.
    txp.begin_transaction().unwrap();
    send(&txp, &topic, "k", Some("aborted")).await;
    send(&txp, &topic, "only-aborted", Some("y")).await;
    let aborting = format!("aborting transaction, {rc}");
    expect_p0(&http, &topic, "k", rc, Some((txn_off, "txn")), &aborting);
    txp.abort_transaction(T).unwrap();
    expect_p0_both(&http, &topic, "k", Some((txn_off, "txn")), "aborted");
    expect_p0_both(&http, &topic, "only-aborted", None, "aborted");
    // A plain write during an open transaction is visible at once to both isolations (the
    // index does not stop at the last stable offset), and the transaction committing later
    // does not bring back its older value: latest is by offset.
    txp.begin_transaction().unwrap();
    let (_, older_off) = send(&txp, &topic, "k", Some("txn-older")).await;
    let (_, plain_off) = send(&plain, &topic, "k", Some("plain-newer")).await;
    assert!(plain_off > older_off);
    let newer = Some((plain_off, "plain-newer"));
    expect_p0_both(
        &http,
        &topic,
        "k",
        newer,
        "plain write during an open transaction",
    );
    txp.commit_transaction(T).unwrap();
    expect_p0_both(
        &http,
        &topic,
        "k",
        newer,
        "older transactional write committed",
    );
    // The same after a rebuild from the log (restart).
    b.restart().unwrap();
    expect_p0_both(&http, &topic, "k", newer, "after a restart");

    // A later plain write wins over everything.
    let (_, new_off) = send(&plain, &topic, "k", Some("new")).await;
    expect_p0_both(
        &http,
        &topic,
        "k",
        Some((new_off, "new")),
        "after a plain write",
    );
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
    let committer = tx_producer(&b, "tables-kill-c", &[]);
    committer.begin_transaction().unwrap();
    let (_, k2_off) = send(&committer, &topic, "k2", Some("committed")).await;
    committer.commit_transaction(T).unwrap();
    drop(committer);
    let (doomed_off, high_before) = {
        let p = tx_producer(
            &b,
            "tables-kill-d",
            &[
                ("transaction.timeout.ms", "5000"),
                ("message.timeout.ms", "3000"),
                ("socket.timeout.ms", "3000"),
            ],
        );
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
    let old = Some((old_off, "old"));
    let what = "open transaction after kill -9, read_committed";
    expect_p0(&http, &topic, "k", "read_committed", old, what);
    let k2 = Some((k2_off, "committed"));
    expect_p0_both(&http, &topic, "k2", k2, "committed before kill -9");
    // The timeout abort (transaction.timeout.ms=5000) hides it from both.
    let deadline = Instant::now() + Duration::from_secs(60);
    while high() == high_before {
        assert!(
            Instant::now() < deadline,
            "the open transaction was never aborted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for iso in ISOLATIONS {
        let what = format!("after the timeout abort, {iso}");
        expect_p0(&http, &topic, "k", iso, old, &what);
        expect_p0(&http, &topic, "only-doomed", iso, None, &what);
    }
    // And again after a clean restart (the index is rebuilt over the abort marker).
    b.restart().unwrap();
    expect_p0_both(&http, &topic, "k", old, "after the abort and a restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_answers_survive_cleaning_and_rebuilds_over_the_cleaned_log() {
    let (mut b, http) = start(&[("log.cleaner.backoff.ms", "3600000")]);
    let topic = table_topic(&b, "tables-txn-clean", 1, &[("delete.retention.ms", "0")]).await;
    let plain = producer(&b, &[("acks", "all")]).unwrap();
    let txp = tx_producer(&b, "tables-txn-clean", &[]);
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
        for iso in ISOLATIONS {
            for (k, (o, v)) in &model {
                let want = v.as_deref().map(|v| (*o, v));
                expect_p0(&http, &topic, k, iso, want, &format!("{what}, {iso}"));
            }
        }
    };
    check("before cleaning");
    let mut removed = 0;
    for _ in 0..4 {
        let t = compact_now(&http, &topic);
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
