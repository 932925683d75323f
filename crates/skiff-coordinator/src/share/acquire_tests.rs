//! Acquisition: whole batches, re-acquisition first, the in-flight limit, batch size,
//! compaction gaps, read_committed and throttling near the delivery limit.

use super::test_support::*;
use super::*;

#[test]
fn acquires_whole_batches_past_max_records() {
    let mut p = partition(2000, 5);
    let all = log(0, 14, 5);
    // 7 records asked: rounded up to the end of the batch holding the 7th (5-9).
    assert_eq!(fetch(&mut p, "m1", &all, 7, 0), vec![(0, 9, 1)]);
    assert_eq!(p.end_offset(), 10);
    assert_eq!(p.in_flight_count(), 10);
    let r = p.record(3).unwrap();
    assert_eq!(r.state, DeliveryState::Acquired);
    assert_eq!(&*r.lock.as_ref().unwrap().member_id, "m1");
    assert_eq!(r.lock.as_ref().unwrap().deadline_ms, LOCK_MS);
    // The next fetch continues after the end offset.
    assert_eq!(fetch(&mut p, "m2", &all, 100, 0), vec![(10, 14, 1)]);
}

#[test]
fn available_records_are_reacquired_before_new_ones() {
    let mut p = partition(2000, 5);
    let all = log(0, 14, 10);
    assert_eq!(fetch(&mut p, "m1", &all, 10, 0), vec![(0, 9, 1)]);
    ack(&mut p, "m1", 3, 4, ACK_RELEASE).unwrap();
    assert_eq!(p.next_fetch_offset(), 3);
    assert_eq!(
        fetch(&mut p, "m2", &all, 100, 0),
        vec![(3, 4, 2), (10, 14, 1)]
    );
    assert_eq!(state(&p, 3), Some((DeliveryState::Acquired, 2)));
    assert!(p.record(3).unwrap().held_by("m2"));
    assert!(p.record(5).unwrap().held_by("m1"));
}

#[test]
fn in_flight_limit_caps_new_records_but_rounds_up_to_a_batch() {
    let mut p = partition(10, 5);
    let all = log(0, 29, 5);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(0, 9, 1)]);
    // At the limit: nothing more past the end offset.
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![]);
    // Acknowledging the head frees room.
    ack(&mut p, "m1", 0, 4, ACK_ACCEPT).unwrap();
    assert_eq!(p.start_offset(), 5);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(10, 14, 1)]);

    // Room for 2, but the batch holding them has 8 records: Kafka hands the whole batch out.
    let mut q = partition(10, 5);
    let big = vec![FetchedBatch::data(0, 7), FetchedBatch::data(8, 15)];
    assert_eq!(fetch(&mut q, "m1", &big, 8, 0), vec![(0, 7, 1)]);
    assert_eq!(fetch(&mut q, "m1", &big, 8, 0), vec![(8, 15, 1)]);
    assert_eq!(q.in_flight_count(), 16);
}

#[test]
fn released_records_inside_a_full_window_can_still_be_taken() {
    let mut p = partition(10, 5);
    let all = log(0, 19, 10);
    fetch(&mut p, "m1", &all, 100, 0);
    ack(&mut p, "m1", 5, 5, ACK_RELEASE).unwrap();
    assert_eq!(fetch(&mut p, "m2", &all, 100, 0), vec![(5, 5, 2)]);
}

#[test]
fn batch_size_cuts_new_records_on_batch_boundaries() {
    let mut p = partition(2000, 5);
    let all = log(0, 11, 3);
    let isolation = Isolation::ReadUncommitted;
    let got = p.acquire(&Fetch {
        member_id: "m1",
        fetch_offset: 0,
        batches: &all,
        isolation: &isolation,
        max_records: 100,
        batch_size: 5,
        mode: AcquireMode::BatchOptimized,
        lock_duration_ms: LOCK_MS,
        now_ms: 0,
    });
    assert_eq!(ranges(&got), vec![(0, 5, 1), (6, 11, 1)]);
}

#[test]
fn compaction_gaps_are_inside_the_ranges_and_acknowledged_as_gaps() {
    let mut p = partition(2000, 5);
    let all = vec![FetchedBatch::data(0, 2), FetchedBatch::data(5, 7)];
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(0, 7, 1)]);
    let types = vec![1, 1, 1, 0, 0, 1, 1, 1];
    let done = p
        .acknowledge(
            "m1",
            &[AckBatch {
                first_offset: 0,
                last_offset: 7,
                types,
            }],
            &ctx(0),
        )
        .unwrap();
    assert_eq!((done.accepted, done.gaps), (6, 2));
    assert_eq!(p.start_offset(), 8);
    assert_eq!(p.records().count(), 0);
}

#[test]
fn a_read_that_starts_after_the_fetch_offset_archives_what_was_compacted() {
    let mut p = partition(2000, 5);
    let all = log(0, 9, 5);
    fetch(&mut p, "m1", &all, 100, 0);
    ack(&mut p, "m1", 0, 9, ACK_RELEASE).unwrap();
    // Compaction removed batch 0-4; the read from 0 starts at 5.
    let compacted = log(5, 9, 5);
    assert_eq!(fetch(&mut p, "m1", &compacted, 100, 0), vec![(5, 9, 2)]);
    assert_eq!(p.start_offset(), 5);
}

#[test]
fn read_committed_archives_aborted_batches_and_stops_at_the_lso() {
    let mut p = partition(2000, 5);
    let batches = vec![
        FetchedBatch::transactional(0, 2, 7),
        FetchedBatch::abort_marker(3, 7),
        FetchedBatch::data(4, 5),
        FetchedBatch::transactional(6, 7, 8),
        FetchedBatch::abort_marker(8, 8),
        FetchedBatch::data(9, 9),
        FetchedBatch::transactional(10, 12, 9),
    ];
    let isolation = Isolation::ReadCommitted {
        last_stable_offset: 10,
        aborted: vec![
            AbortedTxn {
                producer_id: 7,
                first_offset: 0,
            },
            AbortedTxn {
                producer_id: 8,
                first_offset: 6,
            },
        ],
    };
    let got = p.acquire(&Fetch {
        member_id: "m1",
        fetch_offset: 0,
        batches: &batches,
        isolation: &isolation,
        max_records: 100,
        batch_size: 0,
        mode: AcquireMode::BatchOptimized,
        lock_duration_ms: LOCK_MS,
        now_ms: 0,
    });
    assert_eq!(ranges(&got), vec![(3, 5, 1), (8, 9, 1)]);
    assert_eq!(state(&p, 6), Some((DeliveryState::Archived, 1)));
    // 0-2 were archived, so the start offset moved past them; nothing at or after the LSO.
    assert_eq!(p.start_offset(), 3);
    assert_eq!(p.end_offset(), 10);
}

#[test]
fn committed_transactions_are_delivered_under_read_committed() {
    let mut p = partition(2000, 5);
    let batches = vec![
        FetchedBatch::transactional(0, 2, 7),
        FetchedBatch::data(3, 3),
    ];
    let isolation = Isolation::ReadCommitted {
        last_stable_offset: 4,
        aborted: vec![],
    };
    let got = p.acquire(&Fetch {
        member_id: "m1",
        fetch_offset: 0,
        batches: &batches,
        isolation: &isolation,
        max_records: 100,
        batch_size: 0,
        mode: AcquireMode::BatchOptimized,
        lock_duration_ms: LOCK_MS,
        now_ms: 0,
    });
    assert_eq!(ranges(&got), vec![(0, 3, 1)]);
}

#[test]
fn records_near_the_limit_are_delivered_in_shrinking_groups_then_alone() {
    // Limit 5: throttling from delivery count 3 on.
    assert_eq!(throttle_threshold(5), 3);
    let mut p = partition(2000, 5);
    let all = log(0, 7, 8);
    for round in 1..=3 {
        assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(0, 7, round)]);
        ack(&mut p, "m1", 0, 7, ACK_RELEASE).unwrap();
    }
    // Count 3 reached: half the batch (8 >> 1), then the other half.
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(0, 3, 4)]);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(4, 7, 4)]);
    ack(&mut p, "m1", 0, 7, ACK_RELEASE).unwrap();
    // On their last attempt, records go out one at a time.
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(0, 0, 5)]);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![(1, 1, 5)]);
}

#[test]
fn nothing_is_acquired_for_zero_records_or_a_read_below_the_start() {
    let mut p = SharePartition::new(10, 0, ShareLimits::default());
    let all = log(0, 9, 5);
    assert_eq!(fetch(&mut p, "m1", &all, 100, 0), vec![]);
    assert_eq!(fetch(&mut p, "m1", &log(10, 14, 5), 0, 0), vec![]);
    assert_eq!(
        fetch(&mut p, "m1", &log(10, 14, 5), 1, 0),
        vec![(10, 14, 1)]
    );
}
