//! Skiff's salted password hashes for PLAIN users, so that no clear password has to sit in a
//! config file (Skiff's own addition; Kafka's PlainLoginModule only knows clear passwords).
//!
//! A hash is a SCRAM credential, written as the mechanism name, a colon and Kafka's credential
//! text:
//!
//! ```text
//! SCRAM-SHA-512:salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>
//! ```
//!
//! i.e. PBKDF2-HMAC-SHA-512 (or -256) of the password with a random 32-byte salt, kept only as
//! SCRAM's StoredKey and ServerKey. A PLAIN login re-derives the StoredKey from the offered
//! password and compares in constant time. Reusing the SCRAM form means one hash per user can
//! also serve that user's SCRAM logins for the same mechanism, and operators handle one format.
//! Create one with [`hash_password`], or from a shell with
//! `printf '%s\n' '<password>' | cargo run -p skiff-auth --example hash_password`
//! or `skiff hash-password` (the same, as a subcommand of the broker binary).

use std::fmt;
use std::str::FromStr;

use subtle::ConstantTimeEq;

use crate::error::ConfigError;
use crate::scram::credential::ScramCredential;
use crate::scram::ScramMechanism;

/// Iterations for new hashes: twice Kafka's minimum, half its maximum. Each PLAIN login pays
/// this many HMAC rounds (about a millisecond or two in release builds), which is what makes
/// a stolen hash expensive to attack.
pub const DEFAULT_HASH_ITERATIONS: u32 = 8192;

/// A salted password hash (see the module docs for the form).
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash {
    pub mechanism: ScramMechanism,
    pub credential: ScramCredential,
}

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasswordHash")
            .field("mechanism", &self.mechanism)
            .field("credential", &self.credential)
            .finish()
    }
}

impl fmt::Display for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}",
            self.mechanism.name(),
            self.credential.to_kafka_string()
        )
    }
}

impl FromStr for PasswordHash {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, rest) = s.split_once(':').ok_or_else(|| {
            ConfigError::Credential(
                "password hash must look like SCRAM-SHA-512:salt=…,stored_key=…,server_key=…,iterations=…"
                    .into(),
            )
        })?;
        let mechanism = ScramMechanism::from_name(name).ok_or_else(|| {
            ConfigError::Credential(format!(
                "password hash names unknown mechanism '{name}' (use SCRAM-SHA-256 or SCRAM-SHA-512)"
            ))
        })?;
        let credential = ScramCredential::from_kafka_string(rest)?;
        if credential.stored_key.len() != mechanism.output_len() {
            return Err(ConfigError::Credential(format!(
                "password hash's stored_key has {} bytes, {name} needs {}",
                credential.stored_key.len(),
                mechanism.output_len()
            )));
        }
        Ok(PasswordHash {
            mechanism,
            credential,
        })
    }
}

impl PasswordHash {
    /// Whether `password` is the one this hash was made from (constant-time comparison of the
    /// derived StoredKey).
    pub fn verify(&self, password: &[u8]) -> bool {
        let m = self.mechanism;
        let c = &self.credential;
        let salted = m.salted_password(password, &c.salt, c.iterations);
        let stored = m.hash(&m.client_key(&salted));
        bool::from(stored.ct_eq(&c.stored_key))
    }
}

/// Hashes a password for the config file. `iterations` must be within Kafka's SCRAM bounds
/// (4096..=16384); [`DEFAULT_HASH_ITERATIONS`] is a good choice.
pub fn hash_password(
    mechanism: ScramMechanism,
    password: &str,
    iterations: u32,
) -> Result<PasswordHash, ConfigError> {
    Ok(PasswordHash {
        mechanism,
        credential: ScramCredential::derive(mechanism, password, iterations)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_verifies_only_its_password_and_round_trips_as_text() {
        for m in ScramMechanism::ALL {
            let h = hash_password(m, "correct horse", 4096).expect("hash");
            assert!(h.verify(b"correct horse"));
            assert!(!h.verify(b"correct horsf"));
            assert!(!h.verify(b""));
            let text = h.to_string();
            assert!(text.starts_with(&format!("{}:salt=", m.name())), "{text}");
            assert!(!text.contains("correct"));
            let back: PasswordHash = text.parse().expect("parse");
            assert_eq!(back, h);
            assert!(back.verify(b"correct horse"));
        }
    }

    #[test]
    fn hash_is_a_usable_scram_credential() {
        // The same text serves a SCRAM login: the credential is exactly what SCRAM derives.
        let h = hash_password(ScramMechanism::Sha256, "pw", 4096).expect("hash");
        let again = ScramCredential::derive_with_salt(
            ScramMechanism::Sha256,
            "pw",
            &h.credential.salt,
            4096,
        );
        assert_eq!(again, h.credential);
    }

    #[test]
    fn bad_hash_texts_are_named() {
        let cases = [
            ("plain-password", "must look like"),
            ("MD5:salt=AA==", "unknown mechanism 'MD5'"),
            ("SCRAM-SHA-256:salt=AA==", "exactly"),
            (
                "SCRAM-SHA-512:salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096",
                "needs 64",
            ),
        ];
        for (text, want) in cases {
            let err = text
                .parse::<PasswordHash>()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn iteration_bounds_apply() {
        assert!(hash_password(ScramMechanism::Sha512, "pw", 1000).is_err());
    }
}
