//! The Skiff broker: a tokio server that speaks the Kafka protocol on top of `skiff-log`.
//!
//! Layers: `net` owns sockets and framing, `dispatch` routes one decoded request to its
//! handler in `handlers`, handlers return a [`dispatch::Reply`] value and never touch the
//! socket. Shared state lives in one [`Broker`] (`Arc`) passed to every handler.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod acl_operations;
pub mod background;
pub mod broker;
pub mod coordinator_host;
pub mod dispatch;
pub mod durability;
pub mod dynamic_configs;
pub mod errors;
pub mod handlers;
pub mod metrics;
pub mod net;
pub mod partition;
pub mod producer_ids;
pub mod topics;

pub use broker::{Broker, StartError};
pub use net::listener::{serve, serve_listener};
/// The coordinators live in `skiff-coordinator`; re-exported under their old paths.
pub use skiff_coordinator::groups as coordinator;
pub use skiff_coordinator::txn;
