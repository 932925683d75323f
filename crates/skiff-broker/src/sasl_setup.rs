//! Turns the SASL configuration into what connections use: one [`SaslListener`] per
//! SASL_PLAINTEXT / SASL_SSL listener (its enabled mechanisms with what they check against,
//! and its limits), and the bootstrap SCRAM users of `sasl.scram.users`.
//!
//! Everything here runs once at start, so a bad JAAS line, an unreadable JWKS file or a
//! malformed hash stops the start with a message that names the key. SCRAM logins check the
//! durable [`ScramStore`] itself (not a copy), so a credential written by
//! AlterUserScramCredentials is usable by the next login without a restart.
//!
//! Secrets: values are handed to skiff-auth and never formatted into messages; its errors
//! carry no secret either.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use skiff_auth::oauthbearer::{JwtValidator, OAuthBearerConfig};
use skiff_auth::password_hash::PasswordHash;
use skiff_auth::plain::{MemoryPlainStore, PlainSecret, PlainUserStore};
use skiff_auth::scram::bootstrap::parse_add_scram;
use skiff_auth::scram::credential::ScramCredentialStore;
use skiff_auth::scram::ScramMechanism;
use skiff_auth::server::Mechanism;
use skiff_auth::{jaas, Mechanisms};
use skiff_config::{BrokerConfig, SecurityProtocol};
use tracing::info;

use crate::broker::StartError;
use crate::scram_store::{Change, ScramStore};

/// What a SASL listener's connections authenticate with. Immutable; shared by its connections.
#[derive(Debug)]
pub struct SaslListener {
    pub mechanisms: Mechanisms,
    /// `sasl.server.max.receive.size`: largest frame before authentication.
    pub max_receive_size: usize,
    /// `connections.max.reauth.ms`; 0 = sessions do not expire (unless a token does).
    pub reauth_ms: i64,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_auth_delay: Duration,
}

/// The SASL listeners of `cfg` by name (upper-case), built and checked.
pub fn sasl_listeners(
    cfg: &BrokerConfig,
    scram: &Arc<ScramStore>,
) -> Result<HashMap<String, Arc<SaslListener>>, StartError> {
    let mut out = HashMap::new();
    for l in &cfg.listeners {
        let protocol = skiff_config::listener_protocol(cfg, &l.name);
        if matches!(
            protocol,
            Some(SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
        ) {
            let built = sasl_listener(cfg, &l.name, scram)
                .map_err(|e| StartError::Config(format!("SASL listener {}: {e}", l.name)))?;
            out.insert(l.name.clone(), Arc::new(built));
        }
    }
    Ok(out)
}

/// Builds the listener called `name`.
pub fn sasl_listener(
    cfg: &BrokerConfig,
    name: &str,
    scram: &Arc<ScramStore>,
) -> Result<SaslListener, String> {
    skiff_config::check_listener_sasl(cfg, name).map_err(|(key, e)| format!("{key}: {e}"))?;
    let s = skiff_config::listener_sasl(cfg, name)?;
    let mut mechanisms = Mechanisms::new();
    for m in &s.mechanisms {
        let mechanism = Mechanism::from_name(m)
            .ok_or_else(|| format!("{}: '{m}' is not supported", s.mechanisms_key))?;
        if let Some(j) = s.jaas.get(m) {
            let entry = jaas::parse_single(&j.value).map_err(|e| format!("{}: {e}", j.key))?;
            entry
                .check_module(mechanism)
                .map_err(|e| format!("{}: {e}", j.key))?;
        }
        mechanisms = match mechanism {
            Mechanism::Plain => mechanisms.with_plain(plain_users(&s)?),
            Mechanism::ScramSha256 | Mechanism::ScramSha512 => {
                let hash = if mechanism == Mechanism::ScramSha256 {
                    ScramMechanism::Sha256
                } else {
                    ScramMechanism::Sha512
                };
                let store: Arc<dyn ScramCredentialStore> = scram.clone();
                mechanisms.with_scram(hash, store)
            }
            Mechanism::OAuthBearer => {
                let props = s.oauthbearer.clone().into_iter().collect();
                let config =
                    OAuthBearerConfig::from_kafka_properties(&props).map_err(|e| e.to_string())?;
                let validator = JwtValidator::from_config(config)
                    .map_err(|e| format!("sasl.oauthbearer.jwks.endpoint.url: {e}"))?;
                mechanisms.with_oauthbearer(Arc::new(validator))
            }
        };
    }
    Ok(SaslListener {
        mechanisms,
        max_receive_size: usize::try_from(cfg.sasl_server_max_receive_size).unwrap_or(1),
        reauth_ms: cfg.connections_max_reauth_ms.max(0),
        failed_auth_delay: Duration::from_millis(
            u64::try_from(cfg.connection_failed_authentication_delay_ms).unwrap_or(0),
        ),
    })
}

/// PLAIN's users: the JAAS `user_<name>` entries and `sasl.plain.hashed.users`. A name in
/// both is refused (which one would win is not obvious to an operator).
fn plain_users(s: &skiff_config::ListenerSasl) -> Result<Arc<dyn PlainUserStore>, String> {
    let mut users = match s.jaas.get("PLAIN") {
        Some(j) => jaas::parse_single(&j.value)
            .and_then(|e| e.plain_users())
            .map_err(|e| format!("{}: {e}", j.key))?,
        None => MemoryPlainStore::new(),
    };
    for entry in &s.plain_hashed_users {
        let (name, hash) = entry.split_once('=').ok_or_else(|| {
            "sasl.plain.hashed.users: an entry is not <name>=<hash> (make a hash with `skiff hash-password`)".to_string()
        })?;
        let name = name.trim();
        if name.is_empty() {
            return Err("sasl.plain.hashed.users: an entry has an empty user name".into());
        }
        let hash: PasswordHash = hash
            .trim()
            .parse()
            .map_err(|e| format!("sasl.plain.hashed.users: user {name}: {e}"))?;
        if users.secret(name).is_some() {
            return Err(format!(
                "sasl.plain.hashed.users: user {name} also has a password in the PLAIN JAAS config; keep one"
            ));
        }
        users.insert(name, PlainSecret::Hashed(hash));
    }
    Ok(Arc::new(users))
}

/// Adds each `sasl.scram.users` credential whose user has none yet for that mechanism; an
/// existing one (perhaps changed since with kafka-configs) is kept. Returns how many were
/// added. Blocking (fsync).
pub fn bootstrap_scram_users(cfg: &BrokerConfig, store: &ScramStore) -> Result<usize, StartError> {
    let Some(raw) = cfg.explicit.get("sasl.scram.users") else {
        return Ok(0);
    };
    let _guard = store.lock_updates();
    let current = store.snapshot();
    let mut changes = Vec::new();
    for (i, entry) in skiff_config::sasl_entries(raw).iter().enumerate() {
        let user = parse_add_scram(entry)
            .map_err(|e| StartError::Config(format!("sasl.scram.users entry {}: {e}", i + 1)))?;
        let exists = current
            .get(&user.name)
            .is_some_and(|m| m.contains_key(&user.mechanism))
            || changes.iter().any(|c| {
                matches!(c, Change::Upsert { user: u, mechanism, .. }
                    if *u == user.name && *mechanism == user.mechanism)
            });
        if !exists {
            changes.push(Change::Upsert {
                user: user.name,
                mechanism: user.mechanism,
                credential: user.credential,
            });
        }
    }
    store.commit(&changes).map_err(|e| {
        StartError::Config(format!(
            "sasl.scram.users: writing {}: {e}",
            crate::scram_store::FILE
        ))
    })?;
    if !changes.is_empty() {
        info!(
            added = changes.len(),
            "SCRAM users from sasl.scram.users added"
        );
    }
    Ok(changes.len())
}
