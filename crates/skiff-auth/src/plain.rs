//! PLAIN (RFC 4616) as Kafka's `PlainSaslServer` runs it.
//!
//! One client token, `[authzid] NUL authcid NUL password`, split on NUL at most four times;
//! anything but three fields is refused with Kafka's "Invalid SASL/PLAIN response: expected 3
//! tokens, got N". Then, in Kafka's order: empty user name, empty password, wrong credentials,
//! and an authorization id that is neither empty nor the user name. Every failure text is
//! Kafka's and is sent to the client as is (Kafka throws `SaslAuthenticationException` for all
//! of them); none contains the password.
//!
//! Users come from a [`PlainUserStore`]: the JAAS line's `user_<name>="<password>"` entries
//! (clear) or Skiff's salted hashes ([`PasswordHash`]). Clear passwords are compared in
//! constant time over SHA-256 digests, so neither content nor length leaks through timing.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::AuthError;
use crate::password_hash::PasswordHash;
use crate::server::{user_principal, Authenticated, Mechanism, SaslServer, Step};

pub const USERNAME_NOT_SPECIFIED: &str = "Authentication failed: username not specified";
pub const PASSWORD_NOT_SPECIFIED: &str = "Authentication failed: password not specified";
pub const INVALID_USERNAME_OR_PASSWORD: &str =
    "Authentication failed: Invalid username or password";
pub const AUTHZID_MISMATCH: &str =
    "Authentication failed: Client requested an authorization id that is different from username";

/// A PLAIN user's secret.
#[derive(Clone, PartialEq, Eq)]
pub enum PlainSecret {
    /// A clear password, as Kafka's `user_<name>="<password>"` JAAS option gives it.
    Clear(String),
    /// A salted hash (Skiff's addition).
    Hashed(PasswordHash),
}

impl fmt::Debug for PlainSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlainSecret::Clear(_) => f.write_str("Clear(<redacted>)"),
            PlainSecret::Hashed(h) => f.debug_tuple("Hashed").field(h).finish(),
        }
    }
}

impl PlainSecret {
    /// Whether `password` matches.
    pub fn verify(&self, password: &[u8]) -> bool {
        match self {
            PlainSecret::Clear(expected) => {
                let a = Sha256::digest(expected.as_bytes());
                let b = Sha256::digest(password);
                bool::from(a.ct_eq(&b))
            }
            PlainSecret::Hashed(h) => h.verify(password),
        }
    }
}

/// Looks PLAIN users up by name.
pub trait PlainUserStore: Send + Sync {
    fn secret(&self, user: &str) -> Option<PlainSecret>;
}

/// An in-memory PLAIN user table.
#[derive(Debug, Default, Clone)]
pub struct MemoryPlainStore {
    users: HashMap<String, PlainSecret>,
}

impl MemoryPlainStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, user: &str, secret: PlainSecret) {
        self.users.insert(user.to_string(), secret);
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

impl PlainUserStore for MemoryPlainStore {
    fn secret(&self, user: &str) -> Option<PlainSecret> {
        self.users.get(user).cloned()
    }
}

/// One PLAIN exchange.
pub struct PlainServer {
    store: Arc<dyn PlainUserStore>,
    finished: bool,
}

impl PlainServer {
    pub fn new(store: Arc<dyn PlainUserStore>) -> Self {
        PlainServer {
            store,
            finished: false,
        }
    }

    fn evaluate(&self, token: &[u8]) -> Result<Authenticated, AuthError> {
        // Kafka decodes the token as UTF-8 with replacement, then splits; so do we.
        let text = String::from_utf8_lossy(token);
        let fields: Vec<&str> = text.splitn(4, '\0').collect();
        let [authzid, user, password] = fields[..] else {
            return Err(AuthError::client(format!(
                "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
                fields.len()
            )));
        };
        if user.is_empty() {
            return Err(AuthError::client(USERNAME_NOT_SPECIFIED));
        }
        if password.is_empty() {
            return Err(AuthError::client(PASSWORD_NOT_SPECIFIED));
        }
        let ok = match self.store.secret(user) {
            Some(secret) => secret.verify(password.as_bytes()),
            None => false,
        };
        if !ok {
            return Err(AuthError::client(INVALID_USERNAME_OR_PASSWORD));
        }
        if !authzid.is_empty() && authzid != user {
            return Err(AuthError::client(AUTHZID_MISMATCH));
        }
        Ok(Authenticated {
            principal: user_principal(user),
            server_final: None,
            session_lifetime_ms: None,
        })
    }
}

impl SaslServer for PlainServer {
    fn mechanism(&self) -> Mechanism {
        Mechanism::Plain
    }

    fn step(&mut self, client_token: &[u8], _now_ms: i64) -> Step {
        if self.finished {
            return Step::Fail(AuthError::generic(
                "PLAIN",
                "PLAIN exchange already finished",
            ));
        }
        self.finished = true;
        match self.evaluate(client_token) {
            Ok(a) => Step::Done(a),
            Err(e) => Step::Fail(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::password_hash::hash_password;
    use crate::scram::ScramMechanism;

    fn store() -> Arc<MemoryPlainStore> {
        let mut s = MemoryPlainStore::new();
        s.insert("alice", PlainSecret::Clear("alice-secret".into()));
        s.insert(
            "bob",
            PlainSecret::Hashed(
                hash_password(ScramMechanism::Sha256, "bob-pw", 4096).expect("hash"),
            ),
        );
        Arc::new(s)
    }

    fn run(token: &[u8]) -> Step {
        PlainServer::new(store()).step(token, 0)
    }

    fn fail_message(token: &[u8]) -> String {
        match run(token) {
            Step::Fail(e) => e.client_message().to_string(),
            other => panic!("expected failure for {token:?}, got {other:?}"),
        }
    }

    #[test]
    fn clear_and_hashed_users_authenticate() {
        for (token, who) in [
            (&b"\0alice\0alice-secret"[..], "User:alice"),
            (b"alice\0alice\0alice-secret", "User:alice"),
            (b"\0bob\0bob-pw", "User:bob"),
        ] {
            assert_eq!(
                run(token),
                Step::Done(Authenticated {
                    principal: who.into(),
                    server_final: None,
                    session_lifetime_ms: None
                })
            );
        }
    }

    #[test]
    fn kafka_messages_in_kafkas_order() {
        assert_eq!(
            fail_message(b"\0alice\0wrong"),
            INVALID_USERNAME_OR_PASSWORD
        );
        assert_eq!(
            fail_message(b"\0bob\0alice-secret"),
            INVALID_USERNAME_OR_PASSWORD
        );
        assert_eq!(fail_message(b"\0nobody\0x"), INVALID_USERNAME_OR_PASSWORD);
        assert_eq!(fail_message(b"\0\0x"), USERNAME_NOT_SPECIFIED);
        assert_eq!(fail_message(b"\0alice\0"), PASSWORD_NOT_SPECIFIED);
        assert_eq!(fail_message(b"bob\0alice\0alice-secret"), AUTHZID_MISMATCH);
        // Kafka checks the password before the authzid: a wrong password with a foreign
        // authzid reports the password.
        assert_eq!(
            fail_message(b"bob\0alice\0nope"),
            INVALID_USERNAME_OR_PASSWORD
        );
    }

    #[test]
    fn token_count_errors() {
        assert_eq!(
            fail_message(b""),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
        );
        assert_eq!(
            fail_message(b"alice\0alice-secret"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 2"
        );
        assert_eq!(
            fail_message(b"\0alice\0alice-secret\0extra"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 4"
        );
        assert_eq!(
            fail_message(b"\0a\0b\0c\0d"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 4"
        );
    }

    #[test]
    fn password_is_compared_exactly() {
        assert_eq!(
            fail_message(b"\0alice\0alice-secre"),
            INVALID_USERNAME_OR_PASSWORD
        );
        assert_eq!(
            fail_message(b"\0alice\0alice-secret "),
            INVALID_USERNAME_OR_PASSWORD
        );
        assert_eq!(
            fail_message(b"\0alice\0Alice-secret"),
            INVALID_USERNAME_OR_PASSWORD
        );
    }

    #[test]
    fn errors_and_debug_never_show_the_password() {
        let e = match run(b"\0alice\0hunter2") {
            Step::Fail(e) => e,
            other => panic!("{other:?}"),
        };
        assert!(!format!("{e:?}").contains("hunter2"));
        let shown = format!("{:?}", PlainSecret::Clear("hunter2".into()));
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn a_second_token_fails() {
        let mut s = PlainServer::new(store());
        assert!(matches!(s.step(b"\0alice\0alice-secret", 0), Step::Done(_)));
        assert!(matches!(s.step(b"\0alice\0alice-secret", 0), Step::Fail(_)));
        assert_eq!(s.mechanism(), Mechanism::Plain);
    }
}
