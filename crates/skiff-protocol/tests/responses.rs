//! Response encoding: frame layout, header versions, and the ApiVersions responses that old
//! librdkafka (2.0.2, Debian's kcat) must be able to parse.
#![allow(clippy::unwrap_used)]

use bytes::{Buf, Bytes};
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, MetadataResponse, ResponseHeader, ResponseKind,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use skiff_protocol::{
    api_version_entries, api_versions_fallback, encode_response, supported_range, EncodeError,
    SUPPORTED, UNSUPPORTED_VERSION,
};

/// Splits a response frame into (correlation id, rest) after checking its size prefix.
fn open_frame(frame: &Bytes, header_version: i16) -> (i32, Bytes) {
    let mut b = frame.clone();
    let size = b.get_i32();
    assert_eq!(size as usize, b.remaining(), "size prefix");
    let header = ResponseHeader::decode(&mut b, header_version).unwrap();
    (header.correlation_id, b)
}

#[test]
fn api_versions_v3_has_no_extra_tagged_fields() {
    let body = ApiVersionsResponse::default()
        .with_error_code(0)
        .with_api_keys(api_version_entries());
    for version in [3i16, 4] {
        let frame = encode_response(
            99,
            ApiKey::ApiVersions,
            version,
            &ResponseKind::ApiVersions(body.clone()),
        )
        .unwrap();
        // size | corr (header v0: no tagged fields) | error i16 | compact array of
        // (key, min, max, 0x00) | throttle i32 | 0x00 — nothing else.
        let n = SUPPORTED.len() + skiff_protocol::SUPPORTED_OWN.len();
        let expected_len = 4 + 4 + 2 + 1 + n * 7 + 4 + 1;
        assert!(
            n + 1 < 128,
            "array length must fit a 1-byte varint for this layout"
        );
        assert_eq!(frame.len(), expected_len, "v{version}: {frame:?}");
        assert_eq!(frame[frame.len() - 1], 0x00);
        assert_eq!(&frame[4..8], &99i32.to_be_bytes());
        assert_eq!(
            &frame[8..10],
            &0i16.to_be_bytes(),
            "header v0: error code right after corr"
        );
        let (corr, mut rest) = open_frame(&frame, 0);
        assert_eq!(corr, 99);
        let decoded = ApiVersionsResponse::decode(&mut rest, version).unwrap();
        assert_eq!(rest.remaining(), 0);
        assert_eq!(decoded, body);
    }
}

#[test]
fn api_versions_old_versions_round_trip() {
    let body = ApiVersionsResponse::default().with_api_keys(api_version_entries());
    for version in 0..=2 {
        let frame = encode_response(
            5,
            ApiKey::ApiVersions,
            version,
            &ResponseKind::ApiVersions(body.clone()),
        )
        .unwrap();
        let (corr, mut rest) = open_frame(&frame, 0);
        assert_eq!(corr, 5);
        assert_eq!(
            ApiVersionsResponse::decode(&mut rest, version).unwrap(),
            body
        );
        assert_eq!(rest.remaining(), 0);
    }
}

#[test]
fn fallback_is_v0_with_unsupported_version_and_only_the_api_versions_range() {
    let frame = api_versions_fallback(-7);
    let (corr, mut rest) = open_frame(&frame, 0);
    assert_eq!(corr, -7);
    let decoded = ApiVersionsResponse::decode(&mut rest, 0).unwrap();
    assert_eq!(rest.remaining(), 0);
    assert_eq!(decoded.error_code, UNSUPPORTED_VERSION);
    assert_eq!(decoded.error_code, 35);
    // KIP-511: only ApiVersions itself, so the client knows which version to retry with.
    assert_eq!(decoded.api_keys.len(), 1);
    let entry = &decoded.api_keys[0];
    assert_eq!(entry.api_key, ApiKey::ApiVersions as i16);
    assert_eq!(
        (entry.min_version, entry.max_version),
        supported_range(ApiKey::ApiVersions).unwrap()
    );
}

#[test]
fn produce_is_advertised_from_v0_but_served_from_v3() {
    let entries = api_version_entries();
    let produce = entries
        .iter()
        .find(|e| e.api_key == ApiKey::Produce as i16)
        .unwrap();
    assert_eq!(produce.min_version, 0);
    assert_eq!(supported_range(ApiKey::Produce).map(|r| r.0), Some(3));
    for &(key, min, max) in SUPPORTED {
        let e = entries.iter().find(|e| e.api_key == key as i16).unwrap();
        assert_eq!(e.max_version, max, "{key:?}");
        if key != ApiKey::Produce {
            assert_eq!(e.min_version, min, "{key:?}");
        }
    }
}

#[test]
fn flexible_response_gets_header_v1() {
    let body = MetadataResponse::default()
        .with_cluster_id(Some(StrBytes::from_static_str("skiff")))
        .with_controller_id(BrokerId(1))
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(9092)]);
    for (version, header_version) in [(1i16, 0i16), (8, 0), (9, 1), (12, 1)] {
        assert_eq!(
            ApiKey::Metadata.response_header_version(version),
            header_version
        );
        let frame = encode_response(
            3,
            ApiKey::Metadata,
            version,
            &ResponseKind::Metadata(body.clone()),
        )
        .unwrap();
        let (corr, mut rest) = open_frame(&frame, header_version);
        assert_eq!(corr, 3);
        let decoded = MetadataResponse::decode(&mut rest, version).unwrap();
        assert_eq!(rest.remaining(), 0);
        assert_eq!(decoded.brokers, body.brokers);
    }
}

#[test]
fn unencodable_version_is_an_error() {
    let body = ResponseKind::Metadata(MetadataResponse::default());
    match encode_response(1, ApiKey::Metadata, 99, &body) {
        Err(EncodeError::Body { version: 99, .. }) => {}
        other => panic!("{other:?}"),
    }
}
