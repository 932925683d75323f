//! Tests of JWT validation and the OAUTHBEARER exchange, with tokens signed in-test by the
//! fixture keys under `tests/fixtures` (see its README).

use std::collections::BTreeMap;
use std::sync::Arc;

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::*;
use crate::oauthbearer::jwks::Jwks;
use crate::oauthbearer::validator::{jwks_file_from_url, JwtValidator, OAuthBearerConfig};

const NOW_S: i64 = 1_700_000_000;
const NOW_MS: i64 = NOW_S * 1000;
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap_or_default()
}

fn sign(alg: Algorithm, kid: Option<&str>, key_file: &str, claims: &Value) -> String {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&fixture(key_file)),
        _ => EncodingKey::from_rsa_pem(&fixture(key_file)),
    }
    .expect("fixture key");
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_string);
    encode(&header, claims, &key).expect("sign")
}

fn rs256(claims: &Value) -> String {
    sign(Algorithm::RS256, Some("rsa-1"), "rsa_private.pem", claims)
}

fn good_claims() -> Value {
    json!({"sub": "alice", "iat": NOW_S - 10, "exp": NOW_S + 600, "scope": "kafka"})
}

fn validator(config: OAuthBearerConfig) -> JwtValidator {
    let jwks = Jwks::parse(&String::from_utf8_lossy(&fixture("jwks.json"))).expect("jwks");
    JwtValidator::new(config, jwks)
}

fn check(
    config: OAuthBearerConfig,
    token: &str,
) -> Result<crate::oauthbearer::ValidatedToken, String> {
    validator(config).validate(token, NOW_MS)
}

fn initial(token: &str) -> Vec<u8> {
    format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
}

#[test]
fn rs256_and_es256_tokens_validate() {
    let t = check(OAuthBearerConfig::default(), &rs256(&good_claims())).expect("valid");
    assert_eq!(t.principal_name, "alice");
    assert_eq!(t.scopes, vec!["kafka".to_string()]);
    assert_eq!(t.expires_at_ms, (NOW_S + 600) * 1000);
    assert_eq!(t.issued_at_ms, (NOW_S - 10) * 1000);
    let es = sign(
        Algorithm::ES256,
        Some("ec-1"),
        "ec_private.pem",
        &good_claims(),
    );
    assert!(check(OAuthBearerConfig::default(), &es).is_ok());
    // Without a kid the key is found by algorithm family.
    let no_kid = sign(Algorithm::ES256, None, "ec_private.pem", &good_claims());
    assert!(check(OAuthBearerConfig::default(), &no_kid).is_ok());
}

#[test]
fn unknown_key_or_tampered_token_fails() {
    let other = sign(
        Algorithm::RS256,
        Some("rsa-1"),
        "rsa_other_private.pem",
        &good_claims(),
    );
    assert!(check(OAuthBearerConfig::default(), &other).is_err());
    let no_kid = sign(
        Algorithm::RS256,
        None,
        "rsa_other_private.pem",
        &good_claims(),
    );
    assert!(check(OAuthBearerConfig::default(), &no_kid).is_err());
    let unknown_kid = sign(
        Algorithm::RS256,
        Some("rsa-9"),
        "rsa_private.pem",
        &good_claims(),
    );
    assert!(check(OAuthBearerConfig::default(), &unknown_kid).is_err());
    // Swap in another payload under the original signature.
    let good = rs256(&good_claims());
    let evil = rs256(&json!({"sub": "admin", "iat": NOW_S, "exp": NOW_S + 600}));
    let parts: Vec<&str> = good.split('.').collect();
    let evil_parts: Vec<&str> = evil.split('.').collect();
    let forged = format!("{}.{}.{}", parts[0], evil_parts[1], parts[2]);
    assert!(check(OAuthBearerConfig::default(), &forged).is_err());
}

#[test]
fn alg_none_hmac_and_malformed_are_refused() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
    let body = URL_SAFE_NO_PAD.encode(good_claims().to_string());
    assert!(check(OAuthBearerConfig::default(), &format!("{header}.{body}.")).is_err());
    let hs = encode(
        &Header::new(Algorithm::HS256),
        &good_claims(),
        &EncodingKey::from_secret(b"secret"),
    )
    .expect("sign");
    let err = check(OAuthBearerConfig::default(), &hs)
        .err()
        .unwrap_or_default();
    assert!(err.contains("not accepted"), "{err}");
    for bad in ["", "a.b", "a.b.c.d", "!!.!!.!!"] {
        assert!(check(OAuthBearerConfig::default(), bad).is_err(), "{bad}");
    }
}

#[test]
fn exp_iat_nbf_with_clock_skew() {
    let cfg = OAuthBearerConfig::default(); // 30 s skew
    let with = |extra: Value| {
        let mut c = good_claims();
        if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                if v.is_null() {
                    c.remove(k);
                } else {
                    c.insert(k.clone(), v.clone());
                }
            }
        }
        check(cfg.clone(), &rs256(&c))
    };
    assert!(with(json!({"exp": NOW_S - 29})).is_ok(), "within skew");
    assert!(
        with(json!({"exp": NOW_S - 30})).is_err(),
        "expired beyond skew"
    );
    assert!(with(json!({"exp": null})).is_err(), "exp required");
    assert!(with(json!({"exp": "soon"})).is_err());
    assert!(with(json!({"exp": -5})).is_err());
    assert!(with(json!({"exp": 1e300})).is_err());
    assert!(
        with(json!({"exp": (NOW_S + 60) as f64 + 0.5})).is_ok(),
        "fractional NumericDate"
    );
    assert!(with(json!({"iat": null})).is_err(), "iat required");
    assert!(with(json!({"iat": NOW_S + 30})).is_ok());
    assert!(
        with(json!({"iat": NOW_S + 31})).is_err(),
        "issued in the future"
    );
    assert!(with(json!({"nbf": NOW_S + 30})).is_ok());
    assert!(with(json!({"nbf": NOW_S + 31})).is_err(), "not yet valid");
    let strict = OAuthBearerConfig {
        clock_skew_seconds: 0,
        ..OAuthBearerConfig::default()
    };
    assert!(check(
        strict,
        &rs256(&json!({"sub": "a", "iat": NOW_S, "exp": NOW_S}))
    )
    .is_err());
}

#[test]
fn issuer_and_audience() {
    let cfg = OAuthBearerConfig {
        expected_issuer: Some("https://idp.example".into()),
        expected_audience: vec!["kafka".into(), "skiff".into()],
        ..OAuthBearerConfig::default()
    };
    let base = json!({"sub": "a", "iat": NOW_S, "exp": NOW_S + 60, "iss": "https://idp.example"});
    let with_aud = |aud: Value| {
        let mut c = base.clone();
        c["aud"] = aud;
        rs256(&c)
    };
    assert!(check(cfg.clone(), &with_aud(json!("skiff"))).is_ok());
    assert!(check(cfg.clone(), &with_aud(json!(["other", "kafka"]))).is_ok());
    assert!(check(cfg.clone(), &with_aud(json!(["other"]))).is_err());
    assert!(
        check(cfg.clone(), &rs256(&base)).is_err(),
        "aud required when expected"
    );
    let mut wrong_iss = base.clone();
    wrong_iss["iss"] = json!("https://evil.example");
    wrong_iss["aud"] = json!("kafka");
    assert!(check(cfg.clone(), &rs256(&wrong_iss)).is_err());
    // jose4j's rule, kept by Kafka: an aud in the token with none expected is refused.
    let err = check(OAuthBearerConfig::default(), &with_aud(json!("kafka")))
        .err()
        .unwrap_or_default();
    assert!(
        err.contains("no sasl.oauthbearer.expected.audience"),
        "{err}"
    );
}

#[test]
fn configurable_sub_and_scope_claims() {
    let cfg = OAuthBearerConfig {
        sub_claim_name: "client_id".into(),
        scope_claim_name: "scp".into(),
        ..OAuthBearerConfig::default()
    };
    let claims = json!({"client_id": " svc-1 ", "sub": "ignored", "scp": ["read", "write"],
        "iat": NOW_S, "exp": NOW_S + 60});
    let t = check(cfg.clone(), &rs256(&claims)).expect("valid");
    assert_eq!(t.principal_name, "svc-1");
    assert_eq!(t.scopes, vec!["read".to_string(), "write".to_string()]);
    // A scope string is one scope, as in Kafka.
    let one = json!({"client_id": "c", "scp": "read write", "iat": NOW_S, "exp": NOW_S + 60});
    assert_eq!(
        check(cfg.clone(), &rs256(&one)).map(|t| t.scopes),
        Ok(vec!["read write".into()])
    );
    for bad in [
        json!({"sub": "x", "iat": NOW_S, "exp": NOW_S + 60}),
        json!({"client_id": "  ", "iat": NOW_S, "exp": NOW_S + 60}),
        json!({"client_id": 7, "iat": NOW_S, "exp": NOW_S + 60}),
        json!({"client_id": "c", "scp": ["a", "a"], "iat": NOW_S, "exp": NOW_S + 60}),
        json!({"client_id": "c", "scp": [""], "iat": NOW_S, "exp": NOW_S + 60}),
    ] {
        assert!(check(cfg.clone(), &rs256(&bad)).is_err(), "{bad}");
    }
}

#[test]
fn kafka_properties_are_read() {
    let props: BTreeMap<String, String> = [
        (
            "sasl.oauthbearer.jwks.endpoint.url",
            format!("file://{FIXTURES}/jwks.json"),
        ),
        ("sasl.oauthbearer.expected.audience", "a, b".into()),
        ("sasl.oauthbearer.expected.issuer", "iss".into()),
        ("sasl.oauthbearer.clock.skew.seconds", "5".into()),
        ("sasl.oauthbearer.sub.claim.name", "uid".into()),
        ("sasl.oauthbearer.scope.claim.name", "scp".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let cfg = OAuthBearerConfig::from_kafka_properties(&props).expect("config");
    assert_eq!(
        cfg.expected_audience,
        vec!["a".to_string(), "b".to_string()]
    );
    assert_eq!(cfg.expected_issuer.as_deref(), Some("iss"));
    assert_eq!(cfg.clock_skew_seconds, 5);
    assert_eq!(cfg.sub_claim_name, "uid");
    assert_eq!(cfg.scope_claim_name, "scp");
    let v = JwtValidator::from_config(cfg).expect("loads jwks");
    assert_eq!(v.config().clock_skew_seconds, 5);

    let bad = |k: &str, v: &str| {
        let props: BTreeMap<String, String> = [(k.to_string(), v.to_string())].into();
        OAuthBearerConfig::from_kafka_properties(&props)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(bad("sasl.oauthbearer.jwks.endpoint.url", "https://idp/jwks").contains("file: URL"));
    assert!(bad("sasl.oauthbearer.clock.skew.seconds", "-1").contains("clock.skew"));
    assert!(bad("sasl.oauthbearer.sub.claim.name", " ").contains("blank"));
    assert!(JwtValidator::from_config(OAuthBearerConfig::default()).is_err());
}

#[test]
fn file_urls() {
    assert_eq!(
        jwks_file_from_url("file:/a/b.json").ok(),
        Some("/a/b.json".into())
    );
    assert_eq!(
        jwks_file_from_url("file:///a/b.json").ok(),
        Some("/a/b.json".into())
    );
    assert_eq!(
        jwks_file_from_url("file://localhost/a").ok(),
        Some("/a".into())
    );
    assert!(jwks_file_from_url("file:relative.json").is_err());
    assert!(jwks_file_from_url("/a/b.json").is_err());
}

#[test]
fn server_success_gives_principal_and_lifetime() {
    let mut s = OAuthBearerServer::new(Arc::new(validator(OAuthBearerConfig::default())));
    assert_eq!(s.mechanism(), Mechanism::OAuthBearer);
    let step = s.step(&initial(&rs256(&good_claims())), NOW_MS);
    assert_eq!(
        step,
        Step::Done(Authenticated {
            principal: "User:alice".into(),
            server_final: None,
            session_lifetime_ms: Some(600_000),
        })
    );
    assert!(matches!(s.step(b"\x01", NOW_MS), Step::Fail(_)));
}

#[test]
fn server_two_step_failure_sends_kafkas_json() {
    let mut s = OAuthBearerServer::new(Arc::new(validator(OAuthBearerConfig::default())));
    let expired = rs256(&json!({"sub": "a", "iat": NOW_S - 999, "exp": NOW_S - 900}));
    assert_eq!(
        s.step(&initial(&expired), NOW_MS),
        Step::Continue(br#"{"status":"invalid_token"}"#.to_vec())
    );
    let reason = s.rejection_reason().unwrap_or_default().to_string();
    assert!(reason.contains("expired"), "{reason}");
    assert!(!reason.contains(&expired));
    match s.step(b"\x01", NOW_MS) {
        Step::Fail(e) => assert_eq!(e.client_message(), r#"{"status":"invalid_token"}"#),
        other => panic!("{other:?}"),
    }
}

#[test]
fn server_lets_the_client_retry_instead_of_acknowledging() {
    let mut s = OAuthBearerServer::new(Arc::new(validator(OAuthBearerConfig::default())));
    assert!(matches!(
        s.step(&initial("a.b.c"), NOW_MS),
        Step::Continue(_)
    ));
    assert!(matches!(
        s.step(&initial(&rs256(&good_claims())), NOW_MS),
        Step::Done(_)
    ));
}

#[test]
fn server_malformed_and_authzid() {
    let generic = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER";
    let v = Arc::new(validator(OAuthBearerConfig::default()));
    for bad in [&b"\x01"[..], b"", b"n,,\x01auth=Basic x\x01\x01"] {
        match OAuthBearerServer::new(v.clone()).step(bad, NOW_MS) {
            Step::Fail(e) => assert_eq!(e.client_message(), generic),
            other => panic!("{other:?}"),
        }
    }
    let token = rs256(&good_claims());
    let with_authz = |a: &str| format!("n,a={a},\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes();
    assert!(matches!(
        OAuthBearerServer::new(v.clone()).step(&with_authz("alice"), NOW_MS),
        Step::Done(_)
    ));
    match OAuthBearerServer::new(v).step(&with_authz("bob"), NOW_MS) {
        Step::Fail(e) => {
            assert_eq!(
                e.client_message(),
                "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"
            );
            assert!(!e.client_message().contains(&token));
        }
        other => panic!("{other:?}"),
    }
}
