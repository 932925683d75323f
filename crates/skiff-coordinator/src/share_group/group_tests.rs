//! One share group's membership: join, rebalance, leave, expiry, fencing, size, epochs.

use super::test_support::*;
use super::*;

fn join(
    g: &mut ShareGroup,
    topics: &Topics,
    member: &str,
    subs: &[&str],
    now: i64,
) -> HeartbeatResult {
    g.heartbeat(join_hb(member, subs), topics, &eager(), now)
        .unwrap()
}

fn beat(
    g: &mut ShareGroup,
    topics: &Topics,
    member: &str,
    epoch: i32,
    now: i64,
) -> HeartbeatResult {
    g.heartbeat(beat_hb(member, epoch), topics, &eager(), now)
        .unwrap()
}

#[test]
fn a_first_member_gets_every_partition() {
    let topics = Topics::with(&[("t", 4)]);
    let mut g = ShareGroup::new("g");
    assert_eq!(g.state(), ShareGroupState::Empty);
    let r = join(&mut g, &topics, "m1", &["t"], 0);
    assert_eq!(r.member_id, "m1");
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.assignment, Some(tps(&[("t", &[0, 1, 2, 3])])));
    assert_eq!((g.epoch, g.assignment_epoch), (1, 1));
    assert_eq!(g.state(), ShareGroupState::Stable);
}

#[test]
fn a_second_member_rebalances_and_the_first_learns_on_its_next_heartbeat() {
    let topics = Topics::with(&[("t", 4)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0);
    let r2 = join(&mut g, &topics, "m2", &["t"], 10);
    assert_eq!(r2.member_epoch, 2);
    // Sticky: m1 keeps half of what it had, m2 takes the other half.
    assert_eq!(r2.assignment, Some(tps(&[("t", &[0, 1])])));
    // m1 still holds everything until it heartbeats: no revocation step in share groups.
    assert_eq!(g.members["m1"].assigned, tps(&[("t", &[0, 1, 2, 3])]));
    let r1 = beat(&mut g, &topics, "m1", 1, 20);
    assert_eq!(r1.member_epoch, 2);
    assert_eq!(r1.assignment, Some(tps(&[("t", &[2, 3])])));
    // Nothing changed since: no assignment in the answer.
    let r1 = beat(&mut g, &topics, "m1", 2, 30);
    assert_eq!((r1.member_epoch, r1.assignment), (2, None));
}

#[test]
fn more_members_than_partitions_all_get_the_partition() {
    let topics = Topics::with(&[("t", 1)]);
    let mut g = ShareGroup::new("g");
    for (i, m) in ["a", "b", "c"].iter().enumerate() {
        join(&mut g, &topics, m, &["t"], i as i64);
    }
    for m in ["a", "b", "c"] {
        let epoch = g.members[m].epoch;
        beat(&mut g, &topics, m, epoch, 10);
        assert_eq!(g.members[m].assigned, tps(&[("t", &[0])]), "{m}");
    }
}

#[test]
fn a_leave_bumps_the_epoch_and_reports_what_the_member_had() {
    let topics = Topics::with(&[("t", 4)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0);
    join(&mut g, &topics, "m2", &["t"], 10);
    assert_eq!(
        beat(&mut g, &topics, "m1", 1, 15).assignment,
        Some(tps(&[("t", &[2, 3])]))
    );
    let gone = g.leave("m2", &topics).unwrap();
    assert_eq!(
        gone,
        MemberRemoved {
            group_id: "g".into(),
            member_id: "m2".into(),
            reason: RemovalReason::Left,
            assignment: tps(&[("t", &[0, 1])]),
        }
    );
    assert_eq!(g.epoch, 3);
    let r1 = beat(&mut g, &topics, "m1", 2, 20);
    assert_eq!(r1.member_epoch, 3);
    assert_eq!(r1.assignment, Some(tps(&[("t", &[0, 1, 2, 3])])));
    g.leave("m1", &topics).unwrap();
    assert_eq!(g.state(), ShareGroupState::Empty);
    assert_eq!(
        g.leave("m1", &topics),
        Err(ShareGroupError::UnknownMember {
            member: "m1".into(),
            group: "g".into()
        })
    );
}

#[test]
fn a_silent_member_is_removed_at_its_session_timeout() {
    let topics = Topics::with(&[("t", 2)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0);
    join(&mut g, &topics, "m2", &["t"], 0);
    let e1 = beat(&mut g, &topics, "m1", 1, 30_000).member_epoch;
    assert_eq!(g.next_deadline(), Some(45_000));
    assert!(g.expire(&topics, 44_999).is_empty());
    let gone = g.expire(&topics, 45_000);
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].member_id, "m2");
    assert_eq!(gone[0].reason, RemovalReason::SessionExpired);
    assert_eq!(gone[0].assignment, tps(&[("t", &[0])]));
    assert_eq!(g.epoch, 3);
    // m1 (deadline 75 s) gets both partitions on its next heartbeat.
    let r = beat(&mut g, &topics, "m1", e1, 50_000);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(r.assignment, Some(tps(&[("t", &[0, 1])])));
    assert_eq!(g.next_deadline(), Some(95_000));
}

#[test]
fn a_heartbeat_moves_the_session_deadline() {
    let topics = Topics::with(&[("t", 1)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0);
    beat(&mut g, &topics, "m1", 1, 40_000);
    assert!(g.expire(&topics, 45_000).is_empty());
    assert_eq!(g.expire(&topics, 85_000).len(), 1);
}

#[test]
fn epochs_ahead_or_behind_the_previous_one_are_fenced() {
    let topics = Topics::with(&[("t", 2)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0); // epoch 1
    join(&mut g, &topics, "m2", &["t"], 0);
    beat(&mut g, &topics, "m1", 1, 1); // epoch 2, previous 1
    join(&mut g, &topics, "m3", &["t"], 2);
    beat(&mut g, &topics, "m1", 2, 3); // epoch 3, previous 2
    let settings = eager();
    let err = g
        .heartbeat(beat_hb("m1", 4), &topics, &settings, 4)
        .unwrap_err();
    assert_eq!(
        err,
        ShareGroupError::FencedEpoch {
            received: 4,
            current: 3
        }
    );
    assert_eq!(err.code(), 110);
    let err = g
        .heartbeat(beat_hb("m1", 1), &topics, &settings, 4)
        .unwrap_err();
    assert_eq!(err.code(), 110);
    // The previous epoch is accepted: the answer with the new one may have been lost.
    assert_eq!(beat(&mut g, &topics, "m1", 2, 5).member_epoch, 3);
    // A fenced member rejoins with epoch 0 and keeps its id and epoch.
    let r = join(&mut g, &topics, "m1", &["t"], 6);
    assert_eq!(r.member_epoch, 3);
    assert!(r.assignment.is_some());
    assert_eq!(
        g.epoch, 3,
        "a rejoin with the same subscription is no change"
    );
}

#[test]
fn an_unknown_member_with_a_nonzero_epoch_is_refused() {
    let topics = Topics::with(&[("t", 1)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0);
    let err = g
        .heartbeat(beat_hb("ghost", 1), &topics, &eager(), 1)
        .unwrap_err();
    assert_eq!(err.to_string(), "Member ghost is not a member of group g.");
    assert_eq!(err.code(), 25);
    assert_eq!(g.epoch, 1);
}

#[test]
fn the_group_max_size_refuses_new_members_only() {
    let topics = Topics::with(&[("t", 1)]);
    let settings = ShareGroupSettings {
        max_size: 2,
        ..eager()
    };
    let mut g = ShareGroup::new("g");
    for m in ["m1", "m2"] {
        g.heartbeat(join_hb(m, &["t"]), &topics, &settings, 0)
            .unwrap();
    }
    let err = g
        .heartbeat(join_hb("m3", &["t"]), &topics, &settings, 1)
        .unwrap_err();
    assert_eq!(err, ShareGroupError::GroupFull(2));
    assert_eq!(err.code(), 81);
    // Kafka checks the size first: an unknown member in a full group hears GROUP_MAX_SIZE_REACHED.
    let err = g
        .heartbeat(beat_hb("m3", 5), &topics, &settings, 1)
        .unwrap_err();
    assert_eq!(err.code(), 81);
    assert_eq!(g.members.len(), 2);
    // Members already in still heartbeat and rejoin.
    let e = g.members["m1"].epoch;
    g.heartbeat(beat_hb("m1", e), &topics, &settings, 2)
        .unwrap();
    g.heartbeat(join_hb("m2", &["t"]), &topics, &settings, 2)
        .unwrap();
    // A place freed is a place taken.
    g.leave("m1", &topics).unwrap();
    g.heartbeat(join_hb("m3", &["t"]), &topics, &settings, 3)
        .unwrap();
    assert_eq!(g.members.len(), 2);
}

#[test]
fn the_assignment_waits_for_the_assignment_interval() {
    let topics = Topics::with(&[("t", 2)]);
    let settings = ShareGroupSettings::default();
    assert_eq!(settings.assignment_interval_ms, 1_000);
    let mut g = ShareGroup::new("g");
    let r1 = g
        .heartbeat(join_hb("m1", &["t"]), &topics, &settings, 0)
        .unwrap();
    assert_eq!(r1.assignment, Some(tps(&[("t", &[0, 1])])));
    // 10 ms later: the group epoch moves, the target does not yet.
    let r2 = g
        .heartbeat(join_hb("m2", &["t"]), &topics, &settings, 10)
        .unwrap();
    assert_eq!((g.epoch, g.assignment_epoch), (2, 1));
    assert_eq!(r2.member_epoch, 1);
    assert_eq!(r2.assignment, Some(TopicAssignment::new()));
    // Once the interval has passed, the next heartbeat computes it.
    let r2 = g
        .heartbeat(beat_hb("m2", 1), &topics, &settings, 1_000)
        .unwrap();
    assert_eq!(r2.member_epoch, 2);
    assert_eq!(r2.assignment, Some(tps(&[("t", &[0])])));
}

#[test]
fn a_subscription_change_bumps_the_epoch_and_moves_the_assignment() {
    let topics = Topics::with(&[("t", 1), ("u", 2)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0);
    let hb = Heartbeat {
        subscribed: Some(vec!["u".into()]),
        ..beat_hb("m1", 1)
    };
    let r = g.heartbeat(hb, &topics, &eager(), 1).unwrap();
    assert_eq!(g.epoch, 2);
    assert_eq!(r.member_epoch, 2);
    assert_eq!(r.assignment, Some(tps(&[("u", &[0, 1])])));
    assert_eq!(g.members["m1"].subscribed.len(), 1);
}

#[test]
fn partitions_added_to_a_subscribed_topic_bump_the_epoch() {
    let topics = Topics::with(&[("t", 1)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "m1", &["t"], 0);
    join(&mut g, &topics, "m2", &["t"], 0);
    beat(&mut g, &topics, "m1", 1, 1);
    topics.set("t", 2);
    let r = beat(&mut g, &topics, "m1", 2, 2);
    assert_eq!(g.epoch, 3);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(r.assignment, Some(tps(&[("t", &[1])])));
}

#[test]
fn a_topic_that_does_not_exist_yet_is_assigned_once_created() {
    let topics = Topics::default();
    let mut g = ShareGroup::new("g");
    let r = join(&mut g, &topics, "m1", &["later"], 0);
    assert_eq!(r.assignment, Some(TopicAssignment::new()));
    topics.set("later", 1);
    let r = beat(&mut g, &topics, "m1", r.member_epoch, 1);
    assert_eq!(r.assignment, Some(tps(&[("later", &[0])])));
    topics.drop_topic("later");
    let r = beat(&mut g, &topics, "m1", r.member_epoch, 2);
    assert_eq!(r.assignment, Some(TopicAssignment::new()));
}

#[test]
fn differing_subscriptions_are_assigned_per_topic() {
    let topics = Topics::with(&[("t", 2), ("u", 1)]);
    let mut g = ShareGroup::new("g");
    join(&mut g, &topics, "a", &["t"], 0);
    join(&mut g, &topics, "b", &["t", "u"], 0);
    let ea = g.members["a"].epoch;
    beat(&mut g, &topics, "a", ea, 1);
    assert_eq!(g.members["a"].assigned, tps(&[("t", &[1])]));
    assert_eq!(g.members["b"].assigned, tps(&[("t", &[0]), ("u", &[0])]));
}
