//! Streams groups through the coordinator over the in-memory host: created by a join, seen by
//! ListGroups, committing offsets at the member epoch, kept apart from classic and consumer
//! protocol requests, restored after a restart, and deleted once empty.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use skiff_config::BrokerConfig;
use skiff_log::ManualClock;

use crate::groups::consumer;
use crate::groups::group::{JoinOutcome, JoinRequest};
use crate::groups::{CommitEntry, Coordinator};
use crate::memory::{MemGroupConfigs, MemStorage};
use crate::streams_group::{
    Heartbeat, InternalTopic, StreamsGroupSettings, StreamsTopology, Subtopology, TaskSet,
    LEAVE_EPOCH,
};

fn start(storage: &Arc<MemStorage>, clock: &Arc<ManualClock>) -> Coordinator<MemStorage> {
    let config = BrokerConfig {
        offsets_topic_num_partitions: 3,
        ..BrokerConfig::default()
    };
    let configs = Arc::new(MemGroupConfigs::default());
    crate::host_tests::start_groups_at(storage, configs, &config, clock.clone())
}

fn settings() -> StreamsGroupSettings {
    StreamsGroupSettings {
        initial_rebalance_delay_ms: 0,
        assignment_interval_ms: 0,
        ..StreamsGroupSettings::default()
    }
}

fn topology() -> StreamsTopology {
    let s = Subtopology {
        id: "0".to_string(),
        source_topics: vec!["lines".to_string()],
        state_changelog_topics: vec![InternalTopic {
            name: "app-store-changelog".to_string(),
            ..InternalTopic::default()
        }],
        ..Subtopology::default()
    };
    StreamsTopology {
        epoch: 0,
        subtopologies: BTreeMap::from([("0".to_string(), s)]),
    }
}

fn join(member: &str) -> Heartbeat {
    Heartbeat {
        member_id: member.to_string(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(topology()),
        process_id: Some(format!("process-{member}")),
        ..Heartbeat::default()
    }
}

fn beat(member: &str, epoch: i32, owned: TaskSet) -> Heartbeat {
    Heartbeat {
        member_id: member.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned),
        ..Heartbeat::default()
    }
}

fn entry(offset: i64) -> CommitEntry {
    CommitEntry {
        topic: "lines".into(),
        partition: 0,
        offset,
        leader_epoch: 0,
        metadata: String::new(),
        expire_timestamp: None,
    }
}

fn listed(c: &Coordinator<MemStorage>) -> (String, &'static str, &'static str) {
    let l = c
        .list()
        .unwrap()
        .into_iter()
        .find(|l| l.id == "app")
        .unwrap();
    (l.protocol_type, l.group_type, l.state)
}

#[tokio::test]
async fn a_streams_group_lives_commits_restarts_and_is_deleted() {
    let storage = Arc::new(MemStorage::default());
    storage.add_topic("lines", 2);
    storage.add_topic("app-store-changelog", 2);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let c = start(&storage, &clock);

    let r = c.streams_heartbeat("app", join("m1"), &settings()).unwrap();
    assert!(r.status.is_empty(), "{:?}", r.status);
    let tasks = r.tasks.unwrap();
    assert_eq!(tasks.active["0"].len(), 2);
    assert_eq!(listed(&c), ("streams".to_string(), "streams", "Stable"));

    // Offsets are committed at the member epoch.
    c.commit("app", "m1", None, r.member_epoch, vec![entry(7)])
        .await
        .unwrap();
    assert_eq!(
        c.commit("app", "m1", None, r.member_epoch + 1, vec![entry(8)])
            .await,
        Err(ResponseError::StaleMemberEpoch)
    );
    assert_eq!(
        c.commit("app", "nobody", None, r.member_epoch, vec![entry(8)])
            .await,
        Err(ResponseError::UnknownMemberId)
    );

    // Other protocols are kept out.
    let classic = JoinRequest {
        member_id: String::new(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), bytes::Bytes::from_static(b"\0\0"))],
        require_known_member_id: false,
        supports_skip_assignment: false,
    };
    let JoinOutcome::Ready(refused) = c.join("app", classic.clone()).unwrap() else {
        panic!("a classic join to a streams group is answered at once")
    };
    assert_eq!(
        refused.error,
        ResponseError::InconsistentGroupProtocol.code()
    );
    let hb = consumer::Heartbeat {
        member_id: "x".into(),
        member_epoch: 0,
        subscribed: Some(vec!["lines".to_string()]),
        rebalance_timeout_ms: 30_000,
        ..consumer::Heartbeat::default()
    };
    assert_eq!(
        c.consumer_heartbeat("app", hb, |_| Some(2), Default::default)
            .unwrap_err(),
        ResponseError::GroupIdNotFound
    );
    // And a streams heartbeat to a classic group with members is refused.
    let JoinOutcome::Wait(_) = c.join("classic", classic).unwrap() else {
        panic!("a first classic join waits")
    };
    assert_eq!(
        c.streams_heartbeat("classic", join("s1"), &settings())
            .unwrap_err()
            .code(),
        ResponseError::GroupIdNotFound.code()
    );
    c.stop();

    // Restart: the same group, member, epoch and tasks; the offsets too.
    let c = start(&storage, &clock);
    assert_eq!(listed(&c), ("streams".to_string(), "streams", "Stable"));
    let again = c
        .streams_heartbeat(
            "app",
            beat("m1", r.member_epoch, tasks.clone()),
            &settings(),
        )
        .unwrap();
    assert_eq!(again.member_epoch, r.member_epoch);
    let fetched = c.fetch_offsets("app", None).unwrap();
    assert_eq!(fetched[0].2.as_ref().map(|o| o.offset), Some(7));

    // A member that leaves empties the group, which can then be deleted.
    assert_eq!(
        c.delete_groups(&["app".to_string()]).await,
        vec![Err(ResponseError::NonEmptyGroup)]
    );
    let left = c
        .streams_heartbeat(
            "app",
            beat("m1", LEAVE_EPOCH, TaskSet::default()),
            &settings(),
        )
        .unwrap();
    assert_eq!(left.member_epoch, LEAVE_EPOCH);
    assert_eq!(listed(&c).2, "Empty");
    assert_eq!(c.delete_groups(&["app".to_string()]).await, vec![Ok(())]);
    c.stop();

    let c = start(&storage, &clock);
    assert!(c.list().unwrap().iter().all(|l| l.id != "app"));
    c.stop();
}

#[tokio::test]
async fn an_empty_classic_group_becomes_a_streams_group_and_keeps_its_offsets() {
    let storage = Arc::new(MemStorage::default());
    storage.add_topic("lines", 1);
    storage.add_topic("app-store-changelog", 1);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let c = start(&storage, &clock);
    // A commit-only ("simple") group.
    c.commit("app", "", None, -1, vec![entry(3)]).await.unwrap();
    c.streams_heartbeat("app", join("m1"), &settings()).unwrap();
    assert_eq!(listed(&c).1, "streams");
    let fetched = c.fetch_offsets("app", None).unwrap();
    assert_eq!(fetched[0].2.as_ref().map(|o| o.offset), Some(3));
    // A heartbeat that does not join, to a group that does not exist.
    assert_eq!(
        c.streams_heartbeat("none", beat("m1", 3, TaskSet::default()), &settings())
            .unwrap_err()
            .code(),
        ResponseError::GroupIdNotFound.code()
    );
    c.stop();
}

#[tokio::test]
async fn offsets_of_topics_the_topology_does_not_read_can_be_deleted() {
    let storage = Arc::new(MemStorage::default());
    storage.add_topic("lines", 1);
    storage.add_topic("app-store-changelog", 1);
    storage.add_topic("other", 1);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let c = start(&storage, &clock);
    c.commit("app", "", None, -1, vec![entry(3)]).await.unwrap();
    let other = CommitEntry {
        topic: "other".into(),
        ..entry(5)
    };
    c.commit("app", "", None, -1, vec![other]).await.unwrap();
    c.streams_heartbeat("app", join("m1"), &settings()).unwrap();
    let results = c
        .delete_offsets("app", &[("lines".to_string(), 0), ("other".to_string(), 0)])
        .await
        .unwrap();
    assert_eq!(
        results,
        vec![Err(ResponseError::GroupSubscribedToTopic), Ok(())]
    );
    c.stop();
}

#[tokio::test]
async fn a_refused_first_join_leaves_no_group_behind() {
    let storage = Arc::new(MemStorage::default());
    storage.add_topic("lines", 1);
    let clock = Arc::new(ManualClock::new(1_000_000));
    let c = start(&storage, &clock);
    // A repartition topic nothing writes: the topology can never be configured.
    let mut hb = join("m1");
    if let Some(t) = hb.topology.as_mut() {
        t.subtopologies
            .get_mut("0")
            .unwrap()
            .repartition_source_topics = vec![InternalTopic {
            name: "nowhere".to_string(),
            ..InternalTopic::default()
        }];
    }
    let e = c.streams_heartbeat("app", hb, &settings()).unwrap_err();
    assert_eq!(e.code(), ResponseError::StreamsInvalidTopology.code());
    assert!(c.list().unwrap().iter().all(|l| l.id != "app"));
    c.stop();
}
