//! Moving one streams group member towards its target (Kafka's reconciliation): tasks it must
//! give up are revoked first, and it keeps its epoch until its heartbeat shows them gone;
//! tasks it must receive are handed over once no other member holds them (an active task
//! while another member runs it, a standby while a member of the same process has a copy),
//! meanwhile it is at the new epoch in the UnreleasedTasks state.

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::{task_ids, TaskId, Tasks};
use super::group::StreamsGroup;
use super::member::{MemberState, StreamsMember, TaskSet};

impl StreamsGroup {
    /// Moves one member towards its target (Kafka's reconciliation): tasks to give up are
    /// revoked first; new tasks are handed out once no other member holds them.
    pub(super) fn reconcile(&mut self, member_id: &str, owned: Option<&TaskSet>, now: i64) {
        let Some(member) = self.members.get(member_id).cloned() else {
            return;
        };
        let target_epoch = self.assignment_epoch;
        let released = |pending: &TaskSet| owned.is_some_and(|o| !o.holds_any_of(pending));
        match member.state {
            MemberState::Stable if member.epoch == target_epoch => return,
            MemberState::UnrevokedTasks if !released(&member.pending_revocation) => return,
            _ => {}
        }
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let target = TaskSet {
            active: target.active,
            standby: target.standby,
            warmup: Tasks::new(),
        };
        let held_elsewhere = self.held_by_others(&member);
        let (keep, revoke, add, unreleased) =
            difference(&member.assigned, &target, |kind, task| {
                held_elsewhere.blocks(kind, task, &member.process_id)
            });
        let mut next = member.clone();
        if !revoke.is_empty() && !released(&revoke) {
            next.state = MemberState::UnrevokedTasks;
            next.assigned = keep;
            next.pending_revocation = revoke;
            next.revoke_deadline = Some(now + i64::from(member.rebalance_timeout_ms.max(0)));
        } else {
            next.state = if unreleased {
                MemberState::UnreleasedTasks
            } else {
                MemberState::Stable
            };
            next.assigned = merge(keep, add);
            next.pending_revocation = TaskSet::default();
            next.revoke_deadline = None;
            if next.epoch != target_epoch {
                next.previous_epoch = next.epoch;
                next.epoch = target_epoch;
            }
        }
        next.settle_assignment_epochs();
        self.members.insert(member_id.to_string(), next);
    }

    fn held_by_others(&self, member: &StreamsMember) -> Holders {
        let mut h = Holders::default();
        for m in self.members.values().filter(|m| m.id != member.id) {
            for set in [&m.assigned, &m.pending_revocation] {
                for t in task_ids(&set.active) {
                    h.active.insert(t, m.process_id.clone());
                }
                for t in task_ids(&set.standby).chain(task_ids(&set.warmup)) {
                    h.standby.entry(t).or_default().insert(m.process_id.clone());
                }
            }
        }
        h
    }
}

/// Which other members hold which tasks.
#[derive(Default)]
struct Holders {
    /// Task → the process of the member running it.
    active: BTreeMap<TaskId, String>,
    /// Task → processes holding a standby or warm-up copy.
    standby: BTreeMap<TaskId, BTreeSet<String>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Active,
    Standby,
}

impl Holders {
    /// A task cannot be handed out yet: an active task while another member still runs it
    /// (or a member of this process still holds a copy of its state), a standby while this
    /// process already has it.
    fn blocks(&self, kind: Kind, task: &TaskId, process: &str) -> bool {
        match kind {
            Kind::Active => {
                self.active.contains_key(task)
                    || self.standby.get(task).is_some_and(|p| p.contains(process))
            }
            Kind::Standby => {
                self.active.get(task).is_some_and(|p| p == process)
                    || self.standby.get(task).is_some_and(|p| p.contains(process))
            }
        }
    }
}

/// One kind of task list of a [`TaskSet`].
type Field = fn(&TaskSet) -> &Tasks;
type FieldMut = fn(&mut TaskSet) -> &mut Tasks;

/// Splits current vs target into (kept, to revoke, to add now, whether some could not be
/// added yet).
fn difference(
    current: &TaskSet,
    target: &TaskSet,
    blocked: impl Fn(Kind, &TaskId) -> bool,
) -> (TaskSet, TaskSet, TaskSet, bool) {
    let mut keep = TaskSet::default();
    let mut revoke = TaskSet::default();
    let mut add = TaskSet::default();
    let mut unreleased = false;
    let kinds: [(Kind, Field, FieldMut); 3] = [
        (Kind::Active, |s| &s.active, |s| &mut s.active),
        (Kind::Standby, |s| &s.standby, |s| &mut s.standby),
        (Kind::Standby, |s| &s.warmup, |s| &mut s.warmup),
    ];
    for (kind, get, get_mut) in kinds {
        let cur: BTreeSet<TaskId> = task_ids(get(current)).collect();
        let want: BTreeSet<TaskId> = task_ids(get(target)).collect();
        for t in cur.intersection(&want) {
            insert(get_mut(&mut keep), t);
        }
        for t in cur.difference(&want) {
            insert(get_mut(&mut revoke), t);
        }
        for t in want.difference(&cur) {
            if blocked(kind, t) {
                unreleased = true;
            } else {
                insert(get_mut(&mut add), t);
            }
        }
    }
    (keep, revoke, add, unreleased)
}

fn insert(tasks: &mut Tasks, t: &TaskId) {
    tasks
        .entry(t.subtopology.clone())
        .or_default()
        .insert(t.partition);
}

fn merge(mut a: TaskSet, b: TaskSet) -> TaskSet {
    for (to, from) in [
        (&mut a.active, b.active),
        (&mut a.standby, b.standby),
        (&mut a.warmup, b.warmup),
    ] {
        for (s, ps) in from {
            to.entry(s).or_default().extend(ps);
        }
    }
    a
}
