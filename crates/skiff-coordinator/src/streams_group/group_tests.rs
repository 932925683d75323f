//! A streams group driven by heartbeats: topology set-up, internal topics, assignment,
//! revocation before reassignment, leaving, expiry, fencing and static members.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;

use super::*;
use crate::groups::commit_fence::CommitFence;

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Kafka Streams' word count: sub-topology 0 splits lines into a repartition topic,
/// sub-topology 1 counts into a store.
fn word_count(epoch: i32) -> StreamsTopology {
    let split = Subtopology {
        id: "0".to_string(),
        source_topics: strings(&["lines"]),
        repartition_sink_topics: strings(&["wc-counts-repartition"]),
        ..Subtopology::default()
    };
    let count = Subtopology {
        id: "1".to_string(),
        repartition_source_topics: vec![InternalTopic {
            name: "wc-counts-repartition".to_string(),
            ..InternalTopic::default()
        }],
        state_changelog_topics: vec![InternalTopic {
            name: "wc-counts-changelog".to_string(),
            configs: BTreeMap::from([("cleanup.policy".to_string(), "compact".to_string())]),
            ..InternalTopic::default()
        }],
        ..Subtopology::default()
    };
    StreamsTopology {
        epoch,
        subtopologies: BTreeMap::from([("0".to_string(), split), ("1".to_string(), count)]),
    }
}

/// The topics that exist, with their partition counts.
#[derive(Default)]
pub(super) struct Topics(BTreeMap<String, i32>);

impl Topics {
    pub(super) fn with(names: &[(&str, i32)]) -> Topics {
        Topics(names.iter().map(|(n, p)| (n.to_string(), *p)).collect())
    }

    pub(super) fn all_word_count() -> Topics {
        Topics::with(&[
            ("lines", 3),
            ("wc-counts-repartition", 3),
            ("wc-counts-changelog", 3),
        ])
    }

    pub(super) fn lookup(&self) -> impl Fn(&str) -> Option<i32> + '_ {
        |name| self.0.get(name).copied()
    }
}

pub(super) fn settings() -> StreamsGroupSettings {
    StreamsGroupSettings {
        initial_rebalance_delay_ms: 0,
        assignment_interval_ms: 0,
        ..StreamsGroupSettings::default()
    }
}

pub(super) fn join(member: &str, process: &str) -> Heartbeat {
    Heartbeat {
        member_id: member.to_string(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(word_count(0)),
        process_id: Some(process.to_string()),
        client_id: "client".to_string(),
        client_host: "/127.0.0.1".to_string(),
        ..Heartbeat::default()
    }
}

pub(super) fn beat(member: &str, epoch: i32, owned: &TaskSet) -> Heartbeat {
    Heartbeat {
        member_id: member.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    }
}

fn count(t: &TaskSet) -> usize {
    t.active.values().map(|p| p.len()).sum()
}

fn codes(r: &HeartbeatResult) -> Vec<StatusCode> {
    r.status.iter().map(|s| s.code).collect()
}

#[test]
fn the_first_member_sets_the_topology_and_is_told_which_topics_are_missing() {
    let mut g = StreamsGroup::new("wc");
    let topics = Topics::with(&[("lines", 3)]);
    let r = g
        .heartbeat(join("m1", "p1"), &topics.lookup(), &settings(), 0)
        .unwrap();
    assert_eq!(codes(&r), [StatusCode::MissingInternalTopics]);
    let names: Vec<(&str, i32)> = r
        .to_create
        .iter()
        .map(|t| (t.name.as_str(), t.partitions))
        .collect();
    assert_eq!(
        names,
        [("wc-counts-changelog", 3), ("wc-counts-repartition", 3)]
    );
    assert_eq!(g.state(), StreamsGroupState::NotReady);
    // Not ready: an empty assignment, at the group epoch (a new group starts at 2, as
    // Kafka's does).
    assert_eq!(r.member_epoch, 2);
    assert_eq!(r.tasks, Some(TaskSet::default()));
    assert_eq!(g.topology, Some(word_count(0)));
}

#[test]
fn once_the_internal_topics_exist_every_task_is_assigned() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    g.heartbeat(
        join("m1", "p1"),
        &Topics::with(&[("lines", 3)]).lookup(),
        &s,
        0,
    )
    .unwrap();
    let topics = Topics::all_word_count();
    let r = g
        .heartbeat(beat("m1", 2, &TaskSet::default()), &topics.lookup(), &s, 10)
        .unwrap();
    assert!(r.status.is_empty(), "{:?}", r.status);
    assert!(r.to_create.is_empty());
    assert_eq!(r.member_epoch, 3);
    let tasks = r.tasks.unwrap();
    assert_eq!(count(&tasks), 6);
    assert_eq!(g.state(), StreamsGroupState::Stable);
}

/// A second instance joins: the first gives up half its tasks before the second gets them.
#[test]
fn tasks_move_only_after_their_owner_revoked_them() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let r1 = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let all = r1.tasks.unwrap();
    assert_eq!(count(&all), 6);

    let r2 = g.heartbeat(join("m2", "p2"), &t, &s, 10).unwrap();
    // m2 has the new epoch but nothing yet: m1 still runs every task.
    assert_eq!(r2.member_epoch, 3);
    assert_eq!(r2.tasks, Some(TaskSet::default()));
    assert_eq!(g.members["m2"].state, MemberState::UnreleasedTasks);
    assert_eq!(g.state(), StreamsGroupState::Reconciling);

    // m1 is told to keep half; its epoch stays until it has let the rest go.
    let r1 = g.heartbeat(beat("m1", 2, &all), &t, &s, 20).unwrap();
    assert_eq!(r1.member_epoch, 2);
    let kept = r1.tasks.unwrap();
    assert_eq!(count(&kept), 3);
    assert_eq!(g.members["m1"].state, MemberState::UnrevokedTasks);
    // Still holding everything: nothing changes.
    let again = g.heartbeat(beat("m1", 2, &all), &t, &s, 30).unwrap();
    assert_eq!(again.member_epoch, 2);
    assert_eq!(again.tasks, None);
    // Released: m1 reaches the new epoch.
    let r1 = g.heartbeat(beat("m1", 2, &kept), &t, &s, 40).unwrap();
    assert_eq!(r1.member_epoch, 3);
    assert_eq!(g.members["m1"].state, MemberState::Stable);

    let r2 = g
        .heartbeat(beat("m2", 3, &TaskSet::default()), &t, &s, 50)
        .unwrap();
    let got = r2.tasks.unwrap();
    assert_eq!(count(&got), 3);
    assert!(!got.holds_any_of(&kept));
    assert_eq!(g.state(), StreamsGroupState::Stable);

    // KIP-1251: at its epoch before, m1 may still commit the input partitions of the tasks
    // it kept, not those of the tasks it gave up, nor a topic no sub-topology reads.
    let input = |subtopology: &str| match subtopology {
        "0" => "lines",
        _ => "wc-counts-repartition",
    };
    let fence = g.validate_commit("m1", 2, Some(9)).unwrap();
    for (subtopology, ps) in &kept.active {
        for p in ps {
            assert_eq!(fence.check(input(subtopology), *p), Ok(()));
        }
    }
    for (subtopology, ps) in &got.active {
        for p in ps {
            assert_eq!(
                fence.check(input(subtopology), *p),
                Err(ResponseError::StaleMemberEpoch)
            );
        }
    }
    assert_eq!(
        fence.check("wc-counts-changelog", 0),
        Err(ResponseError::StaleMemberEpoch)
    );
    // m2's tasks were assigned at epoch 3.
    let fence = g.validate_commit("m2", 2, Some(9)).unwrap();
    for (subtopology, ps) in &got.active {
        for p in ps {
            assert_eq!(
                fence.check(input(subtopology), *p),
                Err(ResponseError::StaleMemberEpoch)
            );
        }
    }
    assert_eq!(g.validate_commit("m2", 3, Some(9)), Ok(CommitFence::Open));
    assert_eq!(
        g.validate_commit("m2", 4, Some(9)),
        Err(ResponseError::StaleMemberEpoch)
    );
    assert_eq!(
        g.validate_commit("m2", 3, Some(8)),
        Err(ResponseError::UnsupportedVersion)
    );
}

#[test]
fn a_leaving_members_tasks_go_to_the_others() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    let owned = g.members["m1"].assigned.clone();
    let r = g.heartbeat(beat("m1", 2, &owned), &t, &s, 0).unwrap();
    let owned = r.tasks.unwrap();
    g.heartbeat(beat("m1", 2, &owned), &t, &s, 0).unwrap();
    let epoch = g.epoch;
    g.leave("m2").unwrap();
    assert_eq!(g.epoch, epoch + 1);
    let r = g
        .heartbeat(beat("m1", g.members["m1"].epoch, &owned), &t, &s, 0)
        .unwrap();
    assert_eq!(count(&r.tasks.unwrap()), 6);
    assert_eq!(g.leave("m2").unwrap_err().code(), 25);
}

#[test]
fn a_silent_member_is_removed_after_its_session() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    g.heartbeat(join("m1", "p1"), &topics.lookup(), &s, 0)
        .unwrap();
    assert!(g.expire(44_999).is_empty());
    assert_eq!(g.next_deadline(), Some(45_000));
    assert_eq!(
        g.expire(45_000),
        [("m1".to_string(), RemovalReason::SessionExpired)]
    );
    assert_eq!(g.state(), StreamsGroupState::Empty);
}

#[test]
fn a_member_that_does_not_revoke_in_time_is_removed() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let all = g
        .heartbeat(join("m1", "p1"), &t, &s, 0)
        .unwrap()
        .tasks
        .unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    g.heartbeat(beat("m1", 2, &all), &t, &s, 1_000).unwrap();
    assert_eq!(g.members["m1"].state, MemberState::UnrevokedTasks);
    // Rebalance timeout 30 s from the revocation.
    assert!(g.expire(30_999).is_empty());
    assert_eq!(
        g.expire(31_000),
        [("m1".to_string(), RemovalReason::RevocationTimedOut)]
    );
}

#[test]
fn wrong_epochs_are_fenced() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let r = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    assert_eq!(r.member_epoch, 2);
    let e = g
        .heartbeat(beat("m1", 5, &TaskSet::default()), &t, &s, 0)
        .unwrap_err();
    assert_eq!(e.code(), 110);
    let e = g
        .heartbeat(beat("nobody", 1, &TaskSet::default()), &t, &s, 0)
        .unwrap_err();
    assert_eq!(e.code(), 25);
}

/// Kafka starts a streams group at epoch 2 (1 is kept for the empty target of the initial
/// rebalance delay), so a first member that is assigned at once is at epoch 2.
#[test]
fn a_new_group_starts_at_epoch_two() {
    let mut g = StreamsGroup::new("wc");
    let topics = Topics::all_word_count();
    let r = g
        .heartbeat(join("m1", "p1"), &topics.lookup(), &settings(), 0)
        .unwrap();
    assert_eq!((r.member_epoch, g.epoch, g.assignment_epoch), (2, 2, 2));
    assert_eq!(count(&r.tasks.unwrap()), 6);
}

/// The epoch before the current one is accepted only with the tasks the member owns, all
/// within its assignment; a heartbeat that reports none (null) cannot show that: fenced.
#[test]
fn the_previous_epoch_without_reported_tasks_is_fenced() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let first = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let (before, owned) = (first.member_epoch, first.tasks.unwrap());
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    let kept = g
        .heartbeat(beat("m1", before, &owned), &t, &s, 0)
        .unwrap()
        .tasks
        .unwrap();
    let now = g
        .heartbeat(beat("m1", before, &kept), &t, &s, 0)
        .unwrap()
        .member_epoch;
    assert_eq!(now, before + 1);
    let unreported = Heartbeat {
        owned: None,
        ..beat("m1", before, &kept)
    };
    let e = g.heartbeat(unreported, &t, &s, 0).unwrap_err();
    assert_eq!(e.code(), 110);
    // With its tasks reported, the previous epoch passes.
    let r = g.heartbeat(beat("m1", before, &kept), &t, &s, 0).unwrap();
    assert_eq!(r.member_epoch, now);
}

/// When the last member leaves, the group's (empty) target is at the group epoch, as
/// Kafka's StreamsGroupDescribe shows; a member leaving a group that keeps others does not
/// move the assignment epoch.
#[test]
fn the_last_member_leaving_brings_the_assignment_epoch_to_the_group_epoch() {
    let mut g = StreamsGroup::new("wc");
    let s = StreamsGroupSettings {
        assignment_interval_ms: 1_000,
        ..settings()
    };
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 5_000).unwrap();
    let assigned = g.assignment_epoch;
    g.leave("m2").unwrap();
    assert_eq!((g.epoch, g.assignment_epoch), (assigned + 1, assigned));
    g.leave("m1").unwrap();
    assert_eq!((g.epoch, g.assignment_epoch), (assigned + 2, assigned + 2));
    assert_eq!(g.state(), StreamsGroupState::Empty);
}

/// A topology that would become a new group's is checked first: a negative epoch, a
/// co-partition index out of range and a sub-topology without sources are refused with
/// STREAMS_INVALID_TOPOLOGY (the last with Kafka's message) and leave nothing behind.
#[test]
fn a_malformed_first_topology_is_refused() {
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let mut negative = word_count(0);
    negative.epoch = -1;
    let mut bad_index = word_count(0);
    bad_index
        .subtopologies
        .get_mut("0")
        .unwrap()
        .copartition_groups = vec![CopartitionGroup {
        source_topics: vec![3],
        ..CopartitionGroup::default()
    }];
    let mut no_sources = word_count(0);
    no_sources
        .subtopologies
        .get_mut("1")
        .unwrap()
        .repartition_source_topics
        .clear();
    for (topology, message) in [
        (negative, "Topology epoch must be non-negative."),
        (
            bad_index,
            "Copartition group of subtopology 0 refers to a topic it does not have.",
        ),
        (no_sources, "No source topics found for subtopology 1"),
    ] {
        let mut g = StreamsGroup::new("wc");
        let hb = Heartbeat {
            topology: Some(topology),
            ..join("m1", "p1")
        };
        let e = g.heartbeat(hb, &t, &settings(), 0).unwrap_err();
        assert_eq!((e.code(), e.to_string().as_str()), (130, message));
        assert!(g.members.is_empty() && g.topology.is_none());
    }
}

#[test]
fn topologies_must_agree() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let mut first = join("m1", "p1");
    first.topology = Some(word_count(2));
    g.heartbeat(first, &t, &s, 0).unwrap();
    // An older epoch is answered STALE_TOPOLOGY, and the group keeps its own.
    let r = g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    assert_eq!(codes(&r), [StatusCode::StaleTopology]);
    // A different topology at the same epoch is refused.
    let mut other = join("m3", "p3");
    let mut changed = word_count(2);
    changed
        .subtopologies
        .get_mut("0")
        .unwrap()
        .source_topics
        .push("more".to_string());
    other.topology = Some(changed);
    let e = g.heartbeat(other, &t, &s, 0).unwrap_err();
    assert_eq!(e.code(), 42);
    assert!(!g.members.contains_key("m3"));
}

#[test]
fn a_missing_source_topic_keeps_the_group_not_ready() {
    let mut g = StreamsGroup::new("wc");
    let r = g
        .heartbeat(
            join("m1", "p1"),
            &Topics::default().lookup(),
            &settings(),
            0,
        )
        .unwrap();
    assert_eq!(codes(&r), [StatusCode::MissingSourceTopics]);
    assert!(r.to_create.is_empty());
    assert_eq!(g.state(), StreamsGroupState::NotReady);
}

#[test]
fn an_invalid_topology_is_refused_and_changes_nothing() {
    let mut g = StreamsGroup::new("wc");
    let mut hb = join("m1", "p1");
    let mut t = word_count(0);
    t.subtopologies
        .get_mut("0")
        .unwrap()
        .repartition_sink_topics
        .clear();
    hb.topology = Some(t);
    let e = g
        .heartbeat(hb, &Topics::with(&[("lines", 1)]).lookup(), &settings(), 0)
        .unwrap_err();
    assert_eq!(e.code(), 130);
    assert!(g.members.is_empty());
    assert!(g.topology.is_none());
}

#[test]
fn the_initial_rebalance_delay_holds_the_first_assignment() {
    let mut g = StreamsGroup::new("wc");
    let s = StreamsGroupSettings {
        assignment_interval_ms: 0,
        ..StreamsGroupSettings::default()
    };
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    // Joined (epoch 1, not 0, which would mean "still joining"), with nothing yet.
    let r = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    assert_eq!(codes(&r), [StatusCode::AssignmentDelayed]);
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.tasks, Some(TaskSet::default()));
    let r = g.heartbeat(join("m2", "p2"), &t, &s, 1_000).unwrap();
    assert_eq!(codes(&r), [StatusCode::AssignmentDelayed]);
    assert_eq!(r.member_epoch, 1);
    let r = g
        .heartbeat(beat("m1", 1, &TaskSet::default()), &t, &s, 2_000)
        .unwrap();
    assert_eq!(
        (codes(&r), r.member_epoch),
        (vec![StatusCode::AssignmentDelayed], 1)
    );
    // After 3 s, both are assigned in one computation.
    let r = g
        .heartbeat(beat("m1", 1, &TaskSet::default()), &t, &s, 3_000)
        .unwrap();
    assert!(r.status.is_empty(), "{:?}", r.status);
    assert!(r.member_epoch > 1);
    assert_eq!(count(&r.tasks.unwrap()), 3);
}

#[test]
fn a_shutdown_request_is_told_to_every_member() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let mut hb = join("m2", "p2");
    hb.shutdown_application = true;
    g.heartbeat(hb, &t, &s, 0).unwrap();
    let owned = g.members["m1"].assigned.clone();
    let r = g.heartbeat(beat("m1", 2, &owned), &t, &s, 0).unwrap();
    assert!(codes(&r).contains(&StatusCode::ShutdownApplication));
}

#[test]
fn a_static_member_that_comes_back_keeps_its_tasks() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let mut hb = join("m1", "p1");
    hb.instance_id = Some("i1".to_string());
    let tasks = g.heartbeat(hb, &t, &s, 0).unwrap().tasks.unwrap();
    let mut bye = beat("m1", STATIC_LEAVE_EPOCH, &tasks);
    bye.instance_id = Some("i1".to_string());
    assert_eq!(
        g.heartbeat(bye, &t, &s, 0).unwrap().member_epoch,
        STATIC_LEAVE_EPOCH
    );
    // Another member cannot take the instance id while m1 is live.
    let mut back = join("m1b", "p1");
    back.instance_id = Some("i1".to_string());
    let r = g.heartbeat(back, &t, &s, 10).unwrap();
    assert_eq!(r.tasks, Some(tasks));
    assert!(!g.members.contains_key("m1"));
    let mut thief = join("m9", "p9");
    thief.instance_id = Some("i1".to_string());
    assert_eq!(g.heartbeat(thief, &t, &s, 20).unwrap_err().code(), 111);
}

#[test]
fn endpoints_are_sent_when_the_member_is_behind() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let mut hb = join("m1", "p1");
    hb.user_endpoint = Some(Endpoint {
        host: "localhost".to_string(),
        port: 7070,
    });
    let r = g.heartbeat(hb, &t, &s, 0).unwrap();
    let endpoints = r.endpoints.unwrap();
    assert_eq!(endpoints.len(), 1);
    let active = &endpoints[0].active;
    assert_eq!(active["lines"].len(), 3);
    assert_eq!(active["wc-counts-repartition"].len(), 3);
    let owned = r.tasks.unwrap();
    let mut next = beat("m1", r.member_epoch, &owned);
    next.endpoint_epoch = r.endpoint_epoch;
    let r = g.heartbeat(next, &t, &s, 10).unwrap();
    assert!(r.endpoints.is_none());
}

#[test]
fn describe_shows_decided_partition_counts_and_each_members_tasks() {
    let mut g = StreamsGroup::new("wc");
    let s = settings();
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let mut hb = join("m1", "p1");
    hb.task_offsets = Some(vec![(
        TaskId {
            subtopology: "1".to_string(),
            partition: 0,
        },
        42,
    )]);
    let r = g.heartbeat(hb, &t, &s, 0).unwrap();
    let d = describe(&g).unwrap();
    assert_eq!((d.state, d.epoch, d.assignment_epoch), ("Stable", 2, 2));
    let count = &d.topology.subtopologies["1"];
    assert_eq!(count.state_changelog_topics[0].partitions, 3);
    assert_eq!(count.repartition_source_topics[0].partitions, 3);
    assert_eq!(d.members.len(), 1);
    let m = &d.members[0];
    assert_eq!(m.member.id, "m1");
    assert_eq!(Some(&m.assignment), r.tasks.as_ref());
    assert_eq!(m.target.active, m.assignment.active);
    assert_eq!(m.task_offsets.values().copied().collect::<Vec<_>>(), [42]);

    // Before the internal topics exist, the declared topology is shown (partitions 0).
    let mut fresh = StreamsGroup::new("wc");
    fresh
        .heartbeat(
            join("m1", "p1"),
            &Topics::with(&[("lines", 3)]).lookup(),
            &s,
            0,
        )
        .unwrap();
    let d = describe(&fresh).unwrap();
    assert_eq!(d.state, "NotReady");
    assert_eq!(
        d.topology.subtopologies["1"].state_changelog_topics[0].partitions,
        0
    );
}

#[test]
fn a_task_reported_twice_is_an_invalid_request_and_changes_nothing() {
    let mut g = StreamsGroup::new("wc");
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let s = settings();
    let r = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let before = g.clone();
    let task = |p| TaskId {
        subtopology: "0".to_string(),
        partition: p,
    };
    for end in [false, true] {
        let mut hb = beat("m1", r.member_epoch, &TaskSet::default());
        let reported = Some(vec![(task(0), 5), (task(1), 6), (task(0), 7)]);
        if end {
            hb.task_end_offsets = reported;
        } else {
            hb.task_offsets = reported;
        }
        let e = g.heartbeat(hb, &t, &s, 1).unwrap_err();
        assert_eq!(
            e,
            StreamsGroupError::InvalidRequest(
                "Task offsets contain a duplicate entry for subtopology 0 and partition 0."
                    .to_string()
            )
        );
        assert_eq!(g.epoch, before.epoch);
        assert_eq!(g.members, before.members);
    }
}

#[test]
fn members_missing_a_rack_aware_tag_are_told_so_from_version_1() {
    let mut g = StreamsGroup::new("wc");
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let s = StreamsGroupSettings {
        rack_aware_assignment_tags: vec!["zone".to_string(), "rack".to_string()],
        ..settings()
    };
    let missing = |r: &HeartbeatResult| {
        r.status
            .iter()
            .filter(|st| st.code == StatusCode::MissingClientTags)
            .map(|st| st.detail.clone())
            .collect::<Vec<_>>()
    };
    let mut hb = join("m1", "p1");
    hb.version = 1;
    hb.client_tags = Some(BTreeMap::from([("zone".to_string(), "a".to_string())]));
    let r = g.heartbeat(hb, &t, &s, 0).unwrap();
    assert_eq!(
        missing(&r),
        ["Missing required client tags for rack-aware standby assignment: [rack]. Configure them via 'client.tag.<tagKey>' in your Streams config."]
    );
    // A v0 member is not told (the status code is new in v1).
    let mut v0 = join("m2", "p2");
    v0.version = 0;
    assert!(missing(&g.heartbeat(v0, &t, &s, 0).unwrap()).is_empty());
    // With both tags reported, nothing is missing.
    let mut hb = beat("m1", r.member_epoch, r.tasks.as_ref().unwrap());
    hb.version = 1;
    hb.client_tags = Some(BTreeMap::from([
        ("zone".to_string(), "a".to_string()),
        ("rack".to_string(), "r1".to_string()),
    ]));
    assert!(missing(&g.heartbeat(hb, &t, &s, 0).unwrap()).is_empty());
}

#[test]
fn a_changed_assignment_config_starts_a_rebalance_and_is_recorded() {
    let mut g = StreamsGroup::new("wc");
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let s = settings();
    let r = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    assert_eq!(
        g.assignment_configs(),
        &BTreeMap::from([("num.standby.replicas".to_string(), "0".to_string())])
    );
    let tasks = r.tasks.unwrap();
    g.heartbeat(beat("m1", r.member_epoch, &tasks), &t, &s, 1)
        .unwrap();
    let epoch = g.epoch;

    let tagged = StreamsGroupSettings {
        rack_aware_assignment_tags: vec!["zone".to_string(), "rack".to_string()],
        ..settings()
    };
    g.heartbeat(beat("m1", r.member_epoch, &tasks), &t, &tagged, 2)
        .unwrap();
    assert_eq!(g.epoch, epoch + 1);
    assert_eq!(
        g.assignment_configs(),
        &BTreeMap::from([
            ("num.standby.replicas".to_string(), "0".to_string()),
            (
                "rack.aware.assignment.tags".to_string(),
                "zone,rack".to_string()
            ),
        ])
    );
    // The same settings again: no further bump.
    let m = g.members["m1"].clone();
    g.heartbeat(beat("m1", m.epoch, &m.assigned), &t, &tagged, 3)
        .unwrap();
    assert_eq!(g.epoch, epoch + 1);
}
