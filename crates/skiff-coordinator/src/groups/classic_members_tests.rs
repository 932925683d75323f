//! Online migration with a manual clock: a classic group upgraded by a ConsumerGroupHeartbeat,
//! its classic members rebalanced through JoinGroup/SyncGroup/Heartbeat by the server-side
//! assignor, the policy values, and the downgrade when the consumer-protocol member leaves.

use crate::groups::commit_fence::CommitFence;
use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use kafka_protocol::ResponseError;

use super::super::consumer::{Assignment, Heartbeat, LEAVE};
use super::super::consumer_store;
use super::super::embedded_protocol::{encode_assignment, parse_assignment, parse_subscription};
use super::super::group::{
    Group, GroupConfig, GroupState, JoinRequest, MigrationPolicy, SyncOutcome,
};
use super::super::records::{GroupValue, Key, MemberValue};
use crate::wire::{put_i16, put_i32, put_str};

const CFG: GroupConfig = GroupConfig {
    min_session_timeout_ms: 6000,
    max_session_timeout_ms: 300_000,
    initial_rebalance_delay_ms: 0,
    migration: MigrationPolicy::Bidirectional,
};
const SESSION: i32 = 10_000;
const REBALANCE: i32 = 30_000;

fn counts() -> HashMap<String, i32> {
    HashMap::from([("t".to_string(), 4)])
}

fn parts(ps: &[i32]) -> Assignment {
    if ps.is_empty() {
        return Assignment::new();
    }
    Assignment::from([("t".to_string(), ps.iter().copied().collect::<BTreeSet<_>>())])
}

/// A v1 subscription to "t" owning `owned`, as the Java client writes it.
fn subscription(owned: &[i32]) -> Bytes {
    let mut out = Vec::new();
    put_i16(&mut out, 1);
    put_i32(&mut out, 1);
    put_str(&mut out, "t");
    put_i32(&mut out, -1);
    if owned.is_empty() {
        put_i32(&mut out, 0);
    } else {
        put_i32(&mut out, 1);
        put_str(&mut out, "t");
        put_i32(&mut out, owned.len() as i32);
        for p in owned {
            put_i32(&mut out, *p);
        }
    }
    Bytes::from(out)
}

/// A stable classic group at generation 5: a owns t-0,1 and b owns t-2,3 ("range").
fn classic_group(protocol_type: &str) -> Group {
    let member = |id: &str, ps: &[i32]| MemberValue {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout: REBALANCE,
        session_timeout: SESSION,
        subscription: subscription(&[]),
        assignment: encode_assignment(1, &parts(ps)),
    };
    let mut g = Group::new("g", 0);
    g.restore(
        GroupValue {
            protocol_type: protocol_type.into(),
            generation: 5,
            protocol: Some("range".into()),
            leader: Some("a".into()),
            current_state_timestamp: 0,
            members: vec![member("a", &[0, 1]), member("b", &[2, 3])],
        },
        0,
    );
    g
}

fn join_req(id: &str, owned: &[i32]) -> JoinRequest {
    JoinRequest {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: SESSION,
        rebalance_timeout_ms: REBALANCE,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), subscription(owned))],
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}

fn consumer_join(id: &str) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: 0,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout_ms: REBALANCE,
        subscribed: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Heartbeat::default()
    }
}

/// Join then sync a classic member; (generation, partitions it was handed).
fn join_sync(g: &mut Group, id: &str, owned: &[i32], now: i64) -> (i32, Assignment) {
    let c = g.consumer.as_mut().unwrap();
    let j = c.classic_join(join_req(id, owned), &counts(), now).unwrap();
    assert_eq!(j.error, 0);
    assert_eq!(j.member_id, id);
    assert_eq!(j.protocol_name.as_deref(), Some("range"));
    assert_eq!(j.leader, "", "no classic member is the leader");
    let s = c
        .classic_sync(
            id,
            None,
            j.generation_id,
            Some("consumer"),
            Some("range"),
            now,
        )
        .unwrap();
    (j.generation_id, parse_assignment(&s.assignment).unwrap())
}

fn upgraded() -> Group {
    let mut g = classic_group("consumer");
    g.become_consumer_group(MigrationPolicy::Bidirectional, &|_| Some(4), 1)
        .unwrap();
    consumer_store::persist(&mut g, &|_| Some(uuid::Uuid::from_bytes([3; 16])));
    g
}

#[test]
fn upgrade_keeps_members_generation_assignments_and_writes_records() {
    let g = upgraded();
    assert!(g.is_consumer_group());
    assert!(
        g.members.is_empty(),
        "no classic members left in the classic part"
    );
    assert_eq!(g.state_name(), "Stable");
    let c = g.consumer.as_ref().unwrap();
    assert_eq!((c.epoch, c.assignment_epoch), (5, 5));
    assert_eq!(c.classic_count(), 2);
    assert_eq!(c.members["a"].assigned, parts(&[0, 1]));
    assert_eq!(c.members["b"].assigned, parts(&[2, 3]));
    assert_eq!(c.members["a"].epoch, 5);
    assert_eq!(c.members["a"].subscribed, vec!["t".to_string()]);
    assert!(
        g.outbox
            .iter()
            .any(|(k, v)| matches!(k, Key::Group { .. }) && v.is_none()),
        "the classic group metadata is tombstoned"
    );
    // Persisted with the classic member metadata, and read back after a "restart".
    assert!(g
        .outbox
        .iter()
        .any(|(k, v)| matches!(k, Key::Consumer(_)) && v.is_some()));
    let written: consumer_store::Persisted = g.consumer_persisted.clone();
    let r = consumer_store::restore(
        &written,
        &|_| Some("t".to_string()),
        &|_| Some(4),
        45_000,
        100,
    )
    .unwrap();
    let a = &r.members["a"];
    let classic = a
        .classic
        .as_ref()
        .expect("still a classic member after replay");
    assert_eq!(classic.session_timeout_ms, SESSION);
    assert_eq!(classic.protocols[0].0, "range");
    assert_eq!(a.assigned, parts(&[0, 1]));
    assert_eq!(r.epoch, 5);
}

#[test]
fn classic_members_rebalance_with_the_server_assignor() {
    let mut g = upgraded();
    let c = g.consumer.as_mut().unwrap();
    // A consumer-protocol member joins: new epoch, target over a, b, z. Everything is still
    // held by the classic members, so it gets nothing yet.
    let z = c
        .heartbeat(consumer_join("z"), &counts(), 45_000, 2)
        .unwrap();
    assert_eq!(c.epoch, 6);
    assert_eq!(z.assignment, Some(Assignment::new()));
    // The classic members learn about it from their heartbeat.
    assert_eq!(
        c.classic_heartbeat("a", None, 5, 3),
        Err(ResponseError::RebalanceInProgress)
    );
    assert_eq!(
        c.classic_heartbeat("a", None, 4, 3),
        Err(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        c.classic_heartbeat("z", None, 6, 3),
        Err(ResponseError::UnknownMemberId)
    );
    // a (eager: owns nothing when it rejoins) keeps what stays its own, must give up the rest.
    let (gen, got) = join_sync(&mut g, "a", &[], 4);
    assert_eq!(gen, 5, "still revoking: its epoch does not move");
    let c = g.consumer.as_mut().unwrap();
    let a_target = c.target["a"].clone();
    assert!(got.values().flatten().all(|p| a_target["t"].contains(p)));
    assert_eq!(
        c.classic_heartbeat("a", None, 5, 5),
        Err(ResponseError::RebalanceInProgress),
        "partitions to revoke: rejoin"
    );
    // Second round for a and two for b; then everyone converges on the target.
    for now in 6..12 {
        for id in ["a", "b"] {
            let c = g.consumer.as_mut().unwrap();
            let gen = c.members[id].epoch;
            if c.classic_heartbeat(id, None, gen, now).is_err() {
                join_sync(&mut g, id, &[], now);
            }
        }
        let c = g.consumer.as_mut().unwrap();
        let mut hb = consumer_join("z");
        hb.member_epoch = c.members["z"].epoch;
        hb.subscribed = None;
        hb.owned = Some(c.members["z"].assigned.clone());
        c.heartbeat(hb, &counts(), 45_000, now).unwrap();
    }
    let c = g.consumer.as_ref().unwrap();
    assert_eq!(c.state_name(), "Stable");
    for id in ["a", "b", "z"] {
        assert_eq!(
            c.members[id].assigned, c.target[id],
            "{id} reached its target"
        );
        assert_eq!(c.members[id].epoch, 6);
    }
    let all: BTreeSet<i32> = c
        .members
        .values()
        .flat_map(|m| m.assigned["t"].clone())
        .collect();
    assert_eq!(all, BTreeSet::from([0, 1, 2, 3]));
    // Stable classic members heartbeat fine and commit with their generation.
    let mut g = g;
    let c = g.consumer.as_mut().unwrap();
    assert_eq!(c.classic_heartbeat("b", None, 6, 20), Ok(()));
    // A classic member commits with any OffsetCommit version.
    assert_eq!(c.validate_commit("b", 6, Some(8)), Ok(CommitFence::Open));
    assert_eq!(
        c.validate_commit("b", 7, Some(8)),
        Err(ResponseError::IllegalGeneration)
    );
    // At an older generation, a partition it does not hold is refused as a classic
    // member's error.
    let not_b = (0..4)
        .find(|p| !c.members["b"].assigned["t"].contains(p))
        .unwrap();
    let fence = c.validate_commit("b", 5, Some(8)).unwrap();
    assert_eq!(
        fence.check("t", not_b),
        Err(ResponseError::IllegalGeneration)
    );
}

#[test]
fn new_classic_member_join_sync_and_leave() {
    let mut g = upgraded();
    let c = g.consumer.as_mut().unwrap();
    let first = c.classic_join(join_req("", &[]), &counts(), 2).unwrap();
    assert_eq!(first.error, ResponseError::MemberIdRequired.code());
    let id = first.member_id.clone();
    let mut wrong = join_req(&id, &[]);
    wrong.protocol_type = "connect".into();
    assert_eq!(
        c.classic_join(wrong, &counts(), 2),
        Err(ResponseError::InconsistentGroupProtocol)
    );
    let j = c.classic_join(join_req(&id, &[]), &counts(), 2).unwrap();
    assert_eq!(j.error, 0);
    assert_eq!(c.epoch, 6, "a new member bumps the group epoch");
    assert_eq!(
        c.classic_sync(
            &id,
            None,
            j.generation_id,
            Some("consumer"),
            Some("roundrobin"),
            2
        ),
        Err(ResponseError::InconsistentGroupProtocol)
    );
    let s = c
        .classic_sync(&id, None, j.generation_id, None, None, 2)
        .unwrap();
    assert_eq!(s.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(parse_subscription(&subscription(&[])).unwrap().version, 1);
    assert_eq!(
        &s.assignment[..2],
        &[0, 1],
        "assignment in the subscription's version"
    );
    assert_eq!(c.classic_leave(&id, None), Ok(id.clone()));
    assert_eq!(c.epoch, 7);
    assert!(!c.members.contains_key(&id));
    assert_eq!(
        c.classic_leave(&id, None),
        Err(ResponseError::UnknownMemberId)
    );
    c.heartbeat(consumer_join("z"), &counts(), 45_000, 3)
        .unwrap();
    assert_eq!(
        c.classic_leave("z", None),
        Err(ResponseError::UnknownMemberId),
        "LeaveGroup only removes classic members"
    );
}

#[test]
fn classic_member_that_never_syncs_is_removed() {
    let mut g = upgraded();
    let c = g.consumer.as_mut().unwrap();
    c.classic_join(join_req("a", &[0, 1]), &counts(), 10)
        .unwrap();
    // Both keep heartbeating; a never sends SyncGroup.
    let limit = 10 + i64::from(REBALANCE);
    let mut t = 10;
    while t < limit - 1 {
        let c = g.consumer.as_mut().unwrap();
        assert_eq!(c.classic_heartbeat("a", None, 5, t), Ok(()));
        assert_eq!(c.classic_heartbeat("b", None, 5, t), Ok(()));
        assert!(!g.tick(&CFG, t));
        t += 5_000;
    }
    assert!(!g.tick(&CFG, limit - 1));
    assert!(g.tick(&CFG, limit));
    // a is fenced; every member left speaks the classic protocol, so (as in Kafka) the group
    // is downgraded to a classic group holding b alone, which must rejoin.
    assert!(!g.is_consumer_group());
    assert_eq!(g.members.keys().collect::<Vec<_>>(), vec!["b"]);
    assert_eq!(g.state, GroupState::PreparingRebalance);
}

#[test]
fn downgrade_when_the_last_consumer_member_leaves() {
    let mut g = upgraded();
    let c = g.consumer.as_mut().unwrap();
    c.heartbeat(consumer_join("z"), &counts(), 45_000, 2)
        .unwrap();
    let epoch = c.epoch;
    assert!(
        !g.should_downgrade("a", MigrationPolicy::Bidirectional),
        "z is not classic"
    );
    assert!(g.should_downgrade("z", MigrationPolicy::Bidirectional));
    assert!(g.should_downgrade("z", MigrationPolicy::Downgrade));
    assert!(!g.should_downgrade("z", MigrationPolicy::Upgrade));
    assert!(!g.should_downgrade("z", MigrationPolicy::Disabled));
    g.outbox.clear();
    g.downgrade("z", &CFG, 3);
    consumer_store::persist(&mut g, &|_| Some(uuid::Uuid::from_bytes([3; 16])));
    assert!(!g.is_consumer_group());
    assert_eq!(g.generation, epoch);
    assert_eq!(g.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(g.protocol.as_deref(), Some("range"));
    assert_eq!(
        g.state,
        GroupState::PreparingRebalance,
        "members must rejoin"
    );
    assert_eq!(g.members.len(), 2);
    assert!(g
        .outbox
        .iter()
        .any(|(k, v)| matches!(k, Key::Group { .. }) && v.is_some()));
    assert!(
        g.outbox
            .iter()
            .filter(|(k, v)| matches!(k, Key::Consumer(_)) && v.is_none())
            .count()
            >= 2,
        "the consumer group records are tombstoned"
    );
    // They rebalance as a classic group: heartbeat says rejoin, the joins complete.
    assert_eq!(
        g.heartbeat("a", None, epoch, 4),
        Err(ResponseError::RebalanceInProgress)
    );
    let mut ra = join_req("a", &[]);
    ra.require_known_member_id = false;
    let mut rb = join_req("b", &[]);
    rb.require_known_member_id = false;
    let _wa = g.join(&CFG, ra, 5);
    let _wb = g.join(&CFG, rb, 5);
    assert_eq!(g.state, GroupState::CompletingRebalance);
    assert_eq!(g.generation, epoch + 1);
    let leader = g.leader.clone().unwrap();
    let assignments = vec![
        ("a".to_string(), encode_assignment(1, &parts(&[0, 1]))),
        ("b".to_string(), encode_assignment(1, &parts(&[2, 3]))),
    ];
    let out = g.sync(&leader, None, epoch + 1, None, None, assignments, 6);
    assert!(matches!(out, SyncOutcome::Wait(_)));
    assert_eq!(g.state, GroupState::Stable);
}

#[test]
fn consumer_member_expiring_also_downgrades() {
    let mut g = upgraded();
    let c = g.consumer.as_mut().unwrap();
    c.heartbeat(consumer_join("z"), &counts(), 45_000, 2)
        .unwrap();
    // Keep the classic members alive; z stops heartbeating.
    for t in [
        5_000, 9_000, 13_000, 17_000, 21_000, 25_000, 29_000, 33_000, 37_000, 41_000,
    ] {
        if let Some(c) = g.consumer.as_mut() {
            for id in ["a", "b"] {
                let gen = c.members[id].epoch;
                let _ = c.classic_heartbeat(id, None, gen, t);
                if let Some(m) = c.members.get_mut(id) {
                    if let Some(cm) = m.classic.as_mut() {
                        cm.join_deadline = None;
                    }
                }
            }
        }
        g.tick(&CFG, t);
    }
    assert!(g.is_consumer_group());
    g.tick(&CFG, 2 + 45_000);
    assert!(!g.is_consumer_group(), "z expired: downgraded");
    assert_eq!(g.members.len(), 2);
}

#[test]
fn policy_values_gate_the_upgrade() {
    for (policy, ok) in [
        (MigrationPolicy::Bidirectional, true),
        (MigrationPolicy::Upgrade, true),
        (MigrationPolicy::Downgrade, false),
        (MigrationPolicy::Disabled, false),
    ] {
        let mut g = classic_group("consumer");
        let r = g.become_consumer_group(policy, &|_| Some(4), 1);
        assert_eq!(r.is_ok(), ok, "{policy:?}");
        if !ok {
            assert_eq!(r, Err(ResponseError::GroupIdNotFound));
            assert!(!g.is_consumer_group());
            assert_eq!(g.members.len(), 2, "left untouched");
            assert!(g.outbox.is_empty());
        }
    }
    // Only groups of the "consumer" protocol type are upgraded.
    let mut g = classic_group("connect");
    assert_eq!(
        g.become_consumer_group(MigrationPolicy::Bidirectional, &|_| Some(4), 1),
        Err(ResponseError::GroupIdNotFound)
    );
    // An empty classic group is replaced whatever the policy.
    let mut g = Group::new("g", 0);
    g.generation = 3;
    g.protocol_type = Some("consumer".into());
    g.become_consumer_group(MigrationPolicy::Disabled, &|_| Some(4), 1)
        .unwrap();
    assert!(g.is_consumer_group());
    assert!(g
        .outbox
        .iter()
        .any(|(k, v)| matches!(k, Key::Group { .. }) && v.is_none()));
    assert_eq!(MigrationPolicy::parse("UPGRADE"), MigrationPolicy::Upgrade);
    assert_eq!(
        MigrationPolicy::parse("Bidirectional"),
        MigrationPolicy::Bidirectional
    );
    assert_eq!(
        MigrationPolicy::parse("downgrade"),
        MigrationPolicy::Downgrade
    );
    assert_eq!(
        MigrationPolicy::parse("nonsense"),
        MigrationPolicy::Disabled
    );
}

#[test]
fn leave_heartbeat_names_the_member_like_leave_does() {
    let mut g = upgraded();
    let c = g.consumer.as_mut().unwrap();
    c.heartbeat(consumer_join("z"), &counts(), 45_000, 2)
        .unwrap();
    let mut hb = consumer_join("z");
    hb.member_epoch = LEAVE;
    assert_eq!(c.leaving_member(&hb), Ok("z".to_string()));
    hb.member_id = "nobody".into();
    assert_eq!(c.leaving_member(&hb), Err(ResponseError::UnknownMemberId));
}

#[test]
fn static_classic_member_replacing_the_consumer_member_takes_its_partitions() {
    let mut g = upgraded();
    let c = g.consumer.as_mut().unwrap();
    let mut z = consumer_join("z");
    z.instance_id = Some("i1".into());
    c.heartbeat(z, &counts(), 45_000, 2).unwrap();
    let epoch = c.epoch;
    let z_target = c.target["z"].clone();
    // The same instance restarts on the classic protocol, without a member id.
    let mut req = join_req("", &[]);
    req.group_instance_id = Some("i1".into());
    assert_eq!(c.replaced_by_join(&req).as_deref(), Some("z"));
    let j = c.classic_join(req, &counts(), 3).unwrap();
    assert_eq!(j.error, 0);
    assert_ne!(j.member_id, "z");
    assert!(!c.members.contains_key("z"));
    assert_eq!(c.epoch, epoch, "same subscription: no new rebalance");
    assert_eq!(
        c.target[&j.member_id], z_target,
        "the target moved to the new member id"
    );
    // Every member is classic now: Kafka downgrades without a rebalance.
    assert!(g.should_downgrade_after_replace(&j.member_id, MigrationPolicy::Bidirectional));
    assert!(!g.should_downgrade_after_replace(&j.member_id, MigrationPolicy::Upgrade));
    g.downgrade_after_replace(4);
    assert!(!g.is_consumer_group());
    assert_eq!(g.state, GroupState::Stable);
    assert_eq!(g.generation, epoch);
    assert_eq!(g.static_members["i1"], j.member_id);
    let got = parse_assignment(&g.members[&j.member_id].assignment).unwrap();
    assert_eq!(got, z_target);
}
