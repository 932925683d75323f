//! Decoding a record key given in a URL path segment, for routes addressed by key (the key
//! lookup): raw UTF-8 (the router has already percent-decoded the segment), or base64 when
//! the query says `key_encoding=base64`, in the URL-safe or the standard alphabet, padded or
//! not (a client should not have to guess which one its library produces).
//!
//! Pure functions; safe from any thread.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::Deserialize;

use super::errors::ApiError;

/// How a key segment is written (`?key_encoding=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyEncoding {
    #[default]
    Text,
    Base64,
}

/// The key bytes of an already percent-decoded path segment.
pub fn decode_key(segment: &str, encoding: KeyEncoding) -> Result<Vec<u8>, ApiError> {
    match encoding {
        KeyEncoding::Text => Ok(segment.as_bytes().to_vec()),
        KeyEncoding::Base64 => {
            // '-' or '_' only occur in the URL-safe alphabet, '+' or '/' only in the standard
            // one; the padding decides between the padded and unpadded engines.
            let url_safe = segment.contains(['-', '_']);
            let padded = segment.ends_with('=');
            let engine = match (url_safe, padded) {
                (true, true) => &URL_SAFE,
                (true, false) => &URL_SAFE_NO_PAD,
                (false, true) => &STANDARD,
                (false, false) => &STANDARD_NO_PAD,
            };
            engine.decode(segment).map_err(|e| {
                ApiError::bad_request("bad_key", format!("the key is not valid base64: {e}"))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_taken_as_is() {
        assert_eq!(
            decode_key("user/42 é", KeyEncoding::Text).unwrap(),
            "user/42 é".as_bytes()
        );
    }

    #[test]
    fn base64_in_either_alphabet_with_or_without_padding() {
        let bytes = [0xfb, 0xff, 0x00, 0x41];
        for s in ["+/8AQQ==", "+/8AQQ", "-_8AQQ==", "-_8AQQ"] {
            assert_eq!(decode_key(s, KeyEncoding::Base64).unwrap(), bytes, "{s}");
        }
    }

    #[test]
    fn bad_base64_is_a_400() {
        let e = decode_key("a+b-", KeyEncoding::Base64).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        assert_eq!(e.code, "bad_key");
        assert!(decode_key("%%%", KeyEncoding::Base64).is_err());
    }
}
