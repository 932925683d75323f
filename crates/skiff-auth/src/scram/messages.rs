//! Parsing of the SCRAM client's two messages, with Kafka's grammar (`ScramMessages`):
//!
//! ```text
//! client-first = "n," ["a=" saslname] "," ["m=" value ","] "n=" saslname ",r=" nonce *("," ext)
//! client-final = "c=" base64 ",r=" nonce *("," ext) ",p=" base64
//! ```
//!
//! Like Kafka, only the `n` gs2 flag is accepted (no channel binding), names and values are
//! 7-bit ASCII, extensions are `[A-Za-z]+=value`. Errors are plain strings for the log: the
//! server answers every malformed message with Kafka's generic failure.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// A parsed client-first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The gs2 header exactly as sent (`n,,` or `n,a=<authzid>,`); the client must echo it in
    /// the final message's `c=`.
    pub gs2_header: String,
    /// The requested authorization id, un-escaped; empty when absent.
    pub authzid: String,
    /// The user name, un-escaped (`=2C` → `,`, `=3D` → `=`).
    pub username: String,
    pub client_nonce: String,
    /// Extensions in the order sent (Kafka's only one is `tokenauth`).
    pub extensions: Vec<(String, String)>,
    /// `client-first-message-bare` exactly as sent, for the AuthMessage.
    pub bare: String,
}

impl ClientFirst {
    /// Kafka's `tokenauth` extension (delegation-token authentication) parsed like Java's
    /// `Boolean.parseBoolean`.
    pub fn token_auth(&self) -> bool {
        self.extensions
            .iter()
            .any(|(k, v)| k == "tokenauth" && v.eq_ignore_ascii_case("true"))
    }
}

/// A parsed client-final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinal {
    pub channel_binding: Vec<u8>,
    pub nonce: String,
    pub proof: Vec<u8>,
    /// `client-final-message-without-proof` exactly as sent.
    pub without_proof: String,
}

fn is_value_char(c: char) -> bool {
    ('\u{1}'..='\u{7f}').contains(&c) && c != ','
}

fn is_printable(c: char) -> bool {
    ('\u{21}'..='\u{7e}').contains(&c) && c != ','
}

/// Un-escapes a saslname (`=2C`, `=3D`); any other `=` or a non-ASCII / control character
/// outside Kafka's set is an error.
pub fn decode_saslname(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("empty name".into());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '=' {
            if rest.starts_with("=2C") {
                out.push(',');
            } else if rest.starts_with("=3D") {
                out.push('=');
            } else {
                return Err("'=' in a name must be followed by 2C or 3D".into());
            }
            rest = &rest[3..];
        } else if is_value_char(c) {
            out.push(c);
            rest = &rest[1..];
        } else {
            return Err("name holds a character outside 7-bit ASCII or a ','".into());
        }
    }
    Ok(out)
}

/// Escapes a user name for a SCRAM message (`=` → `=3D`, `,` → `=2C`).
pub fn encode_saslname(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

fn parse_extension(part: &str) -> Result<(String, String), String> {
    let (k, v) = part
        .split_once('=')
        .ok_or_else(|| "extension without '='".to_string())?;
    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err("extension name must be letters".into());
    }
    if v.is_empty() || !v.chars().all(is_value_char) {
        return Err("bad extension value".into());
    }
    Ok((k.to_string(), v.to_string()))
}

fn parse_nonce(part: Option<&str>) -> Result<String, String> {
    let nonce = part
        .and_then(|p| p.strip_prefix("r="))
        .ok_or_else(|| "expected r=<nonce>".to_string())?;
    if nonce.is_empty() || !nonce.chars().all(is_printable) {
        return Err("nonce must be printable ASCII".into());
    }
    Ok(nonce.to_string())
}

fn parse_b64(value: &str, what: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(value)
        .map_err(|_| format!("{what} is not base64"))
}

/// Parses client-first-message.
pub fn parse_client_first(bytes: &[u8]) -> Result<ClientFirst, String> {
    let msg = std::str::from_utf8(bytes).map_err(|_| "client-first is not UTF-8".to_string())?;
    let rest = match msg.strip_prefix("n,") {
        Some(rest) => rest,
        None if msg.starts_with("y,") || msg.starts_with("p=") => {
            return Err("channel binding is not supported".into())
        }
        None => return Err("client-first must start with the gs2 flag 'n,'".into()),
    };
    let (authz_part, rest) = rest
        .split_once(',')
        .ok_or_else(|| "client-first has no gs2 header".to_string())?;
    let authzid = if authz_part.is_empty() {
        String::new()
    } else {
        let raw = authz_part
            .strip_prefix("a=")
            .ok_or_else(|| "gs2 header's second field must be empty or a=<authzid>".to_string())?;
        decode_saslname(raw).map_err(|e| format!("authzid: {e}"))?
    };
    let gs2_header = format!("n,{authz_part},");
    // Kafka's grammar tolerates a reserved "m=" attribute before the name, and ignores it.
    let bare = match rest.strip_prefix("m=") {
        Some(after) => after
            .split_once(',')
            .map(|(_, b)| b)
            .ok_or_else(|| "truncated m= attribute".to_string())?,
        None => rest,
    };
    let mut parts = bare.split(',');
    let username = parts
        .next()
        .and_then(|p| p.strip_prefix("n="))
        .ok_or_else(|| "expected n=<username>".to_string())
        .and_then(|raw| decode_saslname(raw).map_err(|e| format!("username: {e}")))?;
    let client_nonce = parse_nonce(parts.next())?;
    let extensions = parts.map(parse_extension).collect::<Result<Vec<_>, _>>()?;
    Ok(ClientFirst {
        gs2_header,
        authzid,
        username,
        client_nonce,
        extensions,
        bare: bare.to_string(),
    })
}

/// Parses client-final-message.
pub fn parse_client_final(bytes: &[u8]) -> Result<ClientFinal, String> {
    let msg = std::str::from_utf8(bytes).map_err(|_| "client-final is not UTF-8".to_string())?;
    let (without_proof, proof) = msg
        .rsplit_once(",p=")
        .ok_or_else(|| "client-final has no proof".to_string())?;
    let mut parts = without_proof.split(',');
    let channel_binding = parts
        .next()
        .and_then(|p| p.strip_prefix("c="))
        .ok_or_else(|| "expected c=<channel binding>".to_string())
        .and_then(|v| parse_b64(v, "channel binding"))?;
    let nonce = parse_nonce(parts.next())?;
    for ext in parts {
        parse_extension(ext)?;
    }
    let proof = parse_b64(proof, "proof")?;
    Ok(ClientFinal {
        channel_binding,
        nonce,
        proof,
        without_proof: without_proof.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_first_plain() {
        let m = parse_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").expect("parses");
        assert_eq!(m.gs2_header, "n,,");
        assert_eq!(m.authzid, "");
        assert_eq!(m.username, "user");
        assert_eq!(m.client_nonce, "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(m.bare, "n=user,r=rOprNGfwEbeRWgbNEkqO");
        assert!(m.extensions.is_empty());
        assert!(!m.token_auth());
    }

    #[test]
    fn client_first_escapes_authzid_and_extensions() {
        let m =
            parse_client_first(b"n,a=a=3Db=2Cc,n=a=3Db=2Cc,r=abc,tokenauth=TRUE").expect("parses");
        assert_eq!(m.gs2_header, "n,a=a=3Db=2Cc,");
        assert_eq!(m.authzid, "a=b,c");
        assert_eq!(m.username, "a=b,c");
        assert_eq!(m.bare, "n=a=3Db=2Cc,r=abc,tokenauth=TRUE");
        assert_eq!(m.extensions, vec![("tokenauth".into(), "TRUE".into())]);
        assert!(m.token_auth());
    }

    #[test]
    fn client_first_reserved_m_is_skipped() {
        let m = parse_client_first(b"n,,m=ext,n=u,r=x").expect("parses");
        assert_eq!(m.bare, "n=u,r=x");
    }

    #[test]
    fn client_first_malformed() {
        let cases: [&[u8]; 12] = [
            b"",
            b"y,,n=u,r=x",
            b"p=tls-unique,,n=u,r=x",
            b"n",
            b"n,,",
            b"n,,n=,r=x",
            b"n,,n=u",
            b"n,,n=u,r=",
            b"n,,n=a=4Fb,r=x",
            b"n,b=x,n=u,r=x",
            b"n,,n=u,r=x,1=2",
            b"n,,n=\xc3\xa9,r=x",
        ];
        for c in cases {
            assert!(
                parse_client_first(c).is_err(),
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
    }

    #[test]
    fn client_final_parses_and_keeps_text() {
        let m =
            parse_client_final(b"c=biws,r=abcdef,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
                .expect("parses");
        assert_eq!(m.channel_binding, b"n,,");
        assert_eq!(m.nonce, "abcdef");
        assert_eq!(m.proof.len(), 32);
        assert_eq!(m.without_proof, "c=biws,r=abcdef");
        assert!(parse_client_final(b"c=biws,r=abc,ext=v,p=AAAA").is_ok());
    }

    #[test]
    fn client_final_malformed() {
        let cases: [&[u8]; 7] = [
            b"",
            b"c=biws,r=abc",
            b"c=biws,p=AAAA",
            b"r=abc,c=biws,p=AAAA",
            b"c=!!,r=abc,p=AAAA",
            b"c=biws,r=abc,p=not base64",
            b"c=biws,r=abc,1=x,p=AAAA",
        ];
        for c in cases {
            assert!(
                parse_client_final(c).is_err(),
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
    }

    #[test]
    fn saslname_round_trip() {
        for name in ["plain", "a,b", "a=b", "=,=,"] {
            assert_eq!(decode_saslname(&encode_saslname(name)).as_deref(), Ok(name));
        }
    }
}
