//! Share groups (KIP-932): the group side — membership and assignment, as Kafka 4.4's group
//! coordinator runs them for ShareGroupHeartbeat and ShareGroupDescribe. The share-partition
//! side (records handed out and acknowledged) is [`crate::share`].
//!
//! A consumer joins with member epoch 0 and a member id of its own, names the topics it
//! subscribes to, heartbeats every `group.share.heartbeat.interval.ms`, and leaves with epoch
//! -1; one silent for `group.share.session.timeout.ms` is removed. Each answer carries its
//! member epoch and, when it changed, its assignment (topic id → partitions). Kafka's
//! "simple" assignor spreads partitions over members and, when members outnumber partitions,
//! gives the same partition to several of them.
//!
//! - `registry.rs`: every share group by id, the request-level rules, responses.
//! - `group.rs`: one group's epochs, members, target assignment and expiry.
//! - `member.rs`: a member, and the [`MemberRemoved`] event for the share partitions.
//! - `assignor.rs` (+ `assignor_homogeneous.rs`, `assignor_heterogeneous.rs`): the simple
//!   assignor.
//! - `heartbeat.rs`: ShareGroupHeartbeat v1 request checks and responses.
//! - `describe.rs`: ShareGroupDescribe v1 content.
//! - `records.rs`: Kafka's share group records of `__consumer_offsets` (primitives in
//!   `crate::wire`).
//! - `replay.rs`: a group's records, a departure's tombstones, rebuilding groups at load.
//! - `persist.rs`: which records to write after a change (only what changed), and the
//!   tombstones of a deleted group.
//! - `settings.rs`: the limits and their defaults.
//! - `error.rs`: refusals, and the one place they become Kafka error codes.
//!
//! Pure: no I/O, no timers, no locks. The group coordinator owns a [`ShareGroups`] behind
//! its share lock, writes the records [`Persisted::changes`] returns and replays them with
//! [`ShareReplay`] at load (`crate::groups`, `share.rs`; docs/share-groups.md, "Share group
//! membership"). Thread safety: none inside; the owner serialises calls.

mod assignor;
mod describe;
mod error;
mod group;
mod heartbeat;
mod member;
mod persist;
mod records;
mod registry;
mod replay;
mod settings;

pub use crate::wire::CodecError;
pub use assignor::{assign, MemberSpec, Subscription, TopicAssignment};
pub use describe::{described, described_error, ASSIGNOR_NAME};
pub use error::ShareGroupError;
pub use group::{Heartbeat, HeartbeatResult, ShareGroup, ShareGroupState, LEAVE_EPOCH};
pub use heartbeat::{error_response, leave_response, response, validate, Request};
pub use member::{MemberRemoved, RemovalReason, ShareMember};
pub use persist::{group_tombstones, Persisted};
pub use records::{decode_key, encode_key, ShareKey};
pub use registry::{HeartbeatContext, HeartbeatOutcome, ShareGroups};
pub use replay::{group_records, member_removed_records, RawRecord, ShareReplay};
pub use settings::{
    ShareGroupSettings, DEFAULT_ASSIGNMENT_INTERVAL_MS, DEFAULT_HEARTBEAT_INTERVAL_MS,
    DEFAULT_MAX_SIZE, DEFAULT_SESSION_TIMEOUT_MS,
};

#[cfg(test)]
mod describe_tests;
#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod registry_tests;
#[cfg(test)]
mod replay_tests;
#[cfg(test)]
pub(crate) mod test_support;
