//! SSL listeners end to end over real sockets: a rustls client against the broker's TLS
//! listener, with certificates made for the test (rcgen). Covers server TLS, mutual TLS
//! required with and without a client certificate (the broker keeps serving), plaintext bytes
//! sent to the TLS port, a stalled handshake (bounded by `connections.max.idle.ms`), and the
//! principal of the client certificate reaching the request's context (the `principal` field
//! of the `request` span, which is built from `RequestContext::principal`), and the reload of
//! certificates without restart (file replaced on disk; IncrementalAlterConfigs of a
//! listener-prefixed keystore location).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, ResponseHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A CA, a server certificate for 127.0.0.1/localhost, a client certificate of `CN=alice,O=Acme`
/// signed by the CA, and another from an untrusted CA.
struct Pki {
    ca: (rcgen::Certificate, KeyPair),
    ca_pem: String,
    server_pem: String,
    client: (Vec<CertificateDer<'static>>, String),
    stranger: (Vec<CertificateDer<'static>>, String),
}

fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    (p.self_signed(&key).unwrap(), key)
}

fn client_cert(
    ca: &rcgen::Certificate,
    ca_key: &KeyPair,
    cn: &str,
) -> (Vec<CertificateDer<'static>>, String) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::OrganizationName, "Acme");
    p.distinguished_name.push(DnType::CommonName, cn);
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, ca, ca_key).unwrap();
    (vec![cert.der().clone()], key.serialize_pem())
}

/// A server certificate for 127.0.0.1 signed by `ca`, as a PEM keystore (key + chain).
fn server_pem(ca: &(rcgen::Certificate, KeyPair)) -> String {
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .unwrap()
        .signed_by(&server_key, &ca.0, &ca.1)
        .unwrap();
    format!("{}{}", server_key.serialize_pem(), server.pem())
}

/// A server certificate signed by `ca` with subject `CN=cn` and the names `sans`.
fn server_pem_named(ca: &(rcgen::Certificate, KeyPair), cn: &str, sans: &[&str]) -> String {
    let key = KeyPair::generate().unwrap();
    let mut p =
        CertificateParams::new(sans.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::CommonName, cn);
    let cert = p.signed_by(&key, &ca.0, &ca.1).unwrap();
    format!("{}{}", key.serialize_pem(), cert.pem())
}

fn pki() -> Pki {
    let ca = ca("test CA");
    let (other_ca, other_key) = self::ca("other CA");
    Pki {
        ca_pem: ca.0.pem(),
        server_pem: server_pem(&ca),
        client: client_cert(&ca.0, &ca.1, "alice"),
        stranger: client_cert(&other_ca, &other_key, "mallory"),
        ca,
    }
}

struct Tls {
    addr: std::net::SocketAddr,
    pki: Pki,
    certs: std::path::PathBuf,
    served: common::Served,
    _dir: tempfile::TempDir,
}

async fn start(client_auth: &str, extra: &[&str]) -> Tls {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::write(certs.join("server.pem"), &pki.server_pem).unwrap();
    std::fs::write(certs.join("ca.pem"), &pki.ca_pem).unwrap();
    let p = |f: &str| certs.join(f).display().to_string();
    let mut sets = vec![
        "listeners=SSL://127.0.0.1:0".to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", p("server.pem")),
        "listener.name.ssl.ssl.truststore.type=PEM".to_string(),
        format!("listener.name.ssl.ssl.truststore.location={}", p("ca.pem")),
        format!("listener.name.ssl.ssl.client.auth={client_auth}"),
        "ssl.principal.mapping.rules=RULE:^CN=([^,]*),O=Acme$/$1/, DEFAULT".to_string(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let data = dir.path().join("data");
    let served = common::broker(&data).sets(&sets).serve().await;
    Tls {
        addr: served.addr,
        pki,
        certs,
        served,
        _dir: dir,
    }
}

fn connector(
    pki: &Pki,
    client: Option<&(Vec<CertificateDer<'static>>, String)>,
) -> tokio_rustls::TlsConnector {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(pki.ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        Some((chain, key)) => builder
            .with_client_auth_cert(
                chain.clone(),
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

fn frame(correlation_id: i32) -> Bytes {
    frame_from(correlation_id, "tls-test")
}

/// An ApiVersions request frame with `client_id`.
fn frame_from(correlation_id: i32, client_id: &'static str) -> Bytes {
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("tls-test"))
        .with_client_software_version(StrBytes::from_static_str("1"));
    common::request_frame(ApiKey::ApiVersions, 3, correlation_id, client_id, &request)
}

/// One ApiVersions round trip; `None` when the connection failed or closed.
async fn api_versions<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, id: i32) -> Option<()> {
    api_versions_from(s, id, "tls-test").await
}

async fn api_versions_from<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    id: i32,
    client_id: &'static str,
) -> Option<()> {
    s.write_all(&frame_from(id, client_id)).await.ok()?;
    s.flush().await.ok()?;
    let mut body = common::read_frame(s, Duration::from_secs(5)).await?;
    let header = ResponseHeader::decode(&mut body, 0).ok()?;
    assert_eq!(header.correlation_id, id);
    let response = ApiVersionsResponse::decode(&mut body, 3).ok()?;
    assert_eq!(response.error_code, 0);
    Some(())
}

async fn tls_connect(
    t: &Tls,
    client: Option<&(Vec<CertificateDer<'static>>, String)>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(t.addr).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    connector(&t.pki, client).connect(name, tcp).await
}

#[tokio::test]
async fn server_tls_serves_requests_and_refuses_plaintext_bytes() {
    let t = start("none", &[]).await;
    let mut s = tls_connect(&t, None).await.unwrap();
    for id in 1..=3 {
        api_versions(&mut s, id)
            .await
            .expect("ApiVersions over TLS");
    }
    // A Kafka request in clear to the TLS port: the handshake fails, the socket is closed.
    let mut plain = TcpStream::connect(t.addr).await.unwrap();
    plain.write_all(&frame(9)).await.unwrap();
    assert!(
        common::closed_within(&mut plain, Duration::from_secs(3)).await,
        "plaintext bytes to the TLS port must get the connection closed"
    );
    // The TLS client is still served.
    api_versions(&mut s, 4).await.expect("still served");
}

#[tokio::test]
async fn mutual_tls_required_refuses_clients_without_a_trusted_certificate() {
    let t = start("required", &[]).await;
    // No client certificate: with TLS 1.3 the failure shows on the first read.
    let refused = match tls_connect(&t, None).await {
        Err(_) => true,
        Ok(mut s) => api_versions(&mut s, 1).await.is_none(),
    };
    assert!(refused, "a client without a certificate must be refused");
    let refused = match tls_connect(&t, Some(&t.pki.stranger)).await {
        Err(_) => true,
        Ok(mut s) => api_versions(&mut s, 1).await.is_none(),
    };
    assert!(
        refused,
        "a certificate from an untrusted CA must be refused"
    );
    // The broker keeps serving clients with a good certificate.
    let mut s = tls_connect(&t, Some(&t.pki.client)).await.unwrap();
    api_versions(&mut s, 2).await.expect("mTLS client served");
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_after_connections_max_idle_ms() {
    let t = start("none", &["connections.max.idle.ms=500"]).await;
    let started = Instant::now();
    let mut stalled = TcpStream::connect(t.addr).await.unwrap();
    // Half a TLS record header, then nothing.
    stalled.write_all(&[0x16, 0x03]).await.unwrap();
    assert!(
        common::closed_within(&mut stalled, Duration::from_secs(5)).await,
        "a stalled handshake must be closed"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    let mut s = tls_connect(&t, None).await.unwrap();
    api_versions(&mut s, 1).await.expect("served after");
}

// ---- the principal reaches the request context ----------------------------------------------

type Fields = BTreeMap<String, String>;

/// (last span id, span id -> (name, fields)).
type Spans = (u64, HashMap<u64, (String, Fields)>);

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Spans>>);

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut state = self.0.lock().unwrap();
        state.0 += 1;
        let id = state.0;
        let mut fields = Fields::new();
        span.record(&mut Collect(&mut fields));
        state
            .1
            .insert(id, (span.metadata().name().to_string(), fields));
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut state = self.0.lock().unwrap();
        if let Some((_, fields)) = state.1.get_mut(&span.into_u64()) {
            values.record(&mut Collect(fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn request_principals(recorder: &Recorder) -> Vec<(String, String)> {
    let state = recorder.0.lock().unwrap();
    let mut out: Vec<(String, String)> = state
        .1
        .values()
        .filter(|(name, _)| name == "request")
        .map(|(_, f)| {
            (
                f.get("client_id").cloned().unwrap_or_default(),
                f.get("principal").cloned().unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

// The recorder is the process's global subscriber (this is the only test that sets one): a
// per-thread default races with the callsite interest other tests' threads cache meanwhile.
// Other tests' spans are recorded too; this test's requests carry their own client id.
#[tokio::test]
async fn the_client_certificate_principal_reaches_the_request_context() {
    const CLIENT: &str = "principal-test";
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(recorder.clone()).expect("no other global subscriber");
    let t = start("requested", &[]).await;
    let mut alice = tls_connect(&t, Some(&t.pki.client)).await.unwrap();
    api_versions_from(&mut alice, 1, CLIENT)
        .await
        .expect("alice served");
    let mut anonymous = tls_connect(&t, None).await.unwrap();
    api_versions_from(&mut anonymous, 2, CLIENT)
        .await
        .expect("anonymous served (requested)");
    let principals = request_principals(&recorder);
    assert!(
        principals.contains(&(CLIENT.to_string(), "User:alice".to_string())),
        "the mapped subject CN=alice,O=Acme -> alice: {principals:?}"
    );
    assert!(
        principals.contains(&(CLIENT.to_string(), "User:ANONYMOUS".to_string())),
        "no client certificate: User:ANONYMOUS: {principals:?}"
    );
}

#[tokio::test]
async fn bad_tls_settings_fail_the_listener_check() {
    let dir = tempfile::tempdir().unwrap();
    let missing: &Path = &dir.path().join("nope.pem");
    let (cfg, _) = skiff_config::load(
        None,
        &[
            "listeners=SSL://127.0.0.1:0".to_string(),
            "ssl.keystore.type=PEM".to_string(),
            format!("ssl.keystore.location={}", missing.display()),
        ],
        Vec::<(String, String)>::new(),
    )
    .unwrap();
    let e = skiff_broker::net::tls::listener_tls(&cfg, "SSL").unwrap_err();
    assert!(e.contains("nope.pem"), "{e}");
}

// ---- reload without restart ------------------------------------------------------------------

/// The certificate the server presents to a new connection.
async fn presented(t: &Tls) -> Vec<u8> {
    let mut s = tls_connect(t, None).await.unwrap();
    api_versions(&mut s, 1).await.expect("served");
    s.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

/// Writes `text` to `path` with a modification time clearly after the previous one.
fn replace(path: &Path, text: &str, ahead_secs: u64) {
    std::fs::write(path, text).unwrap();
    let when = std::time::SystemTime::now() + Duration::from_secs(ahead_secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn first_cert_der(pem: &str) -> Vec<u8> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

#[tokio::test]
async fn certificates_are_reloaded_from_disk_and_by_incremental_alter_configs() {
    let t = start("none", &[]).await;
    let first = presented(&t).await;
    assert_eq!(first, first_cert_der(&t.pki.server_pem));

    // The file is replaced on disk: the next connection gets the new certificate.
    let second_pem = server_pem(&t.pki.ca);
    replace(&t.certs.join("server.pem"), &second_pem, 10);
    assert_eq!(
        presented(&t).await,
        first_cert_der(&second_pem),
        "reloaded from disk"
    );

    // A broken file: the previous certificate stays in use.
    replace(&t.certs.join("server.pem"), "not a pem", 20);
    assert_eq!(
        presented(&t).await,
        first_cert_der(&second_pem),
        "kept on a bad file"
    );

    // IncrementalAlterConfigs of the listener-prefixed location, as Kafka's kafka-configs.
    let third_pem = server_pem(&t.pki.ca);
    let third = t.certs.join("server3.pem");
    std::fs::write(&third, &third_pem).unwrap();
    let (code, message) = set_broker_config(
        &t,
        "listener.name.ssl.ssl.keystore.location",
        &third.display().to_string(),
        false,
    )
    .await;
    assert_eq!(code, 0, "{message}");
    assert_eq!(
        presented(&t).await,
        first_cert_der(&third_pem),
        "reloaded by AlterConfigs"
    );
}

/// IncrementalAlterConfigs SET of `key` on broker 1; the code and message of the answer.
async fn set_broker_config(
    t: &Tls,
    key: &'static str,
    value: &str,
    validate_only: bool,
) -> (i16, String) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{IncrementalAlterConfigsRequest, RequestKind, ResponseKind};
    let request = IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_static_str("1"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_static_str(key))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_string(value.to_string())))])]);
    let response = common::call(
        &t.served.broker,
        ApiKey::IncrementalAlterConfigs,
        1,
        RequestKind::IncrementalAlterConfigs(request),
    )
    .await;
    let ResponseKind::IncrementalAlterConfigs(response) = response else {
        panic!("{response:?}")
    };
    let r = &response.responses[0];
    (
        r.error_code,
        r.error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

#[tokio::test]
async fn an_altered_tls_store_is_checked_before_it_is_accepted() {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    use kafka_protocol::messages::{AlterConfigsRequest, RequestKind, ResponseKind};

    let t = start("required", &[]).await;
    let client = Some(&t.pki.client);
    let first = first_cert_der(&t.pki.server_pem);
    let presented_now = || async {
        let mut s = tls_connect(&t, client).await.unwrap();
        api_versions(&mut s, 1).await.expect("served");
        s.get_ref().1.peer_certificates().unwrap()[0].to_vec()
    };
    assert_eq!(presented_now().await, first);
    const KEYSTORE: &str = "listener.name.ssl.ssl.keystore.location";

    // A keystore that does not exist: INVALID_REQUEST with Kafka's text and the cause.
    let missing = t.certs.join("missing.pem").display().to_string();
    let (code, message) = set_broker_config(&t, KEYSTORE, &missing, false).await;
    assert_eq!(code, 42, "{message}");
    assert!(
        message.contains("Validation of dynamic config update of SSLFactory failed")
            && message.contains("missing.pem"),
        "{message}"
    );

    // A key that does not belong to the certificate.
    let other = server_pem(&t.pki.ca);
    let key_end = other.find("-----BEGIN CERTIFICATE-----").unwrap();
    let cert_start = t
        .pki
        .server_pem
        .find("-----BEGIN CERTIFICATE-----")
        .unwrap();
    let mismatched = t.certs.join("mismatched.pem");
    std::fs::write(
        &mismatched,
        format!("{}{}", &other[..key_end], &t.pki.server_pem[cert_start..]),
    )
    .unwrap();
    let (code, message) =
        set_broker_config(&t, KEYSTORE, &mismatched.display().to_string(), false).await;
    assert_eq!(code, 42, "{message}");
    assert!(message.contains("do not go together"), "{message}");
    assert_eq!(
        presented_now().await,
        first,
        "refused changes are not applied"
    );

    // A good keystore with validate_only: accepted, not applied.
    let good = t.certs.join("good.pem");
    std::fs::write(&good, &other).unwrap();
    let good = good.display().to_string();
    assert_eq!(set_broker_config(&t, KEYSTORE, &good, true).await.0, 0);
    assert_eq!(
        presented_now().await,
        first,
        "validate_only changes nothing"
    );

    // A truststore without a certificate, by the legacy AlterConfigs: refused too, and the
    // clients the current truststore trusts are still served.
    let empty = t.certs.join("empty-ca.pem");
    std::fs::write(&empty, "no certificates here\n").unwrap();
    let request =
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_static_str("1"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_static_str(
                    "listener.name.ssl.ssl.truststore.location",
                ))
                .with_value(Some(StrBytes::from_string(empty.display().to_string())))])]);
    let response = common::call(
        &t.served.broker,
        ApiKey::AlterConfigs,
        2,
        RequestKind::AlterConfigs(request),
    )
    .await;
    let ResponseKind::AlterConfigs(response) = response else {
        panic!("{response:?}")
    };
    let r = &response.responses[0];
    let message = r.error_message.as_ref().map(|m| m.to_string());
    assert_eq!(r.error_code, 42, "{message:?}");
    assert!(
        message.as_deref().is_some_and(|m| m.contains("truststore")),
        "{message:?}"
    );
    assert_eq!(presented_now().await, first);

    // The good keystore for real: the next connection presents it.
    assert_eq!(set_broker_config(&t, KEYSTORE, &good, false).await.0, 0);
    assert_eq!(presented_now().await, first_cert_der(&other));
}

#[tokio::test]
async fn tls_garbage_is_closed_in_bounded_time_and_others_stay_served() {
    let t = start("requested", &["connections.max.idle.ms=1000"]).await;
    let mut good = tls_connect(&t, None).await.unwrap();
    let mut noise = common::Noise(0x005e_ed0f_7157);
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for i in 0..60 {
        let len = (noise.next() % 2048) as usize;
        let mut bytes = match i % 3 {
            // Random bytes.
            0 => noise.bytes(len),
            // A handshake record header with a random length, then random content.
            1 => {
                let mut b = vec![0x16, 0x03, 0x01];
                b.extend_from_slice(&(len as u16).to_be_bytes());
                b.extend(noise.bytes(len));
                b
            }
            // A record that claims more than it sends, then stalls: illegal lengths fail at
            // once, plausible ones wait for connections.max.idle.ms.
            _ => {
                let claimed = if i % 2 == 0 { 0xffff } else { 16_000 };
                let mut b = vec![0x16, 0x03, 0x03];
                b.extend_from_slice(&(claimed as u16).to_be_bytes());
                b.extend(noise.bytes(len.min(1000)));
                b
            }
        };
        bytes.truncate(4096);
        cases.push(bytes);
    }
    // The good client keeps talking while the garbage arrives (and so is never idle).
    let pinger = tokio::spawn(async move {
        for id in 1..=15 {
            api_versions(&mut good, id).await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Some(())
    });
    let mut all = tokio::task::JoinSet::new();
    for (i, bytes) in cases.into_iter().enumerate() {
        let addr = t.addr;
        all.spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let _ = s.write_all(&bytes).await; // the broker may close before all is sent
            let closed = common::closed_within(&mut s, Duration::from_secs(5)).await;
            (i, closed, bytes.len(), bytes[..bytes.len().min(8)].to_vec())
        });
    }
    while let Some(done) = all.join_next().await {
        let (i, closed, len, head) = done.unwrap();
        assert!(
            closed,
            "case {i} ({len} bytes starting {head:02x?}) left open"
        );
    }
    pinger
        .await
        .unwrap()
        .expect("the open TLS client is served throughout");
    let mut s = tls_connect(&t, Some(&t.pki.client)).await.unwrap();
    api_versions(&mut s, 1)
        .await
        .expect("a new client is served");
}

#[tokio::test]
async fn a_reloaded_certificate_keeps_its_subject_and_names_unless_allowed() {
    const KEYSTORE: &str = "listener.name.ssl.ssl.keystore.location";
    let t = start("none", &[]).await;
    let first = first_cert_der(&t.pki.server_pem);
    let write = |name: &str, pem: &str| {
        let path = t.certs.join(name);
        std::fs::write(&path, pem).unwrap();
        path.display().to_string()
    };
    let names = ["127.0.0.1", "localhost"];
    // Another subject through IncrementalAlterConfigs: Kafka's refusal, nothing applied.
    let renamed = write(
        "renamed.pem",
        &server_pem_named(&t.pki.ca, "intruder", &names),
    );
    let (code, message) = set_broker_config(&t, KEYSTORE, &renamed, false).await;
    assert_eq!(code, 42, "{message}");
    assert!(
        message.contains("Keystore DistinguishedName does not match:  existing={alias=kafka, DN=CN=rcgen self signed cert}, new={alias=kafka, DN=CN=intruder}"),
        "{message}"
    );
    // A dropped name, also checked with validate_only.
    let fewer_pem = server_pem_named(&t.pki.ca, "rcgen self signed cert", &["127.0.0.1"]);
    let fewer = write("fewer.pem", &fewer_pem);
    let (code, message) = set_broker_config(&t, KEYSTORE, &fewer, true).await;
    assert_eq!(code, 42, "{message}");
    assert!(
        message.contains("Keystore SubjectAltNames do not match"),
        "{message}"
    );
    // An added name is fine.
    let more_pem = server_pem_named(
        &t.pki.ca,
        "rcgen self signed cert",
        &["127.0.0.1", "localhost", "broker.example"],
    );
    let more = write("more.pem", &more_pem);
    assert_eq!(set_broker_config(&t, KEYSTORE, &more, false).await.0, 0);
    assert_eq!(presented(&t).await, first_cert_der(&more_pem));
    assert_ne!(presented(&t).await, first);
    // The same file replaced on disk with another subject: not picked up.
    replace(
        Path::new(&more),
        &server_pem_named(&t.pki.ca, "intruder", &names),
        10,
    );
    assert_eq!(
        presented(&t).await,
        first_cert_der(&more_pem),
        "a certificate with another subject is not loaded from disk"
    );

    // With ssl.allow.dn.changes and ssl.allow.san.changes, both kinds of change are taken.
    let t = start(
        "none",
        &["ssl.allow.dn.changes=true", "ssl.allow.san.changes=true"],
    )
    .await;
    let other_pem = server_pem_named(&t.pki.ca, "renamed", &["127.0.0.1"]);
    let other = t.certs.join("other.pem");
    std::fs::write(&other, &other_pem).unwrap();
    let (code, message) =
        set_broker_config(&t, KEYSTORE, &other.display().to_string(), false).await;
    assert_eq!(code, 0, "{message}");
    assert_eq!(presented(&t).await, first_cert_der(&other_pem));
}

#[tokio::test]
async fn an_encrypted_key_is_served_with_ssl_key_password() {
    let keys = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/keys");
    let plain = std::fs::read_to_string(format!("{keys}/plain.pem")).unwrap();
    let key = KeyPair::from_pem(&plain).unwrap();
    let pki = pki();
    let cert = CertificateParams::new(vec!["127.0.0.1".into()])
        .unwrap()
        .signed_by(&key, &pki.ca.0, &pki.ca.1)
        .unwrap();
    for scheme in ["pbe-sha1-3des.pem", "pbes2-aes256.pem"] {
        let dir = tempfile::tempdir().unwrap();
        let encrypted = std::fs::read_to_string(format!("{keys}/{scheme}")).unwrap();
        let store = dir.path().join("server.pem");
        std::fs::write(&store, format!("{encrypted}{}", cert.pem())).unwrap();
        let location = format!("ssl.keystore.location={}", store.display());
        let served = common::broker(&dir.path().join("data"))
            .sets(&[
                "listeners=SSL://127.0.0.1:0",
                "ssl.keystore.type=PEM",
                &location,
                "ssl.key.password=kafka-secret",
            ])
            .serve()
            .await;
        // The client trusts the CA that signed the certificate.
        let tcp = TcpStream::connect(served.addr).await.unwrap();
        let mut s = connector(&pki, None)
            .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
            .await
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        api_versions(&mut s, 1).await.expect(scheme);
        assert_eq!(
            s.get_ref().1.peer_certificates().unwrap()[0].as_ref(),
            cert.der().as_ref()
        );
    }
}
