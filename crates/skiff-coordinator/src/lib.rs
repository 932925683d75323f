//! The group and transaction coordinators of Skiff, below the server.
//!
//! - [`groups`]: classic and KIP-848 consumer groups, share groups (KIP-932, the group side of
//!   [`share_group`]), committed offsets, and their records in `__consumer_offsets`.
//! - [`txn`]: the transaction coordinator (KIP-98) and its records in `__transaction_state`.
//! - [`share`]: the share-partition state machine of share groups (KIP-932), pure; the
//!   broker's share-partition manager runs it. [`share_state`]: its durable form in
//!   `__share_group_state`.
//! - [`host`]: what the coordinators need from the broker — storage for their internal
//!   topics, the topic catalogue, group configs, producer ids and the data partitions that
//!   take transaction markers — as small traits the broker implements.
//!
//! The state machines do no I/O of their own: time comes from an injected
//! [`skiff_log::Clock`], records go through the [`host::Storage`] the broker passes in. This
//! crate knows nothing of sockets, the async runtime or the broker's connection layer
//! (tokio is used only for its `oneshot` channels), so new group types can be added beside the
//! existing state machines without touching the network layer.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod cadence;
pub mod groups;
pub mod host;
pub mod internal_topic;
pub mod share;
pub mod share_group;
pub mod share_state;
pub mod streams_group;
pub mod txn;
mod wire;

#[cfg(test)]
mod commit_fence_host_tests;
#[cfg(test)]
mod host_tests;
#[cfg(test)]
mod memory;
#[cfg(test)]
mod migration_host_tests;
#[cfg(test)]
mod streams_host_tests;

pub use host::{
    GroupConfigs, InternalPartition, ShareGroupListener, StartError, Storage, TopicCatalog,
    LEADER_EPOCH,
};
