//! The byte-level pieces of the share group records: Kafka's non-flexible key encoding and
//! flexible (compact, tagged) value encoding, big-endian. Kept here rather than shared with
//! `groups/` so this module can be reviewed and wired on its own. Decoding is bounds-checked
//! and never allocates more than the input can hold.

use uuid::Uuid;

/// A record that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("record truncated reading {0}")]
    Truncated(&'static str),
    #[error("invalid {0}")]
    Invalid(&'static str),
    #[error("unknown value version {0}")]
    UnknownVersion(i16),
}

pub(super) fn put_i16(out: &mut Vec<u8>, v: i16) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub(super) fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub(super) fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_be_bytes());
}
/// A non-flexible string (`int16` length), as in keys.
pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_i16(out, i16::try_from(s.len()).unwrap_or(i16::MAX));
    out.extend_from_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
}
pub(super) fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
/// A compact length: `len + 1`, 0 being null.
pub(super) fn put_compact_len(out: &mut Vec<u8>, len: usize) {
    put_uvarint(out, u32::try_from(len).unwrap_or(u32::MAX - 1) + 1);
}
pub(super) fn put_compact_str(out: &mut Vec<u8>, s: &str) {
    put_compact_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}
pub(super) fn put_compact_nullable(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_compact_str(out, s),
        None => out.push(0),
    }
}
pub(super) fn put_uuid(out: &mut Vec<u8>, id: &Uuid) {
    out.extend_from_slice(id.as_bytes());
}

/// A cursor over one key or value.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    pub(super) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub(super) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CodecError> {
        if n > self.remaining() {
            return Err(CodecError::Truncated(what));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], CodecError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }
    pub(super) fn i8(&mut self, what: &'static str) -> Result<i8, CodecError> {
        Ok(i8::from_be_bytes(self.array(what)?))
    }
    pub(super) fn i16(&mut self, what: &'static str) -> Result<i16, CodecError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }
    pub(super) fn i32(&mut self, what: &'static str) -> Result<i32, CodecError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }
    pub(super) fn i64(&mut self, what: &'static str) -> Result<i64, CodecError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }
    pub(super) fn uuid(&mut self, what: &'static str) -> Result<Uuid, CodecError> {
        Ok(Uuid::from_bytes(self.array(what)?))
    }
    pub(super) fn uvarint(&mut self, what: &'static str) -> Result<u32, CodecError> {
        let mut v: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.take(1, what)?[0];
            v |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(CodecError::Invalid(what))
    }
    /// A non-flexible string (keys).
    pub(super) fn str(&mut self, what: &'static str) -> Result<String, CodecError> {
        let n = self.i16(what)?;
        let n = usize::try_from(n).map_err(|_| CodecError::Invalid(what))?;
        utf8(self.take(n, what)?, what)
    }
    /// A compact length; `None` for null.
    fn compact_len(&mut self, what: &'static str) -> Result<Option<usize>, CodecError> {
        let n = self.uvarint(what)?;
        Ok(n.checked_sub(1).map(|n| n as usize))
    }
    pub(super) fn compact_nullable(
        &mut self,
        what: &'static str,
    ) -> Result<Option<String>, CodecError> {
        match self.compact_len(what)? {
            None => Ok(None),
            Some(n) => Ok(Some(utf8(self.take(n, what)?, what)?)),
        }
    }
    pub(super) fn compact_str(&mut self, what: &'static str) -> Result<String, CodecError> {
        self.compact_nullable(what)?
            .ok_or(CodecError::Invalid(what))
    }
    /// A compact array's element count, refused when its elements (each at least `min`
    /// bytes) could not fit in what is left: a hostile count cannot make us allocate.
    pub(super) fn array_len(
        &mut self,
        min: usize,
        what: &'static str,
    ) -> Result<usize, CodecError> {
        let n = self.compact_len(what)?.unwrap_or(0);
        if n.saturating_mul(min) > self.remaining() {
            return Err(CodecError::Truncated(what));
        }
        Ok(n)
    }
    /// A tagged-field section: each (tag, bytes) to `each`, which reads or ignores it.
    pub(super) fn tags(
        &mut self,
        mut each: impl FnMut(u32, &'a [u8]) -> Result<(), CodecError>,
    ) -> Result<(), CodecError> {
        let n = self.uvarint("tagged fields")?;
        for _ in 0..n {
            let tag = self.uvarint("tag")?;
            let size = self.uvarint("tag size")? as usize;
            each(tag, self.take(size, "tagged field")?)?;
        }
        Ok(())
    }
    pub(super) fn skip_tags(&mut self) -> Result<(), CodecError> {
        self.tags(|_, _| Ok(()))
    }
}

fn utf8(b: &[u8], what: &'static str) -> Result<String, CodecError> {
    String::from_utf8(b.to_vec()).map_err(|_| CodecError::Invalid(what))
}
