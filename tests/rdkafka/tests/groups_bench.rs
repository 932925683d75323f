//! Group coordinator benchmark (ignored by default, run with `--ignored --nocapture`): join to
//! stable and OffsetCommit round trips over the raw protocol. Shared helpers:
//! `common/groups.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use bytes::Bytes;
use kafka_protocol::messages::{
    join_group_request::JoinGroupRequestProtocol, ApiKey, GroupId, JoinGroupRequest,
    JoinGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use skiff_e2e::raw::RawClient;
use skiff_e2e::Broker;

/// Benchmark, not a timed test (run with `--ignored --nocapture`): time from the first
/// JoinGroup to a stable group holding every member, for 1 and 50 raw-protocol members
/// (`group.initial.rebalance.delay.ms=0`, so the figure is the coordinator's own), and
/// OffsetCommit round trips per second (each waits for its fsync): 1 and 8 committers in one
/// group, and 8 committers in 8 groups (8 `__consumer_offsets` partitions to fsync).
#[test]
#[ignore]
fn bench_join_to_stable_and_commit_rate() -> Result<()> {
    use kafka_protocol::messages::{
        offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
        sync_group_request::SyncGroupRequestAssignment,
        HeartbeatRequest, HeartbeatResponse, OffsetCommitRequest, OffsetCommitResponse, TopicName,
    };
    use std::collections::HashMap;
    let b = Broker::start_with(&[("group.initial.rebalance.delay.ms", "0")])?;
    let mut raw = RawClient::connect(&b.bootstrap())?;
    raw.create_topic("bench", 1, &[])?;
    for n in [1usize, 50] {
        let group = format!("bench-{n}");
        let synced: Arc<Mutex<HashMap<usize, i32>>> = Arc::default();
        let sizes: Arc<Mutex<HashMap<i32, usize>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let barrier = Arc::new(std::sync::Barrier::new(n + 1));
        let mut handles = Vec::new();
        for i in 0..n {
            let (bootstrap, group) = (b.bootstrap(), group.clone());
            let (synced, sizes, stop, barrier) =
                (synced.clone(), sizes.clone(), stop.clone(), barrier.clone());
            handles.push(std::thread::spawn(move || -> Result<()> {
                let mut c = RawClient::connect(&bootstrap)?;
                let gid = GroupId(StrBytes::from_string(group));
                let mut member = StrBytes::default();
                barrier.wait();
                'rejoin: while !stop.load(Ordering::SeqCst) {
                    let j: JoinGroupResponse = c.call(
                        ApiKey::JoinGroup,
                        5,
                        &JoinGroupRequest::default()
                            .with_group_id(gid.clone())
                            .with_session_timeout_ms(30_000)
                            .with_rebalance_timeout_ms(30_000)
                            .with_member_id(member.clone())
                            .with_protocol_type(StrBytes::from_static_str("consumer"))
                            .with_protocols(vec![JoinGroupRequestProtocol::default()
                                .with_name(StrBytes::from_static_str("range"))
                                .with_metadata(Bytes::from_static(&[0, 0, 0, 0, 0, 0]))]),
                    )?;
                    member = j.member_id.clone();
                    if j.error_code != 0 {
                        continue;
                    }
                    let leader = j.leader == j.member_id;
                    if leader {
                        sizes
                            .lock()
                            .unwrap()
                            .insert(j.generation_id, j.members.len());
                    }
                    let assignments = j
                        .members
                        .iter()
                        .map(|m| {
                            SyncGroupRequestAssignment::default()
                                .with_member_id(m.member_id.clone())
                                .with_assignment(Bytes::from_static(b"a"))
                        })
                        .collect();
                    let s: SyncGroupResponse = c.call(
                        ApiKey::SyncGroup,
                        3,
                        &SyncGroupRequest::default()
                            .with_group_id(gid.clone())
                            .with_generation_id(j.generation_id)
                            .with_member_id(member.clone())
                            .with_assignments(assignments),
                    )?;
                    if s.error_code != 0 {
                        continue;
                    }
                    synced.lock().unwrap().insert(i, j.generation_id);
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(50));
                        let h: HeartbeatResponse = c.call(
                            ApiKey::Heartbeat,
                            3,
                            &HeartbeatRequest::default()
                                .with_group_id(gid.clone())
                                .with_generation_id(j.generation_id)
                                .with_member_id(member.clone()),
                        )?;
                        if h.error_code != 0 {
                            continue 'rejoin;
                        }
                    }
                }
                Ok(())
            }));
        }
        barrier.wait();
        let start = Instant::now();
        loop {
            {
                let s = synced.lock().unwrap();
                let gens: BTreeSet<i32> = s.values().copied().collect();
                if s.len() == n && gens.len() == 1 {
                    let g = *gens.iter().next().unwrap();
                    if sizes.lock().unwrap().get(&g) == Some(&n) {
                        eprintln!(
                            "BENCH join to stable, {n} members: {:.1} ms (generation {g})",
                            start.elapsed().as_secs_f64() * 1000.0
                        );
                        break;
                    }
                }
            }
            if start.elapsed() > Duration::from_secs(60) {
                bail!("{n} members never became stable");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::SeqCst);
        for h in handles {
            let _ = h.join();
        }
    }
    for (committers, shared) in [(1usize, true), (8, true), (8, false)] {
        let count = Arc::new(AtomicUsize::new(0));
        let until = Instant::now() + Duration::from_secs(3);
        let handles: Vec<_> = (0..committers)
            .map(|i| {
                let (bootstrap, count) = (b.bootstrap(), count.clone());
                std::thread::spawn(move || -> Result<()> {
                    let mut c = RawClient::connect(&bootstrap)?;
                    let mut offset = 0;
                    while Instant::now() < until {
                        offset += 1;
                        let r: OffsetCommitResponse = c.call(
                            ApiKey::OffsetCommit,
                            8,
                            &OffsetCommitRequest::default()
                                .with_group_id(GroupId(StrBytes::from_string(if shared {
                                    "one-group".to_string()
                                } else {
                                    format!("group-{i}")
                                })))
                                .with_generation_id_or_member_epoch(-1)
                                .with_topics(vec![OffsetCommitRequestTopic::default()
                                    .with_name(TopicName(StrBytes::from_static_str("bench")))
                                    .with_partitions(vec![
                                        OffsetCommitRequestPartition::default()
                                            .with_partition_index(0)
                                            .with_committed_offset(offset),
                                    ])]),
                        )?;
                        if r.topics[0].partitions[0].error_code != 0 {
                            bail!("commit failed: {}", r.topics[0].partitions[0].error_code);
                        }
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("committer panicked"))??;
        }
        eprintln!(
            "BENCH OffsetCommit (acks=all, fsync), {committers} committer(s) in {}: {:.0} commits/s",
            if shared { "one group" } else { "one group each" },
            count.load(Ordering::SeqCst) as f64 / 3.0
        );
    }
    Ok(())
}
