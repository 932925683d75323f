//! What StreamsGroupDescribe shows of a group, as Kafka 4.4 builds it: the group's state and
//! epochs; its topology (with the partition counts decided for internal topics once the
//! topology is ready, as declared before that; topic lists sorted by name); and per member
//! its metadata, the tasks it holds, its target, and the changelog offsets it reported.
//! The wire encoding is the broker's.

use std::collections::BTreeMap;

use super::assignor::TaskId;
use super::group::StreamsGroup;
use super::member::{StreamsMember, TaskSet};
use super::topology::{InternalTopic, StreamsTopology};

/// Kafka's name for its default task assignor (described as the group's assignor).
pub const ASSIGNOR_NAME: &str = "sticky";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedGroup {
    pub group_id: String,
    pub state: &'static str,
    pub epoch: i32,
    pub assignment_epoch: i32,
    /// Sub-topologies sorted by id; source and sink topics and internal topics sorted by name.
    pub topology: StreamsTopology,
    pub members: Vec<DescribedMember>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribedMember {
    pub member: StreamsMember,
    /// What it holds now.
    pub assignment: TaskSet,
    /// Where it is heading.
    pub target: TaskSet,
    pub task_offsets: BTreeMap<TaskId, i64>,
    pub task_end_offsets: BTreeMap<TaskId, i64>,
}

/// The described content of `group`; `None` if it has no topology (never the case for a
/// group that has had a member).
pub fn describe(group: &StreamsGroup) -> Option<DescribedGroup> {
    let topology = group.topology.as_ref()?;
    let decided = group
        .configured()
        .filter(|c| c.is_ready() && c.epoch == topology.epoch)
        .map(|c| &c.internal_partitions);
    let mut shown = topology.clone();
    for s in shown.subtopologies.values_mut() {
        s.source_topics.sort();
        s.repartition_sink_topics.sort();
        for topics in [
            &mut s.state_changelog_topics,
            &mut s.repartition_source_topics,
        ] {
            if let Some(decided) = decided {
                for t in topics.iter_mut() {
                    if let Some(n) = decided.get(&t.name) {
                        t.partitions = *n;
                    }
                }
            }
            topics.sort_by(|a: &InternalTopic, b| a.name.cmp(&b.name));
        }
    }
    let members = group
        .members
        .values()
        .map(|m| {
            let target = group.target.get(&m.id).cloned().unwrap_or_default();
            let (offsets, end_offsets) = group.reported_offsets(&m.id);
            DescribedMember {
                member: m.clone(),
                assignment: m.assigned.clone(),
                target: TaskSet {
                    active: target.active,
                    standby: target.standby,
                    warmup: Default::default(),
                },
                task_offsets: offsets.cloned().unwrap_or_default(),
                task_end_offsets: end_offsets.cloned().unwrap_or_default(),
            }
        })
        .collect();
    Some(DescribedGroup {
        group_id: group.id.clone(),
        state: group.state().name(),
        epoch: group.epoch,
        assignment_epoch: group.assignment_epoch,
        topology: shown,
        members,
    })
}
