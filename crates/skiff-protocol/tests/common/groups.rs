//! Filled sample requests of the consumer-group APIs, one per version, built with
//! kafka-protocol. Only fields that exist in the version are set (the crate's encoders refuse
//! others); every array has two elements and nullable fields alternate null and set.

use super::{s, topic, uuid};
use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

/// A sample of `key` at `v` (`f`: flexible), or `None` if `key` is not a group API.
pub fn sample(key: ApiKey, v: i16, f: bool) -> Option<RequestKind> {
    Some(match key {
        ApiKey::FindCoordinator => {
            let mut r = FindCoordinatorRequest::default();
            if v <= 3 {
                r = r.with_key(s("group-1"));
            } else {
                r = r.with_coordinator_keys(vec![s("group-1"), s("tx-2")]);
            }
            if v >= 1 {
                r = r.with_key_type(1);
            }
            RequestKind::FindCoordinator(tag!(r, f))
        }
        ApiKey::JoinGroup => {
            use join_group_request::*;
            let p = |n, m: &'static [u8]| {
                tag!(
                    JoinGroupRequestProtocol::default()
                        .with_name(s(n))
                        .with_metadata(Bytes::from_static(m)),
                    f
                )
            };
            let mut r = JoinGroupRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_session_timeout_ms(45000)
                .with_member_id(s("member-1"))
                .with_protocol_type(s("consumer"))
                .with_protocols(vec![p("range", b"\x00\x01meta"), p("roundrobin", b"")]);
            if v >= 1 {
                r = r.with_rebalance_timeout_ms(300_000);
            }
            if v >= 5 {
                r = r.with_group_instance_id(Some(s("instance-a")));
            }
            if v >= 8 {
                r = r.with_reason(Some(s("rejoin")));
            }
            RequestKind::JoinGroup(tag!(r, f))
        }
        ApiKey::SyncGroup => {
            use sync_group_request::*;
            let a = |m, bytes: &'static [u8]| {
                tag!(
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(m))
                        .with_assignment(Bytes::from_static(bytes)),
                    f
                )
            };
            let mut r = SyncGroupRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_generation_id(3)
                .with_member_id(s("member-1"))
                .with_assignments(vec![a("member-1", b"\x00\x00abc"), a("member-2", b"")]);
            if v >= 3 {
                r = r.with_group_instance_id(Some(s("instance-a")));
            }
            if v >= 5 {
                r = r
                    .with_protocol_type(Some(s("consumer")))
                    .with_protocol_name(Some(s("range")));
            }
            RequestKind::SyncGroup(tag!(r, f))
        }
        ApiKey::Heartbeat => {
            let mut r = HeartbeatRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_generation_id(3)
                .with_member_id(s("member-1"));
            if v >= 3 {
                r = r.with_group_instance_id(Some(s("instance-a")));
            }
            RequestKind::Heartbeat(tag!(r, f))
        }
        ApiKey::LeaveGroup => {
            use leave_group_request::*;
            let mut r = LeaveGroupRequest::default().with_group_id(GroupId(s("g")));
            if v <= 2 {
                r = r.with_member_id(s("member-1"));
            } else {
                let m = |id, inst: Option<StrBytes>| {
                    let mut m = MemberIdentity::default()
                        .with_member_id(s(id))
                        .with_group_instance_id(inst);
                    if v >= 5 {
                        m = m.with_reason(Some(s("shutdown")));
                    }
                    tag!(m, f)
                };
                r = r.with_members(vec![m("member-1", Some(s("instance-a"))), m("m2", None)]);
            }
            RequestKind::LeaveGroup(tag!(r, f))
        }
        ApiKey::OffsetCommit => {
            use offset_commit_request::*;
            let p = |i, meta: Option<StrBytes>| {
                let mut p = OffsetCommitRequestPartition::default()
                    .with_partition_index(i)
                    .with_committed_offset(1000 + i64::from(i))
                    .with_committed_metadata(meta);
                if v >= 6 {
                    p = p.with_committed_leader_epoch(4);
                }
                tag!(p, f)
            };
            let t = |n| {
                tag!(
                    OffsetCommitRequestTopic::default()
                        .with_name(topic(n))
                        .with_partitions(vec![p(0, Some(s("meta"))), p(1, None)]),
                    f
                )
            };
            let mut r = OffsetCommitRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_generation_id_or_member_epoch(3)
                .with_member_id(s("member-1"))
                .with_topics(vec![t("a"), t("bb")]);
            if v >= 7 {
                r = r.with_group_instance_id(Some(s("instance-a")));
            }
            if v <= 4 {
                r = r.with_retention_time_ms(86_400_000);
            }
            RequestKind::OffsetCommit(tag!(r, f))
        }
        ApiKey::OffsetFetch => {
            use offset_fetch_request::*;
            let mut r = OffsetFetchRequest::default();
            if v <= 7 {
                let t = |n| {
                    tag!(
                        OffsetFetchRequestTopic::default()
                            .with_name(topic(n))
                            .with_partition_indexes(vec![0, 1]),
                        f
                    )
                };
                r = r
                    .with_group_id(GroupId(s("g")))
                    .with_topics(Some(vec![t("a"), t("bb")]));
            } else {
                let t = |n| {
                    tag!(
                        OffsetFetchRequestTopics::default()
                            .with_name(topic(n))
                            .with_partition_indexes(vec![0, 1]),
                        f
                    )
                };
                let g = |id, topics: Option<Vec<OffsetFetchRequestTopics>>| {
                    let mut g = OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(s(id)))
                        .with_topics(topics);
                    if v >= 9 {
                        g = g.with_member_id(Some(s("member-1"))).with_member_epoch(5);
                    }
                    tag!(g, f)
                };
                r = r.with_groups(vec![g("g1", Some(vec![t("a"), t("bb")])), g("g2", None)]);
            }
            if v >= 7 {
                r = r.with_require_stable(true);
            }
            RequestKind::OffsetFetch(tag!(r, f))
        }
        ApiKey::ListGroups => {
            let mut r = ListGroupsRequest::default();
            if v >= 4 {
                r = r.with_states_filter(vec![s("Stable"), s("Empty")]);
            }
            if v >= 5 {
                r = r.with_types_filter(vec![s("classic"), s("consumer")]);
            }
            RequestKind::ListGroups(tag!(r, f))
        }
        ApiKey::DescribeGroups => {
            let mut r = DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(s("g1")), GroupId(s("group-2"))]);
            if v >= 3 {
                r = r.with_include_authorized_operations(true);
            }
            RequestKind::DescribeGroups(tag!(r, f))
        }
        ApiKey::DeleteGroups => {
            let r = DeleteGroupsRequest::default()
                .with_groups_names(vec![GroupId(s("g1")), GroupId(s("group-2"))]);
            RequestKind::DeleteGroups(tag!(r, f))
        }
        ApiKey::OffsetDelete => {
            use offset_delete_request::*;
            let p = |i| OffsetDeleteRequestPartition::default().with_partition_index(i);
            let t = |n| {
                OffsetDeleteRequestTopic::default()
                    .with_name(topic(n))
                    .with_partitions(vec![p(0), p(1)])
            };
            let r = OffsetDeleteRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_topics(vec![t("a"), t("bb")]);
            RequestKind::OffsetDelete(r)
        }
        ApiKey::ConsumerGroupHeartbeat => {
            use consumer_group_heartbeat_request::*;
            let tp = |id| {
                tag!(
                    TopicPartitions::default()
                        .with_topic_id(uuid(id))
                        .with_partitions(vec![0, 2]),
                    f
                )
            };
            let mut r = ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_member_id(s("member-1"))
                .with_member_epoch(2)
                .with_instance_id(Some(s("instance-a")))
                .with_rack_id(None)
                .with_rebalance_timeout_ms(300_000)
                .with_subscribed_topic_names(Some(vec![topic("a"), topic("bb")]))
                .with_server_assignor(Some(s("uniform")))
                .with_topic_partitions(Some(vec![tp(1), tp(2)]));
            if v >= 1 {
                r = r.with_subscribed_topic_regex(Some(s("a.*")));
            }
            RequestKind::ConsumerGroupHeartbeat(tag!(r, f))
        }
        ApiKey::ConsumerGroupDescribe => {
            let r = ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![GroupId(s("g1")), GroupId(s("group-2"))])
                .with_include_authorized_operations(true);
            RequestKind::ConsumerGroupDescribe(tag!(r, f))
        }
        _ => return None,
    })
}
