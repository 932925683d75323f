//! A Fetch response frame in pieces, so the record sets read from the log go to the socket
//! without being copied into the frame: the pieces, written in order, are byte for byte the
//! frame [`encode_response`](crate::encode_response) would build.
//!
//! A record set is either in the response (large ones become shared pieces) or kept outside
//! it by the caller ([`Outside`]: ranges of segment files a plaintext connection sends with
//! sendfile), given with its length and which partition it belongs to.
//!
//! kafka-protocol encodes into one contiguous buffer. Each record set worth sharing, and each
//! outside one, is replaced by a 16-byte marker, random per response, the (now small)
//! response is encoded, and the frame is cut at the markers: each marker and its length
//! prefix give way to the real length prefix and the record set. The frame size is patched
//! last. Record sets are not inside any size-prefixed field (tagged fields carry their own
//! sizes, but records are not tagged), so no other length changes. Should the markers not be
//! found exactly as placed, the plain encoding is used when every record set is in the
//! response, and an error is returned when one is outside it.
//!
//! Thread-safety: pure functions. No on-disk format.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseKind};

use crate::encode::encode_response;
use crate::error::EncodeError;

/// Record sets smaller than this are copied into the frame: a separate piece would cost
/// more than the copy.
pub const SHARE_FROM_BYTES: usize = 4096;

/// First flexible (compact encoding) version of Fetch.
const FIRST_FLEXIBLE: i16 = 12;

const MARKER_LEN: usize = 16;

/// One piece of a frame: bytes, or a record set kept outside the response.
#[derive(Debug)]
pub enum Piece<T> {
    Bytes(Bytes),
    Outside(T),
}

/// A Fetch record set the caller keeps outside the response: the partition's place among
/// the response's partitions (topics in order, then their partitions), its length in bytes,
/// and what the writer sends for it. That partition's `records` in the response are ignored.
#[derive(Debug)]
pub struct Outside<T> {
    pub partition: usize,
    pub len: usize,
    pub records: T,
}

/// The frame of `body` as pieces to write in order. A Fetch response's large record sets are
/// shared pieces (no copy), and `outside` ones are pieces of their own; every other response
/// is one piece.
pub fn encode_response_pieces<T>(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseKind,
    outside: Vec<Outside<T>>,
) -> Result<Vec<Piece<T>>, EncodeError> {
    if let ResponseKind::Fetch(fetch) = body {
        let has_outside = !outside.is_empty();
        if let Some(pieces) = fetch_pieces(correlation_id, version, fetch, outside)? {
            return Ok(pieces);
        }
        if has_outside {
            return Err(EncodeError::Body {
                api_key: format!("{api_key:?}"),
                version,
                reason: "record set markers not found in the encoded frame".to_string(),
            });
        }
    }
    encode_response(correlation_id, api_key, version, body).map(|frame| vec![Piece::Bytes(frame)])
}

/// A record set cut out of the encoded frame.
enum Set<T> {
    Shared(Bytes),
    Outside(usize, T),
}

/// `None` when no record set is worth sharing or outside, or the markers were not found as
/// placed.
fn fetch_pieces<T>(
    correlation_id: i32,
    version: i16,
    fetch: &FetchResponse,
    outside: Vec<Outside<T>>,
) -> Result<Option<Vec<Piece<T>>>, EncodeError> {
    let large = |r: &Bytes| r.len() >= SHARE_FROM_BYTES;
    let shared = fetch
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .filter(|p| p.records.as_ref().is_some_and(large))
        .count();
    if shared == 0 && outside.is_empty() {
        return Ok(None);
    }
    let marker = random_marker();
    let mut light = fetch.clone();
    let mut sets: Vec<Set<T>> = Vec::with_capacity(shared + outside.len());
    let mut outside = outside.into_iter().peekable();
    for (i, p) in light
        .responses
        .iter_mut()
        .flat_map(|t| &mut t.partitions)
        .enumerate()
    {
        if let Some(o) = outside.next_if(|o| o.partition == i) {
            sets.push(Set::Outside(o.len, o.records));
        } else if let Some(records) = p.records.take_if(|r| large(r)) {
            sets.push(Set::Shared(records));
        } else {
            continue;
        }
        p.records = Some(Bytes::copy_from_slice(&marker));
    }
    if outside.next().is_some() {
        // Outside sets must name partitions of the response, in order.
        return Ok(None);
    }
    let frame = encode_response(
        correlation_id,
        ApiKey::Fetch,
        version,
        &ResponseKind::Fetch(light),
    )?;
    let flexible = version >= FIRST_FLEXIBLE;
    let marker_prefix = length_prefix(MARKER_LEN, flexible);
    let mut pieces = Vec::with_capacity(2 * sets.len() + 1);
    let mut from = 0usize;
    let mut total = 0usize;
    for set in sets {
        let Some(at) = find(&frame, &marker, from) else {
            return Ok(None);
        };
        let Some(prefix_at) = at.checked_sub(marker_prefix.len()) else {
            return Ok(None);
        };
        if frame.get(prefix_at..at) != Some(marker_prefix.as_slice()) || prefix_at < from {
            return Ok(None);
        }
        let len = match &set {
            Set::Shared(b) => b.len(),
            Set::Outside(len, _) => *len,
        };
        let mut head = BytesMut::with_capacity(prefix_at - from + 5);
        head.extend_from_slice(frame.get(from..prefix_at).unwrap_or(&[]));
        head.extend_from_slice(&length_prefix(len, flexible));
        total += head.len() + len;
        pieces.push(Piece::Bytes(head.freeze()));
        pieces.push(match set {
            Set::Shared(b) => Piece::Bytes(b),
            Set::Outside(_, records) => Piece::Outside(records),
        });
        from = at + MARKER_LEN;
    }
    if find(&frame, &marker, from).is_some() {
        return Ok(None);
    }
    let tail = frame.slice(from..);
    total += tail.len();
    if !tail.is_empty() {
        pieces.push(Piece::Bytes(tail));
    }
    let size = i32::try_from(total - 4).map_err(|_| EncodeError::TooLarge(total - 4))?;
    let Some(Piece::Bytes(first)) = pieces.first_mut() else {
        return Ok(None);
    };
    let mut patched = BytesMut::from(first.as_ref());
    patched[..4].copy_from_slice(&size.to_be_bytes());
    *first = patched.freeze();
    Ok(Some(pieces))
}

/// The length prefix of a non-null byte field of `len` bytes: an unsigned varint of len + 1
/// in flexible versions, an i32 before.
fn length_prefix(len: usize, flexible: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(5);
    if flexible {
        let mut v = len as u64 + 1;
        while v >= 0x80 {
            out.put_u8((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.put_u8(v as u8);
    } else {
        out.put_i32(i32::try_from(len).unwrap_or(i32::MAX));
    }
    out
}

/// 16 bytes no client can guess, so no topic name or other field can hold them.
fn random_marker() -> [u8; MARKER_LEN] {
    let state = RandomState::new();
    let mut out = [0u8; MARKER_LEN];
    for (i, half) in out.chunks_mut(8).enumerate() {
        let mut h = state.build_hasher();
        h.write_usize(i);
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

/// Position of `needle` in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, PartitionData,
    };
    use kafka_protocol::messages::{ProducerId, TopicName};
    use kafka_protocol::protocol::StrBytes;

    fn records(len: usize, seed: u8) -> Bytes {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    fn response(sizes: &[Option<usize>], name: &str, version: i16) -> FetchResponse {
        let partitions = sizes
            .iter()
            .enumerate()
            .map(|(i, size)| {
                PartitionData::default()
                    .with_partition_index(i as i32)
                    .with_high_watermark(1000 + i as i64)
                    .with_last_stable_offset(900)
                    .with_log_start_offset(3)
                    .with_aborted_transactions(Some(vec![AbortedTransaction::default()
                        .with_producer_id(ProducerId(7))
                        .with_first_offset(11)]))
                    .with_records(size.map(|n| records(n, i as u8)))
            })
            .collect();
        let topic = if version >= 13 {
            FetchableTopicResponse::default().with_topic_id(uuid::Uuid::from_u128(42))
        } else {
            FetchableTopicResponse::default()
                .with_topic(TopicName(StrBytes::from_string(name.to_string())))
        };
        FetchResponse::default()
            .with_session_id(0)
            .with_responses(vec![topic.with_partitions(partitions)])
    }

    /// The bytes the pieces stand for, an outside set being the bytes it carries.
    fn flatten(pieces: &[Piece<Bytes>]) -> Vec<u8> {
        pieces
            .iter()
            .flat_map(|p| match p {
                Piece::Bytes(b) | Piece::Outside(b) => b.to_vec(),
            })
            .collect()
    }

    fn check(sizes: &[Option<usize>], name: &str, expect_shared: usize) {
        for version in 4..=18 {
            let body = ResponseKind::Fetch(response(sizes, name, version));
            let whole = encode_response(9, ApiKey::Fetch, version, &body).unwrap();
            let pieces =
                encode_response_pieces::<Bytes>(9, ApiKey::Fetch, version, &body, vec![]).unwrap();
            assert_eq!(flatten(&pieces), whole.to_vec(), "v{version} {sizes:?}");
            let big = pieces
                .iter()
                .filter(|p| matches!(p, Piece::Bytes(b) if b.len() >= SHARE_FROM_BYTES))
                .count();
            assert_eq!(big, expect_shared, "v{version} {sizes:?}");
        }
    }

    #[test]
    fn pieces_are_the_frame_with_large_record_sets_shared() {
        check(&[Some(10)], "t", 0);
        check(&[Some(SHARE_FROM_BYTES)], "t", 1);
        check(&[Some(70_000), None, Some(5), Some(1 << 20)], "topic", 2);
        check(&[Some(0), Some(300_000), Some(127), Some(128)], "x", 1);
        check(&[Some((1 << 21) + 5)], "four-byte-varint", 1);
    }

    #[test]
    fn outside_record_sets_take_their_place_in_the_frame() {
        let sizes = [
            Some(10),
            Some(70_000),
            Some(0),
            Some(5000),
            Some(3),
            Some(200),
        ];
        let outside_at = [0usize, 2, 3, 5];
        for version in 4..=18 {
            let full = response(&sizes, "topic", version);
            let mut light = full.clone();
            let mut outside = Vec::new();
            for (i, p) in light.responses[0].partitions.iter_mut().enumerate() {
                if outside_at.contains(&i) {
                    let records = p.records.replace(Bytes::new()).unwrap();
                    outside.push(Outside {
                        partition: i,
                        len: records.len(),
                        records,
                    });
                }
            }
            let whole =
                encode_response(9, ApiKey::Fetch, version, &ResponseKind::Fetch(full)).unwrap();
            let light = ResponseKind::Fetch(light);
            let pieces =
                encode_response_pieces(9, ApiKey::Fetch, version, &light, outside).unwrap();
            assert_eq!(flatten(&pieces), whole.to_vec(), "v{version}");
            let outside_pieces = pieces
                .iter()
                .filter(|p| matches!(p, Piece::Outside(_)))
                .count();
            assert_eq!(outside_pieces, outside_at.len(), "v{version}");
        }
    }

    #[test]
    fn an_outside_set_naming_no_partition_is_an_error() {
        let body = ResponseKind::Fetch(response(&[Some(10)], "t", 16));
        let outside = vec![Outside {
            partition: 1,
            len: 3,
            records: Bytes::from_static(b"abc"),
        }];
        assert!(encode_response_pieces(1, ApiKey::Fetch, 16, &body, outside).is_err());
    }

    #[test]
    fn shared_record_sets_are_not_copied() {
        let body = ResponseKind::Fetch(response(&[Some(1 << 16)], "t", 16));
        let ResponseKind::Fetch(f) = &body else {
            unreachable!()
        };
        let original = f.responses[0].partitions[0].records.clone().unwrap();
        let pieces = encode_response_pieces::<Bytes>(1, ApiKey::Fetch, 16, &body, vec![]).unwrap();
        assert!(pieces.iter().any(
            |p| matches!(p, Piece::Bytes(b) if b.as_ptr() == original.as_ptr() && b.len() == original.len())
        ));
    }

    #[test]
    fn other_responses_are_one_piece() {
        let body = ResponseKind::Fetch(response(&[None], "t", 12));
        assert_eq!(
            encode_response_pieces::<Bytes>(1, ApiKey::Fetch, 12, &body, vec![])
                .unwrap()
                .len(),
            1
        );
    }
}
