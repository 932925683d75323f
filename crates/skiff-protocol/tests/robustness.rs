//! Hostile input: short frames, huge counts, unknown keys and versions, exhaustive and random
//! mutations of valid frames. `decode_request` must answer every one with a value (never a
//! panic or an allocation abort). APIs that have a guard schema but are not served yet get the
//! same treatment at body level: whatever `check_request_body` accepts, kafka-protocol must
//! decode without aborting, so moving such an API into SUPPORTED needs no new guard work.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use common::*;
use kafka_protocol::messages::{ApiKey, RequestKind};
use proptest::prelude::*;
use skiff_protocol::{check_request_body, decode_request, RequestError, SUPPORTED};

fn decode(bytes: &[u8]) -> Result<skiff_protocol::DecodedRequest, RequestError> {
    decode_request(Bytes::copy_from_slice(bytes))
}

/// The guarded body path a broker takes once `key` is served: guard, then kafka-protocol.
/// Returns whether the body was decoded. An abort here kills the test binary.
fn guard_then_decode(key: ApiKey, v: i16, body: &[u8]) -> bool {
    if check_request_body(key, v, body).is_err() {
        return false;
    }
    RequestKind::decode(key, &mut Bytes::copy_from_slice(body), v).is_ok()
}

#[test]
fn every_short_frame_is_malformed() {
    let valid = decode_request(all_sample_frames().remove(0).2.clone());
    assert!(valid.is_ok());
    let (_, _, metadata_v1) = all_sample_frames()
        .into_iter()
        .find(|(k, v, _)| *k == ApiKey::Metadata && *v == 1)
        .unwrap();
    let patterns: [&[u8]; 4] = [&[0u8; 8], &[0xffu8; 8], &[0x7fu8; 8], &metadata_v1[..8]];
    for pattern in patterns {
        for len in 0..8 {
            match decode(&pattern[..len]) {
                Err(RequestError::Malformed(_)) => {}
                other => panic!("{len} bytes of {pattern:?}: {other:?}"),
            }
        }
    }
    // 8 bytes of a known, supported header: the client_id length is missing.
    assert!(matches!(
        decode(&metadata_v1[..8]),
        Err(RequestError::Malformed(_))
    ));
    // Every length from 0 to 255 of a plausible header never panics.
    for len in 0..256 {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 37 % 256) as u8).collect();
        let _ = decode(&bytes);
    }
}

/// Metadata v1: header v1 with null client id, then a topics count of i32::MAX.
fn huge_metadata_v1() -> Vec<u8> {
    let mut b = BytesMut::new();
    b.put_i16(3);
    b.put_i16(1);
    b.put_i32(42);
    b.put_i16(-1);
    b.put_i32(i32::MAX);
    b.put_slice(&[0, 1, 0x61, 0, 1, 0x62]);
    b.to_vec()
}

#[test]
fn huge_array_count_is_rejected_quickly() {
    let start = Instant::now();
    let frame = huge_metadata_v1();
    assert_eq!(frame.len(), 20);
    match decode(&frame) {
        Err(RequestError::BadBody {
            api_key: 3,
            api_version: 1,
            correlation_id: 42,
            reason,
        }) => assert!(reason.contains("exceeds"), "{reason}"),
        other => panic!("{other:?}"),
    }

    // Metadata v9 (flexible): header v2, compact topics count 0xffffffff - 1.
    let mut b = BytesMut::new();
    b.put_i16(3);
    b.put_i16(9);
    b.put_i32(43);
    b.put_i16(-1);
    b.put_u8(0); // header tagged fields
    b.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    b.put_slice(&[0, 0, 0, 0]);
    match decode(&b) {
        Err(RequestError::BadBody {
            correlation_id: 43, ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn huge_counts_deep_inside_are_rejected() {
    // Overwrite every 4-byte and 5-byte window of every sample body with a maximal count
    // (classic and varint forms). Each result must be a value, not an abort.
    let patterns: [&[u8]; 4] = [
        &[0x7f, 0xff, 0xff, 0xff],
        &[0xff, 0xff, 0xff, 0xff, 0x0f],
        &[0x00, 0x7f, 0xff, 0xff],
        &[0xff, 0xff, 0xff, 0xfe],
    ];
    let mut rejected = 0usize;
    for (key, v, frame) in all_sample_frames() {
        for pattern in patterns {
            for pos in 8..frame.len().saturating_sub(pattern.len()) {
                let mut m = frame.to_vec();
                m[pos..pos + pattern.len()].copy_from_slice(pattern);
                match decode(&m) {
                    Ok(d) => assert_eq!((d.api_key, d.api_version), (key.into(), v)),
                    Err(_) => rejected += 1,
                }
            }
        }
    }
    assert!(rejected > 1000, "only {rejected} mutations rejected");
}

#[test]
fn huge_counts_in_guarded_bodies_are_rejected() {
    // Same windows as above, over the body of every guarded API (served or not).
    let patterns: [&[u8]; 3] = [
        &[0x7f, 0xff, 0xff, 0xff],
        &[0xff, 0xff, 0xff, 0xff, 0x0f],
        &[0x00, 0x7f, 0xff, 0xff],
    ];
    let (mut tried, mut refused) = (0usize, 0usize);
    for (key, v) in all_guarded() {
        let body = encode_body(&sample_request(key, v), v);
        for pattern in patterns {
            for pos in 0..body.len().saturating_sub(pattern.len()) {
                let mut m = body.to_vec();
                m[pos..pos + pattern.len()].copy_from_slice(pattern);
                tried += 1;
                if check_request_body(key, v, &m).is_err() {
                    refused += 1;
                } else {
                    let _ = RequestKind::decode(key, &mut Bytes::from(m), v);
                }
            }
        }
    }
    // Many windows only overwrite fixed-width fields, which stay valid; the rest must fail.
    assert!(
        refused * 4 > tried,
        "only {refused} of {tried} mutations refused"
    );
}

#[test]
fn big_string_lengths_are_rejected() {
    // client_id claiming 32767 bytes in a 12-byte frame.
    let mut b = BytesMut::new();
    b.put_i16(3);
    b.put_i16(1);
    b.put_i32(9);
    b.put_i16(i16::MAX);
    b.put_slice(b"ab");
    assert!(matches!(decode(&b), Err(RequestError::Malformed(_))));
    // negative (non-null) client_id length
    let mut b = BytesMut::new();
    b.put_i16(3);
    b.put_i16(1);
    b.put_i32(9);
    b.put_i16(-2);
    assert!(matches!(decode(&b), Err(RequestError::Malformed(_))));
}

#[test]
fn gating_by_key_and_version() {
    let header = |key: i16, v: i16| {
        let mut b = BytesMut::new();
        b.put_i16(key);
        b.put_i16(v);
        b.put_i32(77);
        b.put_i16(-1);
        b.put_u8(0);
        b.to_vec()
    };
    // Unknown key (1000) and a known key we do not implement (Envelope = 58).
    let mut cases: Vec<(i16, i16)> = vec![(1000, 0), (ApiKey::Envelope as i16, 0), (-1, 0)];
    // Guarded but not (yet) served versions are refused before their body is looked at
    // (a key may be served at some versions only, e.g. EndTxn 0-4 of 0-5).
    cases.extend(guarded_not_supported().iter().map(|(k, v)| (*k as i16, *v)));
    for (key, version) in cases {
        assert_eq!(
            decode(&header(key, version)).unwrap_err(),
            RequestError::Unsupported {
                api_key: key,
                api_version: version,
                correlation_id: 77
            }
        );
    }
    // Below min and above max of a supported key.
    for (key, min, max) in SUPPORTED
        .iter()
        .copied()
        .filter(|e| e.0 != ApiKey::ApiVersions)
    {
        for v in [min - 1, max + 1, i16::MAX, i16::MIN] {
            assert_eq!(
                decode(&header(key as i16, v)).unwrap_err(),
                RequestError::Unsupported {
                    api_key: key as i16,
                    api_version: v,
                    correlation_id: 77
                },
                "{key:?} v{v}"
            );
        }
    }
    // ApiVersions outside its range asks for the v0 fallback, whatever follows the prefix.
    for v in [5, 100, -1] {
        assert_eq!(
            decode(&header(18, v)[..8]).unwrap_err(),
            RequestError::ApiVersionsFallback {
                api_version: v,
                correlation_id: 77
            }
        );
    }
}

#[test]
fn api_versions_v3_from_librdkafka_decodes() {
    // ApiVersions v3 as librdkafka sends it: header v2 with client id, body with software name
    // and version as compact strings, empty tagged fields.
    let mut b = BytesMut::new();
    b.put_i16(18);
    b.put_i16(3);
    b.put_i32(1);
    b.put_i16(7);
    b.put_slice(b"rdkafka");
    b.put_u8(0);
    b.put_u8(11);
    b.put_slice(b"librdkafka");
    b.put_u8(6);
    b.put_slice(b"2.0.2");
    b.put_u8(0);
    let d = decode(&b).unwrap();
    assert_eq!(d.header.client_id.as_deref(), Some("rdkafka"));
    match d.body {
        skiff_protocol::RequestBody::Kafka(RequestKind::ApiVersions(r)) => {
            assert_eq!(r.client_software_name.as_str(), "librdkafka");
            assert_eq!(r.client_software_version.as_str(), "2.0.2");
        }
        other => panic!("{other:?}"),
    }
}

fn supported_key_version() -> impl Strategy<Value = (ApiKey, i16)> {
    proptest::sample::select(all_supported())
}

fn guarded_key_version() -> impl Strategy<Value = (ApiKey, i16)> {
    proptest::sample::select(all_guarded())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn random_bodies_after_a_valid_header_never_panic(
        (key, v) in supported_key_version(),
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let header = sample_header(key, v, 5);
        let _ = decode_request(frame(&header, key, v, &body));
    }

    #[test]
    fn mutated_valid_frames_never_panic(
        index in any::<proptest::sample::Index>(),
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<proptest::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let frames = all_sample_frames();
        let (_, _, frame) = &frames[index.index(frames.len())];
        let mut m = frame.to_vec();
        for (pos, byte) in &edits {
            let i = pos.index(m.len());
            m[i] = *byte;
        }
        if truncate {
            m.truncate(cut.index(m.len() + 1));
        }
        if let Ok(d) = decode(&m) {
            // A frame that passes must have kept its (supported) key/version prefix.
            prop_assert!(skiff_protocol::supported_range(d.api_key).is_some());
        }
    }

    #[test]
    fn random_guarded_bodies_never_abort(
        (key, v) in guarded_key_version(),
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let _ = guard_then_decode(key, v, &body);
    }

    #[test]
    fn mutated_guarded_bodies_never_abort(
        (key, v) in guarded_key_version(),
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<proptest::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut m = encode_body(&sample_request(key, v), v).to_vec();
        if !m.is_empty() {
            for (pos, byte) in &edits {
                let i = pos.index(m.len());
                m[i] = *byte;
            }
        }
        if truncate {
            m.truncate(cut.index(m.len() + 1));
        }
        let _ = guard_then_decode(key, v, &m);
    }
}
