//! Which record a write appends, and how records fold into the state.

use uuid::Uuid;

use super::error::ShareStateError;
use super::records::SharePartitionKey;
use super::state::*;
use crate::share::{DeliveryState, ShareSnapshot, StateBatch};

fn key() -> SharePartitionKey {
    SharePartitionKey {
        group: "g".into(),
        topic_id: Uuid::from_u64_pair(7, 9),
        partition: 0,
    }
}

fn b(first: i64, last: i64, state: DeliveryState, count: u16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn initial(start: i64, epoch: i32) -> ShareWrite {
    ShareWrite::Snapshot(ShareSnapshot {
        start_offset: start,
        state_epoch: epoch,
        delivery_complete_count: 0,
        state_batches: vec![],
    })
}

fn batches(start: Option<i64>, batches: Vec<StateBatch>) -> ShareWrite {
    ShareWrite::Batches(BatchWrite {
        state_epoch: 0,
        start_offset: start,
        delivery_complete_count: 1,
        state_batches: batches,
    })
}

/// Plans and applies `write`, as the store does after the append.
fn write(states: &mut ShareStates, w: ShareWrite, limit: u32) -> Record {
    let record = states.plan(&key(), w, limit, 0, 10).unwrap();
    states.apply(record.clone(), limit);
    record
}

#[test]
fn batches_before_any_snapshot_are_refused() {
    let states = ShareStates::default();
    let err = states
        .plan(&key(), batches(None, vec![]), 500, 0, 0)
        .unwrap_err();
    assert!(matches!(err, ShareStateError::Uninitialized(_)));
}

#[test]
fn a_snapshot_then_updates_then_a_snapshot_every_limit_updates() {
    let mut states = ShareStates::default();
    let first = write(&mut states, initial(0, 0), 3);
    assert!(
        matches!(&first, Record::Snapshot(_, Some(v)) if v.snapshot_epoch == 0),
        "{first:?}"
    );
    let mut kinds = Vec::new();
    for i in 0..8 {
        let r = write(
            &mut states,
            batches(None, vec![b(i, i, DeliveryState::Acknowledged, 1)]),
            3,
        );
        kinds.push(match r {
            Record::Snapshot(_, Some(v)) => format!("S{}", v.snapshot_epoch),
            Record::Snapshot(_, None) => "T".into(),
            Record::Update(_, v) => format!("U{}", v.snapshot_epoch),
        });
    }
    assert_eq!(kinds, ["U0", "U0", "U0", "S1", "U1", "U1", "U1", "S2"]);
    let stored = states.get(&key()).unwrap();
    assert_eq!(
        stored.state.state_batches,
        vec![b(0, 7, DeliveryState::Acknowledged, 1)]
    );
}

#[test]
fn a_limit_of_zero_makes_every_write_a_snapshot() {
    let mut states = ShareStates::default();
    write(&mut states, initial(0, 0), 0);
    for _ in 0..3 {
        let r = write(&mut states, batches(None, vec![]), 0);
        assert!(matches!(r, Record::Snapshot(_, Some(_))));
    }
}

#[test]
fn an_update_moves_the_start_offset_and_drops_batches_below_it() {
    let mut states = ShareStates::default();
    write(&mut states, initial(0, 0), 500);
    write(
        &mut states,
        batches(None, vec![b(0, 9, DeliveryState::Available, 1)]),
        500,
    );
    let r = write(
        &mut states,
        batches(Some(5), vec![b(5, 6, DeliveryState::Acknowledged, 1)]),
        500,
    );
    assert!(
        matches!(&r, Record::Update(_, v) if v.start_offset == 5),
        "{r:?}"
    );
    let s = states.get(&key()).unwrap();
    assert_eq!(s.state.start_offset, 5);
    assert_eq!(
        s.state.state_batches,
        vec![
            b(5, 6, DeliveryState::Acknowledged, 1),
            b(7, 9, DeliveryState::Available, 1)
        ]
    );
    assert_eq!(s.state.delivery_complete_count, 1);
    // An update that leaves the start offset says -1.
    let r = write(&mut states, batches(None, vec![]), 500);
    assert!(matches!(&r, Record::Update(_, v) if v.start_offset == -1));
    assert_eq!(states.get(&key()).unwrap().state.start_offset, 5);
}

#[test]
fn older_state_epochs_are_fenced_and_newer_ones_start_a_snapshot() {
    let mut states = ShareStates::default();
    write(&mut states, initial(0, 2), 500);
    let mut old = batches(None, vec![]);
    if let ShareWrite::Batches(w) = &mut old {
        w.state_epoch = 1;
    }
    let err = states.plan(&key(), old, 500, 0, 0).unwrap_err();
    assert!(matches!(
        err,
        ShareStateError::FencedStateEpoch {
            written: 1,
            stored: 2,
            ..
        }
    ));
    let mut newer = batches(None, vec![]);
    if let ShareWrite::Batches(w) = &mut newer {
        w.state_epoch = 3;
    }
    let r = write(&mut states, newer, 500);
    assert!(
        matches!(&r, Record::Snapshot(_, Some(v)) if v.state_epoch == 3 && v.snapshot_epoch == 1)
    );
}

#[test]
fn a_snapshot_below_the_limit_leaves_the_update_count_running() {
    // Kafka resets the count only when a snapshot is applied with the count at the limit.
    let mut states = ShareStates::default();
    write(&mut states, initial(0, 0), 3);
    write(&mut states, batches(None, vec![]), 3);
    write(&mut states, batches(None, vec![]), 3);
    write(&mut states, initial(0, 0), 3);
    assert_eq!(states.updates_since_snapshot(&key()), Some(2));
    write(&mut states, batches(None, vec![]), 3);
    assert!(matches!(
        write(&mut states, batches(None, vec![]), 3),
        Record::Snapshot(..)
    ));
    assert_eq!(states.updates_since_snapshot(&key()), Some(0));
}

#[test]
fn a_tombstone_forgets_the_share_partition() {
    let mut states = ShareStates::default();
    write(&mut states, initial(0, 0), 500);
    states.apply(ShareStates::tombstone(&key()), 500);
    assert!(states.get(&key()).is_none());
    assert!(states.is_empty());
}

#[test]
fn an_update_without_a_snapshot_is_taken_alone() {
    let mut states = ShareStates::default();
    let r = Record::Update(
        key(),
        super::records::UpdateValue {
            snapshot_epoch: 4,
            leader_epoch: 1,
            start_offset: 10,
            delivery_complete_count: 0,
            state_batches: vec![b(10, 11, DeliveryState::Available, 1)],
        },
    );
    states.apply(r, 500);
    let s = states.get(&key()).unwrap();
    assert_eq!((s.state.start_offset, s.state.state_epoch), (10, -1));
    assert_eq!(s.snapshot_epoch, 4);
}

#[test]
fn a_cold_snapshot_rewrites_the_state_and_keeps_the_update_count_running() {
    let mut states = ShareStates::default();
    assert!(
        states.cold_snapshot(&key(), 99).is_none(),
        "no state, nothing"
    );
    write(&mut states, initial(0, 0), 3); // at time 10
    write(
        &mut states,
        batches(Some(1), vec![b(0, 1, DeliveryState::Acknowledged, 1)]),
        3,
    );
    let before = states.get(&key()).unwrap().clone();
    let cold = states.cold_snapshot(&key(), 99).unwrap();
    let Record::Snapshot(_, Some(v)) = &cold else {
        panic!("{cold:?}")
    };
    assert_eq!(
        (v.snapshot_epoch, v.create_timestamp, v.write_timestamp),
        (1, 10, 99)
    );
    states.apply(cold, 3);
    let after = states.get(&key()).unwrap();
    assert_eq!(after.state, before.state);
    assert_eq!(after.snapshot_epoch, 1);
    // Below the limit, a snapshot leaves the count running: two more updates, then one.
    assert_eq!(states.updates_since_snapshot(&key()), Some(1));
    let kinds: Vec<bool> = (2..5)
        .map(|i| {
            let r = write(
                &mut states,
                batches(None, vec![b(i, i, DeliveryState::Acknowledged, 1)]),
                3,
            );
            matches!(r, Record::Snapshot(..))
        })
        .collect();
    assert_eq!(kinds, [false, false, true]);
}

/// A replayed snapshot epoch at `i32::MAX` (a foreign or damaged topic) wraps on the next
/// snapshot, as Java's int does, instead of overflowing.
#[test]
fn the_snapshot_epoch_wraps_at_its_maximum() {
    let mut states = ShareStates::default();
    let r = Record::Update(
        key(),
        super::records::UpdateValue {
            snapshot_epoch: i32::MAX,
            leader_epoch: 1,
            start_offset: 0,
            delivery_complete_count: 0,
            state_batches: vec![],
        },
    );
    states.apply(r, 500);
    let next = write(&mut states, initial(0, 0), 500);
    assert!(matches!(&next, Record::Snapshot(_, Some(v)) if v.snapshot_epoch == i32::MIN));
    let next = write(&mut states, batches(None, vec![]), 0);
    assert!(matches!(&next, Record::Snapshot(_, Some(v)) if v.snapshot_epoch == i32::MIN + 1));
}
