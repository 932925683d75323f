//! Who may use the HTTP API (docs/http-api.md §2): Basic with PLAIN and SCRAM users, Bearer
//! JWTs, 401 with a challenge otherwise, ACL refusals that do not reveal whether a topic
//! exists, and HTTPS with the broker's keystore.
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use std::sync::Arc;

use acl_support::{create_acls, creation, ALLOW, LITERAL, READ, TOPIC};
use bytes::Bytes;
use common::http::{basic, get, send, send_over, serve_api};
use common::tables::{compacted_topic, produce};
use http_body_util::Empty;
use hyper::header::{LOCATION, WWW_AUTHENTICATE};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpStream;

/// Kafka's AclOperation code of ALTER.
const ALTER: i8 = 7;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../skiff-auth/tests/fixtures");

const SASL: [&str; 5] = [
    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,OAUTHBEARER",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\" user_bob=\"bob-secret\";",
    "sasl.scram.users=SCRAM-SHA-256=[name=carol,password=carol-secret]",
    "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
];

fn jwt(sub: &str) -> String {
    let pem = std::fs::read(format!("{FIXTURES}/rsa_private.pem")).unwrap();
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(&pem).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"sub": sub, "iat": now - 10, "exp": now + 600, "aud": "kafka"});
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_and_bearer_callers_are_authorized_by_the_acls() {
    let dir = tempfile::tempdir().unwrap();
    let jwks = format!("sasl.oauthbearer.jwks.endpoint.url=file://{FIXTURES}/jwks.json");
    let mut sets = SASL.to_vec();
    sets.extend_from_slice(&[
        &jwks,
        "sasl.oauthbearer.expected.audience=kafka",
        "skiff.http.authentication=basic,bearer",
        "connection.failed.authentication.delay.ms=0",
    ]);
    let broker = acl_support::start(dir.path(), &sets).await;
    compacted_topic(&broker, "table", 1, "compact").await;
    produce(&broker, "table", 0, &[(b"a", Some(b"1"))]).await;
    let allow_read = |who: &str| creation(TOPIC, "table", LITERAL, who, READ, ALLOW);
    let codes = create_acls(
        &broker,
        "admin",
        vec![
            allow_read("User:alice"),
            allow_read("User:carol"),
            allow_read("User:erin"),
            creation(TOPIC, "table", LITERAL, "User:carol", ALTER, ALLOW),
        ],
    )
    .await;
    assert_eq!(codes, vec![0, 0, 0, 0]);
    let api = serve_api(broker.clone()).await;
    let snapshot = "/v1/topics/table/snapshot";

    let r = get(&api, snapshot).await;
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (401, "unauthenticated")
    );
    let challenge = r.headers[WWW_AUTHENTICATE].to_str().unwrap();
    assert!(
        challenge.contains("Basic") && challenge.contains("Bearer"),
        "{challenge}"
    );

    // A PLAIN user, a SCRAM user, a JWT subject: each may read.
    for auth in [
        basic("alice", "alice-secret"),
        basic("carol", "carol-secret"),
        format!("Bearer {}", jwt("erin")),
    ] {
        let r = send(&api, "GET", snapshot, Some(&auth)).await;
        assert_eq!(
            r.status,
            200,
            "{auth}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.lines().last().unwrap()["end_offsets"]["0"], 1);
    }
    // Wrong passwords, an unknown user, a bad token, garbage.
    for auth in [
        basic("alice", "carol-secret"),
        basic("carol", "wrong"),
        basic("nobody", "x"),
        "Bearer not.a.jwt".to_string(),
        "Basic %%%".to_string(),
        "Digest x".to_string(),
    ] {
        let r = send(&api, "GET", snapshot, Some(&auth)).await;
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (401, "unauthenticated"),
            "{auth}"
        );
        assert!(r.headers.contains_key(WWW_AUTHENTICATE));
    }

    // bob has no ACL: the refusal is the same for an existing and a missing topic.
    let bob = basic("bob", "bob-secret");
    let existing = send(&api, "GET", snapshot, Some(&bob)).await;
    let missing = send(&api, "GET", "/v1/topics/nope/snapshot", Some(&bob)).await;
    assert_eq!(existing.status, 403);
    assert_eq!(existing.error_code(), "topic_authorization_failed");
    assert_eq!((missing.status, &missing.body), (403, &existing.body));
    // alice may read, not compact (ALTER) nor see a topic she has no ACL on.
    let alice = basic("alice", "alice-secret");
    let r = send(&api, "POST", "/v1/topics/table/compaction", Some(&alice)).await;
    assert_eq!(r.status, 403);
    let r = send(&api, "GET", "/v1/topics/nope/snapshot", Some(&alice)).await;
    assert_eq!((r.status, &r.body), (403, &existing.body));
    // Key lookups need the same READ: refused alike for bob on an existing and a missing
    // topic; alice passes authorization (the topic has no key index: 409).
    for path in ["/v1/topics/table/keys/a", "/v1/topics/nope/keys/a"] {
        let r = send(&api, "GET", path, Some(&bob)).await;
        assert_eq!((r.status, &r.body), (403, &existing.body), "{path}");
    }
    let r = send(&api, "GET", "/v1/topics/table/keys/a", Some(&alice)).await;
    assert_eq!((r.status, r.error_code().as_str()), (409, "index_disabled"));
    // READ implies DESCRIBE: the dry run is allowed.
    let r = send(
        &api,
        "GET",
        "/v1/topics/table/compaction/dry-run",
        Some(&alice),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // carol may compact (ALTER); the ticket is visible to alice (DESCRIBE), not to bob.
    let carol = basic("carol", "carol-secret");
    let r = send(&api, "POST", "/v1/topics/table/compaction", Some(&carol)).await;
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let ticket = r.headers[LOCATION].to_str().unwrap().to_string();
    assert_eq!(send(&api, "GET", &ticket, Some(&alice)).await.status, 200);
    let r = send(&api, "GET", &ticket, Some(&bob)).await;
    assert_eq!((r.status, &r.body), (403, &existing.body));
    // /metrics on the API: authenticated, and DESCRIBE on the cluster.
    assert_eq!(get(&api, "/metrics").await.status, 401);
    let r = send(&api, "GET", "/metrics", Some(&bob)).await;
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (403, "cluster_authorization_failed")
    );
    broker.shutdown().unwrap();
}

#[tokio::test]
async fn bearer_without_an_oauthbearer_listener_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&["skiff.http.authentication=bearer"])
        .start()
        .await;
    let e = skiff_broker::http::from_config(broker.clone())
        .err()
        .unwrap();
    assert!(e.contains("OAUTHBEARER"), "{e}");
    broker.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_the_broker_keystore() {
    use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair};
    use rustls::pki_types::ServerName;

    let dir = tempfile::tempdir().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name = DistinguishedName::new();
    ca.distinguished_name.push(DnType::CommonName, "test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca.self_signed(&ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let keystore = dir.path().join("server.pem");
    std::fs::write(
        &keystore,
        format!("{}{}", server_key.serialize_pem(), server.pem()),
    )
    .unwrap();
    let location = format!("ssl.keystore.location={}", keystore.display());
    let broker = common::broker(&dir.path().join("data"))
        .sets(&[
            "skiff.http.ssl.enabled=true",
            "ssl.keystore.type=PEM",
            &location,
        ])
        .start()
        .await;
    let api = serve_api(broker.clone()).await;

    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(api.addr).await.unwrap();
    let tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let r = send_over(tls, "GET", "/metrics", None).await;
    assert_eq!(r.status, 200);
    assert!(!r.body.is_empty());
    // Plain HTTP to the TLS port gets no HTTP answer.
    let tcp = TcpStream::connect(api.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let plain = hyper::Request::builder()
        .uri("/metrics")
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    assert!(sender.send_request(plain).await.is_err());
    broker.shutdown().unwrap();
}
