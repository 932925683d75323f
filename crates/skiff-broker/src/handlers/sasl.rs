//! SaslHandshake and SaslAuthenticate when they reach dispatch: on a PLAINTEXT or SSL
//! listener, or on an authenticated SASL connection that is not re-authenticating (the
//! exchange itself is the connection's, see [`crate::net::sasl`]). Kafka's KafkaApis answers
//! both with ILLEGAL_SASL_STATE; so does Skiff.

use kafka_protocol::messages::{
    ResponseKind, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::context::RequestContext;
use crate::dispatch::Reply;

/// Kafka's ILLEGAL_SASL_STATE.
const ILLEGAL_SASL_STATE: i16 = 34;

pub async fn handshake(_ctx: &RequestContext, _request: SaslHandshakeRequest) -> Reply {
    Reply::Respond(ResponseKind::SaslHandshake(
        SaslHandshakeResponse::default().with_error_code(ILLEGAL_SASL_STATE),
    ))
}

pub async fn authenticate(_ctx: &RequestContext, _request: SaslAuthenticateRequest) -> Reply {
    Reply::Respond(ResponseKind::SaslAuthenticate(
        SaslAuthenticateResponse::default()
            .with_error_code(ILLEGAL_SASL_STATE)
            .with_error_message(Some(StrBytes::from_static_str(
                "SaslAuthenticate request received after successful authentication",
            ))),
    ))
}
