//! Only what changed is written, in Kafka's order, and what is written replays to the group.

use super::super::records::decode_key;
use super::super::test_support::*;
use super::super::*;
use super::*;

/// The record types of `records`, tombstones negated.
fn kinds(records: &[RawRecord]) -> Vec<i16> {
    records
        .iter()
        .map(|(k, v)| {
            let t = kind(k);
            if v.is_some() {
                t
            } else {
                -t
            }
        })
        .collect()
}

fn replay(records: &[RawRecord], topics: &Topics) -> BTreeMap<String, ShareGroup> {
    let mut r = ShareReplay::default();
    for (k, v) in records {
        r.apply(&decode_key(k).unwrap().unwrap(), v.as_deref())
            .unwrap();
    }
    r.finish(topics, 45_000, 0)
}

#[test]
fn a_join_writes_everything_and_a_plain_heartbeat_nothing() {
    let topics = Topics::with(&[("t", 2)]);
    let mut g = ShareGroup::new("g");
    let mut p = Persisted::default();
    g.heartbeat(join_hb("a", &["t"]), &topics, &eager(), 0)
        .unwrap();
    let first = p.changes(&g, &[]);
    assert_eq!(kinds(&first), vec![10, 11, 13, 12, 14]);
    let epoch = g.members["a"].epoch;
    g.heartbeat(beat_hb("a", epoch), &topics, &eager(), 10)
        .unwrap();
    assert!(p.changes(&g, &[]).is_empty());
    assert_eq!(p, Persisted::of(&g));
}

#[test]
fn a_second_member_writes_its_metadata_the_epoch_the_new_target_and_its_assignment() {
    let topics = Topics::with(&[("t", 2)]);
    let mut g = ShareGroup::new("g");
    let mut p = Persisted::default();
    g.heartbeat(join_hb("a", &["t"]), &topics, &eager(), 0)
        .unwrap();
    p.changes(&g, &[]);
    g.heartbeat(join_hb("b", &["t"]), &topics, &eager(), 1)
        .unwrap();
    // b's metadata, the epoch, both targets (a gave a partition to b), the target epoch, b's
    // assignment; a's current assignment changes only on its own next heartbeat.
    assert_eq!(kinds(&p.changes(&g, &[])), vec![10, 11, 13, 13, 12, 14]);
    let epoch = g.members["a"].epoch;
    g.heartbeat(beat_hb("a", epoch), &topics, &eager(), 2)
        .unwrap();
    assert_eq!(kinds(&p.changes(&g, &[])), vec![14]);
}

#[test]
fn a_departure_writes_the_member_tombstones_then_the_epoch() {
    let topics = Topics::with(&[("t", 2)]);
    let mut g = ShareGroup::new("g");
    let mut p = Persisted::default();
    g.heartbeat(join_hb("a", &["t"]), &topics, &eager(), 0)
        .unwrap();
    g.heartbeat(join_hb("b", &["t"]), &topics, &eager(), 1)
        .unwrap();
    p.changes(&g, &[]);
    g.leave("b", &topics).unwrap();
    let records = p.changes(&g, &["b"]);
    assert_eq!(kinds(&records), vec![-14, -13, -10, 11]);
    let on_disk: Vec<RawRecord> = p.0.into_iter().map(|(k, v)| (k, Some(v))).collect();
    let back = replay(&on_disk, &topics);
    assert_eq!(back["g"].members.keys().collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(back["g"].epoch, g.epoch);
}

#[test]
fn deleting_an_empty_group_tombstones_every_record_and_replays_to_nothing() {
    let topics = Topics::with(&[("t", 2)]);
    let mut g = ShareGroup::new("g");
    let mut p = Persisted::default();
    let mut log = Vec::new();
    g.heartbeat(join_hb("a", &["t"]), &topics, &eager(), 0)
        .unwrap();
    log.extend(p.changes(&g, &[]));
    g.leave("a", &topics).unwrap();
    log.extend(p.changes(&g, &["a"]));
    let tombstones = group_tombstones(&g, &p);
    assert_eq!(kinds(&tombstones), vec![-12, -15, -11]);
    log.extend(tombstones);
    assert!(replay(&log, &topics).is_empty());
}
