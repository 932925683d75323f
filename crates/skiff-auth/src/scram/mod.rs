//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka runs them.
//!
//! - [`ScramMechanism`]: the two hashes and Kafka's iteration bounds.
//! - [`credential`]: what a server stores per user (salt, stored key, server key, iterations),
//!   Kafka's text form of it, and derivation from a password.
//! - [`messages`]: parsing of the client's messages with Kafka's grammar.
//! - [`server`]: the server state machine.
//! - [`client`]: a minimal client, for tests.
//! - [`bootstrap`]: users in the syntax of Kafka's `kafka-storage format --add-scram`.
//!
//! The cryptographic primitives come from RustCrypto's `sha2`, `hmac` and `pbkdf2` crates
//! (SCRAM's `Hi()` is PBKDF2 with the mechanism's HMAC and an output as long as its hash).

pub mod bootstrap;
pub mod client;
pub mod credential;
pub mod messages;
pub mod server;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use crate::server::Mechanism;

/// Kafka's lower bound on SCRAM iterations (`ScramMechanism.minIterations`): a credential
/// below it is refused at authentication and at AlterUserScramCredentials.
pub const MIN_ITERATIONS: u32 = 4096;
/// Kafka's upper bound (`ScramControlManager`'s MAX_ITERATIONS): AlterUserScramCredentials
/// refuses more, so that one login cannot cost the broker unbounded CPU.
pub const MAX_ITERATIONS: u32 = 16384;

/// The hash a SCRAM mechanism uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    /// Both mechanisms.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The SASL mechanism.
    pub fn mechanism(self) -> Mechanism {
        match self {
            ScramMechanism::Sha256 => Mechanism::ScramSha256,
            ScramMechanism::Sha512 => Mechanism::ScramSha512,
        }
    }

    /// `SCRAM-SHA-256` / `SCRAM-SHA-512`.
    pub fn name(self) -> &'static str {
        self.mechanism().name()
    }

    /// Parses `SCRAM-SHA-256` / `SCRAM-SHA-512`.
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        ScramMechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The type code Kafka uses on the wire (AlterUserScramCredentials, DescribeUserScramCredentials).
    pub fn kafka_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The inverse of [`kafka_type`](Self::kafka_type).
    pub fn from_kafka_type(code: i8) -> Option<ScramMechanism> {
        ScramMechanism::ALL
            .into_iter()
            .find(|m| m.kafka_type() == code)
    }

    /// Output length of the hash, and so of every key and proof.
    pub fn output_len(self) -> usize {
        match self {
            ScramMechanism::Sha256 => 32,
            ScramMechanism::Sha512 => 64,
        }
    }

    pub(crate) fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC accepts keys of any length, so `new_from_slice` cannot fail; map the impossible
        // error to an empty MAC rather than panicking, which can never verify.
        match self {
            ScramMechanism::Sha256 => Hmac::<Sha256>::new_from_slice(key)
                .map(|mut m| {
                    m.update(data);
                    m.finalize().into_bytes().to_vec()
                })
                .unwrap_or_default(),
            ScramMechanism::Sha512 => Hmac::<Sha512>::new_from_slice(key)
                .map(|mut m| {
                    m.update(data);
                    m.finalize().into_bytes().to_vec()
                })
                .unwrap_or_default(),
        }
    }

    /// SCRAM's `Hi(password, salt, iterations)`, i.e. the salted password. Kafka applies no
    /// SASLprep: the password's UTF-8 bytes are used as they are, so does this.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0u8; self.output_len()];
        match self {
            ScramMechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out)
            }
            ScramMechanism::Sha512 => {
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out)
            }
        }
        out
    }

    /// `HMAC(SaltedPassword, "Client Key")`.
    pub(crate) fn client_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, b"Client Key")
    }

    /// `HMAC(SaltedPassword, "Server Key")`.
    pub(crate) fn server_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, b"Server Key")
    }
}

pub(crate) fn xor(a: &[u8], b: &[u8]) -> Option<Vec<u8>> {
    if a.len() != b.len() {
        return None;
    }
    Some(a.iter().zip(b).map(|(x, y)| x ^ y).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_type_codes() {
        assert_eq!(ScramMechanism::Sha256.name(), "SCRAM-SHA-256");
        assert_eq!(ScramMechanism::Sha512.name(), "SCRAM-SHA-512");
        for m in ScramMechanism::ALL {
            assert_eq!(ScramMechanism::from_name(m.name()), Some(m));
            assert_eq!(ScramMechanism::from_kafka_type(m.kafka_type()), Some(m));
        }
        assert_eq!(ScramMechanism::from_kafka_type(0), None);
        assert_eq!(ScramMechanism::from_name("SCRAM-SHA-1"), None);
    }

    #[test]
    fn hi_with_one_iteration_is_one_hmac_of_salt_and_int1() {
        // RFC 5802: Hi(str, salt, 1) = HMAC(str, salt || INT(1)). The full RFC 7677 exchange
        // (4096 iterations) is checked byte for byte in server.rs.
        let m = ScramMechanism::Sha256;
        let mut salt1 = b"salt".to_vec();
        salt1.extend_from_slice(&[0, 0, 0, 1]);
        assert_eq!(m.salted_password(b"pw", b"salt", 1), m.hmac(b"pw", &salt1));
        assert_eq!(m.salted_password(b"pw", b"salt", 2).len(), 32);
        assert_eq!(
            ScramMechanism::Sha512
                .salted_password(b"pw", b"salt", 2)
                .len(),
            64
        );
    }

    #[test]
    fn hi_sha256_matches_rfc7914_pbkdf2_vector() {
        // RFC 7914 section 11: PBKDF2-HMAC-SHA256("passwd", "salt", 1), first 32 bytes.
        let want = "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc";
        let got: String = ScramMechanism::Sha256
            .salted_password(b"passwd", b"salt", 1)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn xor_requires_equal_lengths() {
        assert_eq!(xor(&[1, 2], &[3, 3]), Some(vec![2, 1]));
        assert_eq!(xor(&[1], &[1, 2]), None);
    }
}
