//! Admin requests that Kafka refuses: Skiff's error codes and messages match Kafka 4.4's
//! (the differential suite tests/diff compares them against a live Kafka; these pin them
//! without one).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use skiff_broker::Broker;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

async fn start() -> (tempfile::TempDir, Arc<Broker>) {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    (dir, broker)
}

async fn send(broker: &Arc<Broker>, key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
    common::call(broker, key, version, body).await
}

fn topic(name: &str, partitions: i32, rf: i16) -> create_topics_request::CreatableTopic {
    create_topics_request::CreatableTopic::default()
        .with_name(TopicName(s(name)))
        .with_num_partitions(partitions)
        .with_replication_factor(rf)
}

async fn create(
    broker: &Arc<Broker>,
    topics: Vec<create_topics_request::CreatableTopic>,
) -> Vec<create_topics_response::CreatableTopicResult> {
    let body = RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(topics));
    match send(broker, ApiKey::CreateTopics, 7, body).await {
        ResponseKind::CreateTopics(r) => r.topics,
        other => panic!("unexpected {other:?}"),
    }
}

fn text(m: &Option<StrBytes>) -> Option<&str> {
    m.as_ref().map(|m| m.as_str())
}

#[tokio::test]
async fn create_topics_answers_like_kafka() {
    let (_dir, broker) = start().await;
    let long = "x".repeat(250);
    let cases = [
        ("bad name!".to_string(), 1, 1, 17, "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'".to_string()),
        (String::new(), 1, 1, 17, "Topic name is invalid: the empty string is not allowed".to_string()),
        ("..".to_string(), 1, 1, 17, "Topic name is invalid: '..' is not allowed".to_string()),
        (long.clone(), 1, 1, 17, format!("Topic name is invalid: the length of '{long}' is longer than the max allowed length 249")),
        ("p0".to_string(), 0, 1, 37, "Number of partitions was set to an invalid non-positive value.".to_string()),
        ("rf2".to_string(), 1, 2, 38, "Unable to replicate the partition 2 time(s): The target replication factor of 2 cannot be reached because only 1 broker(s) are registered or some brokers have all their log directories cordoned.".to_string()),
    ];
    for (name, partitions, rf, code, message) in cases {
        let r = create(&broker, vec![topic(&name, partitions, rf)]).await;
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].error_code, code, "{name}");
        assert_eq!(text(&r[0].error_message), Some(message.as_str()), "{name}");
    }

    // Success: no message at all (null, not "").
    let r = create(&broker, vec![topic("ok", -1, -1)]).await;
    assert_eq!((r[0].error_code, text(&r[0].error_message)), (0, None));

    // A name given twice: one INVALID_REQUEST entry after the others, nothing created.
    let r = create(
        &broker,
        vec![
            topic("twice", 1, 1),
            topic("other", 1, 1),
            topic("twice", 1, 1),
        ],
    )
    .await;
    let got: Vec<_> = r
        .iter()
        .map(|t| (t.name.0.as_str(), t.error_code, text(&t.error_message)))
        .collect();
    assert_eq!(
        got,
        vec![
            ("other", 0, None),
            ("twice", 42, Some("Duplicate topic name."))
        ]
    );
    assert!(broker.topics.get("twice").is_none());
}

#[tokio::test]
async fn create_partitions_and_delete_topics_answer_like_kafka() {
    let (_dir, broker) = start().await;
    create(&broker, vec![topic("t", 2, 1)]).await;
    let cases = [
        (
            "t",
            1,
            37,
            Some("The topic t currently has 2 partition(s); 1 would not be an increase."),
        ),
        ("t", 2, 37, Some("Topic already has 2 partition(s).")),
        ("nope", 3, 3, None),
        ("t", 3, 0, None),
    ];
    for (name, count, code, message) in cases {
        let body =
            RequestKind::CreatePartitions(CreatePartitionsRequest::default().with_topics(vec![
            create_partitions_request::CreatePartitionsTopic::default()
                .with_name(TopicName(s(name)))
                .with_count(count),
        ]));
        let ResponseKind::CreatePartitions(r) =
            send(&broker, ApiKey::CreatePartitions, 3, body).await
        else {
            panic!("not a CreatePartitions response")
        };
        assert_eq!(
            (r.results[0].error_code, text(&r.results[0].error_message)),
            (code, message),
            "{name} {count}"
        );
    }

    let body = RequestKind::DeleteTopics(
        DeleteTopicsRequest::default().with_topic_names(vec![TopicName(s("nope"))]),
    );
    let ResponseKind::DeleteTopics(r) = send(&broker, ApiKey::DeleteTopics, 5, body).await else {
        panic!("not a DeleteTopics response")
    };
    assert_eq!(r.responses[0].error_code, 3);
    assert_eq!(
        text(&r.responses[0].error_message),
        Some("This server does not host this topic-partition.")
    );
}

async fn alter(
    broker: &Arc<Broker>,
    rtype: i8,
    name: &str,
    key: &str,
    value: &str,
) -> (i16, Option<String>) {
    let body = RequestKind::AlterConfigs(
        AlterConfigsRequest::default()
            .with_validate_only(true)
            .with_resources(vec![alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(rtype)
                .with_resource_name(s(name))
                .with_configs(vec![alter_configs_request::AlterableConfig::default()
                    .with_name(s(key))
                    .with_value(Some(s(value)))])]),
    );
    let ResponseKind::AlterConfigs(r) = send(broker, ApiKey::AlterConfigs, 2, body).await else {
        panic!("not an AlterConfigs response")
    };
    let x = &r.responses[0];
    (
        x.error_code,
        x.error_message.as_ref().map(|m| m.to_string()),
    )
}

async fn incremental(
    broker: &Arc<Broker>,
    name: &str,
    op: i8,
    key: &str,
    value: Option<&str>,
) -> (i16, Option<String>) {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let body = RequestKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s(name))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(s(key))
                    .with_config_operation(op)
                    .with_value(value.map(s))]),
        ]),
    );
    let ResponseKind::IncrementalAlterConfigs(r) =
        send(broker, ApiKey::IncrementalAlterConfigs, 1, body).await
    else {
        panic!("not an IncrementalAlterConfigs response")
    };
    let x = &r.responses[0];
    (
        x.error_code,
        x.error_message.as_ref().map(|m| m.to_string()),
    )
}

#[tokio::test]
async fn alter_configs_answer_like_kafka() {
    let (_dir, broker) = start().await;
    create(&broker, vec![topic("t", 1, 1)]).await;
    let unknown = (3, Some("The topic 'nope' does not exist.".to_string()));
    assert_eq!(
        alter(&broker, 2, "nope", "retention.ms", "1").await,
        unknown
    );
    assert_eq!(
        incremental(&broker, "nope", 0, "retention.ms", Some("1")).await,
        unknown
    );
    assert_eq!(
        alter(&broker, 4, "1", "log.retention.ms", "abc").await,
        (
            42,
            Some(
                "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"
                    .to_string()
            )
        )
    );
    assert_eq!(
        alter(&broker, 4, "7", "log.cleaner.threads", "2").await,
        (
            42,
            Some("Unexpected broker id, expected 1, but received 7".to_string())
        )
    );
    // A well-formed update of a dynamic broker config passes (validate_only here); a static
    // key is refused with Kafka's text.
    assert_eq!(
        alter(&broker, 4, "1", "log.retention.ms", "5").await,
        (0, None)
    );
    assert_eq!(
        alter(&broker, 4, "1", "log.dirs", "/x").await,
        (
            42,
            Some("Cannot update these configs dynamically: [log.dirs]".to_string())
        )
    );

    assert_eq!(
        incremental(&broker, "t", 2, "retention.ms", Some("5")).await,
        (
            40,
            Some("Can't APPEND to key retention.ms because its type is not LIST.".to_string())
        )
    );
    assert_eq!(
        incremental(&broker, "t", 1, "no.such.config", None).await,
        (0, None)
    );
    assert_eq!(
        incremental(&broker, "t", 9, "retention.ms", Some("5"))
            .await
            .0,
        42
    );
}
