//! Compression and capped decompression of a batch's records section (everything after byte 61
//! of a compressed batch is one blob).
//!
//! Formats: gzip stream (multi-member accepted), snappy in Kafka's xerial framing (magic
//! `\x82SNAPPY\0`, two i32 versions, then blocks of `i32 length + raw snappy`) or raw snappy,
//! LZ4 frame format, zstd frame. Decompression never produces more than the caller's cap, so a
//! small hostile batch cannot exhaust memory. Pure (in-memory I/O only); thread-safe.

use std::io::{Read, Write};

use crate::error::RecordsError;
use crate::header::Compression;

/// Header of xerial snappy framing as written by Kafka's Java client.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic + version (i32) + minimum compatible version (i32).
const XERIAL_HEADER_LEN: usize = 16;
/// Xerial's default block size; Kafka's producer uses it too.
const XERIAL_BLOCK: usize = 32 * 1024;
/// Kafka's default zstd level.
const ZSTD_LEVEL: i32 = 3;

/// Compresses `data` with `codec` (`None` returns a copy).
pub(crate) fn compress(codec: Compression, data: &[u8]) -> Result<Vec<u8>, RecordsError> {
    let err = |e: std::io::Error| RecordsError::Compression(format!("{codec:?} compression: {e}"));
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(data).map_err(err)?;
            enc.finish().map_err(err)
        }
        Compression::Snappy => {
            let mut out = Vec::with_capacity(XERIAL_HEADER_LEN + data.len() / 2);
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut enc = snap::raw::Encoder::new();
            for block in data.chunks(XERIAL_BLOCK) {
                let compressed = enc
                    .compress_vec(block)
                    .map_err(|e| RecordsError::Compression(format!("Snappy compression: {e}")))?;
                let len = i32::try_from(compressed.len())
                    .map_err(|_| RecordsError::Compression("snappy block too large".to_string()))?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            Ok(out)
        }
        Compression::Lz4 => {
            let mut enc = lz4::EncoderBuilder::new().build(Vec::new()).map_err(err)?;
            enc.write_all(data).map_err(err)?;
            let (out, result) = enc.finish();
            result.map_err(err)?;
            Ok(out)
        }
        Compression::Zstd => zstd::stream::encode_all(data, ZSTD_LEVEL).map_err(err),
    }
}

/// Decompresses `data`, failing with `DecompressedTooLarge(max)` as soon as the output would
/// exceed `max` bytes.
pub(crate) fn decompress(
    codec: Compression,
    data: &[u8],
    max: usize,
) -> Result<Vec<u8>, RecordsError> {
    let err = |e: std::io::Error| {
        RecordsError::Compression(format!("{codec:?} decompression failed: {e}"))
    };
    match codec {
        Compression::None => {
            if data.len() > max {
                return Err(RecordsError::DecompressedTooLarge(max));
            }
            Ok(data.to_vec())
        }
        Compression::Gzip => {
            read_capped(flate2::read::MultiGzDecoder::new(data), max).map_err(|e| match e {
                Capped::TooLarge => RecordsError::DecompressedTooLarge(max),
                Capped::Io(e) => err(e),
            })
        }
        Compression::Snappy => {
            if data.starts_with(&XERIAL_MAGIC) {
                decompress_xerial(data, max)
            } else {
                let mut out = Vec::new();
                raw_snappy_into(data, max, &mut out)?;
                Ok(out)
            }
        }
        Compression::Lz4 => {
            let mut dec = lz4::Decoder::new(data).map_err(err)?;
            let out = read_capped(&mut dec, max).map_err(|e| match e {
                Capped::TooLarge => RecordsError::DecompressedTooLarge(max),
                Capped::Io(e) => err(e),
            })?;
            // The decoder reports a truncated frame as a clean end of stream; `finish` tells.
            let (_, end) = dec.finish();
            end.map_err(|_| {
                RecordsError::Compression("Lz4 decompression failed: truncated frame".to_string())
            })?;
            Ok(out)
        }
        Compression::Zstd => {
            let dec = zstd::stream::read::Decoder::with_buffer(data).map_err(err)?;
            read_capped(dec, max).map_err(|e| match e {
                Capped::TooLarge => RecordsError::DecompressedTooLarge(max),
                Capped::Io(e) => err(e),
            })
        }
    }
}

enum Capped {
    TooLarge,
    Io(std::io::Error),
}

/// Reads at most `max + 1` bytes so that overflowing the cap is detected without reading on.
fn read_capped<R: Read>(reader: R, max: usize) -> Result<Vec<u8>, Capped> {
    let mut out = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(Capped::Io)?;
    if out.len() > max {
        return Err(Capped::TooLarge);
    }
    Ok(out)
}

/// Appends the raw-snappy decoding of `data` to `out`, checking the declared size against the
/// cap before allocating.
fn raw_snappy_into(data: &[u8], max: usize, out: &mut Vec<u8>) -> Result<(), RecordsError> {
    let declared = snap::raw::decompress_len(data)
        .map_err(|e| RecordsError::Compression(format!("Snappy decompression failed: {e}")))?;
    if declared > max.saturating_sub(out.len()) {
        return Err(RecordsError::DecompressedTooLarge(max));
    }
    let start = out.len();
    out.resize(start + declared, 0);
    let written = snap::raw::Decoder::new()
        .decompress(data, &mut out[start..])
        .map_err(|e| RecordsError::Compression(format!("Snappy decompression failed: {e}")))?;
    out.truncate(start + written);
    Ok(())
}

fn decompress_xerial(data: &[u8], max: usize) -> Result<Vec<u8>, RecordsError> {
    let mut rest = data
        .get(XERIAL_HEADER_LEN..)
        .ok_or_else(|| RecordsError::Compression("Snappy (xerial) header truncated".to_string()))?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let len_bytes: [u8; 4] =
            rest.get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    RecordsError::Compression("Snappy (xerial) block length truncated".to_string())
                })?;
        let len = usize::try_from(i32::from_be_bytes(len_bytes)).map_err(|_| {
            RecordsError::Compression("Snappy (xerial) negative block length".to_string())
        })?;
        let block = rest.get(4..4 + len).ok_or_else(|| {
            RecordsError::Compression(format!(
                "Snappy (xerial) block of {len} bytes runs past the end"
            ))
        })?;
        raw_snappy_into(block, max, &mut out)?;
        rest = &rest[4 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODECS: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn sample() -> Vec<u8> {
        (0..100_000u32).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn round_trip_every_codec() {
        let data = sample();
        for c in CODECS {
            let z = compress(c, &data).unwrap();
            assert_eq!(decompress(c, &z, data.len()).unwrap(), data, "{c:?}");
            assert_eq!(
                decompress(c, &z, data.len() - 1),
                Err(RecordsError::DecompressedTooLarge(data.len() - 1)),
                "{c:?}"
            );
        }
    }

    #[test]
    fn raw_snappy_is_accepted() {
        let data = sample();
        let z = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &z, usize::MAX).unwrap(),
            data
        );
    }

    #[test]
    fn truncated_streams_are_errors() {
        let data = sample();
        for c in CODECS.into_iter().skip(1) {
            let z = compress(c, &data).unwrap();
            for cut in [0, 1, z.len() / 2, z.len() - 1] {
                let r = decompress(c, &z[..cut], usize::MAX);
                assert!(
                    r.as_ref().map(|v| v != &data).unwrap_or(true),
                    "{c:?} cut {cut} decoded to the full input"
                );
            }
        }
    }

    #[test]
    fn empty_input_compresses() {
        for c in CODECS {
            let z = compress(c, &[]).unwrap();
            assert_eq!(decompress(c, &z, 0).unwrap(), Vec::<u8>::new(), "{c:?}");
        }
    }
}
