//! Filled sample requests of the share-group data APIs (ShareFetch, ShareAcknowledge; v1,
//! flexible).

use super::{s, uuid};
use kafka_protocol::messages::*;

/// A sample of `key` at `v` (`f`: flexible), or `None` if `key` is not one of these APIs.
pub fn sample(key: ApiKey, _v: i16, f: bool) -> Option<RequestKind> {
    Some(match key {
        ApiKey::ShareFetch => {
            use share_fetch_request::*;
            let batch = |first| {
                tag!(
                    AcknowledgementBatch::default()
                        .with_first_offset(first)
                        .with_last_offset(first + 2)
                        .with_acknowledge_types(vec![1, 2, 3]),
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
            let topic = |n| {
                tag!(
                    FetchTopic::default()
                        .with_topic_id(uuid(n))
                        .with_partitions(vec![partition(0), partition(1)]),
                    f
                )
            };
            let forgotten = |n| {
                tag!(
                    ForgottenTopic::default()
                        .with_topic_id(uuid(n))
                        .with_partitions(vec![3, 4]),
                    f
                )
            };
            let r = ShareFetchRequest::default()
                .with_group_id(Some(GroupId(s("g"))))
                .with_member_id(Some(s("member-1")))
                .with_share_session_epoch(3)
                .with_max_wait_ms(500)
                .with_min_bytes(1)
                .with_max_bytes(1 << 20)
                .with_max_records(500)
                .with_batch_size(100)
                .with_topics(vec![topic(1), topic(2)])
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
                        .with_acknowledge_types(vec![1]),
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
            let topic = |n| {
                tag!(
                    AcknowledgeTopic::default()
                        .with_topic_id(uuid(n))
                        .with_partitions(vec![partition(0), partition(2)]),
                    f
                )
            };
            let r = ShareAcknowledgeRequest::default()
                .with_group_id(Some(GroupId(s("g"))))
                .with_member_id(Some(s("member-1")))
                .with_share_session_epoch(4)
                .with_topics(vec![topic(1), topic(2)]);
            RequestKind::ShareAcknowledge(tag!(r, f))
        }
        _ => return None,
    })
}
