//! Describe-, Alter- and DeleteShareGroupOffsets through dispatch, as `kafka-share-groups`
//! uses them: start offsets after acknowledgements, a reset of an empty group that the next
//! fetch starts from, refusals for a group with members and for a consumer group, deletion.
#![allow(clippy::unwrap_used)]

mod common;

use kafka_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
use kafka_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use skiff_records::{BatchBuilder, Compression};
use std::sync::Arc;

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

const GROUP: &str = "sg";

async fn produce(b: &Arc<skiff_broker::Broker>, n: usize) {
    let b = b.clone();
    tokio::task::spawn_blocking(move || {
        let mut builder = BatchBuilder::new(0, Compression::None);
        for i in 0..n {
            builder.push(0, None, Some(format!("v{i}").as_bytes()), &[]);
        }
        let p = b.topics.get("t").unwrap().partition(0).unwrap();
        p.log
            .append_internal(&builder.build().unwrap(), 0, 0)
            .unwrap();
        p.wake_all();
    })
    .await
    .unwrap();
}

async fn heartbeat(b: &Arc<skiff_broker::Broker>, epoch: i32) -> ShareGroupHeartbeatResponse {
    let r = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s("m1"))
        .with_member_epoch(epoch)
        .with_subscribed_topic_names((epoch == 0).then(|| vec![TopicName(s("t"))]));
    match common::call(
        b,
        ApiKey::ShareGroupHeartbeat,
        1,
        RequestKind::ShareGroupHeartbeat(r),
    )
    .await
    {
        ResponseKind::ShareGroupHeartbeat(r) => r,
        other => panic!("{other:?}"),
    }
}

/// A fetch of t-0 with the given session epoch and acknowledgements: the acquired ranges.
async fn fetch(
    b: &Arc<skiff_broker::Broker>,
    id: uuid::Uuid,
    epoch: i32,
    acks: Vec<(i64, i64, i8)>,
) -> Vec<(i64, i64)> {
    let acks = acks
        .into_iter()
        .map(|(f, l, t)| {
            AcknowledgementBatch::default()
                .with_first_offset(f)
                .with_last_offset(l)
                .with_acknowledge_types(vec![t])
        })
        .collect();
    let r = ShareFetchRequest::default()
        .with_group_id(Some(GroupId(s(GROUP))))
        .with_member_id(Some(s("m1")))
        .with_share_session_epoch(epoch)
        .with_max_bytes(1 << 20)
        .with_max_records(100)
        .with_topics(vec![FetchTopic::default()
            .with_topic_id(id)
            .with_partitions(vec![FetchPartition::default()
                .with_partition_index(0)
                .with_acknowledgement_batches(acks)])]);
    let ResponseKind::ShareFetch(r) =
        common::call(b, ApiKey::ShareFetch, 1, RequestKind::ShareFetch(r)).await
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.error_code, p.acknowledge_error_code), (0, 0), "{p:?}");
    p.acquired_records
        .iter()
        .map(|a| (a.first_offset, a.last_offset))
        .collect()
}

/// (start offset, error) of t-0 and t-1 as DescribeShareGroupOffsets names them, and the
/// partitions listed when all are asked for.
async fn describe(b: &Arc<skiff_broker::Broker>, group: &str) -> (Vec<(i64, i16)>, Vec<i32>, i16) {
    let named = DescribeShareGroupOffsetsRequestGroup::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![DescribeShareGroupOffsetsRequestTopic::default()
            .with_topic_name(TopicName(s("t")))
            .with_partitions(vec![0, 1])]));
    let all = DescribeShareGroupOffsetsRequestGroup::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(None);
    let r = DescribeShareGroupOffsetsRequest::default().with_groups(vec![named, all]);
    let ResponseKind::DescribeShareGroupOffsets(r) = common::call(
        b,
        ApiKey::DescribeShareGroupOffsets,
        0,
        RequestKind::DescribeShareGroupOffsets(r),
    )
    .await
    else {
        panic!()
    };
    let named = r.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| (p.start_offset, p.error_code))
        .collect();
    let listed = r.groups[1]
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.partition_index))
        .collect();
    (named, listed, r.groups[1].error_code)
}

async fn alter(
    b: &Arc<skiff_broker::Broker>,
    group: &str,
    start: i64,
) -> AlterShareGroupOffsetsResponse {
    let r = AlterShareGroupOffsetsRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(vec![AlterShareGroupOffsetsRequestTopic::default()
            .with_topic_name(TopicName(s("t")))
            .with_partitions(vec![
                AlterShareGroupOffsetsRequestPartition::default()
                    .with_partition_index(0)
                    .with_start_offset(start),
                AlterShareGroupOffsetsRequestPartition::default()
                    .with_partition_index(5)
                    .with_start_offset(start),
            ])]);
    match common::call(
        b,
        ApiKey::AlterShareGroupOffsets,
        0,
        RequestKind::AlterShareGroupOffsets(r),
    )
    .await
    {
        ResponseKind::AlterShareGroupOffsets(r) => r,
        other => panic!("{other:?}"),
    }
}

async fn delete(b: &Arc<skiff_broker::Broker>, group: &str) -> DeleteShareGroupOffsetsResponse {
    let r = DeleteShareGroupOffsetsRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(vec![
            DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s("t"))),
            DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s("nope"))),
        ]);
    match common::call(
        b,
        ApiKey::DeleteShareGroupOffsets,
        0,
        RequestKind::DeleteShareGroupOffsets(r),
    )
    .await
    {
        ResponseKind::DeleteShareGroupOffsets(r) => r,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_group_offsets_are_described_reset_and_deleted_as_kafka_does() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::broker(dir.path())
        .sets(&["offsets.topic.num.partitions=1"])
        .start()
        .await;
    common::wait_until("the group coordinator to load", || {
        b.coordinator.is_loaded()
    })
    .await;
    common::create_topic(&b, "t", 2).await;
    let id = b.topics.get("t").unwrap().id;
    // The group starts at the earliest offset (a group config, as Kafka sets it).
    b.dynamic
        .commit(
            {
                let mut next = (*b.dynamic.stored()).clone();
                next.groups.insert(
                    GROUP.into(),
                    [(
                        "share.auto.offset.reset".to_string(),
                        "earliest".to_string(),
                    )]
                    .into(),
                );
                next
            },
            None,
        )
        .unwrap();
    produce(&b, 5).await;

    // Nothing stored yet: -1 for named partitions; the group does not exist yet.
    let (named, listed, err) = describe(&b, GROUP).await;
    assert_eq!(named, vec![(-1, 0), (-1, 0)]);
    assert!(listed.is_empty());
    assert_eq!(err, ResponseError::GroupIdNotFound.code());

    let hb = heartbeat(&b, 0).await;
    assert_eq!(hb.error_code, 0, "{hb:?}");
    assert_eq!(fetch(&b, id, 0, vec![]).await, vec![(0, 4)]);
    // Accept 0..=2, release 3..=4: the start offset moves to 3.
    fetch(&b, id, 1, vec![(0, 2, 1), (3, 4, 2)]).await;
    let (named, listed, err) = describe(&b, GROUP).await;
    assert_eq!(named, vec![(3, 0), (-1, 0)]);
    assert_eq!((listed, err), (vec![0], 0));

    // A group with a member cannot be reset or have its offsets deleted.
    let busy = alter(&b, GROUP, 1).await;
    assert_eq!(
        busy.error_code,
        ResponseError::NonEmptyGroup.code(),
        "{busy:?}"
    );
    assert_eq!(
        delete(&b, GROUP).await.error_code,
        ResponseError::NonEmptyGroup.code()
    );

    // The member leaves: reset to 1, and the next fetch starts there.
    assert_eq!(heartbeat(&b, -1).await.error_code, 0);
    let r = alter(&b, GROUP, 1).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    let codes: Vec<i16> = r.responses[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(
        codes,
        vec![0, ResponseError::UnknownTopicOrPartition.code()]
    );
    assert_eq!(describe(&b, GROUP).await.0, vec![(1, 0), (-1, 0)]);
    assert_eq!(heartbeat(&b, 0).await.error_code, 0);
    assert_eq!(fetch(&b, id, 0, vec![]).await, vec![(1, 4)]);
    assert_eq!(heartbeat(&b, -1).await.error_code, 0);

    // Deleting: t's state goes (unknown topics are refused, listed first); describe shows -1.
    let r = delete(&b, GROUP).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    let topics: Vec<(String, i16)> = r
        .responses
        .iter()
        .map(|t| (t.topic_name.0.to_string(), t.error_code))
        .collect();
    assert_eq!(
        topics,
        vec![
            ("nope".into(), ResponseError::UnknownTopicOrPartition.code()),
            ("t".into(), 0)
        ]
    );
    assert_eq!(describe(&b, GROUP).await.0, vec![(-1, 0), (-1, 0)]);
    let again = delete(&b, GROUP).await;
    assert_eq!(
        again.responses[1].error_message.as_deref(),
        Some("There is no offset information to delete.")
    );

    // A missing share group is created empty by a reset; deleting offsets of one is refused.
    assert_eq!(alter(&b, "fresh", 0).await.error_code, 0);
    assert!(b.coordinator.is_share_group("fresh"));
    assert_eq!(
        delete(&b, "missing").await.error_code,
        ResponseError::GroupIdNotFound.code()
    );
    common::stop(b).await;
}
