//! The Skiff broker: a tokio server that speaks the Kafka protocol on top of `skiff-log`.
//!
//! Layers: `net` owns sockets and framing, `dispatch` routes one decoded request to its
//! handler in `handlers`, handlers return a [`dispatch::Reply`] value and never touch the
//! socket. Every handler receives one [`context::RequestContext`] (the shared [`Broker`],
//! API version, client, listener, principal) and reports failures as one typed
//! [`errors::BrokerError`], which [`errors::kafka_error`] turns into Kafka's code.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod acl_operations;
pub mod authz;
pub mod background;
pub mod broker;
pub mod builder;
pub mod compaction;
pub mod console;
pub mod context;
pub mod coordinator_host;
pub mod dispatch;
pub mod document_file;
pub mod durability;
pub mod dynamic_configs;
pub mod errors;
pub mod fetch_sessions;
pub mod handlers;
pub mod http;
pub mod key_indexes;
pub mod metrics;
pub mod net;
pub mod open_files;
pub mod partition;
pub mod partitioner;
pub mod producer_ids;
pub mod quotas;
pub mod sasl_setup;
pub mod scram_store;
pub mod share;
pub mod streams_groups;
pub mod streams_service;
pub mod streams_topics;
pub mod table_lookup;
pub mod table_snapshot;
pub mod topics;

pub use broker::{Broker, StartError};
pub use builder::BrokerBuilder;
pub use net::listener::{serve, serve_listener};
