//! Share groups in the broker (KIP-932): the share-partition manager, share sessions and what
//! ShareFetch / ShareAcknowledge need from the log. The state machine itself is
//! `skiff_coordinator::share` (pure); its durable form is `skiff_coordinator::share_state`.
//!
//! - `manager.rs`: [`ShareManager`], the share partitions behind per-partition locks, loading
//!   and persisting them, acquiring and acknowledging, waiting for durability.
//! - `release.rs`: releases and the group coordinator's hooks (`close_session`,
//!   `connection_closed`, `member_removed`, `group_deleted`) and lock expiry.
//! - `session.rs`: share sessions (epochs, partitions, the connection that opened them).
//! - `settings.rs`: per-group settings and their one resolver.
//! - `membership.rs`: "is this member in this share group" and member id checks.
//! - `listener.rs`: the group coordinator's `ShareGroupListener` (members removed, groups
//!   deleted), handed to the blocking pool.
//! - `log_view.rs`: reads of the data log as the state machine wants them.
//! - `timer.rs`: the lock-expiry task.
//! - `upkeep.rs`: cold-partition snapshots and pruning of `__share_group_state`, run by the
//!   housekeeper.
//! - `metrics.rs`: counters.
//! - `connection.rs`: which connection a request came in on.
//! - `acks.rs`: applying a request's acknowledgements, partition by partition.
//!
//! Thread safety: see each module; in short, std mutexes held for in-memory work only, except
//! a share partition's own lock, held by blocking-pool threads across its log read and its
//! `__share_group_state` append (never across an fsync or an `.await`).

pub mod acks;
pub mod connection;
pub mod listener;
pub mod log_view;
pub mod manager;
pub mod membership;
pub mod metrics;
pub mod offsets;
pub mod release;
pub mod session;
pub mod settings;
pub mod timer;
pub mod upkeep;

pub use manager::{
    AcquireLimits, AcquiredData, Pending, ShareManager, SharePartitionFacts, StateStore,
};
pub use membership::share_requester;
pub use session::{FetchContext, SessionError, SessionKey, ShareSessions, MAX_SHARE_SESSIONS};
pub use settings::{KafkaDefaults, ShareGroupSettings, ShareIsolation, ShareSettings};
