//! Filled sample requests of the SCRAM credential APIs (v0, flexible).

use super::s;
use bytes::Bytes;
use kafka_protocol::messages::*;

/// A sample of `key` at `v` (`f`: flexible), or `None` if `key` is not one of these APIs.
pub fn sample(key: ApiKey, _v: i16, f: bool) -> Option<RequestKind> {
    Some(match key {
        ApiKey::DescribeUserScramCredentials => {
            use describe_user_scram_credentials_request::*;
            let u = |n| tag!(UserName::default().with_name(s(n)), f);
            let r = DescribeUserScramCredentialsRequest::default()
                .with_users(Some(vec![u("alice"), u("bob")]));
            RequestKind::DescribeUserScramCredentials(tag!(r, f))
        }
        ApiKey::AlterUserScramCredentials => {
            use alter_user_scram_credentials_request::*;
            let d = |n| {
                tag!(
                    ScramCredentialDeletion::default()
                        .with_name(s(n))
                        .with_mechanism(1),
                    f
                )
            };
            let u = |n| {
                tag!(
                    ScramCredentialUpsertion::default()
                        .with_name(s(n))
                        .with_mechanism(2)
                        .with_iterations(8192)
                        .with_salt(Bytes::from_static(b"salty"))
                        .with_salted_password(Bytes::from_static(b"0123456789abcdef")),
                    f
                )
            };
            let r = AlterUserScramCredentialsRequest::default()
                .with_deletions(vec![d("alice"), d("bob")])
                .with_upsertions(vec![u("carol"), u("dave")]);
            RequestKind::AlterUserScramCredentials(tag!(r, f))
        }
        ApiKey::SaslHandshake => RequestKind::SaslHandshake(
            sasl_handshake_request::SaslHandshakeRequest::default().with_mechanism(s("PLAIN")),
        ),
        ApiKey::SaslAuthenticate => RequestKind::SaslAuthenticate(tag!(
            sasl_authenticate_request::SaslAuthenticateRequest::default()
                .with_auth_bytes(Bytes::from_static(b"\0alice\0secret")),
            f
        )),
        _ => return None,
    })
}
