//! TLS for SSL listeners, with rustls (ring provider; no OpenSSL): the server configuration
//! built from a listener's `ssl.*` settings ([`skiff_config::listener_ssl`]), and the
//! principal of a client from its certificate.
//!
//! - Keystore: PEM only, as Kafka's `PEM` type: a file (`ssl.keystore.location`) holding the
//!   private key and the certificate chain, or the inline `ssl.keystore.certificate.chain` and
//!   `ssl.keystore.key`. An encrypted PKCS#8 key is decrypted with `ssl.key.password`
//!   ([`super::tls_key`]).
//! - Truststore: PEM CA certificates; `ssl.client.auth` = none / requested / required.
//! - `ssl.enabled.protocols` (TLSv1.2, TLSv1.3) and `ssl.cipher.suites` by IANA name (Kafka's
//!   names); an unknown or unavailable name is an error at start.
//! - Principal: `User:` + the client certificate's subject as Java's RFC 2253 text
//!   ([`skiff_acl::dn`]) mapped by `ssl.principal.mapping.rules`; `User:ANONYMOUS` without a
//!   client certificate.
//!
//! Building reads the files once; the result is immutable and shared by the connections.
//!
//! Reload without restart ([`TlsReloader`]): before each accepted connection the listener's
//! settings are resolved again from the live configuration (so an AlterConfigs /
//! IncrementalAlterConfigs of an `ssl.*` or `listener.name.<l>.ssl.*` key applies, as in
//! Kafka) and the modification times of the keystore and truststore files are compared with
//! those last read (so a certificate replaced on disk is picked up too). On a change the
//! configuration is rebuilt; if that fails, or the new certificate changes the subject or drops
//! a name without `ssl.allow.dn.changes` / `ssl.allow.san.changes` ([`CertIdentity`]), the
//! previous one stays in use and the failure is logged once per distinct change. Connections
//! already open keep their session.
//!
//! Alter-time check ([`check_reconfiguration`]): an AlterConfigs / IncrementalAlterConfigs
//! that changes a TLS listener's settings is refused (INVALID_REQUEST, Kafka's text) unless
//! they build, so a bad store is reported to the admin instead of being found at the next
//! connection; `validate_only` runs the same check.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::crypto::{ring as provider, CryptoProvider};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use skiff_acl::dn::Attribute;
use skiff_acl::SslPrincipalMapper;
use skiff_config::{BrokerConfig, ClientAuth, ListenerSsl};

use super::tls_identity::CertIdentity;
use crate::acl_operations::Principal;
use crate::broker::Broker;

/// What an SSL listener needs: the rustls configuration and the principal mapping.
#[derive(Clone)]
pub struct ListenerTls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub mapper: Arc<SslPrincipalMapper>,
    /// The server certificate's subject and names, which a reload must keep (see
    /// [`CertIdentity::ensure_compatible`]).
    pub identity: CertIdentity,
}

impl std::fmt::Debug for ListenerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListenerTls")
    }
}

/// The TLS setup of the listener `listener` from `cfg`; the error names the key at fault.
pub fn listener_tls(cfg: &BrokerConfig, listener: &str) -> Result<ListenerTls, String> {
    let ssl = skiff_config::listener_ssl(cfg, listener)?;
    build(&ssl, listener)
}

fn build(ssl: &ListenerSsl, listener: &str) -> Result<ListenerTls, String> {
    let at = |e: String| format!("listener {listener}: {e}");
    let (chain, key) = keystore(ssl).map_err(at)?;
    let identity = CertIdentity::of_chain(&chain).map_err(at)?;
    let config = server_config_with(ssl, chain, key).map_err(at)?;
    let mapper =
        SslPrincipalMapper::parse(&ssl.principal_mapping_rules).map_err(|e| at(e.to_string()))?;
    Ok(ListenerTls {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        mapper: Arc::new(mapper),
        identity,
    })
}

/// Checks a dynamic change of the broker's configuration from `old` to `new` as Kafka's
/// `SslFactory.validateReconfiguration` does: every TLS listener whose resolved `ssl.*`
/// settings change must build with the new ones (the keystore loads, its key matches its
/// certificate, the truststore loads, names and protocols are known), and its certificate
/// keeps its subject and names unless `ssl.allow.dn.changes` / `ssl.allow.san.changes` allow
/// otherwise. The error is Kafka's text for a refused reconfiguration, with Skiff's own cause.
pub fn check_reconfiguration(old: &BrokerConfig, new: &BrokerConfig) -> Result<(), String> {
    for listener in &new.listeners {
        let name = listener.name.as_str();
        if !matches!(
            skiff_config::listener_protocol(new, name),
            Some(skiff_config::SecurityProtocol::Ssl | skiff_config::SecurityProtocol::SaslSsl)
        ) {
            continue;
        }
        let next = skiff_config::listener_ssl(new, name);
        let prev = skiff_config::listener_ssl(old, name);
        if next.is_ok() && next == prev {
            continue;
        }
        let checked = next.and_then(|ssl| {
            let tls = validate(&ssl, name)?;
            // The certificate served now (when the old settings still load).
            let served = prev.ok().and_then(|p| keystore(&p).ok());
            match served.map(|(chain, _)| CertIdentity::of_chain(&chain)) {
                Some(Ok(old_id)) => old_id.ensure_compatible(
                    &tls.identity,
                    ssl.allow_dn_changes,
                    ssl.allow_san_changes,
                ),
                _ => Ok(()),
            }
        });
        if let Err(e) = checked {
            return Err(format!(
                "Invalid value org.apache.kafka.common.config.ConfigException: Validation of \
                 dynamic config update of SSLFactory failed: {e} for configuration Invalid \
                 dynamic configuration"
            ));
        }
    }
    Ok(())
}

/// Builds `ssl` and, as Kafka loads a configured truststore even without client
/// authentication, reads the truststore too when the build did not need it.
fn validate(ssl: &ListenerSsl, listener: &str) -> Result<ListenerTls, String> {
    let tls = build(ssl, listener)?;
    if ssl.client_auth == ClientAuth::None {
        let pem = match (&ssl.truststore_location, &ssl.truststore_certificates) {
            (Some(path), _) => read_pem("ssl.truststore.location", path)?,
            (None, Some(inline)) => inline.as_bytes().to_vec(),
            (None, None) => return Ok(tls),
        };
        certs(&pem, "truststore").map_err(|e| format!("listener {listener}: {e}"))?;
    }
    Ok(tls)
}

/// The modification times of the files `ssl` reads (keystore, truststore).
fn stamps(ssl: &ListenerSsl) -> Vec<Option<SystemTime>> {
    [&ssl.keystore_location, &ssl.truststore_location]
        .into_iter()
        .map(|p| {
            p.as_ref()
                .and_then(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        })
        .collect()
}

/// What a TLS setup was built from.
type Source = (ListenerSsl, Vec<Option<SystemTime>>);

/// An SSL listener's TLS setup, rebuilt when its settings or files change (module docs).
pub struct TlsReloader {
    listener: String,
    state: Mutex<ReloadState>,
}

struct ReloadState {
    source: Source,
    tls: ListenerTls,
    /// The last source that failed to build, so it is logged once, not per connection.
    failed: Option<Source>,
}

impl TlsReloader {
    /// Builds the listener's TLS setup from `cfg`; errors as [`listener_tls`].
    pub fn new(cfg: &BrokerConfig, listener: &str) -> Result<TlsReloader, String> {
        let ssl = skiff_config::listener_ssl(cfg, listener)?;
        let source = (ssl.clone(), stamps(&ssl));
        let tls = build(&ssl, listener)?;
        Ok(TlsReloader {
            listener: listener.to_string(),
            state: Mutex::new(ReloadState {
                source,
                tls,
                failed: None,
            }),
        })
    }

    /// The TLS setup for a new connection, rebuilt first if the live settings or the files'
    /// modification times changed.
    pub fn current(&self, broker: &Broker) -> ListenerTls {
        let live = broker.live_config();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let ssl = match skiff_config::listener_ssl(&live, &self.listener) {
            Ok(ssl) => ssl,
            // The live configuration was validated when altered; keep what works.
            Err(_) => return state.tls.clone(),
        };
        let files = stamps(&ssl);
        let source = (ssl, files);
        if source == state.source || state.failed.as_ref() == Some(&source) {
            return state.tls.clone();
        }
        let rebuilt = build(&source.0, &self.listener).and_then(|tls| {
            state
                .tls
                .identity
                .ensure_compatible(
                    &tls.identity,
                    source.0.allow_dn_changes,
                    source.0.allow_san_changes,
                )
                .map(|()| tls)
        });
        match rebuilt {
            Ok(tls) => {
                tracing::info!(listener = %self.listener, "TLS keystore/truststore reloaded");
                state.tls = tls;
                state.source = source;
                state.failed = None;
            }
            Err(e) => {
                tracing::warn!(
                    listener = %self.listener,
                    error = %e,
                    "cannot reload the TLS settings; keeping the previous ones"
                );
                state.failed = Some(source);
            }
        }
        state.tls.clone()
    }
}

/// Kafka's (IANA) cipher suite names of the suites rustls offers.
fn suite_by_name(name: &str) -> Option<SupportedCipherSuite> {
    use provider::cipher_suite as cs;
    Some(match name {
        "TLS_AES_128_GCM_SHA256" => cs::TLS13_AES_128_GCM_SHA256,
        "TLS_AES_256_GCM_SHA384" => cs::TLS13_AES_256_GCM_SHA384,
        "TLS_CHACHA20_POLY1305_SHA256" => cs::TLS13_CHACHA20_POLY1305_SHA256,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => {
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        }
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => {
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
        }
        _ => return None,
    })
}

/// The crypto provider restricted to `ssl.cipher.suites` (all of ring's when empty).
fn crypto_provider(ssl: &ListenerSsl) -> Result<Arc<CryptoProvider>, String> {
    let mut p = provider::default_provider();
    if !ssl.cipher_suites.is_empty() {
        let mut suites = Vec::new();
        for name in &ssl.cipher_suites {
            let suite = suite_by_name(name).ok_or_else(|| {
                format!(
                    "ssl.cipher.suites: `{name}` is not a cipher suite Skiff offers (it has the TLS 1.3 suites and the ECDHE ones with AES-GCM or ChaCha20-Poly1305, by IANA name)"
                )
            })?;
            suites.push(suite);
        }
        p.cipher_suites = suites;
    }
    Ok(Arc::new(p))
}

fn read_pem(what: &str, path: &std::path::Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{what} {}: {e}", path.display()))
}

fn certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what}: bad PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{what}: no CERTIFICATE in the PEM"));
    }
    Ok(certs)
}

/// The server's certificate chain and key, from the file or the inline keys.
fn keystore(
    ssl: &ListenerSsl,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    Ok(match (&ssl.keystore_location, &ssl.keystore_certificate_chain, &ssl.keystore_key) {
        (Some(path), _, _) => {
            let pem = read_pem("ssl.keystore.location", path)?;
            let what = format!("ssl.keystore.location {}", path.display());
            let key = super::tls_key::private_key(&pem, ssl.key_password.as_deref(), &what)?;
            (certs(&pem, &what)?, key)
        }
        (None, Some(chain), Some(key)) => (
            certs(chain.as_bytes(), "ssl.keystore.certificate.chain")?,
            super::tls_key::private_key(
                key.as_bytes(),
                ssl.key_password.as_deref(),
                "ssl.keystore.key",
            )?,
        ),
        _ => return Err("no server certificate (ssl.keystore.location or ssl.keystore.certificate.chain with ssl.keystore.key)".to_string()),
    })
}

/// The rustls server configuration for `ssl`, reading the files it names.
pub fn server_config(ssl: &ListenerSsl) -> Result<ServerConfig, String> {
    let (chain, key) = keystore(ssl)?;
    server_config_with(ssl, chain, key)
}

fn server_config_with(
    ssl: &ListenerSsl,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<ServerConfig, String> {
    let provider = crypto_provider(ssl)?;
    let mut versions = Vec::new();
    for p in &ssl.enabled_protocols {
        match p.as_str() {
            "TLSv1.3" => versions.push(&rustls::version::TLS13),
            "TLSv1.2" => versions.push(&rustls::version::TLS12),
            other => return Err(format!("ssl.enabled.protocols: `{other}` is not supported")),
        }
    }
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("ssl.enabled.protocols / ssl.cipher.suites: {e}"))?;
    let builder = match ssl.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Requested | ClientAuth::Required => {
            let pem = match (&ssl.truststore_location, &ssl.truststore_certificates) {
                (Some(path), _) => read_pem("ssl.truststore.location", path)?,
                (None, Some(inline)) => inline.as_bytes().to_vec(),
                (None, None) => return Err("ssl.client.auth needs a truststore".to_string()),
            };
            let mut roots = RootCertStore::empty();
            for cert in certs(&pem, "truststore")? {
                roots
                    .add(cert)
                    .map_err(|e| format!("truststore: unusable CA certificate: {e}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if ssl.client_auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier.build().map_err(|e| format!("truststore: {e}"))?,
            )
        }
    };
    builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("server certificate and key do not go together: {e}"))
}

/// The RFC 2253 subject (as Java writes it) of the DER certificate `der`.
pub fn subject_dn(der: &[u8]) -> Result<String, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("unreadable client certificate: {e}"))?;
    Ok(subject_dn_of(&cert))
}

/// The RFC 2253 subject of a certificate already parsed.
pub fn subject_dn_of(cert: &x509_parser::certificate::X509Certificate<'_>) -> String {
    let mut rdns: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
    for rdn in cert.subject().iter() {
        let mut attrs = Vec::new();
        for atv in rdn.iter() {
            let value = atv.attr_value();
            attrs.push((atv.attr_type().to_id_string(), der_of(value)));
        }
        rdns.push(attrs);
    }
    let borrowed: Vec<Vec<Attribute<'_>>> = rdns
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(|(oid, der)| Attribute { oid, der })
                .collect()
        })
        .collect();
    skiff_acl::dn::rfc2253(&borrowed)
}

/// The complete DER encoding (tag, length, contents) of a parsed attribute value.
fn der_of(any: &x509_parser::der_parser::asn1_rs::Any<'_>) -> Vec<u8> {
    let header = &any.header;
    let tag = header.tag().0;
    let mut out = Vec::with_capacity(any.data.len() + 6);
    let first = ((header.class() as u8) << 6) | (u8::from(header.is_constructed()) << 5);
    if tag < 31 {
        out.push(first | tag as u8);
    } else {
        out.push(first | 0x1f);
        let mut bytes = Vec::new();
        let mut t = tag;
        bytes.push((t & 0x7f) as u8);
        t >>= 7;
        while t > 0 {
            bytes.push(0x80 | (t & 0x7f) as u8);
            t >>= 7;
        }
        out.extend(bytes.iter().rev());
    }
    let len = any.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(any.data);
    out
}

/// The principal of a TLS connection: from the first peer certificate when there is one
/// (`User:` + the mapped subject), else `User:ANONYMOUS`, as Kafka's default builder.
pub fn principal(
    peer_certificates: Option<&[CertificateDer<'_>]>,
    mapper: &SslPrincipalMapper,
) -> Result<Principal<'static>, String> {
    let Some(cert) = peer_certificates.and_then(|c| c.first()) else {
        return Ok(Principal::ANONYMOUS);
    };
    let dn = subject_dn(cert.as_ref())?;
    let name = mapper.name(&dn).map_err(|e| e.to_string())?;
    Ok(Principal {
        kind: "User",
        name: Cow::Owned(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssl(cert: &rcgen::CertifiedKey) -> ListenerSsl {
        ListenerSsl {
            keystore_type: "PEM".into(),
            keystore_location: None,
            keystore_certificate_chain: Some(cert.cert.pem()),
            keystore_key: Some(cert.key_pair.serialize_pem()),
            key_password: None,
            truststore_type: "PEM".into(),
            truststore_location: None,
            truststore_certificates: None,
            client_auth: ClientAuth::None,
            enabled_protocols: vec!["TLSv1.2".into(), "TLSv1.3".into()],
            cipher_suites: Vec::new(),
            principal_mapping_rules: "DEFAULT".into(),
            allow_dn_changes: false,
            allow_san_changes: false,
        }
    }

    #[test]
    fn builds_from_inline_pem_and_checks_names() {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let mut s = ssl(&cert);
        assert!(server_config(&s).is_ok());
        s.cipher_suites = vec!["TLS_AES_256_GCM_SHA384".into()];
        s.enabled_protocols = vec!["TLSv1.3".into()];
        assert!(server_config(&s).is_ok());
        s.cipher_suites = vec!["TLS_RSA_WITH_AES_128_CBC_SHA".into()];
        let e = server_config(&s).unwrap_err();
        assert!(e.contains("TLS_RSA_WITH_AES_128_CBC_SHA"), "{e}");
        s.cipher_suites.clear();
        s.key_password = Some("secret".into());
        let e = server_config(&s).unwrap_err();
        assert!(
            e.contains("ssl.key.password") && !e.contains("secret\""),
            "{e}"
        );
        s.key_password = None;
        s.keystore_key = Some(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
                .into(),
        );
        assert!(server_config(&s).unwrap_err().contains("encrypted"));
    }

    #[test]
    fn principal_is_the_mapped_subject_or_anonymous() {
        let mut params = rcgen::CertificateParams::new(vec!["client".into()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Acme, Inc");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let der = cert.der().clone();
        assert_eq!(subject_dn(&der).unwrap(), "CN=alice,O=Acme\\, Inc");
        let default = SslPrincipalMapper::parse("DEFAULT").unwrap();
        let p = principal(Some(std::slice::from_ref(&der)), &default).unwrap();
        assert_eq!((p.kind, &*p.name), ("User", "CN=alice,O=Acme\\, Inc"));
        let rules = SslPrincipalMapper::parse("RULE:^CN=([^,]*),.*$/$1/U").unwrap();
        let p = principal(Some(&[der]), &rules).unwrap();
        assert_eq!(&*p.name, "ALICE");
        assert_eq!(principal(None, &rules).unwrap(), Principal::ANONYMOUS);
    }
}
