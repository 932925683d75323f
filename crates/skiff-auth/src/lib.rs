//! SASL authentication for Skiff, without I/O.
//!
//! This crate owns the server side of Kafka's SASL mechanisms as pure state machines, the
//! credential formats behind them, and the parsing of Kafka's `sasl.jaas.config` lines. It
//! knows nothing of sockets, tokio or Kafka's request framing: the broker's connection feeds
//! client tokens in and sends what comes out (see [`server::SaslServer`]). Everything here is
//! synchronous and each server object serves exactly one exchange on one connection.
//!
//! - [`server`]: the mechanism-neutral trait, outcome and mechanism names.
//! - [`mechanisms`]: a listener's enabled mechanisms and a fresh server per exchange.
//! - [`plain`]: PLAIN (RFC 4616) against a user store.
//! - [`password_hash`]: Skiff's salted PLAIN password hashes.
//! - [`scram`]: SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and credential storage forms.
//! - [`oauthbearer`]: OAUTHBEARER (RFC 7628) with JWTs checked against a local JWKS file.
//! - [`jaas`]: Kafka's JAAS config syntax.
//!
//! Secrets (passwords, proofs, tokens, keys) never appear in an error or a `Debug` output.

pub mod error;
pub mod jaas;
pub mod mechanisms;
pub mod oauthbearer;
pub mod password_hash;
pub mod plain;
pub mod scram;
pub mod server;

pub use error::{AuthError, ConfigError};
pub use mechanisms::Mechanisms;
pub use server::{Authenticated, Mechanism, SaslServer, Step};
