//! Filled sample requests of the share-group APIs (KIP-932), one per version, built with
//! kafka-protocol: every array has two elements, nullable fields set.

use super::{s, topic, uuid};
use kafka_protocol::messages::*;

/// A sample of `key` at `v` (`f`: flexible), or `None` if `key` is not a share-group API.
pub fn sample(key: ApiKey, _v: i16, f: bool) -> Option<RequestKind> {
    Some(match key {
        ApiKey::ShareGroupHeartbeat => {
            let r = ShareGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_member_id(s("member-1"))
                .with_member_epoch(3)
                .with_rack_id(Some(s("rack-a")))
                .with_subscribed_topic_names(Some(vec![topic("a"), topic("bb")]));
            RequestKind::ShareGroupHeartbeat(tag!(r, f))
        }
        ApiKey::ShareGroupDescribe => {
            let r = ShareGroupDescribeRequest::default()
                .with_group_ids(vec![GroupId(s("g1")), GroupId(s("group-2"))])
                .with_include_authorized_operations(true);
            RequestKind::ShareGroupDescribe(tag!(r, f))
        }
        ApiKey::ShareFetch => {
            use share_fetch_request::*;
            let batch = |first| {
                tag!(
                    AcknowledgementBatch::default()
                        .with_first_offset(first)
                        .with_last_offset(first + 3)
                        .with_acknowledge_types(vec![1, 2]),
                    f
                )
            };
            let partition = |i| {
                tag!(
                    FetchPartition::default()
                        .with_partition_index(i)
                        .with_acknowledgement_batches(vec![batch(0), batch(10)]),
                    f
                )
            };
            let t = |id| {
                tag!(
                    FetchTopic::default()
                        .with_topic_id(uuid(id))
                        .with_partitions(vec![partition(0), partition(1)]),
                    f
                )
            };
            let forgotten = |id| {
                tag!(
                    ForgottenTopic::default()
                        .with_topic_id(uuid(id))
                        .with_partitions(vec![0, 2]),
                    f
                )
            };
            let r = ShareFetchRequest::default()
                .with_group_id(Some(GroupId(s("g"))))
                .with_member_id(Some(s("member-1")))
                .with_share_session_epoch(1)
                .with_max_wait_ms(500)
                .with_min_bytes(1)
                .with_max_bytes(1 << 20)
                .with_max_records(500)
                .with_batch_size(500)
                .with_topics(vec![t(1), t(2)])
                .with_forgotten_topics_data(vec![forgotten(3), forgotten(4)]);
            RequestKind::ShareFetch(tag!(r, f))
        }
        ApiKey::ShareAcknowledge => {
            use share_acknowledge_request::*;
            let batch = |first| {
                tag!(
                    AcknowledgementBatch::default()
                        .with_first_offset(first)
                        .with_last_offset(first)
                        .with_acknowledge_types(vec![3]),
                    f
                )
            };
            let partition = |i| {
                tag!(
                    AcknowledgePartition::default()
                        .with_partition_index(i)
                        .with_acknowledgement_batches(vec![batch(5), batch(6)]),
                    f
                )
            };
            let t = |id| {
                tag!(
                    AcknowledgeTopic::default()
                        .with_topic_id(uuid(id))
                        .with_partitions(vec![partition(0), partition(1)]),
                    f
                )
            };
            let r = ShareAcknowledgeRequest::default()
                .with_group_id(Some(GroupId(s("g"))))
                .with_member_id(Some(s("member-1")))
                .with_share_session_epoch(2)
                .with_topics(vec![t(1), t(2)]);
            RequestKind::ShareAcknowledge(tag!(r, f))
        }
        ApiKey::DescribeShareGroupOffsets => {
            use describe_share_group_offsets_request::*;
            let t = |n| {
                tag!(
                    DescribeShareGroupOffsetsRequestTopic::default()
                        .with_topic_name(topic(n))
                        .with_partitions(vec![0, 1]),
                    f
                )
            };
            let g = |id, topics| {
                tag!(
                    DescribeShareGroupOffsetsRequestGroup::default()
                        .with_group_id(GroupId(s(id)))
                        .with_topics(topics),
                    f
                )
            };
            let r = DescribeShareGroupOffsetsRequest::default()
                .with_groups(vec![g("g1", Some(vec![t("a"), t("bb")])), g("g2", None)]);
            RequestKind::DescribeShareGroupOffsets(tag!(r, f))
        }
        ApiKey::AlterShareGroupOffsets => {
            use alter_share_group_offsets_request::*;
            let p = |i| {
                tag!(
                    AlterShareGroupOffsetsRequestPartition::default()
                        .with_partition_index(i)
                        .with_start_offset(42),
                    f
                )
            };
            let t = |n| {
                tag!(
                    AlterShareGroupOffsetsRequestTopic::default()
                        .with_topic_name(topic(n))
                        .with_partitions(vec![p(0), p(1)]),
                    f
                )
            };
            let r = AlterShareGroupOffsetsRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_topics(vec![t("a"), t("bb")]);
            RequestKind::AlterShareGroupOffsets(tag!(r, f))
        }
        ApiKey::DeleteShareGroupOffsets => {
            use delete_share_group_offsets_request::*;
            let t = |n| {
                tag!(
                    DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(topic(n)),
                    f
                )
            };
            let r = DeleteShareGroupOffsetsRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_topics(vec![t("a"), t("bb")]);
            RequestKind::DeleteShareGroupOffsets(tag!(r, f))
        }
        _ => return None,
    })
}
