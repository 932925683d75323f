//! The HTTP API (`skiff.http.listener`, docs/http-api.md) over real HTTP/1.1 on port 0: the
//! table snapshot stream and its refusals (404, 409, 400, 405, 429 and a gone reader), the
//! compaction dry run, compact-now and its ticket, key lookups, and `/metrics` on both
//! listeners.
//! Authentication, ACLs and TLS are in `http_api_auth.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::http::{get, get_ready, send, serve_api, Api};
use common::tables::{compacted_topic, produce, topic_with};
use http_body_util::Empty;
use hyper::header::{CONTENT_TYPE, LOCATION};
use hyper_util::rt::TokioIo;
use serde_json::json;
use skiff_broker::Broker;
use skiff_log::{AppendValidation, Clock, ManualClock};
use skiff_records::{BatchBuilder, Compression};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_streams_ndjson_and_refusals_are_json() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    compacted_topic(&broker, "table", 2, "compact").await;
    compacted_topic(&broker, "plain", 1, "delete").await;
    produce(
        &broker,
        "table",
        0,
        &[(b"a", Some(b"1")), (b"b", Some(b"1"))],
    )
    .await;
    produce(&broker, "table", 0, &[(b"a", Some(b"2")), (b"b", None)]).await;
    produce(&broker, "table", 1, &[(b"c", Some(b"x"))]).await;
    let api = serve_api(broker.clone()).await;

    let r = get(&api, "/v1/topics/table/snapshot").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers[CONTENT_TYPE], "application/x-ndjson");
    assert_eq!(r.headers["skiff-end-offsets"], "0=4,1=1");
    let lines = r.lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        (
            &lines[0]["partition"],
            &lines[0]["offset"],
            &lines[0]["key"],
            &lines[0]["value"]
        ),
        (&json!(0), &json!(2), &json!("a"), &json!("2"))
    );
    assert_eq!(
        (&lines[1]["key"], &lines[1]["value"]),
        (&json!("c"), &json!("x"))
    );
    assert_eq!(lines[2], json!({"end_offsets": {"0": 4, "1": 1}}));

    let r = get(
        &api,
        "/v1/topics/table/snapshot?encoding=base64&isolation=read_uncommitted",
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.lines()[0]["key"], "YQ==");

    let r = get(&api, "/v1/topics/nope/snapshot").await;
    assert_eq!((r.status, r.error_code().as_str()), (404, "unknown_topic"));
    assert_eq!(r.headers[CONTENT_TYPE], "application/json");
    let r = get(&api, "/v1/topics/plain/snapshot").await;
    assert_eq!((r.status, r.error_code().as_str()), (409, "not_compacted"));
    let r = get(&api, "/v1/topics/table/snapshot?isolation=dirty").await;
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad_query"));
    let r = get(&api, "/v1/topics/table/snapshot?encodnig=text").await;
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad_query"));
    let r = get(&api, "/v1/no/such/route").await;
    assert_eq!((r.status, r.error_code().as_str()), (404, "not_found"));
    let r = send(&api, "DELETE", "/v1/topics/table/snapshot", None).await;
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (405, "method_not_allowed")
    );

    // /metrics on the same listener, as metrics.listener serves it.
    let r = get(&api, "/metrics").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers[CONTENT_TYPE],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = std::str::from_utf8(&r.body).unwrap();
    assert!(text.contains("topic=\"table\""), "{text}");
    broker.shutdown().unwrap();
}

/// 50 records over 5 keys in a sealed segment of `name`-0.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_then_compact_now_and_follow_the_ticket() {
    let dir = tempfile::tempdir().unwrap();
    let clock = common::manual_clock();
    // The cleaner only runs when asked: its periodic check is far away.
    let broker = common::broker(dir.path())
        .sets(&["log.cleaner.threads=1", "log.cleaner.backoff.ms=3600000"])
        .clock(clock.clone())
        .start()
        .await;
    let b = broker.clone();
    let c = clock.clone();
    tokio::task::spawn_blocking(move || {
        let overrides = [("cleanup.policy", "compact"), ("segment.ms", "100")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        b.topics.create("table", 1, overrides, false).unwrap();
        filled(&b, &c, "table");
    })
    .await
    .unwrap();
    compacted_topic(&broker, "plain", 1, "delete").await;
    let api = serve_api(broker.clone()).await;

    let r = get(&api, "/v1/topics/table/compaction/dry-run").await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["topic"], "table");
    let p = &v["partitions"][0];
    assert_eq!(p["partition"], 0);
    assert_eq!(p["keys_in_dirty_range"], 5, "{p}");
    assert_eq!(p["figures"]["records_read"], 50, "{p}");
    assert_eq!(p["figures"]["records_removed"], 45, "{p}");
    let r = get(&api, "/v1/topics/table/compaction/dry-run?partition=7").await;
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (404, "unknown_topic_or_partition")
    );
    let r = get(&api, "/v1/topics/table/compaction/dry-run?partition=x").await;
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad_query"));
    // Nothing changed: the snapshot still reads 50 offsets... and 5 live keys.
    let r = get(&api, "/v1/topics/table/snapshot").await;
    assert_eq!(r.lines().len(), 6);

    let r = send(&api, "POST", "/v1/topics/plain/compaction", None).await;
    assert_eq!((r.status, r.error_code().as_str()), (409, "not_compacted"));
    let r = send(&api, "POST", "/v1/topics/table/compaction", None).await;
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let location = r.headers[LOCATION].to_str().unwrap().to_string();
    let ticket = &r.json()["tickets"][0];
    assert_eq!(ticket["url"], location.as_str());
    assert_eq!(location, format!("/v1/compaction/tickets/{}", ticket["id"]));

    let deadline = Instant::now() + Duration::from_secs(20);
    let done = loop {
        let r = get(&api, &location).await;
        assert_eq!(r.status, 200);
        let t = r.json();
        match t["state"].as_str().unwrap() {
            "queued" | "running" => {}
            _ => break t,
        }
        assert!(Instant::now() < deadline, "ticket not finished: {t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["pass"]["records_removed"], 45, "{done}");
    let r = get(&api, "/v1/compaction/tickets/987654").await;
    assert_eq!((r.status, r.error_code().as_str()), (404, "unknown_ticket"));
    let r = get(&api, "/v1/compaction/tickets/x").await;
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad_ticket_id"));
    broker.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_listener_serves_metrics_only_without_authentication() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let dir = tempfile::tempdir().unwrap();
    // Authentication of the HTTP API does not apply to metrics.listener.
    let broker = common::broker(dir.path())
        .sets(&["skiff.http.authentication=basic"])
        .start()
        .await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_stop, rx) = watch::channel(false);
    tokio::spawn(skiff_broker::http::server::serve(
        listener,
        "metrics.listener",
        skiff_broker::http::metrics_router(broker.clone()),
        None,
        rx,
    ));
    let api = Api { addr, _stop };

    let r = get(&api, "/metrics?x=1").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers[CONTENT_TYPE],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert!(std::str::from_utf8(&r.body)
        .unwrap()
        .contains("skiff_log_cleaner_backlog_partitions"));
    assert_eq!(get(&api, "/").await.status, 404);
    assert_eq!(get(&api, "/metricsx").await.status, 404);
    // The API's routes are not on this listener.
    assert_eq!(get(&api, "/v1/topics/t/snapshot").await.status, 404);
    assert_eq!(send(&api, "POST", "/metrics", None).await.status, 405);
    // A head over the limit is refused, not buffered.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let big = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(10_000));
    let _ = s.write_all(big.as_bytes()).await;
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw)).await;
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.starts_with("HTTP/1.1 431 "), "{raw}");
    broker.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_over_the_limit_is_429_and_a_gone_reader_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&["skiff.snapshot.max.concurrent=1"])
        .start()
        .await;
    compacted_topic(&broker, "big", 1, "compact").await;
    // ~20 MB of live keys: more than the socket buffers and the snapshot's channel hold, so
    // a reader that reads nothing keeps its snapshot running.
    let value = vec![b'v'; 1024];
    for batch in 0..250 {
        let keys: Vec<Vec<u8>> = (0..80)
            .map(|i| format!("key-{batch}-{i}").into_bytes())
            .collect();
        let records: Vec<(&[u8], Option<&[u8]>)> = keys
            .iter()
            .map(|k| (k.as_slice(), Some(value.as_slice())))
            .collect();
        produce(&broker, "big", 0, &records).await;
    }
    let api = serve_api(broker.clone()).await;
    let path = "/v1/topics/big/snapshot";

    let stream = TcpStream::connect(api.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let request = hyper::Request::builder()
        .uri(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let stalled = sender.send_request(request).await.unwrap();
    assert_eq!(stalled.status(), 200);

    let r = get(&api, path).await;
    assert_eq!((r.status, r.error_code().as_str()), (429, "busy"));

    // The stalled reader goes away: its snapshot is cancelled and the next one may run.
    drop(stalled);
    drop(sender);
    conn.abort();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = get(&api, path).await;
        if r.status == 200 {
            let lines = r.lines();
            assert_eq!(lines.len(), 20_001);
            assert_eq!(lines.last().unwrap()["end_offsets"]["0"], 20_000);
            break;
        }
        assert_eq!(r.status, 429);
        assert!(
            Instant::now() < deadline,
            "the stalled snapshot kept its slot"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    broker.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_lookup_answers_the_latest_value_and_json_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    let indexed = [
        ("cleanup.policy", "compact"),
        ("skiff.key.index.enable", "true"),
    ];
    topic_with(&broker, "users", 3, &indexed).await;
    compacted_topic(&broker, "unindexed", 1, "compact").await;
    compacted_topic(&broker, "plain", 1, "delete").await;
    // murmur2 puts "alice" and "bob" somewhere in 0..3; write each to its partition, as a
    // Java producer would, and one key with non-UTF-8 bytes to partition 1.
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

    let r = get_ready(&api, "/v1/topics/users/keys/alice").await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let hit = r.json();
    assert_eq!(
        (
            &hit["partition"],
            &hit["offset"],
            &hit["key"],
            &hit["value"]
        ),
        (
            &json!(part(b"alice")),
            &json!(1),
            &json!("alice"),
            &json!("v2")
        )
    );
    assert_eq!(hit["timestamp"], 1000);
    assert_eq!(hit["headers"][0]["key"], "h");
    // The latest record of bob is a tombstone; carol was never written.
    for key in ["bob", "carol"] {
        let r = get_ready(&api, &format!("/v1/topics/users/keys/{key}")).await;
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (404, "key_not_found"),
            "{key}"
        );
    }
    // A key in base64 (URL-safe, unpadded), with the partition given; the answer in base64.
    let r = get_ready(
        &api,
        "/v1/topics/users/keys/-_8?key_encoding=base64&partition=1&encoding=base64",
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        (&r.json()["key"], &r.json()["value"]),
        (&json!("+/8="), &json!("YmluYXJ5"))
    );
    // The wrong partition for a key is not found there.
    let other = (part(b"alice") + 1) % 3;
    let r = get_ready(
        &api,
        &format!("/v1/topics/users/keys/alice?partition={other}"),
    )
    .await;
    assert_eq!(r.status, 404);

    let r = get(&api, "/v1/topics/nope/keys/a").await;
    assert_eq!((r.status, r.error_code().as_str()), (404, "unknown_topic"));
    let r = get(&api, "/v1/topics/users/keys/a?partition=7").await;
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (404, "unknown_partition")
    );
    let r = get(&api, "/v1/topics/unindexed/keys/a").await;
    assert_eq!((r.status, r.error_code().as_str()), (409, "index_disabled"));
    let r = get(&api, "/v1/topics/plain/keys/a").await;
    assert_eq!((r.status, r.error_code().as_str()), (409, "not_compacted"));
    let r = get(&api, "/v1/topics/users/keys/a?partitioner=round_robin").await;
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad_query"));
    let r = get(&api, "/v1/topics/users/keys/%%%?key_encoding=base64").await;
    assert_eq!(r.status, 400);
    broker.shutdown().unwrap();
}
