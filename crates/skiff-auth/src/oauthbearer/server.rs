//! The OAUTHBEARER exchange as Kafka's `OAuthBearerSaslServer` runs it.
//!
//! - A valid token: `Done` with principal `User:<sub>` and a session lifetime running to the
//!   token's `exp` (Kafka re-authenticates or closes the session then, KIP-368).
//! - An invalid token: RFC 7628's two-step failure. The server answers `Continue` with the
//!   JSON error `{"status":"invalid_token"}` (exactly Kafka's bytes); the client replies with a
//!   single 0x01 byte, and the server then fails with that same JSON text as the
//!   SaslAuthenticate error message, as Kafka does. A client that sends a new initial response
//!   instead of 0x01 is evaluated afresh, as in Kafka.
//! - A malformed client message: Kafka's generic "…with SASL mechanism OAUTHBEARER".
//! - An authorization id that is not the token's subject: Kafka's "Authentication failed:
//!   Client requested an authorization id (…) that is different from the token's principal
//!   name (…)".
//!
//! SASL extensions are all accepted, as Kafka's default validator accepts them; they are not
//! returned, since Skiff has no use for them yet.

use std::sync::Arc;

use super::initial_response;
use super::validator::JwtValidator;
use crate::error::AuthError;
use crate::server::{user_principal, Authenticated, Mechanism, SaslServer, Step};

/// Kafka's error status for a token that fails validation.
pub const INVALID_TOKEN_JSON: &str = r#"{"status":"invalid_token"}"#;

/// One OAUTHBEARER exchange.
pub struct OAuthBearerServer {
    validator: Arc<JwtValidator>,
    /// The JSON error sent to the client, waiting for its 0x01 acknowledgement.
    pending_error: Option<String>,
    /// Why the last token was refused, for the connection's log.
    rejection: Option<String>,
    finished: bool,
}

impl OAuthBearerServer {
    pub fn new(validator: Arc<JwtValidator>) -> Self {
        OAuthBearerServer {
            validator,
            pending_error: None,
            rejection: None,
            finished: false,
        }
    }

    fn fail(&mut self, error: AuthError) -> Step {
        self.finished = true;
        Step::Fail(error)
    }
}

impl SaslServer for OAuthBearerServer {
    fn mechanism(&self) -> Mechanism {
        Mechanism::OAuthBearer
    }

    /// Why the last token was refused (never contains the token).
    fn rejection_reason(&self) -> Option<&str> {
        self.rejection.as_deref()
    }

    fn step(&mut self, client_token: &[u8], now_ms: i64) -> Step {
        if self.finished {
            return Step::Fail(AuthError::generic(
                "OAUTHBEARER",
                "OAUTHBEARER exchange already finished",
            ));
        }
        if let Some(json) = self.pending_error.take() {
            if client_token == [0x01] {
                return self.fail(AuthError::client(json));
            }
        }
        let response = match initial_response::parse(client_token) {
            Ok(r) => r,
            Err(e) => {
                return self.fail(AuthError::generic(
                    "OAUTHBEARER",
                    format!("invalid OAUTHBEARER client first message: {e}"),
                ))
            }
        };
        let token = match self.validator.validate(&response.token, now_ms) {
            Ok(t) => t,
            Err(reason) => {
                // The reason is the broker's to log (see `rejection_reason`); the client only
                // learns the RFC 7628 status.
                self.rejection = Some(reason);
                self.pending_error = Some(INVALID_TOKEN_JSON.to_string());
                return Step::Continue(INVALID_TOKEN_JSON.as_bytes().to_vec());
            }
        };
        if !response.authzid.is_empty() && response.authzid != token.principal_name {
            return self.fail(AuthError::client(format!(
                "Authentication failed: Client requested an authorization id ({}) that is different from the token's principal name ({})",
                response.authzid, token.principal_name
            )));
        }
        self.finished = true;
        Step::Done(Authenticated {
            principal: user_principal(&token.principal_name),
            server_final: None,
            session_lifetime_ms: Some(token.expires_at_ms.saturating_sub(now_ms).max(0)),
        })
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
