//! Share groups (KIP-932, "Queues for Kafka"): the share-partition state machine.
//!
//! A share group lets many consumers read one partition together. Instead of a committed
//! offset per partition, the group keeps, for each (group, topic-partition), a window of
//! in-flight records: the share-partition start offset (SPSO) below which everything is done,
//! and for each record in the window a delivery state and a delivery count:
//!
//! ```text
//!              acquire (count + 1)
//!   AVAILABLE ─────────────────────▶ ACQUIRED ── accept ──────────────▶ ACKNOWLEDGED
//!       ▲                              │  │ ─── reject / gap ────────▶ ARCHIVED
//!       └── release / lock expiry / ───┘  └── release etc. at limit ─▶ ARCHIVED
//!           member leaves (count kept)
//! ```
//!
//! [`SharePartition`] models that window the way Kafka 4.4's `SharePartition` does, as a pure
//! value: no I/O, no timers, no async. Time comes in as `now_ms`; the log read comes in as
//! [`FetchedBatch`]es; persistence goes out as a [`ShareSnapshot`]. The broker's share-partition
//! manager (`skiff-broker/src/share/`) drives it (see docs/share-groups.md).
//!
//! - `partition.rs`: the window, lock expiry, members leaving, the log start moving, SPSO.
//! - `acquire.rs`: handing records out (ShareFetch's AcquiredRecords).
//! - `acknowledge.rs`: ACCEPT / RELEASE / REJECT / GAP / RENEW.
//! - `fetch.rs`: the inputs of an acquisition (batches, isolation, transactions).
//! - `snapshot.rs`: ShareSnapshot content and rebuilding from it.
//! - `reset.rs`: `share.auto.offset.reset`.
//! - `gaps.rs`: offsets a restored state left to deliver.
//!
//! Thread safety: none inside; the owner serialises calls per partition.

mod acknowledge;
mod acquire;
mod error;
mod fetch;
mod gaps;
mod partition;
mod record;
mod reset;
mod snapshot;

pub use acknowledge::{
    validate_acknowledgements, AckBatch, AckContext, Acknowledged, ACK_ACCEPT, ACK_GAP, ACK_REJECT,
    ACK_RELEASE, ACK_RENEW,
};
pub use acquire::throttle_threshold;
pub use error::ShareError;
pub use fetch::{AbortedTxn, AcquireMode, AcquiredRecords, Fetch, FetchedBatch, Isolation};
pub use partition::{
    Released, ShareLimits, SharePartition, DEFAULT_DELIVERY_COUNT_LIMIT,
    DEFAULT_MAX_IN_FLIGHT_RECORDS, DEFAULT_RECORD_LOCK_DURATION_MS,
};
pub use record::{DeliveryState, InFlightRecord, Lock};
pub use reset::{initial_start_offset, AutoOffsetReset, LogOffsets};
pub use snapshot::{ShareSnapshot, StateBatch, MAX_RESTORED_SPAN};

#[cfg(test)]
mod acknowledge_tests;
#[cfg(test)]
mod acquire_tests;
#[cfg(test)]
mod lifecycle_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod test_support;
