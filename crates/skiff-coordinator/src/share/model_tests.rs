//! A model test: random fetches, acknowledgements, expiries, members leaving, log start moves
//! and restores against one log, checking the invariants after every step and that the queue
//! always drains in the end.

use proptest::prelude::*;

use super::test_support::*;
use super::*;

const MEMBERS: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
enum Op {
    Fetch {
        member: usize,
        max: u32,
    },
    Ack {
        member: usize,
        ack_type: i8,
        take: usize,
    },
    AckByOther {
        member: usize,
    },
    Expire {
        advance_ms: i64,
    },
    Leave {
        member: usize,
    },
    LogStart {
        to: i64,
    },
    Restore,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, 1..20u32).prop_map(|(member, max)| Op::Fetch { member, max }),
        4 => (0..3usize, 0..4i8, 1..15usize)
            .prop_map(|(member, ack_type, take)| Op::Ack { member, ack_type, take }),
        1 => (0..3usize).prop_map(|member| Op::AckByOther { member }),
        2 => (0..40_000i64).prop_map(|advance_ms| Op::Expire { advance_ms }),
        1 => (0..3usize).prop_map(|member| Op::Leave { member }),
        1 => (0..40i64).prop_map(|to| Op::LogStart { to }),
        1 => Just(Op::Restore),
    ]
}

/// Batch sizes 1-6 laid end to end from 0, with some batches compacted away.
fn batches() -> impl Strategy<Value = Vec<FetchedBatch>> {
    prop::collection::vec((1..7i64, prop::bool::weighted(0.2)), 5..15).prop_map(|sizes| {
        let mut next = 0;
        let mut out = Vec::new();
        for (size, compacted) in sizes {
            if !compacted {
                out.push(FetchedBatch::data(next, next + size - 1));
            }
            next += size;
        }
        out
    })
}

/// The member's held offsets as consecutive ranges.
fn held_ranges(p: &SharePartition, member: &str) -> Vec<(i64, i64)> {
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for (offset, r) in p.records() {
        if r.state == DeliveryState::Acquired && r.held_by(member) {
            match ranges.last_mut() {
                Some(last) if last.1 + 1 == offset => last.1 = offset,
                _ => ranges.push((offset, offset)),
            }
        }
    }
    ranges
}

fn check_invariants(p: &SharePartition, limits: ShareLimits, previous_start: i64, log_end: i64) {
    assert!(p.start_offset() >= previous_start, "start offset went back");
    assert!(p.start_offset() <= p.end_offset());
    assert!(p.end_offset() <= log_end.max(p.start_offset()));
    for (offset, r) in p.records() {
        assert!(
            offset >= p.start_offset() && offset < p.end_offset(),
            "{offset} outside"
        );
        assert_eq!(
            r.state == DeliveryState::Acquired,
            r.lock.is_some(),
            "{offset}"
        );
        assert!(r.delivery_count >= 1 && r.delivery_count <= limits.delivery_count_limit);
    }
    assert!(p.records().count() as u64 <= p.in_flight_count());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn share_partition_model(all in batches(), ops in prop::collection::vec(op(), 1..60)) {
        let limits = ShareLimits { max_in_flight_records: 12, delivery_count_limit: 3 };
        let log_end = all.last().map_or(0, |b| b.last_offset + 1);
        let mut p = SharePartition::new(0, 0, limits);
        let mut now = 0i64;
        let mut log_start = 0i64;
        for op in ops {
            let previous_start = p.start_offset();
            let visible: Vec<FetchedBatch> =
                all.iter().filter(|b| b.last_offset >= log_start).copied().collect();
            match op {
                Op::Fetch { member, max } => {
                    let before = p.clone();
                    let got = fetch(&mut p, MEMBERS[member], &visible, max, now);
                    // Past the end offset only within the in-flight limit, rounded up to the
                    // end of a batch (batches are at most 6 records).
                    let room = i64::from(limits.max_in_flight_records) - before.in_flight_count() as i64;
                    let new_records: i64 = got
                        .iter()
                        .map(|&(f, l, _)| (l - f.max(before.end_offset()) + 1).max(0))
                        .sum();
                    prop_assert!(new_records == 0 || new_records <= room.min(i64::from(max)) + 5);
                    for (first, last, count) in got {
                        for offset in first..=last {
                            let was = before.record(offset);
                            prop_assert!(was.is_none_or(|r| r.state == DeliveryState::Available),
                                "{offset} handed out twice");
                            let r = p.record(offset).unwrap();
                            prop_assert!(r.held_by(MEMBERS[member]));
                            prop_assert_eq!(r.delivery_count, count);
                            prop_assert_eq!(count, was.map_or(1, |r| r.delivery_count + 1));
                        }
                    }
                }
                Op::Ack { member, ack_type, take } => {
                    let batches: Vec<AckBatch> = held_ranges(&p, MEMBERS[member])
                        .into_iter()
                        .take(take)
                        .map(|(f, l)| AckBatch::range(f, l, ack_type))
                        .collect();
                    prop_assert!(p.acknowledge(MEMBERS[member], &batches, &ctx(now)).is_ok());
                    for b in &batches {
                        for offset in b.first_offset..=b.last_offset {
                            prop_assert!(p.record(offset).is_none_or(|r| !r.held_by(MEMBERS[member])));
                        }
                    }
                }
                Op::AckByOther { member } => {
                    let other = MEMBERS[(member + 1) % 3];
                    let batches: Vec<AckBatch> = held_ranges(&p, MEMBERS[member])
                        .into_iter()
                        .map(|(f, l)| AckBatch::range(f, l, ACK_ACCEPT))
                        .collect();
                    if !batches.is_empty() {
                        let before = p.snapshot();
                        prop_assert!(p.acknowledge(other, &batches, &ctx(now)).is_err());
                        prop_assert_eq!(p.snapshot(), before);
                    }
                }
                Op::Expire { advance_ms } => {
                    now += advance_ms;
                    p.expire(now);
                    prop_assert!(p.next_lock_deadline().is_none_or(|d| d > now));
                }
                Op::Leave { member } => {
                    p.release_member(MEMBERS[member]);
                    prop_assert!(held_ranges(&p, MEMBERS[member]).is_empty());
                }
                Op::LogStart { to } => {
                    log_start = log_start.max(to.min(log_end));
                    p.log_start_moved(log_start);
                }
                Op::Restore => {
                    let snap = p.snapshot();
                    let back = SharePartition::restore(&snap, limits).unwrap();
                    // Records archived by the restore may let the start offset move on.
                    prop_assert!(back.start_offset() >= p.start_offset());
                    for (offset, r) in p.records().filter(|(o, _)| *o >= back.start_offset()) {
                        let expected = match r.state {
                            DeliveryState::Acquired
                                if r.delivery_count >= limits.delivery_count_limit =>
                            {
                                DeliveryState::Archived
                            }
                            DeliveryState::Acquired => DeliveryState::Available,
                            s => s,
                        };
                        prop_assert_eq!(back.record(offset).map(|b| b.state), Some(expected));
                    }
                    p = back;
                }
            }
            check_invariants(&p, limits, previous_start, log_end);
        }

        // Whatever happened, a consumer that accepts everything drains the queue.
        let visible: Vec<FetchedBatch> =
            all.iter().filter(|b| b.last_offset >= log_start).copied().collect();
        for _ in 0..200 {
            now += 1_000_000;
            p.expire(now);
            fetch(&mut p, "drain", &visible, 50, now);
            let batches: Vec<AckBatch> = held_ranges(&p, "drain")
                .into_iter()
                .map(|(f, l)| AckBatch::range(f, l, ACK_ACCEPT))
                .collect();
            prop_assert!(p.acknowledge("drain", &batches, &ctx(now)).is_ok());
            if p.start_offset() >= log_end {
                break;
            }
        }
        prop_assert_eq!(p.start_offset(), log_end.max(log_start));
    }
}
