//! What the group coordinator writes to `__consumer_offsets`, decoded with Kafka's schemas
//! independently of the broker's codec: commits in Kafka's record format, group metadata
//! replayed at start, and the tombstones DeleteGroups leaves. Shared helpers:
//! `common/groups.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use common::groups::*;
use common::*;
use kafka_protocol::messages::{
    join_group_request::JoinGroupRequestProtocol, ApiKey, GroupId, JoinGroupRequest,
    JoinGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::raw::RawClient;
use skiff_e2e::Broker;

/// The commits are in `__consumer_offsets` in Kafka's key/value schema (decoded here
/// independently of the broker's codec).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_are_written_in_kafka_record_format() -> Result<()> {
    let b = Broker::start_with(BROKER_PROPS)?;
    create_topic(&admin(&b)?, "fmt", 1, &[]).await?;
    let c = group_consumer(&b, "burrow-readable", &[])?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("fmt", 0, Offset::Offset(12))?;
    c.commit(&tpl, CommitMode::Sync)?;
    // Java's "burrow-readable".hashCode() placed on 50 partitions.
    let h = "burrow-readable"
        .encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
    let partition = if h == i32::MIN { 0 } else { h.abs() % 50 };
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let records = raw.read_all("__consumer_offsets", partition, 0)?;
    let rec = records
        .iter()
        .find(|r| r.key.as_deref().is_some_and(|k| k.starts_with(&[0, 1])))
        .context("no offset commit record in the group's partition")?;
    let key = rec.key.as_deref().unwrap();
    let mut want_key = vec![0u8, 1, 0, 15];
    want_key.extend_from_slice(b"burrow-readable");
    want_key.extend_from_slice(&[0, 3]);
    want_key.extend_from_slice(b"fmt");
    want_key.extend_from_slice(&0i32.to_be_bytes());
    assert_eq!(key, &want_key[..]);
    let value = rec.value.as_deref().context("offset record has a value")?;
    assert_eq!(&value[..2], &[0, 3], "OffsetCommitValue v3");
    assert_eq!(i64::from_be_bytes(value[2..10].try_into()?), 12);
    Ok(())
}

/// Generation, members and assignments are replayed from `__consumer_offsets` at start;
/// DeleteGroups leaves tombstones for the group's metadata and offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_survives_restart_and_delete_writes_tombstones() -> Result<()> {
    use kafka_protocol::messages::{
        sync_group_request::SyncGroupRequestAssignment, DeleteGroupsRequest, DeleteGroupsResponse,
        HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse,
    };
    let mut b = Broker::start_with(&[("group.initial.rebalance.delay.ms", "0")])?;
    let group = "g-replayed";
    let gid = || GroupId(StrBytes::from_static_str("g-replayed"));
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let join = |member: &StrBytes| {
        JoinGroupRequest::default()
            .with_group_id(gid())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(member.clone())
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(Bytes::from_static(&[
                    0, 0, 0, 0, 0, 0, 255, 255, 255, 255,
                ]))])
    };
    let first: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(&StrBytes::default()))?;
    let joined: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(&first.member_id))?;
    assert_eq!(joined.error_code, 0);
    let member = joined.member_id.clone();
    let sync = SyncGroupRequest::default()
        .with_group_id(gid())
        .with_generation_id(joined.generation_id)
        .with_member_id(member.clone())
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(member.clone())
            .with_assignment(Bytes::from_static(b"assigned"))]);
    let synced: SyncGroupResponse = raw.call(ApiKey::SyncGroup, 3, &sync)?;
    assert_eq!(
        (synced.error_code, &synced.assignment[..]),
        (0, &b"assigned"[..])
    );
    drop(raw);

    b.restart()?;
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let hb = HeartbeatRequest::default()
        .with_group_id(gid())
        .with_generation_id(joined.generation_id)
        .with_member_id(member.clone());
    let deadline = Instant::now() + Duration::from_secs(5);
    let code = loop {
        let r: HeartbeatResponse = raw.call(ApiKey::Heartbeat, 3, &hb)?;
        // 14: COORDINATOR_LOAD_IN_PROGRESS while the topic is replayed.
        if r.error_code != 14 || Instant::now() > deadline {
            break r.error_code;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, 0, "the member and its generation were replayed");
    let again: SyncGroupResponse =
        raw.call(ApiKey::SyncGroup, 3, &sync.clone().with_assignments(vec![]))?;
    assert_eq!(
        (again.error_code, &again.assignment[..]),
        (0, &b"assigned"[..])
    );

    let left: LeaveGroupResponse = raw.call(
        ApiKey::LeaveGroup,
        1,
        &LeaveGroupRequest::default()
            .with_group_id(gid())
            .with_member_id(member.clone()),
    )?;
    assert_eq!(left.error_code, 0);
    let c = group_consumer(&b, group, &[])?;
    let mut tpl = TopicPartitionList::new();
    create_topic(&admin(&b)?, "gone", 1, &[]).await?;
    tpl.add_partition_offset("gone", 0, Offset::Offset(3))?;
    c.commit(&tpl, CommitMode::Sync)?;
    drop(c);
    let deleted: DeleteGroupsResponse = raw.call(
        ApiKey::DeleteGroups,
        2,
        &DeleteGroupsRequest::default().with_groups_names(vec![gid()]),
    )?;
    assert_eq!(deleted.results[0].error_code, 0);
    let records = raw.read_all("__consumer_offsets", partition_of(group), 0)?;
    let last_group = records
        .iter()
        .rev()
        .find(|r| r.key.as_deref().is_some_and(|k| k.starts_with(&[0, 2])))
        .context("group metadata records")?;
    assert_eq!(last_group.value, None, "group metadata tombstone");
    let last_offset = records
        .iter()
        .rev()
        .find(|r| r.key.as_deref().is_some_and(|k| k.starts_with(&[0, 1])))
        .context("offset records")?;
    assert_eq!(last_offset.value, None, "offset tombstone");
    Ok(())
}
