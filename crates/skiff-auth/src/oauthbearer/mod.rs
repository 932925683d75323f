//! OAUTHBEARER (RFC 7628, KIP-255, KIP-768) with JWTs checked against keys from a local JWKS
//! file, as Kafka's broker-side `OAuthBearerValidatorCallbackHandler` does with
//! `sasl.oauthbearer.jwks.endpoint.url` set to a `file:` URL.
//!
//! - [`initial_response`]: the client's `n,,\x01auth=Bearer <jwt>\x01…\x01` message.
//! - [`jwks`]: the key set file.
//! - [`validator`]: the `sasl.oauthbearer.*` settings and the JWT checks.
//! - [`server`]: the exchange, with Kafka's two-step failure.
//!
//! Signatures are verified by the `jsonwebtoken` crate (RustCrypto backend); the claim checks
//! are done here, against the time the connection passes in, so they are exact and testable.

pub mod initial_response;
pub mod jwks;
pub mod server;
pub mod validator;

pub use server::OAuthBearerServer;
pub use validator::{JwtValidator, OAuthBearerConfig, ValidatedToken};
