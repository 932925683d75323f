//! The simple assignor when every member subscribes to the same topics: the partitions of all
//! of them are balanced together, as one list.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{desired_counts, desired_sharing, fill, MemberSpec, TopicAssignment};

type Tp = (Uuid, i32);

pub(super) fn assign(
    members: &[MemberSpec],
    partitions: &BTreeMap<Uuid, i32>,
) -> Vec<TopicAssignment> {
    // Every member has the same subscription; Kafka reads it from the first one.
    let Some(topics) = members.first().map(|m| &m.topics) else {
        return Vec::new();
    };
    if topics.is_empty() {
        return vec![TopicAssignment::new(); members.len()];
    }
    let targets: Vec<Tp> = topics
        .iter()
        .flat_map(|t| (0..partitions.get(t).copied().unwrap_or(0)).map(move |p| (*t, p)))
        .collect();
    let sharing = desired_sharing(members.len(), targets.len());
    let desired = desired_counts(sharing, targets.len(), members.len());

    // Members whose target differs from their previous one (copy on first change).
    let mut new: Vec<Option<TopicAssignment>> = vec![None; members.len()];
    let mut by_partition: BTreeMap<Tp, BTreeSet<usize>> = BTreeMap::new();
    let mut by_member: Vec<BTreeSet<Tp>> = vec![BTreeSet::new(); members.len()];
    let mut unfilled: BTreeSet<usize> = BTreeSet::new();
    let mut overfilled: BTreeSet<usize> = BTreeSet::new();

    // 1. Keep what is still subscribed; drop topics no longer subscribed.
    for (i, m) in members.iter().enumerate() {
        let mut held = 0;
        for (topic, ps) in &m.current {
            if topics.contains(topic) {
                for p in ps {
                    held += 1;
                    by_partition.entry((*topic, *p)).or_default().insert(i);
                    by_member[i].insert((*topic, *p));
                }
            } else {
                new[i]
                    .get_or_insert_with(|| m.current.clone())
                    .remove(topic);
            }
        }
        let want = desired.get(i).copied().unwrap_or(0);
        if held < want {
            unfilled.insert(i);
        } else if held > want {
            overfilled.insert(i);
        }
    }

    // 2. Members holding more than their desired count give the excess up.
    for &i in &overfilled {
        let want = desired.get(i).copied().unwrap_or(0);
        while by_member[i].len() > want {
            let Some(tp) = by_member[i].pop_first() else {
                break;
            };
            revoke(&mut new[i], &members[i].current, tp);
            if let Some(holders) = by_partition.get_mut(&tp) {
                holders.remove(&i);
            }
        }
    }

    // 3. Partitions shared by more members than desired lose the extra ones.
    for (tp, holders) in by_partition.iter_mut() {
        if holders.len() <= sharing {
            continue;
        }
        for i in holders.clone() {
            if revoke(&mut new[i], &members[i].current, *tp) {
                holders.remove(&i);
                by_member[i].remove(tp);
                unfilled.insert(i);
            }
            if holders.len() <= sharing {
                break;
            }
        }
    }

    // 4. Every assignable partition takes part in the filling, held or not.
    for tp in &targets {
        by_partition.entry(*tp).or_default();
    }
    let unfilled: Vec<usize> = unfilled.into_iter().collect();
    fill(&mut by_partition, sharing, unfilled, &desired, |i, tp| {
        new[i]
            .get_or_insert_with(|| members[i].current.clone())
            .entry(tp.0)
            .or_default()
            .insert(tp.1);
        by_member[i].insert(*tp);
        by_member[i].len()
    });

    new.into_iter()
        .zip(members)
        .map(|(n, m)| n.unwrap_or_else(|| m.current.clone()))
        .collect()
}

/// Takes `tp` out of the member's new target (copying its previous one first); whether it
/// was there.
fn revoke(new: &mut Option<TopicAssignment>, current: &TopicAssignment, tp: Tp) -> bool {
    new.get_or_insert_with(|| current.clone())
        .get_mut(&tp.0)
        .is_some_and(|ps| ps.remove(&tp.1))
}
