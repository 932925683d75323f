//! Errors of this crate.
//!
//! [`AuthError`] is what a failed SASL exchange produces. Its [`AuthError::client_message`] is
//! the exact text Kafka puts in SaslAuthenticate's `error_message`, so clients print what they
//! would print against Apache Kafka. It never carries a password, a SCRAM proof or a token:
//! every constructor takes only fixed text or names the client chose (user names), which Kafka
//! echoes too. The separate `detail` is for the broker's own log (at debug level) and is
//! equally free of secrets.
//!
//! [`ConfigError`] is for operator-supplied configuration (JAAS lines, credential strings,
//! JWKS files, password hashes): it names what is wrong and where.

use std::fmt;

/// A failed SASL authentication: answer SASL_AUTHENTICATION_FAILED with
/// [`client_message`](Self::client_message), then close the connection (as Kafka does).
#[derive(Clone, PartialEq, Eq)]
pub struct AuthError {
    client_message: String,
    detail: String,
}

impl AuthError {
    /// An error whose message Kafka sends to the client as is (Kafka's
    /// `SaslAuthenticationException`).
    pub(crate) fn client(message: impl Into<String>) -> Self {
        let client_message = message.into();
        AuthError {
            detail: client_message.clone(),
            client_message,
        }
    }

    /// An error that Kafka hides behind its generic message (Kafka's plain `SaslException`):
    /// the client gets "Authentication failed during authentication due to invalid credentials
    /// with SASL mechanism <mechanism>", `detail` keeps the reason for the log.
    pub(crate) fn generic(mechanism: &str, detail: impl Into<String>) -> Self {
        AuthError {
            client_message: format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
            ),
            detail: detail.into(),
        }
    }

    /// The text for SaslAuthenticate's `error_message`.
    pub fn client_message(&self) -> &str {
        &self.client_message
    }

    /// Why it failed, for the broker's log. Never contains a secret.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// Kafka words a failed *re*-authentication (KIP-368) "during re-authentication"; the
    /// connection calls this when the exchange was a re-authentication.
    pub fn into_reauthentication(mut self) -> Self {
        self.client_message =
            self.client_message
                .replacen("during authentication", "during re-authentication", 1);
        self
    }
}

impl fmt::Debug for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthError")
            .field("client_message", &self.client_message)
            .field("detail", &self.detail)
            .finish()
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.client_message)
    }
}

impl std::error::Error for AuthError {}

/// A configuration value this crate could not accept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// A `sasl.jaas.config` value that does not parse; `at` is a byte offset into it.
    #[error("invalid JAAS config at byte {at}: {reason}")]
    Jaas { at: usize, reason: String },
    /// A JAAS line that parses but does not fit the mechanism it was given for.
    #[error("invalid JAAS config: {0}")]
    JaasContent(String),
    /// A stored SCRAM credential or password hash that does not parse.
    #[error("invalid credential: {0}")]
    Credential(String),
    /// A SCRAM iteration count outside Kafka's bounds.
    #[error("{0}")]
    Iterations(String),
    /// A JWKS file that cannot be read or parsed.
    #[error("JWKS file {path}: {reason}")]
    Jwks { path: String, reason: String },
    /// A `sasl.enabled.mechanisms` list that cannot be served.
    #[error("invalid sasl.enabled.mechanisms: {0}")]
    Mechanisms(String),
    /// Any other OAUTHBEARER setting that is not usable.
    #[error("invalid sasl.oauthbearer setting: {0}")]
    OAuth(String),
}
