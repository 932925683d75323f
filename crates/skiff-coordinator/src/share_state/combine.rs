//! Combining state batches: how a ShareUpdate's batches are folded into the state so far, and
//! how a new snapshot folds the pending write into the current state.
//!
//! The result is the one Kafka's `PersisterStateBatchCombiner` produces, offset by offset:
//! - batches, old and new, are first cut at the start offset (a batch wholly below it is
//!   dropped, one straddling it keeps its part from the start offset on); a start offset of -1
//!   (an update that did not move it) cuts nothing;
//! - where batches overlap, the one with the higher delivery count wins, and on equal counts
//!   the higher delivery-state id. For the states Kafka persists this is "the later write
//!   wins": a record's delivery count never goes down, and for one count its state only moves
//!   from AVAILABLE (0) to ACKNOWLEDGED (2) or ARCHIVED (4), which never change again. Deciding
//!   by content rather than by order makes the result independent of the order batches arrive;
//! - adjacent batches with the same state and count are joined.
//!
//! Batch boundaries can differ from Kafka's in one respect: Kafka's iterative merge may leave
//! two adjacent batches with the same state and count unjoined when they meet only after an
//! overlap was resolved; here they are always joined. Every offset has the same state either
//! way.
//!
//! Pure and allocation-bounded by the input: O(n log n) in the number of batches, whatever
//! offsets they span.

use std::collections::BTreeMap;

use crate::share::{DeliveryState, StateBatch};

/// Combines `so_far` with `newer`, cut at `start_offset` (-1: no cut). The result is sorted,
/// non-overlapping and joined. Batches whose last offset is before their first cover nothing
/// and are ignored (decoding already refuses them).
pub fn combine(so_far: &[StateBatch], newer: &[StateBatch], start_offset: i64) -> Vec<StateBatch> {
    // Offsets as i128 so that `last + 1` of a batch ending at i64::MAX cannot overflow.
    let mut events: Vec<(i128, bool, (u16, i8))> = Vec::new();
    for b in so_far.iter().chain(newer) {
        let first = if start_offset >= 0 {
            b.first_offset.max(start_offset)
        } else {
            b.first_offset
        };
        if b.last_offset < first {
            continue;
        }
        let rank = (b.delivery_count, b.delivery_state.id());
        events.push((i128::from(first), true, rank));
        events.push((i128::from(b.last_offset) + 1, false, rank));
    }
    events.sort_unstable();

    // Ranks of the batches covering the current position, with multiplicity.
    let mut active: BTreeMap<(u16, i8), usize> = BTreeMap::new();
    let mut out: Vec<StateBatch> = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let at = events[i].0;
        while i < events.len() && events[i].0 == at {
            let (_, opens, rank) = events[i];
            if opens {
                *active.entry(rank).or_insert(0) += 1;
            } else if let Some(n) = active.get_mut(&rank) {
                *n -= 1;
                if *n == 0 {
                    active.remove(&rank);
                }
            }
            i += 1;
        }
        let (Some(&(count, state_id)), Some(next)) = (active.keys().next_back(), events.get(i))
        else {
            continue;
        };
        // Both ends come from i64 offsets, so they convert back.
        let (Ok(first), Ok(last)) = (i64::try_from(at), i64::try_from(next.0 - 1)) else {
            continue;
        };
        let Some(state) = DeliveryState::from_id(state_id) else {
            continue;
        };
        push_joined(&mut out, first, last, state, count);
    }
    out
}

/// Appends a batch, extending the previous one when it is adjacent with the same state/count.
fn push_joined(out: &mut Vec<StateBatch>, first: i64, last: i64, state: DeliveryState, count: u16) {
    if let Some(prev) = out.last_mut() {
        if prev.last_offset.checked_add(1) == Some(first)
            && prev.delivery_state == state
            && prev.delivery_count == count
        {
            prev.last_offset = last;
            return;
        }
    }
    out.push(StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use DeliveryState::{Acknowledged as Ack, Archived as Arc, Available as Av};

    fn b(first: i64, last: i64, state: DeliveryState, count: u16) -> StateBatch {
        StateBatch {
            first_offset: first,
            last_offset: last,
            delivery_state: state,
            delivery_count: count,
        }
    }

    #[test]
    fn empty_inputs_give_nothing() {
        assert!(combine(&[], &[], -1).is_empty());
        assert!(combine(&[], &[], 5).is_empty());
    }

    #[test]
    fn later_acknowledgement_overrides_the_middle_of_an_available_batch() {
        let got = combine(&[b(0, 9, Av, 1)], &[b(3, 5, Ack, 1)], -1);
        assert_eq!(got, vec![b(0, 2, Av, 1), b(3, 5, Ack, 1), b(6, 9, Av, 1)]);
    }

    #[test]
    fn higher_delivery_count_wins_whatever_the_order() {
        let old = [b(0, 9, Av, 2)];
        let new = [b(0, 4, Av, 1)];
        // The newer batch has a lower count: Kafka keeps the higher one.
        assert_eq!(combine(&old, &new, -1), vec![b(0, 9, Av, 2)]);
        assert_eq!(combine(&new, &old, -1), vec![b(0, 9, Av, 2)]);
    }

    #[test]
    fn same_count_higher_state_id_wins() {
        let got = combine(&[b(0, 4, Arc, 1)], &[b(2, 6, Ack, 1)], -1);
        assert_eq!(got, vec![b(0, 4, Arc, 1), b(5, 6, Ack, 1)]);
    }

    #[test]
    fn adjacent_equal_batches_are_joined_and_gaps_kept() {
        let got = combine(&[b(0, 4, Ack, 1)], &[b(5, 9, Ack, 1), b(20, 21, Av, 1)], -1);
        assert_eq!(got, vec![b(0, 9, Ack, 1), b(20, 21, Av, 1)]);
    }

    #[test]
    fn start_offset_drops_and_cuts_batches() {
        let got = combine(&[b(0, 4, Ack, 1), b(5, 9, Av, 1)], &[b(12, 12, Arc, 3)], 7);
        assert_eq!(got, vec![b(7, 9, Av, 1), b(12, 12, Arc, 3)]);
        assert!(combine(&[b(0, 4, Ack, 1)], &[], 5).is_empty());
    }

    #[test]
    fn extreme_offsets_do_not_overflow() {
        let got = combine(
            &[b(i64::MAX - 1, i64::MAX, Av, 1)],
            &[b(i64::MAX, i64::MAX, Ack, 1)],
            -1,
        );
        assert_eq!(
            got,
            vec![
                b(i64::MAX - 1, i64::MAX - 1, Av, 1),
                b(i64::MAX, i64::MAX, Ack, 1)
            ]
        );
    }

    #[test]
    fn reversed_batches_are_ignored() {
        assert!(combine(&[b(5, 4, Ack, 1)], &[], -1).is_empty());
    }

    fn arb_batch() -> impl Strategy<Value = StateBatch> {
        (0i64..60, 0i64..8, 0usize..4, 0u16..4).prop_map(|(first, len, s, count)| {
            let state = [Av, DeliveryState::Acquired, Ack, Arc][s];
            b(first, first + len, state, count)
        })
    }

    /// The state of every offset, the slow way: the max (count, state) of the batches
    /// covering it, at or after the start offset.
    fn per_offset(batches: &[StateBatch], start: i64) -> BTreeMap<i64, (u16, i8)> {
        let mut m: BTreeMap<i64, (u16, i8)> = BTreeMap::new();
        for x in batches {
            for o in x.first_offset.max(start)..=x.last_offset {
                let rank = (x.delivery_count, x.delivery_state.id());
                let e = m.entry(o).or_insert(rank);
                *e = (*e).max(rank);
            }
        }
        m
    }

    proptest! {
        #[test]
        fn matches_the_per_offset_model(
            old in proptest::collection::vec(arb_batch(), 0..6),
            new in proptest::collection::vec(arb_batch(), 0..6),
            start in -1i64..40,
        ) {
            let got = combine(&old, &new, start);
            let all: Vec<StateBatch> = old.iter().chain(&new).copied().collect();
            prop_assert_eq!(per_offset(&got, -1), per_offset(&all, start.max(0)));
            for pair in got.windows(2) {
                prop_assert!(pair[0].last_offset < pair[1].first_offset, "sorted, disjoint");
                let joinable = pair[0].last_offset + 1 == pair[1].first_offset
                    && pair[0].delivery_state == pair[1].delivery_state
                    && pair[0].delivery_count == pair[1].delivery_count;
                prop_assert!(!joinable, "adjacent equal batches joined");
            }
            // Combining is idempotent: the result folded into itself is unchanged.
            prop_assert_eq!(combine(&got, &got, start), got.clone());
        }
    }
}
