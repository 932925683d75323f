//! Request decoding: header prefix → api key/version gate → our bounds-checked header walk →
//! our body guard ([`crate::guard`]) → kafka-protocol's decoder.
//!
//! Contract: never panics, never aborts, never reserves memory beyond what the frame can hold,
//! whatever the bytes. Decoded strings and record bytes are zero-copy slices of the frame, so
//! they keep the whole frame alive: copy anything stored long-term.
//!
//! Thread-safety: pure function. No on-disk format.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

use crate::error::RequestError;
use crate::guard::{check_header, check_request_body, header_prefix};
use crate::supported::supported_range;

/// One decoded request.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedRequest {
    /// Api key (always in [`crate::SUPPORTED`]).
    pub api_key: ApiKey,
    /// Api version (always within the supported range).
    pub api_version: i16,
    /// The request header (correlation id, client id).
    pub header: RequestHeader,
    /// The decoded body.
    pub body: RequestKind,
}

/// Decodes one request frame (without its 4-byte size prefix).
///
/// Never panics, never aborts, never reserves memory beyond what the frame can hold: the
/// header and body are walked by our own bounds-checked guard before kafka-protocol decodes
/// them. Order of checks: 8-byte prefix (else `Malformed`), api key and version against
/// [`crate::SUPPORTED`] (else `Unsupported`, or `ApiVersionsFallback` for ApiVersions), header
/// (else `Malformed`), body (else `BadBody`). Bytes after the body are ignored, as
/// kafka-protocol ignores them.
pub fn decode_request(mut frame: Bytes) -> Result<DecodedRequest, RequestError> {
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
    let api_key = ApiKey::try_from(prefix.api_key).map_err(|()| unsupported.clone())?;
    let version = prefix.api_version;
    let in_range =
        supported_range(api_key).is_some_and(|(min, max)| (min..=max).contains(&version));
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
    check_request_body(api_key, version, &frame).map_err(|e| bad_body(e.to_string()))?;
    let body = RequestKind::decode(api_key, &mut frame, version)
        .map_err(|e| bad_body(format!("{e:#}")))?;
    Ok(DecodedRequest {
        api_key,
        api_version: version,
        header,
        body,
    })
}
