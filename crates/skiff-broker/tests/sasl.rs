//! SASL_PLAINTEXT and SASL_SSL listeners over real sockets, with a raw Kafka client written
//! here (kafka-protocol encoding, skiff-auth's SCRAM client, JWTs signed with skiff-auth's
//! fixture keys): PLAIN, SCRAM-SHA-256/512 (bootstrap users and a user added through
//! AlterUserScramCredentials), OAUTHBEARER, the state machine's refusals (request before
//! authentication, unknown mechanism, oversized token, stalled exchange), the v0 raw-token
//! path, KIP-368 re-authentication, the principal reaching the ACL authorizer, and SASL over
//! TLS.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use skiff_auth::scram::client::ScramClient;
use skiff_auth::scram::ScramMechanism;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const PLAIN_JAAS: &str = "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\" user_bob=\"bob-secret\";";
const SCRAM_USERS: &str = "sasl.scram.users=SCRAM-SHA-256=[name=carol,password=carol-secret]\nSCRAM-SHA-512=[name=carol,password=carol-secret]";
const MECHANISMS: &str =
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512";
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../skiff-auth/tests/fixtures");

struct Sasl {
    served: common::Served,
    _dir: tempfile::TempDir,
}

async fn start(extra: &[&str]) -> Sasl {
    let dir = tempfile::tempdir().unwrap();
    let mut sets = vec![
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        MECHANISMS,
        PLAIN_JAAS,
        SCRAM_USERS,
        "connection.failed.authentication.delay.ms=0",
    ];
    sets.extend_from_slice(extra);
    let served = common::broker(&dir.path().join("data"))
        .sets(&sets)
        .serve()
        .await;
    Sasl { served, _dir: dir }
}

/// Sends one request and returns the response body (after the header), or `None` when the
/// connection closed.
async fn send<S, R>(s: &mut S, key: ApiKey, version: i16, id: i32, request: &R) -> Option<Bytes>
where
    S: AsyncRead + AsyncWrite + Unpin,
    R: Encodable,
{
    let frame = common::request_frame(key, version, id, "sasl-test", request);
    s.write_all(&frame).await.ok()?;
    let mut body = read_frame(s).await?;
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).ok()?;
    assert_eq!(header.correlation_id, id);
    Some(body)
}

async fn read_frame<S: AsyncRead + Unpin>(s: &mut S) -> Option<Bytes> {
    common::read_frame(s, Duration::from_secs(10)).await
}

async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    version: i16,
    mechanism: &str,
) -> SaslHandshakeResponse {
    let req =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.into()));
    let mut body = send(s, ApiKey::SaslHandshake, version, 1, &req)
        .await
        .expect("handshake answered");
    SaslHandshakeResponse::decode(&mut body, version).unwrap()
}

async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    version: i16,
    token: &[u8],
) -> Option<SaslAuthenticateResponse> {
    let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token));
    let mut body = send(s, ApiKey::SaslAuthenticate, version, 2, &req).await?;
    Some(SaslAuthenticateResponse::decode(&mut body, version).unwrap())
}

/// A Metadata request for `topics`; `None` when the connection closed.
async fn metadata<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    topics: &[&str],
) -> Option<MetadataResponse> {
    let req = MetadataRequest::default().with_topics(Some(
        topics
            .iter()
            .map(|t| {
                metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(t.to_string()))))
            })
            .collect(),
    ));
    let mut body = send(s, ApiKey::Metadata, 12, 3, &req).await?;
    Some(MetadataResponse::decode(&mut body, 12).unwrap())
}

fn plain(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}

/// A full PLAIN login with SaslHandshake v1 / SaslAuthenticate v2.
async fn login_plain(
    t: &Sasl,
    user: &str,
    password: &str,
) -> (TcpStream, SaslAuthenticateResponse) {
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 1, "PLAIN").await.error_code, 0);
    let r = authenticate(&mut s, 2, &plain(user, password))
        .await
        .unwrap();
    (s, r)
}

/// A full SCRAM login; returns the stream and the last response.
async fn login_scram<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    mechanism: ScramMechanism,
    user: &str,
    password: &str,
) -> SaslAuthenticateResponse {
    assert_eq!(handshake(s, 1, mechanism.name()).await.error_code, 0);
    let client = ScramClient::new(mechanism, user, "fyko+d2lbbFgONRv9qkxdawL");
    let first = authenticate(s, 2, &client.first()).await.unwrap();
    if first.error_code != 0 {
        return first; // e.g. an unknown user
    }
    let (last, expected_final) = client.last(&first.auth_bytes, password);
    let r = authenticate(s, 2, &last).await.unwrap();
    if r.error_code == 0 {
        assert_eq!(&r.auth_bytes[..], &expected_final[..], "server signature");
    }
    r
}

#[tokio::test]
async fn plain_logs_in_and_a_wrong_password_fails_and_closes() {
    let t = start(&[]).await;
    let (mut s, r) = login_plain(&t, "alice", "alice-secret").await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert!(metadata(&mut s, &[]).await.is_some(), "served after login");

    let (mut s, r) = login_plain(&t, "alice", "wrong").await;
    assert_eq!(r.error_code, 58);
    assert_eq!(
        r.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(common::closed_within(&mut s, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn failed_authentication_is_answered_after_the_configured_delay() {
    let t = start(&["connection.failed.authentication.delay.ms=400"]).await;
    let started = Instant::now();
    let (_s, r) = login_plain(&t, "alice", "wrong").await;
    assert_eq!(r.error_code, 58);
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn scram_sha_256_and_512_log_in_and_a_bad_proof_fails() {
    let t = start(&[]).await;
    for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
        let mut s = TcpStream::connect(t.served.addr).await.unwrap();
        let r = login_scram(&mut s, m, "carol", "carol-secret").await;
        assert_eq!(r.error_code, 0, "{m:?}: {:?}", r.error_message);
        assert!(metadata(&mut s, &[]).await.is_some());

        let mut s = TcpStream::connect(t.served.addr).await.unwrap();
        let r = login_scram(&mut s, m, "carol", "not-carols").await;
        assert_eq!(r.error_code, 58, "{m:?}");
        assert_eq!(
            r.error_message.as_deref(),
            Some(format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {}", m.name()).as_str())
        );
        assert!(common::closed_within(&mut s, Duration::from_secs(5)).await);
    }
}

#[tokio::test]
async fn a_user_added_with_alter_user_scram_credentials_logs_in_at_once() {
    let t = start(&[]).await;
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    let r = login_scram(&mut s, ScramMechanism::Sha256, "dave", "dave-secret").await;
    assert_eq!(r.error_code, 58, "no credential yet");

    let salt = b"some-salt-for-dave".to_vec();
    let salted = ScramMechanism::Sha256.salted_password(b"dave-secret", &salt, 4096);
    let upsert = alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
        .with_name(StrBytes::from_static_str("dave"))
        .with_mechanism(ScramMechanism::Sha256.kafka_type())
        .with_iterations(4096)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted));
    let body = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsert]);
    match common::call(
        &t.served.broker,
        ApiKey::AlterUserScramCredentials,
        0,
        RequestKind::AlterUserScramCredentials(body),
    )
    .await
    {
        ResponseKind::AlterUserScramCredentials(r) => assert_eq!(r.results[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    let r = login_scram(&mut s, ScramMechanism::Sha256, "dave", "dave-secret").await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
}

#[tokio::test]
async fn requests_before_authentication_close_the_connection() {
    let t = start(&[]).await;
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert!(metadata(&mut s, &[]).await.is_none(), "no answer");
    assert!(common::closed_within(&mut s, Duration::from_secs(5)).await);

    // ApiVersions then SaslHandshake is the normal start; then another request type closes.
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    let req = ApiVersionsRequest::default();
    let mut body = send(&mut s, ApiKey::ApiVersions, 3, 9, &req).await.unwrap();
    let versions = ApiVersionsResponse::decode(&mut body, 3).unwrap();
    let range = |k: ApiKey| {
        versions
            .api_keys
            .iter()
            .find(|a| a.api_key == k as i16)
            .map(|a| (a.min_version, a.max_version))
    };
    assert_eq!(range(ApiKey::SaslHandshake), Some((0, 1)));
    assert_eq!(range(ApiKey::SaslAuthenticate), Some((0, 2)));
    assert_eq!(handshake(&mut s, 1, "PLAIN").await.error_code, 0);
    assert!(
        metadata(&mut s, &[]).await.is_none(),
        "Metadata instead of SaslAuthenticate"
    );
}

#[tokio::test]
async fn an_unknown_mechanism_is_answered_with_the_enabled_list_then_closed() {
    let t = start(&[]).await;
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    for m in ["GSSAPI", "OAUTHBEARER"] {
        let mut s2 = TcpStream::connect(t.served.addr).await.unwrap();
        let r = handshake(&mut s2, 1, m).await;
        assert_eq!(r.error_code, 33, "{m}");
        let names: Vec<String> = r.mechanisms.iter().map(|m| m.to_string()).collect();
        assert_eq!(names, vec!["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
        assert!(common::closed_within(&mut s2, Duration::from_secs(5)).await);
    }
    // The broker still serves others.
    assert_eq!(handshake(&mut s, 0, "PLAIN").await.error_code, 0);
}

#[tokio::test]
async fn handshake_v0_then_raw_tokens() {
    let t = start(&[]).await;
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 0, "PLAIN").await.error_code, 0);
    let token = plain("bob", "bob-secret");
    let mut raw = (token.len() as i32).to_be_bytes().to_vec();
    raw.extend_from_slice(&token);
    s.write_all(&raw).await.unwrap();
    let answer = read_frame(&mut s).await.expect("an empty raw token");
    assert!(answer.is_empty());
    assert!(
        metadata(&mut s, &[]).await.is_some(),
        "served after raw login"
    );

    // SCRAM over raw tokens, and a wrong password: closed without an answer.
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 0, "SCRAM-SHA-512").await.error_code, 0);
    let client = ScramClient::new(ScramMechanism::Sha512, "carol", "abcdefghijkl");
    let send_raw = |t: Vec<u8>| {
        let mut f = (t.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(&t);
        f
    };
    s.write_all(&send_raw(client.first())).await.unwrap();
    let server_first = read_frame(&mut s).await.unwrap();
    let (last, expected) = client.last(&server_first, "carol-secret");
    s.write_all(&send_raw(last)).await.unwrap();
    assert_eq!(read_frame(&mut s).await.unwrap(), Bytes::from(expected));

    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 0, "PLAIN").await.error_code, 0);
    s.write_all(&send_raw(plain("bob", "nope"))).await.unwrap();
    assert!(common::closed_within(&mut s, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn an_oversized_token_closes_the_connection() {
    let t = start(&["sasl.server.max.receive.size=1000"]).await;
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 1, "PLAIN").await.error_code, 0);
    let big = vec![b'x'; 2000];
    assert!(authenticate(&mut s, 2, &big).await.is_none());
    assert!(common::closed_within(&mut s, Duration::from_secs(5)).await);
    // Within the limit, the same client gets an answer.
    let (_, r) = login_plain(&t, "alice", "alice-secret").await;
    assert_eq!(r.error_code, 0);
}

#[tokio::test]
async fn a_stalled_exchange_is_closed_in_bounded_time() {
    let t = start(&["connections.max.idle.ms=1000"]).await;
    // Stalls after the handshake.
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 1, "SCRAM-SHA-256").await.error_code, 0);
    let started = Instant::now();
    assert!(common::closed_within(&mut s, Duration::from_secs(5)).await);
    assert!(started.elapsed() < Duration::from_secs(3));
    // Trickles bytes (activity that would keep an idle check happy): still closed.
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    s.write_all(&[0, 0, 0, 100]).await.unwrap();
    let started = Instant::now();
    let mut closed = false;
    for _ in 0..40 {
        if s.write_all(&[0]).await.is_err() {
            closed = true;
            break;
        }
        if common::closed_within(&mut s, Duration::from_millis(100)).await {
            closed = true;
            break;
        }
    }
    assert!(closed, "trickling client still open");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn kip_368_sessions_expire_unless_the_client_re_authenticates() {
    let t = start(&["connections.max.reauth.ms=1500"]).await;
    let (mut lazy, r) = login_plain(&t, "alice", "alice-secret").await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.session_lifetime_ms, 1500);
    let (mut diligent, _) = login_plain(&t, "alice", "alice-secret").await;
    // v0 SaslAuthenticate has no session_lifetime_ms field.
    let mut old = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut old, 1, "PLAIN").await.error_code, 0);
    let r0 = authenticate(&mut old, 0, &plain("alice", "alice-secret"))
        .await
        .unwrap();
    assert_eq!((r0.error_code, r0.session_lifetime_ms), (0, 0));

    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Re-authentication: same mechanism and principal.
    assert_eq!(handshake(&mut diligent, 1, "PLAIN").await.error_code, 0);
    let r = authenticate(&mut diligent, 1, &plain("alice", "alice-secret"))
        .await
        .unwrap();
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert_eq!(r.session_lifetime_ms, 1500);
    tokio::time::sleep(Duration::from_millis(600)).await;
    // 1.7 s after the first login: the lazy session is over, the renewed one is not.
    assert!(
        metadata(&mut diligent, &[]).await.is_some(),
        "re-authenticated"
    );
    assert!(metadata(&mut lazy, &[]).await.is_none(), "expired");
    assert!(common::closed_within(&mut lazy, Duration::from_secs(5)).await);

    // Re-authenticating as someone else fails with Kafka's message.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(handshake(&mut diligent, 1, "PLAIN").await.error_code, 0);
    let r = authenticate(&mut diligent, 1, &plain("bob", "bob-secret"))
        .await
        .unwrap();
    assert_eq!(r.error_code, 58);
    assert_eq!(
        r.error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User.alice: User.bob")
    );
}

#[tokio::test]
async fn sasl_requests_after_authentication_without_reauth_are_illegal_state() {
    let t = start(&[]).await;
    let (mut s, _) = login_plain(&t, "alice", "alice-secret").await;
    let r = handshake(&mut s, 1, "PLAIN").await;
    assert_eq!(r.error_code, 34);
    let r = authenticate(&mut s, 2, &plain("alice", "alice-secret"))
        .await
        .unwrap();
    assert_eq!(r.error_code, 34);
    assert!(metadata(&mut s, &[]).await.is_some());
}

#[tokio::test]
async fn the_authenticated_principal_reaches_the_authorizer() {
    let t = start(&[
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:ANONYMOUS",
    ])
    .await;
    common::create_topic(&t.served.broker, "t", 1).await;
    let creation = create_acls_request::AclCreation::default()
        .with_resource_type(2) // TOPIC
        .with_resource_name(StrBytes::from_static_str("t"))
        .with_resource_pattern_type(3) // LITERAL
        .with_principal(StrBytes::from_static_str("User:alice"))
        .with_host(StrBytes::from_static_str("*"))
        .with_operation(3) // READ
        .with_permission_type(3); // ALLOW
    match common::call(
        &t.served.broker,
        ApiKey::CreateAcls,
        3,
        RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(vec![creation])),
    )
    .await
    {
        ResponseKind::CreateAcls(r) => assert_eq!(r.results[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    let (mut alice, _) = login_plain(&t, "alice", "alice-secret").await;
    let m = metadata(&mut alice, &["t"]).await.unwrap();
    assert_eq!(m.topics[0].error_code, 0, "alice may describe t");
    let (mut bob, _) = login_plain(&t, "bob", "bob-secret").await;
    let m = metadata(&mut bob, &["t"]).await.unwrap();
    assert_eq!(m.topics[0].error_code, 29, "bob may not");
}

fn sign(claims: serde_json::Value) -> String {
    let pem = std::fs::read(format!("{FIXTURES}/rsa_private.pem")).unwrap();
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(&pem).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

#[tokio::test]
async fn oauthbearer_checks_signature_expiry_and_audience() {
    let url = format!("sasl.oauthbearer.jwks.endpoint.url=file://{FIXTURES}/jwks.json");
    let t = start(&[
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER,PLAIN",
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        &url,
        "sasl.oauthbearer.expected.audience=kafka",
        "connections.max.reauth.ms=3600000",
    ])
    .await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let token = |exp: i64, aud: &str| {
        let t = sign(serde_json::json!({"sub": "erin", "iat": now - 10, "exp": exp, "aud": aud}));
        format!("n,,\u{1}auth=Bearer {t}\u{1}\u{1}").into_bytes()
    };
    // Valid: the session lasts until the token expires (before connections.max.reauth.ms).
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 1, "OAUTHBEARER").await.error_code, 0);
    let r = authenticate(&mut s, 2, &token(now + 600, "kafka"))
        .await
        .unwrap();
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert!(
        (590_000..=600_000).contains(&r.session_lifetime_ms),
        "{}",
        r.session_lifetime_ms
    );
    assert!(metadata(&mut s, &[]).await.is_some());
    // Expired, wrong audience: Kafka's two-step failure ({"status":"invalid_token"}, then 58).
    for bad in [token(now - 600, "kafka"), token(now + 600, "other")] {
        let mut s = TcpStream::connect(t.served.addr).await.unwrap();
        assert_eq!(handshake(&mut s, 1, "OAUTHBEARER").await.error_code, 0);
        let r = authenticate(&mut s, 2, &bad).await.unwrap();
        assert_eq!(r.error_code, 0);
        assert!(String::from_utf8_lossy(&r.auth_bytes).contains("invalid_token"));
        let r = authenticate(&mut s, 2, &[1]).await.unwrap();
        assert_eq!(r.error_code, 58);
        assert!(common::closed_within(&mut s, Duration::from_secs(5)).await);
    }
}

#[tokio::test]
async fn bad_sasl_settings_stop_the_start_with_the_key_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["listeners=SASL_PLAINTEXT://127.0.0.1:0"], "GSSAPI"),
        (
            &[
                "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                MECHANISMS,
                "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
            ],
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ),
        (
            &[
                "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms=SCRAM-SHA-256",
                "sasl.scram.users=SCRAM-SHA-256=[name=x]",
            ],
            "sasl.scram.users",
        ),
    ];
    for (sets, needle) in cases {
        let mut all = vec![format!("log.dirs={}", dir.path().display())];
        all.extend(sets.iter().map(|s| s.to_string()));
        let e = match skiff_config::load(None, &all, Vec::<(String, String)>::new()) {
            Err(e) => e.to_string(),
            Ok((config, _)) => match skiff_broker::Broker::builder(config).start() {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{sets:?} started"),
            },
        };
        assert!(e.contains(needle), "{needle}: {e}");
        assert!(!e.contains("secret"), "{e}");
    }
}

#[tokio::test]
async fn sasl_ssl_runs_sasl_inside_tls() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let pem = dir.path().join("server.pem");
    std::fs::write(&pem, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
    let location = format!("ssl.keystore.location={}", pem.display());
    let served = common::broker(&dir.path().join("data"))
        .sets(&[
            "listeners=SASL_SSL://127.0.0.1:0",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
            SCRAM_USERS,
            "ssl.keystore.type=PEM",
            &location,
        ])
        .serve()
        .await;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tcp = TcpStream::connect(served.addr).await.unwrap();
    let mut s = connector.connect(name.clone(), tcp).await.unwrap();
    let r = login_scram(&mut s, ScramMechanism::Sha512, "carol", "carol-secret").await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert!(metadata(&mut s, &[]).await.is_some());
    // Unauthenticated requests are refused inside TLS too.
    let tcp = TcpStream::connect(served.addr).await.unwrap();
    let mut s = connector.connect(name, tcp).await.unwrap();
    assert!(metadata(&mut s, &[]).await.is_none());
}

/// A one-partition Produce of one record with a `value_len`-byte value.
fn produce(topic: &str, value_len: usize) -> ProduceRequest {
    let partition = produce_request::PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(common::one_record_batch(value_len)));
    ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.into())))
            .with_partition_data(vec![partition])])
}

#[tokio::test]
async fn a_user_quota_applies_to_the_sasl_principal() {
    use alter_client_quotas_request::{EntityData, EntryData, OpData};
    let t = start(&[]).await;
    common::create_topic(&t.served.broker, "q", 1).await;
    let entry = EntryData::default()
        .with_entity(vec![EntityData::default()
            .with_entity_type(StrBytes::from_static_str("user"))
            .with_entity_name(Some(StrBytes::from_static_str("alice")))])
        .with_ops(vec![OpData::default()
            .with_key(StrBytes::from_static_str("producer_byte_rate"))
            .with_value(1024.0)]);
    let body = RequestKind::AlterClientQuotas(
        AlterClientQuotasRequest::default().with_entries(vec![entry]),
    );
    match common::call(&t.served.broker, ApiKey::AlterClientQuotas, 1, body).await {
        ResponseKind::AlterClientQuotas(r) => assert_eq!(r.entries[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    let mut throttles = Vec::new();
    for user in ["alice", "bob"] {
        let (mut s, r) = login_plain(&t, user, &format!("{user}-secret")).await;
        assert_eq!(r.error_code, 0);
        let mut body = send(&mut s, ApiKey::Produce, 9, 7, &produce("q", 64 * 1024))
            .await
            .expect("produce answered");
        let r = ProduceResponse::decode(&mut body, 9).unwrap();
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 0, "{user}'s record is written");
        throttles.push(r.throttle_time_ms);
    }
    assert!(
        throttles[0] > 0,
        "alice (1 KB/s) is throttled: {throttles:?}"
    );
    assert_eq!(throttles[1], 0, "bob has no quota: {throttles:?}");
}

/// Sends `tokens` one SaslAuthenticate at a time after a handshake for `mechanism`; returns
/// whether the connection ended unauthenticated: every answer is an error (58, then closed) or
/// a challenge, and a request after the tokens is not served.
async fn refused(t: &Sasl, mechanism: &str, tokens: &[Vec<u8>]) -> bool {
    let mut s = TcpStream::connect(t.served.addr).await.unwrap();
    assert_eq!(handshake(&mut s, 1, mechanism).await.error_code, 0);
    for token in tokens {
        match authenticate(&mut s, 2, token).await {
            None => return common::closed_within(&mut s, Duration::from_secs(5)).await,
            Some(r) if r.error_code == 58 => {
                return common::closed_within(&mut s, Duration::from_secs(5)).await
            }
            Some(r) if r.error_code != 0 => panic!("{mechanism}: unexpected {r:?}"),
            Some(_) => {} // a challenge (SCRAM server-first, OAUTHBEARER's error JSON)
        }
    }
    metadata(&mut s, &[]).await.is_none()
        && common::closed_within(&mut s, Duration::from_secs(5)).await
}

#[tokio::test]
async fn malformed_tokens_never_authenticate_and_close_in_bounded_time() {
    let url = format!("sasl.oauthbearer.jwks.endpoint.url=file://{FIXTURES}/jwks.json");
    let t = start(&[
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        &url,
        "sasl.server.max.receive.size=4096",
    ])
    .await;
    let mut noise = common::Noise(0x5a51_0bad);
    let jwt = sign(serde_json::json!({"sub": "erin", "exp": 4_000_000_000_i64}));
    let bearer = format!("n,,\u{1}auth=Bearer {jwt}\u{1}\u{1}").into_bytes();
    let scram_first = ScramClient::new(ScramMechanism::Sha256, "carol", "abcdefghijkl").first();
    // The check itself tells a login apart.
    assert!(!refused(&t, "PLAIN", &[plain("alice", "alice-secret")]).await);
    let started = Instant::now();
    for i in 0..40 {
        let len = (noise.next() % 600) as usize;
        let random = noise.bytes(len);
        // PLAIN: random bytes, a mutated good login (never the password itself).
        for token in [
            random.clone(),
            noise.mutate(&plain("alice", "alice-secret")),
        ] {
            assert!(
                refused(&t, "PLAIN", std::slice::from_ref(&token)).await,
                "PLAIN {i}: {token:02x?}"
            );
        }
        // SCRAM: a random or mutated client-first; a good first then a random final.
        for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            let cases = [
                vec![random.clone()],
                vec![noise.mutate(&scram_first)],
                vec![scram_first.clone(), noise.mutate(b"c=biws,r=x,p=AAAA")],
            ];
            for tokens in cases {
                assert!(
                    refused(&t, mechanism, &tokens).await,
                    "{mechanism} {i}: {tokens:02x?}"
                );
            }
        }
        // OAUTHBEARER: random, a mutated signed token (a changed byte breaks the signature).
        let mutated = noise.mutate(&bearer);
        if mutated != bearer {
            for token in [random.clone(), mutated] {
                let tokens = [token, vec![1]];
                assert!(refused(&t, "OAUTHBEARER", &tokens).await, "OAUTHBEARER {i}");
            }
        }
    }
    // Bounded: 40 rounds of ~10 exchanges each (the failure delay is 0 here).
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let (mut s, r) = login_plain(&t, "alice", "alice-secret").await;
    assert_eq!(r.error_code, 0, "still serving logins");
    assert!(metadata(&mut s, &[]).await.is_some());
}
