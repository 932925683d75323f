//! Our own codec for the flexible ("compact") Kafka encoding, used by the messages
//! kafka-protocol does not have ([`crate::streams`]).
//!
//! Why not the schema walker of [`crate::guard`]: that guard exists because kafka-protocol's
//! decoders trust wire counts; here the decoder is ours, so it is bounds-checked by
//! construction instead of walked twice. [`Reader`] checks every length and count against
//! the bytes left *before* anything is allocated for it: a string or byte length must fit in
//! what is left, and an array count must too (every element of every type coded here takes
//! at least one byte). Arrays are filled by pushing elements as they are decoded, never
//! pre-sized from the count, so memory follows the bytes actually present. Nothing here
//! indexes or slices without a check, so no input can panic it; the message types are not
//! recursive, so nesting depth is fixed by the schema.
//!
//! Only flexible versions are coded (every version of the streams APIs is): compact strings
//! and arrays (unsigned varint length + 1, 0 for null), nullable structs as an int8 marker
//! (-1 null, else present, as Kafka writes them), and a tagged-field section after every
//! struct. None of the coded schemas defines a tagged field, so every tagged field read is
//! unknown and kept as raw bytes ([`TaggedFields`]) to be written back unchanged.
//!
//! Thread-safety: pure functions. No on-disk format.

#[macro_use]
mod message;

use bytes::{BufMut, Bytes, BytesMut};

use crate::guard::GuardError;

/// Bounds-checked reader over a request or response body.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn err(&self, at: usize, what: String) -> GuardError {
        GuardError { offset: at, what }
    }

    /// Takes `n` bytes, or fails without moving.
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], GuardError> {
        if n > self.remaining() {
            return Err(self.err(
                self.pos,
                format!("{what}: needs {n} bytes, only {} left", self.remaining()),
            ));
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

    /// Unsigned varint of at most 5 bytes; a fifth byte with its continuation bit set is an
    /// error, as in Kafka's `ByteUtils.readUnsignedVarint`.
    fn uvarint(&mut self, what: &str) -> Result<u32, GuardError> {
        let start = self.pos;
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = u32::from(self.array::<1>(what)?[0]);
            value |= (b & 0x7f).wrapping_shl(i * 7);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(self.err(start, format!("{what}: varint longer than 5 bytes")))
    }

    /// A compact length (`n + 1`, 0 for null), checked to fit in the bytes left.
    fn compact_len(&mut self, what: &str) -> Result<Option<usize>, GuardError> {
        let start = self.pos;
        let n = self.uvarint(what)?;
        let Some(len) = n.checked_sub(1) else {
            return Ok(None);
        };
        match usize::try_from(len) {
            Ok(len) if len <= self.remaining() => Ok(Some(len)),
            _ => Err(self.err(
                start,
                format!(
                    "{what}: length {len} exceeds the {} bytes left",
                    self.remaining()
                ),
            )),
        }
    }
}

/// Which versions of a message have a field. A field missing from a version is left at its
/// default when reading; when writing, a non-default value is an error unless the field is
/// `ignorable` (then it is dropped), as Kafka's generated writers do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Versions {
    min: i16,
    max: i16,
    ignorable: bool,
}

impl Versions {
    pub(crate) fn has(self, version: i16) -> bool {
        (self.min..=self.max).contains(&version)
    }

    pub(crate) fn ignorable(self) -> bool {
        self.ignorable
    }
}

/// In every version.
pub(crate) const ALL: Versions = Versions {
    min: 0,
    max: i16::MAX,
    ignorable: false,
};

/// From `min` on.
pub(crate) const fn since(min: i16) -> Versions {
    Versions {
        min,
        max: i16::MAX,
        ignorable: false,
    }
}

/// From `min` on; dropped silently when written at an older version.
pub(crate) const fn since_ignorable(min: i16) -> Versions {
    Versions {
        min,
        max: i16::MAX,
        ignorable: true,
    }
}

/// Only in `version`.
pub(crate) const fn only(version: i16) -> Versions {
    Versions {
        min: version,
        max: version,
        ignorable: false,
    }
}

/// A value with a compact wire form.
pub(crate) trait Wire: Sized {
    fn read(r: &mut Reader<'_>, version: i16) -> Result<Self, GuardError>;
    fn write(&self, w: &mut BytesMut, version: i16) -> Result<(), String>;
}

/// A value that may also be null on the wire (`Option<T>` fields).
pub(crate) trait Nullable: Sized {
    fn read_nullable(r: &mut Reader<'_>, version: i16) -> Result<Option<Self>, GuardError>;
    fn write_nullable(this: Option<&Self>, w: &mut BytesMut, version: i16) -> Result<(), String>;
}

impl<T: Nullable> Wire for Option<T> {
    fn read(r: &mut Reader<'_>, version: i16) -> Result<Self, GuardError> {
        T::read_nullable(r, version)
    }

    fn write(&self, w: &mut BytesMut, version: i16) -> Result<(), String> {
        T::write_nullable(self.as_ref(), w, version)
    }
}

macro_rules! fixed {
    ($t:ty, $n:literal, $put:ident) => {
        impl Wire for $t {
            fn read(r: &mut Reader<'_>, _: i16) -> Result<Self, GuardError> {
                Ok(<$t>::from_be_bytes(r.array::<$n>(stringify!($t))?))
            }

            fn write(&self, w: &mut BytesMut, _: i16) -> Result<(), String> {
                w.$put(*self);
                Ok(())
            }
        }
    };
}

fixed!(i8, 1, put_i8);
fixed!(i16, 2, put_i16);
fixed!(u16, 2, put_u16);
fixed!(i32, 4, put_i32);
fixed!(i64, 8, put_i64);

impl Wire for bool {
    fn read(r: &mut Reader<'_>, _: i16) -> Result<Self, GuardError> {
        Ok(r.array::<1>("bool")?[0] != 0)
    }

    fn write(&self, w: &mut BytesMut, _: i16) -> Result<(), String> {
        w.put_u8(u8::from(*self));
        Ok(())
    }
}

fn put_uvarint(w: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        w.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    w.put_u8(v as u8);
}

/// Writes a compact length (`len + 1`), or 0 for null.
fn put_compact_len(w: &mut BytesMut, len: Option<usize>) -> Result<(), String> {
    let n = match len {
        None => 0,
        Some(len) => u32::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(1))
            .filter(|&n| n <= i32::MAX as u32)
            .ok_or_else(|| format!("length {len} does not fit the compact encoding"))?,
    };
    put_uvarint(w, n);
    Ok(())
}

impl Nullable for String {
    fn read_nullable(r: &mut Reader<'_>, _: i16) -> Result<Option<Self>, GuardError> {
        let start = r.pos;
        let Some(len) = r.compact_len("string length")? else {
            return Ok(None);
        };
        let bytes = r.take(len, "string")?;
        std::str::from_utf8(bytes)
            .map(|s| Some(s.to_string()))
            .map_err(|e| r.err(start, format!("string is not UTF-8: {e}")))
    }

    fn write_nullable(this: Option<&Self>, w: &mut BytesMut, _: i16) -> Result<(), String> {
        put_compact_len(w, this.map(String::len))?;
        if let Some(s) = this {
            w.put_slice(s.as_bytes());
        }
        Ok(())
    }
}

impl<T: Wire> Nullable for Vec<T> {
    fn read_nullable(r: &mut Reader<'_>, version: i16) -> Result<Option<Self>, GuardError> {
        // Every element takes at least one byte, so `compact_len` bounds the count by what
        // is left; the vector still grows only with elements actually decoded.
        let Some(n) = r.compact_len("array count")? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for i in 0..n {
            out.push(T::read(r, version).map_err(|e| GuardError {
                offset: e.offset,
                what: format!("[{i}]: {}", e.what),
            })?);
        }
        Ok(Some(out))
    }

    fn write_nullable(this: Option<&Self>, w: &mut BytesMut, version: i16) -> Result<(), String> {
        put_compact_len(w, this.map(Vec::len))?;
        for item in this.into_iter().flatten() {
            item.write(w, version)?;
        }
        Ok(())
    }
}

/// Non-nullable strings and arrays: null on the wire is an error, as in Kafka.
macro_rules! not_null {
    ($t:ty, $what:literal $(, $g:ident)?) => {
        impl$(<$g: Wire>)? Wire for $t {
            fn read(r: &mut Reader<'_>, version: i16) -> Result<Self, GuardError> {
                let start = r.pos;
                <$t as Nullable>::read_nullable(r, version)?.ok_or_else(|| GuardError {
                    offset: start,
                    what: concat!("non-nullable ", $what, " is null").to_string(),
                })
            }

            fn write(&self, w: &mut BytesMut, version: i16) -> Result<(), String> {
                <$t as Nullable>::write_nullable(Some(self), w, version)
            }
        }
    };
}

not_null!(String, "string");
not_null!(Vec<T>, "array", T);

/// One tagged field as read: its tag and its raw value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTaggedField {
    pub tag: u32,
    pub data: Bytes,
}

/// The tagged fields of one struct that its schema does not define, in wire order; written
/// back as they were read. Tags are neither sorted nor checked for duplicates: whoever adds
/// one must keep them in ascending order, as Kafka requires of a writer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaggedFields(pub Vec<RawTaggedField>);

impl TaggedFields {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, GuardError> {
        let start = r.pos;
        let n = r.uvarint("tagged field count")?;
        // A tagged field takes at least 2 bytes (tag, size).
        if n as usize > r.remaining() / 2 {
            return Err(r.err(
                start,
                format!(
                    "tagged field count {n} exceeds the {} bytes left",
                    r.remaining()
                ),
            ));
        }
        let mut out = Vec::new();
        for _ in 0..n {
            let tag = r.uvarint("tag")?;
            let size = r.uvarint("tagged field size")?;
            let size = usize::try_from(size).map_err(|_| r.err(r.pos, "bad size".into()))?;
            let data = r.take(size, "tagged field")?;
            out.push(RawTaggedField {
                tag,
                data: Bytes::copy_from_slice(data),
            });
        }
        Ok(TaggedFields(out))
    }

    pub(crate) fn write(&self, w: &mut BytesMut) -> Result<(), String> {
        let n = u32::try_from(self.0.len()).map_err(|_| "too many tagged fields".to_string())?;
        put_uvarint(w, n);
        for f in &self.0 {
            put_uvarint(w, f.tag);
            let size = u32::try_from(f.data.len())
                .map_err(|_| format!("tagged field {} is too large", f.tag))?;
            put_uvarint(w, size);
            w.put_slice(&f.data);
        }
        Ok(())
    }
}

/// Decodes a whole message body at `version`. Bytes after the message are ignored, as
/// kafka-protocol and Kafka ignore them.
pub(crate) fn decode<T: Wire>(body: &[u8], version: i16) -> Result<T, GuardError> {
    T::read(&mut Reader::new(body), version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarints_and_lengths_are_checked() {
        let mut w = BytesMut::new();
        for v in [0u32, 1, 127, 128, 300, u32::MAX] {
            w.clear();
            put_uvarint(&mut w, v);
            assert_eq!(Reader::new(&w).uvarint("x").unwrap(), v);
        }
        assert!(Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01])
            .uvarint("x")
            .is_err());
        assert!(Reader::new(&[0x80]).uvarint("x").is_err());
        // length 3 with 2 bytes left
        assert!(Reader::new(&[0x04, b'a', b'b']).compact_len("s").is_err());
        assert_eq!(
            Reader::new(&[0x03, b'a', b'b']).compact_len("s").unwrap(),
            Some(2)
        );
        assert_eq!(Reader::new(&[0x00]).compact_len("s").unwrap(), None);
        // A huge count is refused before anything is allocated for it.
        let huge = [0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2];
        assert!(<Vec<i64> as Wire>::read(&mut Reader::new(&huge), 0).is_err());
    }

    #[test]
    fn nulls_strings_and_tags() {
        assert!(<String as Wire>::read(&mut Reader::new(&[0]), 0).is_err());
        assert_eq!(
            <Option<String> as Wire>::read(&mut Reader::new(&[0]), 0).unwrap(),
            None
        );
        assert!(<String as Wire>::read(&mut Reader::new(&[2, 0xff]), 0).is_err());
        let tags = [2u8, 1, 2, 9, 9, 5, 0];
        let t = TaggedFields::read(&mut Reader::new(&tags)).unwrap();
        assert_eq!(t.0.len(), 2);
        let mut w = BytesMut::new();
        t.write(&mut w).unwrap();
        assert_eq!(&w[..], &tags[..]);
        assert!(TaggedFields::read(&mut Reader::new(&[5, 1, 0])).is_err());
    }
}
