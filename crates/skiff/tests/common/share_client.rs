//! A minimal share group client over raw frames ([`super::frames`]), enough for the share
//! group crash tests, and the setup they need (topic, group config, records). A member keeps
//! one connection, since Skiff closes a share session and releases its member's records when
//! the connection that opened it ends.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::*;

pub use super::frames::{s, Conn};
use skiff_records::{BatchBuilder, Compression};
use uuid::Uuid;

/// `MaxWaitMs` of the test's share fetches: short, so a poll loop turns quickly.
pub const FETCH_WAIT_MS: i32 = 500;

/// Acknowledgement types (KIP-932).
pub const ACCEPT: i8 = 1;
pub const RELEASE: i8 = 2;
pub const REJECT: i8 = 3;

/// Creates `topic` with `partitions` partitions and returns its id.
pub fn create_topic(conn: &mut Conn, topic: &str, partitions: i32) -> Uuid {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![create_topics_request::CreatableTopic::default()
            .with_name(TopicName(s(topic)))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    let r: CreateTopicsResponse = conn.call(ApiKey::CreateTopics, 7, &request);
    let t = &r.topics[0];
    assert_eq!(t.error_code, 0, "CreateTopics: {:?}", t.error_message);
    t.topic_id
}

/// Sets the share group config `name=value` on `group` (IncrementalAlterConfigs, GROUP = 32).
pub fn set_group_config(conn: &mut Conn, group: &str, name: &str, value: &str) {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(32)
            .with_resource_name(s(group))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s(name))
                .with_config_operation(0)
                .with_value(Some(s(value)))]),
    ]);
    let r: IncrementalAlterConfigsResponse =
        conn.call(ApiKey::IncrementalAlterConfigs, 1, &request);
    assert_eq!(r.responses.len(), 1);
    assert_eq!(
        r.responses[0].error_code, 0,
        "{:?}",
        r.responses[0].error_message
    );
}

/// Produces `n` records with values `v0`, `v1`, … to partition 0 of `topic` as one batch
/// (Produce v9, acks=-1) and returns the base offset.
pub fn produce(conn: &mut Conn, topic: &str, n: usize) -> i64 {
    use produce_request::{PartitionProduceData, TopicProduceData};
    let mut builder = BatchBuilder::new(0, Compression::None);
    for i in 0..n {
        builder.push(0, None, Some(format!("v{i}").as_bytes()), &[]);
    }
    let batch = Bytes::from(builder.build().unwrap());
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])]);
    let r: ProduceResponse = conn.call(ApiKey::Produce, 9, &request);
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "Produce: {:?}", p.error_message);
    p.base_offset
}

/// A random member id, as Kafka's client makes one (a UUID string).
pub fn member_id() -> String {
    Uuid::new_v4().to_string()
}

/// Joins `group` (member epoch 0) subscribed to `topic`; returns the member epoch.
pub fn join(conn: &mut Conn, group: &str, member: &str, topic: &str) -> i32 {
    let request = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member))
        .with_member_epoch(0)
        .with_subscribed_topic_names(Some(vec![TopicName(s(topic))]));
    let r: ShareGroupHeartbeatResponse = conn.call(ApiKey::ShareGroupHeartbeat, 1, &request);
    assert_eq!(
        r.error_code, 0,
        "ShareGroupHeartbeat: {:?}",
        r.error_message
    );
    assert!(r.member_epoch > 0, "{r:?}");
    r.member_epoch
}

/// One member's share session on partition 0 of one topic.
pub struct ShareSession {
    pub group: String,
    pub member: String,
    pub topic_id: Uuid,
    /// The epoch the next ShareFetch or ShareAcknowledge carries.
    pub epoch: i32,
}

impl ShareSession {
    pub fn new(group: &str, member: &str, topic_id: Uuid) -> ShareSession {
        ShareSession {
            group: group.to_string(),
            member: member.to_string(),
            topic_id,
            epoch: 0,
        }
    }

    /// One ShareFetch (MaxRecords 1000, no acknowledgements): offset → delivery count of
    /// every record it acquired.
    pub fn fetch(&mut self, conn: &mut Conn) -> BTreeMap<i64, i16> {
        use share_fetch_request::{FetchPartition, FetchTopic};
        let request = ShareFetchRequest::default()
            .with_group_id(Some(GroupId(s(&self.group))))
            .with_member_id(Some(s(&self.member)))
            .with_share_session_epoch(self.epoch)
            .with_max_wait_ms(FETCH_WAIT_MS)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_max_records(1000)
            .with_batch_size(1000)
            .with_topics(vec![FetchTopic::default()
                .with_topic_id(self.topic_id)
                .with_partitions(vec![
                    FetchPartition::default().with_partition_index(0)
                ])]);
        let r: ShareFetchResponse = conn.call(ApiKey::ShareFetch, 1, &request);
        assert_eq!(r.error_code, 0, "ShareFetch: {:?}", r.error_message);
        self.epoch += 1;
        let mut acquired = BTreeMap::new();
        for topic in &r.responses {
            assert_eq!(topic.topic_id, self.topic_id);
            for p in &topic.partitions {
                assert_eq!(
                    p.error_code, 0,
                    "ShareFetch partition: {:?}",
                    p.error_message
                );
                for range in &p.acquired_records {
                    for offset in range.first_offset..=range.last_offset {
                        let before = acquired.insert(offset, range.delivery_count);
                        assert_eq!(before, None, "offset {offset} acquired twice in one answer");
                    }
                }
            }
        }
        acquired
    }

    /// Fetches until `want` records are acquired or `deadline` passes; every offset acquired,
    /// with its delivery count. Fails if an offset comes twice.
    pub fn fetch_until(
        &mut self,
        conn: &mut Conn,
        want: usize,
        deadline: Duration,
    ) -> BTreeMap<i64, i16> {
        let until = Instant::now() + deadline;
        let mut all = BTreeMap::new();
        while all.len() < want && Instant::now() < until {
            for (offset, count) in self.fetch(conn) {
                assert_eq!(
                    all.insert(offset, count),
                    None,
                    "offset {offset} acquired twice"
                );
            }
        }
        all
    }

    /// ShareAcknowledge of `(first, last, type)` ranges on partition 0; waits for the answer
    /// (given only once the new state is durable) and fails on any error.
    pub fn acknowledge(&mut self, conn: &mut Conn, acks: &[(i64, i64, i8)]) {
        use share_acknowledge_request::{
            AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch,
        };
        let batches = acks
            .iter()
            .map(|&(first, last, kind)| {
                AcknowledgementBatch::default()
                    .with_first_offset(first)
                    .with_last_offset(last)
                    .with_acknowledge_types(vec![kind])
            })
            .collect();
        let request = ShareAcknowledgeRequest::default()
            .with_group_id(Some(GroupId(s(&self.group))))
            .with_member_id(Some(s(&self.member)))
            .with_share_session_epoch(self.epoch)
            .with_topics(vec![AcknowledgeTopic::default()
                .with_topic_id(self.topic_id)
                .with_partitions(vec![AcknowledgePartition::default()
                    .with_partition_index(0)
                    .with_acknowledgement_batches(batches)])]);
        let r: ShareAcknowledgeResponse = conn.call(ApiKey::ShareAcknowledge, 1, &request);
        assert_eq!(r.error_code, 0, "ShareAcknowledge: {:?}", r.error_message);
        self.epoch += 1;
        let partitions: Vec<_> = r.responses.iter().flat_map(|t| &t.partitions).collect();
        assert_eq!(partitions.len(), 1, "{r:?}");
        assert_eq!(
            partitions[0].error_code, 0,
            "ShareAcknowledge partition: {:?}",
            partitions[0].error_message
        );
    }
}

/// The share-partition start offset of partition 0 of `topic` in `group`
/// (DescribeShareGroupOffsets v0).
pub fn start_offset(conn: &mut Conn, group: &str, topic: &str) -> i64 {
    use describe_share_group_offsets_request::{
        DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
    };
    let request = DescribeShareGroupOffsetsRequest::default().with_groups(vec![
        DescribeShareGroupOffsetsRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(Some(vec![DescribeShareGroupOffsetsRequestTopic::default()
                .with_topic_name(TopicName(s(topic)))
                .with_partitions(vec![0])])),
    ]);
    let r: DescribeShareGroupOffsetsResponse =
        conn.call(ApiKey::DescribeShareGroupOffsets, 0, &request);
    let g = &r.groups[0];
    assert_eq!(
        g.error_code, 0,
        "DescribeShareGroupOffsets: {:?}",
        g.error_message
    );
    let p = &g.topics[0].partitions[0];
    assert_eq!(
        p.error_code, 0,
        "DescribeShareGroupOffsets: {:?}",
        p.error_message
    );
    p.start_offset
}
