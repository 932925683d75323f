//! ShareGroupHeartbeat on the wire: request checks, group lookup, responses, deletion.

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
fn malformed_requests_are_invalid() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    let bad = [
        request("g", "", 0, Some(&["t"])),
        request("g", "  ", 1, None),
        request("", "m", 0, Some(&["t"])),
        request("g", "m", 0, Some(&["t"])).with_rack_id(Some(StrBytes::from_static_str(" "))),
        request("g", "m", 0, None),
        request("g", "m", 0, Some(&[])),
        request("g", "m", -2, None),
    ];
    for req in bad {
        let out = groups.heartbeat(&req, &ctx(&topics, 0));
        assert_eq!(out.response.error_code, 42, "{req:?}");
        assert!(out.response.error_message.is_some());
        assert!(out.removed.is_none());
    }
    assert!(groups.get("g").is_none(), "no group was created");
}

#[test]
fn kafka_does_not_require_a_uuid_member_id() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    let out = groups.heartbeat(
        &request("g", "not-a-uuid", 0, Some(&["t"])),
        &ctx(&topics, 0),
    );
    assert_eq!(out.response.error_code, 0);
}

#[test]
fn a_join_answers_with_epoch_interval_and_assignment_by_topic_id() {
    let topics = Topics::with(&[("t", 2)]);
    let mut groups = ShareGroups::default();
    let member = uuid::Uuid::new_v4().to_string();
    let req = request("g", &member, 0, Some(&["t"]))
        .with_rack_id(Some(StrBytes::from_static_str("rack-a")));
    let resp = groups.heartbeat(&req, &ctx(&topics, 0)).response;
    assert_eq!(resp.error_code, 0);
    assert_eq!(resp.member_id.as_deref(), Some(member.as_str()));
    assert_eq!(resp.member_epoch, 1);
    assert_eq!(resp.heartbeat_interval_ms, 5_000);
    let a = resp.assignment.unwrap();
    assert_eq!(a.topic_partitions.len(), 1);
    assert_eq!(a.topic_partitions[0].topic_id, id("t"));
    assert_eq!(a.topic_partitions[0].partitions, vec![0, 1]);
    let m = &groups.get("g").unwrap().members[&member];
    assert_eq!(m.client_id, "client-1");
    assert_eq!(m.client_host, "/10.0.0.1");
    assert_eq!(m.rack_id.as_deref(), Some("rack-a"));
    // An unchanged heartbeat carries no assignment.
    let resp = groups
        .heartbeat(&request("g", &member, 1, None), &ctx(&topics, 1))
        .response;
    assert_eq!((resp.error_code, resp.member_epoch), (0, 1));
    assert!(resp.assignment.is_none());
    // A full one (with the subscription) does.
    let resp = groups
        .heartbeat(&request("g", &member, 1, Some(&["t"])), &ctx(&topics, 2))
        .response;
    assert!(resp.assignment.is_some());
}

#[test]
fn only_a_join_creates_a_group() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    let resp = groups
        .heartbeat(&request("g", "m", 3, None), &ctx(&topics, 0))
        .response;
    assert_eq!(resp.error_code, 69);
    let resp = groups
        .heartbeat(&request("g", "m", -1, None), &ctx(&topics, 0))
        .response;
    assert_eq!(resp.error_code, 69);
    assert!(groups.get("g").is_none());
}

#[test]
fn a_group_id_of_a_consumer_or_classic_group_is_not_found() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    let mut c = ctx(&topics, 0);
    c.foreign_group = true;
    let resp = groups
        .heartbeat(&request("g", "m", 0, Some(&["t"])), &c)
        .response;
    assert_eq!(resp.error_code, 69);
    assert!(groups.get("g").is_none());
    assert_eq!(groups.describe("g", true, &topics).error_code, 69);
}

#[test]
fn a_refused_first_join_leaves_no_group_behind() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    let mut c = ctx(&topics, 0);
    c.settings.max_size = 0;
    let resp = groups
        .heartbeat(&request("g", "m", 0, Some(&["t"])), &c)
        .response;
    assert_eq!(resp.error_code, 81);
    assert!(groups.get("g").is_none());
}

#[test]
fn a_leave_answers_epoch_minus_one_and_reports_the_member() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    groups.heartbeat(&request("g", "m", 0, Some(&["t"])), &ctx(&topics, 0));
    let out = groups.heartbeat(&request("g", "m", -1, None), &ctx(&topics, 1));
    assert_eq!(out.response.error_code, 0);
    assert_eq!(out.response.member_id.as_deref(), Some("m"));
    assert_eq!(out.response.member_epoch, -1);
    assert_eq!(out.response.heartbeat_interval_ms, 0);
    let removed = out.removed.unwrap();
    assert_eq!(removed.member_id, "m");
    assert_eq!(removed.assignment, tps(&[("t", &[0])]));
    assert_eq!(groups.get("g").unwrap().state(), ShareGroupState::Empty);
    // Leaving again: the member is unknown.
    let out = groups.heartbeat(&request("g", "m", -1, None), &ctx(&topics, 2));
    assert_eq!(out.response.error_code, 25);
    assert!(out.removed.is_none());
}

#[test]
fn fenced_and_unknown_members_get_their_codes() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    groups.heartbeat(&request("g", "m", 0, Some(&["t"])), &ctx(&topics, 0));
    let resp = groups
        .heartbeat(&request("g", "m", 7, None), &ctx(&topics, 1))
        .response;
    assert_eq!(resp.error_code, 110);
    assert_eq!(resp.member_epoch, 0);
    let resp = groups
        .heartbeat(&request("g", "other", 1, None), &ctx(&topics, 1))
        .response;
    assert_eq!(resp.error_code, 25);
}

#[test]
fn expiry_runs_over_every_group() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    groups.heartbeat(&request("g1", "a", 0, Some(&["t"])), &ctx(&topics, 0));
    groups.heartbeat(&request("g2", "b", 0, Some(&["t"])), &ctx(&topics, 10));
    assert_eq!(groups.next_deadline(), Some(45_000));
    let gone = groups.expire(&topics, 45_010);
    let mut ids: Vec<_> = gone
        .iter()
        .map(|r| (r.group_id.as_str(), r.member_id.as_str()))
        .collect();
    ids.sort();
    assert_eq!(ids, vec![("g1", "a"), ("g2", "b")]);
    assert_eq!(groups.next_deadline(), None);
}

#[test]
fn only_an_empty_group_can_be_deleted() {
    let topics = Topics::with(&[("t", 1)]);
    let mut groups = ShareGroups::default();
    groups.heartbeat(&request("g", "m", 0, Some(&["t"])), &ctx(&topics, 0));
    assert_eq!(groups.delete("g").unwrap_err().code(), 68);
    groups.heartbeat(&request("g", "m", -1, None), &ctx(&topics, 1));
    let dead = groups.delete("g").unwrap();
    assert_eq!(dead.state(), ShareGroupState::Dead);
    assert_eq!(dead.state().name(), "Dead");
    assert!(groups.get("g").is_none());
    assert_eq!(groups.delete("g").unwrap_err().code(), 69);
}
