//! The sticky task assignor: balance, stickiness, standby placement, and the invariants that
//! must hold for any group (proptest).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

fn sub(id: &str, tasks: i32, stateful: bool) -> SubtopologySpec {
    SubtopologySpec {
        id: id.to_string(),
        tasks,
        stateful,
    }
}

fn member(id: &str, process: &str) -> MemberSpec {
    MemberSpec {
        id: id.to_string(),
        process_id: process.to_string(),
        ..MemberSpec::default()
    }
}

fn tasks(pairs: &[(&str, &[i32])]) -> Tasks {
    pairs
        .iter()
        .map(|(s, ps)| (s.to_string(), ps.iter().copied().collect()))
        .collect()
}

fn count(t: &Tasks) -> usize {
    t.values().map(BTreeSet::len).sum()
}

fn word_count() -> Vec<SubtopologySpec> {
    vec![sub("0", 6, false), sub("1", 6, true)]
}

#[test]
fn tasks_are_spread_evenly_over_members() {
    let members = [member("a", "p1"), member("b", "p2"), member("c", "p3")];
    let out = assign(&members, &word_count(), 0);
    for m in ["a", "b", "c"] {
        assert_eq!(count(&out[m].active), 4, "{out:?}");
        assert!(out[m].standby.is_empty());
    }
}

#[test]
fn a_new_member_takes_tasks_without_moving_the_others_needlessly() {
    let mut a = member("a", "p1");
    a.active = tasks(&[("0", &[0, 1, 2, 3, 4, 5]), ("1", &[0, 1, 2, 3, 4, 5])]);
    let out = assign(&[a.clone(), member("b", "p2")], &word_count(), 0);
    assert_eq!(count(&out["a"].active), 6);
    assert_eq!(count(&out["b"].active), 6);
    // What `a` keeps, it had.
    for (s, ps) in &out["a"].active {
        assert!(ps.is_subset(&a.active[s]));
    }
}

#[test]
fn a_departed_members_tasks_go_to_the_holder_of_their_state() {
    let mut a = member("a", "p1");
    a.active = tasks(&[("1", &[0, 1, 2])]);
    let mut b = member("b", "p2");
    b.active = tasks(&[("1", &[3, 4, 5])]);
    b.standby = tasks(&[("1", &[0, 1, 2])]);
    let c = member("c", "p3");
    // `a` has gone; `b` held standbys of its tasks, `c` nothing.
    let out = assign(&[b, c], &[sub("1", 6, true)], 0);
    assert_eq!(count(&out["b"].active), 3);
    assert_eq!(count(&out["c"].active), 3);
    // `b` keeps its own three (sticky) and so is full: the three others go to `c`.
    assert_eq!(out["b"].active, tasks(&[("1", &[3, 4, 5])]));
}

#[test]
fn standbys_never_share_a_process_with_their_active_task() {
    let members = [
        member("a1", "p1"),
        member("a2", "p1"),
        member("b1", "p2"),
        member("c1", "p3"),
    ];
    let out = assign(&members, &word_count(), 1);
    let process: BTreeMap<&str, &str> = members
        .iter()
        .map(|m| (m.id.as_str(), m.process_id.as_str()))
        .collect();
    let mut standbys = 0;
    for (m, t) in &out {
        for task in task_ids(&t.standby) {
            assert_eq!(task.subtopology, "1", "stateless tasks get no standby");
            standbys += 1;
            let owner = out
                .iter()
                .find(|(_, o)| task_ids(&o.active).any(|a| a == task))
                .map(|(id, _)| id.as_str())
                .unwrap();
            assert_ne!(process[m.as_str()], process[owner], "{task:?}");
        }
    }
    assert_eq!(standbys, 6);
}

#[test]
fn with_one_process_standbys_are_dropped() {
    let members = [member("a", "p1"), member("b", "p1")];
    let out = assign(&members, &word_count(), 1);
    assert!(out.values().all(|t| t.standby.is_empty()));
    assert_eq!(out.values().map(|t| count(&t.active)).sum::<usize>(), 12);
}

#[test]
fn the_previous_active_owner_keeps_a_standby_when_its_task_moves() {
    let mut a = member("a", "p1");
    a.active = tasks(&[("1", &[0, 1])]);
    let b = member("b", "p2");
    let out = assign(&[a, b], &[sub("1", 2, true)], 1);
    assert_eq!(count(&out["a"].active), 1);
    assert_eq!(count(&out["b"].active), 1);
    // Each process holds both tasks: one active, one standby.
    assert_eq!(count(&out["a"].standby), 1);
    assert_eq!(count(&out["b"].standby), 1);
    let moved = task_ids(&out["b"].active).next().unwrap();
    assert!(task_ids(&out["a"].standby).any(|t| t == moved));
}

#[test]
fn no_members_no_assignment() {
    assert!(assign(&[], &word_count(), 1).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Every active task goes to exactly one member; a process never holds two copies of a
    /// task; standbys only for stateful sub-topologies and at most `replicas` per task; with
    /// one member per process and no history, active counts differ by at most one.
    #[test]
    fn invariants(
        processes in proptest::collection::vec(1usize..4, 1..5),
        subs in proptest::collection::vec((1i32..8, any::<bool>()), 1..4),
        replicas in 0u32..3,
        history in proptest::collection::vec((0usize..16, 0usize..8, 0i32..8), 0..20),
    ) {
        let mut members = Vec::new();
        for (p, n) in processes.iter().enumerate() {
            for i in 0..*n {
                members.push(member(&format!("m{p}-{i}"), &format!("p{p}")));
            }
        }
        let specs: Vec<SubtopologySpec> = subs
            .iter()
            .enumerate()
            .map(|(i, (n, stateful))| sub(&i.to_string(), *n, *stateful))
            .collect();
        // Some history: previous active owners (one per task) and reported offsets.
        let mut owned = BTreeSet::new();
        for (m, s, p) in &history {
            let m = m % members.len();
            let s = s % specs.len();
            if *p < specs[s].tasks && owned.insert((s, *p)) {
                members[m].active.entry(s.to_string()).or_default().insert(*p);
                members[m].task_offsets.insert(TaskId { subtopology: s.to_string(), partition: *p }, 10);
            }
        }
        let out = assign(&members, &specs, replicas);
        prop_assert_eq!(out.len(), members.len());
        let process: BTreeMap<&str, &str> = members.iter().map(|m| (m.id.as_str(), m.process_id.as_str())).collect();
        let mut copies: BTreeMap<(String, TaskId), usize> = BTreeMap::new();
        let mut actives: BTreeMap<TaskId, usize> = BTreeMap::new();
        let mut standbys: BTreeMap<TaskId, u32> = BTreeMap::new();
        for (m, t) in &out {
            for task in task_ids(&t.active) {
                *actives.entry(task.clone()).or_default() += 1;
                *copies.entry((process[m.as_str()].to_string(), task)).or_default() += 1;
            }
            for task in task_ids(&t.standby) {
                let stateful = specs.iter().any(|s| s.id == task.subtopology && s.stateful);
                prop_assert!(stateful);
                *standbys.entry(task.clone()).or_default() += 1;
                *copies.entry((process[m.as_str()].to_string(), task)).or_default() += 1;
            }
        }
        let total: i32 = specs.iter().map(|s| s.tasks).sum();
        prop_assert_eq!(actives.len(), usize::try_from(total).unwrap());
        prop_assert!(actives.values().all(|n| *n == 1));
        prop_assert!(copies.values().all(|n| *n == 1), "{:?}", copies);
        prop_assert!(standbys.values().all(|n| *n <= replicas));
        if history.is_empty() && processes.iter().all(|n| *n == 1) {
            let counts: Vec<usize> = out.values().map(|t| count(&t.active)).collect();
            let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            prop_assert!(hi - lo <= 1, "{:?}", counts);
        }
    }
}
