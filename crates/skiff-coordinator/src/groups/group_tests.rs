//! State machine tests with a manual clock: no sockets, no disk, no runtime.

use super::*;
use crate::groups::commit_fence::CommitFence;

const CFG: GroupConfig = GroupConfig {
    min_session_timeout_ms: 6000,
    max_session_timeout_ms: 300_000,
    initial_rebalance_delay_ms: 0,
    migration: MigrationPolicy::Bidirectional,
};

fn req(member: &str, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        member_id: member.to_string(),
        group_instance_id: None,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|p| (p.to_string(), Bytes::from(format!("meta-{p}"))))
            .collect(),
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}

fn ready(o: JoinOutcome) -> JoinResult {
    match o {
        JoinOutcome::Ready(r) => r,
        JoinOutcome::Wait(_) => panic!("expected an immediate answer"),
    }
}

fn waiting(o: JoinOutcome) -> oneshot::Receiver<JoinResult> {
    match o {
        JoinOutcome::Wait(rx) => rx,
        JoinOutcome::Ready(r) => panic!("expected to wait, got {r:?}"),
    }
}

/// First join (MEMBER_ID_REQUIRED) then the real join; returns the member id and receiver.
fn join_new(
    g: &mut Group,
    cfg: &GroupConfig,
    protocols: &[&str],
    now: i64,
) -> (String, oneshot::Receiver<JoinResult>) {
    let first = ready(g.join(cfg, req("", protocols), now));
    assert_eq!(first.error, ResponseError::MemberIdRequired.code());
    assert!(!first.member_id.is_empty());
    let rx = waiting(g.join(cfg, req(&first.member_id, protocols), now));
    (first.member_id, rx)
}

fn sync_ready(o: SyncOutcome) -> SyncResult {
    match o {
        SyncOutcome::Ready(r) => r,
        SyncOutcome::Wait(_) => panic!("expected an immediate sync answer"),
    }
}

fn sync_wait(o: SyncOutcome) -> oneshot::Receiver<SyncResult> {
    match o {
        SyncOutcome::Wait(rx) => rx,
        SyncOutcome::Ready(r) => panic!("expected to wait, got {r:?}"),
    }
}

#[test]
fn single_member_join_sync_heartbeat() {
    let mut g = Group::new("g", 0);
    let (id, mut rx) = join_new(&mut g, &CFG, &["range"], 0);
    let joined = rx.try_recv().unwrap();
    assert_eq!(joined.error, 0);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, id);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.members.len(), 1, "the leader gets the member list");
    assert_eq!(g.state, GroupState::CompletingRebalance);

    let mut srx = sync_wait(g.sync(
        &id,
        None,
        1,
        None,
        None,
        vec![(id.clone(), Bytes::from_static(b"A"))],
        10,
    ));
    let synced = srx.try_recv().unwrap();
    assert_eq!((synced.error, &synced.assignment[..]), (0, &b"A"[..]));
    assert_eq!(g.state, GroupState::Stable);
    // The metadata record is queued with the assignment.
    match g.outbox.last() {
        Some((Key::Group { group }, Some(Value::Group(v)))) => {
            assert_eq!(group, "g");
            assert_eq!(v.generation, 1);
            assert_eq!(&v.members[0].assignment[..], b"A");
        }
        other => panic!("unexpected outbox {other:?}"),
    }
    assert_eq!(g.heartbeat(&id, None, 1, 20), Ok(()));
    assert_eq!(
        g.heartbeat(&id, None, 0, 20),
        Err(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        g.heartbeat("nobody", None, 1, 20),
        Err(ResponseError::UnknownMemberId)
    );
}

#[test]
fn second_member_triggers_rebalance_and_both_get_results() {
    let mut g = Group::new("g", 0);
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    rxa.try_recv().unwrap();
    sync_wait(g.sync(&a, None, 1, None, None, vec![], 0));
    assert_eq!(g.state, GroupState::Stable);

    let (b, mut rxb) = join_new(&mut g, &CFG, &["range"], 100);
    assert_eq!(g.state, GroupState::PreparingRebalance);
    assert!(
        rxb.try_recv().is_err(),
        "waits for the old member to rejoin"
    );
    assert_eq!(
        g.heartbeat(&a, None, 1, 200),
        Err(ResponseError::RebalanceInProgress)
    );
    let mut rxa = waiting(g.join(&CFG, req(&a, &["range"]), 300));
    let ra = rxa.try_recv().unwrap();
    let rb = rxb.try_recv().unwrap();
    assert_eq!((ra.generation_id, rb.generation_id), (2, 2));
    assert_eq!(ra.leader, a, "the leader stays");
    assert_eq!(ra.members.len(), 2);
    assert!(rb.members.is_empty(), "followers get no member list");

    let mut sb = sync_wait(g.sync(&b, None, 2, None, None, vec![], 400));
    assert!(sb.try_recv().is_err(), "follower waits for the leader");
    let mut sa = sync_wait(g.sync(
        &a,
        None,
        2,
        None,
        None,
        vec![
            (a.clone(), Bytes::from_static(b"x")),
            (b.clone(), Bytes::from_static(b"y")),
        ],
        500,
    ));
    assert_eq!(&sa.try_recv().unwrap().assignment[..], b"x");
    assert_eq!(&sb.try_recv().unwrap().assignment[..], b"y");
}

#[test]
fn empty_assignment_is_relayed_as_empty_bytes() {
    let mut g = Group::new("g", 0);
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    rxa.try_recv().unwrap();
    let mut s = sync_wait(g.sync(&a, None, 1, None, None, vec![], 0));
    let r = s.try_recv().unwrap();
    assert_eq!(r.error, 0);
    assert!(r.assignment.is_empty());
}

#[test]
fn rebalance_timeout_removes_members_that_did_not_rejoin() {
    let mut g = Group::new("g", 0);
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    rxa.try_recv().unwrap();
    sync_wait(g.sync(&a, None, 1, None, None, vec![], 0));
    let (b, mut rxb) = join_new(&mut g, &CFG, &["range"], 1000);
    // a keeps heartbeating (told to rejoin) but never does: after the rebalance timeout
    // (30 s) the join phase completes without it.
    for t in [9_000, 18_000, 27_000] {
        assert_eq!(
            g.heartbeat(&a, None, 1, t),
            Err(ResponseError::RebalanceInProgress)
        );
        g.tick(&CFG, t);
        assert_eq!(g.state, GroupState::PreparingRebalance);
    }
    g.tick(&CFG, 30_999);
    assert!(rxb.try_recv().is_err());
    g.tick(&CFG, 31_001);
    let rb = rxb.try_recv().unwrap();
    assert_eq!(rb.error, 0);
    assert_eq!(rb.generation_id, 2);
    assert_eq!(
        rb.leader, b,
        "the old leader is gone; the remaining member leads"
    );
    assert!(!g.members.contains_key(&a));
}

#[test]
fn session_timeout_expires_member_and_group_becomes_empty() {
    let mut g = Group::new("g", 0);
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    rxa.try_recv().unwrap();
    sync_wait(g.sync(&a, None, 1, None, None, vec![], 0));
    g.outbox.clear();
    assert!(!g.tick(&CFG, 9_999));
    assert!(g.tick(&CFG, 10_001));
    assert_eq!(g.state, GroupState::Empty);
    assert_eq!(
        g.generation, 2,
        "Kafka bumps the generation when the group empties"
    );
    assert_eq!(g.state_since, 10_001);
    assert!(
        matches!(g.outbox.last(), Some((Key::Group { .. }, Some(Value::Group(v)))) if v.members.is_empty())
    );
}

#[test]
fn leave_triggers_rebalance_of_the_rest() {
    let mut g = Group::new("g", 0);
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    let (b, _rxb) = join_new(&mut g, &CFG, &["range"], 0);
    // Both joined before completion? a completed alone first.
    let _ = rxa.try_recv();
    let _ = b;
    assert_eq!(g.leave(&CFG, &a, None, 10), Ok(()));
    assert_eq!(
        g.leave(&CFG, &a, None, 10),
        Err(ResponseError::UnknownMemberId)
    );
    assert!(!g.members.contains_key(&a));
}

#[test]
fn initial_rebalance_delay_waits_and_extends() {
    let cfg = GroupConfig {
        initial_rebalance_delay_ms: 3000,
        ..CFG
    };
    let mut g = Group::new("g", 0);
    let (_a, mut rxa) = join_new(&mut g, &cfg, &["range"], 0);
    g.tick(&cfg, 2000);
    assert!(rxa.try_recv().is_err(), "still inside the initial delay");
    let (_b, mut rxb) = join_new(&mut g, &cfg, &["range"], 2000);
    g.tick(&cfg, 3500);
    assert!(
        rxa.try_recv().is_err(),
        "a new member extended the delay to 5000"
    );
    g.tick(&cfg, 5001);
    let (ra, rb) = (rxa.try_recv().unwrap(), rxb.try_recv().unwrap());
    assert_eq!(
        g.state,
        GroupState::CompletingRebalance,
        "the sync phase has its own deadline"
    );
    assert_eq!((ra.generation_id, rb.generation_id), (1, 1));
    assert_eq!(ra.members.len().max(rb.members.len()), 2);
}

#[test]
fn protocol_selection_by_vote_and_inconsistent_protocols() {
    let mut g = Group::new("g", 0);
    let (_a, mut rxa) = join_new(&mut g, &CFG, &["roundrobin", "range"], 0);
    let r = rxa.try_recv().unwrap();
    assert_eq!(r.protocol_name.as_deref(), Some("roundrobin"));
    // A member supporting none of the group's protocols is rejected.
    let bad = ready(g.join(&CFG, req("", &["sticky"]), 10));
    assert_eq!(bad.error, ResponseError::InconsistentGroupProtocol.code());
    let mut other = req("", &["range"]);
    other.protocol_type = "connect".into();
    let bad = ready(g.join(&CFG, other, 10));
    assert_eq!(bad.error, ResponseError::InconsistentGroupProtocol.code());
}

#[test]
fn votes_pick_the_most_preferred_common_protocol() {
    let mut g = Group::new("g", 0);
    g.state = GroupState::PreparingRebalance;
    for (i, prefs) in [
        ["range", "roundrobin"],
        ["roundrobin", "range"],
        ["roundrobin", "range"],
    ]
    .iter()
    .enumerate()
    {
        let id = format!("m{i}");
        g.members.insert(
            id.clone(),
            Member {
                id,
                instance_id: None,
                client_id: String::new(),
                client_host: String::new(),
                rebalance_timeout_ms: 1,
                session_timeout_ms: 1,
                protocol_type: "consumer".into(),
                protocols: prefs
                    .iter()
                    .map(|p| (p.to_string(), Bytes::new()))
                    .collect(),
                assignment: Bytes::new(),
                seq: i as u64,
                session_deadline: 0,
                join_waiter: None,
                sync_waiter: None,
            },
        );
    }
    assert_eq!(g.select_protocol().as_deref(), Some("roundrobin"));
}

#[test]
fn invalid_session_timeout() {
    let mut g = Group::new("g", 0);
    let mut r = req("", &["range"]);
    r.session_timeout_ms = 1000;
    assert_eq!(
        ready(g.join(&CFG, r, 0)).error,
        ResponseError::InvalidSessionTimeout.code()
    );
}

#[test]
fn old_versions_join_without_member_id_required() {
    let mut g = Group::new("g", 0);
    let mut r = req("", &["range"]);
    r.require_known_member_id = false;
    let mut rx = waiting(g.join(&CFG, r, 0));
    let res = rx.try_recv().unwrap();
    assert_eq!(res.error, 0);
    assert!(res.member_id.starts_with("client-"));
}

#[test]
fn pending_member_id_expires() {
    let mut g = Group::new("g", 0);
    let first = ready(g.join(&CFG, req("", &["range"]), 0));
    assert!(!g.is_empty());
    g.tick(&CFG, 10_001);
    assert!(g.is_empty());
    let late = ready(g.join(&CFG, req(&first.member_id, &["range"]), 10_002));
    assert_eq!(late.error, ResponseError::UnknownMemberId.code());
}

#[test]
fn static_member_rejoin_keeps_assignment_and_fences_old_id() {
    let mut g = Group::new("g", 0);
    let mut r = req("", &["range"]);
    r.group_instance_id = Some("i1".into());
    // Static members skip MEMBER_ID_REQUIRED.
    let mut rx = waiting(g.join(&CFG, r.clone(), 0));
    let first = rx.try_recv().unwrap();
    let old = first.member_id.clone();
    let mut s = sync_wait(g.sync(
        &old,
        Some("i1"),
        1,
        None,
        None,
        vec![(old.clone(), Bytes::from_static(b"P"))],
        0,
    ));
    s.try_recv().unwrap();
    // Restart: same instance id, no member id; the stable group does not rebalance.
    let again = ready(g.join(&CFG, r, 100));
    assert_eq!(again.error, 0);
    assert_ne!(again.member_id, old);
    assert_eq!(again.generation_id, 1);
    assert!(
        again.skip_assignment,
        "the static leader may skip the assignment (v9)"
    );
    assert_eq!(g.state, GroupState::Stable);
    let s = sync_ready(g.sync(&again.member_id, Some("i1"), 1, None, None, vec![], 200));
    assert_eq!(&s.assignment[..], b"P");
    // The old member id is fenced.
    assert_eq!(
        g.heartbeat(&old, Some("i1"), 1, 300),
        Err(ResponseError::FencedInstanceId)
    );
    assert_eq!(
        g.leave(&CFG, &old, Some("i1"), 300),
        Err(ResponseError::FencedInstanceId)
    );
    assert_eq!(g.leave(&CFG, "", Some("i1"), 300), Ok(()));
    assert!(g.members.is_empty());
}

#[test]
fn commit_validation_follows_kafka() {
    let mut g = Group::new("g", 0);
    assert_eq!(
        g.validate_commit("", None, -1, Some(9)),
        Ok(CommitFence::Open),
        "simple commit to an empty group"
    );
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    rxa.try_recv().unwrap();
    assert_eq!(
        g.validate_commit(&a, None, 1, Some(9)),
        Err(ResponseError::RebalanceInProgress)
    );
    sync_wait(g.sync(&a, None, 1, None, None, vec![], 0));
    assert_eq!(
        g.validate_commit(&a, None, 1, Some(9)),
        Ok(CommitFence::Open)
    );
    assert_eq!(
        g.validate_commit(&a, None, 0, Some(9)),
        Err(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        g.validate_commit("x", None, 1, Some(9)),
        Err(ResponseError::UnknownMemberId)
    );
    assert_eq!(
        g.validate_commit("", None, -1, Some(9)),
        Err(ResponseError::UnknownMemberId)
    );
}

#[test]
fn offsets_expire_after_the_group_is_empty_for_the_retention() {
    let mut g = Group::new("g", 0);
    g.protocol_type = Some("consumer".into());
    g.state_since = 1000;
    g.commit(
        "t",
        0,
        Committed {
            offset: 5,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 0,
            expire_timestamp: None,
        },
    );
    assert_eq!(g.expire_offsets(10_000, 10_999), 0);
    assert_eq!(g.expire_offsets(10_000, 11_000), 1);
    assert!(g.offsets.is_empty());
    assert!(matches!(
        &g.outbox[..],
        [(Key::Offset { partition: 0, .. }, None)]
    ));
    // Simple groups: by commit time.
    let mut s = Group::new("s", 0);
    s.commit(
        "t",
        0,
        Committed {
            offset: 5,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 500,
            expire_timestamp: None,
        },
    );
    s.commit(
        "t",
        1,
        Committed {
            offset: 5,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 5000,
            expire_timestamp: None,
        },
    );
    assert_eq!(s.expire_offsets(1000, 2000), 1);
    assert_eq!(s.offsets.len(), 1);
}

#[test]
fn delete_writes_tombstones() {
    let mut g = Group::new("g", 0);
    g.commit(
        "t",
        3,
        Committed {
            offset: 5,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 0,
            expire_timestamp: None,
        },
    );
    g.delete(1);
    assert_eq!(g.state, GroupState::Dead);
    assert_eq!(g.outbox.len(), 2);
    assert!(g.outbox.iter().all(|(_, v)| v.is_none()));
}

#[test]
fn restore_from_metadata_keeps_generation_and_members() {
    let mut g = Group::new("g", 0);
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    rxa.try_recv().unwrap();
    sync_wait(g.sync(
        &a,
        None,
        1,
        None,
        None,
        vec![(a.clone(), Bytes::from_static(b"Z"))],
        0,
    ));
    let value = g.metadata_value();
    let mut r = Group::new("g", 50);
    r.restore(value, 50);
    assert_eq!(r.state, GroupState::Stable);
    assert_eq!(r.generation, 1);
    assert_eq!(r.heartbeat(&a, None, 1, 60), Ok(()));
    let s = sync_ready(r.sync(&a, None, 1, None, None, vec![], 70));
    assert_eq!(&s.assignment[..], b"Z");
}

#[test]
fn subscription_topics_parse() {
    // version 1, topics ["a", "bc"], user data null, owned partitions [] ...
    let bytes = [
        0, 1, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c', 0xff, 0xff, 0xff, 0xff,
    ];
    assert_eq!(
        parse_subscription_topics(&bytes),
        Some(vec!["a".into(), "bc".into()])
    );
    assert_eq!(parse_subscription_topics(&bytes[..9]), None);
}

#[test]
fn leader_that_never_syncs_is_dropped_after_the_rebalance_timeout() {
    let mut g = Group::new("g", 0);
    let (a, mut rxa) = join_new(&mut g, &CFG, &["range"], 0);
    let ra = rxa.try_recv().unwrap();
    assert_eq!(ra.leader, a);
    sync_wait(g.sync(&a, None, 1, None, None, vec![], 0));
    let (b, mut rxb) = join_new(&mut g, &CFG, &["range"], 100);
    let _rxa = waiting(g.join(&CFG, req(&a, &["range"]), 200));
    rxb.try_recv().unwrap();
    assert_eq!(g.state, GroupState::CompletingRebalance);
    // b syncs and waits; the leader a heartbeats but never syncs.
    let mut sb = sync_wait(g.sync(&b, None, 2, None, None, vec![], 300));
    for t in [5_000, 10_000, 15_000, 20_000, 25_000, 30_000] {
        let _ = g.heartbeat(&a, None, 2, t);
        g.tick(&CFG, t);
    }
    assert!(sb.try_recv().is_err());
    g.tick(&CFG, 30_201);
    assert_eq!(
        sb.try_recv().unwrap().error,
        ResponseError::RebalanceInProgress.code()
    );
    assert!(!g.members.contains_key(&a), "the stalled leader is removed");
    assert_eq!(g.state, GroupState::PreparingRebalance);
}

#[test]
fn stable_consumer_group_expires_only_unsubscribed_topics_and_explicit_expiry() {
    let mut g = Group::new("g", 0);
    // Subscription v0 to topic "a".
    let sub = Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, b'a', 0xff, 0xff, 0xff, 0xff]);
    let mut r = req("", &["range"]);
    r.protocols = vec![("range".into(), sub)];
    r.require_known_member_id = false;
    let mut rx = waiting(g.join(&CFG, r, 0));
    let id = rx.try_recv().unwrap().member_id;
    sync_wait(g.sync(&id, None, 1, None, None, vec![], 0));
    let c = |ts, exp| Committed {
        offset: 1,
        leader_epoch: -1,
        metadata: String::new(),
        commit_timestamp: ts,
        expire_timestamp: exp,
    };
    g.commit("a", 0, c(0, None));
    g.commit("b", 0, c(0, None));
    g.commit("b", 1, c(0, Some(500)));
    assert_eq!(g.expire_offsets(1000, 600), 1, "explicit expiry first");
    assert_eq!(
        g.expire_offsets(1000, 1000),
        1,
        "unsubscribed topic b by commit time"
    );
    assert_eq!(g.offsets.len(), 1);
    assert!(
        g.offsets.contains_key(&("a".to_string(), 0)),
        "subscribed topic kept"
    );
}
