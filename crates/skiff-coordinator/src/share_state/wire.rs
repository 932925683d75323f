//! The primitive encodings the share-state records use (Kafka's big-endian integers, int16
//! strings, unsigned varints, tag sections) and a bounds-checked reader over them.
//!
//! Separate from `groups/records.rs`'s reader because these records mix a non-flexible key
//! with flexible values and must reject trailing bytes; errors name `__share_group_state`.

/// Why a `__share_group_state` key or value could not be decoded.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("__share_group_state record truncated while reading {0}")]
    Truncated(&'static str),
    #[error("__share_group_state record has an invalid {0}")]
    Invalid(&'static str),
    #[error("__share_group_state value version {0} is not one Kafka defines")]
    UnknownVersion(i16),
}

pub fn put_i16(out: &mut Vec<u8>, v: i16) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
/// A non-null int16-length string. Group ids are far shorter than the format's limit of
/// `i16::MAX` bytes; a longer one is cut at a char boundary rather than written corrupt.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(i16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    put_i16(out, i16::try_from(end).unwrap_or(i16::MAX));
    out.extend_from_slice(&s.as_bytes()[..end]);
}

/// Bounds-checked reader over one key or value.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CodecError> {
        let end = self.pos.checked_add(n).ok_or(CodecError::Truncated(what))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(CodecError::Truncated(what))?;
        self.pos = end;
        Ok(s)
    }
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], CodecError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    pub fn i8(&mut self, what: &'static str) -> Result<i8, CodecError> {
        Ok(i8::from_be_bytes(self.array(what)?))
    }
    pub fn i16(&mut self, what: &'static str) -> Result<i16, CodecError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }
    pub fn i32(&mut self, what: &'static str) -> Result<i32, CodecError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }
    pub fn i64(&mut self, what: &'static str) -> Result<i64, CodecError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }
    pub fn uvarint(&mut self, what: &'static str) -> Result<u32, CodecError> {
        let mut value: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.take(1, what)?[0];
            value |= u32::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(CodecError::Invalid(what))
    }
    /// A non-null int16-length UTF-8 string.
    pub fn str(&mut self, what: &'static str) -> Result<String, CodecError> {
        let n = usize::try_from(self.i16(what)?).map_err(|_| CodecError::Invalid(what))?;
        String::from_utf8(self.take(n, what)?.to_vec()).map_err(|_| CodecError::Invalid(what))
    }
    /// Skips a tag section no field of which Skiff reads.
    pub fn skip_tags(&mut self) -> Result<(), CodecError> {
        let count = self.uvarint("tagged fields")?;
        for _ in 0..count {
            self.uvarint("tag")?;
            let size = self.uvarint("tag size")? as usize;
            self.take(size, "tag value")?;
        }
        Ok(())
    }
    /// Everything must have been read: trailing bytes mean the record is not what we think.
    pub fn finish(&self, what: &'static str) -> Result<(), CodecError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(CodecError::Invalid(what))
        }
    }
}
