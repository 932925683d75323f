//! Sockets: the listener accepts, each connection reads frames and writes responses.
pub mod connection;
pub mod listener;
