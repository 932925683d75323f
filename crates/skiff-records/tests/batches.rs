//! Behaviour of whole batches built with `BatchBuilder`: round trips for every codec, CRC and
//! length checks, torn tails, record-count mismatches, the decompression cap and stamping.
#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use skiff_records::*;

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

const MAX: usize = 1 << 20;

fn sample(codec: Compression, base_offset: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(base_offset, codec);
    b.push(1_000, Some(b"k1"), Some(b"v1"), &[]);
    b.push(999, None, Some(b""), &[(b"h1", Some(b"x")), (b"h2", None)]);
    b.push(1_005, Some(b""), None, &[(b"", Some(b""))]);
    b.push(1_002, Some(b"k4"), Some(&[7u8; 3000]), &[]);
    b.build().unwrap()
}

fn rewrite_header(batch: &mut [u8], at: usize, bytes: &[u8]) {
    batch[at..at + bytes.len()].copy_from_slice(bytes);
    let crc = crc_of(batch);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

#[test]
fn round_trip_every_codec() {
    for codec in CODECS {
        let batch = sample(codec, 100);
        let h = validate_batch(&batch).unwrap();
        assert_eq!(h.compression().unwrap(), codec);
        assert_eq!(h.base_offset, 100);
        assert_eq!(h.record_count, 4);
        assert_eq!(h.last_offset_delta, 3);
        assert_eq!(h.last_offset(), 103);
        assert_eq!(h.next_offset(), 104);
        assert_eq!(h.base_timestamp, 1_000);
        assert_eq!(h.max_timestamp, 1_005);
        assert_eq!(h.total_size(), batch.len());
        assert_eq!(h.timestamp_type(), TimestampType::CreateTime);
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (-1, -1, -1)
        );

        let recs = records(&batch, MAX).unwrap();
        assert_eq!(recs.len(), 4);
        let deltas: Vec<_> = recs
            .iter()
            .map(|r| (r.offset_delta, r.timestamp_delta))
            .collect();
        assert_eq!(deltas, [(0, 0), (1, -1), (2, 5), (3, 2)]);
        assert_eq!(recs[0].key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(recs[1].key, None);
        assert_eq!(recs[1].value, Some(Bytes::new()));
        assert_eq!(
            recs[1].headers,
            vec![
                (Bytes::from_static(b"h1"), Some(Bytes::from_static(b"x"))),
                (Bytes::from_static(b"h2"), None)
            ]
        );
        assert_eq!(recs[2].key, Some(Bytes::new()));
        assert_eq!(recs[2].value, None);
        assert_eq!(recs[2].headers, vec![(Bytes::new(), Some(Bytes::new()))]);
        assert_eq!(recs[3].value.as_deref(), Some(&[7u8; 3000][..]));
        if codec != Compression::None {
            assert!(batch.len() < 3000, "{codec:?} did not compress");
        }
    }
}

#[test]
fn producer_fields_and_flags_are_encoded() {
    let mut b = BatchBuilder::new(0, Compression::Zstd)
        .producer_id(42)
        .producer_epoch(3)
        .base_sequence(17)
        .transactional(true)
        .partition_leader_epoch(9);
    b.push(5, Some(b"k"), Some(b"v"), &[]);
    let batch = b.build().unwrap();
    let h = validate_produce_batch(&batch).unwrap();
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (42, 3, 17)
    );
    assert_eq!(h.partition_leader_epoch, 9);
    assert!(h.is_transactional() && !h.is_control() && !h.has_delete_horizon());

    // A control batch (commit marker: version 0, type 1) decodes the same way.
    let mut b = BatchBuilder::new(7, Compression::None)
        .producer_id(42)
        .producer_epoch(3)
        .transactional(true)
        .control(true);
    b.push(6, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0]), &[]);
    let batch = b.build().unwrap();
    let h = validate_batch(&batch).unwrap();
    assert!(h.is_control());
    assert!(validate_produce_batch(&batch).is_err());
    assert_eq!(
        records(&batch, MAX).unwrap()[0].key.as_deref(),
        Some(&[0, 0, 0, 1][..])
    );
}

#[test]
fn empty_batch_and_gaps_keep_offset_range() {
    let batch = BatchBuilder::new(50, Compression::None)
        .last_offset_delta(9)
        .build()
        .unwrap();
    let h = validate_batch(&batch).unwrap();
    assert_eq!(
        (h.record_count, h.last_offset(), h.max_timestamp),
        (0, 59, NO_TIMESTAMP)
    );
    assert!(records(&batch, MAX).unwrap().is_empty());
    assert!(validate_produce_batch(&batch).is_err());

    let mut b = BatchBuilder::new(0, Compression::Lz4).delete_horizon_ms(Some(10_000));
    b.push_at(2, 100, Some(b"a"), Some(b"1"), &[]);
    b.push_at(5, 200, Some(b"b"), None, &[]);
    let batch = b.build().unwrap();
    let h = validate_batch(&batch).unwrap();
    assert!(h.has_delete_horizon());
    assert_eq!(
        (h.base_timestamp, h.max_timestamp, h.last_offset_delta),
        (10_000, 200, 5)
    );
    let recs = records(&batch, MAX).unwrap();
    assert_eq!(recs[0].offset_delta, 2);
    assert_eq!(h.base_timestamp + recs[1].timestamp_delta, 200);

    let mut b = BatchBuilder::new(0, Compression::None);
    b.push_at(3, 0, None, None, &[]);
    b.push_at(3, 0, None, None, &[]);
    assert!(b.build().is_err());
    let mut b = BatchBuilder::new(0, Compression::None).last_offset_delta(1);
    b.push_at(3, 0, None, None, &[]);
    assert!(b.build().is_err());
}

#[test]
fn flipping_any_covered_byte_is_a_crc_mismatch() {
    for codec in [Compression::None, Compression::Snappy] {
        let batch = sample(codec, 0);
        for i in 21..batch.len() {
            let mut bad = batch.clone();
            bad[i] ^= 0x01;
            assert!(
                matches!(validate_batch(&bad), Err(RecordsError::CrcMismatch { .. })),
                "{codec:?} byte {i}"
            );
        }
        // The CRC field itself.
        let mut bad = batch.clone();
        bad[18] ^= 0x80;
        assert!(matches!(
            validate_batch(&bad),
            Err(RecordsError::CrcMismatch { .. })
        ));
    }
}

#[test]
fn header_checks() {
    let batch = sample(Compression::None, 0);
    let mut bad = batch.clone();
    bad[16] = 1;
    assert_eq!(validate_batch(&bad), Err(RecordsError::UnsupportedMagic(1)));
    assert!(matches!(
        validate_batch(&batch[..batch.len() - 1]),
        Err(RecordsError::CorruptLength(_))
    ));
    let mut longer = batch.clone();
    longer.push(0);
    assert!(matches!(
        validate_batch(&longer),
        Err(RecordsError::CorruptLength(_))
    ));
    assert!(matches!(
        validate_batch(&batch[..60]),
        Err(RecordsError::TooShort { .. })
    ));

    let mut bad = batch.clone();
    rewrite_header(&mut bad, 21, &5i16.to_be_bytes());
    assert_eq!(validate_batch(&bad), Err(RecordsError::UnknownCodec(5)));
    let mut bad = batch.clone();
    rewrite_header(&mut bad, 57, &(-1i32).to_be_bytes());
    assert!(matches!(
        validate_batch(&bad),
        Err(RecordsError::InvalidBatch(_))
    ));
    let mut bad = batch.clone();
    rewrite_header(&mut bad, 23, &(-1i32).to_be_bytes());
    assert!(matches!(
        validate_batch(&bad),
        Err(RecordsError::InvalidBatch(_))
    ));
    // 4 records cannot fit in offset range of 3.
    let mut bad = batch.clone();
    rewrite_header(&mut bad, 23, &2i32.to_be_bytes());
    assert!(matches!(
        validate_batch(&bad),
        Err(RecordsError::InvalidBatch(_))
    ));
    // A wider range is fine for stored batches (compaction), not for produce.
    let mut wide = batch.clone();
    rewrite_header(&mut wide, 23, &10i32.to_be_bytes());
    assert!(validate_batch(&wide).is_ok());
    assert!(matches!(
        validate_produce_batch(&wide),
        Err(RecordsError::InvalidBatch(_))
    ));
    // Idempotent producer without a sequence.
    let mut bad = batch.clone();
    rewrite_header(&mut bad, 43, &5i64.to_be_bytes());
    assert!(validate_batch(&bad).is_ok());
    assert!(matches!(
        validate_produce_batch(&bad),
        Err(RecordsError::InvalidBatch(_))
    ));
}

#[test]
fn record_count_mismatch_is_invalid_record() {
    for codec in CODECS {
        let batch = sample(codec, 0);
        for count in [0i32, 3, 5, 1000] {
            let mut bad = batch.clone();
            rewrite_header(&mut bad, 57, &count.to_be_bytes());
            rewrite_header(&mut bad, 23, &1000i32.to_be_bytes());
            validate_batch(&bad).unwrap();
            assert!(
                matches!(records(&bad, MAX), Err(RecordsError::InvalidRecord(_))),
                "{codec:?} count {count}"
            );
        }
    }
}

#[test]
fn decompression_is_capped() {
    let mut b = BatchBuilder::new(0, Compression::None);
    b.push(0, None, Some(&vec![0u8; 200_000]), &[]);
    let plain = b.build().unwrap();
    let section = plain.len() - HEADER_LEN;
    for codec in CODECS.into_iter().skip(1) {
        let mut b = BatchBuilder::new(0, codec);
        b.push(0, None, Some(&vec![0u8; 200_000]), &[]);
        let batch = b.build().unwrap();
        assert!(batch.len() < 20_000, "{codec:?}");
        assert_eq!(
            records(&batch, section - 1),
            Err(RecordsError::DecompressedTooLarge(section - 1)),
            "{codec:?}"
        );
        assert_eq!(records(&batch, section).unwrap().len(), 1, "{codec:?}");
    }
}

#[test]
fn torn_tail_at_every_cut_point() {
    let first = sample(Compression::None, 0);
    let second = sample(Compression::Gzip, 4);
    let mut buf = first.clone();
    buf.extend_from_slice(&second);

    let mut all = Batches::new(&buf);
    let got: Vec<_> = all.by_ref().map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1, &first[..]);
    assert_eq!(got[1].1, &second[..]);
    assert_eq!(got[1].0.base_offset, 4);
    assert_eq!(all.position(), buf.len());

    for cut in 0..buf.len() {
        let mut it = Batches::new(&buf[..cut]);
        let got: Vec<_> = it.by_ref().collect();
        if cut < first.len() {
            assert!(got.is_empty(), "cut {cut}");
            assert_eq!(it.position(), 0);
        } else {
            assert_eq!(got.len(), 1, "cut {cut}");
            assert_eq!(got[0].as_ref().unwrap().1, &first[..]);
            assert_eq!(it.position(), first.len(), "cut {cut}");
        }
    }
}

#[test]
fn absurd_lengths_are_errors() {
    let first = sample(Compression::None, 0);
    for declared in [-1i32, 0, 48, i32::MIN] {
        let mut buf = first.clone();
        let mut bad = first.clone();
        bad[8..12].copy_from_slice(&declared.to_be_bytes());
        buf.extend_from_slice(&bad);
        let mut it = Batches::new(&buf);
        assert!(it.next().unwrap().is_ok());
        assert!(
            matches!(it.next(), Some(Err(RecordsError::CorruptLength(_)))),
            "{declared}"
        );
        assert!(it.next().is_none());
        assert_eq!(it.position(), first.len());
    }
    // 49 (an empty batch) is the smallest legal length.
    let mut min = first.clone();
    min[8..12].copy_from_slice(&49i32.to_be_bytes());
    assert_eq!(Batches::new(&min).next().unwrap().unwrap().1.len(), 61);

    // Above the caller's cap: an error, not a torn tail.
    let mut huge = first.clone();
    huge[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(Batches::new(&huge).next().is_none());
    let mut it = Batches::with_max_batch_size(&huge, 1 << 20);
    assert!(matches!(
        it.next(),
        Some(Err(RecordsError::CorruptLength(_)))
    ));
    assert!(it.next().is_none());
    assert!(Batches::with_max_batch_size(&first, first.len())
        .next()
        .unwrap()
        .is_ok());
}

#[test]
fn stamping() {
    for codec in CODECS {
        let mut batch = sample(codec, 0);
        let crc = crc_of(&batch);
        stamp_base_offset(&mut batch, 1_234_567);
        stamp_leader_epoch(&mut batch, 77);
        let h = validate_batch(&batch).unwrap();
        assert_eq!(
            (h.base_offset, h.partition_leader_epoch, h.crc),
            (1_234_567, 77, crc)
        );

        stamp_log_append_time(&mut batch, 9_999);
        let h = validate_batch(&batch).unwrap();
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!((h.max_timestamp, h.base_timestamp), (9_999, 1_000));
        assert_eq!(h.compression().unwrap(), codec);
        assert_ne!(h.crc, crc);
        assert_eq!(records(&batch, MAX).unwrap().len(), 4);
    }
    // Short buffers are left alone rather than panicking.
    let mut short = vec![0u8; 10];
    stamp_base_offset(&mut short, 1);
    stamp_leader_epoch(&mut short, 1);
    stamp_log_append_time(&mut short, 1);
    assert_eq!(&short[..8], &1i64.to_be_bytes());
    assert_eq!(&short[8..], &[0, 0]);
}
