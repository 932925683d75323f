//! What a SCRAM server stores per user and mechanism, in Kafka's shapes.
//!
//! A [`ScramCredential`] is Kafka's `ScramCredential`: salt, `StoredKey = H(HMAC(SaltedPassword,
//! "Client Key"))`, `ServerKey = HMAC(SaltedPassword, "Server Key")` and the iteration count.
//! The password itself is never kept. Its text form is Kafka's `ScramCredentialUtils` form,
//! `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>` (standard base64 with padding),
//! which is also what Skiff writes wherever it persists a credential.
//!
//! [`ScramCredentialStore`] is how a server looks credentials up; the durable store behind
//! AlterUserScramCredentials implements it elsewhere.

use std::collections::HashMap;
use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::RngCore;

use super::{ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::error::ConfigError;

/// Salt length for credentials derived here. Kafka's own derivation uses the UTF-8 bytes of a
/// 130-bit random number in base 36 (about 26 bytes); 32 random bytes is at least as strong and
/// RFC 5802 puts no constraint on the salt's form.
pub const SALT_LEN: usize = 32;

/// One user's SCRAM credential for one mechanism.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl fmt::Debug for ScramCredential {
    /// The keys are secrets (with both, a server can be impersonated): never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt_len", &self.salt.len())
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// Checks an iteration count against Kafka's bounds, with the messages Kafka's controller
/// answers AlterUserScramCredentials with (error UNACCEPTABLE_CREDENTIAL).
pub fn check_iterations(iterations: i64) -> Result<u32, ConfigError> {
    if iterations < i64::from(MIN_ITERATIONS) {
        return Err(ConfigError::Iterations("Too few iterations".to_string()));
    }
    if iterations > i64::from(MAX_ITERATIONS) {
        return Err(ConfigError::Iterations("Too many iterations".to_string()));
    }
    u32::try_from(iterations).map_err(|_| ConfigError::Iterations("Too many iterations".into()))
}

impl ScramCredential {
    /// Derives a credential from a clear password with a fresh random salt: for SCRAM users
    /// given in the TOML and for Skiff's PLAIN password hashes. The iteration count must be
    /// within Kafka's bounds.
    pub fn derive(
        mechanism: ScramMechanism,
        password: &str,
        iterations: u32,
    ) -> Result<ScramCredential, ConfigError> {
        let iterations = check_iterations(i64::from(iterations))?;
        let mut salt = vec![0u8; SALT_LEN];
        rand::thread_rng().fill_bytes(&mut salt);
        Ok(Self::derive_with_salt(
            mechanism, password, &salt, iterations,
        ))
    }

    /// Derives a credential from a password and a given salt (no bounds check; tests and
    /// re-derivation use it).
    pub fn derive_with_salt(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> ScramCredential {
        let salted = mechanism.salted_password(password.as_bytes(), salt, iterations);
        Self::from_salted_password(mechanism, salt, &salted, iterations)
    }

    /// Builds the stored form from a salted password, as AlterUserScramCredentials delivers it
    /// (the client derives `SaltedPassword`; the broker keeps only the two keys).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: u32,
    ) -> ScramCredential {
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&mechanism.client_key(salted_password)),
            server_key: mechanism.server_key(salted_password),
            iterations,
        }
    }

    /// Whether `password` is this credential's password: re-derives the salted password
    /// with the stored salt and iterations and compares both keys in constant time. For
    /// callers that receive a clear password (HTTP Basic) instead of a SCRAM exchange.
    pub fn verify_password(&self, mechanism: ScramMechanism, password: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        let salted = mechanism.salted_password(password, &self.salt, self.iterations);
        let stored = mechanism.hash(&mechanism.client_key(&salted));
        let server = mechanism.server_key(&salted);
        bool::from(stored.ct_eq(&self.stored_key) & server.ct_eq(&self.server_key))
    }

    /// Kafka's text form: `salt=…,stored_key=…,server_key=…,iterations=…`.
    pub fn to_kafka_string(&self) -> String {
        format!(
            "salt={},stored_key={},server_key={},iterations={}",
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key),
            self.iterations
        )
    }

    /// Parses Kafka's text form: exactly the four keys, in any order. The error never repeats
    /// the input (it holds key material).
    pub fn from_kafka_string(text: &str) -> Result<ScramCredential, ConfigError> {
        let bad = |why: &str| ConfigError::Credential(format!("SCRAM credential string: {why}"));
        let mut fields: HashMap<&str, &str> = HashMap::new();
        for part in text.split(',') {
            let (key, value) = part
                .split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| bad("expected key=value pairs separated by ','"))?;
            if fields.insert(key, value).is_some() {
                return Err(bad(&format!("key '{key}' given twice")));
            }
        }
        let get = |key: &str| {
            fields
                .get(key)
                .copied()
                .ok_or_else(|| bad(&format!("missing '{key}'")))
        };
        let b64 = |key: &str| -> Result<Vec<u8>, ConfigError> {
            STANDARD
                .decode(get(key)?)
                .map_err(|_| bad(&format!("'{key}' is not base64")))
        };
        if fields.len() != 4 {
            return Err(bad(
                "expected exactly salt, stored_key, server_key and iterations",
            ));
        }
        let iterations = get("iterations")?
            .parse::<u32>()
            .map_err(|_| bad("'iterations' is not a number"))?;
        Ok(ScramCredential {
            salt: b64("salt")?,
            stored_key: b64("stored_key")?,
            server_key: b64("server_key")?,
            iterations,
        })
    }
}

/// Looks up SCRAM credentials by mechanism and user name (the un-escaped SCRAM name).
pub trait ScramCredentialStore: Send + Sync {
    fn credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential>;
}

/// An in-memory store, e.g. for TOML bootstrap users.
#[derive(Debug, Default, Clone)]
pub struct MemoryScramStore {
    credentials: HashMap<(ScramMechanism, String), ScramCredential>,
}

impl MemoryScramStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a user's credential for one mechanism.
    pub fn insert(&mut self, mechanism: ScramMechanism, user: &str, credential: ScramCredential) {
        self.credentials
            .insert((mechanism, user.to_string()), credential);
    }
}

impl ScramCredentialStore for MemoryScramStore {
    fn credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.credentials
            .get(&(mechanism, user.to_string()))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_password_accepts_only_the_password() {
        let c = ScramCredential::derive_with_salt(ScramMechanism::Sha256, "secret", b"salt", 4096);
        assert!(c.verify_password(ScramMechanism::Sha256, b"secret"));
        assert!(!c.verify_password(ScramMechanism::Sha256, b"secreT"));
        assert!(!c.verify_password(ScramMechanism::Sha512, b"secret"));
    }

    #[test]
    fn kafka_string_round_trip() {
        let c = ScramCredential::derive_with_salt(ScramMechanism::Sha512, "secret", b"salty", 4096);
        let text = c.to_kafka_string();
        assert!(text.starts_with("salt=c2FsdHk=,stored_key="), "{text}");
        assert!(text.ends_with(",iterations=4096"), "{text}");
        assert_eq!(ScramCredential::from_kafka_string(&text), Ok(c));
    }

    #[test]
    fn kafka_string_in_other_order_parses() {
        let c = ScramCredential::derive_with_salt(ScramMechanism::Sha256, "x", b"s", 4096);
        let text = format!(
            "iterations=4096,server_key={},stored_key={},salt={}",
            STANDARD.encode(&c.server_key),
            STANDARD.encode(&c.stored_key),
            STANDARD.encode(&c.salt)
        );
        assert_eq!(ScramCredential::from_kafka_string(&text), Ok(c));
    }

    #[test]
    fn kafka_string_errors_name_the_problem_without_echoing() {
        let cases = [
            ("salt=AA==,stored_key=AA==,server_key=AA==", "exactly"),
            (
                "salt=AA==,stored_key=AA==,server_key=AA==,iterations=x",
                "not a number",
            ),
            (
                "salt=!!,stored_key=AA==,server_key=AA==,iterations=4096",
                "'salt' is not base64",
            ),
            (
                "salt=AA==,salt=AA==,server_key=AA==,iterations=4096",
                "given twice",
            ),
            ("garbage", "key=value"),
            (
                "salt=AA==,stored_key=AA==,server_key=AA==,rounds=4096",
                "missing 'iterations'",
            ),
        ];
        for (text, want) in cases {
            let err = ScramCredential::from_kafka_string(text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(want), "{text}: {err}");
            assert!(!err.contains("AA=="), "{err}");
        }
    }

    #[test]
    fn derive_uses_a_fresh_salt_and_checks_bounds() {
        let a = ScramCredential::derive(ScramMechanism::Sha256, "pw", 4096);
        let b = ScramCredential::derive(ScramMechanism::Sha256, "pw", 4096);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.salt.len(), SALT_LEN);
                assert_ne!(a.salt, b.salt);
                assert_ne!(a.stored_key, b.stored_key);
            }
            other => panic!("derive failed: {other:?}"),
        }
        assert_eq!(
            ScramCredential::derive(ScramMechanism::Sha256, "pw", 4095).err(),
            Some(ConfigError::Iterations("Too few iterations".into()))
        );
        assert_eq!(
            ScramCredential::derive(ScramMechanism::Sha512, "pw", 16385).err(),
            Some(ConfigError::Iterations("Too many iterations".into()))
        );
        assert_eq!(check_iterations(16384), Ok(16384));
        assert_eq!(check_iterations(4096), Ok(4096));
        assert!(check_iterations(-1).is_err());
    }

    #[test]
    fn debug_hides_keys() {
        let c = ScramCredential::derive_with_salt(ScramMechanism::Sha256, "x", b"s", 4096);
        let shown = format!("{c:?}");
        assert!(!shown.contains(&STANDARD.encode(&c.stored_key)));
        assert!(!shown.contains("stored_key"), "{shown}");
    }

    #[test]
    fn memory_store_is_per_mechanism() {
        let mut store = MemoryScramStore::new();
        let c = ScramCredential::derive_with_salt(ScramMechanism::Sha256, "x", b"s", 4096);
        store.insert(ScramMechanism::Sha256, "alice", c.clone());
        assert_eq!(store.credential(ScramMechanism::Sha256, "alice"), Some(c));
        assert_eq!(store.credential(ScramMechanism::Sha512, "alice"), None);
        assert_eq!(store.credential(ScramMechanism::Sha256, "bob"), None);
    }
}
