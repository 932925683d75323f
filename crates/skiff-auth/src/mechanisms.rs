//! The set of mechanisms a listener offers, and a fresh [`SaslServer`] per exchange.
//!
//! [`Mechanisms`] holds what the servers check against (user tables, SCRAM credentials, the
//! JWT validator) behind `Arc`s, so one value can be shared by every connection of a listener
//! and swapped as a whole when configuration changes. It is immutable and `Send + Sync`.
//! Its mechanism list is what SaslHandshake answers, in `sasl.enabled.mechanisms` order.

use std::sync::Arc;

use crate::oauthbearer::{JwtValidator, OAuthBearerServer};
use crate::plain::{PlainServer, PlainUserStore};
use crate::scram::credential::ScramCredentialStore;
use crate::scram::server::ScramServer;
use crate::scram::ScramMechanism;
use crate::server::{Mechanism, SaslServer};
use crate::ConfigError;

/// The enabled mechanisms of one listener and what they authenticate against.
#[derive(Clone, Default)]
pub struct Mechanisms {
    enabled: Vec<Mechanism>,
    plain: Option<Arc<dyn PlainUserStore>>,
    scram: Option<Arc<dyn ScramCredentialStore>>,
    oauth: Option<Arc<JwtValidator>>,
}

impl std::fmt::Debug for Mechanisms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mechanisms")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl Mechanisms {
    pub fn new() -> Self {
        Self::default()
    }

    /// Enables PLAIN against `users`.
    pub fn with_plain(mut self, users: Arc<dyn PlainUserStore>) -> Self {
        self.plain = Some(users);
        self.enable(Mechanism::Plain)
    }

    /// Enables one SCRAM mechanism against `store` (call twice for both hashes; the last
    /// store given serves both).
    pub fn with_scram(mut self, m: ScramMechanism, store: Arc<dyn ScramCredentialStore>) -> Self {
        self.scram = Some(store);
        self.enable(m.mechanism())
    }

    /// Enables OAUTHBEARER with `validator`.
    pub fn with_oauthbearer(mut self, validator: Arc<JwtValidator>) -> Self {
        self.oauth = Some(validator);
        self.enable(Mechanism::OAuthBearer)
    }

    /// The PLAIN user table, when PLAIN is enabled (the HTTP API checks Basic passwords
    /// against it).
    pub fn plain_users(&self) -> Option<&Arc<dyn PlainUserStore>> {
        self.plain.as_ref()
    }

    /// The JWT validator, when OAUTHBEARER is enabled (the HTTP API checks Bearer tokens with
    /// it).
    pub fn oauth_validator(&self) -> Option<&Arc<JwtValidator>> {
        self.oauth.as_ref()
    }

    fn enable(mut self, m: Mechanism) -> Self {
        if !self.enabled.contains(&m) {
            self.enabled.push(m);
        }
        self
    }

    /// Checks a `sasl.enabled.mechanisms` list against what was set up: every name must be a
    /// mechanism Skiff implements and has credentials for. Keeps that order for SaslHandshake.
    pub fn restrict_to(mut self, names: &[&str]) -> Result<Self, ConfigError> {
        let mut order = Vec::new();
        for name in names {
            let m = Mechanism::from_name(name).ok_or_else(|| {
                ConfigError::Mechanisms(format!(
                    "'{name}' is not supported (Skiff supports PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)"
                ))
            })?;
            if !self.enabled.contains(&m) {
                return Err(ConfigError::Mechanisms(format!(
                    "{name} is listed, but nothing is configured for it"
                )));
            }
            if !order.contains(&m) {
                order.push(m);
            }
        }
        self.enabled = order;
        Ok(self)
    }

    /// The mechanism names for SaslHandshake's response.
    pub fn names(&self) -> Vec<&'static str> {
        self.enabled.iter().map(|m| m.name()).collect()
    }

    /// A server for one exchange, or `None` if `name` is not enabled here (the connection then
    /// answers UNSUPPORTED_SASL_MECHANISM with [`names`](Self::names), as Kafka does).
    pub fn server(&self, name: &str) -> Option<Box<dyn SaslServer>> {
        let m = Mechanism::from_name(name).filter(|m| self.enabled.contains(m))?;
        let server: Box<dyn SaslServer> = match m {
            Mechanism::Plain => Box::new(PlainServer::new(self.plain.clone()?)),
            Mechanism::ScramSha256 => Box::new(ScramServer::new(
                ScramMechanism::Sha256,
                self.scram.clone()?,
            )),
            Mechanism::ScramSha512 => Box::new(ScramServer::new(
                ScramMechanism::Sha512,
                self.scram.clone()?,
            )),
            Mechanism::OAuthBearer => Box::new(OAuthBearerServer::new(self.oauth.clone()?)),
        };
        Some(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plain::MemoryPlainStore;
    use crate::scram::credential::MemoryScramStore;

    fn setup() -> Mechanisms {
        let scram: Arc<dyn ScramCredentialStore> = Arc::new(MemoryScramStore::new());
        Mechanisms::new()
            .with_plain(Arc::new(MemoryPlainStore::new()))
            .with_scram(ScramMechanism::Sha256, scram.clone())
            .with_scram(ScramMechanism::Sha512, scram)
    }

    #[test]
    fn servers_for_enabled_mechanisms_only() {
        let m = setup();
        assert_eq!(m.names(), vec!["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
        for name in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
            assert_eq!(m.server(name).map(|s| s.mechanism().name()), Some(name));
        }
        assert!(m.server("OAUTHBEARER").is_none());
        assert!(m.server("GSSAPI").is_none());
        assert!(m.server("plain").is_none());
    }

    #[test]
    fn enabled_list_orders_and_is_checked() {
        let m = setup()
            .restrict_to(&["SCRAM-SHA-512", "PLAIN"])
            .expect("ok");
        assert_eq!(m.names(), vec!["SCRAM-SHA-512", "PLAIN"]);
        assert!(m.server("SCRAM-SHA-256").is_none());
        let e = setup()
            .restrict_to(&["GSSAPI"])
            .err()
            .map(|e| e.to_string());
        assert!(e.unwrap_or_default().contains("'GSSAPI'"));
        let e = setup()
            .restrict_to(&["OAUTHBEARER"])
            .err()
            .map(|e| e.to_string());
        assert!(e.unwrap_or_default().contains("nothing is configured"));
    }
}
