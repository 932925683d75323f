//! Share groups written as records and rebuilt from them.

use super::records::{decode_key, ShareKey};
use super::test_support::*;
use super::*;

fn replay_all(
    records: &[RawRecord],
    topics: &Topics,
    now: i64,
) -> std::collections::BTreeMap<String, ShareGroup> {
    let mut r = ShareReplay::default();
    for (k, v) in records {
        let key: ShareKey = decode_key(k).unwrap().unwrap();
        r.apply(&key, v.as_deref()).unwrap();
    }
    r.finish(topics, 45_000, now)
}

fn two_member_group(topics: &Topics) -> ShareGroup {
    let mut g = ShareGroup::new("g");
    let mut a = join_hb("a", &["t", "u"]);
    a.rack_id = Some("r1".into());
    g.heartbeat(a, topics, &eager(), 0).unwrap();
    g.heartbeat(join_hb("b", &["t"]), topics, &eager(), 5)
        .unwrap();
    g
}

#[test]
fn a_group_survives_its_records() {
    let topics = Topics::with(&[("t", 2), ("u", 1)]);
    let g = two_member_group(&topics);
    let back = replay_all(&group_records(&g), &topics, 100_000);
    let r = &back["g"];
    assert_eq!((r.epoch, r.assignment_epoch), (g.epoch, g.assignment_epoch));
    assert_eq!(r.assignment_timestamp(), Some(5));
    assert_eq!(r.target, g.target);
    assert_eq!(r.members.len(), 2);
    for (id, m) in &g.members {
        let rm = &r.members[id];
        assert_eq!(
            (&rm.id, rm.epoch, rm.previous_epoch, &rm.rack_id),
            (&m.id, m.epoch, m.previous_epoch, &m.rack_id)
        );
        assert_eq!(
            (&rm.client_id, &rm.client_host),
            (&m.client_id, &m.client_host)
        );
        assert_eq!((&rm.subscribed, &rm.assigned), (&m.subscribed, &m.assigned));
        // Sessions restart at load.
        assert_eq!(rm.session_deadline, 145_000);
    }
}

#[test]
fn a_restored_group_carries_on_without_a_spurious_rebalance() {
    let topics = Topics::with(&[("t", 2), ("u", 1)]);
    let g = two_member_group(&topics);
    let mut back = replay_all(&group_records(&g), &topics, 10_000);
    let r = back.get_mut("g").unwrap();
    let epoch = r.epoch;
    let e = r.members["b"].epoch;
    let res = r
        .heartbeat(beat_hb("b", e), &topics, &eager(), 10_001)
        .unwrap();
    assert_eq!(r.epoch, epoch);
    assert_eq!(res.assignment, None);
}

#[test]
fn a_departures_tombstones_remove_the_member_at_replay() {
    let topics = Topics::with(&[("t", 2), ("u", 1)]);
    let mut g = two_member_group(&topics);
    let mut log = group_records(&g);
    g.leave("b", &topics).unwrap();
    log.extend(member_removed_records(&g, "b"));
    let back = replay_all(&log, &topics, 0);
    let r = &back["g"];
    assert_eq!(r.epoch, g.epoch);
    assert!(r.members.contains_key("a"));
    assert!(!r.members.contains_key("b"));
    assert!(!r.target.contains_key("b"));
}

#[test]
fn a_group_metadata_tombstone_deletes_the_group() {
    let topics = Topics::with(&[("t", 1)]);
    let mut g = ShareGroup::new("g");
    g.heartbeat(join_hb("a", &["t"]), &topics, &eager(), 0)
        .unwrap();
    let mut log = group_records(&g);
    log.push((encode_key(&ShareKey::Metadata { group: "g".into() }), None));
    assert!(replay_all(&log, &topics, 0).is_empty());
    // Records of a group with no metadata record make no group either.
    let members_only: Vec<RawRecord> = group_records(&g).into_iter().skip(1).collect();
    assert!(replay_all(&members_only, &topics, 0).is_empty());
}

#[test]
fn a_corrupt_value_is_an_error() {
    let mut r = ShareReplay::default();
    let key = ShareKey::Current {
        group: "g".into(),
        member: "m".into(),
    };
    assert!(r.apply(&key, Some(&[0, 0, 0])).is_err());
}
