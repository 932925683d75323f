//! The bounds-checked reader over one key or value. Every read names the field it reads,
//! so an error says where the record stopped making sense. Reads never panic and never
//! allocate more than the input holds.

use bytes::Bytes;
use uuid::Uuid;

use super::CodecError;

/// A cursor over one key or value. `flexible` switches [`Reader::len`], [`Reader::str`],
/// [`Reader::nullable_str`] and [`Reader::skip_tags_if_flexible`] to the compact encodings
/// for records whose version says so (`__consumer_offsets` values); the `compact_*` reads
/// and [`Reader::skip_tags`] do not depend on it.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    pub(crate) flexible: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            flexible: false,
        }
    }
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CodecError> {
        let end = self.pos.checked_add(n).ok_or(CodecError::Truncated(what))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(CodecError::Truncated(what))?;
        self.pos = end;
        Ok(s)
    }
    pub(crate) fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], CodecError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }
    pub(crate) fn i8(&mut self, what: &'static str) -> Result<i8, CodecError> {
        Ok(i8::from_be_bytes(self.array(what)?))
    }
    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16, CodecError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }
    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, CodecError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }
    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, CodecError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }
    pub(crate) fn uuid(&mut self, what: &'static str) -> Result<Uuid, CodecError> {
        Ok(Uuid::from_bytes(self.array(what)?))
    }
    /// An unsigned varint of at most five bytes; a longer one is invalid.
    pub(crate) fn uvarint(&mut self, what: &'static str) -> Result<u32, CodecError> {
        let mut value: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.take(1, what)?[0];
            value |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(CodecError::Invalid(what))
    }

    /// Length of a string (`wide` false: int16), bytes or array (`wide`: int32) field, or a
    /// compact length when `flexible`; `None` means null.
    pub(crate) fn len(
        &mut self,
        wide: bool,
        what: &'static str,
    ) -> Result<Option<usize>, CodecError> {
        if self.flexible {
            return self.compact_len(what);
        }
        let n = if wide {
            self.i32(what)?
        } else {
            i32::from(self.i16(what)?)
        };
        match n {
            -1 => Ok(None),
            n => usize::try_from(n)
                .map(Some)
                .map_err(|_| CodecError::Invalid(what)),
        }
    }
    /// A nullable string, int16-length or compact as `flexible` says.
    pub(crate) fn nullable_str(
        &mut self,
        what: &'static str,
    ) -> Result<Option<String>, CodecError> {
        match self.len(false, what)? {
            None => Ok(None),
            Some(n) => self.utf8(n, what).map(Some),
        }
    }
    /// A non-null string, int16-length or compact as `flexible` says; null is invalid.
    pub(crate) fn str(&mut self, what: &'static str) -> Result<String, CodecError> {
        self.nullable_str(what)?.ok_or(CodecError::Invalid(what))
    }
    /// Bytes, int32-length or compact as `flexible` says; null reads as empty.
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<Bytes, CodecError> {
        match self.len(true, what)? {
            None => Ok(Bytes::new()),
            Some(n) => Ok(Bytes::copy_from_slice(self.take(n, what)?)),
        }
    }

    /// A compact length, whatever `flexible` says; `None` for null.
    fn compact_len(&mut self, what: &'static str) -> Result<Option<usize>, CodecError> {
        let n = self.uvarint(what)?;
        Ok(n.checked_sub(1).map(|n| n as usize))
    }
    pub(crate) fn compact_nullable(
        &mut self,
        what: &'static str,
    ) -> Result<Option<String>, CodecError> {
        match self.compact_len(what)? {
            None => Ok(None),
            Some(n) => self.utf8(n, what).map(Some),
        }
    }
    pub(crate) fn compact_str(&mut self, what: &'static str) -> Result<String, CodecError> {
        self.compact_nullable(what)?
            .ok_or(CodecError::Invalid(what))
    }
    /// A compact array's element count (null reads as empty), refused when its elements
    /// (each at least `min` bytes) could not fit in what is left: a hostile count cannot
    /// make us allocate.
    pub(crate) fn array_len(
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
    pub(crate) fn tags(
        &mut self,
        mut each: impl FnMut(u32, &'a [u8]) -> Result<(), CodecError>,
    ) -> Result<(), CodecError> {
        let count = self.uvarint("tagged fields")?;
        for _ in 0..count {
            let tag = self.uvarint("tag")?;
            let size = self.uvarint("tag size")? as usize;
            each(tag, self.take(size, "tag value")?)?;
        }
        Ok(())
    }
    /// Skips a tag section no field of which Skiff reads.
    pub(crate) fn skip_tags(&mut self) -> Result<(), CodecError> {
        self.tags(|_, _| Ok(()))
    }
    /// Skips a tag section if the record is `flexible`; older versions have none.
    pub(crate) fn skip_tags_if_flexible(&mut self) -> Result<(), CodecError> {
        if self.flexible {
            self.skip_tags()
        } else {
            Ok(())
        }
    }

    /// Everything must have been read, for callers where trailing bytes mean the record is
    /// not what we think; `what` names the record in the error.
    pub(crate) fn finish(&self, what: &'static str) -> Result<(), CodecError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(CodecError::Invalid(what))
        }
    }

    fn utf8(&mut self, n: usize, what: &'static str) -> Result<String, CodecError> {
        String::from_utf8(self.take(n, what)?.to_vec()).map_err(|_| CodecError::Invalid(what))
    }
}
