//! Parsing of the OAUTHBEARER client initial response (RFC 7628 section 3.1) with Kafka's
//! grammar (`OAuthBearerClientInitialResponse`):
//!
//! ```text
//! "n," ["a=" saslname] "," 0x01 *(key "=" value 0x01) 0x01
//! key   = 1*ALPHA                       value = 1*(%x21-7E / SP / HTAB / CR / LF)
//! auth  = scheme 1*SP token             token = 1*(ALPHA / DIGIT / "-._~+/") *"="
//! ```
//!
//! `auth` is required and its scheme must be `Bearer` (any case). Every other key is a SASL
//! extension (KIP-342); the name `auth` is reserved. The authzid is kept as sent (Kafka does
//! not un-escape it either).

use std::collections::BTreeMap;

/// A parsed client initial response.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientInitialResponse {
    pub authzid: String,
    pub token: String,
    pub extensions: BTreeMap<String, String>,
}

impl std::fmt::Debug for ClientInitialResponse {
    /// The token is a credential: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientInitialResponse")
            .field("authzid", &self.authzid)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

const SEP: char = '\u{1}';

fn valid_saslname(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'=' if b.get(i + 1..i + 3) == Some(b"2C") || b.get(i + 1..i + 3) == Some(b"3D") => {
                i += 3
            }
            0x01..=0x7f if b[i] != b'=' && b[i] != b',' => i += 1,
            _ => return false,
        }
    }
    !b.is_empty()
}

fn valid_value(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|c| (0x21..=0x7e).contains(&c) || matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphabetic())
}

fn parse_auth(auth: &str) -> Result<String, String> {
    let (scheme, rest) = auth
        .split_once(' ')
        .ok_or_else(|| "invalid 'auth' format".to_string())?;
    let token = rest.trim_start_matches(' ');
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_')
    {
        return Err("invalid 'auth' format".into());
    }
    let body = token.trim_end_matches('=');
    if body.is_empty()
        || !body
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_~+/.".contains(&c))
    {
        return Err("invalid 'auth' format".into());
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err("invalid scheme in OAUTHBEARER client first message".into());
    }
    Ok(token.to_string())
}

/// Parses the client's first message. Errors are for the log; they never include the token.
pub fn parse(bytes: &[u8]) -> Result<ClientInitialResponse, String> {
    let msg = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let rest = msg
        .strip_prefix("n,")
        .ok_or_else(|| "must start with the gs2 flag 'n,'".to_string())?;
    let (authz, rest) = rest
        .split_once(',')
        .ok_or_else(|| "no gs2 header".to_string())?;
    let authzid = if authz.is_empty() {
        String::new()
    } else {
        let a = authz
            .strip_prefix("a=")
            .filter(|a| valid_saslname(a))
            .ok_or_else(|| "bad authzid in gs2 header".to_string())?;
        a.to_string()
    };
    let pairs = rest
        .strip_prefix(SEP)
        .and_then(|r| r.strip_suffix(SEP))
        .ok_or_else(|| "key/value pairs must be framed by 0x01".to_string())?;
    let mut extensions = BTreeMap::new();
    let mut auth = None;
    if !pairs.is_empty() {
        let pairs = pairs
            .strip_suffix(SEP)
            .ok_or_else(|| "key/value pair not terminated by 0x01".to_string())?;
        for pair in pairs.split(SEP) {
            let (k, v) = pair
                .split_once('=')
                .filter(|(k, v)| valid_key(k) && valid_value(v))
                .ok_or_else(|| "malformed key/value pair".to_string())?;
            if k == "auth" {
                auth = Some(v);
            } else {
                extensions.insert(k.to_string(), v.to_string());
            }
        }
    }
    let auth = auth.ok_or_else(|| "'auth' not specified".to_string())?;
    Ok(ClientInitialResponse {
        authzid,
        token: parse_auth(auth)?,
        extensions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7628_shape_parses() {
        let r = parse(b"n,,\x01auth=Bearer abc.def-_~+/.ghi==\x01\x01").expect("parses");
        assert_eq!(r.authzid, "");
        assert_eq!(r.token, "abc.def-_~+/.ghi==");
        assert!(r.extensions.is_empty());
    }

    #[test]
    fn authzid_extensions_and_scheme_case() {
        let r = parse(b"n,a=user@example.com,\x01host=server.example.com\x01port=143\x01auth=bEaReR  tok\x01\x01")
            .expect("parses");
        assert_eq!(r.authzid, "user@example.com");
        assert_eq!(r.token, "tok");
        assert_eq!(
            r.extensions.get("host").map(String::as_str),
            Some("server.example.com")
        );
        assert_eq!(r.extensions.get("port").map(String::as_str), Some("143"));
    }

    #[test]
    fn malformed_responses() {
        let cases: [&[u8]; 12] = [
            b"",
            b"\x01",
            b"y,,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Bearer t\x01",
            b"n,,auth=Bearer t\x01\x01",
            b"n,,\x01\x01",
            b"n,,\x01host=x\x01\x01",
            b"n,,\x01auth=Basic dXNlcjpwYXNz\x01\x01",
            b"n,,\x01auth=Bearer\x01\x01",
            b"n,,\x01auth=Bearer t!t\x01\x01",
            b"n,,\x01a1=x\x01auth=Bearer t\x01\x01",
            b"n,b=x,\x01auth=Bearer t\x01\x01",
        ];
        for c in cases {
            assert!(parse(c).is_err(), "{:?}", String::from_utf8_lossy(c));
        }
    }

    #[test]
    fn debug_hides_the_token() {
        let r = parse(b"n,,\x01auth=Bearer sekrit\x01\x01").expect("parses");
        assert!(!format!("{r:?}").contains("sekrit"));
    }
}
