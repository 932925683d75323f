//! A streams group survives being written to its records and rebuilt from them.

use super::group_tests::{beat, join, settings, Topics};
use super::*;

#[test]
fn a_restored_group_carries_on_where_it_was() {
    let mut g = StreamsGroup::new("wc");
    let s = StreamsGroupSettings {
        standby_replicas: 1,
        rack_aware_assignment_tags: vec!["zone".to_string()],
        ..settings()
    };
    let topics = Topics::all_word_count();
    let t = topics.lookup();
    let all = g
        .heartbeat(join("m1", "p1"), &t, &s, 0)
        .unwrap()
        .tasks
        .unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    // m1 is mid-revocation when the broker stops.
    g.heartbeat(beat("m1", 2, &all), &t, &s, 0).unwrap();
    assert_eq!(g.members["m1"].state, MemberState::UnrevokedTasks);

    let records = snapshot(&g);
    let mut back = restore("wc", &records, 45_000, 1_000).unwrap().unwrap();
    assert_eq!(back.epoch, g.epoch);
    assert_eq!(back.assignment_epoch, g.assignment_epoch);
    assert_eq!(back.topology, g.topology);
    assert_eq!(back.validated_topology_epoch, g.validated_topology_epoch);
    assert_eq!(back.target, g.target);
    assert_eq!(back.assignment_configs(), g.assignment_configs());
    assert_eq!(
        back.assignment_configs()["rack.aware.assignment.tags"],
        "zone"
    );
    for (id, m) in &g.members {
        let r = &back.members[id];
        assert_eq!(
            (
                r.epoch,
                r.previous_epoch,
                r.state,
                &r.assigned,
                &r.pending_revocation
            ),
            (
                m.epoch,
                m.previous_epoch,
                m.state,
                &m.assigned,
                &m.pending_revocation
            )
        );
        assert_eq!(r.process_id, m.process_id);
        assert_eq!(r.active_assigned_at, m.active_assigned_at);
    }
    assert!(!g.members["m1"].active_assigned_at.is_empty());
    // The same records again: nothing differs.
    assert_eq!(snapshot(&back), records);
    // Sessions restart from the load time.
    assert_eq!(back.next_deadline(), Some(1_000 + 30_000));

    // m1 releases what it was told to, and continues at the epoch it had.
    let kept = back.members["m1"].assigned.clone();
    let r = back.heartbeat(beat("m1", 2, &kept), &t, &s, 2_000).unwrap();
    assert_eq!(r.member_epoch, g.assignment_epoch);
    // No epoch bump from the restart itself.
    assert_eq!(back.epoch, g.epoch);
}

#[test]
fn without_its_metadata_record_there_is_no_group() {
    let mut g = StreamsGroup::new("wc");
    let topics = Topics::all_word_count();
    g.heartbeat(join("m1", "p1"), &topics.lookup(), &settings(), 0)
        .unwrap();
    let mut records = snapshot(&g);
    records.retain(|k, _| !matches!(k, records::StreamsKey::Metadata { .. }));
    assert!(restore("wc", &records, 45_000, 0).unwrap().is_none());
}
