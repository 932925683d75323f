//! Acknowledgement: the four outcomes, renewals, validation, ownership and atomicity.

use super::test_support::*;
use super::*;

fn acquired(max_in_flight: u32, limit: u16) -> SharePartition {
    let mut p = partition(max_in_flight, limit);
    assert_eq!(fetch(&mut p, "m1", &log(0, 9, 10), 100, 0), vec![(0, 9, 1)]);
    p
}

#[test]
fn accept_acknowledges_and_moves_the_start_offset() {
    let mut p = acquired(2000, 5);
    let done = ack(&mut p, "m1", 0, 3, ACK_ACCEPT).unwrap();
    assert_eq!(done.accepted, 4);
    assert_eq!(p.start_offset(), 4);
    assert_eq!(
        p.record(2),
        None,
        "records below the start offset are dropped"
    );
    assert_eq!(state(&p, 4), Some((DeliveryState::Acquired, 1)));
}

#[test]
fn release_makes_records_available_with_their_count() {
    let mut p = acquired(2000, 5);
    let done = ack(&mut p, "m1", 2, 4, ACK_RELEASE).unwrap();
    assert_eq!(done.released, 3);
    assert_eq!(state(&p, 3), Some((DeliveryState::Available, 1)));
    assert_eq!(p.record(3).unwrap().lock, None);
    assert_eq!(p.start_offset(), 0);
    assert_eq!(fetch(&mut p, "m2", &log(0, 9, 10), 100, 0), vec![(2, 4, 2)]);
}

#[test]
fn reject_and_gap_archive() {
    let mut p = acquired(2000, 5);
    let done = p
        .acknowledge(
            "m1",
            &[
                AckBatch::range(0, 1, ACK_REJECT),
                AckBatch::range(2, 2, ACK_GAP),
            ],
            &ctx(0),
        )
        .unwrap();
    assert_eq!((done.rejected, done.gaps), (2, 1));
    assert_eq!(p.start_offset(), 3);
    // Archived records are never handed out again.
    ack(&mut p, "m1", 3, 9, ACK_RELEASE).unwrap();
    assert_eq!(fetch(&mut p, "m1", &log(0, 9, 10), 100, 0), vec![(3, 9, 2)]);
}

#[test]
fn per_offset_types_apply_offset_by_offset() {
    let mut p = acquired(2000, 5);
    let batch = AckBatch {
        first_offset: 0,
        last_offset: 3,
        types: vec![ACK_ACCEPT, ACK_RELEASE, ACK_REJECT, ACK_ACCEPT],
    };
    p.acknowledge("m1", &[batch], &ctx(0)).unwrap();
    assert_eq!(p.start_offset(), 1);
    assert_eq!(state(&p, 1), Some((DeliveryState::Available, 1)));
    assert_eq!(state(&p, 2), Some((DeliveryState::Archived, 1)));
    assert_eq!(state(&p, 3), Some((DeliveryState::Acknowledged, 1)));
}

#[test]
fn release_at_the_delivery_limit_archives() {
    let mut p = partition(2000, 2);
    let all = log(0, 0, 1);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(0, 0, 1)]);
    assert_eq!(ack(&mut p, "m1", 0, 0, ACK_RELEASE).unwrap().released, 1);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(0, 0, 2)]);
    let done = ack(&mut p, "m1", 0, 0, ACK_RELEASE).unwrap();
    assert_eq!((done.released, done.archived_at_limit), (0, 1));
    assert_eq!(p.start_offset(), 1);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![]);
}

#[test]
fn another_members_records_give_invalid_record_state_and_change_nothing() {
    let mut p = acquired(2000, 5);
    assert_eq!(
        fetch(&mut p, "m2", &log(0, 19, 10), 100, 0),
        vec![(10, 19, 1)]
    );
    let err = p
        .acknowledge(
            "m1",
            &[
                AckBatch::range(0, 4, ACK_ACCEPT),
                AckBatch::range(10, 12, ACK_ACCEPT),
            ],
            &ctx(0),
        )
        .unwrap_err();
    assert_eq!(err.response_error().code(), 121);
    // All or nothing: the first batch was not applied either.
    assert_eq!(p.start_offset(), 0);
    assert_eq!(state(&p, 0), Some((DeliveryState::Acquired, 1)));
}

#[test]
fn unknown_member_and_non_acquired_records_give_invalid_record_state() {
    let mut p = acquired(2000, 5);
    let err = ack(&mut p, "stranger", 0, 0, ACK_ACCEPT).unwrap_err();
    assert!(matches!(err, ShareError::InvalidRecordState(_)));
    ack(&mut p, "m1", 5, 5, ACK_RELEASE).unwrap();
    let err = ack(&mut p, "m1", 5, 5, ACK_ACCEPT).unwrap_err();
    assert!(matches!(err, ShareError::InvalidRecordState(_)));
    // The same offset twice in one request: the second sees it no longer acquired.
    let err = p
        .acknowledge(
            "m1",
            &[
                AckBatch::range(0, 1, ACK_ACCEPT),
                AckBatch::range(1, 2, ACK_ACCEPT),
            ],
            &ctx(0),
        )
        .unwrap_err();
    assert!(matches!(err, ShareError::InvalidRecordState(_)));
}

#[test]
fn ranges_past_the_acquired_records_are_invalid_requests() {
    let mut p = acquired(2000, 5);
    let err = ack(&mut p, "m1", 5, 12, ACK_ACCEPT).unwrap_err();
    assert!(matches!(err, ShareError::InvalidRequest(_)));
    let err = ack(&mut p, "m1", 20, 22, ACK_ACCEPT).unwrap_err();
    assert!(matches!(err, ShareError::InvalidRequest(_)));
    let mut empty = partition(2000, 5);
    let err = ack(&mut empty, "m1", 0, 0, ACK_ACCEPT).unwrap_err();
    assert!(matches!(err, ShareError::InvalidRecordState(_)));
}

#[test]
fn malformed_batches_are_invalid_requests() {
    let mut p = acquired(2000, 5);
    let bad = [
        vec![AckBatch::range(3, 2, ACK_ACCEPT)],
        vec![
            AckBatch::range(4, 6, ACK_ACCEPT),
            AckBatch::range(0, 1, ACK_ACCEPT),
        ],
        vec![AckBatch {
            first_offset: 0,
            last_offset: 3,
            types: vec![],
        }],
        vec![AckBatch {
            first_offset: 0,
            last_offset: 3,
            types: vec![1, 1],
        }],
        vec![AckBatch::range(0, 1, 5)],
        vec![AckBatch::range(0, 1, -1)],
        vec![AckBatch::range(0, 1, ACK_RENEW)],
    ];
    for batches in bad {
        let err = p.acknowledge("m1", &batches, &ctx(0)).unwrap_err();
        assert_eq!(err.response_error().code(), 42, "{batches:?}");
    }
    // RENEW needs a v2 request.
    let v1 = AckContext {
        renew_supported: false,
        is_renew_ack: true,
        ..ctx(0)
    };
    let err = p
        .acknowledge("m1", &[AckBatch::range(0, 0, ACK_RENEW)], &v1)
        .unwrap_err();
    assert!(matches!(err, ShareError::MalformedBatches(_)));
    assert_eq!(p.start_offset(), 0);
}

#[test]
fn acknowledgements_below_the_start_offset_are_ignored() {
    let mut p = acquired(2000, 5);
    ack(&mut p, "m1", 0, 4, ACK_ACCEPT).unwrap();
    assert_eq!(
        ack(&mut p, "m1", 0, 3, ACK_REJECT).unwrap(),
        Acknowledged::default()
    );
    // A batch straddling the start offset applies from the start offset on.
    let done = ack(&mut p, "m1", 2, 6, ACK_ACCEPT).unwrap();
    assert_eq!(done.accepted, 2);
    assert_eq!(p.start_offset(), 7);
}

#[test]
fn renew_extends_the_lock_without_changing_the_state() {
    let mut p = acquired(2000, 5);
    let renew = AckContext {
        is_renew_ack: true,
        ..ctx(20_000)
    };
    let done = p
        .acknowledge("m1", &[AckBatch::range(0, 4, ACK_RENEW)], &renew)
        .unwrap();
    assert_eq!(done.renewed, 5);
    let released = p.expire(LOCK_MS);
    assert_eq!(released.made_available, 5, "only the records not renewed");
    assert_eq!(state(&p, 0), Some((DeliveryState::Acquired, 1)));
    assert_eq!(state(&p, 5), Some((DeliveryState::Available, 1)));
    assert_eq!(p.expire(20_000 + LOCK_MS).made_available, 5);

    let mut q = acquired(2000, 5);
    let disabled = AckContext {
        renew_enabled: false,
        ..renew
    };
    let err = q
        .acknowledge("m1", &[AckBatch::range(0, 0, ACK_RENEW)], &disabled)
        .unwrap_err();
    assert!(matches!(err, ShareError::InvalidRecordState(_)));
}
