//! ShareFetch and ShareAcknowledge under Kafka's StandardAuthorizer: GROUP READ on the share
//! group for the whole request, then TOPIC READ per topic, as Kafka 4.3's KafkaApis checks.
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use acl_support::*;
use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckBatch,
};
use kafka_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;

fn share_fetch(topic_id: uuid::Uuid) -> RequestKind {
    RequestKind::ShareFetch(
        ShareFetchRequest::default()
            .with_group_id(Some(GroupId(s("g"))))
            .with_member_id(Some(s("m1")))
            .with_share_session_epoch(0)
            .with_max_bytes(1 << 20)
            .with_max_records(10)
            .with_topics(vec![FetchTopic::default()
                .with_topic_id(topic_id)
                .with_partitions(vec![
                    FetchPartition::default().with_partition_index(0)
                ])]),
    )
}

fn share_ack(topic_id: uuid::Uuid) -> RequestKind {
    RequestKind::ShareAcknowledge(
        ShareAcknowledgeRequest::default()
            .with_group_id(Some(GroupId(s("g"))))
            .with_member_id(Some(s("m1")))
            .with_share_session_epoch(1)
            .with_topics(vec![AcknowledgeTopic::default()
                .with_topic_id(topic_id)
                .with_partitions(vec![AcknowledgePartition::default()
                    .with_partition_index(0)
                    .with_acknowledgement_batches(vec![AckBatch::default()
                        .with_first_offset(0)
                        .with_last_offset(0)
                        .with_acknowledge_types(vec![1])])])]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_requests_need_group_read_then_topic_read() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    common::create_topic(&broker, "t", 1).await;
    let id = broker.topics.get("t").unwrap().id;
    // No ACL: the whole request is GROUP_AUTHORIZATION_FAILED.
    match send_as(&broker, "alice", ApiKey::ShareFetch, 1, share_fetch(id)).await {
        ResponseKind::ShareFetch(r) => assert_eq!(r.error_code, GROUP_DENIED),
        other => panic!("{other:?}"),
    }
    match send_as(&broker, "alice", ApiKey::ShareAcknowledge, 1, share_ack(id)).await {
        ResponseKind::ShareAcknowledge(r) => assert_eq!(r.error_code, GROUP_DENIED),
        other => panic!("{other:?}"),
    }
    // GROUP READ only: the partition is TOPIC_AUTHORIZATION_FAILED.
    let group_read = creation(GROUP, "g", LITERAL, "User:alice", READ, ALLOW);
    assert_eq!(
        create_acls(&broker, "admin", vec![group_read]).await,
        vec![0]
    );
    match send_as(&broker, "alice", ApiKey::ShareFetch, 1, share_fetch(id)).await {
        ResponseKind::ShareFetch(r) => {
            assert_eq!(r.error_code, 0);
            assert_eq!(r.responses[0].partitions[0].error_code, TOPIC_DENIED);
        }
        other => panic!("{other:?}"),
    }
    match send_as(&broker, "alice", ApiKey::ShareAcknowledge, 1, share_ack(id)).await {
        ResponseKind::ShareAcknowledge(r) => {
            assert_eq!(r.error_code, 0);
            assert_eq!(r.responses[0].partitions[0].error_code, TOPIC_DENIED);
        }
        other => panic!("{other:?}"),
    }
    // And TOPIC READ: the fetch goes through.
    let topic_read = creation(TOPIC, "t", LITERAL, "User:alice", READ, ALLOW);
    assert_eq!(
        create_acls(&broker, "admin", vec![topic_read]).await,
        vec![0]
    );
    match send_as(&broker, "alice", ApiKey::ShareFetch, 1, share_fetch(id)).await {
        ResponseKind::ShareFetch(r) => {
            assert_eq!(r.error_code, 0);
            assert_eq!(r.responses[0].partitions[0].error_code, 0);
        }
        other => panic!("{other:?}"),
    }
    common::stop(broker).await;
}
