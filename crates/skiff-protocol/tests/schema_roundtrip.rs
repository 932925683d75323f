//! Verifies our guard schemas against kafka-protocol itself: for every API and version with a
//! schema (`guarded_apis`, a superset of SUPPORTED), a filled request encoded by the crate must
//! be consumed exactly by our walker and decode back to the same value; supported ones also
//! through `decode_request`, while guarded-but-unsupported ones must be refused by it.
#![allow(clippy::unwrap_used)]

mod common;

use bytes::Buf;
use common::*;
use kafka_protocol::messages::{ApiKey, RequestKind};
use skiff_protocol::{check_request_body, decode_request, guarded_apis, RequestError};

#[test]
fn walker_consumes_exactly_every_guarded_request() {
    let mut checked = 0;
    for (key, v) in all_guarded() {
        let req = sample_request(key, v);
        let body = encode_body(&req, v);
        // Only ApiVersions v0-2 and ListGroups v0-2 have bodies without fields.
        assert!(body.len() > 1 || matches!(key, ApiKey::ApiVersions | ApiKey::ListGroups));
        let used = check_request_body(key, v, &body)
            .unwrap_or_else(|e| panic!("{key:?} v{v}: guard rejected a valid body: {e}"));
        assert_eq!(
            used,
            body.len(),
            "{key:?} v{v}: walker consumed {used} of {}",
            body.len()
        );
        checked += 1;
    }
    assert!(checked > 180, "only {checked} versions checked");
}

#[test]
fn guarded_bodies_decode_back_to_the_sample() {
    for (key, v) in all_guarded() {
        let req = sample_request(key, v);
        let body = encode_body(&req, v);
        check_request_body(key, v, &body).unwrap();
        let mut rest = body.clone();
        let decoded = RequestKind::decode(key, &mut rest, v)
            .unwrap_or_else(|e| panic!("{key:?} v{v}: {e:#}"));
        assert_eq!(rest.remaining(), 0, "{key:?} v{v}: decoder left bytes");
        assert_eq!(decoded, req, "{key:?} v{v}");
    }
}

#[test]
fn guarded_ranges_are_the_full_decodable_ranges() {
    // One step outside a guarded range, kafka-protocol 0.18 itself cannot encode or decode
    // the message: the schema covers every version the crate can decode (KIP-896 minimums
    // equal the crate's minimums), and no more.
    let mut apis = 0;
    for (key, min, max) in guarded_apis() {
        let valid = key.valid_versions();
        assert!(min >= valid.min && max <= valid.max, "{key:?}");
        for (inside, outside) in [(min, min - 1), (max, max + 1)] {
            let req = sample_request(key, inside);
            let mut buf = bytes::BytesMut::new();
            assert!(
                req.encode(&mut buf, outside).is_err(),
                "{key:?} encodes at v{outside}, outside its guarded range {min}-{max}"
            );
            let mut body = encode_body(&req, inside);
            assert!(
                RequestKind::decode(key, &mut body, outside).is_err(),
                "{key:?} decodes at v{outside}"
            );
            assert!(check_request_body(key, outside, &encode_body(&req, inside)).is_err());
        }
        apis += 1;
    }
    assert!(apis >= 37, "{apis}");
}

#[test]
fn guarded_but_unsupported_frames_are_refused() {
    let refused = guarded_not_supported();
    for (key, v) in refused {
        let body = encode_body(&sample_request(key, v), v);
        let frame = frame(&sample_header(key, v, 11), key, v, &body);
        assert_eq!(
            decode_request(frame).unwrap_err(),
            RequestError::Unsupported {
                api_key: key as i16,
                api_version: v,
                correlation_id: 11
            },
            "{key:?} v{v}"
        );
    }
}

#[test]
fn golden_round_trip_through_decode_request() {
    for (key, v) in all_supported() {
        let req = sample_request(key, v);
        let body = encode_body(&req, v);
        let header = sample_header(key, v, 0x0102_0304);
        let decoded = decode_request(frame(&header, key, v, &body))
            .unwrap_or_else(|e| panic!("{key:?} v{v}: {e}"));
        assert_eq!(decoded.api_key, key);
        assert_eq!(decoded.api_version, v);
        assert_eq!(decoded.header, header, "{key:?} v{v}");
        assert_eq!(decoded.body, req.into(), "{key:?} v{v}");
    }
}

#[test]
fn every_truncation_is_rejected_without_panic() {
    for (key, v) in all_guarded() {
        let body = encode_body(&sample_request(key, v), v);
        for cut in 0..body.len() {
            assert!(
                check_request_body(key, v, &body[..cut]).is_err(),
                "{key:?} v{v}: guard accepted a body cut at {cut}/{}",
                body.len()
            );
        }
    }
    for (key, v) in all_supported() {
        let body = encode_body(&sample_request(key, v), v);
        let header = sample_header(key, v, 7);
        for cut in 0..body.len() {
            assert!(
                check_request_body(key, v, &body[..cut]).is_err(),
                "{key:?} v{v}: guard accepted a body cut at {cut}/{}",
                body.len()
            );
            match decode_request(frame(&header, key, v, &body[..cut])) {
                Err(RequestError::BadBody { correlation_id, .. }) => assert_eq!(correlation_id, 7),
                other => panic!("{key:?} v{v} cut {cut}: {other:?}"),
            }
        }
    }
}
