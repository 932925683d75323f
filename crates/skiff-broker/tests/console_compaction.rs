//! The console's compaction pages over real HTTP (console/compaction*.rs): the figures shown
//! are the cleaner's (`Broker::compaction_status`) and the HTTP API's dry run; compact now
//! through the form runs a pass whose result the pages show; key lookups through the page;
//! read-only mode, cross-origin posts and ACLs (DESCRIBE to see, ALTER to compact, READ to
//! look up) refuse with 403 and hide what they forbid. Browser tests are in
//! tests/rdkafka/tests/console.rs.
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use acl_support::{create_acls, creation, ALLOW, DESCRIBE, LITERAL, READ, TOPIC};
use common::http::{basic, get, get_ready, post_form, send, serve_api, Api};
use common::tables::{compacted_topic, produce, topic_with};
use hyper::header::LOCATION;
use skiff_broker::Broker;
use skiff_cleaner::UncleanableReason;
use skiff_log::{AppendValidation, Clock, ManualClock};
use skiff_records::{BatchBuilder, Compression};

/// The text of the element with `id` (up to its first child tag).
fn text_of(html: &str, id: &str) -> String {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let rest = &html[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest[start..].find('<').unwrap();
    rest[start..start + end].to_string()
}

/// The `value` attribute of the `<data>` element with `id`.
fn value_of(html: &str, id: &str) -> u64 {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let rest = &html[at..];
    let start = rest.find("value=\"").unwrap() + 7;
    let end = rest[start..].find('"').unwrap();
    rest[start..start + end].parse().unwrap()
}

/// 50 records over 5 keys in a sealed segment of `name`-0 (the HTTP API tests' fill).
fn filled(broker: &Broker, clock: &ManualClock, name: &str) {
    let log = broker
        .topics
        .get(name)
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .clone();
    let now = clock.now_ms();
    for i in 0..50 {
        let mut b = BatchBuilder::new(0, Compression::None);
        let key = format!("k{}", i % 5);
        b.push(
            now,
            Some(key.as_bytes()),
            Some(format!("v{i}").as_bytes()),
            &[],
        );
        log.append(&b.build().unwrap(), 0, &AppendValidation { now_ms: now })
            .unwrap();
    }
    clock.advance(101);
    assert!(log.roll_if_due().unwrap(), "segment.ms roll not due");
}

/// A broker whose cleaner plans often but never cleans by itself
/// (`min.cleanable.dirty.ratio=1.0`: a dirty ratio is never above it), with `table` holding
/// 50 records over 5 keys in a sealed segment and `plain` not compacted.
async fn dirty_table(dir: &std::path::Path, sets: &[&str]) -> (Arc<Broker>, Api) {
    let clock = common::manual_clock();
    let mut all = vec!["log.cleaner.threads=1", "log.cleaner.backoff.ms=50"];
    all.extend_from_slice(sets);
    let broker = common::broker(dir)
        .sets(&all)
        .clock(clock.clone())
        .start()
        .await;
    topic_with(
        &broker,
        "table",
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.ms", "100"),
            ("min.cleanable.dirty.ratio", "1.0"),
        ],
    )
    .await;
    let b = broker.clone();
    tokio::task::spawn_blocking(move || filled(&b, &clock, "table"))
        .await
        .unwrap();
    compacted_topic(&broker, "plain", 1, "delete").await;
    let b = broker.clone();
    common::wait_until("the cleaner planned table-0 after the roll", move || {
        b.compaction_status("table", 0)
            .is_some_and(|s| s.first_uncleanable_offset == 50)
    })
    .await;
    let api = serve_api(broker.clone()).await;
    (broker, api)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_show_the_cleaner_status_dry_run_and_compact_now() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, api) = dirty_table(dir.path(), &[]).await;

    // The overview lists the compacted topic, not the plain one.
    let r = get(&api, "/console/compaction").await;
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<table id=\"compaction\">"), "{html}");
    assert!(html.contains("href=\"/console/topics/table/compaction\""));
    assert!(!html.contains("/console/topics/plain/compaction"));
    assert!(html.contains("id=\"cleaner\""));
    // The broker's own compacted topics (if any are there yet) are in a table of their own.
    let user_table = &html[html.find("<table id=\"compaction\">").unwrap()..];
    let user_table = &user_table[..user_table.find("</table>").unwrap()];
    assert!(user_table.contains("/console/topics/table/compaction"));
    assert!(!user_table.contains("/console/topics/__"), "{user_table}");

    // The topic page shows the cleaner's figures for the partition.
    let r = get(&api, "/console/topics/table/compaction").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    let s = broker.compaction_status("table", 0).unwrap();
    assert!(html.contains("<table id=\"partitions\">"));
    assert_eq!(
        text_of(&html, "p0-dirty"),
        format!("{:.1}%", s.dirty_ratio * 100.0)
    );
    assert!(html.contains(&format!("of {:.1}%", s.min_cleanable_ratio * 100.0)));
    assert!(s.cleanable_bytes > 0);
    assert_eq!(value_of(&html, "p0-cleanable"), s.cleanable_bytes);
    assert_eq!(value_of(&html, "p0-clean"), s.clean_bytes);
    assert_eq!(
        text_of(&html, "p0-uncleanable"),
        s.first_uncleanable_offset.to_string()
    );
    assert_eq!(
        text_of(&html, "p0-first-dirty"),
        s.first_dirty_offset.to_string()
    );
    let why = match s.uncleanable_reason.unwrap() {
        UncleanableReason::ActiveSegment => "active segment",
        UncleanableReason::MinCompactionLag => "min.compaction.lag.ms",
        UncleanableReason::LastStableOffset => "last stable offset",
    };
    assert!(html.contains(why), "{why}: {html}");
    assert!(html.contains("id=\"dry-run\""));
    assert!(html.contains("id=\"compact-now\""));
    assert!(html.contains("id=\"lookup\""));
    assert!(html.contains("id=\"snapshot-link\" href=\"/v1/topics/table/snapshot\""));
    assert!(html.contains("none since the broker started") || html.contains(">never<"));

    // The dry run page shows what the API's dry run reports.
    let api_run = get(&api, "/v1/topics/table/compaction/dry-run")
        .await
        .json();
    let f = &api_run["partitions"][0]["figures"];
    assert_eq!(f["records_removed"], 45);
    let r = get(&api, "/console/topics/table/compaction/dry-run?partition=").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    assert!(html.contains("<table id=\"dry-run-results\">"));
    assert_eq!(text_of(&html, "d0-read"), f["records_read"].to_string());
    assert_eq!(
        text_of(&html, "d0-removed"),
        f["records_removed"].to_string()
    );
    assert_eq!(
        text_of(&html, "d0-keys"),
        api_run["partitions"][0]["keys_in_dirty_range"].to_string()
    );
    assert_eq!(
        value_of(&html, "d0-before"),
        f["bytes_before"].as_u64().unwrap()
    );
    assert_eq!(
        value_of(&html, "d0-after"),
        f["bytes_after"].as_u64().unwrap()
    );
    assert_eq!(
        text_of(&html, "d0-range"),
        format!(
            "{} → {}",
            f["first_dirty_offset"], f["first_uncleanable_offset"]
        )
    );
    // ...and changed nothing.
    assert!(broker
        .compaction_status("table", 0)
        .unwrap()
        .last_pass
        .is_none());

    // A form from another site is refused; from the console it queues a pass.
    let r = post_form(&api, "/console/topics/table/compaction", &[], false, None).await;
    assert_eq!(r.status, 403);
    assert!(broker
        .compaction_status("table", 0)
        .unwrap()
        .last_pass
        .is_none());
    let r = post_form(
        &api,
        "/console/topics/table/compaction",
        &[("partition", "0")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    let location = r.headers[LOCATION].to_str().unwrap().to_string();
    assert!(
        location.starts_with("/console/topics/table/compaction?tickets="),
        "{location}"
    );
    let id: u64 = location["/console/topics/table/compaction?tickets=".len()..]
        .split('&')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let r = get(&api, &location).await;
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<table id=\"tickets\">"), "{html}");
    assert!(html.contains("Compaction asked for partition 0 of table"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let html = loop {
        let r = get(&api, &format!("/console/compaction/tickets/{id}")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let html = r.text();
        let state = text_of(&html, "ticket-state");
        if state != "queued" && state != "running" {
            assert_eq!(state, "done", "{html}");
            break html;
        }
        assert!(Instant::now() < deadline, "ticket not finished: {html}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(text_of(&html, "ticket-removed"), "45");
    // The ticket's state on the topic page, and the pass on the pages.
    let html = get(&api, &location).await.text();
    assert_eq!(text_of(&html, &format!("ticket-{id}-state")), "done");
    let s = broker.compaction_status("table", 0).unwrap();
    assert!(s.last_pass.is_some());
    assert_eq!(text_of(&html, "p0-removed"), "45");
    assert_eq!(value_of(&html, "p0-cleanable"), s.cleanable_bytes);
    let html = get(&api, "/console/compaction").await.text();
    assert!(html.contains("45 records removed"), "{html}");
    // The fragment the script reloads.
    let r = get(
        &api,
        &format!("/console/topics/table/compaction/tickets?ids={id}"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r
        .text()
        .contains(&format!("id=\"ticket-{id}-state\">done<")));

    // A topic that is not compacted, one that does not exist, a bad ticket.
    for path in [
        "/console/topics/plain/compaction",
        "/console/topics/plain/compaction/dry-run",
    ] {
        let r = get(&api, path).await;
        assert_eq!(r.status, 409, "{path}");
        assert!(r.text().contains("not compacted"), "{path}");
    }
    let r = post_form(&api, "/console/topics/plain/compaction", &[], true, None).await;
    assert_eq!(r.status, 409);
    assert_eq!(
        get(&api, "/console/topics/nope/compaction").await.status,
        404
    );
    assert_eq!(
        get(&api, "/console/compaction/tickets/987654").await.status,
        404
    );
    assert_eq!(get(&api, "/console/compaction/tickets/x").await.status, 400);
    broker.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_lookup_through_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    let indexed = [
        ("cleanup.policy", "compact"),
        ("skiff.key.index.enable", "true"),
    ];
    topic_with(&broker, "users", 3, &indexed).await;
    compacted_topic(&broker, "unindexed", 1, "compact").await;
    let part = |k: &[u8]| {
        skiff_broker::table_lookup::Partitioner::Murmur2
            .partition(k, 3)
            .unwrap()
    };
    produce(&broker, "users", part(b"alice"), &[(b"alice", Some(b"v1"))]).await;
    produce(&broker, "users", part(b"alice"), &[(b"alice", Some(b"v2"))]).await;
    produce(&broker, "users", part(b"bob"), &[(b"bob", Some(b"here"))]).await;
    produce(&broker, "users", part(b"bob"), &[(b"bob", None)]).await;
    produce(&broker, "users", 1, &[(b"\xfb\xff", Some(b"binary"))]).await;
    let api = serve_api(broker.clone()).await;
    let page = "/console/topics/users/compaction";

    let r = get_ready(&api, &format!("{page}?key=alice&partition=&encoding=text")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    assert!(
        html.contains("id=\"lookup-result\" class=\"found\""),
        "{html}"
    );
    assert!(html.contains("id=\"lookup-value\"><pre>v2</pre>"), "{html}");
    assert_eq!(text_of(&html, "lookup-offset"), "1");
    assert_eq!(
        text_of(&html, "lookup-partition-value"),
        part(b"alice").to_string()
    );
    // The form keeps what was asked.
    assert!(html.contains("id=\"lookup-key\" name=\"key\" required value=\"alice\""));

    // bob's latest record is a tombstone: not found.
    let r = get_ready(&api, &format!("{page}?key=bob")).await;
    assert_eq!(r.status, 404);
    let html = r.text();
    assert!(
        text_of(&html, "lookup-result").starts_with("Not found"),
        "{html}"
    );
    // A key in base64 with its partition; the answer in base64.
    let r = get_ready(
        &api,
        &format!("{page}?key=%2B%2F8%3D&partition=1&encoding=base64"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<pre>YmluYXJ5</pre>"));
    let r = get(&api, &format!("{page}?key=alice&partition=x")).await;
    assert_eq!(r.status, 400);
    // No key index on the topic: says how to turn it on.
    let r = get(&api, "/console/topics/unindexed/compaction?key=a").await;
    assert_eq!(r.status, 409);
    assert!(r.text().contains("skiff.key.index.enable=true"));
    // The snapshot link is the API's route, served on the same listener.
    let html = get(&api, page).await.text();
    assert!(html.contains("id=\"snapshot-link\" href=\"/v1/topics/users/snapshot\""));
    let r = get(&api, "/v1/topics/users/snapshot").await;
    assert_eq!(r.status, 200);
    broker.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_console_hides_and_refuses_compact_now() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, api) = dirty_table(dir.path(), &["skiff.console.read.only=true"]).await;
    let r = get(&api, "/console/topics/table/compaction").await;
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(!html.contains("id=\"compact-now\""), "{html}");
    assert!(html.contains("id=\"dry-run\""));
    let r = post_form(&api, "/console/topics/table/compaction", &[], true, None).await;
    assert_eq!(r.status, 403);
    assert!(r.text().contains("read-only"));
    // Looking still works; nothing was cleaned.
    let r = get(&api, "/console/topics/table/compaction/dry-run").await;
    assert_eq!(r.status, 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(broker
        .compaction_status("table", 0)
        .unwrap()
        .last_pass
        .is_none());
    broker.shutdown().unwrap();
}

/// Kafka's AclOperation code of ALTER.
const ALTER: i8 = 7;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_decide_what_each_user_sees_and_does() {
    let dir = tempfile::tempdir().unwrap();
    let broker = acl_support::start(
        dir.path(),
        &[
            "listeners=SASL_PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\" user_carol=\"carol-secret\" user_dave=\"dave-secret\";",
            "skiff.http.authentication=basic",
            "connection.failed.authentication.delay.ms=0",
        ],
    )
    .await;
    compacted_topic(&broker, "table", 1, "compact").await;
    produce(&broker, "table", 0, &[(b"a", Some(b"1"))]).await;
    let codes = create_acls(
        &broker,
        "admin",
        vec![
            // alice may only look; carol may read; dave may compact (ALTER, and DESCRIBE to
            // see the page); bob has nothing.
            creation(TOPIC, "table", LITERAL, "User:alice", DESCRIBE, ALLOW),
            creation(TOPIC, "table", LITERAL, "User:carol", READ, ALLOW),
            creation(TOPIC, "table", LITERAL, "User:dave", DESCRIBE, ALLOW),
            creation(TOPIC, "table", LITERAL, "User:dave", ALTER, ALLOW),
        ],
    )
    .await;
    assert_eq!(codes, vec![0, 0, 0, 0]);
    let api = serve_api(broker.clone()).await;
    let page = "/console/topics/table/compaction";
    let (alice, bob, carol, dave) = (
        basic("alice", "alice-secret"),
        basic("bob", "bob-secret"),
        basic("carol", "carol-secret"),
        basic("dave", "dave-secret"),
    );

    assert_eq!(get(&api, page).await.status, 401);

    // DESCRIBE only: the status and the dry run, no compact now, no lookup, no snapshot.
    let r = send(&api, "GET", page, Some(&alice)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    assert!(html.contains("<table id=\"partitions\">"));
    assert!(!html.contains("id=\"compact-now\""));
    assert!(!html.contains("id=\"lookup\""));
    assert!(!html.contains("id=\"snapshot-link\""));
    let r = send(&api, "GET", &format!("{page}/dry-run"), Some(&alice)).await;
    assert_eq!(r.status, 200);
    let r = post_form(&api, page, &[], true, Some(&alice)).await;
    assert_eq!(r.status, 403);
    assert!(r.text().contains("ALTER"));
    let r = send(&api, "GET", &format!("{page}?key=a"), Some(&alice)).await;
    assert_eq!(r.status, 403);
    assert!(text_of(&r.text(), "lookup-result").starts_with("Refused"));
    let r = send(&api, "GET", "/console/compaction", Some(&alice)).await;
    assert!(r
        .text()
        .contains("href=\"/console/topics/table/compaction\""));

    // READ: the lookup passes authorization (no key index here: 409, and how to add one).
    let r = send(&api, "GET", &format!("{page}?key=a"), Some(&carol)).await;
    assert_eq!(r.status, 409);
    assert!(r.text().contains("skiff.key.index.enable=true"));
    assert!(r.text().contains("id=\"snapshot-link\""));

    // ALTER: the form is there and queues a pass.
    let html = send(&api, "GET", page, Some(&dave)).await.text();
    assert!(html.contains("id=\"compact-now\""));
    let r = post_form(&api, page, &[], true, Some(&dave)).await;
    assert_eq!(r.status, 303, "{}", r.text());

    // No DESCRIBE: the same 403 whether the topic exists or not, and not in the overview.
    let existing = send(&api, "GET", page, Some(&bob)).await;
    let missing = send(&api, "GET", "/console/topics/nope/compaction", Some(&bob)).await;
    assert_eq!(existing.status, 403);
    assert_eq!((missing.status, &missing.body), (403, &existing.body));
    for path in [
        format!("{page}/dry-run"),
        format!("{page}?key=a"),
        "/console/topics/nope/compaction/dry-run".to_string(),
    ] {
        let r = send(&api, "GET", &path, Some(&bob)).await;
        assert_eq!((r.status, &r.body), (403, &existing.body), "{path}");
    }
    let r = post_form(&api, page, &[], true, Some(&bob)).await;
    assert_eq!((r.status, &r.body), (403, &existing.body));
    let r = send(&api, "GET", "/console/compaction", Some(&bob)).await;
    assert_eq!(r.status, 200);
    assert!(!r.text().contains("/console/topics/table/compaction"));
    broker.shutdown().unwrap();
}

/// Appends `(key, value)` records to `name`-0 stamped with the clock, then rolls the segment.
fn append_and_roll(
    broker: &Broker,
    clock: &ManualClock,
    name: &str,
    recs: &[(&str, Option<&str>)],
) {
    let log = broker
        .topics
        .get(name)
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .clone();
    let now = clock.now_ms();
    for (k, v) in recs {
        let mut b = BatchBuilder::new(0, Compression::None);
        b.push(now, Some(k.as_bytes()), v.map(str::as_bytes), &[]);
        log.append(&b.build().unwrap(), 0, &AppendValidation { now_ms: now })
            .unwrap();
    }
    clock.advance(101);
    assert!(log.roll_if_due().unwrap(), "segment.ms roll not due");
}

/// Asks for a pass on `name`-0 and waits until its ticket has ended.
async fn compact(broker: &Arc<Broker>, name: &str) {
    let id = broker.compact_now(name, Some(0)).unwrap()[0].id;
    let b = broker.clone();
    common::wait_until("the compact-now ticket to end", move || {
        !matches!(b.compaction_ticket(id).unwrap().state, "queued" | "running")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tombstones_held_for_a_consumer_group_name_the_group() {
    use kafka_protocol::messages::{
        offset_commit_request, ApiKey, GroupId, OffsetCommitRequest, RequestKind, ResponseKind,
        TopicName,
    };
    use kafka_protocol::protocol::StrBytes;

    let dir = tempfile::tempdir().unwrap();
    let clock = common::manual_clock();
    let broker = common::broker(dir.path())
        .sets(&[
            "log.cleaner.threads=1",
            "log.cleaner.backoff.ms=50",
            "offsets.topic.num.partitions=1",
        ])
        .clock(clock.clone())
        .wait_groups()
        .start()
        .await;
    topic_with(
        &broker,
        "held",
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.ms", "100"),
            ("min.cleanable.dirty.ratio", "1.0"),
            ("delete.retention.ms", "0"),
            ("skiff.tombstone.wait.for.consumers", "true"),
        ],
    )
    .await;
    // k1 is deleted at offset 1; group "slow" has committed offset 0: it has not read the
    // tombstone yet.
    let (b, c) = (broker.clone(), clock.clone());
    tokio::task::spawn_blocking(move || {
        append_and_roll(
            &b,
            &c,
            "held",
            &[("k1", Some("v")), ("k1", None), ("k2", Some("v"))],
        )
    })
    .await
    .unwrap();
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("slow")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("held")))
                .with_partitions(vec![
                    offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(0),
                ]),
        ]);
    match common::call(
        &broker,
        ApiKey::OffsetCommit,
        8,
        RequestKind::OffsetCommit(commit),
    )
    .await
    {
        ResponseKind::OffsetCommit(r) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    // The first pass stamps the tombstone's delete horizon; a pass after it would drop the
    // tombstone, but the group holds it.
    compact(&broker, "held").await;
    let (b, c) = (broker.clone(), clock.clone());
    tokio::task::spawn_blocking(move || append_and_roll(&b, &c, "held", &[("k3", Some("v"))]))
        .await
        .unwrap();
    compact(&broker, "held").await;
    let b = broker.clone();
    common::wait_until("a pass held the tombstone for the group", move || {
        b.compaction_status("held", 0)
            .is_some_and(|s| s.tombstones_held_for_consumers == 1)
    })
    .await;
    let s = broker.compaction_status("held", 0).unwrap();
    assert_eq!(s.holding_groups, vec![("slow".to_string(), 1)]);

    let api = serve_api(broker.clone()).await;
    let html = get(&api, "/console/topics/held/compaction").await.text();
    assert_eq!(text_of(&html, "p0-held"), "1 (by slow: 1)");
    let html = get(&api, "/console/compaction").await.text();
    assert!(html.contains("1 (by slow: 1)"), "{html}");
    assert!(
        html.contains("<dt>Tombstones held for groups</dt><dd>1</dd>"),
        "{html}"
    );
    broker.shutdown().unwrap();
}
