//! The simple assignor: distribution, sharing, stickiness, differing subscriptions.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::share_group::test_support::{id, tps};

fn member(name: &str, topics: &[&str], current: TopicAssignment) -> MemberSpec {
    MemberSpec {
        id: name.to_string(),
        topics: topics.iter().map(|t| id(t)).collect(),
        current,
    }
}

fn fresh(names: &[&str], topics: &[&str]) -> Vec<MemberSpec> {
    names
        .iter()
        .map(|n| member(n, topics, TopicAssignment::new()))
        .collect()
}

fn counts(topics: &[(&str, i32)]) -> BTreeMap<uuid::Uuid, i32> {
    topics.iter().map(|(t, c)| (id(t), *c)).collect()
}

/// How many members hold each (topic, partition).
fn sharing(out: &[TopicAssignment]) -> BTreeMap<(uuid::Uuid, i32), usize> {
    let mut s = BTreeMap::new();
    for a in out {
        for (t, ps) in a {
            for p in ps {
                *s.entry((*t, *p)).or_default() += 1;
            }
        }
    }
    s
}

fn sizes(out: &[TopicAssignment]) -> Vec<usize> {
    out.iter()
        .map(|a| a.values().map(BTreeSet::len).sum())
        .collect()
}

#[test]
fn one_partition_is_shared_by_every_member() {
    let parts = counts(&[("t", 1)]);
    for n in 1..=3 {
        let names: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let out = assign(&fresh(&names, &["t"]), &parts, Subscription::Homogeneous);
        assert_eq!(out.len(), n);
        for a in &out {
            assert_eq!(a, &tps(&[("t", &[0])]), "{n} members");
        }
    }
}

#[test]
fn four_partitions_over_one_two_and_three_members() {
    let parts = counts(&[("t", 4)]);
    let out = assign(&fresh(&["a"], &["t"]), &parts, Subscription::Homogeneous);
    assert_eq!(out, vec![tps(&[("t", &[0, 1, 2, 3])])]);

    let out = assign(
        &fresh(&["a", "b"], &["t"]),
        &parts,
        Subscription::Homogeneous,
    );
    assert_eq!(out, vec![tps(&[("t", &[0, 2])]), tps(&[("t", &[1, 3])])]);

    // ceil(4 × 1 / 3) split as 2, 1, 1; no partition is shared.
    let out = assign(
        &fresh(&["a", "b", "c"], &["t"]),
        &parts,
        Subscription::Homogeneous,
    );
    assert_eq!(
        out,
        vec![
            tps(&[("t", &[0, 3])]),
            tps(&[("t", &[1])]),
            tps(&[("t", &[2])])
        ]
    );
    assert!(sharing(&out).values().all(|n| *n == 1));
    assert_eq!(sharing(&out).len(), 4);
}

#[test]
fn more_members_than_partitions_share_each_partition_evenly() {
    // 5 members, 2 partitions: each partition shared by ceil(5/2) = 3 members, 6 in all.
    let parts = counts(&[("t", 2)]);
    let out = assign(
        &fresh(&["a", "b", "c", "d", "e"], &["t"]),
        &parts,
        Subscription::Homogeneous,
    );
    assert_eq!(sizes(&out), vec![2, 1, 1, 1, 1]);
    assert_eq!(
        sharing(&out).values().copied().collect::<Vec<_>>(),
        vec![3, 3]
    );
}

#[test]
fn partitions_of_several_topics_are_balanced_together() {
    let parts = counts(&[("t", 3), ("u", 3)]);
    let out = assign(
        &fresh(&["a", "b"], &["t", "u"]),
        &parts,
        Subscription::Homogeneous,
    );
    assert_eq!(sizes(&out), vec![3, 3]);
    assert_eq!(sharing(&out).len(), 6);
    assert!(sharing(&out).values().all(|n| *n == 1));
}

#[test]
fn a_new_member_takes_from_the_fullest_and_the_rest_stays() {
    let parts = counts(&[("t", 4)]);
    let members = vec![
        member("a", &["t"], tps(&[("t", &[0, 2])])),
        member("b", &["t"], tps(&[("t", &[1, 3])])),
        member("c", &["t"], TopicAssignment::new()),
    ];
    let out = assign(&members, &parts, Subscription::Homogeneous);
    // Desired counts 2, 1, 1: "a" keeps both, "b" gives one up, "c" takes it.
    assert_eq!(out[0], tps(&[("t", &[0, 2])]));
    assert_eq!(out[1], tps(&[("t", &[3])]));
    assert_eq!(out[2], tps(&[("t", &[1])]));
}

#[test]
fn a_departed_members_partitions_go_to_those_left() {
    let parts = counts(&[("t", 4)]);
    let members = vec![
        member("a", &["t"], tps(&[("t", &[0, 3])])),
        member("c", &["t"], tps(&[("t", &[2])])),
    ];
    let out = assign(&members, &parts, Subscription::Homogeneous);
    assert_eq!(out[0], tps(&[("t", &[0, 3])]));
    assert_eq!(out[1], tps(&[("t", &[1, 2])]));
}

#[test]
fn an_over_shared_partition_loses_its_extra_holders() {
    // Both held everything (as when a second topic partition appears after two members
    // shared one): now 2 partitions for 2 members, each partition wants 1 holder.
    let parts = counts(&[("t", 2)]);
    let members = vec![
        member("a", &["t"], tps(&[("t", &[0])])),
        member("b", &["t"], tps(&[("t", &[0])])),
    ];
    let out = assign(&members, &parts, Subscription::Homogeneous);
    // The first holder in member order gives p0 up and takes the unheld p1.
    assert_eq!(out[0], tps(&[("t", &[1])]));
    assert_eq!(out[1], tps(&[("t", &[0])]));
}

#[test]
fn topics_no_longer_subscribed_are_dropped() {
    let parts = counts(&[("t", 2)]);
    let members = vec![member("a", &["t"], tps(&[("t", &[0]), ("old", &[0, 1])]))];
    let out = assign(&members, &parts, Subscription::Homogeneous);
    assert_eq!(out, vec![tps(&[("t", &[0, 1])])]);
}

#[test]
fn differing_subscriptions_balance_each_topic_among_its_subscribers() {
    let parts = counts(&[("t", 4), ("u", 1)]);
    let members = vec![
        member("a", &["t"], TopicAssignment::new()),
        member("b", &["t", "u"], TopicAssignment::new()),
        member("c", &["u"], TopicAssignment::new()),
    ];
    let out = assign(&members, &parts, Subscription::Heterogeneous);
    assert_eq!(out[0], tps(&[("t", &[0, 2])]));
    assert_eq!(out[1], tps(&[("t", &[1, 3]), ("u", &[0])]));
    assert_eq!(out[2], tps(&[("u", &[0])]));
}

#[test]
fn heterogeneous_revokes_a_topic_the_member_left() {
    let parts = counts(&[("t", 2), ("u", 2)]);
    let members = vec![
        // "a" held t-0 and t-1 but now subscribes to u only.
        member("a", &["u"], tps(&[("t", &[0, 1])])),
        member("b", &["t"], TopicAssignment::new()),
    ];
    let out = assign(&members, &parts, Subscription::Heterogeneous);
    assert_eq!(out[0], tps(&[("u", &[0, 1])]));
    assert_eq!(out[1], tps(&[("t", &[0, 1])]));
}

#[test]
fn no_members_or_no_topics_assign_nothing() {
    assert!(assign(&[], &counts(&[("t", 1)]), Subscription::Homogeneous).is_empty());
    let out = assign(
        &fresh(&["a"], &[]),
        &BTreeMap::new(),
        Subscription::Homogeneous,
    );
    assert_eq!(out, vec![TopicAssignment::new()]);
    // A topic with no assignable partition gives nothing either.
    let out = assign(
        &fresh(&["a", "b"], &["t"]),
        &counts(&[("t", 0)]),
        Subscription::Homogeneous,
    );
    assert_eq!(out, vec![TopicAssignment::new(); 2]);
}

#[test]
fn desired_counts_split_the_sharing_like_kafka() {
    assert_eq!(desired_counts(1, 4, 3), vec![2, 1, 1]);
    assert_eq!(desired_counts(3, 2, 5), vec![2, 1, 1, 1, 1]);
    assert_eq!(desired_counts(2, 1, 2), vec![1, 1]);
    assert_eq!(desired_sharing(5, 2), 3);
    assert_eq!(desired_sharing(2, 4), 1);
    assert_eq!(desired_sharing(3, 0), 0);
}
