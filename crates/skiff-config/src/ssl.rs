//! TLS settings of a listener: Kafka's `ssl.*` broker keys, each overridable per listener with
//! `listener.name.<lower-case listener name>.ssl.*` (Kafka's prefix), and the security
//! protocol of a listener from `listener.security.protocol.map`.
//!
//! Resolution of one key for a listener, first found wins: the listener-prefixed key, then the
//! plain key; each looked up in the dynamic per-broker configs, the dynamic cluster default,
//! then the static configuration; else Kafka's default. Only PEM keystores and truststores are
//! supported (as Kafka's `PEM` type: a file, or the inline `ssl.keystore.certificate.chain` /
//! `ssl.keystore.key` and `ssl.truststore.certificates`).
//!
//! Secrets (inline keys, passwords) are kept only in the returned [`ListenerSsl`], whose
//! `Debug` hides them. Pure functions; no I/O (files are read by the broker).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use crate::keys::BrokerConfig;
use crate::listener::{parse_protocol_map, DEFAULT_PROTOCOL_MAP};

/// The `ssl.*` keys that may be given per listener with `listener.name.<name>.` before them.
pub const LISTENER_SSL_KEYS: &[&str] = &[
    "ssl.allow.dn.changes",
    "ssl.allow.san.changes",
    "ssl.cipher.suites",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.principal.mapping.rules",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.type",
];

/// Kafka's security protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub fn parse(name: &str) -> Option<SecurityProtocol> {
        Some(match name {
            "PLAINTEXT" => SecurityProtocol::Plaintext,
            "SSL" => SecurityProtocol::Ssl,
            "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
            "SASL_SSL" => SecurityProtocol::SaslSsl,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }
}

/// `ssl.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate asked for.
    None,
    /// Asked for; a client without one is `User:ANONYMOUS`, one with an untrusted one fails.
    Requested,
    /// Required: a client without a trusted certificate fails the handshake.
    Required,
}

/// The TLS settings of one listener, resolved.
#[derive(Clone, PartialEq, Eq)]
pub struct ListenerSsl {
    pub keystore_type: String,
    pub keystore_location: Option<PathBuf>,
    /// Inline PEM certificate chain (sensitive in Kafka's table, so hidden here too).
    pub keystore_certificate_chain: Option<String>,
    /// Inline PEM private key (secret).
    pub keystore_key: Option<String>,
    /// Password of an encrypted private key (secret).
    pub key_password: Option<String>,
    pub truststore_type: String,
    pub truststore_location: Option<PathBuf>,
    pub truststore_certificates: Option<String>,
    pub client_auth: ClientAuth,
    /// `TLSv1.2` and/or `TLSv1.3`.
    pub enabled_protocols: Vec<String>,
    /// IANA / Kafka cipher suite names; empty = the TLS library's defaults.
    pub cipher_suites: Vec<String>,
    pub principal_mapping_rules: String,
    /// Whether a reloaded server certificate may change its subject (`ssl.allow.dn.changes`).
    pub allow_dn_changes: bool,
    /// Whether it may drop subject alternative names (`ssl.allow.san.changes`).
    pub allow_san_changes: bool,
}

impl fmt::Debug for ListenerSsl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "[hidden]");
        f.debug_struct("ListenerSsl")
            .field("keystore_type", &self.keystore_type)
            .field("keystore_location", &self.keystore_location)
            .field(
                "keystore_certificate_chain",
                &hidden(&self.keystore_certificate_chain),
            )
            .field("keystore_key", &hidden(&self.keystore_key))
            .field("key_password", &hidden(&self.key_password))
            .field("truststore_type", &self.truststore_type)
            .field("truststore_location", &self.truststore_location)
            .field(
                "truststore_certificates",
                &hidden(&self.truststore_certificates),
            )
            .field("client_auth", &self.client_auth)
            .field("enabled_protocols", &self.enabled_protocols)
            .field("cipher_suites", &self.cipher_suites)
            .field("principal_mapping_rules", &self.principal_mapping_rules)
            .field("allow_dn_changes", &self.allow_dn_changes)
            .field("allow_san_changes", &self.allow_san_changes)
            .finish()
    }
}

/// `listener.name.<lower-case name>.<key>`.
pub fn listener_key(listener: &str, key: &str) -> String {
    format!("listener.name.{}.{key}", listener.to_ascii_lowercase())
}

/// If `key` is `listener.name.<name>.<ssl key>`, the `<ssl key>`.
pub fn listener_override_base(key: &str) -> Option<&'static str> {
    let rest = key.strip_prefix("listener.name.")?;
    let (name, base) = rest.split_once('.')?;
    if name.is_empty() {
        return None;
    }
    LISTENER_SSL_KEYS.iter().copied().find(|k| *k == base)
}

/// The effective value of `key` (one of Kafka's broker keys), from the dynamic layers, then
/// the static configuration.
fn lookup<'a>(cfg: &'a BrokerConfig, key: &str) -> Option<&'a str> {
    [&cfg.dynamic_broker, &cfg.dynamic_default, &cfg.explicit]
        .into_iter()
        .find_map(|layer: &BTreeMap<String, String>| layer.get(key))
        .map(String::as_str)
}

/// The security protocol of the listener called `listener` (upper-case), from
/// `listener.security.protocol.map`; `None` when the map does not name it.
pub fn listener_protocol(cfg: &BrokerConfig, listener: &str) -> Option<SecurityProtocol> {
    let raw = cfg
        .explicit
        .get("listener.security.protocol.map")
        .map_or(DEFAULT_PROTOCOL_MAP, String::as_str);
    let map = parse_protocol_map(raw).ok()?;
    SecurityProtocol::parse(map.get(&listener.to_ascii_uppercase())?)
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The TLS settings of `listener`, checked: PEM types, a keystore given one way, known
/// client-auth and protocol values. The error text names the key.
pub fn listener_ssl(cfg: &BrokerConfig, listener: &str) -> Result<ListenerSsl, String> {
    let get = |key: &str| -> Option<(String, String)> {
        let prefixed = listener_key(listener, key);
        if let Some(v) = lookup(cfg, &prefixed) {
            return Some((prefixed, v.to_string()));
        }
        lookup(cfg, key).map(|v| (key.to_string(), v.to_string()))
    };
    let val = |key: &str| get(key).map(|(_, v)| v).filter(|v| !v.trim().is_empty());
    let flag = |key: &str| -> Result<bool, String> {
        match get(key) {
            None => Ok(false),
            Some((name, v)) => match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" | "" => Ok(false),
                other => Err(format!("{name} = {other}: expected true or false")),
            },
        }
    };
    let kind = |key: &str| -> Result<String, String> {
        let (name, v) = get(key).unwrap_or((key.to_string(), "JKS".to_string()));
        let v = v.trim().to_ascii_uppercase();
        if v != "PEM" {
            return Err(format!(
                "{name} = {v}: Skiff reads PEM keystores and truststores only; set {name} = \"PEM\" (convert a JKS/PKCS12 store with keytool/openssl)"
            ));
        }
        Ok(v)
    };
    let keystore_location = val("ssl.keystore.location").map(PathBuf::from);
    let keystore_certificate_chain = val("ssl.keystore.certificate.chain");
    let keystore_key = val("ssl.keystore.key");
    let has_store = keystore_location.is_some();
    let has_inline = keystore_certificate_chain.is_some() || keystore_key.is_some();
    if has_store && has_inline {
        return Err(format!(
            "listener {listener}: set either ssl.keystore.location or ssl.keystore.certificate.chain with ssl.keystore.key, not both"
        ));
    }
    if !has_store && !has_inline {
        return Err(format!(
            "listener {listener} is SSL but has no certificate: set ssl.keystore.location (a PEM file with the key and chain) or ssl.keystore.certificate.chain and ssl.keystore.key"
        ));
    }
    if has_inline && (keystore_certificate_chain.is_none() || keystore_key.is_none()) {
        return Err(format!(
            "listener {listener}: ssl.keystore.certificate.chain and ssl.keystore.key go together"
        ));
    }
    let keystore_type = kind("ssl.keystore.type")?;
    let truststore_location = val("ssl.truststore.location").map(PathBuf::from);
    let truststore_certificates = val("ssl.truststore.certificates");
    if truststore_location.is_some() && truststore_certificates.is_some() {
        return Err(format!(
            "listener {listener}: set either ssl.truststore.location or ssl.truststore.certificates, not both"
        ));
    }
    let has_trust = truststore_location.is_some() || truststore_certificates.is_some();
    let truststore_type = if has_trust {
        kind("ssl.truststore.type")?
    } else {
        "PEM".to_string()
    };
    let (auth_key, auth) =
        get("ssl.client.auth").unwrap_or(("ssl.client.auth".into(), "none".into()));
    let client_auth = match auth.trim().to_ascii_lowercase().as_str() {
        "none" | "" => ClientAuth::None,
        "requested" => ClientAuth::Requested,
        "required" => ClientAuth::Required,
        other => {
            return Err(format!(
                "{auth_key} = {other}: expected none, requested or required"
            ))
        }
    };
    if client_auth != ClientAuth::None && !has_trust {
        return Err(format!(
            "listener {listener}: ssl.client.auth = {} needs a truststore (ssl.truststore.location or ssl.truststore.certificates) with the CAs of the client certificates",
            auth.trim()
        ));
    }
    let (proto_key, protos) = get("ssl.enabled.protocols")
        .unwrap_or(("ssl.enabled.protocols".into(), "TLSv1.2,TLSv1.3".into()));
    let enabled_protocols = list(&protos);
    for p in &enabled_protocols {
        if p != "TLSv1.2" && p != "TLSv1.3" {
            return Err(format!(
                "{proto_key}: protocol `{p}` is not supported (Skiff offers TLSv1.2 and TLSv1.3)"
            ));
        }
    }
    if enabled_protocols.is_empty() {
        return Err(format!("{proto_key}: at least one protocol is required"));
    }
    Ok(ListenerSsl {
        keystore_type,
        keystore_location,
        keystore_certificate_chain,
        keystore_key,
        key_password: val("ssl.key.password"),
        truststore_type,
        truststore_location,
        truststore_certificates,
        client_auth,
        enabled_protocols,
        cipher_suites: val("ssl.cipher.suites")
            .map(|v| list(&v))
            .unwrap_or_default(),
        principal_mapping_rules: val("ssl.principal.mapping.rules")
            .unwrap_or_else(|| "DEFAULT".to_string()),
        allow_dn_changes: flag("ssl.allow.dn.changes")?,
        allow_san_changes: flag("ssl.allow.san.changes")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tests::explicit_config as cfg;

    #[test]
    fn per_listener_keys_win_over_plain_ones() {
        let c = cfg(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/plain.pem"),
            ("listener.name.external.ssl.keystore.location", "/ext.pem"),
            ("listener.name.external.ssl.truststore.type", "PEM"),
            ("listener.name.external.ssl.truststore.location", "/ca.pem"),
            ("listener.name.external.ssl.client.auth", "required"),
        ]);
        let ext = listener_ssl(&c, "EXTERNAL").unwrap();
        assert_eq!(ext.keystore_location, Some(PathBuf::from("/ext.pem")));
        assert_eq!(ext.client_auth, ClientAuth::Required);
        assert_eq!(ext.enabled_protocols, vec!["TLSv1.2", "TLSv1.3"]);
        let ssl = listener_ssl(&c, "SSL").unwrap();
        assert_eq!(ssl.keystore_location, Some(PathBuf::from("/plain.pem")));
        assert_eq!(ssl.client_auth, ClientAuth::None);
        assert_eq!(ssl.principal_mapping_rules, "DEFAULT");
    }

    #[test]
    fn bad_settings_are_refused_with_the_key_named() {
        let e = listener_ssl(&cfg(&[]), "SSL").unwrap_err();
        assert!(e.contains("no certificate"), "{e}");
        let e = listener_ssl(&cfg(&[("ssl.keystore.location", "/k")]), "SSL").unwrap_err();
        assert!(e.contains("PEM"), "JKS default is refused: {e}");
        let base = [
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/k"),
        ];
        let with = |extra: (&str, &str)| {
            let mut v = base.to_vec();
            v.push(extra);
            listener_ssl(&cfg(&v), "SSL")
        };
        let e = with(("ssl.client.auth", "sometimes")).unwrap_err();
        assert!(e.contains("ssl.client.auth"), "{e}");
        let e = with(("ssl.client.auth", "required")).unwrap_err();
        assert!(e.contains("truststore"), "{e}");
        let e = with(("ssl.enabled.protocols", "TLSv1.1")).unwrap_err();
        assert!(e.contains("TLSv1.1"), "{e}");
        let e = with(("ssl.keystore.key", "x")).unwrap_err();
        assert!(e.contains("not both"), "{e}");
        let ok = with((
            "ssl.cipher.suites",
            "TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384",
        ))
        .unwrap();
        assert_eq!(ok.cipher_suites.len(), 2);
    }

    #[test]
    fn debug_hides_secrets() {
        let c = cfg(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.certificate.chain", "CHAIN-TEXT"),
            ("ssl.keystore.key", "SECRET-KEY"),
            ("ssl.key.password", "hunter2"),
        ]);
        let s = format!("{:?}", listener_ssl(&c, "SSL").unwrap());
        assert!(!s.contains("SECRET") && !s.contains("hunter2") && !s.contains("CHAIN"));
    }

    #[test]
    fn protocols_come_from_the_map() {
        let c = BrokerConfig::default();
        assert_eq!(listener_protocol(&c, "SSL"), Some(SecurityProtocol::Ssl));
        assert_eq!(
            listener_protocol(&c, "plaintext"),
            Some(SecurityProtocol::Plaintext)
        );
        let c = cfg(&[("listener.security.protocol.map", "INTERNAL:SSL")]);
        assert_eq!(
            listener_protocol(&c, "INTERNAL"),
            Some(SecurityProtocol::Ssl)
        );
        assert_eq!(listener_protocol(&c, "PLAINTEXT"), None);
        assert_eq!(
            listener_override_base("listener.name.x.ssl.keystore.key"),
            Some("ssl.keystore.key")
        );
        assert_eq!(listener_override_base("listener.name.x.ssl.protocol"), None);
    }
}
