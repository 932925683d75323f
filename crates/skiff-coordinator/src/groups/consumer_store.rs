//! Persistence of KIP-848 consumer groups: the records that describe a group's state now
//! (group epoch, target assignment epoch, and per member its metadata, target assignment
//! and current assignment), the difference from what was last written (new or changed
//! values, tombstones for members that left), and the state rebuilt from replayed records.
//!
//! A restarted broker therefore keeps member ids, member epochs, the group epoch and the
//! assignments: a member heartbeating with its old id and epoch simply continues. Session
//! and revocation deadlines are not persisted; they restart from the load time.
//!
//! On-disk format: `consumer_records.rs`. Topics are written by id; a topic deleted since
//! is dropped from the assignments on load. Pure functions over a group (the caller holds
//! the coordinator lock and queues the records).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::consumer::{Assignment, Assignor, ConsumerMember, ConsumerState, TopicRegex};
use super::consumer_records::{self as cr, ConsumerKey, TopicPartitions};
use super::group::{Group, Value};
use super::records::Key;
use super::store::OFFSETS_TOPIC;

/// Encoded values by key: what describes a group, and what was last written for it.
pub type Persisted = BTreeMap<ConsumerKey, Vec<u8>>;

fn to_ids(a: &Assignment, topic_id: &dyn Fn(&str) -> Option<Uuid>) -> TopicPartitions {
    a.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .filter_map(|(t, ps)| topic_id(t).map(|id| (id, ps.iter().copied().collect())))
        .collect()
}

/// The assignment epochs of `m`'s partitions, by topic id.
fn epochs_by_id(
    m: &ConsumerMember,
    topic_id: &dyn Fn(&str) -> Option<Uuid>,
) -> BTreeMap<(Uuid, i32), i32> {
    m.assigned_at
        .iter()
        .filter_map(|((t, p), at)| topic_id(t).map(|id| ((id, *p), *at)))
        .collect()
}

fn to_names(tps: &TopicPartitions, topic_name: &dyn Fn(Uuid) -> Option<String>) -> Assignment {
    let mut out = Assignment::new();
    for (id, ps) in tps {
        if let Some(name) = topic_name(*id) {
            out.entry(name).or_default().extend(ps.iter().copied());
        }
    }
    out.retain(|_, ps| !ps.is_empty());
    out
}

/// The records describing `state` now.
pub fn snapshot(
    group: &str,
    state: &ConsumerState,
    topic_id: &dyn Fn(&str) -> Option<Uuid>,
) -> Persisted {
    let g = || group.to_string();
    let mut out = Persisted::new();
    out.insert(
        ConsumerKey::Metadata { group: g() },
        cr::encode_epoch(state.epoch),
    );
    out.insert(
        ConsumerKey::TargetMetadata { group: g() },
        cr::encode_epoch(state.assignment_epoch),
    );
    for (id, m) in &state.members {
        let member = || id.clone();
        out.insert(
            ConsumerKey::Member {
                group: g(),
                member: member(),
            },
            cr::encode_member(&cr::MemberMetadata {
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed: m.subscribed.clone(),
                regex: m.regex.as_ref().map(|r| r.as_str().to_string()),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                server_assignor: Some(state.assignor.name().to_string()),
                classic: m.classic.as_ref().map(|c| cr::ClassicMemberMetadata {
                    session_timeout_ms: c.session_timeout_ms,
                    protocols: c.protocols.clone(),
                }),
            }),
        );
        let member_state = if !m.revoking.is_empty() {
            cr::STATE_UNREVOKED
        } else if m.epoch != state.assignment_epoch {
            cr::STATE_UNRELEASED
        } else {
            cr::STATE_STABLE
        };
        out.insert(
            ConsumerKey::Current {
                group: g(),
                member: member(),
            },
            cr::encode_current(&cr::CurrentAssignment {
                epoch: m.epoch,
                previous_epoch: m.previous_epoch,
                state: member_state,
                assigned: to_ids(&m.assigned, topic_id),
                revoking: to_ids(&m.revoking, topic_id),
                assigned_at: epochs_by_id(m, topic_id),
            }),
        );
    }
    for (id, target) in &state.target {
        if state.members.contains_key(id) {
            out.insert(
                ConsumerKey::TargetMember {
                    group: g(),
                    member: id.clone(),
                },
                cr::encode_target_member(&to_ids(target, topic_id)),
            );
        }
    }
    out
}

/// Queue on the group's outbox every consumer record that changed since the last call
/// (tombstones for those gone: a member that left, or the whole group once it is no longer
/// a consumer group).
pub fn persist(group: &mut Group, topic_id: &dyn Fn(&str) -> Option<Uuid>) {
    if group.consumer.is_none() && group.consumer_persisted.is_empty() {
        return;
    }
    let now = match &group.consumer {
        Some(c) => snapshot(&group.id, c, topic_id),
        None => Persisted::new(),
    };
    let old = std::mem::take(&mut group.consumer_persisted);
    // One batch per change, applied atomically; replay keeps the last value per key, so
    // the order within the batch does not matter.
    for (k, v) in &now {
        if old.get(k) != Some(v) {
            group
                .outbox
                .push((Key::Consumer(k.clone()), Some(Value::Consumer(v.clone()))));
        }
    }
    for k in old.keys().filter(|k| !now.contains_key(*k)) {
        group.outbox.push((Key::Consumer(k.clone()), None));
    }
    group.consumer_persisted = now;
}

/// Rebuild a group's consumer state from its replayed records; `None` when there is no
/// group epoch record (not a consumer group, or deleted). Members get a fresh session.
pub fn restore(
    records: &Persisted,
    topic_name: &dyn Fn(Uuid) -> Option<String>,
    partitions: &dyn Fn(&str) -> Option<i32>,
    session_timeout_ms: i32,
    now: i64,
) -> Option<ConsumerState> {
    let mut state = ConsumerState::default();
    let mut found = false;
    let mut currents = BTreeMap::new();
    for (k, v) in records {
        let decoded = match k {
            ConsumerKey::Metadata { .. } => cr::decode_epoch(v).map(|e| {
                state.epoch = e;
                found = true;
            }),
            ConsumerKey::TargetMetadata { .. } => {
                cr::decode_epoch(v).map(|e| state.assignment_epoch = e)
            }
            ConsumerKey::Member { member, .. } => cr::decode_member(v).map(|m| {
                if let Some(a) = m.server_assignor.as_deref().and_then(Assignor::parse) {
                    state.assignor = a;
                }
                state.members.insert(
                    member.clone(),
                    ConsumerMember {
                        id: member.clone(),
                        instance_id: m.instance_id,
                        rack_id: m.rack_id,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        epoch: 0,
                        previous_epoch: 0,
                        subscribed: m.subscribed,
                        // Matched again on the member's next heartbeat.
                        regex: restore_regex(member, m.regex.as_deref()),
                        matched: BTreeSet::new(),
                        regex_scope: super::consumer::RegexScope::Unknown,
                        rebalance_timeout_ms: m.rebalance_timeout_ms,
                        assigned: Assignment::new(),
                        revoking: Assignment::new(),
                        assigned_at: Default::default(),
                        revoke_deadline: None,
                        session_deadline: now
                            + i64::from(
                                m.classic
                                    .as_ref()
                                    .map_or(session_timeout_ms, |c| c.session_timeout_ms),
                            ),
                        last_sent: None,
                        classic: m.classic.map(|c| super::consumer::ClassicMeta {
                            session_timeout_ms: c.session_timeout_ms,
                            protocols: c.protocols,
                            ..Default::default()
                        }),
                    },
                );
            }),
            ConsumerKey::TargetMember { member, .. } => cr::decode_target_member(v).map(|t| {
                state
                    .target
                    .insert(member.clone(), to_names(&t, topic_name));
            }),
            ConsumerKey::Current { member, .. } => cr::decode_current(v).map(|c| {
                currents.insert(member.clone(), c);
            }),
        };
        if let Err(e) = decoded {
            tracing::warn!(key = ?k, error = %e.in_topic(OFFSETS_TOPIC), "skipping an unreadable consumer group record");
        }
    }
    if !found {
        return None;
    }
    for (id, c) in currents {
        if let Some(m) = state.members.get_mut(&id) {
            m.epoch = c.epoch;
            m.previous_epoch = c.previous_epoch;
            m.assigned = to_names(&c.assigned, topic_name);
            m.revoking = to_names(&c.revoking, topic_name);
            m.assigned_at = c
                .assigned_at
                .iter()
                .filter_map(|((id, p), at)| topic_name(*id).map(|t| ((t, *p), *at)))
                .collect();
            if !m.revoking.is_empty() {
                m.revoke_deadline = Some(now + i64::from(m.rebalance_timeout_ms));
            }
        }
    }
    let members = &state.members;
    state.target.retain(|id, _| members.contains_key(id));
    // The partition counts the target stands for: today's, so that an unchanged topic
    // does not bump the epoch on the first heartbeat.
    state.counts = state
        .subscribed_topics()
        .into_iter()
        .filter_map(|t| partitions(&t).map(|n| (t, n)))
        .collect();
    Some(state)
}

/// A persisted regex compiled again; one that no longer compiles is dropped with a warning.
fn restore_regex(member: &str, source: Option<&str>) -> Option<TopicRegex> {
    let source = source.filter(|s| !s.is_empty())?;
    match TopicRegex::new(source) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(member, regex = source, error = %e, "dropping an unreadable subscription regex");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::groups::consumer::Heartbeat;

    fn ids() -> (
        impl Fn(&str) -> Option<Uuid>,
        impl Fn(Uuid) -> Option<String>,
    ) {
        let id = Uuid::from_bytes([7; 16]);
        (
            move |t: &str| (t == "t").then_some(id),
            move |u: Uuid| (u == id).then(|| "t".to_string()),
        )
    }

    fn hb(id: &str, epoch: i32, owned: Option<Assignment>) -> Heartbeat {
        Heartbeat {
            member_id: id.into(),
            member_epoch: epoch,
            client_id: "c".into(),
            client_host: "/h".into(),
            rebalance_timeout_ms: 10_000,
            subscribed: (epoch == 0).then(|| vec!["t".to_string()]),
            owned,
            ..Heartbeat::default()
        }
    }

    #[test]
    fn replay_keeps_members_epochs_and_assignments() {
        let (to_id, to_name) = ids();
        let counts = HashMap::from([("t".to_string(), 4)]);
        let mut g = Group::new("g", 0);
        let mut s = ConsumerState::default();
        let a = s
            .heartbeat(hb("a", 0, Some(Assignment::new())), &counts, 45_000, 0)
            .unwrap();
        let b = s
            .heartbeat(hb("b", 0, Some(Assignment::new())), &counts, 45_000, 1)
            .unwrap();
        // a still owns everything and must revoke half: it is mid-reconciliation.
        let a2 = s
            .heartbeat(
                hb("a", a.member_epoch, a.assignment.clone()),
                &counts,
                45_000,
                2,
            )
            .unwrap();
        g.consumer = Some(s.clone());
        persist(&mut g, &to_id);
        let written: Persisted = g
            .outbox
            .drain(..)
            .map(|(k, v)| match (k, v) {
                (Key::Consumer(k), Some(Value::Consumer(v))) => (k, v),
                other => panic!("unexpected record {other:?}"),
            })
            .collect();
        // Epoch, target epoch, and three records per member.
        assert_eq!(written.len(), 2 + 3 * 2);
        // Nothing changed: nothing more is written.
        persist(&mut g, &to_id);
        assert!(g.outbox.is_empty());

        let r = restore(
            &written,
            &to_name,
            &|t| (t == "t").then_some(4),
            45_000,
            1_000,
        )
        .unwrap();
        assert_eq!(r.epoch, s.epoch);
        assert_eq!(r.assignment_epoch, s.assignment_epoch);
        assert_eq!(r.assignor, s.assignor);
        assert_eq!(r.target, s.target);
        for (id, m) in &s.members {
            let n = &r.members[id];
            assert_eq!((n.epoch, n.previous_epoch), (m.epoch, m.previous_epoch));
            assert_eq!(n.assigned, m.assigned);
            assert_eq!(n.revoking, m.revoking);
            assert_eq!(n.assigned_at, m.assigned_at);
            assert_eq!(n.subscribed, m.subscribed);
            assert_eq!((n.client_id.as_str(), n.client_host.as_str()), ("c", "/h"));
        }
        assert_eq!(r.state_name(), s.state_name());
        // The members continue with their old ids and epochs after the "restart".
        let mut r = r;
        let kept = a2.assignment.clone().unwrap();
        let a3 = r
            .heartbeat(
                hb("a", a2.member_epoch, Some(kept.clone())),
                &counts,
                45_000,
                1_001,
            )
            .unwrap();
        assert_eq!(a3.member_epoch, s.assignment_epoch, "a finished revoking");
        let b2 = r
            .heartbeat(
                hb("b", b.member_epoch, Some(Assignment::new())),
                &counts,
                45_000,
                1_002,
            )
            .unwrap();
        assert_eq!(b2.member_epoch, r.assignment_epoch);
        assert_eq!(r.epoch, s.epoch, "no rebalance caused by the restart");
        assert_eq!(r.state_name(), "Stable");
        // Sessions restarted from the load time.
        assert!(!r.tick(1_000 + 44_999));
    }

    #[test]
    fn leaving_member_and_deleted_group_write_tombstones() {
        let (to_id, _) = ids();
        let counts = HashMap::from([("t".to_string(), 2)]);
        let mut g = Group::new("g", 0);
        let mut s = ConsumerState::default();
        s.heartbeat(hb("a", 0, Some(Assignment::new())), &counts, 45_000, 0)
            .unwrap();
        s.heartbeat(hb("b", 0, Some(Assignment::new())), &counts, 45_000, 0)
            .unwrap();
        g.consumer = Some(s);
        persist(&mut g, &to_id);
        g.outbox.clear();
        let c = g.consumer.as_mut().unwrap();
        c.heartbeat(
            hb("b", crate::groups::consumer::LEAVE, None),
            &counts,
            45_000,
            1,
        )
        .unwrap();
        persist(&mut g, &to_id);
        let tombstones: Vec<&Key> = g
            .outbox
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k)
            .collect();
        assert_eq!(
            tombstones.len(),
            3,
            "b's member, target and current records"
        );
        assert!(tombstones
            .iter()
            .all(|k| matches!(k, Key::Consumer(k) if format!("{k:?}").contains("\"b\""))));
        g.outbox.clear();
        g.delete(2);
        let gone: Vec<&ConsumerKey> = g
            .outbox
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Key::Consumer(k), None) => Some(k),
                _ => None,
            })
            .collect();
        assert_eq!(gone.len(), 2 + 3, "epochs and a's three records");
        assert!(g.consumer_persisted.is_empty());
        // A group without an epoch record is not restored.
        assert!(restore(&Persisted::new(), &|_| None, &|_| None, 1, 0).is_none());
    }
}
