use super::*;

fn named(topic: &str, partition: i32) -> PartitionKey {
    PartitionKey {
        topic: TopicRef::Name(Arc::from(topic)),
        partition,
    }
}

fn wants(offset: i64) -> Wants {
    Wants {
        fetch_offset: offset,
        max_bytes: 1 << 20,
        leader_epoch: -1,
    }
}

fn sent(hw: i64) -> Sent {
    Sent {
        high_watermark: hw,
        last_stable_offset: hw,
        log_start_offset: 0,
    }
}

/// `n` partitions of topic `t`, each answered with high watermark 10.
fn parts(n: i32) -> Vec<SessionPartition> {
    (0..n)
        .map(|i| SessionPartition {
            sent: sent(10),
            ..SessionPartition::new(named("t", i), wants(0))
        })
        .collect()
}

fn quiet(hw: i64) -> Outcome {
    Outcome {
        sent: sent(hw),
        has_records: false,
        error: false,
    }
}

fn no_names(_: Uuid) -> Option<Arc<str>> {
    None
}

fn inc(
    id: i32,
    epoch: i32,
    uses_topic_ids: bool,
    upserts: Vec<Upsert>,
    forgotten: &[PartitionKey],
) -> Incremental {
    Incremental {
        id,
        epoch,
        uses_topic_ids,
        upserts,
        forgotten: forgotten.to_vec(),
    }
}

/// An incremental fetch of `id` at `epoch` that changes nothing.
fn touch(
    c: &mut FetchSessions,
    id: i32,
    epoch: i32,
    now: i64,
) -> Result<(Ticket, Vec<SessionPartition>), SessionError> {
    match c.begin(inc(id, epoch, false, Vec::new(), &[]), now, no_names)? {
        Begun::Incremental(t, p) => Ok((t, p)),
        Begun::Closed => panic!("closed"),
    }
}

#[test]
fn epochs_advance_and_wrap_past_max_to_one() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(41), 42);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(-1), -1);
    assert_eq!(next_epoch(-7), -1);
}

#[test]
fn a_session_expects_epoch_one_then_each_next_epoch() {
    let mut c = FetchSessions::new(10);
    let id = c.create(0, false, parts(2));
    assert!(id > 0);
    assert_eq!(touch(&mut c, id, 2, 1), Err(SessionError::InvalidEpoch));
    assert_eq!(touch(&mut c, id, 0, 1), Err(SessionError::InvalidEpoch));
    for epoch in 1..=3 {
        let (t, p) = touch(&mut c, id, epoch, 1).unwrap();
        assert_eq!(p.len(), 2);
        c.finish(&t, &[quiet(10), quiet(10)]).unwrap();
    }
    // The epoch that was just served is not accepted again.
    assert_eq!(touch(&mut c, id, 3, 1), Err(SessionError::InvalidEpoch));
    assert_eq!(touch(&mut c, id + 1, 4, 1), Err(SessionError::NotFound));
}

#[test]
fn ids_are_positive_never_zero_and_never_a_live_sessions() {
    let mut c = FetchSessions::new(10);
    // Draws: 0 and 1 both give id 0 (skipped), then 14 gives 7; then 14 again (taken), 0,
    // then 16 gives 8. u32::MAX gives i32::MAX.
    let mut draws = vec![0u32, 1, 14, 14, 0, 16, u32::MAX].into_iter();
    let mut draw = move || draws.next().unwrap();
    assert_eq!(c.create_with(0, false, parts(1), &mut draw), 7);
    assert_eq!(c.create_with(0, false, parts(1), &mut draw), 8);
    assert_eq!(c.create_with(0, false, parts(1), &mut draw), i32::MAX);
    // Random ids: all distinct and positive.
    let mut c = FetchSessions::new(500);
    let ids: HashSet<i32> = (0..500).map(|_| c.create(0, false, parts(1))).collect();
    assert_eq!(ids.len(), 500);
    assert!(ids.iter().all(|&id| id > 0));
}

#[test]
fn capacity_is_respected_and_zero_slots_make_no_sessions() {
    let mut c = FetchSessions::new(0);
    assert_eq!(c.create(0, false, parts(5)), 0);
    assert!(c.is_empty());
    let mut c = FetchSessions::new(3);
    for _ in 0..3 {
        assert_ne!(c.create(0, false, parts(2)), 0);
    }
    // Fresh sessions of the same size: nothing can be evicted.
    for _ in 0..5 {
        assert_eq!(c.create(1, false, parts(2)), 0);
    }
    assert_eq!(c.len(), 3);
    assert_eq!(c.partitions(), 6);
}

#[test]
fn a_stale_session_is_evicted_by_any_new_one() {
    let mut c = FetchSessions::new(2);
    let old = c.create(0, false, parts(5));
    let used = c.create(0, false, parts(5));
    // `used` stays in use; `old` is not used for longer than STALE_MS.
    let (t, _) = touch(&mut c, used, 1, STALE_MS).unwrap();
    c.finish(&t, &[quiet(10); 5]).unwrap();
    // At exactly STALE_MS unused, `old` is not yet stale (Kafka's strict comparison).
    assert_eq!(c.create(STALE_MS, false, parts(1)), 0);
    let new = c.create(STALE_MS + 1, false, parts(1));
    assert_ne!(new, 0);
    assert!(!c.contains(old));
    assert!(c.contains(used) && c.contains(new));
}

#[test]
fn a_larger_session_evicts_the_smallest_old_enough_one() {
    let mut c = FetchSessions::new(2);
    let small = c.create(0, false, parts(2));
    let big = c.create(0, false, parts(4));
    // Used often (never stale), both over STALE_MS old when last used.
    let times = (0..=STALE_MS + 1000)
        .step_by(60_000)
        .chain([STALE_MS + 1000]);
    for (epoch, now) in (1..).zip(times) {
        for (id, n) in [(small, 2), (big, 4)] {
            let (t, _) = touch(&mut c, id, epoch, now).unwrap();
            c.finish(&t, &vec![quiet(10); n]).unwrap();
        }
    }
    let now = STALE_MS + 2000;
    // Not larger than the smallest: no room.
    assert_eq!(c.create(now, false, parts(2)), 0);
    // Larger than the smallest (2) though smaller than the other: the smallest goes.
    let three = c.create(now, false, parts(3));
    assert_ne!(three, 0);
    assert!(!c.contains(small));
    assert!(c.contains(big));
    // The new session is too young to be replaced by size, and `big` (4) is not smaller
    // than 4.
    assert_eq!(c.create(now, false, parts(4)), 0);
    let five = c.create(now, false, parts(5));
    assert_ne!(five, 0);
    assert!(!c.contains(big));
    assert!(c.contains(three));
}

#[test]
fn a_young_session_is_not_evicted_by_a_larger_one() {
    let mut c = FetchSessions::new(1);
    let first = c.create(0, false, parts(1));
    // Used a minute later: still younger than STALE_MS at its last use.
    let (t, _) = touch(&mut c, first, 1, 60_000).unwrap();
    c.finish(&t, &[quiet(10)]).unwrap();
    assert_eq!(c.create(61_000, false, parts(100)), 0);
    assert!(c.contains(first));
}

#[test]
fn upserts_and_forgotten_partitions_change_the_session() {
    let mut c = FetchSessions::new(1);
    let id = c.create(0, false, parts(3));
    let upserts = vec![
        Upsert {
            key: named("t", 1),
            wants: wants(50),
        },
        Upsert {
            key: named("u", 0),
            wants: wants(7),
        },
    ];
    let Begun::Incremental(_, p) = c
        .begin(inc(id, 1, false, upserts, &[named("t", 0)]), 1, no_names)
        .unwrap()
    else {
        panic!("closed")
    };
    let keys: Vec<_> = p
        .iter()
        .map(|p| (p.key.clone(), p.wants.fetch_offset))
        .collect();
    assert_eq!(
        keys,
        vec![(named("t", 1), 50), (named("t", 2), 0), (named("u", 0), 7)]
    );
    // The added partition has sent nothing yet; the updated one keeps what it was sent.
    assert_eq!(p[2].sent, Sent::NOTHING);
    assert_eq!(p[0].sent, sent(10));
}

#[test]
fn forgetting_every_partition_closes_the_session() {
    let mut c = FetchSessions::new(1);
    let id = c.create(0, false, parts(2));
    let begun = c.begin(
        inc(id, 1, false, Vec::new(), &[named("t", 0), named("t", 1)]),
        1,
        no_names,
    );
    assert_eq!(begun, Ok(Begun::Closed));
    assert!(!c.contains(id));
}

#[test]
fn sessions_keep_the_way_they_name_topics() {
    let mut c = FetchSessions::new(2);
    let by_name = c.create(0, false, parts(1));
    let by_id = c.create(0, true, parts(1));
    let e = c.begin(inc(by_name, 1, true, Vec::new(), &[]), 1, no_names);
    assert_eq!(e, Err(SessionError::TopicIdMismatch));
    let e = c.begin(inc(by_id, 1, false, Vec::new(), &[]), 1, no_names);
    assert_eq!(e, Err(SessionError::TopicIdMismatch));
}

#[test]
fn an_unknown_topic_id_is_named_once_it_exists_and_keeps_that_name() {
    let mut c = FetchSessions::new(1);
    let id_key = PartitionKey {
        topic: TopicRef::Id(Uuid::from_u128(9)),
        partition: 0,
    };
    let id = c.create(0, true, vec![SessionPartition::new(id_key, wants(0))]);
    let begun = c
        .begin(inc(id, 1, true, Vec::new(), &[]), 1, no_names)
        .unwrap();
    let Begun::Incremental(t, p) = begun else {
        panic!("closed")
    };
    assert_eq!(p[0].name(), None);
    c.finish(&t, &[quiet(-1)]).unwrap();
    let begun = c.begin(inc(id, 2, true, Vec::new(), &[]), 2, |_| {
        Some(Arc::from("a"))
    });
    let Ok(Begun::Incremental(t, p)) = begun else {
        panic!("no fetch")
    };
    assert_eq!(p[0].name().map(|n| &**n), Some("a"));
    c.finish(&t, &[quiet(-1)]).unwrap();
    // Resolved names are not looked up again.
    let begun = c.begin(inc(id, 3, true, Vec::new(), &[]), 3, |_| {
        Some(Arc::from("b"))
    });
    let Ok(Begun::Incremental(_, p)) = begun else {
        panic!("no fetch")
    };
    assert_eq!(p[0].name().map(|n| &**n), Some("a"));
}

#[test]
fn only_partitions_with_news_are_sent_and_fed_ones_move_to_the_end() {
    let mut c = FetchSessions::new(1);
    let id = c.create(0, false, parts(4));
    let (t, _) = touch(&mut c, id, 1, 1).unwrap();
    let outcomes = [
        // Records: sent, and moved to the end.
        Outcome {
            sent: sent(12),
            has_records: true,
            error: false,
        },
        // Nothing new.
        quiet(10),
        // An error: sent.
        Outcome {
            sent: Sent::NOTHING,
            has_records: false,
            error: true,
        },
        // The log start offset moved: sent.
        Outcome {
            sent: Sent {
                log_start_offset: 3,
                ..sent(10)
            },
            has_records: false,
            error: false,
        },
    ];
    assert_eq!(c.finish(&t, &outcomes), Ok(vec![true, false, true, true]));
    let (t, p) = touch(&mut c, id, 2, 2).unwrap();
    let order: Vec<i32> = p.iter().map(|p| p.key.partition).collect();
    assert_eq!(order, vec![1, 2, 3, 0]);
    assert_eq!(p[3].sent, sent(12));
    // Unchanged answers are now omitted; the errored partition is sent again when its error
    // clears, even with the offsets it had before.
    let again = [
        quiet(10),
        quiet(10),
        Outcome {
            sent: Sent {
                log_start_offset: 3,
                ..sent(10)
            },
            has_records: false,
            error: false,
        },
        quiet(12),
    ];
    assert_eq!(c.finish(&t, &again), Ok(vec![false, true, false, false]));
}

#[test]
fn a_session_used_again_before_finish_answers_invalid_epoch() {
    let mut c = FetchSessions::new(1);
    let id = c.create(0, false, parts(1));
    let (first, _) = touch(&mut c, id, 1, 1).unwrap();
    // A duplicate at the same epoch is refused at once.
    assert_eq!(touch(&mut c, id, 1, 1), Err(SessionError::InvalidEpoch));
    // One at the next epoch goes ahead, and the first can no longer finish.
    let (second, _) = touch(&mut c, id, 2, 1).unwrap();
    assert_eq!(
        c.finish(&first, &[quiet(10)]),
        Err(SessionError::InvalidEpoch)
    );
    assert_eq!(c.finish(&second, &[quiet(10)]), Ok(vec![false]));
    // A session closed (and another made under the same id) in between: not found.
    let (t, _) = touch(&mut c, id, 3, 1).unwrap();
    assert!(c.remove(id));
    let mut same = move || u32::try_from(id).unwrap() << 1;
    assert_eq!(c.create_with(1, false, parts(1), &mut same), id);
    assert_eq!(c.finish(&t, &[quiet(10)]), Err(SessionError::NotFound));
}

#[test]
fn a_partition_listed_twice_is_held_once() {
    let mut c = FetchSessions::new(1);
    let mut p = parts(2);
    p.push(SessionPartition::new(named("t", 0), wants(99)));
    let id = c.create(0, false, p);
    let (_, p) = touch(&mut c, id, 1, 1).unwrap();
    let keys: Vec<_> = p
        .iter()
        .map(|p| (p.key.partition, p.wants.fetch_offset))
        .collect();
    assert_eq!(keys, vec![(0, 99), (1, 0)]);
}
