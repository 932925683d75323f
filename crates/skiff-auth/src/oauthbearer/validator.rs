//! JWT validation for OAUTHBEARER, configured with Kafka's `sasl.oauthbearer.*` settings.
//!
//! What Kafka's broker validator (jose4j, configured by `ValidatorAccessTokenValidator`)
//! checks, and so what this checks:
//! - three dot-separated sections; a JWS with an asymmetric algorithm (`none` and HMAC are
//!   refused) whose signature verifies with a key from the JWKS file (by `kid` when present);
//! - `exp` present and `now < exp + clock skew`;
//! - `iat` present; Skiff also refuses an `iat` more than the clock skew in the future;
//! - `nbf`, when present, `now + clock skew >= nbf`;
//! - `iss` equal to `sasl.oauthbearer.expected.issuer` when that is set;
//! - `aud` containing one of `sasl.oauthbearer.expected.audience` when that is set, and — as
//!   jose4j does — a token that has an `aud` is refused when no audience is expected;
//! - the subject claim (`sasl.oauthbearer.sub.claim.name`, default `sub`) a non-blank string;
//!   it becomes the principal `User:<sub>` (trimmed, as Kafka trims it);
//! - the scope claim (`sasl.oauthbearer.scope.claim.name`, default `scope`): a string (one
//!   scope, not split, as Kafka) or a list of strings; absent means no scopes.
//!
//! Every failure reason is for the broker's log only (and names no token content): the client
//! is told `{"status":"invalid_token"}`, as Kafka tells it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::jwks::Jwks;
use crate::error::ConfigError;

/// Kafka's `sasl.oauthbearer.clock.skew.seconds` default.
pub const DEFAULT_CLOCK_SKEW_SECONDS: i64 = 30;
/// Kafka's `sasl.oauthbearer.sub.claim.name` default.
pub const DEFAULT_SUB_CLAIM_NAME: &str = "sub";
/// Kafka's `sasl.oauthbearer.scope.claim.name` default.
pub const DEFAULT_SCOPE_CLAIM_NAME: &str = "scope";

/// Kafka config keys read by [`OAuthBearerConfig::from_kafka_properties`].
pub const JWKS_ENDPOINT_URL: &str = "sasl.oauthbearer.jwks.endpoint.url";
pub const EXPECTED_AUDIENCE: &str = "sasl.oauthbearer.expected.audience";
pub const EXPECTED_ISSUER: &str = "sasl.oauthbearer.expected.issuer";
pub const CLOCK_SKEW_SECONDS: &str = "sasl.oauthbearer.clock.skew.seconds";
pub const SUB_CLAIM_NAME: &str = "sasl.oauthbearer.sub.claim.name";
pub const SCOPE_CLAIM_NAME: &str = "sasl.oauthbearer.scope.claim.name";

/// The validator's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthBearerConfig {
    pub sub_claim_name: String,
    pub scope_claim_name: String,
    pub expected_audience: Vec<String>,
    pub expected_issuer: Option<String>,
    pub clock_skew_seconds: i64,
    /// The JWKS file (from a `file:` `sasl.oauthbearer.jwks.endpoint.url`).
    pub jwks_file: Option<PathBuf>,
}

impl Default for OAuthBearerConfig {
    fn default() -> Self {
        OAuthBearerConfig {
            sub_claim_name: DEFAULT_SUB_CLAIM_NAME.into(),
            scope_claim_name: DEFAULT_SCOPE_CLAIM_NAME.into(),
            expected_audience: Vec::new(),
            expected_issuer: None,
            clock_skew_seconds: DEFAULT_CLOCK_SKEW_SECONDS,
            jwks_file: None,
        }
    }
}

/// Turns a `file:` URL (`file:/etc/jwks.json`, `file:///etc/jwks.json`) into a path. Other
/// schemes are refused: Skiff fetches nothing over the network.
pub fn jwks_file_from_url(url: &str) -> Result<PathBuf, ConfigError> {
    let rest = url.strip_prefix("file:").ok_or_else(|| {
        ConfigError::OAuth(format!(
            "{JWKS_ENDPOINT_URL} must be a file: URL (Skiff does not fetch keys over the network), got '{url}'"
        ))
    })?;
    let path = match rest.strip_prefix("//") {
        // file://localhost/path or file:///path
        Some(after) => after.strip_prefix("localhost").unwrap_or(after).to_string(),
        None => rest.to_string(),
    };
    if !path.starts_with('/') {
        return Err(ConfigError::OAuth(format!(
            "{JWKS_ENDPOINT_URL} must name an absolute path, got '{url}'"
        )));
    }
    Ok(PathBuf::from(path))
}

impl OAuthBearerConfig {
    /// Reads Kafka's `sasl.oauthbearer.*` keys (unknown keys are the caller's business).
    pub fn from_kafka_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut c = OAuthBearerConfig::default();
        if let Some(v) = props.get(SUB_CLAIM_NAME) {
            c.sub_claim_name = non_blank(SUB_CLAIM_NAME, v)?;
        }
        if let Some(v) = props.get(SCOPE_CLAIM_NAME) {
            c.scope_claim_name = non_blank(SCOPE_CLAIM_NAME, v)?;
        }
        if let Some(v) = props.get(EXPECTED_AUDIENCE) {
            c.expected_audience = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
        }
        if let Some(v) = props.get(EXPECTED_ISSUER) {
            c.expected_issuer = Some(non_blank(EXPECTED_ISSUER, v)?);
        }
        if let Some(v) = props.get(CLOCK_SKEW_SECONDS) {
            c.clock_skew_seconds = v
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|s| *s >= 0)
                .ok_or_else(|| {
                    ConfigError::OAuth(format!(
                        "{CLOCK_SKEW_SECONDS} must be a whole number of seconds >= 0, got '{v}'"
                    ))
                })?;
        }
        if let Some(v) = props.get(JWKS_ENDPOINT_URL) {
            c.jwks_file = Some(jwks_file_from_url(v.trim())?);
        }
        Ok(c)
    }
}

fn non_blank(key: &str, v: &str) -> Result<String, ConfigError> {
    let t = v.trim();
    if t.is_empty() {
        return Err(ConfigError::OAuth(format!("{key} must not be blank")));
    }
    Ok(t.to_string())
}

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedToken {
    /// The subject claim's value: the principal's name.
    pub principal_name: String,
    pub scopes: Vec<String>,
    /// `exp` in milliseconds since the epoch.
    pub expires_at_ms: i64,
    /// `iat` in milliseconds since the epoch.
    pub issued_at_ms: i64,
}

/// Checks JWTs against a key set and the settings.
#[derive(Debug)]
pub struct JwtValidator {
    config: OAuthBearerConfig,
    jwks: Jwks,
}

/// The algorithms accepted: every asymmetric JWS algorithm the crypto backend implements.
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

fn numeric_date_ms(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, String> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e13)
            .map(|s| Some((s * 1000.0) as i64))
            .ok_or_else(|| format!("the '{name}' claim is not a valid NumericDate")),
    }
}

impl JwtValidator {
    /// A validator over a loaded key set.
    pub fn new(config: OAuthBearerConfig, jwks: Jwks) -> Self {
        JwtValidator { config, jwks }
    }

    /// A validator whose keys come from `config.jwks_file`.
    pub fn from_config(config: OAuthBearerConfig) -> Result<Self, ConfigError> {
        let path = config.jwks_file.clone().ok_or_else(|| {
            ConfigError::OAuth(format!("{JWKS_ENDPOINT_URL} is required for OAUTHBEARER"))
        })?;
        let jwks = Jwks::load(&path)?;
        Ok(Self::new(config, jwks))
    }

    pub fn config(&self) -> &OAuthBearerConfig {
        &self.config
    }

    /// Validates a compact JWS at `now_ms`. The error is a reason for the log.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<ValidatedToken, String> {
        if token.split('.').count() != 3 {
            return Err(
                "malformed JWT: expected three sections (header, payload, signature)".into(),
            );
        }
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| format!("malformed JWT header: {e}"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(format!("JWS algorithm {:?} is not accepted", header.alg));
        }
        let mut v = Validation::new(header.alg);
        // Claims are checked below against `now_ms`; the crate is used for the signature only.
        v.validate_exp = false;
        v.validate_nbf = false;
        v.validate_aud = false;
        v.required_spec_claims.clear();
        let mut claims = None;
        let mut last_error = format!(
            "no key in the JWKS file fits kid {:?} and alg {:?}",
            header.kid, header.alg
        );
        for key in self.jwks.candidates(header.kid.as_deref(), header.alg) {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &v) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                Err(e) => last_error = format!("signature not verified: {e}"),
            }
        }
        let claims = claims.ok_or(last_error)?;
        self.check_claims(&claims, now_ms)
    }

    fn check_claims(
        &self,
        claims: &Map<String, Value>,
        now_ms: i64,
    ) -> Result<ValidatedToken, String> {
        let skew_ms = self.config.clock_skew_seconds.saturating_mul(1000);
        let exp = numeric_date_ms(claims, "exp")?
            .ok_or_else(|| "no Expiration Time (exp) claim".to_string())?;
        if now_ms >= exp.saturating_add(skew_ms) {
            return Err(format!("the token expired at {exp} ms (now {now_ms} ms)"));
        }
        let iat = numeric_date_ms(claims, "iat")?
            .ok_or_else(|| "no Issued At (iat) claim".to_string())?;
        if iat > now_ms.saturating_add(skew_ms) {
            return Err(format!(
                "the token is issued in the future ({iat} ms, now {now_ms} ms)"
            ));
        }
        if let Some(nbf) = numeric_date_ms(claims, "nbf")? {
            if now_ms.saturating_add(skew_ms) < nbf {
                return Err(format!(
                    "the token is not valid before {nbf} ms (now {now_ms} ms)"
                ));
            }
        }
        if let Some(want) = &self.config.expected_issuer {
            match claims.get("iss").and_then(Value::as_str) {
                Some(iss) if iss == want => {}
                Some(iss) => return Err(format!("issuer '{iss}' is not the expected '{want}'")),
                None => return Err("no Issuer (iss) claim".into()),
            }
        }
        let audiences: Vec<&str> = match claims.get("aud") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().ok_or("the 'aud' claim holds a non-string"))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("the 'aud' claim is neither a string nor a list".into()),
        };
        let expected = &self.config.expected_audience;
        if expected.is_empty() {
            if !audiences.is_empty() {
                return Err(format!(
                    "audience {audiences:?} present in the token but no {EXPECTED_AUDIENCE} is configured"
                ));
            }
        } else if !audiences.iter().any(|a| expected.iter().any(|e| e == a)) {
            return Err(format!(
                "audience {audiences:?} is not one of the expected {expected:?}"
            ));
        }
        let sub_name = &self.config.sub_claim_name;
        let principal_name = match claims.get(sub_name) {
            None | Some(Value::Null) => return Err(format!("no '{sub_name}' claim")),
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(Value::String(_)) => return Err(format!("the '{sub_name}' claim is blank")),
            Some(_) => return Err(format!("the '{sub_name}' claim is not a string")),
        };
        let scope_name = &self.config.scope_claim_name;
        let raw_scopes: Vec<&str> = match claims.get(scope_name) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .ok_or_else(|| format!("the '{scope_name}' claim holds a non-string"))
                })
                .collect::<Result<_, _>>()?,
            // Kafka treats any other shape as "no scopes".
            _ => Vec::new(),
        };
        let mut scopes: Vec<String> = Vec::new();
        for s in raw_scopes {
            let s = s.trim();
            if s.is_empty() {
                return Err(format!("the '{scope_name}' claim holds a blank scope"));
            }
            if scopes.iter().any(|x| x == s) {
                return Err(format!("the '{scope_name}' claim holds '{s}' twice"));
            }
            scopes.push(s.to_string());
        }
        Ok(ValidatedToken {
            principal_name,
            scopes,
            expires_at_ms: exp,
            issued_at_ms: iat,
        })
    }
}
