//! A JSON Web Key Set (RFC 7517) read from a local file: the verification keys for
//! OAUTHBEARER tokens, as Kafka reads them for a `file:` `sasl.oauthbearer.jwks.endpoint.url`.
//!
//! Keys whose `use` is `enc` are skipped (they cannot verify signatures); symmetric (`oct`)
//! keys are refused, since a shared secret does not belong in a key set that verifiers
//! publish. Any other key that does not parse is an error naming its position and `kid`, so
//! that a typo in the file is seen at startup rather than as failing logins.
//!
//! The set is immutable once loaded; to pick up a changed file, load it again and swap.

use std::path::Path;

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use crate::error::ConfigError;

/// Which family of signature algorithms a key verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Rsa,
    Ec,
    Ed,
}

fn family_of_alg(alg: Algorithm) -> Option<Family> {
    match alg {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => Some(Family::Rsa),
        Algorithm::ES256 | Algorithm::ES384 => Some(Family::Ec),
        Algorithm::EdDSA => Some(Family::Ed),
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => None,
    }
}

struct Key {
    kid: Option<String>,
    /// The key's `alg`, when the file pins one.
    alg: Option<String>,
    family: Family,
    key: DecodingKey,
}

/// A loaded key set.
pub struct Jwks {
    keys: Vec<Key>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<_> = self.keys.iter().map(|k| k.kid.as_deref()).collect();
        f.debug_struct("Jwks").field("kids", &kids).finish()
    }
}

impl Jwks {
    /// Reads and parses a JWKS file.
    pub fn load(path: &Path) -> Result<Jwks, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Jwks {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::parse(&text).map_err(|reason| ConfigError::Jwks {
            path: path.display().to_string(),
            reason,
        })
    }

    /// Parses a JWKS document.
    pub fn parse(json: &str) -> Result<Jwks, String> {
        let doc: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        let list = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| "no \"keys\" array".to_string())?;
        let mut keys = Vec::new();
        for (i, raw) in list.iter().enumerate() {
            let kid = raw.get("kid").and_then(Value::as_str).map(str::to_string);
            let name = match &kid {
                Some(k) => format!("key {i} (kid \"{k}\")"),
                None => format!("key {i}"),
            };
            if raw.get("use").and_then(Value::as_str) == Some("enc") {
                continue;
            }
            let jwk: Jwk = serde_json::from_value(raw.clone())
                .map_err(|e| format!("{name} is not a usable JWK: {e}"))?;
            let family = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => Family::Rsa,
                AlgorithmParameters::EllipticCurve(_) => Family::Ec,
                AlgorithmParameters::OctetKeyPair(_) => Family::Ed,
                AlgorithmParameters::OctetKey(_) => {
                    return Err(format!(
                        "{name} is a symmetric (oct) key; only public keys are accepted"
                    ))
                }
            };
            let key = DecodingKey::from_jwk(&jwk)
                .map_err(|e| format!("{name} cannot be used for verification: {e}"))?;
            keys.push(Key {
                kid,
                alg: jwk.common.key_algorithm.map(|a| a.to_string()),
                family,
                key,
            });
        }
        if keys.is_empty() {
            return Err("no signature verification keys".into());
        }
        Ok(Jwks { keys })
    }

    /// Number of verification keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set has no keys (never true for a set that loaded).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys that may have signed a token with this header: same `kid` when the token names
    /// one, a key family that fits `alg`, and the key's own `alg` (if pinned) equal to it.
    pub(crate) fn candidates<'a>(
        &'a self,
        kid: Option<&'a str>,
        alg: Algorithm,
    ) -> impl Iterator<Item = &'a DecodingKey> + 'a {
        let family = family_of_alg(alg);
        let alg_name = format!("{alg:?}");
        self.keys
            .iter()
            .filter(move |k| Some(k.family) == family)
            .filter(move |k| kid.is_none() || k.kid.as_deref() == kid)
            .filter(move |k| k.alg.as_deref().is_none_or(|a| a == alg_name))
            .map(|k| &k.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> String {
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/jwks.json"
        ))
        .unwrap_or_default()
    }

    #[test]
    fn fixture_loads_with_two_keys() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/jwks.json"
        ));
        let j = Jwks::load(path).expect("loads");
        assert_eq!(j.len(), 2);
        assert_eq!(j.candidates(Some("rsa-1"), Algorithm::RS256).count(), 1);
        assert_eq!(j.candidates(None, Algorithm::RS256).count(), 1);
        assert_eq!(j.candidates(None, Algorithm::ES256).count(), 1);
        // Pinned alg: the RSA key is RS256 only.
        assert_eq!(j.candidates(Some("rsa-1"), Algorithm::PS256).count(), 0);
        assert_eq!(j.candidates(Some("rsa-1"), Algorithm::ES256).count(), 0);
        assert_eq!(j.candidates(Some("nope"), Algorithm::RS256).count(), 0);
        assert_eq!(j.candidates(None, Algorithm::HS256).count(), 0);
    }

    #[test]
    fn enc_keys_are_skipped_and_oct_refused() {
        let mut doc: Value = serde_json::from_str(&fixture()).expect("json");
        if let Some(keys) = doc.get_mut("keys").and_then(Value::as_array_mut) {
            let mut enc = keys[0].clone();
            enc["use"] = Value::from("enc");
            enc["kid"] = Value::from("enc-1");
            keys.push(enc);
        }
        let j = Jwks::parse(&doc.to_string()).expect("parses");
        assert_eq!(j.len(), 2);
        let oct = r#"{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"}]}"#;
        let err = Jwks::parse(oct).err().unwrap_or_default();
        assert!(err.contains("symmetric"), "{err}");
    }

    #[test]
    fn errors_name_the_key() {
        let bad = r#"{"keys":[{"kty":"RSA","kid":"broken","n":"!!","e":"AQAB"}]}"#;
        let err = Jwks::parse(bad).err().unwrap_or_default();
        assert!(err.contains("key 0 (kid \"broken\")"), "{err}");
        assert!(Jwks::parse("{}").err().unwrap_or_default().contains("keys"));
        assert!(Jwks::parse(r#"{"keys":[]}"#).is_err());
        assert!(Jwks::parse("nope")
            .err()
            .unwrap_or_default()
            .contains("JSON"));
        let missing = Jwks::load(Path::new("/nonexistent/jwks.json"));
        assert!(matches!(missing, Err(ConfigError::Jwks { .. })));
    }
}
