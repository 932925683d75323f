//! Durable share-partition state (KIP-932) in `__share_group_state`, the way Kafka 4.4's share
//! coordinator keeps it, so the topic is readable by either broker.
//!
//! A share partition's state ([`crate::share::ShareSnapshot`]) is stored as a ShareSnapshot
//! record, then as ShareUpdate records carrying only the batches a write changed; every
//! `share.coordinator.snapshot.update.records.per.snapshot` updates a new snapshot folds them
//! in, so replay never has more than that many updates to combine. Replay applies each
//! snapshot and the updates after it, combining state batches as Kafka's
//! `PersisterStateBatchCombiner` does.
//!
//! - `records.rs`: the key and value formats, byte for byte (`crate::wire`: their primitives).
//! - `combine.rs`: folding state batches together (pure).
//! - `state.rs`: the latest state of every share partition and which record a write appends
//!   (pure).
//! - `placement.rs`: the topic partition Kafka puts a share partition's records in.
//! - `prune.rs`: which records of a topic partition are no longer needed.
//! - `cold.rs`: which share partitions get a snapshot only because their last one is old
//!   (so an idle share partition does not hold pruning back).
//! - `store.rs`: [`ShareStateStore`], the topic over [`crate::host::Storage`]: create, replay,
//!   append, cold snapshots and pruning.
//! - `error.rs`: errors and their Kafka codes.
//!
//! The broker's share-partition manager (`skiff-broker/src/share/`) opens and writes it, and
//! its housekeeper runs the cold snapshots and pruning (see docs/share-groups.md, "Durable
//! state").

mod cold;
mod combine;
mod error;
mod placement;
mod prune;
pub mod records;
mod state;
mod store;
/// The crate's record primitives, under the name this module's codecs have always used.
use crate::wire;

pub use cold::DEFAULT_COLD_SNAPSHOT_INTERVAL_MS;
pub use combine::combine;
pub use error::ShareStateError;
pub use placement::{coordinator_key, kafka_uuid_string, partition_for};
pub use prune::RedundantOffsets;
pub use records::SharePartitionKey;
pub use state::{
    BatchWrite, Record, ShareStates, ShareWrite, StoredShare, DEFAULT_UPDATES_PER_SNAPSHOT,
};
pub use store::{
    encode_batch, topic_configs, Appended, ShareStateConfig, ShareStateStore,
    DEFAULT_NUM_PARTITIONS, DEFAULT_SEGMENT_BYTES, SHARE_STATE_TOPIC,
};
pub use wire::CodecError;

#[cfg(test)]
mod log_tests;
#[cfg(test)]
mod records_tests;
#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod store_tests;
