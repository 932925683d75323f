//! The record codec inside a batch's records section, and [`records`], which decodes every record
//! of one batch (decompressing first when needed).
//!
//! Wire format of one record (varints are zigzag, see `varint`):
//! `length varint | attributes i8 | timestampDelta varlong | offsetDelta varint |
//!  keyLen varint (-1 = null) + key | valueLen varint (-1 = null) + value |
//!  headerCount varint | per header: keyLen varint + key | valueLen varint (-1 = null) + value`.
//!
//! [`walk_records`] is the allocation-free counterpart for produce validation: same framing
//! checks, but keys, values and headers are skipped rather than sliced out.
//!
//! Pure; thread-safe. Decoded keys/values are `Bytes` slices of one shared buffer per batch.

use bytes::Bytes;

use crate::compression::decompress;
use crate::error::RecordsError;
use crate::header::{BatchHeader, Compression, HEADER_LEN};
use crate::varint::{put_varint, put_varlong, Cursor};

/// Smallest encoded record: length, attributes, timestampDelta, offsetDelta, keyLen, valueLen
/// and headerCount, one byte each. Used to cap allocations driven by wire counts.
const MIN_RECORD_LEN: usize = 7;
/// Smallest encoded header: keyLen and valueLen, one byte each.
const MIN_HEADER_LEN: usize = 2;

/// One decoded record. Offsets and timestamps are deltas against the batch header.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    /// `None` is a null key; `Some(empty)` is an empty one.
    pub key: Option<Bytes>,
    /// `None` is a null value (a tombstone on compacted topics).
    pub value: Option<Bytes>,
    /// Header keys are UTF-8 by Kafka's contract; the bytes are kept as sent (Kafka's broker does
    /// not reject invalid sequences either).
    pub headers: Vec<(Bytes, Option<Bytes>)>,
}

/// Decodes every record of one batch that has passed [`crate::validate_batch`].
///
/// Compressed sections are decompressed with output capped at `max_decompressed_bytes`
/// (`DecompressedTooLarge` beyond it); uncompressed ones are not subject to the cap. The number
/// of records must equal the header's `record_count` and no bytes may follow the last record.
/// Control batches decode the same way (their key/value hold the marker).
pub fn records(batch: &[u8], max_decompressed_bytes: usize) -> Result<Vec<Record>, RecordsError> {
    let (data, count) = owned_section(batch, max_decompressed_bytes)?;
    decode_all(&data, count)
}

/// Decodes only the record of one batch (that passed [`crate::validate_batch`]) whose offset
/// delta is `offset_delta`, or None when the batch has no such record (a cleaner removed it).
/// Key lookups read one record of a batch: the records before it are only framed (length,
/// then the offset delta at the start of the body), not decoded. Same decompression cap as
/// [`records`]; a record that is reached is checked as [`records`] checks it.
pub fn record_at(
    batch: &[u8],
    max_decompressed_bytes: usize,
    offset_delta: i32,
) -> Result<Option<Record>, RecordsError> {
    let (data, count) = owned_section(batch, max_decompressed_bytes)?;
    let mut cur = Cursor::new(&data);
    for index in 0..count {
        let body = data.slice(next_record(&mut cur, index, count)?);
        let mut fields = Cursor::new(&body);
        fields.byte("record attributes")?;
        fields.varlong("timestamp delta")?;
        if fields.varint("offset delta")? == offset_delta {
            return decode_body(body, index).map(Some);
        }
    }
    Ok(None)
}

/// What produce validation needs from one record: read without materialising its key, value
/// or headers (no allocation, no reference counting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSummary {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    /// Whether the key is null (compacted topics reject keyless records).
    pub key_is_null: bool,
    /// Whether the value is null (a tombstone, to the cleaner).
    pub value_is_null: bool,
}

/// Walks every record of one batch that has passed [`crate::validate_batch`], calling `f` with
/// the record's index and [`RecordSummary`], and returns the number of records.
///
/// Accepts and rejects exactly the batches [`records`] does, with the same errors: record
/// framing (lengths, count, trailing bytes) and every field inside each record are checked,
/// but keys, values and headers are skipped instead of copied. `f` may already have been
/// called for earlier records when an error is returned. Uncompressed sections are walked in
/// place; compressed ones are decompressed once (capped at `max_decompressed_bytes`).
pub fn walk_records(
    batch: &[u8],
    max_decompressed_bytes: usize,
    mut f: impl FnMut(usize, RecordSummary),
) -> Result<usize, RecordsError> {
    walk_record_keys(batch, max_decompressed_bytes, |index, summary, _key| {
        f(index, summary)
    })
}

/// [`walk_records`], also handing `f` each record's key as a slice of the batch (or of its
/// decompressed section): for readers that need keys and offsets only, such as the cleaner
/// building its offset map, without copying values or headers.
pub fn walk_record_keys(
    batch: &[u8],
    max_decompressed_bytes: usize,
    mut f: impl FnMut(usize, RecordSummary, Option<&[u8]>),
) -> Result<usize, RecordsError> {
    let (codec, count, section) = records_section(batch)?;
    match codec {
        Compression::None => walk_all(section, count, &mut f),
        other => walk_all(
            &decompress(other, section, max_decompressed_bytes)?,
            count,
            &mut f,
        ),
    }
}

/// The framing of [`decode_all`] (same checks, same order, same messages) without decoding.
fn walk_all(
    data: &[u8],
    count: usize,
    f: &mut impl FnMut(usize, RecordSummary, Option<&[u8]>),
) -> Result<usize, RecordsError> {
    let mut cur = Cursor::new(data);
    for index in 0..count {
        let body = next_record(&mut cur, index, count)?;
        let body = data.get(body).unwrap_or(&[]);
        let (summary, key) = skim_body(body, index)?;
        f(index, summary, key);
    }
    if cur.remaining() != 0 {
        return Err(RecordsError::InvalidRecord(format!(
            "{} bytes follow the last of the {count} declared records",
            cur.remaining()
        )));
    }
    Ok(count)
}

/// [`decode_body`]'s checks, skipping over values and headers; the key is returned as a
/// slice of `body`.
fn skim_body(body: &[u8], index: usize) -> Result<(RecordSummary, Option<&[u8]>), RecordsError> {
    let mut cur = Cursor::new(body);
    let attributes = i8::from_be_bytes([cur.byte("record attributes")?]);
    let timestamp_delta = cur.varlong("timestamp delta")?;
    let offset_delta = cur.varint("offset delta")?;
    let key = nullable_range(&mut cur, "record key")?.map(|r| body.get(r).unwrap_or(&[]));
    let value_is_null = skip_nullable(&mut cur, "record value")?;
    let header_count = cur.varint("header count")?;
    let header_count = usize::try_from(header_count).map_err(|_| {
        RecordsError::InvalidRecord(format!(
            "record {index} has negative header count {header_count}"
        ))
    })?;
    for _ in 0..header_count {
        let key_len = cur.varint("header key length")?;
        let key_len = usize::try_from(key_len).map_err(|_| {
            RecordsError::InvalidRecord(format!(
                "record {index} has a header key of negative length {key_len}"
            ))
        })?;
        cur.take(key_len, "header key")?;
        skip_nullable(&mut cur, "header value")?;
    }
    if cur.remaining() != 0 {
        return Err(RecordsError::InvalidRecord(format!(
            "record {index} declares {} bytes but its fields end after {}",
            body.len(),
            cur.position()
        )));
    }
    let summary = RecordSummary {
        attributes,
        timestamp_delta,
        offset_delta,
        key_is_null: key.is_none(),
        value_is_null,
    };
    Ok((summary, key))
}

/// [`nullable`] without the slice: returns whether the field is null.
fn skip_nullable(cur: &mut Cursor<'_>, what: &str) -> Result<bool, RecordsError> {
    Ok(nullable_range(cur, what)?.is_none())
}

/// [`nullable`] as the field's position in the body (`None` when null).
fn nullable_range(
    cur: &mut Cursor<'_>,
    what: &str,
) -> Result<Option<std::ops::Range<usize>>, RecordsError> {
    let len = cur.varint(what)?;
    if len == -1 {
        return Ok(None);
    }
    let len = usize::try_from(len)
        .map_err(|_| RecordsError::InvalidRecord(format!("{what} has invalid length {len}")))?;
    cur.take(len, what).map(Some)
}

/// The codec, declared record count and records section (still compressed) of a batch.
fn records_section(batch: &[u8]) -> Result<(Compression, usize, &[u8]), RecordsError> {
    let header = BatchHeader::parse(batch)?;
    let codec = header.compression()?;
    let count = usize::try_from(header.record_count).map_err(|_| {
        RecordsError::InvalidBatch(format!("negative record count {}", header.record_count))
    })?;
    Ok((codec, count, batch.get(HEADER_LEN..).unwrap_or(&[])))
}

/// The records section as owned bytes (decompressed, capped at `max_decompressed_bytes`) and
/// the declared record count, for decoders that hand out slices of it.
fn owned_section(
    batch: &[u8],
    max_decompressed_bytes: usize,
) -> Result<(Bytes, usize), RecordsError> {
    let (codec, count, section) = records_section(batch)?;
    let data = match codec {
        Compression::None => Bytes::copy_from_slice(section),
        other => Bytes::from(decompress(other, section, max_decompressed_bytes)?),
    };
    Ok((data, count))
}

/// Frames record `index` of `count` at the cursor: its length, then the range of its body.
fn next_record(
    cur: &mut Cursor<'_>,
    index: usize,
    count: usize,
) -> Result<std::ops::Range<usize>, RecordsError> {
    if cur.remaining() == 0 {
        return Err(RecordsError::InvalidRecord(format!(
            "batch declares {count} records but holds only {index}"
        )));
    }
    let len = cur.varint("record length")?;
    let len = usize::try_from(len).map_err(|_| {
        RecordsError::InvalidRecord(format!("record {index} has negative length {len}"))
    })?;
    cur.take(len, "record body")
}

fn decode_all(data: &Bytes, count: usize) -> Result<Vec<Record>, RecordsError> {
    let mut out = Vec::with_capacity(count.min(data.len() / MIN_RECORD_LEN));
    let mut cur = Cursor::new(data);
    for index in 0..count {
        let body = next_record(&mut cur, index, count)?;
        out.push(decode_body(data.slice(body), index)?);
    }
    if cur.remaining() != 0 {
        return Err(RecordsError::InvalidRecord(format!(
            "{} bytes follow the last of the {count} declared records",
            cur.remaining()
        )));
    }
    Ok(out)
}

fn decode_body(body: Bytes, index: usize) -> Result<Record, RecordsError> {
    let mut cur = Cursor::new(&body);
    let attributes = i8::from_be_bytes([cur.byte("record attributes")?]);
    let timestamp_delta = cur.varlong("timestamp delta")?;
    let offset_delta = cur.varint("offset delta")?;
    let key = nullable(&body, &mut cur, "record key")?;
    let value = nullable(&body, &mut cur, "record value")?;
    let header_count = cur.varint("header count")?;
    let header_count = usize::try_from(header_count).map_err(|_| {
        RecordsError::InvalidRecord(format!(
            "record {index} has negative header count {header_count}"
        ))
    })?;
    let mut headers = Vec::with_capacity(header_count.min(cur.remaining() / MIN_HEADER_LEN));
    for _ in 0..header_count {
        let key_len = cur.varint("header key length")?;
        let key_len = usize::try_from(key_len).map_err(|_| {
            RecordsError::InvalidRecord(format!(
                "record {index} has a header key of negative length {key_len}"
            ))
        })?;
        let key = body.slice(cur.take(key_len, "header key")?);
        let value = nullable(&body, &mut cur, "header value")?;
        headers.push((key, value));
    }
    if cur.remaining() != 0 {
        return Err(RecordsError::InvalidRecord(format!(
            "record {index} declares {} bytes but its fields end after {}",
            body.len(),
            cur.position()
        )));
    }
    Ok(Record {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}

/// Reads a `varint length + bytes` field where -1 means null.
fn nullable(body: &Bytes, cur: &mut Cursor<'_>, what: &str) -> Result<Option<Bytes>, RecordsError> {
    Ok(nullable_range(cur, what)?.map(|r| body.slice(r)))
}

/// One header as the builder receives it.
pub(crate) type HeaderRef<'a> = (&'a [u8], Option<&'a [u8]>);

/// Appends one encoded record (length prefix included) to `out`. `scratch` is reused between
/// calls to avoid an allocation per record.
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[HeaderRef<'_>],
) -> Result<(), RecordsError> {
    scratch.clear();
    scratch.push(0); // record attributes: unused by Kafka, always 0
    put_varlong(scratch, timestamp_delta);
    put_varint(scratch, offset_delta);
    put_nullable(scratch, key, "record key")?;
    put_nullable(scratch, value, "record value")?;
    put_varint(scratch, len_i32(headers.len(), "header count")?);
    for (hk, hv) in headers {
        put_varint(scratch, len_i32(hk.len(), "header key")?);
        scratch.extend_from_slice(hk);
        put_nullable(scratch, *hv, "header value")?;
    }
    put_varint(out, len_i32(scratch.len(), "record")?);
    out.extend_from_slice(scratch);
    Ok(())
}

fn put_nullable(out: &mut Vec<u8>, field: Option<&[u8]>, what: &str) -> Result<(), RecordsError> {
    match field {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, len_i32(b.len(), what)?);
            out.extend_from_slice(b);
        }
    }
    Ok(())
}

fn len_i32(len: usize, what: &str) -> Result<i32, RecordsError> {
    i32::try_from(len)
        .map_err(|_| RecordsError::TooLarge(format!("{what} of {len} bytes exceeds i32::MAX")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[HeaderRef<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_record(&mut out, &mut Vec::new(), -5, 3, key, value, headers).unwrap();
        out
    }

    #[test]
    fn record_round_trip_distinguishes_null_and_empty() {
        let mut data = encode(None, Some(b""), &[(b"h", None), (b"", Some(b"v"))]);
        data.extend(encode(Some(b""), None, &[]));
        let recs = decode_all(&Bytes::from(data), 2).unwrap();
        assert_eq!(recs[0].key, None);
        assert_eq!(recs[0].value.as_deref(), Some(&b""[..]));
        assert_eq!(recs[0].timestamp_delta, -5);
        assert_eq!(recs[0].offset_delta, 3);
        assert_eq!(
            recs[0].headers,
            vec![
                (Bytes::from_static(b"h"), None),
                (Bytes::new(), Some(Bytes::from_static(b"v")))
            ]
        );
        assert_eq!(recs[1].key.as_deref(), Some(&b""[..]));
        assert_eq!(recs[1].value, None);
    }

    #[test]
    fn record_at_decodes_the_one_record_asked_for() {
        let mut b = crate::BatchBuilder::new(100, Compression::Lz4);
        for i in 0..50u8 {
            b.push(1, Some(&[i]), Some(&[i, i]), &[(b"h", Some(&[i]))]);
        }
        let batch = b.build().unwrap();
        let all = records(&batch, 1 << 20).unwrap();
        for (i, want) in all.iter().enumerate() {
            let got = record_at(&batch, 1 << 20, i as i32).unwrap();
            assert_eq!(got.as_ref(), Some(want));
        }
        assert_eq!(record_at(&batch, 1 << 20, 50).unwrap(), None);
        assert_eq!(record_at(&batch, 1 << 20, -1).unwrap(), None);
        // A batch cut short is an error, not a guess.
        let mut short = batch.clone();
        short.truncate(short.len() - 3);
        assert!(record_at(&short, 1 << 20, 49).is_err());
    }

    #[test]
    fn count_mismatch_and_trailing_bytes_rejected() {
        let data = Bytes::from(encode(Some(b"k"), Some(b"v"), &[]));
        assert!(decode_all(&data, 1).is_ok());
        assert!(matches!(
            decode_all(&data, 2),
            Err(RecordsError::InvalidRecord(_))
        ));
        assert!(matches!(
            decode_all(&data, 0),
            Err(RecordsError::InvalidRecord(_))
        ));
    }

    #[test]
    fn inner_length_must_match_fields() {
        // A record whose length prefix claims one more byte than its fields use.
        let mut rec = encode(Some(b"k"), Some(b"v"), &[]);
        rec[0] += 2; // zigzag: +1 in value
        rec.push(0);
        assert!(matches!(
            decode_all(&Bytes::from(rec), 1),
            Err(RecordsError::InvalidRecord(_))
        ));
    }

    #[test]
    fn invalid_lengths_rejected() {
        // length 9, attrs 0, ts 0, offset 0, keyLen -2
        let rec = vec![0x12, 0, 0, 0, 0x03, 0, 0, 0, 0, 0];
        assert!(matches!(
            decode_all(&Bytes::from(rec), 1),
            Err(RecordsError::InvalidRecord(_))
        ));
        // negative header count with huge magnitude must not allocate
        let rec = vec![0x0c, 0, 0, 0, 0x01, 0x01, 0x01];
        assert!(matches!(
            decode_all(&Bytes::from(rec), 1),
            Err(RecordsError::InvalidRecord(_))
        ));
        // huge header count, no headers present
        let rec = vec![0x14, 0, 0, 0, 0x01, 0x01, 0xfe, 0xff, 0xff, 0xff, 0x07];
        assert!(matches!(
            decode_all(&Bytes::from(rec), 1),
            Err(RecordsError::InvalidRecord(_))
        ));
    }
}
