//! One member of a streams group (a stream thread of a Kafka Streams instance), the tasks it
//! holds, and where it stands in reconciling them with its target.

use std::collections::BTreeMap;

use super::assignor::{task_ids, TaskId, Tasks};
use crate::groups::commit_fence::{self, AssignmentEpochs};

/// Active, standby and warm-up tasks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskSet {
    pub active: Tasks,
    pub standby: Tasks,
    pub warmup: Tasks,
}

impl TaskSet {
    pub fn is_empty(&self) -> bool {
        [&self.active, &self.standby, &self.warmup]
            .iter()
            .all(|t| t.values().all(|p| p.is_empty()))
    }

    /// Some task of `other` is in `self`, whatever its kind.
    pub fn holds_any_of(&self, other: &TaskSet) -> bool {
        let mine: Vec<TaskId> = self.all().collect();
        other.all().any(|t| mine.contains(&t))
    }

    /// Every task, whatever its kind.
    pub fn all(&self) -> impl Iterator<Item = TaskId> + '_ {
        task_ids(&self.active)
            .chain(task_ids(&self.standby))
            .chain(task_ids(&self.warmup))
    }

    /// `self` is within `other`, kind by kind.
    pub fn within(&self, other: &TaskSet) -> bool {
        let inside = |a: &Tasks, b: &Tasks| {
            a.iter()
                .all(|(s, ps)| ps.is_empty() || b.get(s).is_some_and(|bs| ps.is_subset(bs)))
        };
        inside(&self.active, &other.active)
            && inside(&self.standby, &other.standby)
            && inside(&self.warmup, &other.warmup)
    }
}

/// Where a member stands against its target (Kafka's member states).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemberState {
    /// Holds its target, or all of it that others have released.
    #[default]
    Stable,
    /// Told to give up tasks; keeps its epoch until it reports them gone.
    UnrevokedTasks,
    /// Has its new epoch but waits for tasks other members still hold.
    UnreleasedTasks,
}

impl MemberState {
    /// As StreamsGroupDescribe spells it.
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "stable",
            MemberState::UnrevokedTasks => "unrevoked_tasks",
            MemberState::UnreleasedTasks => "unreleased_tasks",
        }
    }
}

/// The host and port a member serves interactive queries on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamsMember {
    pub id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// The Kafka Streams instance it belongs to: tasks of one process share state.
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: BTreeMap<String, String>,
    /// The topology epoch it last declared.
    pub topology_epoch: i32,
    pub rebalance_timeout_ms: i32,
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: MemberState,
    /// What it has been told it holds.
    pub assigned: TaskSet,
    /// Told to give these up, not yet reported gone.
    pub pending_revocation: TaskSet,
    /// The member epoch each active task of `assigned` and `pending_revocation` was
    /// assigned at: offset commits at an older epoch may write its partitions.
    pub active_assigned_at: AssignmentEpochs,
    pub(super) session_deadline: i64,
    /// A member that has not revoked by then is removed.
    pub(super) revoke_deadline: Option<i64>,
}

impl StreamsMember {
    pub(super) fn new(id: &str) -> StreamsMember {
        StreamsMember {
            id: id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            process_id: String::new(),
            user_endpoint: None,
            client_tags: BTreeMap::new(),
            topology_epoch: -1,
            rebalance_timeout_ms: -1,
            epoch: 0,
            previous_epoch: -1,
            state: MemberState::Stable,
            assigned: TaskSet::default(),
            pending_revocation: TaskSet::default(),
            active_assigned_at: AssignmentEpochs::new(),
            session_deadline: 0,
            revoke_deadline: None,
        }
    }

    /// Stamps active tasks new to it with its epoch and forgets those it no longer holds.
    pub(super) fn settle_assignment_epochs(&mut self) {
        let held = commit_fence::held([&self.assigned.active, &self.pending_revocation.active]);
        commit_fence::settle(&mut self.active_assigned_at, held, self.epoch);
    }

    /// What the assignor looks at; a change of it triggers a new assignment.
    pub(super) fn assignment_inputs(&self) -> impl PartialEq + '_ {
        (
            &self.process_id,
            &self.rack_id,
            &self.client_tags,
            &self.instance_id,
            self.topology_epoch,
        )
    }
}
