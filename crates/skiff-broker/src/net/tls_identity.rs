//! The identity of a listener's server certificate: its subject and its subject alternative
//! names. Clients check the host name against the names and some pin the subject, so Kafka
//! refuses a dynamic keystore change that alters either unless `ssl.allow.dn.changes` /
//! `ssl.allow.san.changes` say otherwise (adding names is always allowed). Skiff applies the
//! same check to an AlterConfigs of the `ssl.*` keys and to a certificate replaced on disk.

use std::collections::BTreeSet;
use std::fmt;

use rustls_pki_types::CertificateDer;
use x509_parser::extensions::GeneralName;

/// Kafka's alias of the one entry of a PEM keystore, named in its messages.
const PEM_ALIAS: &str = "kafka";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertIdentity {
    /// The subject in RFC 2253 form.
    pub dn: String,
    /// `(type, value)` as Java lists them: 1 e-mail, 2 DNS name, 6 URI, 7 IP address.
    pub sans: BTreeSet<(u8, String)>,
}

impl CertIdentity {
    /// The identity of the leaf (first) certificate of `chain`.
    pub fn of_chain(chain: &[CertificateDer<'_>]) -> Result<CertIdentity, String> {
        let leaf = chain
            .first()
            .ok_or_else(|| "the keystore has no certificate".to_string())?;
        let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
            .map_err(|e| format!("unreadable server certificate: {e}"))?;
        let dn = super::tls::subject_dn_of(&cert);
        let mut sans = BTreeSet::new();
        let extension = cert
            .subject_alternative_name()
            .map_err(|e| format!("unreadable subject alternative names: {e}"))?;
        for name in extension.iter().flat_map(|e| e.value.general_names.iter()) {
            match name {
                GeneralName::RFC822Name(v) => sans.insert((1, v.to_string())),
                GeneralName::DNSName(v) => sans.insert((2, v.to_string())),
                GeneralName::URI(v) => sans.insert((6, v.to_string())),
                GeneralName::IPAddress(bytes) => sans.insert((7, ip_text(bytes))),
                // Other kinds (directory names, other names) are rare in server
                // certificates; they are left out of the comparison.
                _ => false,
            };
        }
        Ok(CertIdentity { dn, sans })
    }

    /// Refuses `next` in place of `self` when it changes the subject (unless `allow_dn`) or
    /// drops a subject alternative name (unless `allow_san`), with Kafka's texts.
    pub fn ensure_compatible(
        &self,
        next: &CertIdentity,
        allow_dn: bool,
        allow_san: bool,
    ) -> Result<(), String> {
        if !allow_dn && !self.dn.eq_ignore_ascii_case(&next.dn) {
            return Err(format!(
                "org.apache.kafka.common.config.ConfigException: Keystore DistinguishedName does not match:  existing={{alias={PEM_ALIAS}, DN={}}}, new={{alias={PEM_ALIAS}, DN={}}}",
                self.dn, next.dn
            ));
        }
        if !allow_san && !self.sans.is_subset(&next.sans) {
            return Err(format!(
                "org.apache.kafka.common.config.ConfigException: Keystore SubjectAltNames do not match:  existing={{alias={PEM_ALIAS}, SAN={}}}, new={{alias={PEM_ALIAS}, SAN={}}}",
                Sans(&self.sans),
                Sans(&next.sans)
            ));
        }
        Ok(())
    }
}

/// Java's rendering of a set of names: `[[2, localhost], [7, 127.0.0.1]]`.
struct Sans<'a>(&'a BTreeSet<(u8, String)>);

impl fmt::Display for Sans<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, (kind, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "[{kind}, {value}]")?;
        }
        f.write_str("]")
    }
}

fn ip_text(bytes: &[u8]) -> String {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        return std::net::Ipv4Addr::from(v4).to_string();
    }
    if let Ok(v6) = <[u8; 16]>::try_from(bytes) {
        return std::net::Ipv6Addr::from(v6).to_string();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(cn: &str, names: &[&str]) -> CertIdentity {
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        CertIdentity::of_chain(&[cert.der().clone()]).unwrap()
    }

    #[test]
    fn reads_subject_and_names() {
        let id = identity("broker", &["localhost", "127.0.0.1"]);
        assert_eq!(id.dn, "CN=broker");
        let sans: Vec<_> = id.sans.iter().cloned().collect();
        assert_eq!(
            sans,
            vec![(2, "localhost".to_string()), (7, "127.0.0.1".to_string())]
        );
    }

    #[test]
    fn subject_and_dropped_names_are_refused_unless_allowed() {
        let old = identity("broker", &["localhost", "127.0.0.1"]);
        // Same identity, or more names: fine.
        assert!(old.ensure_compatible(&old.clone(), false, false).is_ok());
        let more = identity("broker", &["localhost", "127.0.0.1", "broker.example"]);
        assert!(old.ensure_compatible(&more, false, false).is_ok());
        // Another subject.
        let other = identity("intruder", &["localhost", "127.0.0.1"]);
        let e = old.ensure_compatible(&other, false, false).unwrap_err();
        assert!(
            e.contains("Keystore DistinguishedName does not match:  existing={alias=kafka, DN=CN=broker}, new={alias=kafka, DN=CN=intruder}"),
            "{e}"
        );
        assert!(old.ensure_compatible(&other, true, false).is_ok());
        // A name dropped.
        let fewer = identity("broker", &["localhost"]);
        let e = old.ensure_compatible(&fewer, false, false).unwrap_err();
        assert!(
            e.contains(
                "SAN=[[2, localhost], [7, 127.0.0.1]]}, new={alias=kafka, SAN=[[2, localhost]]}"
            ),
            "{e}"
        );
        assert!(old.ensure_compatible(&fewer, false, true).is_ok());
    }
}
