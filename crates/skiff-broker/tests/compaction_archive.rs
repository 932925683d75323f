//! History beside state (docs/compaction.md §5.11) in a running broker: the archive topic is
//! set through IncrementalAlterConfigs, a partition is not cleaned while the archive topic is
//! missing (the status and /metrics say why), and once it exists every removed record is in
//! it, with the headers naming its source. Manual clock; every wait is bounded.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::Broker;
use skiff_cleaner::CompactionStatus;
use skiff_log::{AppendValidation, Clock, ManualClock};
use skiff_records::{records, BatchBuilder, Batches, Compression};

const BOUND: Duration = Duration::from_secs(20);
const TOPIC: i8 = 2;
const SET: i8 = 0;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn configs(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// IncrementalAlterConfigs SET of one topic config; the error code.
async fn set(broker: &Arc<Broker>, topic: &str, key: &str, value: &str) -> i16 {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let body = RequestKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(TOPIC)
                .with_resource_name(s(topic))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(s(key))
                    .with_config_operation(SET)
                    .with_value(Some(s(value)))]),
        ]),
    );
    let ResponseKind::IncrementalAlterConfigs(r) =
        common::call(broker, ApiKey::IncrementalAlterConfigs, 1, body).await
    else {
        panic!("not an IncrementalAlterConfigs response")
    };
    r.responses[0].error_code
}

/// 50 records over 5 keys in each partition of `topic`, then a roll.
fn fill(broker: &Broker, clock: &ManualClock, topic: &str, partitions: i32) {
    let now = clock.now_ms();
    for p in 0..partitions {
        let log = broker
            .topics
            .get(topic)
            .unwrap()
            .partition(p)
            .unwrap()
            .log
            .clone();
        for i in 0..50 {
            let mut b = BatchBuilder::new(0, Compression::None);
            b.push(now, Some(format!("k{}", i % 5).as_bytes()), Some(b"v"), &[]);
            log.append(&b.build().unwrap(), 0, &AppendValidation { now_ms: now })
                .unwrap();
        }
    }
    clock.advance(101);
    for p in 0..partitions {
        let t = broker.topics.get(topic).unwrap();
        assert!(t.partition(p).unwrap().log.roll_if_due().unwrap());
    }
}

async fn wait_for(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    what: &str,
    done: impl Fn(&CompactionStatus) -> bool,
) -> CompactionStatus {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(s) = broker
            .compaction_status(topic, partition)
            .filter(|s| done(s))
        {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}-{partition}: {what} not reached: {:?}",
            broker.compaction_statuses()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_records_reach_the_archive_topic_once_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    let clock = common::manual_clock();
    let broker = common::broker(dir.path())
        .sets(&["log.cleaner.threads=1", "log.cleaner.backoff.ms=50"])
        .clock(clock.clone())
        .start()
        .await;
    let b = broker.clone();
    tokio::task::spawn_blocking(move || {
        b.topics
            .create(
                "orders",
                2,
                configs(&[("cleanup.policy", "compact"), ("segment.ms", "100")]),
                false,
            )
            .unwrap();
    })
    .await
    .unwrap();
    // INVALID_CONFIG for a name that cannot be a topic.
    assert_eq!(
        set(
            &broker,
            "orders",
            "skiff.compaction.archive.topic",
            "bad name!"
        )
        .await,
        40
    );
    assert_eq!(
        set(
            &broker,
            "orders",
            "skiff.compaction.archive.topic",
            "orders-history"
        )
        .await,
        0
    );
    fill(&broker, &clock, "orders", 2);

    let blocked = wait_for(&broker, "orders", 0, "blocked", |s| {
        s.archive_blocked.is_some()
    })
    .await;
    assert!(blocked.archive_blocked.unwrap().contains("does not exist"));
    assert_eq!(blocked.last_pass, None);
    let b = broker.clone();
    let metrics = tokio::task::spawn_blocking(move || skiff_broker::metrics::render::render(&b))
        .await
        .unwrap();
    let line = "skiff_compaction_uncleanable{topic=\"orders\",partition=\"0\",reason=\"archive_unavailable\"} 1";
    assert!(
        metrics.lines().any(|l| l == line),
        "missing {line} in\n{metrics}"
    );

    let b = broker.clone();
    tokio::task::spawn_blocking(move || {
        b.topics
            .create(
                "orders-history",
                1,
                configs(&[("retention.ms", "-1")]),
                false,
            )
            .unwrap();
    })
    .await
    .unwrap();
    for p in 0..2 {
        let s = wait_for(&broker, "orders", p, "cleaned", |s| s.last_pass.is_some()).await;
        assert_eq!(s.archive_blocked, None);
        assert_eq!(
            s.last_pass.unwrap().records_archived,
            45,
            "50 records, 5 keys"
        );
    }
    // Both source partitions share the one archive partition; headers tell them apart.
    let log = broker
        .topics
        .get("orders-history")
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .clone();
    let info = log.read(0, 1 << 20, true).unwrap();
    let mut per_source: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for item in Batches::new(&info.records) {
        let (_, bytes) = item.unwrap();
        for r in records(bytes, 1 << 20).unwrap() {
            let get = |n: &str| {
                let v = r.headers.iter().find(|(k, _)| k.as_ref() == n.as_bytes());
                String::from_utf8(v.unwrap().1.clone().unwrap().to_vec()).unwrap()
            };
            assert_eq!(get("skiff.source.topic"), "orders");
            assert_eq!(get("skiff.archive.reason"), "superseded");
            per_source
                .entry(get("skiff.source.partition"))
                .or_default()
                .push(get("skiff.source.offset").parse().unwrap());
        }
    }
    assert_eq!(per_source.len(), 2);
    for offsets in per_source.values() {
        assert_eq!(offsets, &(0..45).collect::<Vec<i64>>());
    }

    let b = broker.clone();
    tokio::time::timeout(BOUND, tokio::task::spawn_blocking(move || b.shutdown()))
        .await
        .expect("shutdown hangs")
        .unwrap()
        .unwrap();
}
