//! Equivalence of [`walk_records`] and [`walk_record_keys`] (the allocation-free walkers used by
//! produce validation and by the cleaner's offset map) with the full decoder [`records`]: on
//! valid batches of every codec and on corrupted ones (flipped, truncated, inserted bytes;
//! wrong record counts), all accept or all reject with the same error, and the walkers'
//! summaries and keys match the decoded records.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use skiff_records::*;

const CAP: usize = 1 << 20;
/// Offset of the record count in a v2 batch header.
const RECORD_COUNT_OFFSET: usize = 57;

type Header = (Vec<u8>, Option<Vec<u8>>);
/// Timestamp, key, value, headers.
type Rec = (i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<Header>);

fn bytes_opt() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop::option::of(prop::collection::vec(any::<u8>(), 0..300))
}

fn record() -> impl Strategy<Value = Rec> {
    (
        prop_oneof![any::<i64>(), 1_700_000_000_000i64..1_700_000_100_000],
        bytes_opt(),
        bytes_opt(),
        prop::collection::vec(
            (prop::collection::vec(any::<u8>(), 0..8), bytes_opt()),
            0..3,
        ),
    )
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![
        4 => Just(Compression::None),
        1 => Just(Compression::Gzip),
        1 => Just(Compression::Snappy),
        1 => Just(Compression::Lz4),
        1 => Just(Compression::Zstd),
    ]
}

#[derive(Clone, Debug)]
enum Damage {
    None,
    Flip { at: usize, xor: u8 },
    Truncate { keep: usize },
    Insert { at: usize, byte: u8 },
    Count { count: i32 },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        1 => Just(Damage::None),
        3 => (any::<usize>(), 1u8..=255).prop_map(|(at, xor)| Damage::Flip { at, xor }),
        1 => any::<usize>().prop_map(|keep| Damage::Truncate { keep }),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Damage::Insert { at, byte }),
        1 => (-2i32..40).prop_map(|count| Damage::Count { count }),
    ]
}

fn build(codec: Compression, recs: &[Rec]) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, codec);
    for (ts, k, v, hs) in recs {
        let hs: Vec<(&[u8], Option<&[u8]>)> = hs
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        b.push(*ts, k.as_deref(), v.as_deref(), &hs);
    }
    b.build().unwrap()
}

/// Damages only the records section (and the count), so the header still parses.
fn apply(batch: &mut Vec<u8>, d: &Damage) {
    let body = batch.len() - HEADER_LEN;
    match *d {
        Damage::None => {}
        Damage::Flip { at, xor } if body > 0 => batch[HEADER_LEN + at % body] ^= xor,
        Damage::Flip { .. } => {}
        Damage::Truncate { keep } => batch.truncate(HEADER_LEN + keep % (body + 1)),
        Damage::Insert { at, byte } => batch.insert(HEADER_LEN + at % (body + 1), byte),
        Damage::Count { count } => batch[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4]
            .copy_from_slice(&count.to_be_bytes()),
    }
}

fn assert_equivalent(batch: &[u8]) {
    let full = records(batch, CAP);
    let mut seen = Vec::new();
    let walked = walk_records(batch, CAP, |i, s| seen.push((i, s)));
    match (&full, &walked) {
        (Ok(recs), Ok(n)) => {
            assert_eq!(*n, recs.len());
            assert_eq!(seen.len(), recs.len());
            for (i, r) in recs.iter().enumerate() {
                let expected = RecordSummary {
                    attributes: r.attributes,
                    timestamp_delta: r.timestamp_delta,
                    offset_delta: r.offset_delta,
                    key_is_null: r.key.is_none(),
                    value_is_null: r.value.is_none(),
                };
                assert_eq!(seen[i], (i, expected));
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("decoder {full:?} but walker {walked:?}"),
    }
}

/// The keys [`walk_record_keys`] hands out are the decoded records' keys, and it accepts and
/// rejects what [`records`] does.
fn assert_keys_equivalent(batch: &[u8]) {
    let full = records(batch, CAP);
    let mut keys: Vec<(i32, Option<Vec<u8>>)> = Vec::new();
    let walked = walk_record_keys(batch, CAP, |_, s, k| {
        keys.push((s.offset_delta, k.map(<[u8]>::to_vec)))
    });
    match (&full, &walked) {
        (Ok(recs), Ok(n)) => {
            assert_eq!(*n, recs.len());
            let expected: Vec<(i32, Option<Vec<u8>>)> = recs
                .iter()
                .map(|r| (r.offset_delta, r.key.as_ref().map(|k| k.to_vec())))
                .collect();
            assert_eq!(keys, expected);
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("decoder {full:?} but key walker {walked:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn walker_matches_full_decode(
        codec in codec(),
        recs in prop::collection::vec(record(), 0..12),
        damages in prop::collection::vec(damage(), 0..3),
    ) {
        let mut batch = build(codec, &recs);
        assert_equivalent(&batch);
        assert_keys_equivalent(&batch);
        for d in &damages {
            apply(&mut batch, d);
        }
        assert_equivalent(&batch);
        assert_keys_equivalent(&batch);
    }

    #[test]
    fn walker_matches_full_decode_on_random_sections(
        count in -1i32..6,
        section in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut batch = build(Compression::None, &[]);
        batch.truncate(HEADER_LEN);
        batch.extend_from_slice(&section);
        apply(&mut batch, &Damage::Count { count });
        assert_equivalent(&batch);
    }
}

#[test]
fn walker_reports_null_keys_and_deltas() {
    let batch = build(
        Compression::None,
        &[
            (1_000, Some(b"k".to_vec()), Some(b"v".to_vec()), vec![]),
            (990, None, None, vec![(b"h".to_vec(), None)]),
        ],
    );
    let mut seen = Vec::new();
    assert_eq!(
        walk_records(&batch, CAP, |i, s| seen.push((i, s))).unwrap(),
        2
    );
    assert!(!seen[0].1.key_is_null);
    assert!(seen[1].1.key_is_null);
    assert_eq!(seen[1].1.timestamp_delta, -10);
    assert_eq!(seen[1].1.offset_delta, 1);
}
