//! The SASL state machine of one connection on a SASL_PLAINTEXT or SASL_SSL listener, as
//! Kafka's `SaslServerAuthenticator`, without I/O: the connection hands it every frame it
//! reads and does what the returned [`Gate`] says.
//!
//! Before authentication only ApiVersions (once, before the handshake), SaslHandshake and then
//! SaslAuthenticate are served; any other request closes the connection without an answer
//! ("Unexpected Kafka request of type X during SASL handshake."). A SaslHandshake v0 switches
//! the exchange to raw tokens: the following frames are the mechanism's bytes, not Kafka
//! requests, and the answers are size-prefixed raw tokens. A SaslHandshake for a mechanism
//! the listener does not offer answers UNSUPPORTED_SASL_MECHANISM with the enabled list and
//! closes; a failed SaslAuthenticate answers SASL_AUTHENTICATION_FAILED with Kafka's message
//! and closes; another request in the middle of the exchange answers ILLEGAL_SASL_STATE
//! (when Skiff can build that request's error response: SaslHandshake, ApiVersions) and
//! closes. The connection delays those failure answers by
//! `connection.failed.authentication.delay.ms`, as Kafka does.
//!
//! After authentication (KIP-368): the session expires after
//! `min(connections.max.reauth.ms, credential lifetime)` when either is set. A SaslHandshake
//! then starts a re-authentication (at most one per second, as Kafka), which must keep the
//! mechanism and the principal; a request other than SaslHandshake on an expired session
//! closes the connection. Every other request passes through to dispatch.
//!
//! One value per connection, owned by its reader task; no sharing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, RequestKind, ResponseKind, SaslAuthenticateResponse,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use skiff_auth::server::{check_reauthenticated_principal, SaslServer, Step};
use skiff_protocol::{DecodedRequest, RequestBody, RequestError};

use crate::acl_operations::Principal;
use crate::sasl_setup::SaslListener;

/// Kafka's error codes used here.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const ILLEGAL_SASL_STATE: i16 = 34;
const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// Kafka allows one re-authentication per second per connection.
const MIN_REAUTH_INTERVAL: Duration = Duration::from_secs(1);

/// Where a response goes: the request's api key, version and correlation id.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answering {
    pub api_key: skiff_protocol::Api,
    pub version: i16,
    pub correlation_id: i32,
}

/// What the connection does with a frame.
// Moved once per frame; boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Gate {
    /// Not the gate's business: decode and dispatch as usual.
    Pass(Bytes),
    /// Send this response and read on.
    Respond(Answering, ResponseKind),
    /// Send these bytes as they are (already a whole frame) and read on.
    RawFrame(Bytes),
    /// Send this raw token (size-prefixed, v0 path) and read on.
    RawToken(Vec<u8>),
    /// Wait `connection.failed.authentication.delay.ms`, send the response if any, close.
    Fail(Option<(Answering, ResponseKind)>, String),
    /// Close at once without answering.
    Close(String),
}

struct Exchange {
    server: Box<dyn SaslServer>,
    /// SaslHandshake v0: tokens are raw frames.
    raw: bool,
}

enum State {
    /// Nothing read yet (Kafka's INITIAL_REQUEST / HANDSHAKE_OR_VERSIONS_REQUEST).
    Initial,
    /// ApiVersions answered: only SaslHandshake now (HANDSHAKE_REQUEST).
    Handshake,
    /// A handshake chose a mechanism (AUTHENTICATE).
    Authenticate(Exchange),
    /// A re-authentication asked for another mechanism: the next frame closes.
    ReauthBadMechanism(String),
    /// Authenticated; requests pass (COMPLETE).
    Complete,
}

/// The authenticated session.
#[derive(Clone, Debug)]
struct Session {
    principal: Principal<'static>,
    mechanism: String,
    /// When the session expires (KIP-368), if it does.
    expires: Option<Instant>,
}

pub(crate) struct SaslGate {
    listener: Arc<SaslListener>,
    state: State,
    session: Option<Session>,
    /// Set while re-authenticating: the session being renewed.
    reauthenticating: bool,
    /// When the exchange in progress started (the connection bounds it in time).
    exchange_started: Option<Instant>,
    last_reauth_start: Option<Instant>,
}

impl SaslGate {
    pub(crate) fn new(listener: Arc<SaslListener>) -> SaslGate {
        SaslGate {
            listener,
            state: State::Initial,
            session: None,
            reauthenticating: false,
            exchange_started: Some(Instant::now()),
            last_reauth_start: None,
        }
    }

    /// The principal, once authenticated.
    pub(crate) fn principal(&self) -> Option<&Principal<'static>> {
        self.session.as_ref().map(|s| &s.principal)
    }

    /// When the exchange in progress (authentication or re-authentication) started; `None`
    /// between exchanges.
    pub(crate) fn exchange_started(&self) -> Option<Instant> {
        self.exchange_started
    }

    /// The largest frame to accept now: `sasl.server.max.receive.size` during an exchange,
    /// else `normal`.
    pub(crate) fn max_frame(&self, normal: usize) -> usize {
        if self.exchange_started.is_some() {
            self.listener.max_receive_size
        } else {
            normal
        }
    }

    pub(crate) fn failed_auth_delay(&self) -> Duration {
        self.listener.failed_auth_delay
    }

    /// Decides what to do with one frame body.
    pub(crate) fn on_frame(&mut self, frame: Bytes, now: Instant, now_ms: i64) -> Gate {
        match std::mem::replace(&mut self.state, State::Complete) {
            State::Complete => self.when_complete(frame, now, now_ms),
            State::Initial => self.handshake_phase(frame, true, now),
            State::Handshake => self.handshake_phase(frame, false, now),
            State::ReauthBadMechanism(message) => Gate::Close(message),
            State::Authenticate(exchange) => self.authenticate(exchange, frame, now, now_ms),
        }
    }

    fn when_complete(&mut self, frame: Bytes, now: Instant, now_ms: i64) -> Gate {
        let api_key = frame
            .get(..2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
            .and_then(|k| ApiKey::try_from(k).ok());
        let Some(session) = &self.session else {
            return Gate::Close("no session".into());
        };
        let recent = self
            .last_reauth_start
            .is_some_and(|t| now.duration_since(t) < MIN_REAUTH_INTERVAL);
        if api_key == Some(ApiKey::SaslHandshake) && session.expires.is_some() && !recent {
            // KIP-368: a re-authentication.
            self.last_reauth_start = Some(now);
            self.reauthenticating = true;
            self.exchange_started = Some(now);
            return self.handshake_phase(frame, false, now);
        }
        if session.expires.is_some_and(|e| e <= now) {
            return Gate::Close(
                "the SASL session expired and the client did not re-authenticate (connections.max.reauth.ms)"
                    .into(),
            );
        }
        let _ = now_ms;
        Gate::Pass(frame)
    }

    /// ApiVersions / SaslHandshake before a mechanism is chosen (also a re-authentication's
    /// handshake). `first`: nothing was read before on this connection.
    fn handshake_phase(&mut self, frame: Bytes, first: bool, now: Instant) -> Gate {
        let phase = if self.reauthenticating {
            "re-authentication"
        } else {
            "authentication"
        };
        let request = match skiff_protocol::decode_request(frame) {
            Ok(r) => r,
            Err(RequestError::ApiVersionsFallback { correlation_id, .. }) if first => {
                // Kafka answers UNSUPPORTED_VERSION and lets the client retry.
                self.state = State::Initial;
                return Gate::RawFrame(skiff_protocol::api_versions_fallback(correlation_id));
            }
            Err(RequestError::Unsupported { api_key, .. }) => {
                return Gate::Close(format!(
                    "Unexpected Kafka request of type {api_key} during SASL handshake."
                ))
            }
            Err(e) if first => {
                return Gate::Close(format!(
                    "first packet is not a Kafka request ({e}); Kafka would take it as GSSAPI, which is not supported"
                ))
            }
            Err(e) => return Gate::Close(format!("malformed request during SASL {phase}: {e}")),
        };
        let answering = answering(&request);
        let RequestBody::Kafka(body) = request.body else {
            return Gate::Close(format!(
                "Unexpected Kafka request of type {} during SASL handshake.",
                answering.api_key
            ));
        };
        match body {
            RequestKind::ApiVersions(_) if first && !self.reauthenticating => {
                self.state = State::Handshake;
                let response = ApiVersionsResponse::default()
                    .with_api_keys(skiff_protocol::api_version_entries());
                Gate::Respond(answering, ResponseKind::ApiVersions(response))
            }
            RequestKind::ApiVersions(_) => Gate::Close(format!(
                "Unexpected ApiVersions request received during SASL {phase}"
            )),
            RequestKind::SaslHandshake(h) => {
                self.handshake(answering, h.mechanism.to_string(), now)
            }
            _ => Gate::Close(format!(
                "Unexpected Kafka request of type {} during SASL handshake.",
                answering.api_key
            )),
        }
    }

    fn handshake(&mut self, answering: Answering, mechanism: String, now: Instant) -> Gate {
        let enabled = self.listener.mechanisms.names();
        let list: Vec<StrBytes> = enabled
            .iter()
            .map(|m| StrBytes::from_static_str(m))
            .collect();
        let Some(server) = self.listener.mechanisms.server(&mechanism) else {
            let response = SaslHandshakeResponse::default()
                .with_error_code(UNSUPPORTED_SASL_MECHANISM)
                .with_mechanisms(list);
            return Gate::Fail(
                Some((answering, ResponseKind::SaslHandshake(response))),
                format!("Unsupported SASL mechanism {mechanism}"),
            );
        };
        let response = SaslHandshakeResponse::default().with_mechanisms(list);
        if let (true, Some(session)) = (self.reauthenticating, &self.session) {
            if session.mechanism != mechanism {
                self.state = State::ReauthBadMechanism(format!(
                    "SASL mechanism '{mechanism}' requested by client is not supported for re-authentication of mechanism '{}'",
                    session.mechanism
                ));
                return Gate::Respond(answering, ResponseKind::SaslHandshake(response));
            }
        }
        self.exchange_started.get_or_insert(now);
        self.state = State::Authenticate(Exchange {
            server,
            raw: answering.version == 0,
        });
        Gate::Respond(answering, ResponseKind::SaslHandshake(response))
    }

    fn authenticate(
        &mut self,
        mut exchange: Exchange,
        frame: Bytes,
        now: Instant,
        now_ms: i64,
    ) -> Gate {
        if exchange.raw {
            return match exchange.server.step(&frame, now_ms) {
                Step::Continue(token) => {
                    self.state = State::Authenticate(exchange);
                    Gate::RawToken(token)
                }
                Step::Done(done) => match self.complete(&exchange, done, now) {
                    Ok((token, _)) => Gate::RawToken(token),
                    Err(reason) => Gate::Close(reason),
                },
                // Kafka's raw path has no error response: it closes.
                Step::Fail(e) => Gate::Close(format!("SASL authentication failed: {}", e.detail())),
            };
        }
        let request = match skiff_protocol::decode_request(frame) {
            Ok(r) => r,
            Err(e) => {
                return Gate::Close(format!("malformed request during SASL authentication: {e}"))
            }
        };
        let answering = answering(&request);
        let auth_bytes = match request.body {
            RequestBody::Kafka(RequestKind::SaslAuthenticate(r)) => r.auth_bytes,
            other => {
                let message = format!(
                    "Unexpected Kafka request of type {} during SASL authentication.",
                    answering.api_key
                );
                let response = match &other {
                    RequestBody::Kafka(kind) => illegal_state(answering, kind),
                    RequestBody::Own(_) => None,
                };
                return Gate::Fail(response, message);
            }
        };
        let fail = |message: &str| {
            let response = SaslAuthenticateResponse::default()
                .with_error_code(SASL_AUTHENTICATION_FAILED)
                .with_error_message(Some(StrBytes::from_string(message.to_string())));
            Some((answering, ResponseKind::SaslAuthenticate(response)))
        };
        match exchange.server.step(&auth_bytes, now_ms) {
            Step::Continue(token) => {
                self.state = State::Authenticate(exchange);
                let response =
                    SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(token));
                Gate::Respond(answering, ResponseKind::SaslAuthenticate(response))
            }
            Step::Done(done) => match self.complete(&exchange, done, now) {
                Ok((token, lifetime_ms)) => {
                    let mut response =
                        SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(token));
                    if answering.version >= 1 {
                        response.session_lifetime_ms = lifetime_ms;
                    }
                    Gate::Respond(answering, ResponseKind::SaslAuthenticate(response))
                }
                Err(message) => Gate::Fail(fail(&message), message),
            },
            Step::Fail(e) => {
                let e = if self.reauthenticating {
                    e.into_reauthentication()
                } else {
                    e
                };
                let reason = format!(
                    "SASL {} failed: {}",
                    exchange.server.mechanism().name(),
                    e.detail()
                );
                Gate::Fail(fail(e.client_message()), reason)
            }
        }
    }

    /// A successful exchange: checks a re-authentication's principal, computes the session
    /// lifetime as Kafka does, and records the session. Returns the last token for the client
    /// and the session lifetime in ms (0: none), or the failure message.
    fn complete(
        &mut self,
        exchange: &Exchange,
        done: skiff_auth::Authenticated,
        now: Instant,
    ) -> Result<(Vec<u8>, i64), String> {
        if let (true, Some(session)) = (self.reauthenticating, &self.session) {
            check_reauthenticated_principal(&session.principal.to_string(), &done.principal)
                .map_err(|e| e.client_message().to_string())?;
        }
        let lifetime_ms = session_lifetime_ms(done.session_lifetime_ms, self.listener.reauth_ms);
        let name = done
            .principal
            .strip_prefix("User:")
            .unwrap_or(&done.principal)
            .to_string();
        self.session = Some(Session {
            principal: Principal {
                kind: "User",
                name: std::borrow::Cow::Owned(name),
            },
            mechanism: exchange.server.mechanism().name().to_string(),
            expires: lifetime_ms.map(|ms| now + Duration::from_millis(ms.unsigned_abs())),
        });
        self.state = State::Complete;
        self.reauthenticating = false;
        self.exchange_started = None;
        Ok((
            done.server_final.unwrap_or_default(),
            lifetime_ms.unwrap_or(0),
        ))
    }
}

/// Kafka's session lifetime (`calcCompletionTimesAndReturnSessionLifetimeMs`): `None` when
/// neither the credential (ms left) nor `connections.max.reauth.ms` (> 0) limits it, else the
/// smaller of the two, never negative.
fn session_lifetime_ms(credential_ms: Option<i64>, reauth_ms: i64) -> Option<i64> {
    match (credential_ms, reauth_ms > 0) {
        (None, false) => None,
        (None, true) => Some(reauth_ms),
        (Some(credential), false) => Some(credential.max(0)),
        (Some(credential), true) => Some(credential.min(reauth_ms).max(0)),
    }
}

fn answering(request: &DecodedRequest) -> Answering {
    Answering {
        api_key: request.api_key,
        version: request.api_version,
        correlation_id: request.header.correlation_id,
    }
}

/// ILLEGAL_SASL_STATE as the error response of `request`, for the request types whose
/// error response Skiff builds here; others close without an answer.
fn illegal_state(answering: Answering, request: &RequestKind) -> Option<(Answering, ResponseKind)> {
    let response = match request {
        RequestKind::SaslHandshake(_) => ResponseKind::SaslHandshake(
            SaslHandshakeResponse::default().with_error_code(ILLEGAL_SASL_STATE),
        ),
        RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(
            ApiVersionsResponse::default().with_error_code(ILLEGAL_SASL_STATE),
        ),
        _ => return None,
    };
    Some((answering, response))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::{
        ApiVersionsRequest, MetadataRequest, RequestHeader, SaslAuthenticateRequest,
        SaslHandshakeRequest,
    };
    use kafka_protocol::protocol::Encodable;
    use skiff_auth::plain::{MemoryPlainStore, PlainSecret};

    fn listener(reauth_ms: i64) -> Arc<SaslListener> {
        let mut users = MemoryPlainStore::new();
        users.insert("alice", PlainSecret::Clear("pw".into()));
        Arc::new(SaslListener {
            mechanisms: skiff_auth::Mechanisms::new().with_plain(Arc::new(users)),
            max_receive_size: 1000,
            reauth_ms,
            failed_auth_delay: Duration::ZERO,
        })
    }

    fn frame<R: Encodable>(key: ApiKey, version: i16, body: &R) -> Bytes {
        let mut buf = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .encode(&mut buf, key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    fn handshake() -> Bytes {
        frame(
            ApiKey::SaslHandshake,
            1,
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
        )
    }

    fn auth(password: &str) -> Bytes {
        let token = format!("\0alice\0{password}");
        frame(
            ApiKey::SaslAuthenticate,
            1,
            &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token)),
        )
    }

    fn metadata() -> Bytes {
        frame(ApiKey::Metadata, 12, &MetadataRequest::default())
    }

    fn login(gate: &mut SaslGate, now: Instant) -> i64 {
        assert!(matches!(
            gate.on_frame(handshake(), now, 0),
            Gate::Respond(..)
        ));
        match gate.on_frame(auth("pw"), now, 0) {
            Gate::Respond(_, ResponseKind::SaslAuthenticate(r)) => {
                assert_eq!(r.error_code, 0);
                r.session_lifetime_ms
            }
            _ => panic!("not authenticated"),
        }
    }

    #[test]
    fn lifetime_is_the_smaller_limit() {
        assert_eq!(session_lifetime_ms(None, 0), None);
        assert_eq!(session_lifetime_ms(None, 5), Some(5));
        assert_eq!(session_lifetime_ms(Some(9), 0), Some(9));
        assert_eq!(session_lifetime_ms(Some(9), 5), Some(5));
        assert_eq!(session_lifetime_ms(Some(3), 5), Some(3));
        assert_eq!(session_lifetime_ms(Some(-3), 5), Some(0));
    }

    #[test]
    fn only_the_sasl_requests_pass_before_authentication() {
        let now = Instant::now();
        let mut gate = SaslGate::new(listener(0));
        assert!(
            matches!(gate.on_frame(metadata(), now, 0), Gate::Close(m) if m.contains("Metadata"))
        );
        let mut gate = SaslGate::new(listener(0));
        let versions = frame(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        assert!(matches!(
            gate.on_frame(versions.clone(), now, 0),
            Gate::Respond(..)
        ));
        assert!(
            matches!(gate.on_frame(versions, now, 0), Gate::Close(_)),
            "ApiVersions twice"
        );
        let mut gate = SaslGate::new(listener(0));
        assert!(matches!(
            gate.on_frame(Bytes::from_static(b"\x60\x01"), now, 0),
            Gate::Close(_)
        ));
        assert_eq!(gate.max_frame(1 << 20), 1000);
    }

    #[test]
    fn a_session_expires_and_re_authentication_renews_it() {
        let t0 = Instant::now();
        let mut gate = SaslGate::new(listener(100));
        assert_eq!(login(&mut gate, t0), 100);
        assert_eq!(
            gate.max_frame(1 << 20),
            1 << 20,
            "normal limit once authenticated"
        );
        assert_eq!(
            gate.principal().map(|p| p.to_string()),
            Some("User:alice".into())
        );
        assert!(matches!(gate.on_frame(metadata(), t0, 0), Gate::Pass(_)));
        let later = t0 + Duration::from_millis(150);
        assert!(
            matches!(gate.on_frame(metadata(), later, 0), Gate::Close(m) if m.contains("expired"))
        );
        // A handshake on an expired session starts a re-authentication.
        let mut gate = SaslGate::new(listener(100));
        login(&mut gate, t0);
        assert_eq!(login(&mut gate, later), 100);
        assert!(matches!(
            gate.on_frame(metadata(), later + Duration::from_millis(50), 0),
            Gate::Pass(_)
        ));
        // Without a session lifetime, SaslHandshake goes to dispatch (ILLEGAL_SASL_STATE).
        let mut gate = SaslGate::new(listener(0));
        login(&mut gate, t0);
        assert!(matches!(
            gate.on_frame(handshake(), later, 0),
            Gate::Pass(_)
        ));
    }

    #[test]
    fn a_wrong_password_fails_with_kafkas_message() {
        let mut gate = SaslGate::new(listener(0));
        let now = Instant::now();
        assert!(matches!(
            gate.on_frame(handshake(), now, 0),
            Gate::Respond(..)
        ));
        match gate.on_frame(auth("nope"), now, 0) {
            Gate::Fail(Some((_, ResponseKind::SaslAuthenticate(r))), reason) => {
                assert_eq!(r.error_code, 58);
                assert!(!reason.contains("nope"));
            }
            _ => panic!("not a failure"),
        }
    }
}
