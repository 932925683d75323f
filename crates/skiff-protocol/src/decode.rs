//! Request decoding: header prefix → api key/version gate → our bounds-checked header walk →
//! our body guard ([`crate::guard`]) → kafka-protocol's decoder; or, for an API the crate does
//! not know ([`crate::OwnApi`]), our own bounds-checked decoder ([`crate::streams`]).
//!
//! Contract: never panics, never aborts, never reserves memory beyond what the frame can hold,
//! whatever the bytes. Decoded strings and record bytes are zero-copy slices of the frame, so
//! they keep the whole frame alive: copy anything stored long-term.
//!
//! Thread-safety: pure function. No on-disk format.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

use crate::api::Api;
use crate::error::RequestError;
use crate::guard::{check_header, check_request_body, header_prefix};
use crate::streams::OwnRequest;
use crate::supported::supported_range;

/// One decoded request.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedRequest {
    /// The API (always in [`crate::SUPPORTED`] or [`crate::SUPPORTED_OWN`]).
    pub api_key: Api,
    /// Api version (always within the supported range).
    pub api_version: i16,
    /// The request header (correlation id, client id).
    pub header: RequestHeader,
    /// The decoded body.
    pub body: RequestBody,
}

/// A decoded request body: one kafka-protocol knows, or one Skiff codes itself.
// The crate's bodies are far larger than ours, and moved once per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum RequestBody {
    /// A request of an API kafka-protocol decodes.
    Kafka(RequestKind),
    /// A request of an API Skiff decodes itself.
    Own(OwnRequest),
}

impl From<RequestKind> for RequestBody {
    fn from(kind: RequestKind) -> RequestBody {
        RequestBody::Kafka(kind)
    }
}

impl From<OwnRequest> for RequestBody {
    fn from(own: OwnRequest) -> RequestBody {
        RequestBody::Own(own)
    }
}

/// Decodes one request frame (without its 4-byte size prefix).
///
/// Never panics, never aborts, never reserves memory beyond what the frame can hold: the
/// header and body are walked by our own bounds-checked guard before kafka-protocol decodes
/// them. Order of checks: 8-byte prefix (else `Malformed`), api key and version against
/// [`crate::SUPPORTED`] (else `Unsupported`, or `ApiVersionsFallback` for ApiVersions), header
/// (else `Malformed`), body (else `BadBody`). Bytes after the body are ignored, as
/// kafka-protocol ignores them.
pub fn decode_request(frame: Bytes) -> Result<DecodedRequest, RequestError> {
    decode_served(frame, supported_range)
}

/// [`decode_request`] with the table of served versions given by `served` (tests decode the
/// streams APIs through the whole pipeline before they are listed in [`crate::SUPPORTED_OWN`]).
fn decode_served(
    mut frame: Bytes,
    served: impl Fn(Api) -> Option<(i16, i16)>,
) -> Result<DecodedRequest, RequestError> {
    let prefix = header_prefix(&frame).ok_or_else(|| {
        RequestError::Malformed(format!(
            "frame of {} bytes is shorter than the 8-byte header prefix",
            frame.len()
        ))
    })?;
    let unsupported = RequestError::Unsupported {
        api_key: prefix.api_key,
        api_version: prefix.api_version,
        correlation_id: prefix.correlation_id,
    };
    let api_key = Api::from_key(prefix.api_key).ok_or_else(|| unsupported.clone())?;
    let version = prefix.api_version;
    // An own API not (yet) in SUPPORTED_OWN is refused here exactly as an unknown key is.
    let in_range = served(api_key).is_some_and(|(min, max)| (min..=max).contains(&version));
    if !in_range {
        if api_key == ApiKey::ApiVersions {
            return Err(RequestError::ApiVersionsFallback {
                api_version: version,
                correlation_id: prefix.correlation_id,
            });
        }
        return Err(unsupported);
    }

    let header_version = api_key.request_header_version(version);
    let header_len = check_header(&frame, header_version)
        .map_err(|e| RequestError::Malformed(format!("request header: {e}")))?;
    let frame_len = frame.len();
    let header = RequestHeader::decode(&mut frame, header_version)
        .map_err(|e| RequestError::Malformed(format!("request header: {e:#}")))?;
    if frame_len - frame.remaining() != header_len {
        // Cannot happen unless our header walk and kafka-protocol disagree; refuse rather
        // than guard a body at the wrong offset.
        return Err(RequestError::Malformed(format!(
            "request header length mismatch: guard {header_len}, decoder {}",
            frame_len - frame.remaining()
        )));
    }

    let bad_body = |reason: String| RequestError::BadBody {
        api_key: prefix.api_key,
        api_version: version,
        correlation_id: prefix.correlation_id,
        reason,
    };
    let body = match api_key {
        Api::Kafka(key) => {
            check_request_body(key, version, &frame).map_err(|e| bad_body(e.to_string()))?;
            let kind = RequestKind::decode(key, &mut frame, version)
                .map_err(|e| bad_body(format!("{e:#}")))?;
            RequestBody::Kafka(kind)
        }
        Api::Own(own) => RequestBody::Own(
            OwnRequest::decode(own, &frame, version).map_err(|e| bad_body(e.to_string()))?,
        ),
    };
    Ok(DecodedRequest {
        api_key,
        api_version: version,
        header,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::OwnApi;
    use crate::streams::{OwnMessage, StreamsGroupDescribeRequest};
    use bytes::{BufMut, BytesMut};

    /// Served as they will be once the gate opens.
    fn streams_served(api: Api) -> Option<(i16, i16)> {
        match api {
            Api::Own(own) => Some(own.codec_range()),
            other => supported_range(other),
        }
    }

    fn describe_frame(version: i16, body: &StreamsGroupDescribeRequest) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(OwnApi::StreamsGroupDescribe.key());
        b.put_i16(version);
        b.put_i32(42);
        b.put_i16(3);
        b.put_slice(b"cli");
        b.put_u8(0); // header tagged fields
        body.encode(&mut b, version).unwrap();
        b.freeze()
    }

    #[test]
    fn client_frames_round_trip_through_the_pipeline() {
        use crate::streams::{OwnResponse, StreamsGroupHeartbeatRequest};
        use crate::streams::{StreamsGroupDescribeResponse, StreamsGroupHeartbeatResponse};
        let body = StreamsGroupDescribeRequest {
            group_ids: vec!["g".into(), "h".into()],
            include_authorized_operations: true,
            include_topology_description: true,
            ..Default::default()
        };
        // The helper writes exactly the frame laid out by hand above.
        let frame = crate::encode_own_request(42, Some("cli"), 1, &body.clone().into()).unwrap();
        assert_eq!(frame.slice(4..), describe_frame(1, &body));
        let heartbeat = OwnRequest::StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest {
            group_id: "g".into(),
            ..Default::default()
        });
        for v in 0..=1 {
            let frame = crate::encode_own_request(7, None, v, &heartbeat).unwrap();
            let d = decode_served(frame.slice(4..), streams_served).unwrap();
            assert_eq!(d.header.client_id, None);
            assert_eq!(d.body, RequestBody::Own(heartbeat.clone()));
        }
        for (api, response) in [
            (
                OwnApi::StreamsGroupHeartbeat,
                OwnResponse::StreamsGroupHeartbeat(StreamsGroupHeartbeatResponse {
                    member_id: "m".into(),
                    ..Default::default()
                }),
            ),
            (
                OwnApi::StreamsGroupDescribe,
                OwnResponse::StreamsGroupDescribe(StreamsGroupDescribeResponse {
                    throttle_time_ms: 3,
                    ..Default::default()
                }),
            ),
        ] {
            for v in 0..=1 {
                let frame = crate::encode_own_response(9, v, &response).unwrap();
                let size = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
                assert_eq!(usize::try_from(size).unwrap(), frame.len() - 4);
                assert_eq!(
                    OwnResponse::decode_frame(api, v, &frame[4..]).unwrap(),
                    (9, response.clone())
                );
                for len in 4..frame.len() {
                    assert!(OwnResponse::decode_frame(api, v, &frame[4..len]).is_err());
                }
            }
        }
    }

    #[test]
    fn streams_requests_past_the_served_versions_are_unsupported() {
        let body = StreamsGroupDescribeRequest {
            group_ids: vec!["g".into()],
            ..Default::default()
        };
        assert!(decode_request(describe_frame(1, &body)).is_ok());
        for v in [2i16, 7] {
            // A v1 body under a newer version number: refused before the body is read.
            let mut frame = BytesMut::from(&describe_frame(1, &body)[..]);
            frame[2..4].copy_from_slice(&v.to_be_bytes());
            assert_eq!(
                decode_request(frame.freeze()),
                Err(RequestError::Unsupported {
                    api_key: 89,
                    api_version: v,
                    correlation_id: 42
                })
            );
        }
    }

    #[test]
    fn served_streams_requests_decode_and_bad_bodies_are_bad_body() {
        let body = StreamsGroupDescribeRequest {
            group_ids: vec!["g".into(), "h".into()],
            include_authorized_operations: true,
            include_topology_description: true,
            ..Default::default()
        };
        let frame = describe_frame(1, &body);
        let d = decode_served(frame.clone(), streams_served).unwrap();
        assert_eq!(d.api_key, Api::Own(OwnApi::StreamsGroupDescribe));
        assert_eq!(d.api_version, 1);
        assert_eq!(d.header.correlation_id, 42);
        assert_eq!(d.header.client_id.as_deref(), Some("cli"));
        assert_eq!(
            d.body,
            RequestBody::Own(OwnRequest::StreamsGroupDescribe(body))
        );
        // The header ends at byte 14; every shorter frame is malformed, every cut body bad.
        for len in 0..frame.len() {
            match decode_served(frame.slice(..len), streams_served) {
                Err(RequestError::Malformed(_)) => assert!(len < 14, "{len}"),
                Err(RequestError::BadBody { api_key: 89, .. }) => assert!(len >= 14, "{len}"),
                other => panic!("{len}: {other:?}"),
            }
        }
        // Unknown versions are refused before the body is looked at.
        assert!(matches!(
            decode_served(
                describe_frame(1, &Default::default()).slice(..),
                |api| match api {
                    Api::Own(_) => Some((0, 0)),
                    other => supported_range(other),
                }
            ),
            Err(RequestError::Unsupported { api_key: 89, .. })
        ));
    }
}
