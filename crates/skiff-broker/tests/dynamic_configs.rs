//! Dynamic broker configs (per broker and cluster default) and group configs through
//! DescribeConfigs / AlterConfigs / IncrementalAlterConfigs, driven through `dispatch`:
//! applied live, persisted across a restart, reported with Kafka's sources, refused with
//! Kafka's errors; and the consumer-group coordinator honouring a group's configs.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::Broker;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const GROUP: i8 = 32;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A broker with one offsets partition, `sets` applied last, its group coordinator loaded.
fn configs_broker(dir: &std::path::Path, sets: &[&str]) -> common::TestBroker {
    common::broker(dir)
        .sets(&["offsets.topic.num.partitions=1"])
        .sets(sets)
        .wait_groups()
}

async fn start(dir: &std::path::Path, sets: &[&str]) -> Arc<Broker> {
    configs_broker(dir, sets).start().await
}

use common::stop;

/// IncrementalAlterConfigs of one resource; (error code, message).
async fn incremental(
    broker: &Arc<Broker>,
    rtype: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let body = RequestKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsRequest::default()
            .with_validate_only(validate_only)
            .with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(rtype)
                .with_resource_name(s(name))
                .with_configs(
                    ops.iter()
                        .map(|(k, op, v)| {
                            AlterableConfig::default()
                                .with_name(s(k))
                                .with_config_operation(*op)
                                .with_value(v.map(s))
                        })
                        .collect(),
                )]),
    );
    let ResponseKind::IncrementalAlterConfigs(r) =
        common::call(broker, ApiKey::IncrementalAlterConfigs, 1, body).await
    else {
        panic!("not an IncrementalAlterConfigs response")
    };
    let x = &r.responses[0];
    (
        x.error_code,
        x.error_message.as_ref().map(|m| m.to_string()),
    )
}

async fn set(
    broker: &Arc<Broker>,
    rtype: i8,
    name: &str,
    key: &str,
    value: &str,
) -> (i16, Option<String>) {
    incremental(broker, rtype, name, &[(key, SET, Some(value))], false).await
}

/// Legacy AlterConfigs of one resource (replaces its whole set).
async fn replace(broker: &Arc<Broker>, rtype: i8, name: &str, kv: &[(&str, &str)]) -> i16 {
    use alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let body = RequestKind::AlterConfigs(AlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(rtype)
            .with_resource_name(s(name))
            .with_configs(
                kv.iter()
                    .map(|(k, v)| AlterableConfig::default().with_name(s(k)).with_value(Some(s(v))))
                    .collect(),
            ),
    ]));
    let ResponseKind::AlterConfigs(r) = common::call(broker, ApiKey::AlterConfigs, 2, body).await
    else {
        panic!("not an AlterConfigs response")
    };
    r.responses[0].error_code
}

/// DescribeConfigs (v4, with synonyms) of one resource: name -> (value, source, read-only,
/// synonyms as (name, value, source)).
#[allow(clippy::type_complexity)]
async fn describe(
    broker: &Arc<Broker>,
    rtype: i8,
    name: &str,
) -> (
    i16,
    BTreeMap<String, (Option<String>, i8, bool, Vec<(String, Option<String>, i8)>)>,
) {
    use describe_configs_request::DescribeConfigsResource;
    let body = RequestKind::DescribeConfigs(
        DescribeConfigsRequest::default()
            .with_include_synonyms(true)
            .with_resources(vec![DescribeConfigsResource::default()
                .with_resource_type(rtype)
                .with_resource_name(s(name))
                .with_configuration_keys(None)]),
    );
    let ResponseKind::DescribeConfigs(r) =
        common::call(broker, ApiKey::DescribeConfigs, 4, body).await
    else {
        panic!("not a DescribeConfigs response")
    };
    let res = &r.results[0];
    let map = res
        .configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                (
                    c.value.as_ref().map(|v| v.to_string()),
                    c.config_source,
                    c.read_only,
                    c.synonyms
                        .iter()
                        .map(|y| {
                            (
                                y.name.to_string(),
                                y.value.as_ref().map(|v| v.to_string()),
                                y.source,
                            )
                        })
                        .collect(),
                ),
            )
        })
        .collect();
    (res.error_code, map)
}

fn retention_bytes(broker: &Arc<Broker>, topic: &str) -> i64 {
    broker.topics.get(topic).unwrap().partitions()[0]
        .log
        .config()
        .retention_bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_dynamic_configs_apply_live_persist_and_describe_their_source() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), &["log.retention.bytes=1000"]).await;
    b.topics.create("plain", 1, BTreeMap::new(), false).unwrap();
    let pinned = BTreeMap::from([("retention.bytes".to_string(), "7".to_string())]);
    b.topics.create("pinned", 1, pinned, false).unwrap();
    assert_eq!(retention_bytes(&b, "plain"), 1000);
    assert_eq!(b.cleaner_thread_count(), 1);

    // Cluster default: topics without an override follow it at once.
    assert_eq!(
        set(&b, BROKER, "", "log.retention.bytes", "2000").await,
        (0, None)
    );
    assert_eq!(retention_bytes(&b, "plain"), 2000);
    assert_eq!(retention_bytes(&b, "pinned"), 7);
    // Per broker beats the cluster default.
    assert_eq!(
        set(&b, BROKER, "1", "log.retention.bytes", "3000").await,
        (0, None)
    );
    assert_eq!(retention_bytes(&b, "plain"), 3000);

    // The cleaner pool is resized live; Kafka's bound: at most double.
    assert_eq!(
        set(&b, BROKER, "1", "log.cleaner.threads", "2").await,
        (0, None)
    );
    assert_eq!(b.cleaner_thread_count(), 2);
    let (code, msg) = set(&b, BROKER, "1", "log.cleaner.threads", "5").await;
    assert_eq!(code, 42);
    assert!(msg
        .unwrap()
        .contains("cannot be increased to more than double the current value 2"));
    assert_eq!(
        set(
            &b,
            BROKER,
            "",
            "log.cleaner.io.max.bytes.per.second",
            "1048576"
        )
        .await,
        (0, None)
    );
    assert_eq!(
        b.live_config().log_cleaner_io_max_bytes_per_second,
        1_048_576.0
    );
    assert_eq!(b.cleaner_thread_count(), 2);

    // Sources and synonyms, Kafka's order; dynamic keys are not read-only.
    let (code, d) = describe(&b, BROKER, "1").await;
    assert_eq!(code, 0);
    let (value, source, read_only, synonyms) = &d["log.retention.bytes"];
    assert_eq!(
        (value.as_deref(), *source, *read_only),
        (Some("3000"), 2, false)
    );
    assert_eq!(
        synonyms
            .iter()
            .map(|(_, v, src)| (v.clone().unwrap(), *src))
            .collect::<Vec<_>>(),
        vec![
            ("3000".to_string(), 2),
            ("2000".to_string(), 3),
            ("1000".to_string(), 4),
            ("-1".to_string(), 5)
        ]
    );
    assert_eq!(d["log.cleaner.threads"].0.as_deref(), Some("2"));
    assert!(d["log.retention.hours"].2, "static keys stay read-only");
    // The cluster-default resource lists only the dynamic defaults.
    let (_, d) = describe(&b, BROKER, "").await;
    assert_eq!(
        d.keys().cloned().collect::<Vec<_>>(),
        vec!["log.cleaner.io.max.bytes.per.second", "log.retention.bytes"]
    );
    assert_eq!(d["log.retention.bytes"].1, 3);
    // A topic reports where its inherited value comes from.
    let (_, d) = describe(&b, TOPIC, "plain").await;
    assert_eq!(
        (d["retention.bytes"].0.as_deref(), d["retention.bytes"].1),
        (Some("3000"), 2)
    );

    // DELETE falls back to the next layer.
    assert_eq!(
        incremental(
            &b,
            BROKER,
            "1",
            &[("log.retention.bytes", DELETE, None)],
            false
        )
        .await,
        (0, None)
    );
    assert_eq!(retention_bytes(&b, "plain"), 2000);

    // Persisted: a restart keeps both layers.
    stop(b).await;
    let b = start(dir.path(), &["log.retention.bytes=1000"]).await;
    assert_eq!(retention_bytes(&b, "plain"), 2000);
    assert_eq!(b.cleaner_thread_count(), 2);
    let (_, d) = describe(&b, BROKER, "1").await;
    assert_eq!(
        (
            d["log.cleaner.threads"].0.as_deref(),
            d["log.cleaner.threads"].1
        ),
        (Some("2"), 2)
    );

    // Legacy AlterConfigs replaces the per-broker set: log.cleaner.threads goes back to 1.
    assert_eq!(
        replace(&b, BROKER, "1", &[("message.max.bytes", "2000000")]).await,
        0
    );
    assert_eq!(b.cleaner_thread_count(), 1);
    assert_eq!(
        b.topics.get("plain").unwrap().partitions()[0]
            .log
            .config()
            .max_message_bytes,
        2_000_000
    );
    stop(b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_dynamic_configs_refuse_like_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), &[]).await;
    b.topics.create("t", 1, BTreeMap::new(), false).unwrap();
    assert_eq!(
        set(&b, BROKER, "1", "log.retention.hours", "10").await,
        (
            42,
            Some("Cannot update these configs dynamically: [log.retention.hours]".into())
        )
    );
    assert_eq!(
        set(&b, BROKER, "1", "log.segment.bytes", "100").await,
        (
            42,
            Some("Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576".into())
        )
    );
    let (code, msg) = set(&b, BROKER, "1", "num.io.threads", "9").await;
    assert_eq!(code, 42);
    assert!(msg.unwrap().contains("num.io.threads"));
    assert_eq!(set(&b, BROKER, "1", "max.connections", "9").await.0, 42);
    assert_eq!(
        set(&b, BROKER, "1", "foo.bar", "1").await,
        (40, Some("Unknown broker config name: foo.bar".into()))
    );
    assert_eq!(
        incremental(
            &b,
            BROKER,
            "1",
            &[("log.cleaner.backoff.ms", APPEND, Some("1"))],
            false
        )
        .await,
        (
            40,
            Some(
                "Config value append is not allowed for config key: log.cleaner.backoff.ms".into()
            )
        )
    );
    assert_eq!(set(&b, BROKER, "1", "log.cleaner.threads", "0").await.0, 42);
    // APPEND on a list key works from the value in force.
    assert_eq!(
        incremental(
            &b,
            BROKER,
            "1",
            &[("log.cleanup.policy", APPEND, Some("compact"))],
            false
        )
        .await,
        (0, None)
    );
    let (_, d) = describe(&b, TOPIC, "t").await;
    assert_eq!(d["cleanup.policy"].0.as_deref(), Some("delete,compact"));
    // validate_only changes nothing.
    assert_eq!(
        incremental(
            &b,
            BROKER,
            "",
            &[("log.retention.bytes", SET, Some("55"))],
            true
        )
        .await,
        (0, None)
    );
    assert_eq!(retention_bytes(&b, "t"), -1);
    assert!(
        !dir.path().join("dynamic-configs.json").exists() || {
            let text = std::fs::read_to_string(dir.path().join("dynamic-configs.json")).unwrap();
            !text.contains("\"55\"")
        }
    );
    stop(b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_configs_describe_alter_refuse_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), &[]).await;
    let (code, d) = describe(&b, GROUP, "g").await;
    assert_eq!(code, 0);
    assert_eq!(d.len(), 21);
    let (value, source, _, synonyms) = &d["consumer.session.timeout.ms"];
    assert_eq!((value.as_deref(), *source), (Some("45000"), 5));
    assert_eq!(
        synonyms,
        &vec![(
            "group.consumer.session.timeout.ms".to_string(),
            Some("45000".to_string()),
            5
        )]
    );

    assert_eq!(
        set(&b, GROUP, "g", "consumer.session.timeout.ms", "50000").await,
        (0, None)
    );
    assert_eq!(
        set(&b, GROUP, "g", "consumer.session.timeout.ms", "30000").await,
        (
            40,
            Some(
                "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.".into()
            )
        )
    );
    assert_eq!(
        set(&b, GROUP, "g", "consumer.heartbeat.interval.ms", "16000").await,
        (
            40,
            Some(
                "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."
                    .into()
            )
        )
    );
    assert_eq!(
        set(&b, GROUP, "g", "foo.bar", "1").await,
        (40, Some("Unknown group config name: foo.bar".into()))
    );
    // Share group configs are checked against the broker's group.share.* bounds.
    assert_eq!(
        set(&b, GROUP, "g", "share.record.lock.duration.ms", "5000").await,
        (
            40,
            Some(
                "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
                    .into()
            )
        )
    );
    // Streams group configs: checked against the group.streams.* bounds; the keys Skiff
    // would not act on are refused.
    assert_eq!(
        set(&b, GROUP, "g", "streams.num.standby.replicas", "3").await,
        (
            40,
            Some("streams.num.standby.replicas must be less than or equal to 2".into())
        )
    );
    assert_eq!(
        set(&b, GROUP, "g", "streams.num.warmup.replicas", "21").await,
        (
            40,
            Some("streams.num.warmup.replicas must be less than or equal to 20".into())
        )
    );
    assert_eq!(
        set(&b, GROUP, "g", "streams.assignor.name", "sticky")
            .await
            .0,
        40
    );
    assert_eq!(
        incremental(
            &b,
            GROUP,
            "g",
            &[("consumer.heartbeat.interval.ms", SET, Some("6000"))],
            true
        )
        .await,
        (0, None)
    );

    let (_, d) = describe(&b, GROUP, "g").await;
    let (value, source, _, synonyms) = &d["consumer.session.timeout.ms"];
    assert_eq!((value.as_deref(), *source), (Some("50000"), 8));
    assert_eq!(synonyms.len(), 2);
    assert_eq!(
        d["consumer.heartbeat.interval.ms"].0.as_deref(),
        Some("5000")
    );

    stop(b).await;
    let b = start(dir.path(), &[]).await;
    let (_, d) = describe(&b, GROUP, "g").await;
    assert_eq!(d["consumer.session.timeout.ms"].0.as_deref(), Some("50000"));
    // Legacy AlterConfigs replaces the group's set.
    assert_eq!(
        replace(
            &b,
            GROUP,
            "g",
            &[("consumer.heartbeat.interval.ms", "6000")]
        )
        .await,
        0
    );
    let (_, d) = describe(&b, GROUP, "g").await;
    assert_eq!(d["consumer.session.timeout.ms"].1, 5);
    assert_eq!(d["consumer.heartbeat.interval.ms"].1, 8);
    stop(b).await;
}

fn heartbeat(group: &str, member: &str, epoch: i32) -> RequestKind {
    RequestKind::ConsumerGroupHeartbeat(
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_member_id(s(member))
            .with_member_epoch(epoch)
            .with_rebalance_timeout_ms(10_000)
            .with_subscribed_topic_names((epoch == 0).then(|| vec![TopicName(s("t"))]))
            .with_topic_partitions(Some(Vec::new())),
    )
}

async fn beat(
    b: &Arc<Broker>,
    group: &str,
    member: &str,
    epoch: i32,
) -> ConsumerGroupHeartbeatResponse {
    let ResponseKind::ConsumerGroupHeartbeat(r) = common::call(
        b,
        ApiKey::ConsumerGroupHeartbeat,
        1,
        heartbeat(group, member, epoch),
    )
    .await
    else {
        panic!("not a ConsumerGroupHeartbeat response")
    };
    r
}

/// A group's state as ListGroups (v5) reports it.
async fn group_state(b: &Arc<Broker>, group: &str) -> String {
    let ResponseKind::ListGroups(r) = common::call(
        b,
        ApiKey::ListGroups,
        5,
        RequestKind::ListGroups(ListGroupsRequest::default()),
    )
    .await
    else {
        panic!("not a ListGroups response")
    };
    let g = r.groups.iter().find(|g| g.group_id.0.as_str() == group);
    g.unwrap().group_state.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_honours_group_session_timeout_and_heartbeat_interval() {
    let dir = tempfile::tempdir().unwrap();
    // Session deadlines are judged on the broker's clock; a test asks for the coordinator's
    // next tick instead of waiting for it.
    let clock = common::manual_clock();
    // Bounds low enough for a short test; the broker's own session timeout stays long.
    let b = configs_broker(
        dir.path(),
        &[
            "group.consumer.min.session.timeout.ms=200",
            "group.consumer.min.heartbeat.interval.ms=100",
        ],
    )
    .clock(clock.clone())
    .start()
    .await;
    b.topics.create("t", 1, BTreeMap::new(), false).unwrap();
    assert_eq!(
        set(&b, GROUP, "fast", "consumer.session.timeout.ms", "300").await,
        (0, None)
    );
    assert_eq!(
        set(&b, GROUP, "fast", "consumer.heartbeat.interval.ms", "150").await,
        (0, None)
    );

    let fast = beat(&b, "fast", "m-fast", 0).await;
    assert_eq!(fast.error_code, 0, "{:?}", fast.error_message);
    assert_eq!(fast.heartbeat_interval_ms, 150);
    let slow = beat(&b, "slow", "m-slow", 0).await;
    assert_eq!(slow.error_code, 0, "{:?}", slow.error_message);
    assert_eq!(slow.heartbeat_interval_ms, 5000);

    // Silent for longer than the group's 300 ms: the member is expired at the coordinator's
    // next tick (run at once with `tick_now`), which empties its group; the other group's member, under the broker's 45 s,
    // is not.
    assert_ne!(group_state(&b, "fast").await, "Empty");
    clock.advance(1_000);
    let broker = b.clone();
    tokio::task::spawn_blocking(move || broker.coordinator.tick_now())
        .await
        .unwrap();
    assert_eq!(group_state(&b, "fast").await, "Empty");
    assert_ne!(group_state(&b, "slow").await, "Empty");
    let again = beat(&b, "fast", "m-fast", fast.member_epoch).await;
    assert_eq!(
        again.error_code, 25,
        "UNKNOWN_MEMBER_ID expected: {:?}",
        again.error_message
    );
    let again = beat(&b, "slow", "m-slow", slow.member_epoch).await;
    assert_eq!(again.error_code, 0, "{:?}", again.error_message);
    stop(b).await;
}
