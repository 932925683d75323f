//! The "unchanged" sentinels of ConsumerGroupHeartbeat, static membership (temporary leave
//! with epoch -2, instance id ownership), when the assignment is sent, and the assignment
//! epochs that offset commits at an older member epoch are checked against (KIP-1251),
//! checked against Kafka's GroupMetadataManager behaviour.

use super::*;
use crate::groups::commit_fence::CommitFence;

const SESSION: i32 = 100_000;

fn counts() -> HashMap<String, i32> {
    HashMap::from([("t".to_string(), 4)])
}

fn join_hb(id: &str, timeout: i32) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: 0,
        rebalance_timeout_ms: timeout,
        subscribed: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Heartbeat::default()
    }
}

/// What a client sends after its first heartbeat: only the epoch and what it owns.
fn light_hb(id: &str, epoch: i32, owned: &Assignment) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: UNCHANGED_TIMEOUT,
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    }
}

fn beat(s: &mut ConsumerState, hb: Heartbeat, now: i64) -> HeartbeatResult {
    s.heartbeat(hb, &counts(), SESSION, now).unwrap()
}

fn parts(a: &Assignment) -> Vec<i32> {
    a.get("t")
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default()
}

/// Issue 12, item 1: a RebalanceTimeoutMs of -1 after the join is "unchanged", so a
/// revocation gets the rebalance timeout given at the join, not a deadline in the past.
#[test]
fn unchanged_rebalance_timeout_keeps_the_join_value_for_revocations() {
    let mut s = ConsumerState::default();
    let a = beat(&mut s, join_hb("a", 45_000), 0);
    let a_owned = a.assignment.clone().unwrap();
    let a = beat(&mut s, light_hb("a", a.member_epoch, &a_owned), 10);
    assert_eq!(s.members["a"].rebalance_timeout_ms, 45_000);
    beat(&mut s, join_hb("b", 45_000), 20);
    // a is told to give up half its partitions at t=30.
    let a = beat(&mut s, light_hb("a", a.member_epoch, &a_owned), 30);
    assert_eq!(parts(a.assignment.as_ref().unwrap()).len(), 2);
    assert!(!s.members["a"].revoking.is_empty());
    // a is not expired while it revokes, and may commit with its epoch.
    assert!(!s.tick(31));
    assert!(!s.tick(30 + 44_999));
    assert_eq!(
        s.validate_commit("a", a.member_epoch, Some(9)),
        Ok(CommitFence::Open)
    );
    // The real rebalance timeout still applies.
    assert!(s.tick(30 + 45_000));
    assert!(!s.members.contains_key("a"));
}

#[test]
fn null_rack_and_subscription_mean_unchanged_and_new_values_apply() {
    let mut s = ConsumerState::default();
    let mut hb = join_hb("a", 45_000);
    hb.rack_id = Some("r1".into());
    let a = beat(&mut s, hb, 0);
    let owned = a.assignment.clone().unwrap();
    let epoch = s.epoch;
    beat(&mut s, light_hb("a", a.member_epoch, &owned), 1);
    let m = &s.members["a"];
    assert_eq!(m.rack_id.as_deref(), Some("r1"));
    assert_eq!(m.subscribed, vec!["t".to_string()]);
    assert_eq!(s.epoch, epoch, "an all-null heartbeat changes nothing");
    let mut hb = light_hb("a", a.member_epoch, &owned);
    hb.rack_id = Some("r2".into());
    hb.rebalance_timeout_ms = 30_000;
    hb.client_id = "c2".into();
    beat(&mut s, hb, 2);
    let m = &s.members["a"];
    assert_eq!(m.rack_id.as_deref(), Some("r2"));
    assert_eq!(m.rebalance_timeout_ms, 30_000);
    assert_eq!(m.client_id, "c2");
}

#[test]
fn a_full_heartbeat_gets_the_assignment_even_when_unchanged() {
    let mut s = ConsumerState::default();
    let a = beat(&mut s, join_hb("a", 45_000), 0);
    let owned = a.assignment.clone().unwrap();
    let light = beat(&mut s, light_hb("a", a.member_epoch, &owned), 1);
    assert_eq!(light.assignment, None);
    // Every field a join must carry (what clients send after an error): assignment again.
    let mut full = light_hb("a", a.member_epoch, &owned);
    full.rebalance_timeout_ms = 45_000;
    full.subscribed = Some(vec!["t".into()]);
    let full = beat(&mut s, full, 2);
    assert_eq!(full.assignment, Some(owned));
}

fn static_join(id: &str, instance: &str) -> Heartbeat {
    Heartbeat {
        instance_id: Some(instance.into()),
        ..join_hb(id, 45_000)
    }
}

#[test]
fn static_member_leaves_for_a_while_and_its_successor_inherits_its_partitions() {
    let mut s = ConsumerState::default();
    let a = beat(&mut s, static_join("a1", "i"), 0);
    let owned = a.assignment.clone().unwrap();
    assert_eq!(parts(&owned), vec![0, 1, 2, 3]);
    let epoch = s.epoch;
    let mut leave = light_hb("a1", STATIC_LEAVE, &owned);
    leave.instance_id = Some("i".into());
    let left = beat(&mut s, leave, 10);
    assert_eq!(
        (left.member_id.as_str(), left.member_epoch),
        ("a1", STATIC_LEAVE)
    );
    // Still a member, no rebalance, partitions kept.
    assert_eq!(s.epoch, epoch);
    assert_eq!(s.members["a1"].epoch, STATIC_LEAVE);
    assert_eq!(parts(&s.members["a1"].assigned), vec![0, 1, 2, 3]);
    assert_eq!(s.state_name(), "Stable");
    // The same instance id under a new member id takes the partitions over.
    let a2 = beat(&mut s, static_join("a2", "i"), 20);
    assert!(!s.members.contains_key("a1"));
    assert_eq!(parts(a2.assignment.as_ref().unwrap()), vec![0, 1, 2, 3]);
    // The session of a member that left temporarily still expires.
    let mut s2 = ConsumerState::default();
    let b = beat(&mut s2, static_join("b1", "j"), 0);
    let mut leave = light_hb("b1", STATIC_LEAVE, &b.assignment.unwrap());
    leave.instance_id = Some("j".into());
    beat(&mut s2, leave, 10);
    assert!(s2.tick(10 + i64::from(SESSION)));
    assert!(s2.is_empty());
}

#[test]
fn instance_ids_are_owned_fenced_and_unknown_like_kafka() {
    let mut s = ConsumerState::default();
    let a = beat(&mut s, static_join("a1", "i"), 0);
    let owned = a.assignment.clone().unwrap();
    // An active static member keeps its instance id.
    let err = s
        .heartbeat(static_join("a2", "i"), &counts(), SESSION, 1)
        .unwrap_err();
    assert_eq!(err, ResponseError::UnreleasedInstanceId);
    assert!(s.members.contains_key("a1"));
    // Another member id heartbeating (or leaving) with that instance id is fenced.
    for epoch in [a.member_epoch, LEAVE, STATIC_LEAVE] {
        let mut hb = light_hb("a2", epoch, &owned);
        hb.instance_id = Some("i".into());
        let err = s.heartbeat(hb, &counts(), SESSION, 2).unwrap_err();
        assert_eq!(err, ResponseError::FencedInstanceId, "epoch {epoch}");
    }
    // An instance id nobody holds is unknown.
    let mut hb = light_hb("a1", a.member_epoch, &owned);
    hb.instance_id = Some("nobody".into());
    let err = s.heartbeat(hb, &counts(), SESSION, 3).unwrap_err();
    assert_eq!(err, ResponseError::UnknownMemberId);
    // A static member leaving with -1 leaves for good.
    let mut hb = light_hb("a1", LEAVE, &owned);
    hb.instance_id = Some("i".into());
    assert_eq!(beat(&mut s, hb, 4).member_epoch, LEAVE);
    assert!(s.is_empty());
}

/// KIP-1251: a member that gave up half its partitions to a newcomer and moved to the new
/// epoch may still commit, at the epoch before, the partitions it kept; not those it gave
/// up, nor at an epoch before it got them. The newcomer's partitions were assigned at the
/// new epoch.
#[test]
fn a_commit_at_the_epoch_before_may_name_only_the_partitions_held_since() {
    let mut s = ConsumerState::default();
    let a = beat(&mut s, join_hb("a", 45_000), 0);
    let first = a.member_epoch;
    let all = a.assignment.clone().unwrap();
    assert_eq!(parts(&all), [0, 1, 2, 3]);
    let b = beat(&mut s, join_hb("b", 45_000), 10);
    let revoking = beat(&mut s, light_hb("a", first, &all), 20);
    let kept = revoking.assignment.clone().unwrap();
    let a = beat(&mut s, light_hb("a", first, &kept), 30);
    let second = a.member_epoch;
    assert!(second > first, "a moved to the new epoch");
    let b = beat(
        &mut s,
        light_hb("b", b.member_epoch, &Assignment::new()),
        40,
    );
    assert_eq!(b.member_epoch, second);
    let b_parts = parts(b.assignment.as_ref().unwrap());
    assert_eq!(b_parts.len(), 2);

    assert_eq!(
        s.validate_commit("a", second, Some(9)),
        Ok(CommitFence::Open)
    );
    let fence = s.validate_commit("a", first, Some(9)).unwrap();
    for p in parts(&kept) {
        assert_eq!(fence.check("t", p), Ok(()), "kept partition {p}");
    }
    for p in &b_parts {
        assert_eq!(
            fence.check("t", *p),
            Err(ResponseError::StaleMemberEpoch),
            "given-up partition {p}"
        );
    }
    let before = s.validate_commit("a", first - 1, Some(9)).unwrap();
    for p in 0..4 {
        assert_eq!(before.check("t", p), Err(ResponseError::StaleMemberEpoch));
    }
    assert_eq!(
        s.validate_commit("a", second + 1, Some(9)),
        Err(ResponseError::StaleMemberEpoch)
    );
    let b_fence = s.validate_commit("b", second - 1, Some(9)).unwrap();
    for p in &b_parts {
        assert_eq!(b_fence.check("t", *p), Err(ResponseError::StaleMemberEpoch));
    }
    // OffsetCommit before v9 carries a generation, which a consumer-protocol member has not.
    assert_eq!(
        s.validate_commit("a", second, Some(8)),
        Err(ResponseError::UnsupportedVersion)
    );
    assert_eq!(
        s.validate_commit("a", second, None),
        Ok(CommitFence::Open),
        "TxnOffsetCommit has no such version floor"
    );
    assert_eq!(
        s.validate_commit("nobody", second, Some(9)),
        Err(ResponseError::UnknownMemberId)
    );
}
