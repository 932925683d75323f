//! Who is calling the HTTP API (`skiff.http.authentication`): `Basic` checks a password
//! against the broker's PLAIN users and its SCRAM credential store, `Bearer` checks a JWT with
//! the broker's OAUTHBEARER validator. The result is a principal (`User:<name>`) that the
//! routes authorize with the broker's ACLs, exactly as a Kafka request's principal.
//!
//! Where credentials come from: the PLAIN users and the JWT validator of the first SASL
//! listener (in `listeners` order) that enables PLAIN / OAUTHBEARER, and the SCRAM store
//! itself (read at every call, so AlterUserScramCredentials applies at once).
//!
//! Secrets: passwords and tokens are never logged or put in an answer. A failed attempt waits
//! `connection.failed.authentication.delay.ms` before its 401, as a failed SASL login does,
//! to slow down guessing. Password derivation (PBKDF2) runs on a blocking thread.
//!
//! Thread safety: [`HttpAuth`] is immutable and shared by every request.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use skiff_auth::oauthbearer::JwtValidator;
use skiff_auth::plain::PlainUserStore;
use skiff_auth::scram::credential::ScramCredentialStore;
use skiff_auth::scram::ScramMechanism;
use skiff_config::{parse_http_authentication, HttpAuthentication};

use super::errors::ApiError;
use crate::acl_operations::Principal;
use crate::scram_store::ScramStore;
use crate::Broker;

/// Longest `Authorization` header looked at (the whole head is bounded by
/// `server::MAX_HEAD` anyway): a JWT with many claims is a few KB.
const MAX_AUTHORIZATION: usize = 8 * 1024;

/// The listener's authentication setup.
pub struct HttpAuth {
    schemes: HttpAuthentication,
    challenge: &'static str,
    plain: Option<Arc<dyn PlainUserStore>>,
    scram: Arc<ScramStore>,
    oauth: Option<Arc<JwtValidator>>,
    failure_delay: Duration,
}

impl HttpAuth {
    /// Builds the setup from the broker's configuration and SASL listeners. Fails (at start)
    /// when `bearer` is asked for but no listener enables OAUTHBEARER.
    pub fn from_broker(broker: &Broker) -> Result<HttpAuth, String> {
        let schemes = parse_http_authentication(&broker.config.skiff_http_authentication)
            .map_err(|e| format!("skiff.http.authentication: {e}"))?;
        let in_order = || {
            broker
                .config
                .listeners
                .iter()
                .filter_map(|l| broker.sasl.get(&l.name))
        };
        let plain = in_order().find_map(|s| s.mechanisms.plain_users()).cloned();
        let oauth = in_order()
            .find_map(|s| s.mechanisms.oauth_validator())
            .cloned();
        if schemes.bearer && oauth.is_none() {
            return Err("skiff.http.authentication: bearer needs a SASL listener with OAUTHBEARER enabled (its JWKS and claim settings check the tokens)".into());
        }
        let challenge = match (schemes.basic, schemes.bearer) {
            (true, true) => "Basic realm=\"skiff\", Bearer realm=\"skiff\"",
            (false, true) => "Bearer realm=\"skiff\"",
            _ => "Basic realm=\"skiff\"",
        };
        Ok(HttpAuth {
            schemes,
            challenge,
            plain,
            scram: broker.scram.clone(),
            oauth,
            failure_delay: Duration::from_millis(
                u64::try_from(broker.config.connection_failed_authentication_delay_ms).unwrap_or(0),
            ),
        })
    }

    /// The caller's principal: `User:ANONYMOUS` when authentication is off, else the user the
    /// `Authorization` header proves, or a 401.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        now_ms: i64,
    ) -> Result<Principal<'static>, ApiError> {
        if !self.schemes.required() {
            return Ok(Principal::ANONYMOUS);
        }
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::unauthenticated(
                self.challenge,
                "authentication required",
            ));
        };
        let value = value
            .to_str()
            .ok()
            .filter(|v| v.len() <= MAX_AUTHORIZATION)
            .ok_or_else(|| self.refused("malformed Authorization header"))?;
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        let rest = rest.trim();
        let checked = if scheme.eq_ignore_ascii_case("basic") && self.schemes.basic {
            self.basic(rest).await
        } else if scheme.eq_ignore_ascii_case("bearer") && self.schemes.bearer {
            self.bearer(rest, now_ms)
        } else {
            Err("authentication scheme not accepted here")
        };
        match checked {
            Ok(name) => Ok(Principal {
                kind: "User",
                name: name.into(),
            }),
            Err(why) => {
                tracing::info!(reason = why, "HTTP API: failed authentication");
                tokio::time::sleep(self.failure_delay).await;
                Err(self.refused(why))
            }
        }
    }

    fn refused(&self, why: &str) -> ApiError {
        ApiError::unauthenticated(self.challenge, format!("authentication failed: {why}"))
    }

    /// `user:password` in base64; valid when a PLAIN user or a SCRAM credential of the user
    /// has that password.
    async fn basic(&self, encoded: &str) -> Result<String, &'static str> {
        let decoded = STANDARD
            .decode(encoded)
            .map_err(|_| "Basic credentials are not base64")?;
        let text = String::from_utf8(decoded).map_err(|_| "Basic credentials are not UTF-8")?;
        let (user, password) = text
            .split_once(':')
            .ok_or("Basic credentials are not user:password")?;
        if user.is_empty() {
            return Err("empty user name");
        }
        let (user, password) = (user.to_string(), password.to_string());
        let plain = self.plain.clone();
        let scram = self.scram.clone();
        let ok = tokio::task::spawn_blocking(move || {
            let plain_ok = plain
                .and_then(|p| p.secret(&user))
                .is_some_and(|s| s.verify(password.as_bytes()));
            let scram_ok = || {
                [ScramMechanism::Sha256, ScramMechanism::Sha512]
                    .into_iter()
                    .any(|m| {
                        scram
                            .credential(m, &user)
                            .is_some_and(|c| c.verify_password(m, password.as_bytes()))
                    })
            };
            (plain_ok || scram_ok()).then_some(user)
        })
        .await
        .map_err(|_| "password check failed")?;
        ok.ok_or("unknown user or wrong password")
    }

    /// A JWT checked by the OAUTHBEARER validator; the principal is its subject claim.
    fn bearer(&self, token: &str, now_ms: i64) -> Result<String, &'static str> {
        let validator = self.oauth.as_ref().ok_or("Bearer is not configured")?;
        validator
            .validate(token, now_ms)
            .map(|t| t.principal_name)
            .map_err(|_| "the token is not valid")
    }
}
