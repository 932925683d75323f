//! ShareGroupDescribe v1 content.

use kafka_protocol::protocol::StrBytes;

use super::test_support::*;
use super::*;

fn ctx(topics: &Topics, now: i64) -> HeartbeatContext<'_> {
    HeartbeatContext {
        client_id: "client-1",
        client_host: "/10.0.0.1",
        topics,
        settings: eager(),
        foreign_group: false,
        now,
    }
}

#[test]
fn describe_shows_epochs_state_members_and_assignments() {
    let topics = Topics::with(&[("t", 2), ("u", 1)]);
    let mut groups = ShareGroups::default();
    groups.heartbeat(
        &request("g", "b", 0, Some(&["t", "u"]))
            .with_rack_id(Some(StrBytes::from_static_str("r1"))),
        &ctx(&topics, 0),
    );
    groups.heartbeat(&request("g", "a", 0, Some(&["t"])), &ctx(&topics, 1));

    let d = groups.describe("g", false, &topics);
    assert_eq!(d.error_code, 0);
    assert_eq!(d.group_id.0.as_str(), "g");
    assert_eq!(d.group_state.as_str(), "Stable");
    assert_eq!((d.group_epoch, d.assignment_epoch), (2, 2));
    assert_eq!(d.assignor_name.as_str(), "simple");
    assert_eq!(d.authorized_operations, i32::MIN, "left to the caller");
    let ids: Vec<&str> = d.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, vec!["a", "b"]);

    let a = &d.members[0];
    assert_eq!(a.member_epoch, 2);
    assert_eq!(a.rack_id, None);
    assert_eq!(a.client_id.as_str(), "client-1");
    assert_eq!(a.client_host.as_str(), "/10.0.0.1");
    let subs: Vec<&str> = a
        .subscribed_topic_names
        .iter()
        .map(|t| t.0.as_str())
        .collect();
    assert_eq!(subs, vec!["t"]);
    let tp = &a.assignment.topic_partitions;
    assert_eq!(tp.len(), 1);
    assert_eq!(
        (tp[0].topic_id, tp[0].topic_name.0.as_str()),
        (id("t"), "t")
    );
    assert_eq!(tp[0].partitions, vec![0]);

    // "b" has not heartbeated since "a" joined: it is described as it is, at epoch 1.
    let b = &d.members[1];
    assert_eq!(b.member_epoch, 1);
    assert_eq!(b.rack_id.as_ref().map(|r| r.as_str()), Some("r1"));
    let names: Vec<&str> = b
        .assignment
        .topic_partitions
        .iter()
        .map(|t| t.topic_name.0.as_str())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"t") && names.contains(&"u"));
}

#[test]
fn describe_of_an_empty_group_and_of_a_missing_one() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    groups.heartbeat(&request("g", "m", 0, Some(&["t"])), &ctx(&topics, 0));
    groups.heartbeat(&request("g", "m", -1, None), &ctx(&topics, 1));
    let d = groups.describe("g", false, &topics);
    assert_eq!(d.group_state.as_str(), "Empty");
    assert_eq!((d.group_epoch, d.assignment_epoch), (2, 1));
    assert!(d.members.is_empty());

    let d = groups.describe("nope", false, &topics);
    assert_eq!(d.error_code, 69);
    assert_eq!(d.group_id.0.as_str(), "nope");
    assert!(d.error_message.is_some());
}

#[test]
fn a_deleted_topic_drops_out_of_the_described_assignment() {
    let topics = Topics::with(&[("t", 1), ("u", 1)]);
    let mut groups = ShareGroups::default();
    groups.heartbeat(&request("g", "m", 0, Some(&["t", "u"])), &ctx(&topics, 0));
    topics.drop_topic("u");
    let d = groups.describe("g", false, &topics);
    let names: Vec<&str> = d.members[0]
        .assignment
        .topic_partitions
        .iter()
        .map(|t| t.topic_name.0.as_str())
        .collect();
    assert_eq!(names, vec!["t"]);
}
