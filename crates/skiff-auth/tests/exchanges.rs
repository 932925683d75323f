//! Whole exchanges through the public API, as the broker's connection will drive them, and
//! hostile input (arbitrary bytes) on every mechanism and parser: never a panic, never a
//! success, never a secret in an error.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use skiff_auth::jaas;
use skiff_auth::oauthbearer::jwks::Jwks;
use skiff_auth::oauthbearer::{JwtValidator, OAuthBearerConfig};
use skiff_auth::password_hash::hash_password;
use skiff_auth::plain::PlainSecret;
use skiff_auth::scram::client::ScramClient;
use skiff_auth::scram::credential::{MemoryScramStore, ScramCredential};
use skiff_auth::scram::ScramMechanism;
use skiff_auth::{Mechanisms, Step};

const PASSWORD: &str = "pa55-w0rd";
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// Every failure text a client can receive from this crate (OAUTHBEARER's authzid message
/// and PLAIN's token-count message are checked by prefix).
const KNOWN_MESSAGES: [&str; 8] = [
    "Authentication failed: Invalid username or password",
    "Authentication failed: username not specified",
    "Authentication failed: password not specified",
    "Authentication failed: Client requested an authorization id that is different from username",
    "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN",
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256",
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
    "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER",
];

fn is_known(msg: &str) -> bool {
    KNOWN_MESSAGES.contains(&msg)
        || msg.starts_with("Invalid SASL/PLAIN response: expected 3 tokens, got ")
        || msg == r#"{"status":"invalid_token"}"#
        || msg.starts_with("Authentication failed: Client requested an authorization id (")
}

/// Built once: deriving the credentials costs PBKDF2 rounds that proptest would otherwise
/// repeat for every case.
fn mechanisms() -> &'static Mechanisms {
    static M: OnceLock<Mechanisms> = OnceLock::new();
    M.get_or_init(build_mechanisms)
}

fn build_mechanisms() -> Mechanisms {
    let jaas_line = format!(
        "{} required username=\"admin\" password=\"admin-pw\" user_alice=\"{PASSWORD}\";",
        jaas::PLAIN_LOGIN_MODULE
    );
    let mut plain = jaas::parse_single(&jaas_line)
        .and_then(|e| e.plain_users())
        .expect("jaas");
    plain.insert(
        "hashed",
        PlainSecret::Hashed(hash_password(ScramMechanism::Sha512, PASSWORD, 4096).expect("hash")),
    );
    let mut scram = MemoryScramStore::new();
    for m in ScramMechanism::ALL {
        scram.insert(
            m,
            "alice",
            ScramCredential::derive(m, PASSWORD, 4096).expect("derive"),
        );
    }
    let scram = Arc::new(scram);
    let props: BTreeMap<String, String> = [(
        "sasl.oauthbearer.jwks.endpoint.url".to_string(),
        format!("file:{FIXTURES}/jwks.json"),
    )]
    .into();
    let oauth = OAuthBearerConfig::from_kafka_properties(&props)
        .and_then(JwtValidator::from_config)
        .expect("oauth");
    Mechanisms::new()
        .with_plain(Arc::new(plain))
        .with_scram(ScramMechanism::Sha256, scram.clone())
        .with_scram(ScramMechanism::Sha512, scram)
        .with_oauthbearer(Arc::new(oauth))
}

fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Mechanisms>();
    is::<Jwks>();
}

#[test]
fn plain_from_jaas_and_hashed() {
    let m = mechanisms();
    for user in ["alice", "hashed"] {
        let mut s = m.server("PLAIN").expect("enabled");
        match s.step(format!("\0{user}\0{PASSWORD}").as_bytes(), 0) {
            Step::Done(a) => assert_eq!(a.principal, format!("User:{user}")),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn scram_both_hashes_via_the_factory() {
    let m = mechanisms();
    for mech in ScramMechanism::ALL {
        let mut s = m.server(mech.name()).expect("enabled");
        let client = ScramClient::new(mech, "alice", "fyko+d2lbbFgONRv9qkxdawL");
        let server_first = match s.step(&client.first(), 0) {
            Step::Continue(t) => t,
            other => panic!("{other:?}"),
        };
        let (last, expected_final) = client.last(&server_first, PASSWORD);
        match s.step(&last, 0) {
            Step::Done(a) => {
                assert_eq!(a.principal, "User:alice");
                assert_eq!(a.server_final, Some(expected_final));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn oauthbearer_refuses_garbage_token_in_two_steps() {
    let m = mechanisms();
    let mut s = m.server("OAUTHBEARER").expect("enabled");
    assert_eq!(
        s.step(b"n,,\x01auth=Bearer a.b.c\x01\x01", 0),
        Step::Continue(br#"{"status":"invalid_token"}"#.to_vec())
    );
    let reason = s.rejection_reason().unwrap_or_default();
    assert!(reason.contains("malformed JWT header"), "{reason}");
    match s.step(b"\x01", 0) {
        Step::Fail(e) => assert_eq!(e.client_message(), r#"{"status":"invalid_token"}"#),
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn arbitrary_first_tokens_never_authenticate(token in proptest::collection::vec(any::<u8>(), 0..256)) {
        let m = mechanisms();
        for name in m.names() {
            let mut s = m.server(name).expect("enabled");
            match s.step(&token, 0) {
                Step::Done(a) => prop_assert!(false, "{name} accepted {token:?} as {}", a.principal),
                Step::Fail(e) => {
                    prop_assert!(is_known(e.client_message()), "{name}: {}", e.client_message());
                }
                Step::Continue(_) => {}
            }
        }
    }

    #[test]
    fn arbitrary_scram_final_never_authenticates(token in proptest::collection::vec(any::<u8>(), 0..256)) {
        let m = mechanisms();
        let mut s = m.server("SCRAM-SHA-256").expect("enabled");
        let client = ScramClient::new(ScramMechanism::Sha256, "alice", "nonce");
        prop_assert!(matches!(s.step(&client.first(), 0), Step::Continue(_)));
        match s.step(&token, 0) {
            Step::Fail(e) => prop_assert!(is_known(e.client_message())),
            other => prop_assert!(false, "{other:?}"),
        }
    }

    #[test]
    fn arbitrary_text_in_scram_shaped_messages(user in "[ -~]{0,20}", nonce in "[ -~]{0,20}", rest in "[ -~]{0,40}") {
        let m = mechanisms();
        let mut s = m.server("SCRAM-SHA-512").expect("enabled");
        let step = s.step(format!("n,,n={user},r={nonce}{rest}").as_bytes(), 0);
        prop_assert!(!matches!(step, Step::Done(_)));
    }

    #[test]
    fn plain_errors_never_echo_the_password(password in "[a-zA-Z0-9]{8,24}") {
        let m = mechanisms();
        let mut s = m.server("PLAIN").expect("enabled");
        match s.step(format!("\0alice\0{password}").as_bytes(), 0) {
            Step::Fail(e) => {
                prop_assert!(!e.client_message().contains(&password));
                prop_assert!(!e.detail().contains(&password));
            }
            Step::Done(_) => prop_assert_eq!(password.as_str(), PASSWORD),
            Step::Continue(_) => prop_assert!(false),
        }
    }

    #[test]
    fn jaas_parser_never_panics(text in "\\PC{0,80}") {
        let _ = jaas::parse(&text);
    }

    #[test]
    fn jaas_parser_on_near_valid_lines(key in "[a-z_]{1,8}", value in "[ -~]{0,16}") {
        let quoted = value.replace('\\', "\\\\").replace('"', "\\\"");
        let line = format!("a.B required {key}=\"{quoted}\";");
        let entry = jaas::parse_single(&line);
        prop_assert_eq!(entry.ok().and_then(|e| e.options.get(&key).cloned()), Some(value));
    }
}
