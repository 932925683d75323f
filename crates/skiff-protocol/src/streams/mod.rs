//! Streams groups (KIP-1071, Kafka 4.4): StreamsGroupHeartbeat (88) and StreamsGroupDescribe
//! (89), the first APIs Skiff codes itself because kafka-protocol 0.18 has no messages for
//! them. The structs are written from Kafka 4.4's JSON schemas; their codec is
//! [`crate::wire`] (bounds-checked by construction, see there), not the schema walker that
//! guards kafka-protocol's decoders.
//!
//! [`OwnRequest`] and [`OwnResponse`] are what the request pipeline carries for these APIs
//! ([`crate::RequestBody::Own`], and the broker's own-response reply). Every message can also
//! be encoded as a request and decoded as a response, for tests and test clients.
//!
//! Thread-safety: plain data and pure functions. No on-disk format.

mod common;
pub mod describe;
pub mod heartbeat;

use bytes::BytesMut;

use crate::api::OwnApi;
use crate::guard::GuardError;
use crate::wire::Wire;

pub use crate::wire::{RawTaggedField, TaggedFields};
pub use describe::{StreamsGroupDescribeRequest, StreamsGroupDescribeResponse};
pub use heartbeat::{StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse};

/// A request body of an API Skiff codes itself.
// Moved once per request; boxing the heartbeat would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum OwnRequest {
    StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest),
    StreamsGroupDescribe(StreamsGroupDescribeRequest),
}

/// A response body of an API Skiff codes itself.
// Moved once per response, and boxed in the connection's queue.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum OwnResponse {
    StreamsGroupHeartbeat(StreamsGroupHeartbeatResponse),
    StreamsGroupDescribe(StreamsGroupDescribeResponse),
}

/// One message of an own API, request or response: its codec at a version.
pub trait OwnMessage: Sized {
    /// The API the message belongs to.
    const API: OwnApi;

    /// Decodes a whole body at `version`. Never panics and allocates only for elements
    /// actually present, whatever the bytes; fails for a version outside the codec's range.
    fn decode(body: &[u8], version: i16) -> Result<Self, GuardError>;

    /// Appends the body at `version` to `buf`. Fails (a bug of the caller, never of the
    /// peer) for a version outside the codec's range or a field set that the version cannot
    /// carry.
    fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), String>;
}

fn in_range(api: OwnApi, version: i16) -> bool {
    let (min, max) = api.codec_range();
    (min..=max).contains(&version)
}

macro_rules! own_message {
    ($($t:ty => $api:ident),* $(,)?) => {$(
        impl OwnMessage for $t {
            const API: OwnApi = OwnApi::$api;

            fn decode(body: &[u8], version: i16) -> Result<Self, GuardError> {
                if !in_range(Self::API, version) {
                    return Err(GuardError {
                        offset: 0,
                        what: format!("{} v{version} has no codec", Self::API.name()),
                    });
                }
                crate::wire::decode(body, version)
            }

            fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), String> {
                if !in_range(Self::API, version) {
                    return Err(format!("{} v{version} has no codec", Self::API.name()));
                }
                Wire::write(self, buf, version)
            }
        }
    )*};
}

own_message!(
    StreamsGroupHeartbeatRequest => StreamsGroupHeartbeat,
    StreamsGroupHeartbeatResponse => StreamsGroupHeartbeat,
    StreamsGroupDescribeRequest => StreamsGroupDescribe,
    StreamsGroupDescribeResponse => StreamsGroupDescribe,
);

impl From<StreamsGroupHeartbeatRequest> for OwnRequest {
    fn from(r: StreamsGroupHeartbeatRequest) -> OwnRequest {
        OwnRequest::StreamsGroupHeartbeat(r)
    }
}

impl From<StreamsGroupDescribeRequest> for OwnRequest {
    fn from(r: StreamsGroupDescribeRequest) -> OwnRequest {
        OwnRequest::StreamsGroupDescribe(r)
    }
}

impl OwnRequest {
    /// Decodes the request body of `api` at `version`.
    pub fn decode(api: OwnApi, body: &[u8], version: i16) -> Result<OwnRequest, GuardError> {
        Ok(match api {
            OwnApi::StreamsGroupHeartbeat => {
                OwnRequest::StreamsGroupHeartbeat(OwnMessage::decode(body, version)?)
            }
            OwnApi::StreamsGroupDescribe => {
                OwnRequest::StreamsGroupDescribe(OwnMessage::decode(body, version)?)
            }
        })
    }

    /// The answer to this request when the whole request fails with Kafka error `code`
    /// (authorization, throttling with an error, a coordinator that cannot answer): for a
    /// heartbeat the top-level error, for a describe the error on every requested group,
    /// as Kafka's `getErrorResponse` of these requests answers.
    pub fn error_response(&self, code: i16) -> OwnResponse {
        match self {
            OwnRequest::StreamsGroupHeartbeat(_) => {
                OwnResponse::StreamsGroupHeartbeat(StreamsGroupHeartbeatResponse {
                    error_code: code,
                    ..Default::default()
                })
            }
            OwnRequest::StreamsGroupDescribe(r) => {
                OwnResponse::StreamsGroupDescribe(StreamsGroupDescribeResponse {
                    groups: r
                        .group_ids
                        .iter()
                        .map(|id| describe::DescribedGroup {
                            group_id: id.clone(),
                            error_code: code,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
            }
        }
    }

    /// Appends the body at `version` to `buf` (clients and tests).
    pub fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), String> {
        match self {
            OwnRequest::StreamsGroupHeartbeat(r) => r.encode(buf, version),
            OwnRequest::StreamsGroupDescribe(r) => r.encode(buf, version),
        }
    }

    /// The API of the request.
    pub fn api(&self) -> OwnApi {
        match self {
            OwnRequest::StreamsGroupHeartbeat(_) => OwnApi::StreamsGroupHeartbeat,
            OwnRequest::StreamsGroupDescribe(_) => OwnApi::StreamsGroupDescribe,
        }
    }
}

impl OwnResponse {
    /// The API of the response.
    pub fn api(&self) -> OwnApi {
        match self {
            OwnResponse::StreamsGroupHeartbeat(_) => OwnApi::StreamsGroupHeartbeat,
            OwnResponse::StreamsGroupDescribe(_) => OwnApi::StreamsGroupDescribe,
        }
    }

    /// Appends the body at `version` to `buf`.
    pub fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), String> {
        match self {
            OwnResponse::StreamsGroupHeartbeat(r) => r.encode(buf, version),
            OwnResponse::StreamsGroupDescribe(r) => r.encode(buf, version),
        }
    }

    /// Decodes the response body of `api` at `version` (clients and tests).
    pub fn decode(api: OwnApi, body: &[u8], version: i16) -> Result<OwnResponse, GuardError> {
        Ok(match api {
            OwnApi::StreamsGroupHeartbeat => {
                OwnResponse::StreamsGroupHeartbeat(OwnMessage::decode(body, version)?)
            }
            OwnApi::StreamsGroupDescribe => {
                OwnResponse::StreamsGroupDescribe(OwnMessage::decode(body, version)?)
            }
        })
    }

    /// Decodes a response frame as a client reads it (after the size prefix): response
    /// header v1 (correlation id, tagged fields), then the body of `api` at `version`.
    /// Returns the correlation id and the response.
    pub fn decode_frame(
        api: OwnApi,
        version: i16,
        frame: &[u8],
    ) -> Result<(i32, OwnResponse), GuardError> {
        let mut r = crate::wire::Reader::new(frame);
        let correlation_id = <i32 as Wire>::read(&mut r, version)?;
        crate::wire::TaggedFields::read(&mut r)?;
        let at = frame.len() - r.remaining();
        let body = OwnResponse::decode(api, &frame[at..], version).map_err(|e| GuardError {
            offset: at + e.offset,
            what: e.what,
        })?;
        Ok((correlation_id, body))
    }

    /// The response's `throttle_time_ms` (both streams responses have one).
    pub fn throttle_time_ms(&self) -> i32 {
        match self {
            OwnResponse::StreamsGroupHeartbeat(r) => r.throttle_time_ms,
            OwnResponse::StreamsGroupDescribe(r) => r.throttle_time_ms,
        }
    }

    /// Raises `throttle_time_ms` to `ms`, never lowers it (KIP-219, as for crate responses).
    pub fn raise_throttle(&mut self, ms: i32) {
        let t = match self {
            OwnResponse::StreamsGroupHeartbeat(r) => &mut r.throttle_time_ms,
            OwnResponse::StreamsGroupDescribe(r) => &mut r.throttle_time_ms,
        };
        *t = (*t).max(ms);
    }
}
