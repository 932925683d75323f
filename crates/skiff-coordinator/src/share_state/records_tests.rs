//! The `__share_group_state` formats byte for byte, and decoding that never panics.

use proptest::prelude::*;
use uuid::Uuid;

use super::records::*;
use super::wire::CodecError;
use crate::share::{DeliveryState, StateBatch};

fn topic() -> Uuid {
    Uuid::from_bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])
}

fn key() -> SharePartitionKey {
    SharePartitionKey {
        group: "g1".into(),
        topic_id: topic(),
        partition: 7,
    }
}

fn batch(first: i64, last: i64, state: DeliveryState, count: u16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn batch_bytes(first: i64, last: i64, state: i8, count: i16) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&first.to_be_bytes());
    b.extend_from_slice(&last.to_be_bytes());
    b.push(state as u8);
    b.extend_from_slice(&count.to_be_bytes());
    b.push(0); // the batch's empty tag section
    b
}

#[test]
fn keys_golden_bytes() {
    let mut want = vec![0, 0, 0, 2, b'g', b'1'];
    want.extend_from_slice(topic().as_bytes());
    want.extend_from_slice(&[0, 0, 0, 7]);
    let snapshot = encode_key(&Key::Snapshot(key()));
    assert_eq!(snapshot, want, "type 0, group, uuid, partition");
    assert_eq!(decode_key(&snapshot).unwrap(), Key::Snapshot(key()));

    want[1] = 1;
    let update = encode_key(&Key::Update(key()));
    assert_eq!(update, want, "type 1: same layout");
    assert_eq!(decode_key(&update).unwrap(), Key::Update(key()));

    assert_eq!(decode_key(&[0, 9, 1, 2]).unwrap(), Key::Other(9));
    let mut trailing = update.clone();
    trailing.push(0);
    assert!(decode_key(&trailing).is_err(), "trailing bytes");
}

#[test]
fn snapshot_value_golden_bytes_with_and_without_the_tag() {
    let mut v = SnapshotValue {
        snapshot_epoch: 3,
        state_epoch: 1,
        leader_epoch: 0,
        start_offset: 100,
        delivery_complete_count: 2,
        create_timestamp: 1_000,
        write_timestamp: 2_000,
        state_batches: vec![
            batch(100, 101, DeliveryState::Acknowledged, 1),
            batch(102, 104, DeliveryState::Available, 2),
        ],
    };
    let mut want = vec![0, 0];
    want.extend_from_slice(&3i32.to_be_bytes());
    want.extend_from_slice(&1i32.to_be_bytes());
    want.extend_from_slice(&0i32.to_be_bytes());
    want.extend_from_slice(&100i64.to_be_bytes());
    want.extend_from_slice(&1_000i64.to_be_bytes());
    want.extend_from_slice(&2_000i64.to_be_bytes());
    want.push(3); // compact array: 2 batches + 1
    want.extend(batch_bytes(100, 101, 2, 1));
    want.extend(batch_bytes(102, 104, 0, 2));
    let untagged = want.clone();
    want.extend_from_slice(&[1, 0, 4, 0, 0, 0, 2]); // one tag: 0, size 4, value 2
    let bytes = encode_snapshot_value(&v);
    assert_eq!(bytes, want);
    assert_eq!(decode_snapshot_value(&bytes).unwrap(), v);

    // The default -1 is not written (Kafka's generated code omits default tagged fields).
    v.delivery_complete_count = UNKNOWN_DELIVERY_COMPLETE_COUNT;
    let mut want = untagged;
    want.push(0);
    let bytes = encode_snapshot_value(&v);
    assert_eq!(bytes, want);
    assert_eq!(decode_snapshot_value(&bytes).unwrap(), v);
}

#[test]
fn update_value_golden_bytes() {
    let v = UpdateValue {
        snapshot_epoch: 3,
        leader_epoch: 0,
        start_offset: -1,
        delivery_complete_count: 5,
        state_batches: vec![batch(7, 7, DeliveryState::Archived, 5)],
    };
    let mut want = vec![0, 0];
    want.extend_from_slice(&3i32.to_be_bytes());
    want.extend_from_slice(&0i32.to_be_bytes());
    want.extend_from_slice(&(-1i64).to_be_bytes());
    want.push(2);
    want.extend(batch_bytes(7, 7, 4, 5));
    want.extend_from_slice(&[1, 0, 4, 0, 0, 0, 5]);
    let bytes = encode_update_value(&v);
    assert_eq!(bytes, want);
    assert_eq!(decode_update_value(&bytes).unwrap(), v);
    for cut in 0..bytes.len() {
        assert!(decode_update_value(&bytes[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn unknown_tags_are_skipped_and_bad_content_refused() {
    let v = UpdateValue {
        snapshot_epoch: 0,
        leader_epoch: 0,
        start_offset: 5,
        delivery_complete_count: UNKNOWN_DELIVERY_COMPLETE_COUNT,
        state_batches: vec![],
    };
    let mut bytes = encode_update_value(&v);
    // Replace the empty tag section with an unknown tag 9 of two bytes.
    bytes.pop();
    bytes.extend_from_slice(&[1, 9, 2, 0xaa, 0xbb]);
    assert_eq!(decode_update_value(&bytes).unwrap(), v);

    assert_eq!(
        decode_update_value(&[0, 1]),
        Err(CodecError::UnknownVersion(1))
    );
    let with = |b: Vec<u8>| {
        let mut bytes = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        bytes.extend_from_slice(&5i64.to_be_bytes());
        bytes.push(2);
        bytes.extend(b);
        bytes.push(0);
        decode_update_value(&bytes)
    };
    assert!(with(batch_bytes(1, 1, 0, 1)).is_ok());
    assert!(
        with(batch_bytes(1, 1, 3, 1)).is_err(),
        "ARCHIVING is not built"
    );
    assert!(with(batch_bytes(1, 1, 9, 1)).is_err(), "unknown state");
    assert!(with(batch_bytes(1, 1, 0, -1)).is_err(), "negative count");
    assert!(with(batch_bytes(2, 1, 0, 1)).is_err(), "reversed batch");
}

fn arb_batch() -> impl Strategy<Value = StateBatch> {
    (any::<i64>(), 0i64..1000, 0usize..4, 0u16..=i16::MAX as u16).prop_map(|(f, len, s, c)| {
        let state = [
            DeliveryState::Available,
            DeliveryState::Acquired,
            DeliveryState::Acknowledged,
            DeliveryState::Archived,
        ][s];
        batch(f, f.saturating_add(len), state, c)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary bytes decode to a value or an error, never a panic or a huge allocation.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_key(&bytes);
        let _ = decode_snapshot_value(&bytes);
        let _ = decode_update_value(&bytes);
        // With a valid version prefix the decoder gets past the first check.
        let mut v0 = vec![0, 0];
        v0.extend_from_slice(&bytes);
        let _ = decode_snapshot_value(&v0);
        let _ = decode_update_value(&v0);
        let _ = decode_key(&v0);
    }

    /// Valid records with some bytes flipped: still no panic.
    #[test]
    fn mutated_records_never_panic(
        batches in proptest::collection::vec(arb_batch(), 0..4),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let v = SnapshotValue {
            snapshot_epoch: 1, state_epoch: 2, leader_epoch: 3, start_offset: 4,
            delivery_complete_count: 5, create_timestamp: 6, write_timestamp: 7,
            state_batches: batches,
        };
        let mut bytes = encode_snapshot_value(&v);
        for (at, x) in flips {
            let n = bytes.len();
            bytes[at % n] ^= x;
        }
        let _ = decode_snapshot_value(&bytes);
        let _ = decode_update_value(&bytes);
    }

    #[test]
    fn values_round_trip(
        batches in proptest::collection::vec(arb_batch(), 0..8),
        epochs in any::<(i32, i32, i32)>(),
        start in any::<i64>(),
        complete in any::<i32>(),
        times in any::<(i64, i64)>(),
        group in "\\PC{0,20}",
        partition in any::<i32>(),
    ) {
        let s = SnapshotValue {
            snapshot_epoch: epochs.0, state_epoch: epochs.1, leader_epoch: epochs.2,
            start_offset: start, delivery_complete_count: complete,
            create_timestamp: times.0, write_timestamp: times.1,
            state_batches: batches.clone(),
        };
        prop_assert_eq!(decode_snapshot_value(&encode_snapshot_value(&s)).unwrap(), s);
        let u = UpdateValue {
            snapshot_epoch: epochs.0, leader_epoch: epochs.2, start_offset: start,
            delivery_complete_count: complete, state_batches: batches,
        };
        prop_assert_eq!(decode_update_value(&encode_update_value(&u)).unwrap(), u);
        let k = Key::Update(SharePartitionKey { group, topic_id: Uuid::from_u64_pair(epochs.0 as u64, start as u64), partition });
        prop_assert_eq!(decode_key(&encode_key(&k)).unwrap(), k);
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Bytes produced by Kafka 4.4.0's own generated classes (`MessageUtil.toCoordinatorType
/// PrefixedBytes` / `toVersionPrefixedBytes`) for the values of the golden tests above: Skiff
/// decodes them to the same values and writes them back identically.
#[test]
fn bytes_written_by_kafka_4_4_round_trip() {
    let skey = unhex("0000000267310102030405060708090a0b0c0d0e0f1000000007");
    let ukey = unhex("0001000267310102030405060708090a0b0c0d0e0f1000000007");
    assert_eq!(decode_key(&skey).unwrap(), Key::Snapshot(key()));
    assert_eq!(decode_key(&ukey).unwrap(), Key::Update(key()));
    assert_eq!(encode_key(&Key::Snapshot(key())), skey);
    assert_eq!(encode_key(&Key::Update(key())), ukey);

    let sval = unhex(concat!(
        "0000000000030000000100000000000000000000006400000000000003e800000000000007d003",
        "0000000000000064000000000000006502000100",
        "000000000000006600000000000000680000020001000400000002"
    ));
    let decoded = decode_snapshot_value(&sval).unwrap();
    assert_eq!(decoded.delivery_complete_count, 2);
    assert_eq!(decoded.state_batches.len(), 2);
    assert_eq!(encode_snapshot_value(&decoded), sval);
    let sval_untagged = unhex(concat!(
        "0000000000030000000100000000000000000000006400000000000003e800000000000007d003",
        "0000000000000064000000000000006502000100",
        "000000000000006600000000000000680000020000"
    ));
    let decoded = decode_snapshot_value(&sval_untagged).unwrap();
    assert_eq!(decoded.delivery_complete_count, -1);
    assert_eq!(encode_snapshot_value(&decoded), sval_untagged);

    let uval = unhex("00000000000300000000ffffffffffffffff02000000000000000700000000000000070400050001000400000005");
    let decoded = decode_update_value(&uval).unwrap();
    assert_eq!(decoded.start_offset, -1);
    assert_eq!(
        decoded.state_batches[0].delivery_state,
        DeliveryState::Archived
    );
    assert_eq!(encode_update_value(&decoded), uval);
}
