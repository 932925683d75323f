//! Property and fuzz-style tests: random records survive build → validate → decode for every
//! codec, and random, truncated or corrupted bytes never make any entry point panic.
#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use proptest::prelude::*;
use skiff_records::*;

const CAP: usize = 1 << 20;

type Header = (Vec<u8>, Option<Vec<u8>>);

#[derive(Clone, Debug)]
struct Input {
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<Header>,
}

fn bytes_opt() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop::option::of(prop::collection::vec(any::<u8>(), 0..40))
}

fn input() -> impl Strategy<Value = Input> {
    (
        prop_oneof![any::<i64>(), 0i64..2_000_000_000_000],
        bytes_opt(),
        bytes_opt(),
        prop::collection::vec(
            (prop::collection::vec(any::<u8>(), 0..8), bytes_opt()),
            0..3,
        ),
    )
        .prop_map(|(timestamp, key, value, headers)| Input {
            timestamp,
            key,
            value,
            headers,
        })
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Snappy),
        Just(Compression::Lz4),
        Just(Compression::Zstd),
    ]
}

fn build(codec: Compression, base: i64, inputs: &[Input]) -> Vec<u8> {
    let mut b = BatchBuilder::new(base, codec);
    for i in inputs {
        let headers: Vec<(&[u8], Option<&[u8]>)> = i
            .headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        b.push(i.timestamp, i.key.as_deref(), i.value.as_deref(), &headers);
    }
    b.build().unwrap()
}

/// Every public decoding entry point on arbitrary bytes; results are ignored, panics are not.
fn exercise(buf: &[u8]) {
    let mut it = Batches::new(buf);
    for (_, batch) in it.by_ref().flatten() {
        let _ = validate_batch(batch);
        let _ = validate_produce_batch(batch);
        let _ = records(batch, 1 << 16);
    }
    assert!(it.position() <= buf.len());
    let _ = validate_batch(buf);
    let _ = records(buf, 1 << 16);
    if let Ok(h) = BatchHeader::parse(buf) {
        let _ = (
            h.total_size(),
            h.next_offset(),
            h.compression(),
            h.timestamp_type(),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn build_then_decode_is_identity(
        codec in codec(),
        base in any::<i64>(),
        inputs in prop::collection::vec(input(), 0..12),
    ) {
        let batch = build(codec, base, &inputs);
        let h = validate_batch(&batch).unwrap();
        prop_assert_eq!(h.record_count as usize, inputs.len());
        prop_assert_eq!(h.base_offset, base);
        if let Some(max) = inputs.iter().map(|i| i.timestamp).max() {
            prop_assert_eq!(h.max_timestamp, max);
        }
        let recs = records(&batch, CAP).unwrap();
        prop_assert_eq!(recs.len(), inputs.len());
        for (n, (r, i)) in recs.iter().zip(&inputs).enumerate() {
            prop_assert_eq!(r.offset_delta as usize, n);
            prop_assert_eq!(h.base_timestamp.wrapping_add(r.timestamp_delta), i.timestamp);
            prop_assert_eq!(r.key.clone(), i.key.clone().map(Bytes::from));
            prop_assert_eq!(r.value.clone(), i.value.clone().map(Bytes::from));
            let headers: Vec<(Bytes, Option<Bytes>)> = i
                .headers
                .iter()
                .map(|(k, v)| (Bytes::from(k.clone()), v.clone().map(Bytes::from)))
                .collect();
            prop_assert_eq!(&r.headers, &headers);
        }
        let mut it = Batches::new(&batch);
        prop_assert_eq!(it.next().unwrap().unwrap().1, &batch[..]);
        prop_assert!(it.next().is_none());
    }

    #[test]
    fn random_bytes_never_panic(buf in prop::collection::vec(any::<u8>(), 0..400)) {
        exercise(&buf);
    }

    #[test]
    fn random_bytes_behind_a_valid_header_never_panic(
        codec in 0i16..8,
        count in prop_oneof![any::<i32>(), 0i32..10],
        body in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        // A header that passes validation, followed by garbage records: exercises the record
        // decoder and every decompressor on hostile input.
        let mut batch = BatchBuilder::new(0, Compression::None).build().unwrap();
        batch.extend_from_slice(&body);
        let len = (batch.len() - LOG_OVERHEAD) as i32;
        batch[8..12].copy_from_slice(&len.to_be_bytes());
        batch[21..23].copy_from_slice(&codec.to_be_bytes());
        batch[23..27].copy_from_slice(&i32::MAX.to_be_bytes());
        batch[57..61].copy_from_slice(&count.to_be_bytes());
        let crc = crc_of(&batch);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
        exercise(&batch);
    }
}

fn real_batches() -> Vec<Vec<u8>> {
    let inputs: Vec<Input> = (0..6)
        .map(|n| Input {
            timestamp: 1_700_000_000_000 + n,
            key: (n % 3 != 0).then(|| format!("key-{n}").into_bytes()),
            value: (n % 4 != 1).then(|| vec![n as u8; (n as usize) * 17]),
            headers: vec![(b"trace".to_vec(), Some(vec![1, 2, 3]))],
        })
        .collect();
    [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ]
    .into_iter()
    .map(|c| build(c, 10, &inputs))
    .collect()
}

/// Re-signs a corrupted batch so the corruption reaches the record decoder instead of stopping
/// at the CRC check.
fn resign(batch: &mut [u8]) {
    if batch.len() >= 21 {
        let crc = crc_of(batch);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
    }
}

#[test]
fn truncated_real_batches_are_rejected_without_panic() {
    for batch in real_batches() {
        assert_eq!(records(&batch, CAP).unwrap().len(), 6);
        for cut in 0..batch.len() {
            let short = &batch[..cut];
            assert!(validate_batch(short).is_err(), "cut {cut}");
            assert!(Batches::new(short).next().is_none(), "cut {cut}");
            // Truncated but with the length fixed up and re-signed: decoding must fail cleanly.
            let mut fixed = short.to_vec();
            if cut >= HEADER_LEN {
                let len = (cut - LOG_OVERHEAD) as i32;
                fixed[8..12].copy_from_slice(&len.to_be_bytes());
                resign(&mut fixed);
                validate_batch(&fixed).unwrap();
                assert!(records(&fixed, CAP).is_err(), "cut {cut} decoded");
            }
            exercise(&fixed);
        }
    }
}

#[test]
fn corrupted_real_batches_never_panic() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for batch in real_batches() {
        for _ in 0..400 {
            let mut bad = batch.clone();
            for _ in 0..(1 + next() % 4) {
                let at = HEADER_LEN + (next() as usize) % (bad.len() - HEADER_LEN);
                bad[at] = next() as u8;
            }
            // Unsigned: the CRC catches it unless the bytes happen to be unchanged.
            if bad != batch {
                assert!(matches!(
                    validate_batch(&bad),
                    Err(RecordsError::CrcMismatch { .. })
                ));
            }
            resign(&mut bad);
            exercise(&bad);
        }
    }
}
