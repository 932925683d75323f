//! Writers: each appends one field in Kafka's encoding. Lengths beyond what the format can
//! carry are clamped rather than written corrupt; Skiff's own ids and names are far shorter.

use uuid::Uuid;

pub(crate) fn put_i16(out: &mut Vec<u8>, v: i16) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub(crate) fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_be_bytes());
}
pub(crate) fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
pub(crate) fn put_uuid(out: &mut Vec<u8>, id: &Uuid) {
    out.extend_from_slice(id.as_bytes());
}

/// A non-null int16-length string. The format's limit is `i16::MAX` bytes; a longer string
/// is cut at the last char boundary within it, so what is written is still UTF-8.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(i16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    put_i16(out, i16::try_from(end).unwrap_or(i16::MAX));
    out.extend_from_slice(&s.as_bytes()[..end]);
}
/// A non-null int16-length string cut at exactly `i16::MAX` bytes, even inside a char: the
/// share group and `__transaction_state` records have always been written this way, and
/// their bytes must not change.
pub(crate) fn put_str_cut_at_byte(out: &mut Vec<u8>, s: &str) {
    put_i16(out, i16::try_from(s.len()).unwrap_or(i16::MAX));
    out.extend_from_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
}
/// An int16-length string, -1 for null; the string as [`put_str`].
pub(crate) fn put_nullable_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_str(out, s),
        None => put_i16(out, -1),
    }
}
/// Non-null int32-length bytes.
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_i32(out, i32::try_from(b.len()).unwrap_or(i32::MAX));
    out.extend_from_slice(b);
}

/// A compact length (flexible versions): `len + 1` as an unsigned varint, 0 being null.
pub(crate) fn put_compact_len(out: &mut Vec<u8>, len: usize) {
    put_uvarint(out, u32::try_from(len).unwrap_or(u32::MAX - 1) + 1);
}
pub(crate) fn put_compact_str(out: &mut Vec<u8>, s: &str) {
    put_compact_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}
pub(crate) fn put_compact_nullable(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_compact_str(out, s),
        None => out.push(0),
    }
}
