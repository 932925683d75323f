//! Streams groups (KIP-1071, `group.protocol=streams`): Kafka Streams applications whose
//! tasks the broker assigns. Members declare the application's topology when they join; the
//! broker checks it against the topics that exist, names the internal topics it must create,
//! and spreads the tasks over the members.
//!
//! - `topology.rs`: the topology as members declare it, and its structural checks.
//! - `configure.rs`: the topology against the existing topics: task counts, internal topic
//!   partition counts, the topics still to create, and the heartbeat status when tasks
//!   cannot be assigned yet.
//! - `assignor.rs`: the sticky task assignor (active and standby tasks).
//! - `describe.rs`: what StreamsGroupDescribe shows.
//! - `group.rs`: one group's epochs, members, target and reconciliation.
//! - `reconcile.rs`: a member moving towards its target (revocation before reassignment).
//! - `member.rs`: a member and the tasks it holds.
//! - `records.rs`: Kafka's streams group records of `__consumer_offsets`.
//! - `persist.rs`: a group to and from those records.
//! - `settings.rs`: the limits and their defaults.
//! - `error.rs`: refusals, and the one place they become Kafka error codes.
//!
//! Pure: no I/O, no timers, no locks. The group coordinator holds a [`StreamsGroup`] inside
//! each streams group (`crate::groups`, `streams.rs`); the broker's `streams_service.rs`
//! serves StreamsGroupHeartbeat and StreamsGroupDescribe with it (docs/groups.md §6).

mod assignor;
mod configure;
mod describe;
mod error;
mod group;
mod member;
mod persist;
mod reconcile;
pub mod records;
mod settings;
mod topology;

pub use assignor::{assign, task_ids, MemberSpec, MemberTasks, SubtopologySpec, TaskId, Tasks};
pub use configure::{
    configure, ConfiguredSubtopology, ConfiguredTopology, InvalidTopology, Status, StatusCode,
};
pub use describe::{describe, DescribedGroup, DescribedMember, ASSIGNOR_NAME};
pub use error::StreamsGroupError;
pub use group::{
    EndpointPartitions, Heartbeat, HeartbeatResult, PartitionCounts, RemovalReason, StreamsGroup,
    StreamsGroupState, LEAVE_EPOCH, STATIC_LEAVE_EPOCH,
};
pub use member::{Endpoint, MemberState, StreamsMember, TaskSet};
pub use persist::{restore, snapshot, Persisted};
pub use settings::StreamsGroupSettings;
pub use topology::{CopartitionGroup, InternalTopic, StreamsTopology, Subtopology};

#[cfg(test)]
mod assignor_tests;
#[cfg(test)]
mod configure_tests;
#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod persist_tests;
