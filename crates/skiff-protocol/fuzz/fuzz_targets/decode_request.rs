//! Fuzz target: any bytes fed to the size check and the request decoder must yield a value,
//! never a panic or an allocation abort (kafka-protocol alone aborts on a 20-byte frame).
//! Accepted requests must only carry supported api keys and versions.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() >= 4 {
        let prefix = [data[0], data[1], data[2], data[3]];
        let _ = skiff_protocol::check_frame_size(prefix, skiff_protocol::DEFAULT_MAX_REQUEST_SIZE);
    }
    if let Ok(req) = skiff_protocol::decode_request(bytes::Bytes::copy_from_slice(data)) {
        let (min, max) = skiff_protocol::supported_range(req.api_key)
            .expect("decoded a request for an api key outside SUPPORTED");
        assert!((min..=max).contains(&req.api_version));
    }
});
