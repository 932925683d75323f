//! Verifies our guard schemas against kafka-protocol itself: for every supported API and
//! version, a filled request encoded by the crate must be consumed exactly by our walker and
//! must decode back to the same value through `decode_request`.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use skiff_protocol::{check_request_body, decode_request, RequestError};

#[test]
fn walker_consumes_exactly_every_supported_request() {
    let mut checked = 0;
    for (key, v) in all_supported() {
        let req = sample_request(key, v);
        let body = encode_body(&req, v);
        assert!(body.len() > 1 || key == kafka_protocol::messages::ApiKey::ApiVersions);
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
    assert!(checked > 80, "only {checked} versions checked");
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
        assert_eq!(decoded.body, req, "{key:?} v{v}");
    }
}

#[test]
fn every_truncation_is_rejected_without_panic() {
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
