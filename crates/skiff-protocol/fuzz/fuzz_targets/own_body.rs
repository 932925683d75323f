//! Fuzz target: any bytes decoded as a body of an API Skiff codes itself (the streams group
//! requests and responses, every coded version) must yield a value, never a panic or an
//! allocation abort; whatever decodes must encode again at the same version.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skiff_protocol::{OwnApi, OwnRequest, OwnResponse};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let api = OwnApi::ALL[usize::from(selector & 1)];
    let version = i16::from((selector >> 1) & 1);
    let mut out = bytes::BytesMut::new();
    if selector & 4 == 0 {
        if let Ok(r) = OwnRequest::decode(api, body, version) {
            r.encode(&mut out, version).expect("a decoded request encodes");
        }
    } else if let Ok(r) = OwnResponse::decode(api, body, version) {
        r.encode(&mut out, version).expect("a decoded response encodes");
    }
});
