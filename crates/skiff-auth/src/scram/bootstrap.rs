//! SCRAM users for bootstrap in the syntax of Kafka's `kafka-storage format --add-scram`
//! (Kafka's `ScramParser`), so an operator can copy a Kafka argument into Skiff's config:
//!
//! ```text
//! SCRAM-SHA-256=[name=alice,password=alice-secret]
//! SCRAM-SHA-512=[name="bob",iterations=8192,password="bob-secret"]
//! SCRAM-SHA-256=[name=carol,salt="<b64>",saltedpassword="<b64>",iterations=4096]
//! ```
//!
//! As in Kafka: components are split on `,`, a value may be wrapped in double quotes, `name`
//! and one of `password` / `saltedpassword` (which needs `salt`) are required, iterations
//! default to 4096 and must be within 4096..=16384, unknown components are refused. Unlike
//! Kafka's messages, these never repeat a password or salted password.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::credential::{ScramCredential, SALT_LEN};
use super::{ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::error::ConfigError;

/// Kafka's default iteration count for `--add-scram`.
pub const DEFAULT_ITERATIONS: u32 = 4096;

/// One parsed `--add-scram` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramUser {
    pub mechanism: ScramMechanism,
    pub name: String,
    pub credential: ScramCredential,
}

fn bad(msg: impl Into<String>) -> ConfigError {
    ConfigError::Credential(msg.into())
}

/// Parses one `--add-scram` argument and derives the credential (random salt unless given).
pub fn parse_add_scram(argument: &str) -> Result<ScramUser, ConfigError> {
    let input = argument.trim();
    let (mech_name, config) = input.split_once('=').ok_or_else(|| {
        bad("SCRAM argument has no '=' (expected SCRAM-SHA-256=[name=…,password=…])")
    })?;
    let mechanism = ScramMechanism::from_name(mech_name).ok_or_else(|| {
        bad(format!(
            "the add-scram mechanism {mech_name} is not supported"
        ))
    })?;
    let body = config
        .strip_prefix('[')
        .ok_or_else(|| bad("expected configuration string to start with ["))?
        .strip_suffix(']')
        .ok_or_else(|| bad("expected configuration string to end with ]"))?;
    let mut parts: BTreeMap<&str, &str> = BTreeMap::new();
    for component in body.split(',') {
        let (key, value) = component
            .split_once('=')
            .ok_or_else(|| bad("a SCRAM component has no '='"))?;
        let value = if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
            &value[1..value.len() - 1]
        } else {
            value
        };
        parts.insert(key, value);
    }
    let name = parts
        .remove("name")
        .ok_or_else(|| bad("you must supply 'name' to add-scram"))?
        .to_string();
    let salt = match parts.remove("salt") {
        Some(s) => Some(
            STANDARD
                .decode(s)
                .map_err(|_| bad("failed to decode the given salt"))?,
        ),
        None => None,
    };
    let iterations = match parts.remove("iterations") {
        Some(n) => n
            .parse::<u32>()
            .map_err(|_| bad(format!("failed to parse iterations count: {n}")))?,
        None => DEFAULT_ITERATIONS,
    };
    let password = parts.remove("password");
    let salted = parts.remove("saltedpassword");
    if !parts.is_empty() {
        let keys: Vec<&str> = parts.keys().copied().collect();
        return Err(bad(format!(
            "unknown SCRAM configurations: {}",
            keys.join(", ")
        )));
    }
    if iterations < MIN_ITERATIONS {
        return Err(bad(format!(
            "the 'iterations' value must be >= {MIN_ITERATIONS} for add-scram using {}",
            mechanism.name()
        )));
    }
    if iterations > MAX_ITERATIONS {
        return Err(bad(format!(
            "the 'iterations' value must be <= {MAX_ITERATIONS} for add-scram using {}",
            mechanism.name()
        )));
    }
    let credential = match (password, salted, salt) {
        (Some(password), _, salt) => {
            let salt = salt.unwrap_or_else(|| {
                let mut s = vec![0u8; SALT_LEN];
                rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut s);
                s
            });
            ScramCredential::derive_with_salt(mechanism, password, &salt, iterations)
        }
        (None, Some(salted), Some(salt)) => {
            let salted = STANDARD
                .decode(salted)
                .map_err(|_| bad("failed to decode the given saltedpassword"))?;
            ScramCredential::from_salted_password(mechanism, &salt, &salted, iterations)
        }
        (None, Some(_), None) => {
            return Err(bad(
                "you must supply 'salt' with 'saltedpassword' to add-scram",
            ))
        }
        (None, None, _) => {
            return Err(bad(
                "you must supply one of 'password' or 'saltedpassword' to add-scram",
            ))
        }
    };
    Ok(ScramUser {
        mechanism,
        name,
        credential,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_form() {
        let u = parse_add_scram(" SCRAM-SHA-256=[name=alice,password=alice-secret] ").expect("ok");
        assert_eq!(u.mechanism, ScramMechanism::Sha256);
        assert_eq!(u.name, "alice");
        assert_eq!(u.credential.iterations, 4096);
        let again = ScramCredential::derive_with_salt(
            ScramMechanism::Sha256,
            "alice-secret",
            &u.credential.salt,
            4096,
        );
        assert_eq!(again, u.credential);
    }

    #[test]
    fn quoted_values_salt_and_iterations() {
        let u = parse_add_scram(
            "SCRAM-SHA-512=[name=\"bob\",salt=\"c2FsdA==\",iterations=8192,password=\"p,w\"]",
        );
        // A ',' inside quotes still splits, as in Kafka: "p and w" are two components.
        assert!(u.is_err());
        let u = parse_add_scram(
            "SCRAM-SHA-512=[name=\"bob\",salt=\"c2FsdA==\",iterations=8192,password=\"pw\"]",
        )
        .expect("ok");
        assert_eq!(u.name, "bob");
        assert_eq!(
            u.credential,
            ScramCredential::derive_with_salt(ScramMechanism::Sha512, "pw", b"salt", 8192)
        );
    }

    #[test]
    fn salted_password_form_matches_password_form() {
        let m = ScramMechanism::Sha256;
        let salted = m.salted_password(b"pw", b"salt", 4096);
        let arg = format!(
            "SCRAM-SHA-256=[name=carol,salt=\"c2FsdA==\",saltedpassword=\"{}\",iterations=4096]",
            STANDARD.encode(salted)
        );
        let u = parse_add_scram(&arg).expect("ok");
        assert_eq!(
            u.credential,
            ScramCredential::derive_with_salt(m, "pw", b"salt", 4096)
        );
    }

    #[test]
    fn errors() {
        let err = |a: &str| {
            parse_add_scram(a)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err("SCRAM-SHA-256").contains("no '='"));
        assert!(err("SCRAM-SHA-1=[name=a,password=b]").contains("SCRAM-SHA-1 is not supported"));
        assert!(err("SCRAM-SHA-256=name=a,password=b]").contains("start with ["));
        assert!(err("SCRAM-SHA-256=[name=a,password=b").contains("end with ]"));
        assert!(err("SCRAM-SHA-256=[password=b]").contains("'name'"));
        assert!(err("SCRAM-SHA-256=[name=a]").contains("one of 'password' or 'saltedpassword'"));
        assert!(err("SCRAM-SHA-256=[name=a,saltedpassword=AAAA]").contains("'salt'"));
        assert!(err("SCRAM-SHA-256=[name=a,password=b,iterations=100]").contains(">= 4096"));
        assert!(err("SCRAM-SHA-256=[name=a,password=b,iterations=20000]").contains("<= 16384"));
        assert!(err("SCRAM-SHA-256=[name=a,password=b,iterations=x]").contains("iterations count"));
        assert!(err("SCRAM-SHA-256=[name=a,password=b,color=red]")
            .contains("unknown SCRAM configurations: color"));
        assert!(err("SCRAM-SHA-256=[name=a,password=b,nokey]").contains("no '='"));
        let e = err("SCRAM-SHA-256=[name=a,salt=!!,password=hunter2]");
        assert!(e.contains("salt") && !e.contains("hunter2"), "{e}");
    }
}
