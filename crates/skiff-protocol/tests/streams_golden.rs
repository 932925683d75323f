//! Golden bodies of the streams group messages, serialized by Kafka 4.4's own generated
//! classes (`tests/fixtures/gen/GenStreamsGolden.java`, see `tests/fixtures/README.md`):
//! each must decode with our codec to the values the generator set, and re-encode to the
//! very same bytes, requests and responses, at v0 and v1.
#![allow(clippy::unwrap_used)]

use bytes::BytesMut;
use skiff_protocol::streams::describe::{
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, AUTHORIZED_OPERATIONS_OMITTED,
};
use skiff_protocol::streams::heartbeat::{
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};
use skiff_protocol::streams::RawTaggedField;
use skiff_protocol::OwnMessage;

fn fixture(name: &str, version: i16) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/streams/{name}_v{version}.hex",
        env!("CARGO_MANIFEST_DIR")
    );
    let hex = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let hex = hex.trim();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// Decodes the fixture, re-encodes it, and requires the same bytes.
fn round_trip<T: OwnMessage + std::fmt::Debug>(name: &str, version: i16) -> T {
    let bytes = fixture(name, version);
    let decoded = T::decode(&bytes, version).unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
    let mut again = BytesMut::new();
    decoded.encode(&mut again, version).unwrap();
    assert_eq!(&again[..], &bytes[..], "{name} v{version} re-encoded");
    decoded
}

fn unknown_tag() -> Vec<RawTaggedField> {
    vec![RawTaggedField {
        tag: 7,
        data: bytes::Bytes::from_static(&[1, 2, 3]),
    }]
}

#[test]
fn heartbeat_request() {
    for v in 0..=1 {
        let r: StreamsGroupHeartbeatRequest = round_trip("streams_group_heartbeat_request", v);
        assert_eq!(r.group_id, "streams-app-€");
        assert_eq!(r.member_id, "member-1");
        assert_eq!((r.member_epoch, r.endpoint_information_epoch), (17, -5));
        assert_eq!(r.instance_id.as_deref(), Some("instance-a"));
        assert_eq!(r.rack_id.as_deref(), Some("rack-b"));
        assert_eq!(r.rebalance_timeout_ms, 300_000);
        let topology = r.topology.as_ref().unwrap();
        assert_eq!(topology.epoch, 4);
        assert_eq!(topology.subtopologies.len(), 2);
        let sub = &topology.subtopologies[0];
        assert_eq!(sub.subtopology_id, "0");
        assert_eq!(sub.source_topics, ["orders", "zahlungen-ü"]);
        assert_eq!(sub.source_topic_regex, ["events-.*"]);
        assert_eq!(sub.state_changelog_topics[0].name, "app-store-changelog");
        assert_eq!(sub.state_changelog_topics[0].replication_factor, 3);
        assert_eq!(
            sub.state_changelog_topics[0].topic_configs[1].key,
            "min.insync.replicas"
        );
        assert_eq!(sub.state_changelog_topics[0].topic_configs[1].value, "2");
        assert_eq!(sub.repartition_sink_topics, ["app-repartition"]);
        assert_eq!(sub.repartition_source_topics[0].partitions, 12);
        assert_eq!(sub.repartition_source_topics[0].replication_factor, -1);
        assert_eq!(sub.copartition_groups[0].source_topics, [0, 1]);
        assert_eq!(sub.copartition_groups[0].source_topic_regex, [0]);
        assert_eq!(sub.copartition_groups[0].repartition_source_topics, [-2]);
        assert_eq!(sub.unknown_tagged_fields.0, unknown_tag());
        assert_eq!(topology.subtopologies[1].subtopology_id, "1");
        let active = r.active_tasks.as_ref().unwrap();
        assert_eq!(
            (active[0].subtopology_id.as_str(), &active[0].partitions[..]),
            ("0", &[0, 1, 2][..])
        );
        assert!(active[1].partitions.is_empty());
        assert_eq!(r.standby_tasks.as_ref().unwrap()[0].partitions, [3]);
        assert_eq!(r.warmup_tasks.as_ref().unwrap()[0].partitions, [7, 8]);
        assert_eq!(
            r.process_id.as_deref(),
            Some("7f3e2c1a-0000-4000-8000-000000000001")
        );
        let endpoint = r.user_endpoint.as_ref().unwrap();
        assert_eq!(
            (endpoint.host.as_str(), endpoint.port),
            ("h.example", 50000)
        );
        assert_eq!(r.client_tags.as_ref().unwrap()[0].value, "eu-1");
        assert_eq!(r.task_offsets.as_ref().unwrap()[0].offset, 123_456_789_012);
        let end = r.task_end_offsets.as_ref().unwrap();
        assert_eq!(
            (end[0].offset, end[1].offset, end[1].partition),
            (-1, i64::MAX, 2)
        );
        assert!(r.shutdown_application);
        assert!(r.unknown_tagged_fields.0.is_empty());

        let n: StreamsGroupHeartbeatRequest =
            round_trip("streams_group_heartbeat_request_nulls", v);
        assert_eq!(
            n,
            StreamsGroupHeartbeatRequest {
                group_id: "g".into(),
                member_epoch: -1,
                ..Default::default()
            }
        );
    }
}

#[test]
fn heartbeat_response() {
    for v in 0..=1 {
        let r: StreamsGroupHeartbeatResponse = round_trip("streams_group_heartbeat_response", v);
        assert_eq!((r.throttle_time_ms, r.error_code), (250, 0));
        assert_eq!(r.error_message.as_deref(), Some("fine ✓"));
        assert_eq!((r.member_epoch, r.heartbeat_interval_ms), (18, 5000));
        assert_eq!(r.task_offset_interval_ms, 60_000);
        if v == 0 {
            assert_eq!(r.acceptable_recovery_lag_legacy, 10_000);
            assert_eq!(r.acceptable_recovery_lag, -1, "absent in v0: its default");
            assert!(!r.topology_description_required);
        } else {
            assert_eq!(
                r.acceptable_recovery_lag_legacy, 0,
                "absent in v1: its default"
            );
            assert_eq!(r.acceptable_recovery_lag, 5_000_000_000);
            assert!(r.topology_description_required);
        }
        let status = &r.status.as_ref().unwrap()[0];
        assert_eq!(
            (status.status_code, status.status_detail.as_str()),
            (2, "missing source topics")
        );
        assert_eq!(r.active_tasks.as_ref().unwrap()[0].partitions, [0, 1]);
        assert_eq!(r.standby_tasks.as_ref().unwrap()[0].partitions, [2]);
        assert_eq!(r.warmup_tasks.as_deref(), Some(&[][..]));
        assert_eq!(r.endpoint_information_epoch, 3);
        let by_endpoint = &r.partitions_by_user_endpoint.as_ref().unwrap()[0];
        assert_eq!(by_endpoint.user_endpoint.port, 65535);
        assert_eq!(by_endpoint.active_partitions[0].topic, "orders");
        assert_eq!(by_endpoint.active_partitions[0].partitions, [0, 1]);
        assert!(by_endpoint.standby_partitions.is_empty());
        assert_eq!(r.unknown_tagged_fields.0, unknown_tag());

        let n: StreamsGroupHeartbeatResponse =
            round_trip("streams_group_heartbeat_response_nulls", v);
        assert_eq!(n.error_code, 30);
        assert_eq!(n.status, None);
        assert_eq!(n.active_tasks, None);
        assert_eq!(n.partitions_by_user_endpoint, None);
    }
}

#[test]
fn describe_request() {
    for v in 0..=1 {
        let r: StreamsGroupDescribeRequest = round_trip("streams_group_describe_request", v);
        assert_eq!(r.group_ids, ["streams-app-€", "other"]);
        assert!(r.include_authorized_operations);
        assert_eq!(r.include_topology_description, v >= 1);
    }
}

#[test]
fn describe_response() {
    for v in 0..=1 {
        let r: StreamsGroupDescribeResponse = round_trip("streams_group_describe_response", v);
        assert_eq!(r.throttle_time_ms, 7);
        let [ok, failed] = &r.groups[..] else {
            panic!("{r:?}")
        };
        assert_eq!((ok.error_code, ok.error_message.as_deref()), (0, None));
        assert_eq!(
            (ok.group_state.as_str(), ok.group_epoch, ok.assignment_epoch),
            ("STABLE", 9, 8)
        );
        let topology = ok.topology.as_ref().unwrap();
        let sub = &topology.subtopologies.as_ref().unwrap()[0];
        assert_eq!(sub.source_topics, ["orders"]);
        assert_eq!(sub.repartition_sink_topics, ["app-repartition"]);
        assert_eq!(sub.state_changelog_topics[0].partitions, 4);
        assert_eq!(
            sub.state_changelog_topics[0].topic_configs[0].value,
            "compact"
        );
        let m = &ok.members[0];
        assert_eq!((m.member_id.as_str(), m.member_epoch), ("member-1", 18));
        assert_eq!(m.instance_id.as_deref(), Some("instance-a"));
        assert_eq!(m.rack_id.as_deref(), Some("rack-b"));
        assert_eq!(
            (m.client_id.as_str(), m.client_host.as_str()),
            ("client-ø", "/127.0.0.1")
        );
        assert_eq!((m.topology_epoch, m.process_id.as_str()), (4, "process-1"));
        assert_eq!(m.user_endpoint.as_ref().unwrap().port, 40000);
        assert_eq!(m.client_tags[0].key, "zone");
        assert_eq!(
            (m.task_offsets[0].offset, m.task_end_offsets[0].offset),
            (99, 100)
        );
        assert_eq!(m.assignment.active_tasks[0].partitions, [0, 1]);
        assert_eq!(m.assignment.standby_tasks[0].partitions, [2]);
        assert!(m.assignment.warmup_tasks.is_empty());
        assert_eq!(m.target_assignment.active_tasks[0].partitions, [0]);
        assert_eq!(m.target_assignment.warmup_tasks[0].partitions, [3]);
        assert!(m.is_classic);
        assert_eq!(m.unknown_tagged_fields.0, unknown_tag());
        assert_eq!(ok.authorized_operations, 0x1234);
        assert_eq!(failed.error_code, 30);
        assert_eq!(failed.error_message.as_deref(), Some("not authorized"));
        assert_eq!(failed.topology, None);
        assert_eq!(failed.authorized_operations, AUTHORIZED_OPERATIONS_OMITTED);
        if v == 0 {
            assert_eq!(ok.topology_description, None);
            assert_eq!(
                (ok.topology_description_status, ok.assignor_name.as_deref()),
                (0, None)
            );
        } else {
            let d = ok.topology_description.as_ref().unwrap();
            let nodes = &d.subtopologies[0].nodes;
            assert_eq!(nodes[0].node_type, 1);
            assert_eq!(nodes[0].source_topics, ["orders"]);
            assert_eq!(nodes[1].stores, ["store"]);
            assert_eq!(nodes[1].successors, ["KSTREAM-SINK-0000000002"]);
            assert_eq!(
                (nodes[2].node_type, nodes[2].sink_topic.as_deref()),
                (3, Some("out"))
            );
            assert_eq!(nodes[0].sink_topic, None);
            assert_eq!(d.global_stores[0].source.source_topics, ["global"]);
            assert_eq!(d.global_stores[0].processor.stores, ["global-store"]);
            assert_eq!(ok.topology_description_status, 3);
            assert_eq!(ok.assignor_name.as_deref(), Some("sticky"));
            assert_eq!(failed.topology_description_status, 2);
            assert_eq!(failed.assignor_name, None);
        }
    }
}

#[test]
fn fields_a_version_lacks_follow_kafkas_writer_rules() {
    let mut buf = BytesMut::new();
    // v1 has no int32 legacy lag and it is not ignorable: refused, not dropped.
    let legacy = StreamsGroupHeartbeatResponse {
        acceptable_recovery_lag_legacy: 5,
        ..Default::default()
    };
    assert!(legacy.encode(&mut buf, 1).is_err());
    assert!(legacy.encode(&mut buf, 0).is_ok());
    // v0 has no TopologyDescriptionRequired.
    let required = StreamsGroupHeartbeatResponse {
        topology_description_required: true,
        ..Default::default()
    };
    assert!(required.encode(&mut buf, 0).is_err());
    // AcceptableRecoveryLag is ignorable: dropped at v0.
    let lag = StreamsGroupHeartbeatResponse {
        acceptable_recovery_lag: 7,
        ..Default::default()
    };
    let (mut v0, mut plain) = (BytesMut::new(), BytesMut::new());
    lag.encode(&mut v0, 0).unwrap();
    StreamsGroupHeartbeatResponse::default()
        .encode(&mut plain, 0)
        .unwrap();
    assert_eq!(v0, plain);
    // v2 is not coded at all, either way.
    assert!(StreamsGroupDescribeRequest::default()
        .encode(&mut buf, 2)
        .is_err());
    assert!(StreamsGroupDescribeRequest::decode(&[0x01, 0, 0], 2).is_err());
    assert!(StreamsGroupDescribeRequest::decode(&[0x01, 0, 0], -1).is_err());
    assert!(StreamsGroupDescribeRequest::decode(&[0x01, 0, 0], 0).is_ok());
}
