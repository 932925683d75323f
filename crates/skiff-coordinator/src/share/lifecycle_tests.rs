//! Lock expiry, poison records, members leaving, the start offset, the log start moving, and
//! snapshots.

use super::test_support::*;
use super::*;

#[test]
fn expired_locks_redeliver_with_the_count_kept() {
    let mut p = partition(2000, 5);
    let all = log(0, 9, 10);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 1_000), vec![(0, 9, 1)]);
    assert_eq!(p.next_lock_deadline(), Some(1_000 + LOCK_MS));
    assert_eq!(p.expire(LOCK_MS), Released::default());
    let released = p.expire(1_000 + LOCK_MS);
    assert_eq!(released.made_available, 10);
    assert_eq!(p.next_lock_deadline(), None);
    assert_eq!(fetch(&mut p, "m2", &all, 100, 40_000), vec![(0, 9, 2)]);
    // The old holder can no longer acknowledge.
    assert!(ack(&mut p, "m1", 0, 9, ACK_ACCEPT).is_err());
    assert!(ack(&mut p, "m2", 0, 9, ACK_ACCEPT).is_ok());
}

#[test]
fn a_poison_record_is_archived_at_the_delivery_limit() {
    let mut p = partition(2000, 3);
    let all = log(0, 1, 1);
    let mut now = 0;
    // The consumer takes offset 0 and never acknowledges it (it crashes on it).
    for count in 1..=3u16 {
        assert_eq!(fetch(&mut p, "m1", &all, 1, now), vec![(0, 0, count)]);
        now += LOCK_MS;
        let released = p.expire(now);
        let expected = if count < 3 {
            Released {
                made_available: 1,
                archived_at_limit: 0,
            }
        } else {
            Released {
                made_available: 0,
                archived_at_limit: 1,
            }
        };
        assert_eq!(released, expected);
    }
    assert_eq!(state(&p, 0), None);
    assert_eq!(p.start_offset(), 1);
    // The queue moves on to the next record.
    assert_eq!(fetch(&mut p, "m1", &all, 100, now), vec![(1, 1, 1)]);
}

#[test]
fn a_leaving_member_releases_only_its_records_and_keeps_their_counts() {
    let mut p = partition(2000, 2);
    let all = log(0, 9, 5);
    assert_eq!(fetch(&mut p, "m1", &all, 5, 0), vec![(0, 4, 1)]);
    assert_eq!(fetch(&mut p, "m2", &all, 5, 0), vec![(5, 9, 1)]);
    let released = p.release_member("m1");
    assert_eq!(released.made_available, 5);
    assert_eq!(state(&p, 0), Some((DeliveryState::Available, 1)));
    assert!(p.record(5).unwrap().held_by("m2"));
    // Delivered twice now: leaving again reaches the limit of 2 and archives.
    assert_eq!(fetch(&mut p, "m3", &all, 5, 0), vec![(0, 4, 2)]);
    let released = p.release_member("m3");
    assert_eq!(released.archived_at_limit, 5);
    assert_eq!(p.start_offset(), 5);
    assert_eq!(p.release_member("nobody"), Released::default());
}

#[test]
fn the_start_offset_waits_for_the_head_then_drops_everything_done() {
    let mut p = partition(2000, 5);
    let all = log(0, 9, 5);
    fetch(&mut p, "m1", &all, 100, 0);
    ack(&mut p, "m1", 5, 9, ACK_ACCEPT).unwrap();
    assert_eq!(p.start_offset(), 0);
    assert_eq!(p.in_flight_count(), 10);
    ack(&mut p, "m1", 0, 4, ACK_REJECT).unwrap();
    assert_eq!((p.start_offset(), p.end_offset()), (10, 10));
    assert_eq!(p.records().count(), 0);
    assert_eq!(p.in_flight_count(), 0);
    assert_eq!(p.next_fetch_offset(), 10);
}

#[test]
fn the_log_start_moving_past_the_start_offset_forgets_what_is_gone() {
    let mut p = partition(2000, 5);
    let all = log(0, 9, 5);
    fetch(&mut p, "m1", &all, 100, 0);
    p.log_start_moved(3);
    assert_eq!(p.start_offset(), 3);
    assert_eq!(p.record(2), None);
    assert_eq!(p.in_flight_count(), 7);
    // The holder's acknowledgement of the whole range still succeeds; 0-2 are skipped.
    assert_eq!(ack(&mut p, "m1", 0, 9, ACK_ACCEPT).unwrap().accepted, 7);
    assert_eq!(p.start_offset(), 10);
    // Moving backwards is ignored; moving past the end empties the window.
    p.log_start_moved(4);
    assert_eq!(p.start_offset(), 10);
    p.log_start_moved(50);
    assert_eq!((p.start_offset(), p.end_offset()), (50, 50));
    assert_eq!(
        fetch(&mut p, "m1", &log(50, 54, 5), 100, 0),
        vec![(50, 54, 1)]
    );
}

#[test]
fn snapshot_and_restore_turn_acquired_records_available() {
    let mut p = SharePartition::new(0, 3, ShareLimits::default());
    let all = log(0, 9, 10);
    fetch(&mut p, "m1", &all, 100, 0);
    ack(&mut p, "m1", 2, 3, ACK_ACCEPT).unwrap();
    ack(&mut p, "m1", 4, 4, ACK_REJECT).unwrap();
    ack(&mut p, "m1", 5, 6, ACK_RELEASE).unwrap();
    let snap = p.snapshot();
    let batch = |f, l, s, c| StateBatch {
        first_offset: f,
        last_offset: l,
        delivery_state: s,
        delivery_count: c,
    };
    use DeliveryState::*;
    assert_eq!(
        snap,
        ShareSnapshot {
            start_offset: 0,
            state_epoch: 3,
            delivery_complete_count: 3,
            state_batches: vec![
                batch(0, 1, Acquired, 1),
                batch(2, 3, Acknowledged, 1),
                batch(4, 4, Archived, 1),
                batch(5, 6, Available, 1),
                batch(7, 9, Acquired, 1),
            ],
        }
    );
    let mut back = SharePartition::restore(&snap, ShareLimits::default()).unwrap();
    assert_eq!(back.state_epoch(), 3);
    assert_eq!((back.start_offset(), back.end_offset()), (0, 10));
    assert_eq!(state(&back, 0), Some((Available, 1)));
    assert_eq!(back.record(0).unwrap().lock, None);
    assert_eq!(back.next_fetch_offset(), 0);
    assert_eq!(
        fetch(&mut back, "m2", &all, 100, 0),
        vec![(0, 1, 2), (5, 6, 2), (7, 9, 2)]
    );
    // A fresh snapshot of the restored state round-trips.
    let again = SharePartition::restore(&back.snapshot(), ShareLimits::default()).unwrap();
    assert_eq!(again.snapshot().state_batches, {
        let mut b = back.snapshot().state_batches;
        for s in &mut b {
            if s.delivery_state == Acquired {
                s.delivery_state = Available;
            }
        }
        b
    });
}

#[test]
fn restored_gaps_are_delivered_as_new_records() {
    let snap = ShareSnapshot {
        start_offset: 0,
        state_epoch: 0,
        delivery_complete_count: 5,
        state_batches: vec![StateBatch {
            first_offset: 5,
            last_offset: 9,
            delivery_state: DeliveryState::Acknowledged,
            delivery_count: 1,
        }],
    };
    let mut p = SharePartition::restore(&snap, ShareLimits::default()).unwrap();
    assert_eq!((p.start_offset(), p.end_offset()), (0, 10));
    assert_eq!(p.next_fetch_offset(), 0);
    let all = log(0, 14, 5);
    assert_eq!(
        fetch(&mut p, "m1", &all, 100, 0),
        vec![(0, 4, 1), (10, 14, 1)]
    );
    ack(&mut p, "m1", 0, 4, ACK_ACCEPT).unwrap();
    assert_eq!(p.start_offset(), 10);
}

#[test]
fn corrupt_snapshots_are_refused() {
    let bad = |first, last| ShareSnapshot {
        start_offset: 10,
        state_epoch: 0,
        delivery_complete_count: 0,
        state_batches: vec![StateBatch {
            first_offset: first,
            last_offset: last,
            delivery_state: DeliveryState::Available,
            delivery_count: 1,
        }],
    };
    for (first, last) in [(5, 12), (12, 11), (10, 10 + MAX_RESTORED_SPAN)] {
        let err = SharePartition::restore(&bad(first, last), ShareLimits::default()).unwrap_err();
        assert!(matches!(err, ShareError::CorruptState(_)), "{first}-{last}");
    }
    let mut overlapping = bad(10, 12);
    overlapping.state_batches.push(overlapping.state_batches[0]);
    assert!(SharePartition::restore(&overlapping, ShareLimits::default()).is_err());
}
