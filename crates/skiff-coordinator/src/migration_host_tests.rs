//! Online migration through the coordinator over the in-memory host: a classic group upgraded
//! by a ConsumerGroupHeartbeat, restarted (still a consumer group with its classic member and
//! its offsets), its classic member rebalanced through JoinGroup/SyncGroup/Heartbeat, then
//! downgraded when the consumer-protocol member leaves, and restarted again as a classic group.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::ManualClock;

use crate::groups::consumer::{Assignment, Heartbeat, LEAVE};
use crate::groups::embedded_protocol::{encode_assignment, parse_assignment};
use crate::groups::group::{JoinOutcome, JoinRequest, SyncOutcome};
use crate::groups::{CommitEntry, Coordinator};
use crate::memory::{MemGroupConfigs, MemStorage};
use crate::wire::{put_i16, put_i32, put_str};

fn start(storage: &Arc<MemStorage>, clock: &Arc<ManualClock>) -> Coordinator<MemStorage> {
    let config = BrokerConfig {
        offsets_topic_num_partitions: 3,
        group_initial_rebalance_delay_ms: 0,
        ..BrokerConfig::default()
    };
    let configs = Arc::new(MemGroupConfigs::default());
    crate::host_tests::start_groups_at(storage, configs, &config, clock.clone())
}

fn subscription() -> Bytes {
    let mut out = Vec::new();
    put_i16(&mut out, 1);
    put_i32(&mut out, 1);
    put_str(&mut out, "t");
    put_i32(&mut out, -1);
    put_i32(&mut out, 0);
    Bytes::from(out)
}

fn join_req(id: &str) -> JoinRequest {
    JoinRequest {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 60_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), subscription())],
        require_known_member_id: false,
        supports_skip_assignment: true,
    }
}

fn consumer_hb(id: &str, epoch: i32) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: epoch,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout_ms: 60_000,
        subscribed: (epoch == 0).then(|| vec!["t".to_string()]),
        owned: Some(Assignment::new()),
        ..Heartbeat::default()
    }
}

fn group_type(c: &Coordinator<MemStorage>) -> &'static str {
    c.list()
        .unwrap()
        .into_iter()
        .find(|l| l.id == "g")
        .unwrap()
        .group_type
}

fn all_of_t() -> Assignment {
    Assignment::from([("t".to_string(), (0..4).collect())])
}

#[tokio::test]
async fn upgrade_restart_rebalance_downgrade_restart() {
    let storage = Arc::new(MemStorage::default());
    storage.add_topic("t", 4);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let c = start(&storage, &clock);

    // A classic group: a joins, leads, assigns itself everything, commits.
    let JoinOutcome::Wait(rx) = c.join("g", join_req("")).unwrap() else {
        panic!("a join waits")
    };
    let joined = rx.await.unwrap();
    let a = joined.member_id.clone();
    assert_eq!(joined.generation_id, 1);
    let mine = vec![(a.clone(), encode_assignment(1, &all_of_t()))];
    let SyncOutcome::Wait(rx) = c.sync("g", &a, None, 1, None, None, mine).unwrap() else {
        panic!("the leader's sync completes through its waiter")
    };
    assert_eq!(
        parse_assignment(&rx.await.unwrap().assignment).unwrap(),
        all_of_t()
    );
    let entry = CommitEntry {
        topic: "t".into(),
        partition: 0,
        offset: 42,
        leader_epoch: 0,
        metadata: String::new(),
        expire_timestamp: None,
    };
    c.commit("g", &a, None, 1, vec![entry]).await.unwrap();
    assert_eq!(group_type(&c), "classic");

    // A consumer-protocol member joins: the group is a consumer group now.
    let parts = |t: &str| (t == "t").then_some(4);
    let z = c
        .consumer_heartbeat(
            "g",
            consumer_hb("", 0),
            parts,
            std::collections::BTreeSet::new,
        )
        .unwrap();
    assert_eq!(group_type(&c), "consumer");
    assert_eq!(
        z.assignment,
        Some(Assignment::new()),
        "a still holds everything"
    );
    c.stop();

    // Restart: still a consumer group, a still a classic member holding its partitions.
    let c = start(&storage, &clock);
    assert_eq!(group_type(&c), "consumer");
    c.with_group("g", |g| {
        let s = g.unwrap().consumer.as_ref().unwrap();
        let m = &s.members[&a];
        assert!(m.classic.is_some());
        assert_eq!(m.assigned, all_of_t());
        assert!(s.members[&z.member_id].classic.is_none());
    })
    .unwrap();
    let fetched = c.fetch_offsets("g", None).unwrap();
    assert_eq!(fetched[0].2.as_ref().map(|o| o.offset), Some(42));

    // a learns about the rebalance from its heartbeat and rejoins (eagerly: owning nothing).
    assert_eq!(
        c.heartbeat("g", &a, None, 1),
        Err(ResponseError::RebalanceInProgress)
    );
    let JoinOutcome::Ready(j) = c.join("g", join_req(&a)).unwrap() else {
        panic!("a classic member of a consumer group is answered at once")
    };
    assert_eq!((j.error, j.leader.as_str()), (0, ""));
    let SyncOutcome::Ready(s) = c
        .sync(
            "g",
            &a,
            None,
            j.generation_id,
            Some("consumer"),
            Some("range"),
            vec![],
        )
        .unwrap()
    else {
        panic!("a classic member's sync is answered at once")
    };
    assert_eq!(s.error, 0);
    let kept = parse_assignment(&s.assignment).unwrap();
    assert!(kept["t"].len() == 2, "a keeps its half: {kept:?}");

    // z leaves: every member left is classic, so the group is classic again.
    let z_epoch = c
        .with_group("g", |g| {
            g.unwrap().consumer.as_ref().unwrap().members[&z.member_id].epoch
        })
        .unwrap();
    let left = c
        .consumer_heartbeat(
            "g",
            consumer_hb(&z.member_id, LEAVE),
            parts,
            std::collections::BTreeSet::new,
        )
        .unwrap();
    assert_eq!(left.member_epoch, LEAVE);
    assert!(z_epoch >= 0);
    assert_eq!(group_type(&c), "classic");
    let generation = c.with_group("g", |g| g.unwrap().generation).unwrap();
    assert_eq!(
        c.heartbeat("g", &a, None, generation),
        Err(ResponseError::RebalanceInProgress),
        "the classic members must rejoin"
    );
    c.stop();

    // Restart: a classic group with a, and the offsets.
    let c = start(&storage, &clock);
    assert_eq!(group_type(&c), "classic");
    c.with_group("g", |g| {
        let g = g.unwrap();
        assert!(g.consumer.is_none());
        assert!(g.members.contains_key(&a));
    })
    .unwrap();
    let fetched = c.fetch_offsets("g", None).unwrap();
    assert_eq!(fetched[0].2.as_ref().map(|o| o.offset), Some(42));
    c.stop();
}
