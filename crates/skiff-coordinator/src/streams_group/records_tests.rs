//! The streams group records against Apache Kafka's own encoding: every hex string below was
//! printed by `testdata/StreamsRecords.java` from Kafka 4.4's generated record classes.

use std::collections::BTreeMap;

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn tasks(pairs: &[(&str, &[i32])]) -> Tasks {
    pairs
        .iter()
        .map(|(s, ps)| (s.to_string(), ps.iter().copied().collect()))
        .collect()
}

#[test]
fn keys() {
    let k = StreamsKey::Metadata {
        group: "wc".to_string(),
    };
    assert_eq!(encode_key(&k), hex("001100027763"));
    assert_eq!(decode_key(&hex("001100027763")).unwrap(), Some(k));
    let k = StreamsKey::Member {
        group: "wc".to_string(),
        member: "m1".to_string(),
    };
    assert_eq!(encode_key(&k), hex("00130002776300026d31"));
    assert_eq!(decode_key(&hex("00130002776300026d31")).unwrap(), Some(k));
    // A consumer group key (type 3) is not ours.
    assert_eq!(decode_key(&hex("000300027763")).unwrap(), None);
}

#[test]
fn group_metadata() {
    let bytes = hex("000000000007000000000000000002000400000002011902156e756d2e7374616e6462792e7265706c69636173023100");
    let m = GroupMetadata {
        epoch: 7,
        validated_topology_epoch: 2,
        last_assignment_configs: BTreeMap::from([(
            "num.standby.replicas".to_string(),
            "1".to_string(),
        )]),
    };
    assert_eq!(decode_metadata(&bytes).unwrap(), m);
    assert_eq!(encode_metadata(&m), bytes);
}

#[test]
fn member_metadata() {
    let bytes = hex(
        "00000003723102630b2f3132372e302e302e310000753000000002037031010268fde8000203617a02610000",
    );
    let m = MemberMetadata {
        instance_id: None,
        rack_id: Some("r1".to_string()),
        client_id: "c".to_string(),
        client_host: "/127.0.0.1".to_string(),
        rebalance_timeout_ms: 30_000,
        topology_epoch: 2,
        process_id: "p1".to_string(),
        user_endpoint: Some(Endpoint {
            host: "h".to_string(),
            port: 65_000,
        }),
        client_tags: BTreeMap::from([("az".to_string(), "a".to_string())]),
    };
    assert_eq!(decode_member(&bytes).unwrap(), m);
    assert_eq!(encode_member(&m), bytes);

    let bytes = hex("00000369310002630268ffffffff000000000270ff0100");
    let m = MemberMetadata {
        instance_id: Some("i1".to_string()),
        rack_id: None,
        client_id: "c".to_string(),
        client_host: "h".to_string(),
        rebalance_timeout_ms: -1,
        topology_epoch: 0,
        process_id: "p".to_string(),
        user_endpoint: None,
        client_tags: BTreeMap::new(),
    };
    assert_eq!(decode_member(&bytes).unwrap(), m);
    assert_eq!(encode_member(&m), bytes);
}

#[test]
fn target_assignment() {
    let bytes = hex("0000000000070100080000011f71fb04cb");
    assert_eq!(
        decode_target_metadata(&bytes).unwrap(),
        (7, Some(1_234_567_890_123))
    );
    assert_eq!(encode_target_metadata(7, Some(1_234_567_890_123)), bytes);

    let bytes = hex("0000020230030000000000000002000202310200000001000100");
    let t = TaskSet {
        active: tasks(&[("0", &[0, 2])]),
        standby: tasks(&[("1", &[1])]),
        warmup: Tasks::new(),
    };
    assert_eq!(decode_target_member(&bytes).unwrap(), t);
    assert_eq!(encode_target_member(&t), bytes);
}

#[test]
fn current_assignment() {
    // Without assignment epochs (before KIP-1251): every active task assigned at the epoch.
    let bytes = hex("0000000000070000000601020230020000000000010102023003000000010000000200010100");
    let c = CurrentAssignment {
        epoch: 7,
        previous_epoch: 6,
        state: MemberState::UnrevokedTasks,
        assigned: TaskSet {
            active: tasks(&[("0", &[0])]),
            ..TaskSet::default()
        },
        pending_revocation: TaskSet {
            active: tasks(&[("0", &[1, 2])]),
            ..TaskSet::default()
        },
        active_assigned_at: epochs(&[("0", 0, 7), ("0", 1, 7), ("0", 2, 7)]),
    };
    assert_eq!(decode_current(&bytes).unwrap(), c);

    // With them, on the active lists only.
    let bytes = hex("00000000000700000006010202300200000000010005020000000502023102000000030001020230030000000100000002010009030000000300000007010100");
    let c = CurrentAssignment {
        assigned: TaskSet {
            active: tasks(&[("0", &[0])]),
            standby: tasks(&[("1", &[3])]),
            ..TaskSet::default()
        },
        active_assigned_at: epochs(&[("0", 0, 5), ("0", 1, 3), ("0", 2, 7)]),
        ..c
    };
    assert_eq!(decode_current(&bytes).unwrap(), c);
    assert_eq!(encode_current(&c), bytes);
}

fn epochs(list: &[(&str, i32, i32)]) -> AssignmentEpochs {
    list.iter()
        .map(|(s, p, e)| ((s.to_string(), *p), *e))
        .collect()
}

#[test]
fn topology() {
    let bytes = hex("00000000000203023003056c6566740672696768740102146170702d73746f72652d6368616e67656c6f67000000000000020f636c65616e75702e706f6c69637908636f6d70616374000002086170702d726570010203000000010101000002310101010102086170702d7265700000000400010100010000");
    let left_right = Subtopology {
        id: "0".to_string(),
        source_topics: vec!["left".to_string(), "right".to_string()],
        state_changelog_topics: vec![InternalTopic {
            name: "app-store-changelog".to_string(),
            partitions: 0,
            replication_factor: 0,
            configs: BTreeMap::from([("cleanup.policy".to_string(), "compact".to_string())]),
        }],
        repartition_sink_topics: vec!["app-rep".to_string()],
        copartition_groups: vec![CopartitionGroup {
            source_topics: vec![0, 1],
            ..CopartitionGroup::default()
        }],
        ..Subtopology::default()
    };
    let rep = Subtopology {
        id: "1".to_string(),
        repartition_source_topics: vec![InternalTopic {
            name: "app-rep".to_string(),
            partitions: 4,
            replication_factor: 1,
            configs: BTreeMap::new(),
        }],
        ..Subtopology::default()
    };
    let t = StreamsTopology {
        epoch: 2,
        subtopologies: BTreeMap::from([("0".to_string(), left_right), ("1".to_string(), rep)]),
    };
    assert_eq!(decode_topology(&bytes).unwrap(), t);
    assert_eq!(encode_topology(&t), bytes);
}

/// Every prefix of every record fails cleanly (no panic, no huge allocation).
#[test]
fn truncated_records_are_errors() {
    let samples = [
        hex("000000000007000000000000000002000400000002011902156e756d2e7374616e6462792e7265706c69636173023100"),
        hex("00000003723102630b2f3132372e302e302e310000753000000002037031010268fde8000203617a02610000"),
        hex("0000000000070000000601020230020000000000010102023003000000010000000200010100"),
        hex("00000000000203023003056c6566740672696768740102146170702d73746f72652d6368616e67656c6f67000000000000020f636c65616e75702e706f6c69637908636f6d70616374000002086170702d726570010203000000010101000002310101010102086170702d7265700000000400010100010000"),
    ];
    for s in &samples {
        for n in 0..s.len() {
            let cut = &s[..n];
            let _ = decode_metadata(cut);
            let _ = decode_member(cut);
            let _ = decode_current(cut);
            let _ = decode_target_member(cut);
            let _ = decode_target_metadata(cut);
            let _ = decode_topology(cut);
            let _ = decode_key(cut);
        }
    }
    assert!(decode_topology(&samples[3][..samples[3].len() - 1]).is_err());
    assert!(decode_current(&samples[2][..10]).is_err());
}
