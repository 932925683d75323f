//! Fuzz target: for every API with a guard schema (served or not yet), a body the guard accepts
//! must be decodable by kafka-protocol without a panic or an allocation abort. Input layout:
//! byte 0 picks the API among `guarded_apis()`, byte 1 the version inside its range, the rest
//! is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skiff_protocol::kafka_protocol::messages::RequestKind;

fuzz_target!(|data: &[u8]| {
    let apis: Vec<_> = skiff_protocol::guarded_apis().collect();
    let (Some(&pick), Some(&ver)) = (data.first(), data.get(1)) else {
        return;
    };
    let (key, min, max) = apis[usize::from(pick) % apis.len()];
    let version = min + i16::from(ver) % (max - min + 1);
    let body = &data[2..];
    if skiff_protocol::check_request_body(key, version, body).is_ok() {
        let _ = RequestKind::decode(key, &mut bytes::Bytes::copy_from_slice(body), version);
    }
});
