//! Share group record codecs against hand-built bytes of Kafka's schemas.

use std::collections::BTreeSet;

use uuid::Uuid;

use super::*;

#[test]
fn keys_golden_bytes() {
    let k = ShareKey::Metadata { group: "g".into() };
    let b = encode_key(&k);
    assert_eq!(b, [0, 11, 0, 1, b'g']);
    assert_eq!(decode_key(&b).unwrap(), Some(k));
    let k = ShareKey::Current {
        group: "g".into(),
        member: "m1".into(),
    };
    let b = encode_key(&k);
    assert_eq!(b, [0, 14, 0, 1, b'g', 0, 2, b'm', b'1']);
    assert_eq!(decode_key(&b).unwrap(), Some(k));
    for (kind, want) in [
        (
            10,
            ShareKey::Member {
                group: "g".into(),
                member: "m1".into(),
            },
        ),
        (
            13,
            ShareKey::TargetMember {
                group: "g".into(),
                member: "m1".into(),
            },
        ),
    ] {
        let mut b = b.clone();
        b[1] = kind;
        assert_eq!(decode_key(&b).unwrap(), Some(want));
    }
    assert_eq!(
        decode_key(&[0, 12, 0, 1, b'g']).unwrap(),
        Some(ShareKey::TargetMetadata { group: "g".into() })
    );
    assert_eq!(
        decode_key(&[0, 15, 0, 1, b'g']).unwrap(),
        Some(ShareKey::StatePartitionMetadata { group: "g".into() })
    );
    // Consumer group and offset records are not ours.
    assert_eq!(decode_key(&[0, 3, 0, 1, b'g']).unwrap(), None);
    assert_eq!(decode_key(&[0, 1, 0, 1, b'g']).unwrap(), None);
    assert!(decode_key(&[0, 14, 0, 1, b'g', 0]).is_err());
    assert!(decode_key(&[0, 11, 0xff, 0xff]).is_err());
}

#[test]
fn metadata_values_golden_bytes() {
    let b = encode_metadata(7);
    assert_eq!(b, [0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(decode_metadata(&b).unwrap(), 7);
    assert_eq!(
        decode_metadata(&[0, 1, 0, 0, 0, 7]),
        Err(CodecError::UnknownVersion(1))
    );

    let b = encode_target_metadata(3, Some(258));
    assert_eq!(b, [0, 0, 0, 0, 0, 3, 1, 0, 8, 0, 0, 0, 0, 0, 0, 1, 2]);
    assert_eq!(decode_target_metadata(&b).unwrap(), (3, Some(258)));
    let b = encode_target_metadata(3, None);
    assert_eq!(b, [0, 0, 0, 0, 0, 3, 0]);
    assert_eq!(decode_target_metadata(&b).unwrap(), (3, None));
    // An unknown tag is skipped.
    assert_eq!(
        decode_target_metadata(&[0, 0, 0, 0, 0, 3, 1, 5, 1, 9]).unwrap(),
        (3, None)
    );
}

#[test]
fn member_value_golden_bytes() {
    let m = MemberMetadata {
        rack_id: Some("r".into()),
        client_id: "c".into(),
        client_host: "/h".into(),
        subscribed: vec!["t".into()],
    };
    let b = encode_member(&m);
    assert_eq!(b, [0, 0, 2, b'r', 2, b'c', 3, b'/', b'h', 2, 2, b't', 0]);
    assert_eq!(decode_member(&b).unwrap(), m);
    for cut in 0..b.len() {
        assert!(decode_member(&b[..cut]).is_err(), "cut at {cut}");
    }
    let none = MemberMetadata { rack_id: None, ..m };
    assert_eq!(decode_member(&encode_member(&none)).unwrap(), none);
}

#[test]
fn assignment_values_golden_bytes() {
    let id = Uuid::from_bytes([1; 16]);
    let a: TopicAssignment = [(id, BTreeSet::from([0, 2]))].into();
    let b = encode_target_member(&a);
    let mut want = vec![0, 0, 2];
    want.extend_from_slice(&[1; 16]);
    want.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0]);
    assert_eq!(b, want);
    assert_eq!(decode_target_member(&b).unwrap(), a);

    let c = CurrentAssignment {
        epoch: 5,
        previous_epoch: 4,
        state: STATE_STABLE,
        assigned: a,
    };
    let b = encode_current(&c);
    let mut want = vec![0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 0, 2];
    want.extend_from_slice(&[1; 16]);
    want.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0]);
    assert_eq!(b, want);
    assert_eq!(decode_current(&b).unwrap(), c);
    for cut in 0..b.len() {
        assert!(decode_current(&b[..cut]).is_err(), "cut at {cut}");
    }
    // A hostile array count is an error, not an allocation.
    assert!(decode_target_member(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
}
