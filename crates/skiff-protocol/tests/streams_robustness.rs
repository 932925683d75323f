//! Hostile bodies for the streams group codec: every truncation and byte mutation of the
//! golden bodies, huge counts and lengths, and random bytes. Decoding must answer every one
//! with a value, never a panic; huge counts must be refused before anything is allocated for
//! them (an allocation sized by such a count would abort the test binary).
//!
//! (No allocation counter: a counting `GlobalAlloc` needs `unsafe`, which the workspace
//! forbids. The bound is by construction, see `src/wire/mod.rs`.)
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use bytes::BytesMut;
use proptest::prelude::*;
use skiff_protocol::{OwnApi, OwnRequest, OwnResponse};

const FIXTURES: &[(&str, OwnApi, bool)] = &[
    (
        "streams_group_heartbeat_request",
        OwnApi::StreamsGroupHeartbeat,
        true,
    ),
    (
        "streams_group_heartbeat_request_nulls",
        OwnApi::StreamsGroupHeartbeat,
        true,
    ),
    (
        "streams_group_heartbeat_response",
        OwnApi::StreamsGroupHeartbeat,
        false,
    ),
    (
        "streams_group_heartbeat_response_nulls",
        OwnApi::StreamsGroupHeartbeat,
        false,
    ),
    (
        "streams_group_describe_request",
        OwnApi::StreamsGroupDescribe,
        true,
    ),
    (
        "streams_group_describe_response",
        OwnApi::StreamsGroupDescribe,
        false,
    ),
];

fn fixture(name: &str, version: i16) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/streams/{name}_v{version}.hex",
        env!("CARGO_MANIFEST_DIR")
    );
    let hex = std::fs::read_to_string(&path).unwrap();
    let hex = hex.trim();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// Decodes `body` as the request or response of `api`; whether it decoded.
fn decode(api: OwnApi, request: bool, body: &[u8], version: i16) -> bool {
    if request {
        OwnRequest::decode(api, body, version).is_ok()
    } else {
        OwnResponse::decode(api, body, version).is_ok()
    }
}

#[test]
fn every_truncation_is_an_error() {
    for &(name, api, request) in FIXTURES {
        for v in 0..=1 {
            let body = fixture(name, v);
            assert!(decode(api, request, &body, v), "{name} v{v}");
            for len in 0..body.len() {
                assert!(
                    !decode(api, request, &body[..len], v),
                    "{name} v{v} cut at {len} decoded"
                );
            }
        }
    }
}

#[test]
fn every_byte_mutation_is_answered_and_decoded_ones_re_encode() {
    let started = Instant::now();
    for &(name, api, request) in FIXTURES {
        for v in 0..=1 {
            let body = fixture(name, v);
            for pos in 0..body.len() {
                for b in [0x00u8, 0x01, 0x7f, 0x80, 0xfe, 0xff] {
                    let mut m = body.clone();
                    m[pos] = b;
                    // What decodes must also encode (the values it holds fit the version).
                    if request {
                        if let Ok(r) = OwnRequest::decode(api, &m, v) {
                            r.encode(&mut BytesMut::new(), v).unwrap();
                        }
                    } else if let Ok(r) = OwnResponse::decode(api, &m, v) {
                        r.encode(&mut BytesMut::new(), v).unwrap();
                    }
                }
            }
        }
    }
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn huge_counts_and_lengths_are_refused_at_once() {
    // Every 5-byte varint count or length up to u32::MAX in front of a few bytes, at the
    // first field of each message (an array for describe, a string for heartbeat) and deep
    // inside a golden body (after its first 20 bytes).
    let huge: &[&[u8]] = &[
        &[0xff, 0xff, 0xff, 0xff, 0x0f],
        &[0xff, 0xff, 0xff, 0xff, 0x07],
        &[0x80, 0x80, 0x80, 0x80, 0x08],
    ];
    for &(name, api, request) in FIXTURES {
        for v in 0..=1 {
            let golden = fixture(name, v);
            for count in huge {
                for at in [0usize, 20.min(golden.len())] {
                    let mut body = golden[..at].to_vec();
                    body.extend_from_slice(count);
                    body.extend_from_slice(&[1, 2, 3, 4]);
                    let started = Instant::now();
                    assert!(!decode(api, request, &body, v), "{name} v{v} at {at}");
                    assert!(started.elapsed() < Duration::from_millis(100));
                }
            }
        }
    }
}

fn api() -> impl Strategy<Value = (OwnApi, bool, i16)> {
    (
        prop_oneof![
            Just(OwnApi::StreamsGroupHeartbeat),
            Just(OwnApi::StreamsGroupDescribe)
        ],
        any::<bool>(),
        0i16..=1,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(
        (api, request, v) in api(),
        body in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let _ = decode(api, request, &body, v);
    }

    #[test]
    fn random_splices_into_golden_bodies_never_panic(
        which in 0..FIXTURES.len(),
        v in 0i16..=1,
        at in any::<prop::sample::Index>(),
        junk in proptest::collection::vec(any::<u8>(), 1..16),
    ) {
        let (name, api, request) = FIXTURES[which];
        let mut body = fixture(name, v);
        let at = at.index(body.len());
        let end = (at + junk.len()).min(body.len());
        body.splice(at..end, junk);
        let _ = decode(api, request, &body, v);
    }
}
