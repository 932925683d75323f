//! Kafka's zigzag varints (protobuf style): `varint` for i32 (at most 5 bytes) and `varlong` for
//! i64 (at most 10 bytes), plus a bounds-checked cursor to read them from untrusted bytes.
//!
//! Pure; thread-safe. Like Kafka, bits beyond the type's width in the last byte are dropped and
//! a value that keeps its continuation bit past the maximum length is an error.

use crate::error::RecordsError;

const MAX_VARINT_LEN: usize = 5;
const MAX_VARLONG_LEN: usize = 10;

/// Appends `value` as a zigzag varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, value: i32) {
    let zz = ((value << 1) ^ (value >> 31)) as u32;
    put_unsigned(out, u64::from(zz));
}

/// Appends `value` as a zigzag varlong.
pub(crate) fn put_varlong(out: &mut Vec<u8>, value: i64) {
    let zz = ((value << 1) ^ (value >> 63)) as u64;
    put_unsigned(out, zz);
}

fn put_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A bounds-checked reader over a byte slice; every read either succeeds or returns
/// `InvalidRecord` naming what was being read.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn read_unsigned(&mut self, max_len: usize, what: &str) -> Result<u64, RecordsError> {
        let mut value: u64 = 0;
        for i in 0..max_len {
            let b = *self.buf.get(self.pos).ok_or_else(|| {
                RecordsError::InvalidRecord(format!("{what}: varint runs past the end"))
            })?;
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordsError::InvalidRecord(format!(
            "{what}: varint longer than {max_len} bytes"
        )))
    }

    pub(crate) fn varint(&mut self, what: &str) -> Result<i32, RecordsError> {
        let zz = self.read_unsigned(MAX_VARINT_LEN, what)? as u32;
        Ok(((zz >> 1) as i32) ^ -((zz & 1) as i32))
    }

    pub(crate) fn varlong(&mut self, what: &str) -> Result<i64, RecordsError> {
        let zz = self.read_unsigned(MAX_VARLONG_LEN, what)?;
        Ok(((zz >> 1) as i64) ^ -((zz & 1) as i64))
    }

    pub(crate) fn byte(&mut self, what: &str) -> Result<u8, RecordsError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| RecordsError::InvalidRecord(format!("{what}: past the end")))?;
        self.pos += 1;
        Ok(b)
    }

    /// Skips `len` bytes and returns their range within the underlying buffer.
    pub(crate) fn take(
        &mut self,
        len: usize,
        what: &str,
    ) -> Result<std::ops::Range<usize>, RecordsError> {
        if len > self.remaining() {
            return Err(RecordsError::InvalidRecord(format!(
                "{what}: length {len} exceeds the {} bytes left",
                self.remaining()
            )));
        }
        let start = self.pos;
        self.pos += len;
        Ok(start..self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc32(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn known_encodings_match_kafka() {
        assert_eq!(enc32(0), [0x00]);
        assert_eq!(enc32(-1), [0x01]);
        assert_eq!(enc32(1), [0x02]);
        assert_eq!(enc32(-64), [0x7f]);
        assert_eq!(enc32(64), [0x80, 0x01]);
        assert_eq!(enc32(i32::MAX), [0xfe, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(enc32(i32::MIN), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn round_trips_and_lengths() {
        for v in [0, 1, -1, 63, -64, 64, 300, -300, i32::MAX, i32::MIN] {
            let b = enc32(v);
            assert!(b.len() <= MAX_VARINT_LEN, "{v}");
            let mut c = Cursor::new(&b);
            assert_eq!(c.varint("t").unwrap(), v);
            assert_eq!(c.remaining(), 0);
        }
        for v in [0i64, -1, 1, i64::MAX, i64::MIN, 1 << 40, -(1 << 50)] {
            let mut b = Vec::new();
            put_varlong(&mut b, v);
            assert!(b.len() <= MAX_VARLONG_LEN);
            let mut c = Cursor::new(&b);
            assert_eq!(c.varlong("t").unwrap(), v);
        }
    }

    #[test]
    fn overlong_and_truncated_are_errors() {
        let mut c = Cursor::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
        assert!(matches!(c.varint("k"), Err(RecordsError::InvalidRecord(_))));
        let mut c = Cursor::new(&[0x80, 0x80]);
        assert!(matches!(c.varint("k"), Err(RecordsError::InvalidRecord(_))));
        let mut c = Cursor::new(&[0xff; 11]);
        assert!(matches!(
            c.varlong("k"),
            Err(RecordsError::InvalidRecord(_))
        ));
        let mut c = Cursor::new(&[1, 2]);
        assert!(c.take(3, "v").is_err());
        assert_eq!(c.take(2, "v").unwrap(), 0..2);
    }
}
