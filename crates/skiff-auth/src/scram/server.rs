//! The SCRAM server state machine (Kafka's `ScramSaslServer`).
//!
//! Two client tokens: client-first → server-first (`r=<client+server nonce>,s=<salt>,i=<n>`),
//! client-final → verified proof, then `Done` with server-final `v=<ServerSignature>`.
//!
//! Failure messages follow Kafka: everything is answered with Kafka's generic "Authentication
//! failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-…"
//! (unknown user, bad proof, wrong nonce, malformed message, too few iterations, delegation
//! tokens), except an authorization id different from the user name, which Kafka reports as
//! "Authentication failed: Client requested an authorization id that is different from
//! username". Like Kafka, an unknown user fails at the first message.
//!
//! Delegation tokens (`tokenauth=true`) are not supported by Skiff: such a client fails exactly
//! as a Kafka client with an unknown token id does.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::distributions::Alphanumeric;
use rand::Rng;
use subtle::ConstantTimeEq;

use super::credential::{ScramCredential, ScramCredentialStore};
use super::messages::{parse_client_final, parse_client_first, ClientFirst};
use super::{xor, ScramMechanism, MIN_ITERATIONS};
use crate::error::AuthError;
use crate::server::{user_principal, Authenticated, Mechanism, SaslServer, Step};

/// Length of the server's part of the nonce: 32 alphanumeric characters, ~190 random bits
/// (Kafka uses 130 bits).
const SERVER_NONCE_LEN: usize = 32;

/// Kafka's message when the client asks to act as someone else.
pub const AUTHZID_MISMATCH: &str =
    "Authentication failed: Client requested an authorization id that is different from username";

enum State {
    First,
    Final(Box<Pending>),
    Finished,
}

/// What the server remembers between its first and final message.
struct Pending {
    first: ClientFirst,
    server_first: String,
    nonce: String,
    credential: ScramCredential,
}

/// One SCRAM exchange.
pub struct ScramServer {
    mechanism: ScramMechanism,
    store: Arc<dyn ScramCredentialStore>,
    server_nonce: Option<String>,
    state: State,
}

impl ScramServer {
    pub fn new(mechanism: ScramMechanism, store: Arc<dyn ScramCredentialStore>) -> Self {
        ScramServer {
            mechanism,
            store,
            server_nonce: None,
            state: State::First,
        }
    }

    /// A server whose nonce part is fixed (for test vectors only).
    #[cfg(test)]
    fn with_server_nonce(
        mechanism: ScramMechanism,
        store: Arc<dyn ScramCredentialStore>,
        nonce: &str,
    ) -> Self {
        let mut s = Self::new(mechanism, store);
        s.server_nonce = Some(nonce.to_string());
        s
    }

    fn fail(&mut self, detail: impl Into<String>) -> Step {
        self.state = State::Finished;
        Step::Fail(AuthError::generic(self.mechanism.name(), detail))
    }

    fn client_first(&mut self, token: &[u8]) -> Step {
        let first = match parse_client_first(token) {
            Ok(f) => f,
            Err(e) => return self.fail(format!("invalid SCRAM client first message: {e}")),
        };
        if first.token_auth() {
            return self.fail("delegation token authentication is not supported");
        }
        let Some(credential) = self.store.credential(self.mechanism, &first.username) else {
            return self.fail(format!("no {} credential for user", self.mechanism.name()));
        };
        if !first.authzid.is_empty() && first.authzid != first.username {
            self.state = State::Finished;
            return Step::Fail(AuthError::client(AUTHZID_MISMATCH));
        }
        if credential.iterations < MIN_ITERATIONS {
            return self.fail(format!(
                "stored credential has {} iterations, below the minimum {MIN_ITERATIONS}",
                credential.iterations
            ));
        }
        let server_nonce = self.server_nonce.take().unwrap_or_else(|| {
            rand::thread_rng()
                .sample_iter(&Alphanumeric)
                .take(SERVER_NONCE_LEN)
                .map(char::from)
                .collect()
        });
        let nonce = format!("{}{server_nonce}", first.client_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            STANDARD.encode(&credential.salt),
            credential.iterations
        );
        let reply = server_first.clone().into_bytes();
        self.state = State::Final(Box::new(Pending {
            first,
            server_first,
            nonce,
            credential,
        }));
        Step::Continue(reply)
    }

    fn client_final(&mut self, token: &[u8], pending: &Pending) -> Step {
        let Pending {
            first,
            server_first,
            nonce,
            credential,
        } = pending;
        let fin = match parse_client_final(token) {
            Ok(f) => f,
            Err(e) => return self.fail(format!("invalid SCRAM client final message: {e}")),
        };
        // Kafka checks only that the client's nonce ends with the server-first nonce, and
        // librdkafka 2.0.x relies on it: it sends its own nonce again in front.
        if !fin.nonce.ends_with(nonce.as_str()) {
            return self.fail("Invalid client nonce in the final client message.");
        }
        if fin.channel_binding != first.gs2_header.as_bytes() {
            return self.fail("channel binding does not repeat the gs2 header");
        }
        let auth_message = format!("{},{server_first},{}", first.bare, fin.without_proof);
        let m = self.mechanism;
        let client_signature = m.hmac(&credential.stored_key, auth_message.as_bytes());
        let Some(client_key) = xor(&fin.proof, &client_signature) else {
            return self.fail("client proof has the wrong length");
        };
        let computed_stored_key = m.hash(&client_key);
        if !bool::from(computed_stored_key.ct_eq(&credential.stored_key)) {
            return self.fail("Invalid client credentials");
        }
        let server_signature = m.hmac(&credential.server_key, auth_message.as_bytes());
        self.state = State::Finished;
        Step::Done(Authenticated {
            principal: user_principal(&first.username),
            server_final: Some(format!("v={}", STANDARD.encode(server_signature)).into_bytes()),
            session_lifetime_ms: None,
        })
    }
}

impl SaslServer for ScramServer {
    fn mechanism(&self) -> Mechanism {
        self.mechanism.mechanism()
    }

    fn step(&mut self, client_token: &[u8], _now_ms: i64) -> Step {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::First => self.client_first(client_token),
            State::Final(p) => self.client_final(client_token, &p),
            State::Finished => self.fail("SCRAM exchange already finished"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scram::client::ScramClient as Client;
    use crate::scram::credential::MemoryScramStore;

    const GENERIC_256: &str = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256";

    fn store(mechanism: ScramMechanism, user: &str, password: &str) -> Arc<MemoryScramStore> {
        let mut s = MemoryScramStore::new();
        let c = ScramCredential::derive(mechanism, password, 4096).expect("derive");
        s.insert(mechanism, user, c);
        Arc::new(s)
    }

    fn expect_continue(step: Step) -> Vec<u8> {
        match step {
            Step::Continue(t) => t,
            other => panic!("expected Continue, got {other:?}"),
        }
    }

    fn expect_fail(step: Step) -> AuthError {
        match step {
            Step::Fail(e) => e,
            other => panic!("expected Fail, got {other:?}"),
        }
    }

    /// RFC 7677 section 3, the SCRAM-SHA-256 example, byte for byte.
    #[test]
    fn rfc7677_sha256_example() {
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("b64");
        let cred = ScramCredential::derive_with_salt(ScramMechanism::Sha256, "pencil", &salt, 4096);
        let mut st = MemoryScramStore::new();
        st.insert(ScramMechanism::Sha256, "user", cred);
        let mut server = ScramServer::with_server_nonce(
            ScramMechanism::Sha256,
            Arc::new(st),
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        );
        let sf = expect_continue(server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", 0));
        assert_eq!(
            sf,
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let step = server.step(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            0,
        );
        assert_eq!(
            step,
            Step::Done(Authenticated {
                principal: "User:user".into(),
                server_final: Some(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec()),
                session_lifetime_ms: None,
            })
        );
    }

    #[test]
    fn round_trip_both_hashes() {
        for m in ScramMechanism::ALL {
            let mut server = ScramServer::new(m, store(m, "al,ice=", "s3cret"));
            assert_eq!(server.mechanism(), m.mechanism());
            let client = Client::new(m, "al,ice=", "clientnonce123");
            let sf = expect_continue(server.step(&client.first(), 0));
            assert!(sf.starts_with(b"r=clientnonce123"));
            let (last, want_final) = client.last(&sf, "s3cret");
            match server.step(&last, 0) {
                Step::Done(a) => {
                    assert_eq!(a.principal, "User:al,ice=");
                    assert_eq!(a.server_final, Some(want_final));
                    assert_eq!(a.session_lifetime_ms, None);
                }
                other => panic!("{m:?}: {other:?}"),
            }
            // Finished: any further token fails.
            expect_fail(server.step(b"again", 0));
        }
    }

    #[test]
    fn server_nonces_are_fresh() {
        let m = ScramMechanism::Sha256;
        let st = store(m, "u", "p");
        let client = Client::new(m, "u", "n");
        let a = expect_continue(ScramServer::new(m, st.clone()).step(&client.first(), 0));
        let b = expect_continue(ScramServer::new(m, st).step(&client.first(), 0));
        assert_ne!(a, b);
        assert!(a.len() > "r=n,s=,i=4096".len() + SERVER_NONCE_LEN);
    }

    #[test]
    fn wrong_password_fails_with_kafkas_generic_message() {
        for m in ScramMechanism::ALL {
            let mut server = ScramServer::new(m, store(m, "u", "right"));
            let client = Client::new(m, "u", "n1");
            let sf = expect_continue(server.step(&client.first(), 0));
            let (last, _) = client.last(&sf, "wrong");
            let e = expect_fail(server.step(&last, 0));
            assert_eq!(
                e.client_message(),
                format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {}", m.name())
            );
            assert!(!e.detail().contains("wrong"));
        }
    }

    #[test]
    fn wrong_mechanism_credential_is_unknown_user() {
        let mut server = ScramServer::new(
            ScramMechanism::Sha512,
            store(ScramMechanism::Sha256, "u", "p"),
        );
        let client = Client::new(ScramMechanism::Sha512, "u", "n");
        let e = expect_fail(server.step(&client.first(), 0));
        assert!(e.client_message().ends_with("SCRAM-SHA-512"));
    }

    #[test]
    fn unknown_user_fails_at_first_message() {
        let m = ScramMechanism::Sha256;
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let e = expect_fail(server.step(b"n,,n=nobody,r=abc", 0));
        assert_eq!(e.client_message(), GENERIC_256);
    }

    #[test]
    fn wrong_nonce_fails() {
        let m = ScramMechanism::Sha256;
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let client = Client::new(m, "u", "n1");
        let sf = expect_continue(server.step(&client.first(), 0));
        // The client drops the server's part of the nonce but signs correctly otherwise.
        let forged = String::from_utf8_lossy(&sf).replacen(
            &String::from_utf8_lossy(&sf)[2..]
                .split(',')
                .next()
                .unwrap_or("")
                .to_string(),
            "n1",
            1,
        );
        let (last, _) = client.last(forged.as_bytes(), "p");
        let e = expect_fail(server.step(&last, 0));
        assert_eq!(e.client_message(), GENERIC_256);
        assert!(e.detail().contains("nonce"), "{}", e.detail());
    }

    #[test]
    fn a_nonce_with_a_prefix_is_accepted_as_kafka_does() {
        // librdkafka 2.0.x sends client nonce + server-first nonce; Kafka accepts any nonce
        // that ends with the server-first one (and the proof covers what was sent).
        let m = ScramMechanism::Sha256;
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let client = Client::new(m, "u", "n1");
        let sf =
            String::from_utf8_lossy(&expect_continue(server.step(&client.first(), 0))).to_string();
        let prefixed = sf.replacen("r=", "r=n1", 1);
        let (last, _) = client.last(prefixed.as_bytes(), "p");
        // The proof was computed over the prefixed server-first; the server signs its own,
        // so only the nonce check is exercised here: it must not be the failure.
        if let Step::Fail(e) = server.step(&last, 0) {
            assert!(!e.detail().contains("nonce"), "{}", e.detail());
        }
    }

    #[test]
    fn channel_binding_must_echo_gs2_header() {
        let m = ScramMechanism::Sha256;
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let mut client = Client::new(m, "u", "n1");
        let sf = expect_continue(server.step(&client.first(), 0));
        client.gs2_header = "n,a=u,".into();
        let (last, _) = client.last(&sf, "p");
        let e = expect_fail(server.step(&last, 0));
        assert!(e.detail().contains("channel binding"), "{}", e.detail());
    }

    #[test]
    fn authzid_must_equal_username() {
        let m = ScramMechanism::Sha256;
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let e = expect_fail(server.step(b"n,a=admin,n=u,r=abc", 0));
        assert_eq!(e.client_message(), AUTHZID_MISMATCH);
        // Equal authzid is accepted.
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let mut client = Client::new(m, "u", "n1");
        client.gs2_header = "n,a=u,".into();
        let sf = expect_continue(server.step(&client.first(), 0));
        let (last, _) = client.last(&sf, "p");
        assert!(matches!(server.step(&last, 0), Step::Done(_)));
    }

    #[test]
    fn malformed_messages_fail_generically() {
        let m = ScramMechanism::Sha256;
        for bad in [&b""[..], b"garbage", b"n,,n=u", b"y,,n=u,r=x", b"\xff\xfe"] {
            let mut server = ScramServer::new(m, store(m, "u", "p"));
            let e = expect_fail(server.step(bad, 0));
            assert_eq!(e.client_message(), GENERIC_256);
        }
        for bad in [
            &b""[..],
            b"c=biws",
            b"c=biws,r=x,p=!!",
            b"c=biws,r=n1,p=AAAA",
        ] {
            let mut server = ScramServer::new(m, store(m, "u", "p"));
            let client = Client::new(m, "u", "n1");
            expect_continue(server.step(&client.first(), 0));
            let e = expect_fail(server.step(bad, 0));
            assert_eq!(e.client_message(), GENERIC_256);
        }
    }

    #[test]
    fn proof_of_wrong_length_fails() {
        let m = ScramMechanism::Sha256;
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let client = Client::new(m, "u", "n1");
        let sf = expect_continue(server.step(&client.first(), 0));
        let nonce = String::from_utf8_lossy(&sf[2..])
            .split(',')
            .next()
            .unwrap_or("")
            .to_string();
        let e = expect_fail(server.step(format!("c=biws,r={nonce},p=AAAA").as_bytes(), 0));
        assert!(e.detail().contains("length"), "{}", e.detail());
    }

    #[test]
    fn token_auth_is_refused() {
        let m = ScramMechanism::Sha256;
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        let e = expect_fail(server.step(b"n,,n=u,r=abc,tokenauth=true", 0));
        assert_eq!(e.client_message(), GENERIC_256);
        // Other extensions are ignored, as Kafka ignores them.
        let mut server = ScramServer::new(m, store(m, "u", "p"));
        expect_continue(server.step(b"n,,n=u,r=abc,foo=bar", 0));
    }

    #[test]
    fn too_few_stored_iterations_fail() {
        let m = ScramMechanism::Sha256;
        let mut st = MemoryScramStore::new();
        st.insert(
            m,
            "u",
            ScramCredential::derive_with_salt(m, "p", b"salt", 4095),
        );
        let mut server = ScramServer::new(m, Arc::new(st));
        let e = expect_fail(server.step(b"n,,n=u,r=abc", 0));
        assert_eq!(e.client_message(), GENERIC_256);
        assert!(e.detail().contains("4095"));
    }
}
