//! The SASL settings of one listener, resolved from Kafka's keys: which mechanisms it offers
//! (`listener.name.<l>.sasl.enabled.mechanisms`, else `sasl.enabled.mechanisms`), the JAAS
//! line and server callback handler of each mechanism
//! (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else `sasl.jaas.config`), the
//! `sasl.oauthbearer.*` validator settings, and Skiff's bootstrap users (`sasl.scram.users`,
//! `sasl.plain.hashed.users`).
//!
//! This module only finds the values and says which key each came from; what they mean
//! (parsing JAAS, loading a JWKS file) is the broker's and skiff-auth's job, whose error
//! messages then name that key. Pure functions over [`BrokerConfig`]; the values hold secrets,
//! so [`ListenerSasl`]'s `Debug` hides them.

use std::collections::BTreeMap;
use std::fmt;

use crate::broker::BrokerConfig;

/// Keys whose value is a list of entries that may themselves contain commas (`--add-scram`
/// arguments, password hashes): a TOML array of them is joined with newlines, not commas.
pub const ENTRY_LIST_KEYS: &[&str] = &["sasl.scram.users", "sasl.plain.hashed.users"];

/// The per-listener-and-mechanism keys, after `listener.name.<l>.<mechanism>.`.
const PER_MECHANISM_KEYS: &[&str] = &["sasl.jaas.config", "sasl.server.callback.handler.class"];

/// The `sasl.oauthbearer.*` keys handed to the OAUTHBEARER validator.
pub const OAUTHBEARER_KEYS: &[&str] = &[
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.clock.skew.seconds",
];

/// A value and the key it was read from (for error messages).
#[derive(Clone, PartialEq, Eq)]
pub struct Keyed {
    pub key: String,
    pub value: String,
}

/// The SASL settings of one listener.
#[derive(Clone, PartialEq, Eq)]
pub struct ListenerSasl {
    /// The key the mechanism list came from (`sasl.enabled.mechanisms` when unset, with
    /// Kafka's default GSSAPI).
    pub mechanisms_key: String,
    /// Mechanism names in the configured order (case kept: Kafka's names are case-sensitive).
    pub mechanisms: Vec<String>,
    /// JAAS line per mechanism name (secret).
    pub jaas: BTreeMap<String, Keyed>,
    /// `sasl.server.callback.handler.class` per mechanism name.
    pub callback_handler: BTreeMap<String, Keyed>,
    /// The `sasl.oauthbearer.*` keys that are set, by their plain names.
    pub oauthbearer: BTreeMap<String, String>,
    /// `sasl.scram.users` entries (secret: they hold passwords).
    pub scram_users: Vec<String>,
    /// `sasl.plain.hashed.users` entries, `<name>=<hash>`.
    pub plain_hashed_users: Vec<String>,
}

impl fmt::Debug for ListenerSasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerSasl")
            .field("mechanisms_key", &self.mechanisms_key)
            .field("mechanisms", &self.mechanisms)
            .field("jaas", &self.jaas.keys().collect::<Vec<_>>())
            .field(
                "callback_handler",
                &self
                    .callback_handler
                    .iter()
                    .map(|(m, k)| (m, &k.value))
                    .collect::<Vec<_>>(),
            )
            .field("oauthbearer", &self.oauthbearer)
            .field("scram_users", &self.scram_users.len())
            .field("plain_hashed_users", &self.plain_hashed_users.len())
            .finish()
    }
}

/// If `key` is a per-listener SASL key (`listener.name.<l>.sasl.enabled.mechanisms`,
/// `listener.name.<l>.<mechanism>.sasl.jaas.config`,
/// `listener.name.<l>.<mechanism>.sasl.server.callback.handler.class`), the plain key it
/// overrides.
pub fn listener_sasl_override_base(key: &str) -> Option<&'static str> {
    let rest = key.strip_prefix("listener.name.")?;
    let (listener, rest) = rest.split_once('.')?;
    if listener.is_empty() {
        return None;
    }
    if rest == "sasl.enabled.mechanisms" {
        return Some("sasl.enabled.mechanisms");
    }
    let (mechanism, base) = rest.split_once('.')?;
    if mechanism.is_empty() || mechanism == "sasl" || mechanism == "ssl" {
        return None;
    }
    PER_MECHANISM_KEYS.iter().copied().find(|k| *k == base)
}

/// The effective value of `key`: dynamic layers, then the static configuration.
fn lookup<'a>(cfg: &'a BrokerConfig, key: &str) -> Option<&'a str> {
    [&cfg.dynamic_broker, &cfg.dynamic_default, &cfg.explicit]
        .into_iter()
        .find_map(|layer: &BTreeMap<String, String>| layer.get(key))
        .map(String::as_str)
}

fn keyed(cfg: &BrokerConfig, keys: &[String]) -> Option<Keyed> {
    keys.iter().find_map(|k| {
        lookup(cfg, k)
            .filter(|v| !v.trim().is_empty())
            .map(|v| Keyed {
                key: k.clone(),
                value: v.to_string(),
            })
    })
}

/// Splits an entry-list value (see [`ENTRY_LIST_KEYS`]) into its entries: one per line.
pub fn entries(value: &str) -> Vec<String> {
    value
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The SASL settings of `listener` (its upper-case name). Errors name the key.
pub fn listener_sasl(cfg: &BrokerConfig, listener: &str) -> Result<ListenerSasl, String> {
    let lower = listener.to_ascii_lowercase();
    let prefixed = format!("listener.name.{lower}.sasl.enabled.mechanisms");
    let (mechanisms_key, raw) = match lookup(cfg, &prefixed) {
        Some(v) => (prefixed, v.to_string()),
        None => (
            "sasl.enabled.mechanisms".to_string(),
            lookup(cfg, "sasl.enabled.mechanisms")
                .unwrap_or("GSSAPI")
                .to_string(),
        ),
    };
    let mut mechanisms: Vec<String> = Vec::new();
    for m in raw.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        if !mechanisms.iter().any(|x| x == m) {
            mechanisms.push(m.to_string());
        }
    }
    if mechanisms.is_empty() {
        return Err(format!(
            "{mechanisms_key} is empty: listener {listener} is a SASL listener and needs at least one mechanism"
        ));
    }
    let mut jaas = BTreeMap::new();
    let mut callback_handler = BTreeMap::new();
    for m in &mechanisms {
        let ml = m.to_ascii_lowercase();
        let per = |base: &str| {
            vec![
                format!("listener.name.{lower}.{ml}.{base}"),
                base.to_string(),
            ]
        };
        if let Some(k) = keyed(cfg, &per("sasl.jaas.config")) {
            jaas.insert(m.clone(), k);
        }
        if let Some(k) = keyed(cfg, &per("sasl.server.callback.handler.class")) {
            callback_handler.insert(m.clone(), k);
        }
    }
    let oauthbearer = OAUTHBEARER_KEYS
        .iter()
        .filter_map(|k| lookup(cfg, k).map(|v| (k.to_string(), v.to_string())))
        .collect();
    let list = |key: &str| lookup(cfg, key).map(entries).unwrap_or_default();
    Ok(ListenerSasl {
        mechanisms_key,
        mechanisms,
        jaas,
        callback_handler,
        oauthbearer,
        scram_users: list("sasl.scram.users"),
        plain_hashed_users: list("sasl.plain.hashed.users"),
    })
}

/// The mechanisms Skiff implements, in Kafka's spelling.
pub const SUPPORTED_MECHANISMS: &[&str] =
    &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];

/// Kafka's JWT-validating server callback handler, the one OAUTHBEARER handler Skiff accepts.
pub const OAUTHBEARER_VALIDATOR_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";

/// Checks what can be checked without reading files: supported mechanism names, users for
/// PLAIN, a signed-token validator for OAUTHBEARER. On error, the key to blame and why.
pub fn check_listener_sasl(cfg: &BrokerConfig, listener: &str) -> Result<(), (String, String)> {
    let lower = listener.to_ascii_lowercase();
    let s = listener_sasl(cfg, listener).map_err(|e| ("sasl.enabled.mechanisms".to_string(), e))?;
    for m in &s.mechanisms {
        if !SUPPORTED_MECHANISMS.contains(&m.as_str()) {
            let what = if m == "GSSAPI" {
                "GSSAPI (Kerberos; Kafka's default) is not supported by Skiff".to_string()
            } else {
                format!("mechanism '{m}' is not supported by Skiff")
            };
            return Err((
                s.mechanisms_key.clone(),
                format!(
                    "SASL listener {listener}: {what}; set {} to some of {}",
                    format_args!("listener.name.{lower}.sasl.enabled.mechanisms (or sasl.enabled.mechanisms)"),
                    SUPPORTED_MECHANISMS.join(", ")
                ),
            ));
        }
    }
    for m in &s.mechanisms {
        let ml = m.to_ascii_lowercase();
        let handler = s.callback_handler.get(m);
        if m == "OAUTHBEARER" {
            let handler_key =
                format!("listener.name.{lower}.oauthbearer.sasl.server.callback.handler.class");
            match handler {
                Some(h) if h.value.trim() == OAUTHBEARER_VALIDATOR_HANDLER => {}
                Some(h) => {
                    return Err((
                        h.key.clone(),
                        format!("'{}' is not supported: Skiff validates OAUTHBEARER tokens only with {OAUTHBEARER_VALIDATOR_HANDLER}", h.value.trim()),
                    ))
                }
                None => {
                    return Err((
                        handler_key.clone(),
                        format!(
                            "SASL listener {listener} enables OAUTHBEARER without a token validator: Kafka would then accept unsigned (unsecured) tokens, which Skiff refuses. Set {handler_key} = \"{OAUTHBEARER_VALIDATOR_HANDLER}\" and sasl.oauthbearer.jwks.endpoint.url = \"file:///path/to/jwks.json\""
                        ),
                    ))
                }
            }
            let url_key = "sasl.oauthbearer.jwks.endpoint.url".to_string();
            match s.oauthbearer.get(&url_key).map(|u| u.trim()) {
                Some(u) if u.starts_with("file:") => {}
                Some(u) => {
                    return Err((
                        url_key,
                        format!("'{u}': Skiff reads the JWKS from a local file only (file:///path/to/jwks.json) and fetches nothing over the network"),
                    ))
                }
                None => {
                    return Err((
                        url_key,
                        format!("SASL listener {listener} enables OAUTHBEARER: set sasl.oauthbearer.jwks.endpoint.url to the JWKS file with the token signing keys (file:///path/to/jwks.json)"),
                    ))
                }
            }
        } else if let Some(h) = handler {
            return Err((
                h.key.clone(),
                format!("custom server callback handlers are not supported (Skiff checks {m} itself); remove this key"),
            ));
        }
        if m == "PLAIN" && !s.jaas.contains_key(m) && s.plain_hashed_users.is_empty() {
            return Err((
                format!("listener.name.{lower}.{ml}.sasl.jaas.config"),
                format!(
                    "SASL listener {listener} enables PLAIN but has no users: set listener.name.{lower}.plain.sasl.jaas.config (PlainLoginModule with user_<name>=\"<password>\" entries) or sasl.plain.hashed.users"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tests::explicit_config as cfg;

    #[test]
    fn override_keys_are_recognised() {
        assert_eq!(
            listener_sasl_override_base("listener.name.sasl_plaintext.plain.sasl.jaas.config"),
            Some("sasl.jaas.config")
        );
        assert_eq!(
            listener_sasl_override_base("listener.name.external.sasl.enabled.mechanisms"),
            Some("sasl.enabled.mechanisms")
        );
        assert_eq!(
            listener_sasl_override_base(
                "listener.name.x.oauthbearer.sasl.server.callback.handler.class"
            ),
            Some("sasl.server.callback.handler.class")
        );
        assert_eq!(
            listener_sasl_override_base("listener.name.x.plain.sasl.kerberos.service.name"),
            None
        );
        assert_eq!(
            listener_sasl_override_base("listener.name..sasl.jaas.config"),
            None
        );
        assert_eq!(listener_sasl_override_base("sasl.jaas.config"), None);
    }

    #[test]
    fn per_listener_values_win_and_keys_are_reported() {
        let c = cfg(&[
            ("sasl.enabled.mechanisms", "PLAIN"),
            (
                "listener.name.sasl_ssl.sasl.enabled.mechanisms",
                "SCRAM-SHA-512, PLAIN,SCRAM-SHA-512",
            ),
            ("sasl.jaas.config", "broker-wide"),
            ("listener.name.sasl_ssl.plain.sasl.jaas.config", "for-plain"),
            ("sasl.scram.users", "a\n b \n\n"),
        ]);
        let s = listener_sasl(&c, "SASL_SSL").unwrap();
        assert_eq!(
            s.mechanisms_key,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms"
        );
        assert_eq!(s.mechanisms, vec!["SCRAM-SHA-512", "PLAIN"]);
        assert_eq!(s.jaas["PLAIN"].value, "for-plain");
        assert_eq!(s.jaas["SCRAM-SHA-512"].key, "sasl.jaas.config");
        assert_eq!(s.scram_users, vec!["a", "b"]);
        let p = listener_sasl(&c, "SASL_PLAINTEXT").unwrap();
        assert_eq!(p.mechanisms, vec!["PLAIN"]);
        assert_eq!(p.jaas["PLAIN"].value, "broker-wide");
        let d = listener_sasl(&cfg(&[]), "SASL_PLAINTEXT").unwrap();
        assert_eq!(d.mechanisms, vec!["GSSAPI"], "Kafka's default");
        let e = listener_sasl(&cfg(&[("sasl.enabled.mechanisms", " , ")]), "X").unwrap_err();
        assert!(e.contains("sasl.enabled.mechanisms"), "{e}");
    }

    #[test]
    fn start_checks_name_the_key() {
        let check = |pairs: &[(&str, &str)]| check_listener_sasl(&cfg(pairs), "SASL_PLAINTEXT");
        let (k, m) = check(&[]).unwrap_err();
        assert_eq!(k, "sasl.enabled.mechanisms");
        assert!(m.contains("GSSAPI") && m.contains("not supported"), "{m}");
        let (k, m) = check(&[(
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
            "PLAIN,DIGEST-MD5",
        )])
        .unwrap_err();
        assert_eq!(k, "listener.name.sasl_plaintext.sasl.enabled.mechanisms");
        assert!(m.contains("DIGEST-MD5"), "{m}");
        let (k, _) = check(&[("sasl.enabled.mechanisms", "PLAIN")]).unwrap_err();
        assert_eq!(k, "listener.name.sasl_plaintext.plain.sasl.jaas.config");
        assert!(check(&[
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.plain.hashed.users", "a=x")
        ])
        .is_ok());
        assert!(check(&[("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512")]).is_ok());
        let oauth = [("sasl.enabled.mechanisms", "OAUTHBEARER")];
        let (k, m) = check(&oauth).unwrap_err();
        assert_eq!(
            k,
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"
        );
        assert!(m.contains("unsigned"), "{m}");
        let handler = (
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
            OAUTHBEARER_VALIDATOR_HANDLER,
        );
        let (k, _) = check(&[oauth[0], handler]).unwrap_err();
        assert_eq!(k, "sasl.oauthbearer.jwks.endpoint.url");
        let (k, m) = check(&[
            oauth[0],
            handler,
            ("sasl.oauthbearer.jwks.endpoint.url", "https://idp/jwks"),
        ])
        .unwrap_err();
        assert_eq!(k, "sasl.oauthbearer.jwks.endpoint.url");
        assert!(m.contains("local file"), "{m}");
        assert!(check(&[
            oauth[0],
            handler,
            ("sasl.oauthbearer.jwks.endpoint.url", "file:///j.json")
        ])
        .is_ok());
    }

    #[test]
    fn debug_hides_secrets() {
        let c = cfg(&[
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.jaas.config", "user_a=\"hunter2\""),
            (
                "sasl.scram.users",
                "SCRAM-SHA-256=[name=a,password=hunter3]",
            ),
        ]);
        let s = format!("{:?}", listener_sasl(&c, "L").unwrap());
        assert!(!s.contains("hunter"), "{s}");
    }
}
