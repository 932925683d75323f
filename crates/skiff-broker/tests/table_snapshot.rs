//! Table snapshots through the broker (`skiff_broker::table_snapshot`, docs/snapshots.md):
//! the NDJSON lines of a two-partition compacted topic, the end offsets line, text and base64
//! encodings, invalid UTF-8, the concurrency bound and the refusals.
#![allow(clippy::unwrap_used)]

mod common;

use common::tables::{compacted_topic, produce};

use std::sync::Arc;

use serde_json::Value;
use skiff_broker::table_snapshot::{
    Encoding, Isolation, SnapshotRequest, SnapshotStartError, SnapshotStream, TableSnapshots,
};
use skiff_broker::Broker;

async fn collect(mut stream: SnapshotStream) -> Vec<Value> {
    let mut text = Vec::new();
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk.unwrap();
        assert!(chunk.ends_with(b"\n"), "chunks hold whole lines");
        text.extend_from_slice(&chunk);
    }
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn request(topic: &str, encoding: Encoding) -> SnapshotRequest {
    SnapshotRequest {
        topic: topic.to_string(),
        isolation: Isolation::ReadCommitted,
        encoding,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_per_live_key_then_the_end_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    compacted_topic(&broker, "table", 2, "compact").await;
    produce(
        &broker,
        "table",
        0,
        &[(b"a", Some(b"1")), (b"b", Some(b"1"))],
    )
    .await;
    produce(&broker, "table", 0, &[(b"a", Some(b"2")), (b"b", None)]).await;
    produce(
        &broker,
        "table",
        1,
        &[(b"\xfe", Some(b"bin\x80")), (b"c", Some(b"x"))],
    )
    .await;
    let snapshots = TableSnapshots::new(&broker.config);
    let stream = snapshots
        .start(&broker, request("table", Encoding::Text))
        .unwrap();
    assert_eq!(stream.end_offsets, vec![(0, 4), (1, 2)]);
    let lines = collect(stream).await;
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(
        lines[0],
        serde_json::json!({"partition":0,"offset":2,"timestamp":1000,"key":"a","value":"2",
            "headers":[{"key":"h","value":"/w==","value_encoding":"base64"}]})
    );
    // Invalid UTF-8 under text encoding: base64, flagged.
    assert_eq!(lines[1]["partition"], 1);
    assert_eq!(lines[1]["key"], "/g==");
    assert_eq!(lines[1]["key_encoding"], "base64");
    assert_eq!(lines[1]["value"], "YmlugA==");
    assert_eq!(lines[1]["value_encoding"], "base64");
    assert_eq!(lines[2]["key"], "c");
    assert!(lines[2].get("key_encoding").is_none());
    assert_eq!(lines[3], serde_json::json!({"end_offsets":{"0":4,"1":2}}));

    // Base64 everywhere, never flagged.
    let lines = collect(
        snapshots
            .start(&broker, request("table", Encoding::Base64))
            .unwrap(),
    )
    .await;
    assert_eq!(lines[0]["key"], "YQ==");
    assert_eq!(lines[0]["value"], "Mg==");
    assert!(lines[0].get("key_encoding").is_none());
    broker.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_the_concurrency_bound() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&[
            "skiff.snapshot.max.concurrent=1",
            "skiff.snapshot.memory.bytes=4096",
        ])
        .start()
        .await;
    compacted_topic(&broker, "table", 1, "compact,delete").await;
    compacted_topic(&broker, "plain", 1, "delete").await;
    // Enough lines to fill the channel, so the first snapshot is still running.
    for i in 0..200 {
        let k = format!("key-{i}");
        let v = vec![b'v'; 4000];
        produce(&broker, "table", 0, &[(k.as_bytes(), Some(&v))]).await;
    }
    let snapshots = TableSnapshots::new(&broker.config);
    assert!(matches!(
        snapshots.start(&broker, request("nope", Encoding::Text)),
        Err(SnapshotStartError::UnknownTopic(_))
    ));
    assert!(matches!(
        snapshots.start(&broker, request("plain", Encoding::Text)),
        Err(SnapshotStartError::NotCompacted(_))
    ));
    let first = snapshots
        .start(&broker, request("table", Encoding::Text))
        .unwrap();
    assert!(matches!(
        snapshots.start(&broker, request("table", Encoding::Text)),
        Err(SnapshotStartError::Busy(1))
    ));
    // A 4 KiB map holds ~75 keys: several slices, every key once.
    let lines = collect(first).await;
    assert_eq!(lines.len(), 201);
    let keys: std::collections::BTreeSet<&str> = lines[..200]
        .iter()
        .map(|l| l["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 200);
    // The permit is back once the producer thread ends; dropping a running stream cancels
    // its producer, which gives the permit back too.
    let running = start_when_free(&snapshots, &broker).await;
    drop(running);
    let again = start_when_free(&snapshots, &broker).await;
    assert_eq!(collect(again).await.len(), 201);
    broker.shutdown().unwrap();
}

/// Starts a snapshot of `table`, waiting (bounded) for a permit.
async fn start_when_free(snapshots: &TableSnapshots, broker: &Arc<Broker>) -> SnapshotStream {
    for _ in 0..2000 {
        match snapshots.start(broker, request("table", Encoding::Text)) {
            Ok(s) => return s,
            Err(SnapshotStartError::Busy(_)) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the snapshot permit never came back");
}
