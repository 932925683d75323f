//! The mechanism-neutral server side of a SASL exchange.
//!
//! A [`SaslServer`] is a state machine that does no I/O: the connection feeds it each client
//! token (the `auth_bytes` of SaslAuthenticate, or a raw v0 token) with the current time, and
//! sends back what it returns. Each server object serves one exchange and is not shared between
//! threads; create a new one per (re-)authentication.
//!
//! After [`Step::Fail`] the connection answers SASL_AUTHENTICATION_FAILED with
//! [`AuthError::client_message`] and closes, as Kafka does; feeding the server again after
//! `Done` or `Fail` yields a `Fail`.

use crate::error::AuthError;

/// The mechanisms this crate implements, with their IANA / Kafka names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
    OAuthBearer,
}

impl Mechanism {
    /// Every mechanism, in the order a SaslHandshake response lists them.
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Plain,
        Mechanism::ScramSha256,
        Mechanism::ScramSha512,
        Mechanism::OAuthBearer,
    ];

    /// The name as sent in SaslHandshake and `sasl.enabled.mechanisms`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// Parses a mechanism name; Kafka's names are case-sensitive, so is this.
    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What the server answers to one client token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send this token to the client and wait for its next one.
    Continue(Vec<u8>),
    /// Authenticated.
    Done(Authenticated),
    /// Authentication failed; answer with the error's client message and close.
    Fail(AuthError),
}

/// The outcome of a successful exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The principal in Kafka's `User:<name>` form (the authorization id, which Kafka's
    /// mechanisms all require to equal the authenticated name).
    pub principal: String,
    /// A last token for the client (SCRAM's server-final `v=` message), sent in the successful
    /// SaslAuthenticate response.
    pub server_final: Option<Vec<u8>>,
    /// How long the credential stays valid from now, when the mechanism knows (OAUTHBEARER: the
    /// token's `exp`). The connection reports `min(this, connections.max.reauth.ms)` as
    /// SaslAuthenticate's `session_lifetime_ms` (KIP-368), like Kafka.
    pub session_lifetime_ms: Option<i64>,
}

/// Kafka's principal type for every SASL mechanism.
pub const USER_PRINCIPAL_TYPE: &str = "User";

/// `User:<name>`.
pub fn user_principal(name: &str) -> String {
    format!("{USER_PRINCIPAL_TYPE}:{name}")
}

/// Kafka's `sasl.server.max.receive.size` default: the largest SASL token (v0 raw token or
/// SaslAuthenticate request) a broker accepts before authentication. The connection enforces
/// it before a token reaches a [`SaslServer`].
pub const DEFAULT_MAX_RECEIVE_SIZE: usize = 524_288;

/// Kafka's check on re-authentication (KIP-368): the principal may not change. `previous` and
/// `new` are `User:<name>` strings; Kafka's message prints them as `User.<name>`.
pub fn check_reauthenticated_principal(previous: &str, new: &str) -> Result<(), AuthError> {
    if previous == new {
        return Ok(());
    }
    let dotted = |p: &str| p.replacen(':', ".", 1);
    Err(AuthError::client(format!(
        "Cannot change principals during re-authentication from {}: {}",
        dotted(previous),
        dotted(new)
    )))
}

/// One server side of one SASL exchange. `Send` so that a connection task can own it.
pub trait SaslServer: Send {
    /// The mechanism this server speaks.
    fn mechanism(&self) -> Mechanism;

    /// Evaluates one client token. `now_ms` is wall-clock time in milliseconds since the epoch
    /// (used for token expiry); mechanisms that do not need it ignore it.
    fn step(&mut self, client_token: &[u8], now_ms: i64) -> Step;

    /// Why the last token was refused when the refusal was not a [`Step::Fail`] (OAUTHBEARER
    /// answers a bad token with `Continue` and its JSON error first), for the broker's log.
    /// Never contains a secret. A `Fail` carries its own [`AuthError::detail`].
    fn rejection_reason(&self) -> Option<&str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanism_names_round_trip_and_are_case_sensitive() {
        for m in Mechanism::ALL {
            assert_eq!(Mechanism::from_name(m.name()), Some(m));
        }
        assert_eq!(Mechanism::from_name("plain"), None);
        assert_eq!(Mechanism::from_name("GSSAPI"), None);
    }

    #[test]
    fn reauthentication_must_keep_the_principal() {
        assert_eq!(check_reauthenticated_principal("User:a", "User:a"), Ok(()));
        assert_eq!(
            check_reauthenticated_principal("User:a", "User:b")
                .err()
                .map(|e| e.client_message().to_string()),
            Some("Cannot change principals during re-authentication from User.a: User.b".into())
        );
    }

    #[test]
    fn principal_form() {
        assert_eq!(user_principal("alice"), "User:alice");
    }

    #[test]
    fn reauthentication_wording() {
        let e = AuthError::generic("SCRAM-SHA-256", "bad proof");
        assert_eq!(
            e.client_message(),
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        );
        assert_eq!(
            e.into_reauthentication().client_message(),
            "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        );
    }
}
