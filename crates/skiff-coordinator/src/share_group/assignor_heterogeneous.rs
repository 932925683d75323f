//! The simple assignor when members subscribe to different topics: each topic is balanced on
//! its own, among the members subscribed to it.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{desired_counts, desired_sharing, fill, MemberSpec, TopicAssignment};

pub(super) fn assign(
    members: &[MemberSpec],
    partitions: &BTreeMap<Uuid, i32>,
) -> Vec<TopicAssignment> {
    let topics: BTreeSet<Uuid> = members
        .iter()
        .flat_map(|m| m.topics.iter().copied())
        .collect();
    let mut new: Vec<Option<TopicAssignment>> = vec![None; members.len()];
    for topic in topics {
        let count = partitions.get(&topic).copied().unwrap_or(0);
        assign_topic(members, topic, count, &mut new);
    }
    // Topics no member subscribes to any more are left in the target as they were (Kafka
    // does not visit them); a member's current assignment never shows them, because
    // reconciliation keeps only the topics the member subscribes to.
    new.into_iter()
        .zip(members)
        .map(|(n, m)| n.unwrap_or_else(|| m.current.clone()))
        .collect()
}

fn assign_topic(
    members: &[MemberSpec],
    topic: Uuid,
    count: i32,
    new: &mut [Option<TopicAssignment>],
) {
    let targets: Vec<i32> = (0..count).collect();
    let subscribers: Vec<usize> = members
        .iter()
        .enumerate()
        .filter(|(_, m)| m.topics.contains(&topic))
        .map(|(i, _)| i)
        .collect();
    let sharing = desired_sharing(subscribers.len(), targets.len());
    // Members not subscribed to the topic want none of it.
    let mut desired = vec![0; members.len()];
    for (j, want) in desired_counts(sharing, targets.len(), subscribers.len())
        .into_iter()
        .enumerate()
    {
        if let Some(&i) = subscribers.get(j) {
            desired[i] = want;
        }
    }

    let mut by_partition: BTreeMap<i32, BTreeSet<usize>> = BTreeMap::new();
    let mut by_member: BTreeMap<usize, BTreeSet<i32>> = BTreeMap::new();

    // 1. What each member held of this topic in its previous target.
    for (i, m) in members.iter().enumerate() {
        if let Some(ps) = m.current.get(&topic) {
            for p in ps {
                by_partition.entry(*p).or_default().insert(i);
                by_member.entry(i).or_default().insert(*p);
            }
        }
    }

    // 2. Members over their desired count (all of it, if not subscribed) give the excess up.
    for (&i, held) in by_member.iter_mut() {
        while held.len() > desired[i] {
            let Some(p) = held.pop_first() else {
                break;
            };
            if let Some(holders) = by_partition.get_mut(&p) {
                holders.remove(&i);
            }
            revoke(&mut new[i], &members[i].current, topic, p);
        }
    }

    // 3. Partitions shared by more members than desired lose the extra ones.
    for (p, holders) in by_partition.iter_mut() {
        if holders.len() <= sharing {
            continue;
        }
        for i in holders.clone() {
            if revoke(&mut new[i], &members[i].current, topic, *p) {
                holders.remove(&i);
                if let Some(held) = by_member.get_mut(&i) {
                    held.remove(p);
                }
            }
            if holders.len() <= sharing {
                break;
            }
        }
    }

    // 4. Fill every assignable partition up to the desired sharing.
    for p in &targets {
        by_partition.entry(*p).or_default();
    }
    let unfilled: Vec<usize> = subscribers
        .iter()
        .copied()
        .filter(|i| by_member.get(i).map_or(0, BTreeSet::len) < desired[*i])
        .collect();
    fill(&mut by_partition, sharing, unfilled, &desired, |i, p| {
        new[i]
            .get_or_insert_with(|| members[i].current.clone())
            .entry(topic)
            .or_default()
            .insert(*p);
        let held = by_member.entry(i).or_default();
        held.insert(*p);
        held.len()
    });
}

fn revoke(
    new: &mut Option<TopicAssignment>,
    current: &TopicAssignment,
    topic: Uuid,
    p: i32,
) -> bool {
    new.get_or_insert_with(|| current.clone())
        .get_mut(&topic)
        .is_some_and(|ps| ps.remove(&p))
}
