//! `skiff dev-certs`: a throwaway CA, a server certificate for the given host names and a
//! client certificate, written as PEM files so TLS and mutual TLS can be tried in a minute.
//! For development only: the CA key sits next to the certificates, unencrypted.

use std::path::Path;

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

const WARNING: &str = "\
!!! DEVELOPMENT CERTIFICATES — DO NOT USE IN PRODUCTION !!!
!!! The CA's private key is stored unencrypted next to them; anyone with it can mint     !!!
!!! certificates your broker and clients will trust. Throw them away after testing.     !!!";

fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes `ca.pem`, `ca-key.pem`, `server.pem` (key + chain, Kafka's PEM keystore layout),
/// `client.pem` (key + certificate) and prints the config lines that use them.
pub fn run(dir: &Path, hosts: &[String]) -> anyhow::Result<()> {
    let hosts: Vec<String> = if hosts.is_empty() {
        vec!["localhost".to_string(), "127.0.0.1".to_string()]
    } else {
        hosts.to_vec()
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;

    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.distinguished_name = DistinguishedName::new();
    ca.distinguished_name
        .push(DnType::CommonName, "Skiff development CA (do not trust)");
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca.self_signed(&ca_key)?;

    let mut server = CertificateParams::new(hosts.clone())?;
    server.distinguished_name = DistinguishedName::new();
    server
        .distinguished_name
        .push(DnType::CommonName, hosts[0].as_str());
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_key = KeyPair::generate()?;
    let server_cert = server.signed_by(&server_key, &ca_cert, &ca_key)?;

    let mut client = CertificateParams::new(Vec::<String>::new())?;
    client.distinguished_name = DistinguishedName::new();
    client
        .distinguished_name
        .push(DnType::OrganizationName, "Skiff dev");
    client
        .distinguished_name
        .push(DnType::CommonName, "dev-client");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = KeyPair::generate()?;
    let client_cert = client.signed_by(&client_key, &ca_cert, &ca_key)?;

    write(dir, "ca.pem", &ca_cert.pem())?;
    write(dir, "ca-key.pem", &ca_key.serialize_pem())?;
    write(
        dir,
        "server.pem",
        &format!("{}{}", server_key.serialize_pem(), server_cert.pem()),
    )?;
    write(dir, "client.pem", &client_cert.pem())?;
    write(dir, "client-key.pem", &client_key.serialize_pem())?;

    let d = dir.display();
    eprintln!("{WARNING}");
    println!(
        "# Wrote {d}/ca.pem, ca-key.pem, server.pem (key + chain for {hosts}), client.pem and client-key.pem
# (client subject CN=dev-client,O=Skiff dev, i.e. principal User:CN=dev-client,O=Skiff dev).
# FOR DEVELOPMENT ONLY. Put in the [broker] table of your config:
listeners = \"SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092\"
ssl.keystore.type = \"PEM\"
ssl.keystore.location = \"{d}/server.pem\"
# Mutual TLS (optional):
ssl.truststore.type = \"PEM\"
ssl.truststore.location = \"{d}/ca.pem\"
ssl.client.auth = \"required\"
# Try it: kcat -b 127.0.0.1:9093 -X security.protocol=ssl -X ssl.ca.location={d}/ca.pem \\
#   -X ssl.certificate.location={d}/client.pem -X ssl.key.location={d}/client-key.pem -L",
        hosts = hosts.join(", ")
    );
    eprintln!("{WARNING}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_usable_set() {
        let dir = tempfile::tempdir().unwrap();
        run(
            dir.path(),
            &["localhost".to_string(), "127.0.0.1".to_string()],
        )
        .unwrap();
        for f in [
            "ca.pem",
            "ca-key.pem",
            "server.pem",
            "client.pem",
            "client-key.pem",
        ] {
            let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
            assert!(text.contains("-----BEGIN"), "{f}");
        }
        let server = std::fs::read_to_string(dir.path().join("server.pem")).unwrap();
        assert!(server.contains("PRIVATE KEY") && server.contains("CERTIFICATE"));
        // The broker accepts what was written.
        let (cfg, _) = skiff_config::load(
            None,
            &[
                "listeners=SSL://127.0.0.1:9093".to_string(),
                "ssl.keystore.type=PEM".to_string(),
                format!(
                    "ssl.keystore.location={}",
                    dir.path().join("server.pem").display()
                ),
                "ssl.truststore.type=PEM".to_string(),
                format!(
                    "ssl.truststore.location={}",
                    dir.path().join("ca.pem").display()
                ),
                "ssl.client.auth=required".to_string(),
            ],
            Vec::<(String, String)>::new(),
        )
        .unwrap();
        skiff_broker::net::tls::listener_tls(&cfg, "SSL").unwrap();
    }
}
