//! Helpers of the consumer group test binaries (`groups_*.rs`): group consumers that count
//! rebalances, `Member` (a consumer on its own thread that records and commits every message),
//! produce rounds over six partitions, exactly-once checks, a raw member that joins and never
//! heartbeats again, committed offsets, and the `__consumer_offsets` partition of a group.
//!
//! Every wait has a deadline. Each test owns its broker; the `Seen` log is shared by the
//! members of one test only.
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use kafka_protocol::messages::{
    join_group_request::JoinGroupRequestProtocol, ApiKey, GroupId, JoinGroupRequest,
    JoinGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use skiff_e2e::raw::RawClient;
use skiff_e2e::Broker;

pub const BROKER_PROPS: &[(&str, &str)] = &[("group.initial.rebalance.delay.ms", "300")];

pub fn group_consumer(
    b: &Broker,
    group: &str,
    extra: &[(&str, &str)],
) -> Result<BaseConsumer<Counting>> {
    let mut c = base_config(b);
    c.set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("fetch.wait.max.ms", "100")
        .set("enable.partition.eof", "false");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create_with_context(Counting::default())
        .context("creating the group consumer")
}

/// Counts rebalance callbacks so tests can tell whether a member saw a rebalance.
#[derive(Default)]
pub struct Counting {
    pub rebalances: AtomicUsize,
}
impl ClientContext for Counting {}
impl ConsumerContext for Counting {
    fn post_rebalance(&self, _c: &BaseConsumer<Self>, _r: &Rebalance<'_>) {
        self.rebalances.fetch_add(1, Ordering::SeqCst);
    }
}

pub type Seen = Arc<Mutex<Vec<(i32, i64, String)>>>;

/// A consumer on its own thread: records each message with the member's name and commits
/// it synchronously before polling again, so a revoked partition has nothing in flight.
pub struct Member {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<()>>>,
}

impl Member {
    pub fn spawn(
        b: &Broker,
        group: &str,
        topic: &str,
        name: &str,
        seen: Seen,
        extra: &[(&str, &str)],
    ) -> Result<Member> {
        Self::from_consumer(group_consumer(b, group, extra)?, topic, name, seen)
    }

    pub fn from_consumer(
        consumer: BaseConsumer<Counting>,
        topic: &str,
        name: &str,
        seen: Seen,
    ) -> Result<Member> {
        consumer.subscribe(&[topic])?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let name = name.to_string();
        let handle = std::thread::spawn(move || -> Result<()> {
            while !flag.load(Ordering::SeqCst) {
                match consumer.poll(Duration::from_millis(100)) {
                    None => {}
                    Some(Err(e)) => eprintln!("{name}: poll error {e}"),
                    Some(Ok(m)) => {
                        seen.lock()
                            .unwrap()
                            .push((m.partition(), m.offset(), name.clone()));
                        // A commit during CompletingRebalance gets REBALANCE_IN_PROGRESS (as
                        // in Kafka; cooperative members keep consuming then): retry briefly.
                        let mut attempt = 0;
                        while let Err(e) = consumer.commit_message(&m, CommitMode::Sync) {
                            attempt += 1;
                            if attempt > 100 {
                                bail!(
                                    "{name}: commit of {}:{} failed: {e}",
                                    m.partition(),
                                    m.offset()
                                );
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            }
            // Dropping the consumer closes it: LeaveGroup, as an application would.
            drop(consumer);
            Ok(())
        });
        Ok(Member {
            stop,
            handle: Some(handle),
        })
    }

    pub fn leave(mut self) -> Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("consumer thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

pub async fn produce_round(
    b: &Broker,
    topic: &str,
    round: usize,
    per_partition: usize,
) -> Result<()> {
    let p = producer(b, &[])?;
    for partition in 0..6 {
        produce_n(&p, topic, partition, per_partition, |i| {
            (
                format!("k{round}-{i}").into_bytes(),
                format!("v{round}-{partition}-{i}").into_bytes(),
            )
        })
        .await?;
    }
    Ok(())
}

pub fn wait_seen(seen: &Seen, n: usize, what: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = seen.lock().unwrap().len();
        if got >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{what}: consumed {got} of {n} records");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A member that joins through the raw protocol, syncs, and then never heartbeats: the
/// broker must expire it after its session timeout (a killed process, as the broker sees it).
pub fn join_and_die(b: &Broker, group: &str, topic: &str) -> Result<()> {
    let mut raw = RawClient::connect(&b.bootstrap())?;
    // ConsumerProtocolSubscription v0: version, topics, user data (null).
    let mut sub = vec![0u8, 0, 0, 0, 0, 1];
    sub.extend_from_slice(&(topic.len() as i16).to_be_bytes());
    sub.extend_from_slice(topic.as_bytes());
    sub.extend_from_slice(&(-1i32).to_be_bytes());
    let join = |member: &str| {
        JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_session_timeout_ms(6000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(StrBytes::from_string(member.to_string()))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(Bytes::from(sub.clone()))])
    };
    let first: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(""))?;
    if first.error_code != 79 {
        bail!("expected MEMBER_ID_REQUIRED, got {}", first.error_code);
    }
    let joined: JoinGroupResponse = raw.call(ApiKey::JoinGroup, 5, &join(&first.member_id))?;
    if joined.error_code != 0 {
        bail!("raw join failed: {}", joined.error_code);
    }
    let synced: SyncGroupResponse = raw.call(
        ApiKey::SyncGroup,
        3,
        &SyncGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_generation_id(joined.generation_id)
            .with_member_id(joined.member_id.clone()),
    )?;
    if synced.error_code != 0 {
        bail!("raw sync failed: {}", synced.error_code);
    }
    if synced.assignment.is_empty() {
        bail!("the dying member got no assignment; the test would not prove a takeover");
    }
    Ok(())
}

pub fn assert_exactly_once(seen: &Seen, expected: usize) -> Result<()> {
    let seen = seen.lock().unwrap();
    let mut by_key: BTreeMap<(i32, i64), Vec<String>> = BTreeMap::new();
    for (p, o, who) in seen.iter() {
        by_key.entry((*p, *o)).or_default().push(who.clone());
    }
    let dups: Vec<_> = by_key.iter().filter(|(_, w)| w.len() > 1).take(5).collect();
    if !dups.is_empty() {
        bail!("records read more than once: {dups:?}");
    }
    if by_key.len() != expected {
        bail!(
            "read {} distinct records, expected {expected}",
            by_key.len()
        );
    }
    let readers: BTreeSet<&String> = seen.iter().map(|(_, _, w)| w).collect();
    eprintln!(
        "records per reader: {:?}",
        readers
            .iter()
            .map(|r| (r, seen.iter().filter(|s| &&s.2 == r).count()))
            .collect::<Vec<_>>()
    );
    Ok(())
}

pub fn committed(c: &BaseConsumer<Counting>, topic: &str, partitions: i32) -> Result<Vec<i64>> {
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = c.committed_offsets(tpl, OP_TIMEOUT)?;
    Ok((0..partitions)
        .map(|p| match got.find_partition(topic, p).map(|e| e.offset()) {
            Some(Offset::Offset(o)) => o,
            _ => -1,
        })
        .collect())
}

pub fn partition_of(group: &str) -> i32 {
    let h = group
        .encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
    if h == i32::MIN {
        0
    } else {
        h.abs() % 50
    }
}

/// One ConsumerGroupDescribe: (group epoch, assignment epoch, member id -> member epoch).
pub fn describe_consumer_group(
    b: &Broker,
    group: &str,
) -> Result<(i32, i32, BTreeMap<String, i32>)> {
    use kafka_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};
    let mut raw = RawClient::connect(&b.bootstrap())?;
    let described: ConsumerGroupDescribeResponse = raw.call(
        ApiKey::ConsumerGroupDescribe,
        0,
        &ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(StrBytes::from(group.to_string()))]),
    )?;
    let g = described.groups.first().context("no group in the answer")?;
    if g.error_code != 0 {
        bail!("ConsumerGroupDescribe error {}", g.error_code);
    }
    let members = g
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.member_epoch))
        .collect();
    Ok((g.group_epoch, g.assignment_epoch, members))
}
