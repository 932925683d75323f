//! Kafka's share group assignor ("simple", `SimpleAssignor` in Kafka 4.4's group coordinator),
//! which Kafka uses for every share group.
//!
//! Unlike the consumer group assignors, a partition may go to several members at once: a
//! share partition hands out records, not offsets, so sharing it is safe and is how a group
//! grows beyond its partition count. The assignor aims at:
//!
//! - a *desired sharing* per partition of `ceil(members / partitions)`: every partition has a
//!   consumer, and when there are more members than partitions, each partition is shared by
//!   as few members as still gives every member something;
//! - a *desired count* per member that splits `sharing × partitions` assignments as evenly as
//!   possible, the first members taking the remainder;
//! - stickiness: a member keeps what its previous target gave it, unless it no longer
//!   subscribes to the topic, holds more than its desired count, or shares a partition with
//!   more members than desired.
//!
//! When every member subscribes to the same topics ("homogeneous") the partitions of all
//! topics are balanced together (`assignor_homogeneous.rs`); otherwise each topic is balanced
//! on its own among its subscribers (`assignor_heterogeneous.rs`).
//!
//! Iteration order: Kafka walks hash maps, so its tie-breaks depend on hashing. Skiff walks
//! members sorted by member id and partitions sorted by (topic id, partition), so the result
//! is deterministic; it is one of the outcomes Kafka's algorithm can produce.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

#[path = "assignor_heterogeneous.rs"]
mod heterogeneous;
#[path = "assignor_homogeneous.rs"]
mod homogeneous;

/// topic id → partitions, as ShareGroupHeartbeat and the share group records carry it.
pub type TopicAssignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// One member as the assignor sees it.
#[derive(Clone, Debug, Default)]
pub struct MemberSpec {
    pub id: String,
    /// Ids of the existing topics the member subscribes to.
    pub topics: BTreeSet<Uuid>,
    /// The member's previous target (what stickiness starts from).
    pub current: TopicAssignment,
}

/// Whether every member subscribes to the same topic names (Kafka's `SubscriptionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subscription {
    Homogeneous,
    Heterogeneous,
}

/// The new target of every member, in the order of `members`. `partitions` has the number of
/// assignable partitions of every topic some member subscribes to.
pub fn assign(
    members: &[MemberSpec],
    partitions: &BTreeMap<Uuid, i32>,
    subscription: Subscription,
) -> Vec<TopicAssignment> {
    if members.is_empty() {
        return Vec::new();
    }
    let raw = match subscription {
        Subscription::Homogeneous => homogeneous::assign(members, partitions),
        Subscription::Heterogeneous => heterogeneous::assign(members, partitions),
    };
    raw.into_iter()
        .map(|mut a| {
            // A topic left with no partition is no assignment of it.
            a.retain(|_, ps| !ps.is_empty());
            a
        })
        .collect()
}

/// How many partitions each of `members` members should hold, so that they hold
/// `sharing × partitions` in all, evenly, the first ones taking the remainder. Computed in
/// floating point as Kafka does, so rounding matches it.
fn desired_counts(sharing: usize, partitions: usize, members: usize) -> Vec<usize> {
    if members == 0 {
        return Vec::new();
    }
    let precise = (sharing * partitions) as f64 / members as f64;
    let ceil = |i: usize| (precise * i as f64).ceil() as usize;
    (0..members).map(|i| ceil(i + 1) - ceil(i)).collect()
}

/// `ceil(members / partitions)`, 0 without partitions.
fn desired_sharing(members: usize, partitions: usize) -> usize {
    if partitions == 0 {
        0
    } else {
        members.div_ceil(partitions)
    }
}

/// The last step of both builders: walk the partitions once, and hand each one that is
/// shared by fewer than `sharing` members to the unfilled members in turn, cycling over them.
/// A partition none of the unfilled members can take (they all have it) stays short: a
/// slight imbalance rather than a reshuffle. `give(member, key)` records the assignment and
/// returns how many partitions the member now holds.
fn fill<K: Ord + Clone>(
    by_partition: &mut BTreeMap<K, BTreeSet<usize>>,
    sharing: usize,
    mut unfilled: Vec<usize>,
    desired: &[usize],
    mut give: impl FnMut(usize, &K) -> usize,
) {
    let mut pos = 0;
    let mut progressed = false;
    for (key, holders) in by_partition.iter_mut() {
        if unfilled.is_empty() {
            break;
        }
        let mut todo = sharing.saturating_sub(holders.len());
        while todo > 0 {
            if pos >= unfilled.len() {
                if !progressed || unfilled.is_empty() {
                    break;
                }
                pos = 0;
                progressed = false;
            }
            let member = unfilled[pos];
            pos += 1;
            if holders.insert(member) {
                todo -= 1;
                progressed = true;
                if give(member, key) >= desired.get(member).copied().unwrap_or(0) {
                    pos -= 1;
                    unfilled.remove(pos);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "assignor_tests.rs"]
mod tests;
