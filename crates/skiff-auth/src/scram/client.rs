//! A minimal SCRAM client: enough to drive [`ScramServer`](super::server::ScramServer) from
//! tests (this crate's and the broker's SaslAuthenticate tests) without a Kafka client.
//! It is not used by the broker itself; it does no channel binding, like Kafka's client.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::messages::encode_saslname;
use super::{xor, ScramMechanism};

/// One client side of a SCRAM exchange.
pub struct ScramClient {
    pub mechanism: ScramMechanism,
    /// `n,,` unless a test wants an authzid (`n,a=<name>,`).
    pub gs2_header: String,
    /// `n=<name>,r=<nonce>[,ext…]`.
    pub bare: String,
}

impl ScramClient {
    /// A client for `user` with the given client nonce.
    pub fn new(mechanism: ScramMechanism, user: &str, nonce: &str) -> ScramClient {
        ScramClient {
            mechanism,
            gs2_header: "n,,".into(),
            bare: format!("n={},r={nonce}", encode_saslname(user)),
        }
    }

    /// client-first-message.
    pub fn first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2_header, self.bare).into_bytes()
    }

    /// client-final-message for `password`, computed from the server's first message, and the
    /// server-final message a genuine server must answer with. An unparsable server message
    /// yields a proof that cannot verify.
    pub fn last(&self, server_first: &[u8], password: &str) -> (Vec<u8>, Vec<u8>) {
        let sf = String::from_utf8_lossy(server_first).to_string();
        let mut nonce = "";
        let mut salt = Vec::new();
        let mut iterations = 1;
        for part in sf.split(',') {
            if let Some(v) = part.strip_prefix("r=") {
                nonce = v;
            } else if let Some(v) = part.strip_prefix("s=") {
                salt = STANDARD.decode(v).unwrap_or_default();
            } else if let Some(v) = part.strip_prefix("i=") {
                iterations = v.parse().unwrap_or(1);
            }
        }
        let m = self.mechanism;
        let without_proof = format!("c={},r={nonce}", STANDARD.encode(&self.gs2_header));
        let auth = format!("{},{sf},{without_proof}", self.bare);
        let salted = m.salted_password(password.as_bytes(), &salt, iterations);
        let client_key = m.client_key(&salted);
        let signature = m.hmac(&m.hash(&client_key), auth.as_bytes());
        let proof = xor(&client_key, &signature).unwrap_or_default();
        let server_signature = m.hmac(&m.server_key(&salted), auth.as_bytes());
        (
            format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes(),
            format!("v={}", STANDARD.encode(server_signature)).into_bytes(),
        )
    }
}
