//! A certificate subject as the text Kafka maps and names principals with: Java's
//! `X500Principal.getName()` (RFC 2253 form), which is what `ssl.principal.mapping.rules`
//! see and, through `DEFAULT`, what `User:` principals of TLS clients are called. Skiff must
//! produce the same text or ACLs written for Kafka would not match.
//!
//! The rules Java applies, implemented here from its documented behaviour:
//! - the relative distinguished names are written in *reverse* of their order in the
//!   certificate, separated by `,`; the attributes of a multi-valued one by `+`;
//! - only CN, C, L, ST, O, OU, STREET, DC and UID are written by keyword; every other
//!   attribute type (emailAddress, serialNumber, ...) by its dotted OID, and its value then as
//!   `#` followed by the lowercase hex of its whole DER encoding;
//! - a keyword attribute whose value is a DER string (UTF8String, PrintableString,
//!   TeletexString, IA5String, GeneralString, BMPString) is written as text: each of
//!   `, = + < > # ; " \` preceded by a backslash, NUL as `\00`, and leading and trailing
//!   spaces (and carriage returns) each preceded by a backslash; any other value type as `#`
//!   and hex.
//!
//! The input is the subject's attributes with their DER-encoded values, as a certificate
//! parser gives them; nothing here parses certificates.
//!
//! Thread safety: pure functions.

use std::fmt::Write;

/// One attribute of a relative distinguished name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribute<'a> {
    /// The attribute type as a dotted OID (`2.5.4.3` for CN).
    pub oid: &'a str,
    /// The value's complete DER encoding (tag, length, contents).
    pub der: &'a [u8],
}

/// The keywords Java writes in RFC 2253 names, by OID.
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// The contents of a DER value if it is a string type Java writes as text.
fn decode_string(der: &[u8]) -> Option<String> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, contents) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let len = rest
            .get(..n)?
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, rest.get(n..)?)
    };
    // The value must be exactly one DER element.
    if contents.len() != len {
        return None;
    }
    match tag {
        12 => String::from_utf8(contents.to_vec()).ok(),
        19 | 20 | 22 | 27 => Some(contents.iter().map(|b| char::from(*b)).collect()),
        30 => {
            if contents.len() % 2 != 0 {
                return None;
            }
            let units: Vec<u16> = contents
                .chunks_exact(2)
                .map(|p| u16::from_be_bytes([p[0], p[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

fn push_hex(out: &mut String, der: &[u8]) {
    out.push('#');
    for b in der {
        let _ = write!(out, "{b:02x}");
    }
}

fn push_escaped(out: &mut String, value: &str) {
    let mut escaped: Vec<char> = Vec::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => {
                escaped.push('\\');
                escaped.push(c);
            }
            '\0' => escaped.extend(['\\', '0', '0']),
            _ => escaped.push(c),
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.iter().rev().take_while(|c| blank(c)).count();
    let n = escaped.len();
    for (i, c) in escaped.into_iter().enumerate() {
        if i < lead || i >= n.saturating_sub(trail) {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The RFC 2253 text Java gives for a subject whose relative distinguished names are `rdns`
/// in certificate order.
pub fn rfc2253(rdns: &[Vec<Attribute<'_>>]) -> String {
    let mut out = String::new();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, attr) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            match keyword(attr.oid) {
                Some(k) => {
                    out.push_str(k);
                    out.push('=');
                    match decode_string(attr.der) {
                        Some(text) => push_escaped(&mut out, &text),
                        None => push_hex(&mut out, attr.der),
                    }
                }
                None => {
                    out.push_str(attr.oid);
                    out.push('=');
                    push_hex(&mut out, attr.der);
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        let mut v = vec![tag, contents.len() as u8];
        v.extend_from_slice(contents);
        v
    }

    fn utf8(s: &str) -> Vec<u8> {
        der(12, s.as_bytes())
    }

    #[test]
    fn reversed_order_and_keywords() {
        let (c, o, ou, cn) = (der(19, b"US"), utf8("Acme"), utf8("Eng"), utf8("alice"));
        let rdns = vec![
            vec![Attribute {
                oid: "2.5.4.6",
                der: &c,
            }],
            vec![Attribute {
                oid: "2.5.4.10",
                der: &o,
            }],
            vec![Attribute {
                oid: "2.5.4.11",
                der: &ou,
            }],
            vec![Attribute {
                oid: "2.5.4.3",
                der: &cn,
            }],
        ];
        assert_eq!(rfc2253(&rdns), "CN=alice,OU=Eng,O=Acme,C=US");
        assert_eq!(rfc2253(&[]), "");
    }

    #[test]
    fn other_attribute_types_are_oid_and_hex() {
        let email = der(22, b"a@b.c");
        let cn = utf8("bob");
        let rdns = vec![
            vec![Attribute {
                oid: "2.5.4.3",
                der: &cn,
            }],
            vec![Attribute {
                oid: "1.2.840.113549.1.9.1",
                der: &email,
            }],
        ];
        assert_eq!(
            rfc2253(&rdns),
            "1.2.840.113549.1.9.1=#16056140622e63,CN=bob"
        );
    }

    #[test]
    fn special_characters_are_escaped() {
        let v = utf8("Tkac, Adam");
        let a = [vec![Attribute {
            oid: "2.5.4.3",
            der: &v,
        }]];
        assert_eq!(rfc2253(&a), r"CN=Tkac\, Adam");
        let v = utf8(" a=b+c<d>e#f;g\"h\\i ");
        let a = [vec![Attribute {
            oid: "2.5.4.3",
            der: &v,
        }]];
        assert_eq!(rfc2253(&a), r#"CN=\ a\=b\+c\<d\>e\#f\;g\"h\\i\ "#);
        let v = utf8("  x  ");
        let a = [vec![Attribute {
            oid: "2.5.4.3",
            der: &v,
        }]];
        assert_eq!(rfc2253(&a), r"CN=\ \ x\ \ ");
        let v = utf8("a\0b");
        let a = [vec![Attribute {
            oid: "2.5.4.3",
            der: &v,
        }]];
        assert_eq!(rfc2253(&a), r"CN=a\00b");
    }

    #[test]
    fn string_types_and_multi_valued_rdns() {
        let bmp = der(30, &[0, b'h', 0, b'i', 0x00, 0xe9]);
        let latin = der(20, &[b'n', 0xe9]);
        let uid = utf8("u1");
        let rdn = vec![
            Attribute {
                oid: "2.5.4.3",
                der: &bmp,
            },
            Attribute {
                oid: "0.9.2342.19200300.100.1.1",
                der: &uid,
            },
        ];
        let dc = vec![Attribute {
            oid: "0.9.2342.19200300.100.1.25",
            der: &latin,
        }];
        assert_eq!(rfc2253(&[dc, rdn]), "CN=hié+UID=u1,DC=né");
        // A keyword attribute whose value is not a string type, or is malformed, is hex.
        let int = der(2, &[1]);
        let short = vec![12, 5, b'a'];
        let long = vec![12, 1, b'a', b'b'];
        let a = [vec![
            Attribute {
                oid: "2.5.4.3",
                der: &int,
            },
            Attribute {
                oid: "2.5.4.3",
                der: &short,
            },
            Attribute {
                oid: "2.5.4.3",
                der: &long,
            },
        ]];
        assert_eq!(rfc2253(&a), "CN=#020101+CN=#0c0561+CN=#0c016162");
    }

    #[test]
    fn long_form_lengths_decode() {
        let text = "x".repeat(200);
        let mut v = vec![12, 0x81, 200];
        v.extend_from_slice(text.as_bytes());
        let a = [vec![Attribute {
            oid: "2.5.4.3",
            der: &v,
        }]];
        assert_eq!(rfc2253(&a), format!("CN={text}"));
    }
}
