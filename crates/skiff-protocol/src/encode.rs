//! Response encoding: `[i32 size][response header][body]`, plus the hand-written ApiVersions
//! v0 fallback that answers ApiVersions requests at versions we do not know (KIP-511).
//!
//! kafka-protocol writes a tagged field only when it differs from its default, so an
//! ApiVersions v3+ response built with default optional fields ends in a single 0x00 byte;
//! librdkafka 2.0.2 (Debian's kcat) fails on anything more. Tests pin this.
//!
//! Thread-safety: pure functions. No on-disk format.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::api::Api;
use crate::error::EncodeError;
use crate::streams::{OwnRequest, OwnResponse};
use crate::supported::supported_range;

/// Kafka's UNSUPPORTED_VERSION error code.
pub const UNSUPPORTED_VERSION: i16 = 35;

/// Encodes a full response frame: size prefix, header at
/// `api_key.response_header_version(version)`, body at `version`.
pub fn encode_response(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseKind,
) -> Result<Bytes, EncodeError> {
    let fail = |reason: String| EncodeError::Body {
        api_key: format!("{api_key:?}"),
        version,
        reason,
    };
    framed(|buf| {
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(buf, api_key.response_header_version(version))
            .map_err(|e| fail(format!("header: {e:#}")))?;
        body.encode(buf, version)
            .map_err(|e| fail(format!("{e:#}")))
    })
}

/// Encodes a full response frame of an API Skiff codes itself: size prefix, response header
/// v1 (every version of these APIs is flexible), body at `version`.
pub fn encode_own_response(
    correlation_id: i32,
    version: i16,
    body: &OwnResponse,
) -> Result<Bytes, EncodeError> {
    let api = Api::Own(body.api());
    let fail = |reason: String| EncodeError::Body {
        api_key: api.name(),
        version,
        reason,
    };
    framed(|buf| {
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(buf, api.response_header_version(version))
            .map_err(|e| fail(format!("header: {e:#}")))?;
        body.encode(buf, version).map_err(fail)
    })
}

/// A full request frame of an API Skiff codes itself, as a client sends it (tests, benchmark
/// and test clients): size prefix, request header v2 (api key, version, correlation id,
/// client id, no tagged fields), body at `version`.
pub fn encode_own_request(
    correlation_id: i32,
    client_id: Option<&str>,
    version: i16,
    body: &OwnRequest,
) -> Result<Bytes, EncodeError> {
    let api = Api::Own(body.api());
    let fail = |reason: String| EncodeError::Body {
        api_key: api.name(),
        version,
        reason,
    };
    framed(|buf| {
        RequestHeader::default()
            .with_request_api_key(api.key())
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(client_id.map(|c| StrBytes::from_string(c.to_string())))
            .encode(buf, api.request_header_version(version))
            .map_err(|e| fail(format!("header: {e:#}")))?;
        body.encode(buf, version).map_err(fail)
    })
}

/// A frame: `write` appends header and body after a size prefix, which is then filled in.
fn framed(
    write: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
) -> Result<Bytes, EncodeError> {
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    write(&mut buf)?;
    let size = i32::try_from(buf.len() - 4).map_err(|_| EncodeError::TooLarge(buf.len() - 4))?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

/// The full frame (size prefix included) of an ApiVersions **v0** response with error
/// UNSUPPORTED_VERSION (35) and only the ApiVersions range: the answer to an ApiVersions
/// request at a version we do not support. Like Kafka (KIP-511), the one entry tells the
/// client which version to retry with. Written by hand so it cannot fail:
/// `size i32 | correlation_id i32 | error_code i16 | [api_key i16, min i16, max i16]`.
pub fn api_versions_fallback(correlation_id: i32) -> Bytes {
    let (min, max) = supported_range(ApiKey::ApiVersions).unwrap_or((0, 0));
    let body_len: i32 = 4 + 2 + 4 + 6;
    let mut buf = BytesMut::with_capacity(4 + body_len as usize);
    buf.put_i32(body_len);
    buf.put_i32(correlation_id);
    buf.put_i16(UNSUPPORTED_VERSION);
    buf.put_i32(1);
    buf.put_i16(ApiKey::ApiVersions as i16);
    buf.put_i16(min);
    buf.put_i16(max);
    buf.freeze()
}
