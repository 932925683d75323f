//! Pre-decode guard: walks untrusted request bytes against our own schema
//! ([`crate::schema`]) before kafka-protocol is allowed to decode them.
//!
//! Why: kafka-protocol 0.18's array decoders call `Vec::with_capacity(n)` with `n` read from
//! the wire, so a 20-byte frame claiming `i32::MAX` elements aborts the process, and its header
//! helper panics on short input. The walker reads every length and count with bounds checks,
//! rejects any count larger than the bytes left (each element takes at least one byte), and
//! walks every element, string, byte string and tagged field. When it accepts a body, every
//! allocation the real decoder makes is backed by bytes that are really in the frame.
//!
//! Varints are read exactly as kafka-protocol reads them (at most 5 bytes, high bits of the
//! fifth byte dropped) so both see the same counts. A known tagged field must occupy exactly
//! the size its header declares, because kafka-protocol decodes known tags from the main
//! buffer and a mismatch would shift it out of step with what the walker checked.
//!
//! Thread-safety: pure functions over `&[u8]`. No on-disk format.

use crate::schema::{Struct, Ty};

/// Why a body or header was rejected: what was being read and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardError {
    /// Offset in the walked slice where the bad value starts.
    pub offset: usize,
    /// What was wrong.
    pub what: String,
}

impl std::fmt::Display for GuardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

/// Bounds-checked reader over a byte slice.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn err(&self, what: impl Into<String>) -> GuardError {
        GuardError {
            offset: self.pos,
            what: what.into(),
        }
    }

    /// Takes `n` bytes, or fails without moving.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], GuardError> {
        if n > self.remaining() {
            return Err(self.err(format!(
                "{what}: needs {n} bytes, only {} left",
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GuardError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn i16(&mut self, what: &str) -> Result<i16, GuardError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32, GuardError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    /// Unsigned varint, decoded exactly like kafka-protocol's `UnsignedVarInt`.
    pub(crate) fn uvarint(&mut self, what: &str) -> Result<u32, GuardError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = u32::from(self.array::<1>(what)?[0]);
            value |= (b & 0x7f).wrapping_shl(i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// Length prefix of a string/bytes value: `None` for null, else the checked length.
    fn length(&mut self, flexible: bool, wide: bool, what: &str) -> Result<usize, GuardError> {
        let start = self.pos;
        let len: i64 = if flexible {
            i64::from(self.uvarint(what)?) - 1
        } else if wide {
            i64::from(self.i32(what)?)
        } else {
            i64::from(self.i16(what)?)
        };
        if len == -1 {
            return Ok(0);
        }
        let fail = |msg: String| GuardError {
            offset: start,
            what: msg,
        };
        if len < 0 {
            return Err(fail(format!("{what}: negative length {len}")));
        }
        let len = usize::try_from(len).map_err(|_| fail(format!("{what}: bad length {len}")))?;
        if len > self.remaining() {
            return Err(fail(format!(
                "{what}: length {len} exceeds the {} bytes left",
                self.remaining()
            )));
        }
        Ok(len)
    }

    /// Skips a string or bytes value after checking its length.
    fn skip_sized(&mut self, flexible: bool, wide: bool, what: &str) -> Result<(), GuardError> {
        let len = self.length(flexible, wide, what)?;
        self.take(len, what).map(|_| ())
    }

    /// Reads an array count (null ⇒ 0) and checks it against the bytes left.
    fn count(&mut self, flexible: bool) -> Result<usize, GuardError> {
        let start = self.pos;
        let n: i64 = if flexible {
            i64::from(self.uvarint("array count")?) - 1
        } else {
            i64::from(self.i32("array count")?)
        };
        if n == -1 {
            return Ok(0);
        }
        let remaining = self.remaining();
        let fail = |what: String| GuardError {
            offset: start,
            what,
        };
        if n < 0 {
            return Err(fail(format!("negative array count {n}")));
        }
        match usize::try_from(n) {
            Ok(n) if n <= remaining => Ok(n),
            _ => Err(fail(format!(
                "array count {n} exceeds the {remaining} bytes left"
            ))),
        }
    }

    /// Walks a tagged-field section; `known` lists tags decoded by kafka-protocol itself.
    pub(crate) fn tagged_fields(
        &mut self,
        known: &[crate::schema::Tagged],
        version: i16,
    ) -> Result<(), GuardError> {
        let n = self.uvarint("tagged field count")?;
        // Each tagged field takes at least 2 bytes (tag + size), so a count beyond that is a lie
        // and the loop below ends after at most remaining/2 turns anyway.
        if n as usize > self.remaining() / 2 {
            return Err(self.err(format!(
                "tagged field count {n} exceeds the {} bytes left",
                self.remaining()
            )));
        }
        for _ in 0..n {
            let tag = self.uvarint("tag")?;
            let size = self.uvarint("tagged field size")? as usize;
            let start = self.pos;
            let value = self.take(size, "tagged field")?;
            let field = known
                .iter()
                .find(|t| t.tag == tag && (t.min..=t.max).contains(&version));
            if let Some(field) = field {
                let mut sub = Cursor::new(value);
                walk_ty(&mut sub, &field.ty, version, true).map_err(|e| GuardError {
                    offset: start + e.offset,
                    what: format!("tagged field {tag}: {}", e.what),
                })?;
                if sub.remaining() != 0 {
                    return Err(GuardError {
                        offset: start,
                        what: format!(
                            "tagged field {tag} declares {size} bytes but its value takes {}",
                            sub.pos()
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Walks one struct (its fields, then its tagged fields when `flexible`).
pub(crate) fn walk_struct(
    c: &mut Cursor<'_>,
    s: &Struct,
    version: i16,
    flexible: bool,
) -> Result<(), GuardError> {
    for f in s.fields {
        if (f.min..=f.max).contains(&version) {
            walk_ty(c, &f.ty, version, flexible)?;
        }
    }
    if flexible {
        c.tagged_fields(s.tagged, version)?;
    }
    Ok(())
}

fn walk_ty(c: &mut Cursor<'_>, ty: &Ty, version: i16, flexible: bool) -> Result<(), GuardError> {
    match ty {
        Ty::Int8 | Ty::Bool => c.take(1, "int8/bool").map(|_| ()),
        Ty::Int16 => c.take(2, "int16").map(|_| ()),
        Ty::Int32 => c.take(4, "int32").map(|_| ()),
        Ty::Int64 => c.take(8, "int64").map(|_| ()),
        Ty::Uuid => c.take(16, "uuid").map(|_| ()),
        Ty::Str => c.skip_sized(flexible, false, "string"),
        Ty::Bytes => c.skip_sized(flexible, true, "bytes"),
        Ty::Struct(s) => walk_struct(c, s, version, flexible),
        Ty::Array(elem) => {
            let n = c.count(flexible)?;
            for _ in 0..n {
                walk_ty(c, elem, version, flexible)?;
            }
            Ok(())
        }
    }
}

/// Parsed fixed part of a request header, checked before kafka-protocol sees the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeaderPrefix {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
}

/// Reads api key, version and correlation id; `None` if the frame is shorter than 8 bytes.
pub(crate) fn header_prefix(frame: &[u8]) -> Option<HeaderPrefix> {
    let mut c = Cursor::new(frame);
    Some(HeaderPrefix {
        api_key: c.i16("api_key").ok()?,
        api_version: c.i16("api_version").ok()?,
        correlation_id: c.i32("correlation_id").ok()?,
    })
}

/// Walks a whole request header at `header_version` (1: client_id; 2: + tagged fields) and
/// returns its length in bytes.
pub(crate) fn check_header(frame: &[u8], header_version: i16) -> Result<usize, GuardError> {
    let mut c = Cursor::new(frame);
    c.take(8, "api key, version and correlation id")?;
    // client_id is a classic nullable string even in header v2.
    c.skip_sized(false, false, "client_id")?;
    if header_version >= 2 {
        c.tagged_fields(&[], header_version)?;
    }
    Ok(c.pos())
}

/// Walks a request body of `api_key` at `version` and returns the bytes it consumed.
/// Errors if the API has no schema at this version (see [`crate::guarded_range`]), if any
/// length or count exceeds the bytes left, or if the body ends early. Trailing bytes are not an error here (kafka-protocol ignores them too);
/// compare the result with `body.len()` to detect them.
pub fn check_request_body(
    api_key: kafka_protocol::messages::ApiKey,
    version: i16,
    body: &[u8],
) -> Result<usize, GuardError> {
    let schema = crate::schema::schema_for(api_key, version).ok_or_else(|| GuardError {
        offset: 0,
        what: format!("no schema for {api_key:?} v{version}"),
    })?;
    let flexible = api_key.request_header_version(version) >= 2;
    let mut c = Cursor::new(body);
    walk_struct(&mut c, schema, version, flexible)?;
    Ok(c.pos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_reads_like_kafka_protocol() {
        // Expected values follow kafka-protocol's UnsignedVarInt: at most 5 bytes, bits past
        // 32 dropped, a 6th byte left unread.
        let cases: &[(&[u8], u32, usize)] = &[
            (&[0x00], 0, 1),
            (&[0x7f], 127, 1),
            (&[0x80, 0x01], 128, 2),
            (&[0xff, 0xff, 0xff, 0xff, 0x0f], u32::MAX, 5),
            (&[0xff, 0xff, 0xff, 0xff, 0x7f], u32::MAX, 5),
            (&[0x80, 0x80, 0x80, 0x80, 0x10], 0, 5),
            (&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], u32::MAX, 5),
        ];
        for &(bytes, value, used) in cases {
            let mut c = Cursor::new(bytes);
            assert_eq!(c.uvarint("x").unwrap(), value, "{bytes:?}");
            assert_eq!(c.pos(), used, "{bytes:?}");
        }
        assert!(Cursor::new(&[0x80]).uvarint("x").is_err());
    }

    #[test]
    fn count_beyond_remaining_is_rejected() {
        let mut c = Cursor::new(&[0x7f, 0xff, 0xff, 0xff, 0, 0]);
        let e = c.count(false).unwrap_err();
        assert!(e.what.contains("exceeds"), "{e}");
        let mut c = Cursor::new(&[0x03, 0, 0]);
        assert_eq!(c.count(true).unwrap(), 2);
        let mut c = Cursor::new(&[0x04, 0, 0]);
        assert!(c.count(true).is_err());
        let mut c = Cursor::new(&[0xff, 0xff, 0xff, 0xfe]);
        assert!(c.count(false).is_err(), "-2 is not a valid count");
    }

    #[test]
    fn known_tagged_field_must_fill_its_size() {
        use crate::schema::{Tagged, MAX};
        let known = [Tagged {
            tag: 1,
            min: 0,
            max: MAX,
            ty: Ty::Int64,
        }];
        // one field, tag 1, size 8, eight bytes: ok
        let ok = [1u8, 1, 8, 0, 0, 0, 0, 0, 0, 0, 1];
        Cursor::new(&ok).tagged_fields(&known, 0).unwrap();
        // size 9 with an int64 inside: rejected
        let bad = [1u8, 1, 9, 0, 0, 0, 0, 0, 0, 0, 1, 2];
        assert!(Cursor::new(&bad).tagged_fields(&known, 0).is_err());
        // unknown tags are skipped whatever their size
        let unknown = [1u8, 7, 3, 1, 2, 3];
        Cursor::new(&unknown).tagged_fields(&known, 0).unwrap();
    }
}
