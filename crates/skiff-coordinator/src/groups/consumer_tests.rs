//! Unit tests of the KIP-848 consumer group state machine (`consumer.rs`).

use super::*;
use crate::groups::commit_fence::CommitFence;

fn counts() -> HashMap<String, i32> {
    HashMap::from([("t".to_string(), 4)])
}

fn join(s: &mut ConsumerState, id: &str, now: i64) -> HeartbeatResult {
    s.heartbeat(
        Heartbeat {
            member_id: id.into(),
            member_epoch: 0,
            rebalance_timeout_ms: 10_000,
            subscribed: Some(vec!["t".into()]),
            owned: Some(Assignment::new()),
            ..Heartbeat::default()
        },
        &counts(),
        45_000,
        now,
    )
    .unwrap()
}

fn beat(
    s: &mut ConsumerState,
    id: &str,
    epoch: i32,
    owned: &Assignment,
    now: i64,
) -> HeartbeatResult {
    s.heartbeat(
        Heartbeat {
            member_id: id.into(),
            member_epoch: epoch,
            rebalance_timeout_ms: 10_000,
            owned: Some(owned.clone()),
            ..Heartbeat::default()
        },
        &counts(),
        45_000,
        now,
    )
    .unwrap()
}

#[test]
fn range_assignor_cuts_contiguous_ranges() {
    let mut s = ConsumerState::default();
    for id in ["a", "b"] {
        s.heartbeat(
            Heartbeat {
                member_id: id.into(),
                member_epoch: 0,
                subscribed: Some(vec!["t".into()]),
                assignor: Some(Assignor::Range),
                ..Heartbeat::default()
            },
            &HashMap::from([("t".to_string(), 5)]),
            45_000,
            0,
        )
        .unwrap();
    }
    assert_eq!(s.assignor, Assignor::Range);
    assert_eq!(parts(&s.target["a"]), vec![0, 1, 2]);
    assert_eq!(parts(&s.target["b"]), vec![3, 4]);
}

/// A join bumps the group epoch once, whatever assignor it asks for; a later heartbeat that
/// changes the subscription and the assignor together bumps it once too (Kafka's epochs).
#[test]
fn one_heartbeat_bumps_the_group_epoch_once() {
    let joined = |assignor| {
        let mut s = ConsumerState::default();
        let hb = Heartbeat {
            member_id: "a".into(),
            member_epoch: 0,
            subscribed: Some(vec!["t".into()]),
            assignor,
            owned: Some(Assignment::new()),
            ..Heartbeat::default()
        };
        let r = s.heartbeat(hb, &counts(), 45_000, 0).unwrap();
        (s, r.member_epoch)
    };
    let (_, uniform) = joined(None);
    let (mut s, range) = joined(Some(Assignor::Range));
    assert_eq!(range, uniform);
    let before = s.epoch;
    let hb = Heartbeat {
        member_id: "a".into(),
        member_epoch: range,
        subscribed: Some(vec!["t".into(), "u".into()]),
        assignor: Some(Assignor::Uniform),
        owned: None,
        ..Heartbeat::default()
    };
    s.heartbeat(hb, &counts(), 45_000, 1).unwrap();
    assert_eq!(s.epoch, before + 1);
}

fn parts(a: &Assignment) -> Vec<i32> {
    a.get("t")
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default()
}

#[test]
fn partitions_move_only_after_release() {
    let mut s = ConsumerState::default();
    let a = join(&mut s, "a", 0);
    assert_eq!(parts(a.assignment.as_ref().unwrap()), vec![0, 1, 2, 3]);
    let a_owned = a.assignment.clone().unwrap();
    assert_eq!(s.state_name(), "Stable");
    // b joins: the target splits the partitions, but a still owns them all.
    let b = join(&mut s, "b", 10);
    assert_eq!(parts(b.assignment.as_ref().unwrap()), Vec::<i32>::new());
    assert_eq!(s.state_name(), "Reconciling");
    // a is told to keep half (revoking the rest) and stays at its epoch.
    let a2 = beat(&mut s, "a", a.member_epoch, &a_owned, 20);
    let kept = a2.assignment.clone().unwrap();
    assert_eq!(parts(&kept).len(), 2);
    assert_eq!(a2.member_epoch, a.member_epoch);
    // a reports the release: it reaches the new epoch; b then gets the freed partitions.
    let a3 = beat(&mut s, "a", a2.member_epoch, &kept, 30);
    assert_eq!(a3.member_epoch, s.assignment_epoch);
    let b2 = beat(&mut s, "b", b.member_epoch, &Assignment::new(), 40);
    assert_eq!(parts(b2.assignment.as_ref().unwrap()).len(), 2);
    let mut all: Vec<i32> = parts(&kept);
    all.extend(parts(b2.assignment.as_ref().unwrap()));
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3]);
    assert_eq!(s.state_name(), "Stable");
    // Leaving gives the partitions back to the group.
    beat(&mut s, "b", LEAVE, &Assignment::new(), 50);
    let a4 = beat(&mut s, "a", a3.member_epoch, &kept, 60);
    assert_eq!(parts(a4.assignment.as_ref().unwrap()), vec![0, 1, 2, 3]);
}

#[test]
fn fenced_epoch_unknown_member_and_session_expiry() {
    let mut s = ConsumerState::default();
    let a = join(&mut s, "a", 0);
    let err = s
        .heartbeat(
            Heartbeat {
                member_id: "a".into(),
                member_epoch: a.member_epoch + 5,
                ..Heartbeat::default()
            },
            &counts(),
            45_000,
            1,
        )
        .unwrap_err();
    assert_eq!(err, ResponseError::FencedMemberEpoch);
    let err = s
        .heartbeat(
            Heartbeat {
                member_id: "zz".into(),
                member_epoch: 3,
                ..Heartbeat::default()
            },
            &counts(),
            45_000,
            1,
        )
        .unwrap_err();
    assert_eq!(err, ResponseError::UnknownMemberId);
    assert!(!s.tick(44_999));
    assert!(s.tick(45_000));
    assert!(s.is_empty());
    assert_eq!(s.validate_commit("", -1, None), Ok(CommitFence::Open));
}
