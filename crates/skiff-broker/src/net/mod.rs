//! Sockets: the listener accepts within the connection quotas, each connection reads frames
//! and writes responses.
pub mod connection;
pub mod listener;
pub mod quotas;
pub mod sasl;
pub mod tls;
pub mod tls_identity;
pub mod tls_key;
